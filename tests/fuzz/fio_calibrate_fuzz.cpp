// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for calibrate's reader of fio's JSON output: the input is the file,
// read by FioCalibration::add_file from a memory file (memfd) as from any regular file,
// then fitted. guestfrag::Error is the expected way to refuse bad input (a document that is
// not fio's, a fit the jobs do not determine); a job it cannot use is kept with its reason.
// Anything else (crash, sanitizer report, runaway allocation or loop) is a bug, as is a
// fitted parameter that is negative or not finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/error.hpp"
#include "core/estimate/fio_calibrate.hpp"
#include "memory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const guestfrag::fuzz::MemoryFile file(data, size);
    if (file.path().empty()) return 0;
    try {
        guestfrag::FioCalibration cal(4096);
        cal.add_file(file.path());
        const guestfrag::Calibration fit = cal.fit();
        for (const double v :
             {fit.array.random_io_seconds, fit.array.sequential_io_seconds,
              fit.array.transfer_bytes_per_second, fit.array.write_io_seconds,
              fit.array.write_transfer_bytes_per_second, fit.array.first_write.allocate_seconds,
              fit.array.first_write.zero_bytes_per_second})
            if (!std::isfinite(v) || v < 0) std::abort();
    } catch (const guestfrag::Error& e) {
        if (e.kind() == guestfrag::ErrorKind::Internal) std::abort();
    }
    return 0;
}
