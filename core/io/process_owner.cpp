// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/io/process_owner.hpp"

#include <unistd.h>

#include <climits>
#include <fstream>
#include <optional>
#include <sstream>

namespace guestfrag {

namespace {

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

/// Field 22 (starttime) of /proc/PID/stat; nullopt when there is no such process. The
/// command name (field 2) may hold spaces and parentheses, so fields are counted from the
/// last ')'.
std::optional<std::int64_t> start_ticks_of(std::int64_t pid) {
    const std::string stat = first_line("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream fields(stat.substr(close + 1));
    std::string field;
    // After ')' come field 3 (state) onwards; starttime is the 20th of those.
    for (int i = 3; i <= 22; ++i)
        if (!(fields >> field)) return std::nullopt;
    try {
        return std::stoll(field);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

ProcessOwner this_process() {
    char host[HOST_NAME_MAX + 1] = {};
    ::gethostname(host, sizeof host - 1);
    ProcessOwner owner;
    owner.host = host;
    owner.boot_id = first_line("/proc/sys/kernel/random/boot_id");
    owner.pid = ::getpid();
    owner.start_ticks = start_ticks_of(owner.pid).value_or(0);
    return owner;
}

bool may_be_alive(const ProcessOwner& owner) {
    const ProcessOwner self = this_process();
    if (owner.host != self.host || owner.boot_id.empty()) return true;
    if (owner.boot_id != self.boot_id) return false;
    const std::optional<std::int64_t> ticks = start_ticks_of(owner.pid);
    return ticks && *ticks == owner.start_ticks;
}

}  // namespace guestfrag
