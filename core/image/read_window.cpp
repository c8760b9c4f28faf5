// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/read_window.hpp"

#include "core/error.hpp"

namespace guestfrag {

void ReadWindow::fill(std::uint64_t at, std::uint64_t n, std::uint64_t hi) {
    lo_ = at;
    hi_ = at;  // empty until a read succeeds
    try {
        image_.read(at, std::span<std::byte>(buffer_.data(), hi - at));
        hi_ = hi;
        return;
    } catch (const Error&) {
        if (hi == at + n) throw;
    }
    image_.read(at, std::span<std::byte>(buffer_.data(), n));
    hi_ = at + n;
}

}  // namespace guestfrag
