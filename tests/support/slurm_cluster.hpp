// SPDX-License-Identifier: GPL-2.0-or-later
// A one-node Slurm cluster of the test's own: munged, slurmctld and slurmd on localhost with
// their keys, sockets, state and logs in a temporary directory, stopped and removed when the
// test ends.
#pragma once

#include <string>
#include <vector>

#include "support/fixtures.hpp"

namespace guestfrag::test {

class SlurmCluster {
public:
    /// Starts munged (a new key), slurmctld and slurmd (two free loopback ports, this host as
    /// the node with 2 CPUs) and waits until the node is idle. Throws std::runtime_error when a
    /// daemon is missing (packages slurm-wlm, munge) or does not come up.
    SlurmCluster();
    ~SlurmCluster();
    SlurmCluster(const SlurmCluster&) = delete;
    SlurmCluster& operator=(const SlurmCluster&) = delete;

    /// Runs a Slurm client command (sbatch, squeue, …) against this cluster.
    [[nodiscard]] CommandResult client(std::vector<std::string> argv) const;
    [[nodiscard]] const std::string& directory() const { return dir_; }

private:
    void stop() noexcept;
    std::string dir_;
};

}  // namespace guestfrag::test
