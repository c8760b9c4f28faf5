// SPDX-License-Identifier: GPL-2.0-or-later
// Runs mkntfs as a child process. One pipe carries both stdout and stderr, read to EOF
// before waitpid, so a chatty child can never block on a full pipe.
#include "app/mkimage/mkntfs_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/unique_fd.hpp"

extern char** environ;

namespace guestfrag::mkimage {

namespace {

std::string find_mkntfs() {
    // It lives in sbin, which is often not on an ordinary user's PATH.
    for (const char* candidate : {"/usr/sbin/mkntfs", "/sbin/mkntfs", "/usr/local/sbin/mkntfs"})
        if (::access(candidate, X_OK) == 0) return candidate;
    if (const char* path = std::getenv("PATH")) {
        std::string dirs = path;
        std::size_t begin = 0;
        while (begin <= dirs.size()) {
            const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
            const std::string candidate = dirs.substr(begin, end - begin) + "/mkntfs";
            if (end > begin && ::access(candidate.c_str(), X_OK) == 0) return candidate;
            begin = end + 1;
        }
    }
    throw Error(ErrorKind::Unsupported, "mkntfs not found (install ntfs-3g)");
}

std::string last_line(const std::string& text) {
    std::size_t end = text.find_last_not_of(" \t\r\n");
    if (end == std::string::npos) return "no output";
    const std::size_t newline = text.find_last_of('\n', end);
    const std::size_t begin = newline == std::string::npos ? 0 : newline + 1;
    return text.substr(begin, end + 1 - begin);
}

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

}  // namespace

void run_mkntfs(const std::filesystem::path& volume, const MkntfsParams& params) {
    const std::string program = find_mkntfs();
    // -Q: no zeroing pass; -F: the target is a regular file; -H/-S/-p: the boot sector's
    // geometry and hidden sectors, which mkntfs cannot query from a file and Windows needs
    // to boot from the partition. 255/63 is what BIOSes and libparted report for big disks.
    std::vector<std::string> args{program,
                                  "-Q",
                                  "-F",
                                  "-c",
                                  std::to_string(params.cluster_size),
                                  "-s",
                                  "512",
                                  "-p",
                                  std::to_string(params.hidden_sectors),
                                  "-H",
                                  "255",
                                  "-S",
                                  "63",
                                  "-L",
                                  params.label,
                                  volume.string()};
    if (params.label.empty()) args.erase(args.end() - 3, args.end() - 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    // The child's messages are parsed only for the error text; keep them in English.
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "LC_ALL=", 7) != 0 && std::strncmp(*e, "LANG=", 5) != 0)
            env_strings.emplace_back(*e);
    env_strings.emplace_back("LC_ALL=C");
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);

    std::array<int, 2> fds{-1, -1};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0)
        throw Error(ErrorKind::Io, std::string("pipe: ") + std::strerror(errno));
    UniqueFd read_end(fds[0]);
    UniqueFd write_end(fds[1]);

    FileActions actions;
    posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
    // dup2 clears close-on-exec on the copies, so only these two reach the child.
    posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), 1);
    posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), 2);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, program.c_str(), actions.get(), nullptr, argv.data(), envp.data());
    if (rc != 0) throw Error(ErrorKind::Io, "cannot run " + program + ": " + std::strerror(rc));
    write_end.reset();

    std::string output;
    std::array<char, 4096> buffer{};
    for (;;) {
        const ssize_t n = ::read(read_end.get(), buffer.data(), buffer.size());
        if (n > 0) {
            output.append(buffer.data(), static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw Error(ErrorKind::Io, "mkntfs failed: " + last_line(output));
}

}  // namespace guestfrag::mkimage
