// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/nbd_server.hpp"

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "support/fixtures.hpp"

namespace guestfrag::test {
namespace {

namespace fs = std::filesystem;

/// Alive and not a zombie: a daemon is not our child, and where nothing reaps orphans (a
/// container's init) a killed one stays a zombie.
bool running(int pid) {
    if (pid <= 0 || ::kill(pid, 0) != 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string id, name, state;
    return !(stat >> id >> name >> state) || state != "Z";
}

}  // namespace

NbdServer::NbdServer(const std::string& program, const std::vector<std::string>& args) {
    if (!have_tool(program))
        throw std::runtime_error(program + " is not installed (packaging/debian-build-deps.txt)");
    // A unix socket path must fit in 108 bytes: the build tree's scratch directory may not.
    std::string pattern = (fs::temp_directory_path() / "gf-nbd.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
        throw std::runtime_error("cannot make a directory for the NBD server");
    dir_ = pattern;
    socket_ = dir_ + "/nbd.sock";
    const std::string pid_file = dir_ + "/server.pid";
    std::vector<std::string> argv{program};
    if (program == "qemu-nbd")
        argv.insert(argv.end(), {"--socket=" + socket_, "--pid-file=" + pid_file, "--fork", "--persistent",
                                 "--shared=8"});
    else
        argv.insert(argv.end(), {"--unix", socket_, "--pidfile", pid_file});
    argv.insert(argv.end(), args.begin(), args.end());
    // Both programs return once the socket listens; nbdkit's daemon writes its pid file just
    // after, so wait for that (a server that fails to start exits non-zero instead).
    const CommandResult started = run(argv);
    for (int i = 0; started.status == 0 && i < 1000 && pid_ == 0; ++i) {
        std::ifstream in(pid_file);
        if (!(in >> pid_)) {
            pid_ = 0;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    if (started.status != 0 || !running(pid_)) {
        kill();
        throw std::runtime_error(program + " did not start (exit " + std::to_string(started.status) +
                                 "): " + started.err + started.out);
    }
}

NbdServer::~NbdServer() { kill(); }

std::string NbdServer::uri(const std::string& name) const {
    return "nbd+unix:///" + name + "?socket=" + socket_;
}

void NbdServer::kill() noexcept {
    if (running(pid_)) {
        ::kill(pid_, SIGKILL);
        for (int i = 0; i < 200 && running(pid_); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = 0;
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
}

std::vector<std::string> nbdkit_directory_args(const std::string& directory,
                                               const std::vector<std::string>& filters,
                                               const std::vector<std::string>& params) {
    std::vector<std::string> args;
    for (const std::string& filter : filters) args.push_back("--filter=" + filter);
    args.insert(args.end(), {"file", "dir=" + directory});
    args.insert(args.end(), params.begin(), params.end());
    return args;
}

}  // namespace guestfrag::test
