// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace guestfrag {

/// A vector whose copies share one buffer until one of them is changed (copy on write).
/// VolumeMap holds its file table in one: a plan's after-map is a copy of the volume's map
/// with other runs, and a million-file table (40 MB) need not exist twice for that.
///
/// Reading goes through const members only, so iterating a non-const map never copies;
/// changing goes through edit() (or the few appending members), which copies the buffer
/// first when another map still shares it. Copies may live on different threads; one object
/// is not for concurrent use, like a std::vector.
template <class T>
class SharedVector {
public:
    using value_type = T;
    using const_iterator = typename std::vector<T>::const_iterator;

    SharedVector() = default;
    SharedVector(std::vector<T> items) : items_(std::make_shared<std::vector<T>>(std::move(items))) {}
    SharedVector(std::initializer_list<T> items) : items_(std::make_shared<std::vector<T>>(items)) {}

    [[nodiscard]] const_iterator begin() const { return get().begin(); }
    [[nodiscard]] const_iterator end() const { return get().end(); }
    [[nodiscard]] const T* data() const { return get().data(); }
    [[nodiscard]] std::size_t size() const { return get().size(); }
    [[nodiscard]] bool empty() const { return get().empty(); }
    [[nodiscard]] const T& operator[](std::size_t i) const { return get()[i]; }

    /// The vector to change, this object's own: copied first if another object shares it.
    std::vector<T>& edit() {
        if (!items_)
            items_ = std::make_shared<std::vector<T>>();
        else if (items_.use_count() > 1)
            items_ = std::make_shared<std::vector<T>>(*items_);
        return *items_;
    }
    void reserve(std::size_t n) { edit().reserve(n); }
    void push_back(T item) { edit().push_back(std::move(item)); }
    template <class... Args>
    T& emplace_back(Args&&... args) {
        return edit().emplace_back(std::forward<Args>(args)...);
    }

private:
    [[nodiscard]] const std::vector<T>& get() const { return items_ ? *items_ : none(); }
    static const std::vector<T>& none() {
        static const std::vector<T> empty;
        return empty;
    }

    std::shared_ptr<std::vector<T>> items_;
};

}  // namespace guestfrag
