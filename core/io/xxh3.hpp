// SPDX-License-Identifier: GPL-2.0-or-later
// XXH3 as fast as the CPU runs it. libxxhash's plain entry points are built for the
// baseline x86-64 (SSE2); its *_dispatch ones pick SSE2, AVX2 or AVX-512 at run time, and
// xxh_x86dispatch.h puts them in place of the plain names. The digests are the same.
#pragma once

#include <xxhash.h>

#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif
