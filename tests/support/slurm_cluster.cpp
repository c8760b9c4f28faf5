// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/slurm_cluster.hpp"

#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace fs = std::filesystem;

namespace guestfrag::test {

namespace {

/// A loopback TCP port nobody listens on now (the kernel's choice for port 0).
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        throw std::runtime_error("no free loopback port for Slurm");
    ::close(fd);
    return ntohs(address.sin_port);
}

std::string short_hostname() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    const std::string host(name);
    return host.substr(0, host.find('.'));
}

/// Whether process `pid` runs: a zombie no one reaps (a container's init may not) has ended.
bool running(pid_t pid) {
    if (::kill(pid, 0) != 0) return false;
    const std::string text = file_contents("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t end_of_name = text.rfind(')');
    return end_of_name == std::string::npos || end_of_name + 2 >= text.size() || text[end_of_name + 2] != 'Z';
}

void require_ok(const CommandResult& r, const std::string& what, const fs::path& log) {
    if (r.status != 0)
        throw std::runtime_error(what + " failed: " + r.out + r.err +
                                 (log.empty() ? "" : file_contents(log)));
}

}  // namespace

SlurmCluster::SlurmCluster() {
    require_tools({"munged", "mungekey", "slurmctld", "slurmd", "sbatch", "sinfo"});
    // Short, in /tmp: munge's and Slurm's socket paths must fit sun_path.
    char pattern[] = "/tmp/guestfrag-slurm.XXXXXX";
    if (!::mkdtemp(pattern)) throw std::runtime_error("cannot create a directory for Slurm");
    dir_ = pattern;
    try {
        fs::create_directories(dir_ + "/state");
        fs::create_directories(dir_ + "/spool");
        require_ok(run({"mungekey", "--create", "--keyfile=" + dir_ + "/munge.key", "--bits=1024"}), "mungekey", {});
        fs::permissions(dir_ + "/munge.key", fs::perms::owner_read | fs::perms::owner_write);
        // --force: munged would refuse a key and socket outside its usual, root-owned places.
        require_ok(run({"munged", "--force", "--socket=" + dir_ + "/munge.sock", "--key-file=" + dir_ + "/munge.key",
                        "--pid-file=" + dir_ + "/munged.pid", "--log-file=" + dir_ + "/munged.log",
                        "--seed-file=" + dir_ + "/munge.seed"}),
                   "munged", dir_ + "/munged.log");
        const passwd* pw = ::getpwuid(::geteuid());
        const std::string user = pw ? pw->pw_name : "root";
        const std::string host = short_hostname();
        std::ofstream(dir_ + "/slurm.conf")
            << "ClusterName=guestfrag\n"
            << "SlurmctldHost=" << host << "(127.0.0.1)\n"
            << "SlurmctldPort=" << free_port() << "\nSlurmdPort=" << free_port() << '\n'
            << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << dir_ << "/munge.sock\n"
            << "SlurmUser=" << user << "\nSlurmdUser=" << user << '\n'
            << "StateSaveLocation=" << dir_ << "/state\nSlurmdSpoolDir=" << dir_ << "/spool\n"
            << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\nSlurmdPidFile=" << dir_ << "/slurmd.pid\n"
            << "SlurmctldLogFile=" << dir_ << "/slurmctld.log\nSlurmdLogFile=" << dir_ << "/slurmd.log\n"
            // No cgroups and no accounting: nothing of the host's is touched.
            << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            << "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\n"
            << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nMpiDefault=none\nSwitchType=switch/none\n"
            << "ReturnToService=2\n"
            << "NodeName=" << host << " NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n"
            << "PartitionName=guestfrag Nodes=" << host << " Default=YES MaxTime=INFINITE State=UP\n";
        require_ok(run({"slurmctld", "-f", dir_ + "/slurm.conf"}), "slurmctld", dir_ + "/slurmctld.log");
        require_ok(run({"slurmd", "-f", dir_ + "/slurm.conf"}), "slurmd", dir_ + "/slurmd.log");
        for (int i = 0; i < 300; ++i) {
            const CommandResult nodes = client({"sinfo", "--noheader", "--format=%t"});
            if (nodes.status == 0 && nodes.out.starts_with("idle")) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        throw std::runtime_error(
            "the Slurm node did not become idle in 30 s: " + file_contents(dir_ + "/slurmctld.log") +
            file_contents(dir_ + "/slurmd.log"));
    } catch (...) {
        stop();
        throw;
    }
}

SlurmCluster::~SlurmCluster() { stop(); }

CommandResult SlurmCluster::client(std::vector<std::string> argv) const {
    // The clients find the cluster through SLURM_CONF; `env` sets it for this command only.
    argv.insert(argv.begin(), {"env", "SLURM_CONF=" + dir_ + "/slurm.conf"});
    return run(argv);
}

void SlurmCluster::stop() noexcept {
    // The daemons, then what is left of the jobs' processes is theirs to end.
    for (const char* daemon : {"slurmd", "slurmctld", "munged"}) {
        std::ifstream pid_file(dir_ + "/" + daemon + ".pid");
        pid_t pid = 0;
        if (!(pid_file >> pid) || pid <= 0) continue;
        ::kill(pid, SIGTERM);
        for (int i = 0; i < 100 && running(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (running(pid)) ::kill(pid, SIGKILL);
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

}  // namespace guestfrag::test
