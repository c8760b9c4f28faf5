// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/failure.hpp"

#include <new>

#include "core/error.hpp"

namespace guestfrag::cli {

void on_behalf_of(const std::string& subject, const std::function<void()>& work) {
    try {
        work();
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Unfinished)
            throw Failure(subject,
                          std::string(e.what()) +
                              "; nothing was written: a fault of guestfrag, not of the input (please report it)",
                          kUnfinished);
        throw Failure(subject, e.what(), e.kind() == ErrorKind::Internal ? kInternal : kBadInput);
    } catch (const std::bad_alloc&) {
        // Sizes come from untrusted tables; an allocation that fails is bad input we did not
        // bound tightly enough, reported rather than crashed on.
        throw Failure(subject, "out of memory while reading image structures", kBadInput);
    }
}

}  // namespace guestfrag::cli
