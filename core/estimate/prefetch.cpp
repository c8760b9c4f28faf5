// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/prefetch.hpp"

// Debian's libscca-dev declares the libbfio entry points behind LIBSCCA_HAVE_BFIO, which
// its features.h always sets, yet does not depend on libbfio-dev. We open files by path
// only, so the declarations are switched off (the include guard keeps the #undef).
#include <libscca/features.h>
#undef LIBSCCA_HAVE_BFIO
#include <libscca.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/error.hpp"
#include "core/estimate/layout_ini.hpp"

namespace guestfrag {
namespace {

// libscca_error_t is an opaque intptr_t; the library allocates one per failed call.
struct SccaErrorFree {
    void operator()(libscca_error_t* error) const noexcept { libscca_error_free(&error); }
};
using SccaError = std::unique_ptr<libscca_error_t, SccaErrorFree>;

// Hands a call's `libscca_error_t**` slot to `owner` when the full expression ends:
// `if (libscca_x(..., ErrorSlot{error}) != 1) fail(error);`.
class ErrorSlot {
public:
    explicit ErrorSlot(SccaError& owner) : owner_(owner) {}
    ~ErrorSlot() { owner_.reset(raw_); }
    ErrorSlot(const ErrorSlot&) = delete;
    ErrorSlot& operator=(const ErrorSlot&) = delete;
    operator libscca_error_t**() { return &raw_; }  // NOLINT(google-explicit-constructor): an out-parameter

private:
    SccaError& owner_;
    libscca_error_t* raw_ = nullptr;
};

// libscca_file_free also closes an open file.
struct SccaFileFree {
    void operator()(libscca_file_t* file) const noexcept { libscca_file_free(&file, nullptr); }
};
using SccaFile = std::unique_ptr<libscca_file_t, SccaFileFree>;

struct SccaVolumeFree {
    void operator()(libscca_volume_information_t* volume) const noexcept {
        libscca_volume_information_free(&volume, nullptr);
    }
};
using SccaVolume = std::unique_ptr<libscca_volume_information_t, SccaVolumeFree>;

// libscca's reason for `error`, one line. Its backtrace lists the innermost cause first
// ("libscca_file_open_read: invalid filename strings offset value out of bounds.") and
// the outer calls after it; the outermost (what libscca_error_sprint prints) only says
// "unable to open file: PATH", which would name our temporary copy. So: the first line,
// without the function name.
std::string message_of(const SccaError& error) {
    if (!error) return "unknown failure";
    std::array<char, 4096> buffer{};
    if (libscca_error_backtrace_sprint(error.get(), buffer.data(), buffer.size()) < 0 &&
        libscca_error_sprint(error.get(), buffer.data(), buffer.size()) < 0)
        return "unknown failure";
    std::string_view text(buffer.data());
    while (!text.empty() && (text.front() == '\n' || text.front() == '\r')) text.remove_prefix(1);
    std::string line(text.substr(0, text.find_first_of("\r\n")));
    const auto colon = line.find(": ");
    const bool function_prefix =
        colon != std::string::npos && colon > 0 &&
        std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(colon),
                    [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
    if (function_prefix) line.erase(0, colon + 2);
    for (char& c : line)
        if (c == '\t') c = ' ';
    while (!line.empty() && (line.back() == ' ' || line.back() == '.')) line.pop_back();
    return line.empty() ? "unknown failure" : line;
}

[[noreturn]] void fail(const std::string& name, const SccaError& error) {
    throw Error(ErrorKind::Corrupt, "prefetch file " + name + ": " + message_of(error));
}

std::string utf8_string(std::vector<std::uint8_t>& buffer) {
    // The sizes libscca reports include the terminating NUL.
    const auto end = std::find(buffer.begin(), buffer.end(), std::uint8_t{0});
    return std::string(buffer.begin(), end);
}

std::string filename_at(libscca_file_t* file, int index, const std::string& name) {
    SccaError error;
    std::size_t size = 0;
    if (libscca_file_get_utf8_filename_size(file, index, &size, ErrorSlot{error}) != 1) fail(name, error);
    if (size == 0) return {};
    std::vector<std::uint8_t> buffer(size);
    if (libscca_file_get_utf8_filename(file, index, buffer.data(), buffer.size(), ErrorSlot{error}) != 1)
        fail(name, error);
    return utf8_string(buffer);
}

PrefetchFile::Volume volume_at(libscca_file_t* file, int index, const std::string& name) {
    SccaError error;
    libscca_volume_information_t* raw = nullptr;
    if (libscca_file_get_volume_information(file, index, &raw, ErrorSlot{error}) != 1) fail(name, error);
    const SccaVolume volume(raw);
    PrefetchFile::Volume result;
    if (libscca_volume_information_get_serial_number(volume.get(), &result.serial, ErrorSlot{error}) != 1)
        fail(name, error);
    std::size_t size = 0;
    if (libscca_volume_information_get_utf8_device_path_size(volume.get(), &size, ErrorSlot{error}) != 1)
        fail(name, error);
    if (size > 0) {
        std::vector<std::uint8_t> buffer(size);
        if (libscca_volume_information_get_utf8_device_path(volume.get(), buffer.data(), buffer.size(),
                                                            ErrorSlot{error}) != 1)
            fail(name, error);
        result.device_path = utf8_string(buffer);
    }
    return result;
}

// Everything we use from a file libscca has opened.
PrefetchFile extract(libscca_file_t* file, const std::string& name) {
    PrefetchFile pf;
    SccaError error;
    if (libscca_file_get_format_version(file, &pf.format_version, ErrorSlot{error}) != 1) fail(name, error);

    std::size_t size = 0;
    if (libscca_file_get_utf8_executable_filename_size(file, &size, ErrorSlot{error}) != 1) fail(name, error);
    if (size > 0) {
        std::vector<std::uint8_t> buffer(size);
        if (libscca_file_get_utf8_executable_filename(file, buffer.data(), buffer.size(), ErrorSlot{error}) !=
            1)
            fail(name, error);
        pf.executable = utf8_string(buffer);
    }

    // Versions up to 23 keep one run time; 26 and later keep the last eight, newest first
    // in practice, unset ones 0. Take the maximum rather than trusting the order.
    const int run_times = pf.format_version >= 26 ? 8 : 1;
    for (int i = 0; i < run_times; ++i) {
        std::uint64_t filetime = 0;
        if (libscca_file_get_last_run_time(file, i, &filetime, ErrorSlot{error}) != 1) fail(name, error);
        pf.last_run = std::max(pf.last_run, filetime);
    }

    int count = 0;
    if (libscca_file_get_number_of_filenames(file, &count, ErrorSlot{error}) != 1) fail(name, error);
    pf.filenames.reserve(static_cast<std::size_t>(std::max(count, 0)));
    for (int i = 0; i < count; ++i) pf.filenames.push_back(filename_at(file, i, name));

    int volumes = 0;
    if (libscca_file_get_number_of_volumes(file, &volumes, ErrorSlot{error}) != 1) fail(name, error);
    for (int i = 0; i < volumes; ++i) pf.volumes.push_back(volume_at(file, i, name));
    return pf;
}

PrefetchFile read_prefetch_path(const std::string& path, const std::string& name) {
    SccaError error;
    libscca_file_t* raw = nullptr;
    if (libscca_file_initialize(&raw, ErrorSlot{error}) != 1)
        throw Error(ErrorKind::Internal, "libscca cannot create a file handle: " + message_of(error));
    const SccaFile file(raw);
    if (libscca_file_open(file.get(), path.c_str(), LIBSCCA_OPEN_READ, ErrorSlot{error}) != 1)
        fail(name, error);
    return extract(file.get(), name);
}

// A private host file holding bytes for a library that only opens paths; removed on scope exit.
class TemporaryCopy {
public:
    explicit TemporaryCopy(std::span<const std::byte> content) {
        std::string pattern = (std::filesystem::temp_directory_path() / "guestfrag-prefetch-XXXXXX").string();
        const int fd = ::mkstemp(pattern.data());
        if (fd < 0)
            throw Error(ErrorKind::Io,
                        "cannot create a temporary file: " + std::string(std::strerror(errno)));
        path_ = pattern;
        std::size_t done = 0;
        while (done < content.size()) {
            const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                const int err = errno;
                ::close(fd);
                std::filesystem::remove(path_);
                throw Error(ErrorKind::Io,
                            "cannot write temporary file " + path_ + ": " + std::strerror(err));
            }
            done += static_cast<std::size_t>(n);
        }
        ::close(fd);
    }
    ~TemporaryCopy() {
        std::error_code ignored;
        std::filesystem::remove(path_, ignored);
    }
    TemporaryCopy(const TemporaryCopy&) = delete;
    TemporaryCopy& operator=(const TemporaryCopy&) = delete;
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    std::string path_;
};

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::toupper(static_cast<unsigned char>(x)) ==
                      std::toupper(static_cast<unsigned char>(y));
           });
}

