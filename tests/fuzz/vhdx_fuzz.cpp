// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the VHDX reader, reading from memory through the ByteSource seam.
// Built by CMake with -DGUESTFRAG_BUILD_FUZZERS=ON (clang); `packaging/setup.sh fuzz`
// builds it with clang-14 and runs it on a seed from `qemu-img create -f vhdx`.
//
// An input starting with "vhdxfile" is the file itself. A VHDX file is mostly zeros with
// its structures megabytes apart, though, so any other input is a sparse description of
// the file, which mutates far better: a little-endian u32 file size (taken modulo 64 MiB),
// then records of u32 offset, u16 length and that many bytes, laid over zeros in order
// (bytes past the end are dropped). Sparse seeds: small valid images (qemu-img,
// tests/support/vhdx_writer) turned into records of their non-zero 512-byte runs, e.g.
// with a few lines of Python.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/byte_source.hpp"
#include "core/image/vhdx.hpp"

namespace {

std::uint64_t load(const std::uint8_t* p, unsigned n) {
    std::uint64_t v = 0;
    for (unsigned i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
}

/// The file a sparse description stands for, answered from the records on each read:
/// no buffer of up to 64 MiB to fill for every input. Views the input.
class DescribedFile final : public guestfrag::ByteSource {
public:
    DescribedFile(const std::uint8_t* data, std::size_t size) : size_(load(data, 4) % (64u << 20)) {
        for (std::size_t at = 4; at + 6 <= size;) {
            const std::uint64_t offset = load(data + at, 4);
            const std::size_t length = std::min<std::size_t>(load(data + at + 4, 2), size - at - 6);
            at += 6;
            records_.push_back({offset, std::span(data + at, length)});
            at += length;
        }
    }

    [[nodiscard]] const std::string& name() const noexcept override { return name_; }
    [[nodiscard]] std::uint64_t size() const noexcept override { return size_; }

    std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const override {
        if (offset >= size_) return 0;
        out = out.first(static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), size_ - offset)));
        std::memset(out.data(), 0, out.size());
        const std::uint64_t end = offset + out.size();
        // In input order, so a later record overwrites an earlier one, as when written.
        for (const Record& r : records_) {
            const std::uint64_t lo = std::max(r.offset, offset);
            const std::uint64_t hi = std::min(r.offset + r.bytes.size(), end);
            if (lo < hi)
                std::memcpy(out.data() + (lo - offset), r.bytes.data() + (lo - r.offset),
                            static_cast<std::size_t>(hi - lo));
        }
        return out.size();
    }

private:
    struct Record {
        std::uint64_t offset;
        std::span<const std::uint8_t> bytes;
    };
    std::string name_ = "vhdx-fuzz-input";
    std::uint64_t size_;
    std::vector<Record> records_;
};

/// The file the input is (or describes), viewing the input.
std::shared_ptr<const guestfrag::ByteSource> build_file(const std::uint8_t* data, std::size_t size) {
    if (size >= 8 && std::memcmp(data, "vhdxfile", 8) == 0)
        return std::make_shared<guestfrag::MemorySource>(
            "vhdx-fuzz-input", std::span(reinterpret_cast<const std::byte*>(data), size));
    if (size < 4) return nullptr;
    return std::make_shared<DescribedFile>(data, size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto file = build_file(data, size);
    if (!file) return 0;
    try {
        const auto layer = guestfrag::open_vhdx(guestfrag::HostFile(std::move(file)));
        (void)layer->parent();
        (void)layer->identity();
        const std::uint64_t disk = layer->virtual_size();
        std::vector<std::byte> buf(64 * 1024);
        std::size_t calls = 0;
        for (std::uint64_t at = 0; at < disk && calls < 20000; ++calls) {
            const guestfrag::Mapping m = layer->map(at);
            if (m.length == 0 || m.length > disk - at) __builtin_trap();  // the contract
            // Read the start of a few runs (within the run, as callers do).
            if (calls < 16 && m.state == guestfrag::Allocation::Data)
                layer->read(at, std::span(buf).first(static_cast<std::size_t>(std::min<std::uint64_t>(m.length, buf.size()))));
            at += m.length;
        }
    } catch (const guestfrag::Error&) {
    }
    return 0;
}
