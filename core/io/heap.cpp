// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/io/heap.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#include "core/io/sanitizer.hpp"

// AddressSanitizer's allocator replaces glibc's: glibc's trim would walk arenas nobody set
// up (a SEGV in a worker thread's mtrim), and there is nothing of glibc's to hand back.
#if defined(__GLIBC__) && !GUESTFRAG_ADDRESS_SANITIZER
#define GUESTFRAG_GLIBC_HEAP 1
#else
#define GUESTFRAG_GLIBC_HEAP 0
#endif

#if GUESTFRAG_GLIBC_HEAP
#include <malloc.h>
#endif

namespace guestfrag {

void release_freed_memory() {
#if GUESTFRAG_GLIBC_HEAP
    malloc_trim(0);
#endif
}

void advise_huge_pages(const void* at, std::size_t bytes) noexcept {
    constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
    const auto begin = reinterpret_cast<std::uintptr_t>(at);
    const std::uintptr_t lo = (begin + kHuge - 1) & ~(kHuge - 1);
    const std::uintptr_t hi = (begin + bytes) & ~(kHuge - 1);
    // A refusal (EINVAL without CONFIG_TRANSPARENT_HUGEPAGE) leaves the pages as they were.
    if (lo < hi) (void)::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
}

}  // namespace guestfrag
