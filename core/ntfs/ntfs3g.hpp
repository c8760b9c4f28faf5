// SPDX-License-Identifier: GPL-2.0-or-later
// The only way C++ code here includes libntfs-3g's C headers. They expect a configure-time
// environment (HAVE_* macros, struct timespec from <sys/stat.h>) and define min/max macros
// that break the standard library, so the fix-ups live in this one place.
#pragma once

#define HAVE_SYS_STAT_H 1
#define HAVE_STDINT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_ERRNO_H 1
#define HAVE_STDDEF_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#include <sys/stat.h>
#include <sys/types.h>
#include <cstdarg>
#include <fcntl.h>
#include <time.h>

extern "C" {
#include <ntfs-3g/types.h>
#include <ntfs-3g/attrib.h>
#include <ntfs-3g/device.h>
#include <ntfs-3g/dir.h>
#include <ntfs-3g/inode.h>
#include <ntfs-3g/layout.h>
#include <ntfs-3g/logging.h>
#include <ntfs-3g/mst.h>
#include <ntfs-3g/runlist.h>
#include <ntfs-3g/unistr.h>
#include <ntfs-3g/volume.h>
}

#undef min
#undef max

#include <cstdlib>
#include <memory>

namespace guestfrag::ntfs {

// Owning handles for libntfs-3g objects. Closing cannot report a failure a caller could act
// on; code that writes syncs (ntfs_inode_sync) and checks before letting a handle go.
struct InodeCloser {
    void operator()(ntfs_inode* ni) const noexcept { ntfs_inode_close(ni); }
};
struct AttrCloser {
    void operator()(ntfs_attr* na) const noexcept { ntfs_attr_close(na); }
};
struct SearchCtxPutter {
    void operator()(ntfs_attr_search_ctx* ctx) const noexcept { ntfs_attr_put_search_ctx(ctx); }
};
/// What libntfs-3g hands over allocated with malloc (converted names, runlists).
struct MallocFreer {
    void operator()(void* p) const noexcept { std::free(p); }
};
using InodePtr = std::unique_ptr<ntfs_inode, InodeCloser>;
using AttrPtr = std::unique_ptr<ntfs_attr, AttrCloser>;
using SearchCtxPtr = std::unique_ptr<ntfs_attr_search_ctx, SearchCtxPutter>;

}  // namespace guestfrag::ntfs
