// SPDX-License-Identifier: GPL-2.0-or-later
// One pipe carries both stdout and stderr and is read to EOF before waitpid, so a chatty
// child can never block on a full pipe; poll's timeout lets a stop request through.
#include "core/io/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

extern char** environ;

namespace guestfrag {

namespace {

/// A descriptor closed on destruction (core/io sits below core/image's UniqueFd).
class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    [[nodiscard]] int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_;
};

/// posix_spawn file actions with automatic destroy.
class FileActions {
public:
    FileActions() { posix_spawn_file_actions_init(&actions_); }
    ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
    FileActions(const FileActions&) = delete;
    FileActions& operator=(const FileActions&) = delete;
    posix_spawn_file_actions_t* get() { return &actions_; }

private:
    posix_spawn_file_actions_t actions_{};
};

std::string last_line(const std::string& text) {
    const std::size_t end = text.find_last_not_of(" \t\r\n");
    if (end == std::string::npos) return "no output";
    const std::size_t newline = text.find_last_of('\n', end);
    const std::size_t begin = newline == std::string::npos ? 0 : newline + 1;
    return text.substr(begin, end + 1 - begin);
}

int wait_for(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

}  // namespace

std::string find_program(const std::string& name, const std::string& package) {
    std::string dirs = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
    dirs += ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (std::size_t begin = 0; begin <= dirs.size();) {
        const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
        if (end > begin) {
            const std::string candidate = dirs.substr(begin, end - begin) + "/" + name;
            if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate))
                return candidate;
        }
        begin = end + 1;
    }
    throw Error(ErrorKind::Unsupported, name + " not found (install " + package + ")");
}

std::string run_program(const std::vector<std::string>& argv, const std::stop_token& stop) {
    const std::string name = std::filesystem::path(argv.at(0)).filename().string();
    std::vector<std::string> args = argv;
    std::vector<char*> arg_pointers;
    for (auto& a : args) arg_pointers.push_back(a.data());
    arg_pointers.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "LC_ALL=", 7) != 0 && std::strncmp(*e, "LANG=", 5) != 0)
            env_strings.emplace_back(*e);
    env_strings.emplace_back("LC_ALL=C");
    std::vector<char*> env_pointers;
    for (auto& e : env_strings) env_pointers.push_back(e.data());
    env_pointers.push_back(nullptr);

    std::array<int, 2> fds{-1, -1};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0)
        throw Error(ErrorKind::Io, std::string("pipe: ") + std::strerror(errno));
    Fd read_end(fds[0]);
    Fd write_end(fds[1]);
    FileActions actions;
    posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
    // dup2 clears close-on-exec on the copies, so only these two reach the child.
    posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), 1);
    posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), 2);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, argv[0].c_str(), actions.get(), nullptr, arg_pointers.data(),
                                 env_pointers.data());
    if (rc != 0) throw Error(ErrorKind::Io, "cannot run " + argv[0] + ": " + std::strerror(rc));
    write_end.reset();

    std::string output;
    std::array<char, 4096> buffer{};
    for (;;) {
        if (stop.stop_requested()) {
            ::kill(pid, SIGTERM);
            (void)wait_for(pid);
            throw Error(ErrorKind::Cancelled, "cancelled");
        }
        pollfd p{read_end.get(), POLLIN, 0};
        const int ready = ::poll(&p, 1, 200);
        if (ready < 0 && errno != EINTR) break;
        if (ready <= 0) continue;
        const ssize_t n = ::read(read_end.get(), buffer.data(), buffer.size());
        if (n > 0)
            output.append(buffer.data(), static_cast<std::size_t>(n));
        else if (n == 0 || errno != EINTR)
            break;
    }
    const int status = wait_for(pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw Error(ErrorKind::Io, name + " failed: " + last_line(output));
    return output;
}

}  // namespace guestfrag
