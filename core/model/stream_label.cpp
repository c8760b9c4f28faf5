// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/model/stream_label.hpp"

#include <mutex>
#include <unordered_set>

namespace guestfrag {
namespace {

/// Finds a std::string by a string_view without making one.
struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};

struct Texts {
    std::mutex lock;
    /// Nodes never move: the pointers labels hold stay valid. Never emptied: a label may
    /// outlive every plan that named it (a batch run plans image after image). The texts
    /// are few on real volumes (attribute types and the names of alternate data streams);
    /// a plan file that names many costs in proportion to its own size.
    std::unordered_set<std::string, TextHash, std::equal_to<>> held;
};

Texts& texts() {
    static auto* t = new Texts;  // never destroyed: labels in static objects may outlive it
    return *t;
}

const std::string& hold(std::string_view text) {
    // Labels come in runs (a plan's moves are nearly all "$DATA"): the thread's last one
    // is found without the lock.
    thread_local const std::string* last = nullptr;
    if (last != nullptr && *last == text) return *last;
    Texts& t = texts();
    const std::lock_guard guard(t.lock);
    const auto it = t.held.find(text);
    last = it != t.held.end() ? &*it : &*t.held.emplace(text).first;
    return *last;
}

}  // namespace

StreamLabel::StreamLabel() : StreamLabel(std::string_view()) {}

StreamLabel::StreamLabel(std::string_view text) : text_(&hold(text)) {}

}  // namespace guestfrag
