// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/io/heap.hpp"

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

}  // namespace guestfrag
