// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/input_hold.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "core/error.hpp"
#include "core/image/nbd_uri.hpp"

namespace guestfrag {
namespace {

// QEMU's raw-posix lock bytes (block/file-posix.c): a process holds a shared lock on
// kPermBase + P for each permission P it uses, and on kSharedBase + P for each permission it
// does not let others have. Permission bits: 0 consistent read, 1 write.
constexpr off_t kPermBase = 100;
constexpr off_t kSharedBase = 200;
constexpr off_t kConsistentRead = 0;
constexpr off_t kWrite = 1;

/// Whether another open file description holds a lock on `byte` that keeps us from taking
/// a write lock there: the test qemu makes before it takes a permission.
bool locked_by_other(int fd, off_t byte) {
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = byte;
    lock.l_len = 1;
    if (::fcntl(fd, F_OFD_GETLK, &lock) != 0) return false;  // no locks on this file system
    return lock.l_type != F_UNLCK;
}

bool no_locks_here(int error) { return error == ENOLCK || error == EOPNOTSUPP || error == EINVAL; }

std::string writer_reason(const std::string& path) {
    return path + " is open for writing by another process (it holds qemu's write lock): shut the VM down or stop "
                  "its qemu-nbd first";
}

UniqueFd open_read_only(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd) throw Error(ErrorKind::Io, "cannot open " + path + ": " + std::strerror(errno));
    return fd;
}

/// The distinct host files of `paths`, in order.
std::vector<std::string> host_files(const std::vector<std::string>& paths) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const std::string& p : paths)
        if (!is_nbd_uri(p) && seen.insert(p).second) out.push_back(p);
    return out;
}

bool same_time(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

}  // namespace

std::optional<std::string> held_for_writing(const std::vector<std::string>& paths) {
    for (const std::string& path : host_files(paths)) {
        const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
        if (fd && locked_by_other(fd.get(), kPermBase + kWrite)) return path;
    }
    return std::nullopt;
}

InputHold::InputHold(const std::vector<std::string>& paths) {
    for (const std::string& path : host_files(paths)) {
        Held held{path, open_read_only(path), {}};
        const int fd = held.fd.get();
        if (locked_by_other(fd, kPermBase + kWrite)) throw Error(ErrorKind::Unsafe, writer_reason(path));
        for (const off_t byte : {kPermBase + kConsistentRead, kSharedBase + kWrite}) {
            struct flock lock {};
            lock.l_type = F_RDLCK;
            lock.l_whence = SEEK_SET;
            lock.l_start = byte;
            lock.l_len = 1;
            if (::fcntl(fd, F_OFD_SETLK, &lock) == 0 || no_locks_here(errno)) continue;
            if (errno == EAGAIN || errno == EACCES) throw Error(ErrorKind::Unsafe, writer_reason(path));
            throw Error(ErrorKind::Io, "cannot lock " + path + ": " + std::strerror(errno));
        }
        if (::fstat(fd, &held.at) != 0)
            throw Error(ErrorKind::Io, "cannot stat " + path + ": " + std::strerror(errno));
        held_.push_back(std::move(held));
    }
}

void InputHold::check_unchanged() const {
    for (const Held& h : held_) {
        struct stat now {};
        if (::fstat(h.fd.get(), &now) != 0)
            throw Error(ErrorKind::Io, "cannot stat " + h.path + ": " + std::strerror(errno));
        const char* what = now.st_size != h.at.st_size                ? "its size"
                           : !same_time(now.st_mtim, h.at.st_mtim)    ? "its modification time"
                           : !same_time(now.st_ctim, h.at.st_ctim)    ? "its change time"
                                                                       : nullptr;
        if (what != nullptr)
            throw Error(ErrorKind::Unsafe, "the input changed while it was read (" + h.path + ": " + what +
                                               " changed); nothing was written");
    }
}

}  // namespace guestfrag
