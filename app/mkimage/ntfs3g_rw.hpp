// SPDX-License-Identifier: GPL-2.0-or-later
// libntfs-3g for the generator: the core's wrapper header (the one place that fixes up the
// C headers' environment) plus the two headers only writers need: the cluster allocator
// and the LRU caches that make hundreds of thousands of creates affordable.
#pragma once

#include "core/ntfs/ntfs3g.hpp"

extern "C" {
#include <ntfs-3g/cache.h>
#include <ntfs-3g/lcnalloc.h>
}

#undef min
#undef max