// Whether NT path `name` lies under device `device` ("\\DEVICE\\HARDDISKVOLUME1\\X").
bool on_device(std::string_view name, std::string_view device) {
    return !device.empty() && name.size() > device.size() && name[device.size()] == '\\' &&
           iequals(name.substr(0, device.size()), device);
}

}  // namespace

bool looks_like_prefetch(std::span<const std::byte> head) {
    const auto at = [&](std::size_t offset, const char* magic) {
        const std::size_t n = std::strlen(magic);
        return head.size() >= offset + n && std::memcmp(head.data() + offset, magic, n) == 0;
    };
    return at(4, "SCCA") || at(0, "MAM\x04");
}

PrefetchFile read_prefetch(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw Error(ErrorKind::NotFound, "prefetch file " + path.string() + " does not exist");
    return read_prefetch_path(path.string(), path.string());
}

PrefetchFile read_prefetch(std::span<const std::byte> content, const std::string& name) {
    const TemporaryCopy copy(content);
    return read_prefetch_path(copy.path(), name);
}

std::vector<std::string> prefetch_volume_paths(const PrefetchFile& pf, std::uint64_t volume_serial) {
    const auto serial = static_cast<std::uint32_t>(volume_serial & 0xFFFFFFFFu);
    std::vector<std::string_view> devices;
    for (const PrefetchFile::Volume& v : pf.volumes)
        if (v.serial == serial && !v.device_path.empty()) devices.push_back(v.device_path);
    const auto wanted = [&](const std::string& name) {
        return devices.empty() || std::any_of(devices.begin(), devices.end(),
                                              [&](std::string_view d) { return on_device(name, d); });
    };

    std::vector<std::string> paths;
    paths.reserve(pf.filenames.size() + 1);
    if (pf.executable.find('\\') != std::string::npos && wanted(pf.executable)) {
        const std::string exe = to_volume_path(pf.executable);
        const bool listed = std::any_of(pf.filenames.begin(), pf.filenames.end(), [&](const std::string& f) {
            return iequals(to_volume_path(f), exe);
        });
        if (!listed) paths.push_back(exe);
    }
    for (const std::string& name : pf.filenames)
        if (!name.empty() && wanted(name)) paths.push_back(to_volume_path(name));
    return paths;
}

}  // namespace guestfrag
