// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/fixtures.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace guestfrag::test {

namespace fs = std::filesystem;

fs::path scratch_dir() {
    fs::path dir = GUESTFRAG_SCRATCH_DIR;
    fs::create_directories(dir);
    return dir;
}

int start_cli_until(const std::vector<std::string>& args, const fs::path& err,
                    const std::function<bool()>& begun) {
    std::vector<std::string> argv{GUESTFRAG_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> pointers;
    for (std::string& a : argv) pointers.push_back(a.data());
    pointers.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int null = ::open("/dev/null", O_WRONLY);
        if (fd < 0 || null < 0 || ::dup2(fd, 2) < 0 || ::dup2(null, 1) < 0) ::_exit(127);
        ::execv(GUESTFRAG_CLI, pointers.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (begun()) return pid;
        ::usleep(200);
    }
    throw std::runtime_error("guestfrag ended before its work began");
}

int start_cli_until_begun(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
    const std::string prefix = "." + out.filename().string() + ".";
    return start_cli_until(args, err, [&] {
        for (const auto& entry : fs::directory_iterator(out.parent_path()))
            if (entry.path().filename().string().starts_with(prefix)) return true;
        return false;
    });
}

CommandResult run(const std::vector<std::string>& argv) {
    // Output goes through files rather than pipes so a chatty child can never deadlock us.
    // ctest runs test cases as separate processes in parallel: names are per process+call.
    static std::atomic<unsigned> counter{0};
    const std::string stem = "cmd." + std::to_string(getpid()) + "." + std::to_string(counter++);
    const fs::path out = scratch_dir() / (stem + ".out");
    const fs::path err = scratch_dir() / (stem + ".err");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot run " + argv[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) throw std::runtime_error("cannot wait for " + argv[0]);
    CommandResult result;
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = file_contents(out);
    result.err = file_contents(err);
    fs::remove(out);
    fs::remove(err);
    return result;
}

bool have_tool(const std::string& name) { return run({"sh", "-c", "command -v " + name}).status == 0; }

CommandResult run_cli(const std::vector<std::string>& args) {
    std::vector<std::string> argv{GUESTFRAG_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
}

namespace {

/// run_cli, with the process's peak resident set size.
CommandResult run_cli_peak(const std::vector<std::string>& args) {
    // Linux starts a process's ru_maxrss from the address space it replaced at exec; GNU time
    // forks the command from its own small image, so what it reports is the command's own.
    const fs::path time_tool = "/usr/bin/time";
    if (!fs::exists(time_tool)) throw std::runtime_error("missing test tool: /usr/bin/time (package time)");
    static std::atomic<unsigned> counter{0};
    const fs::path report =
        scratch_dir() / ("rss." + std::to_string(getpid()) + "." + std::to_string(counter++));
    std::vector<std::string> argv{time_tool.string(), "-f", "%M", "-o", report.string(), GUESTFRAG_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult result = run(argv);
    // The last line is %M; before it GNU time may say "Command exited with non-zero status N".
    std::istringstream lines(file_contents(report));
    fs::remove(report);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) result.peak_rss_kib = std::stol(line.substr(line.find_last_of(' ') + 1));
    return result;
}

/// The CLI's own footprint, measured once per test process on an analysis it refuses at its
/// first read (an empty file): the program itself (its code and libraries as loaded, and
/// under AddressSanitizer its runtime), which grows with the binary, not with any input.
long cli_own_rss_kib() {
    static const long own = [] {
        const fs::path empty = scratch_dir() / ("empty." + std::to_string(getpid()) + ".img");
        std::ofstream{empty};
        const CommandResult r = run_cli_peak({"analyze", empty.string()});
        fs::remove(empty);
        if (r.status != 2 || r.peak_rss_kib <= 0)
            throw std::runtime_error("cannot measure the CLI's own footprint: " + r.err);
        return r.peak_rss_kib;
    }();
    return own;
}

}  // namespace

CommandResult run_cli_measured(const std::vector<std::string>& args) {
    CommandResult result = run_cli_peak(args);
    result.input_rss_kib = result.peak_rss_kib - cli_own_rss_kib();
    return result;
}

WorkDir::WorkDir(const std::string& name) : path_(scratch_dir() / (name + "." + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
}

WorkDir::~WorkDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
}

void require_tools(std::initializer_list<std::string_view> tools) {
    for (const std::string_view tool : tools)
        if (!have_tool(std::string(tool)))
            throw std::runtime_error("test oracle missing: " + std::string(tool) +
                                     " is not on PATH (see packaging/debian-build-deps.txt)");
}

fs::path testdata(const std::string& name) {
    const fs::path source = fs::path(GUESTFRAG_TESTDATA_DIR) / name;
    if (!fs::exists(source)) throw std::runtime_error("test data missing: " + source.string());
    const auto ext = source.extension();
    if (ext != ".xz" && ext != ".gz") return source;
    const fs::path target = scratch_dir() / source.stem();
    if (!fs::exists(target)) {
        const fs::path tmp = target.string() + ".part" + std::to_string(getpid());
        const std::string tool = ext == ".xz" ? "xz" : "gzip";
        const auto r = run({"sh", "-c", tool + " -dc '" + source.string() + "' > '" + tmp.string() + "'"});
        if (r.status != 0) throw std::runtime_error("cannot decompress " + source.string() + ": " + r.err);
        fs::rename(tmp, target);
    }
    return target;
}

std::string file_contents(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::ostringstream text;
    text << in.rdbuf();
    return std::move(text).str();
}

std::vector<std::byte> file_bytes(const fs::path& path) {
    const std::string text = file_contents(path);
    const auto* first = reinterpret_cast<const std::byte*>(text.data());
    return {first, first + text.size()};
}

std::uint64_t file_fingerprint(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::array<char, 1 << 16> buf{};
    std::uint64_t h = 1469598103934665603ull;
    while (in) {
        in.read(buf.data(), buf.size());
        for (std::streamsize i = 0; i < in.gcount(); ++i) {
            h ^= static_cast<unsigned char>(buf[static_cast<std::size_t>(i)]);
            h *= 1099511628211ull;
        }
    }
    return h;
}

}  // namespace guestfrag::test
