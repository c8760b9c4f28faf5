// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

namespace guestfrag {

/// Hands the pages of freed heap blocks back to the system. A phase that frees a large
/// structure as many small blocks (a volume map's runs, a strategy's tables) leaves their
/// pages resident with glibc; the next phase would otherwise peak with them still counted
/// (optimize: about 45 MB after its layout search and 110 MB after its moves, at a million
/// streams). Does nothing where the heap is not glibc's (AddressSanitizer's allocator).
void release_freed_memory();

/// Asks the kernel to back the untouched pages of [at, at + bytes) with transparent huge
/// pages (madvise MADV_HUGEPAGE over its 2 MiB-aligned part), for a table of megabytes
/// about to be filled. Each 4 KiB page's first touch is a fault; where the kernel enables
/// huge pages only for memory so advised (Debian's and most distributions' default) a
/// 2 MiB page takes one. A hint: nothing happens where huge pages are off, and for less
/// than 2 MiB.
void advise_huge_pages(const void* at, std::size_t bytes) noexcept;

/// `v` reserved for `n` elements, the new capacity advised as advise_huge_pages says. Only
/// what the reservation allocates anew is untouched: for an empty vector, all of it.
template <class T>
void reserve_huge(std::vector<T>& v, std::size_t n) {
    v.reserve(n);
    advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

/// Room for one more element in `v`: a full vector's capacity doubled into a new buffer,
/// advised as advise_huge_pages says before the elements move in. For a vector that grows
/// to megabytes by push_back (a plan's moves, whose count the file does not say first).
template <class T>
void make_room_huge(std::vector<T>& v) {
    if (v.size() < v.capacity()) return;
    std::vector<T> bigger;
    reserve_huge(bigger, std::max<std::size_t>(2 * v.capacity(), 1024));
    std::ranges::move(v, std::back_inserter(bigger));
    v.swap(bigger);
}

}  // namespace guestfrag
