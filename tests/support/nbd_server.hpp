// SPDX-License-Identifier: GPL-2.0-or-later
// An NBD server of the test's own: nbdkit or qemu-nbd listening on a unix socket in a fresh
// temporary directory (no TCP port), stopped when the test ends.
#pragma once

#include <string>
#include <vector>

namespace guestfrag::test {

class NbdServer {
public:
    /// Starts `program` ("nbdkit" or "qemu-nbd") with `args` after its socket and pid-file
    /// options, as a daemon that is serving once the program returns. Throws
    /// std::runtime_error naming the program when it is missing or does not start.
    NbdServer(const std::string& program, const std::vector<std::string>& args);
    ~NbdServer();
    NbdServer(const NbdServer&) = delete;
    NbdServer& operator=(const NbdServer&) = delete;

    /// nbd+unix:// URI of export `name` ("" for the default export).
    [[nodiscard]] std::string uri(const std::string& name = "") const;
    [[nodiscard]] const std::string& socket() const { return socket_; }
    [[nodiscard]] const std::string& directory() const { return dir_; }
    /// Ends the server at once (SIGKILL): its clients see their connection go.
    void kill() noexcept;

private:
    std::string dir_;
    std::string socket_;
    int pid_ = 0;
};

/// nbdkit serving every file of `directory` as an export of its name (the file plugin with
/// dir=), behind `filters` ("delay", "error", ...) with their parameters in `params`.
[[nodiscard]] std::vector<std::string> nbdkit_directory_args(const std::string& directory,
                                                             const std::vector<std::string>& filters = {},
                                                             const std::vector<std::string>& params = {});

}  // namespace guestfrag::test
