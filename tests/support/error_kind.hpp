// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>

#include <catch2/catch.hpp>

#include "core/error.hpp"

namespace guestfrag::test {

/// Runs `f`, which must throw guestfrag::Error, and returns the error's kind (and its
/// message through `message`). A call that does not throw fails the test.
template <typename F>
ErrorKind kind_of(F&& f, std::string* message = nullptr) {
    try {
        f();
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.kind();
    }
    FAIL("no guestfrag::Error thrown");
    return ErrorKind::Internal;
}

}  // namespace guestfrag::test
