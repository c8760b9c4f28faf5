// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <compare>
#include <cstddef>
#include <string>
#include <string_view>

namespace guestfrag {

/// A stream label (Stream::label(): "$DATA", "$DATA:ads", "$INDEX_ALLOCATION:$I30"), each
/// text held once for the life of the process. A plan of a million moves names a handful
/// of labels: a std::string in each move cost 32 of its 72 bytes, this costs 8. Labels
/// compare by text; two labels of the same text are the same pointer. Thread-safe.
class StreamLabel {
public:
    StreamLabel();  ///< ""
    StreamLabel(std::string_view text);  // NOLINT(google-explicit-constructor): a label is its text
    StreamLabel(const char* text) : StreamLabel(std::string_view(text)) {}  // NOLINT(google-explicit-constructor)
    StreamLabel(const std::string& text) : StreamLabel(std::string_view(text)) {}  // NOLINT(google-explicit-constructor)

    [[nodiscard]] const std::string& str() const noexcept { return *text_; }
    operator const std::string&() const noexcept { return *text_; }  // NOLINT(google-explicit-constructor)
    operator std::string_view() const noexcept { return *text_; }    // NOLINT(google-explicit-constructor)
    [[nodiscard]] bool empty() const noexcept { return text_->empty(); }
    [[nodiscard]] std::size_t size() const noexcept { return text_->size(); }

    friend bool operator==(StreamLabel a, StreamLabel b) noexcept { return a.text_ == b.text_; }
    friend bool operator==(StreamLabel a, std::string_view b) noexcept { return *a.text_ == b; }
    friend bool operator==(StreamLabel a, const char* b) noexcept { return *a.text_ == b; }
    friend bool operator==(StreamLabel a, const std::string& b) noexcept { return *a.text_ == b; }
    friend std::strong_ordering operator<=>(StreamLabel a, StreamLabel b) noexcept {
        return a.text_ == b.text_ ? std::strong_ordering::equal : *a.text_ <=> *b.text_;
    }

private:
    const std::string* text_;
};

}  // namespace guestfrag
