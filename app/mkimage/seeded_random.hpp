// SPDX-License-Identifier: GPL-2.0-or-later
// Draws built only on raw std::mt19937 output. std::mt19937's sequence is fixed by the
// standard, but the std:: distributions are not: libstdc++, libc++ and MSVC give different
// numbers for the same engine. Everything here uses integer arithmetic or exactly rounded
// IEEE operations (+, *, ldexp), so one seed means one population everywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace guestfrag::mkimage {

/// Streams of one seed besides the population's (SeededRandom(seed), which is none of these).
enum class RandomStream : std::uint32_t {
    LayoutIni = 1,  ///< which kept files Layout.ini lists, in which order
};

/// A seeded source of the few distributions the generator needs. Not thread-safe.
class SeededRandom {
public:
    explicit SeededRandom(std::uint32_t seed) : engine_(seed) {}
    /// An engine for `stream` of `seed`, independent of SeededRandom(seed): a feature that
    /// draws from its own stream leaves every draw of the population, and so every image made
    /// without that feature, as it was. std::seed_seq's mixing is fixed by the standard too.
    SeededRandom(std::uint32_t seed, RandomStream stream) : engine_(engine_for(seed, stream)) {}

    /// 64 raw bits from two engine draws.
    std::uint64_t bits64() {
        const std::uint64_t high = engine_();
        return high << 32 | engine_();
    }

    /// Uniform in [0, n); n > 0. The modulo bias (< n / 2^64) is irrelevant here and keeps
    /// the number of engine draws per call fixed.
    std::uint64_t below(std::uint64_t n) { return bits64() % n; }

    /// Uniform in [low, high].
    std::uint64_t between(std::uint64_t low, std::uint64_t high) { return low + below(high - low + 1); }

    /// Uniform in [0, 1) with 53 random bits.
    double unit() { return static_cast<double>(bits64() >> 11) * 0x1.0p-53; }

    /// True with probability p.
    bool chance(double p) { return unit() < p; }

    /// Approximately standard normal: Irwin-Hall sum of 12 uniforms (range +-6).
    double normalish() {
        double sum = 0;
        for (int i = 0; i < 12; ++i) sum += unit();
        return sum - 6.0;
    }

    /// Log-normal-ish: median * 2^(sigma_log2 * normalish()), where 2^x is Mitchell's
    /// piecewise-linear approximation (exact at integers), so no libm function is involved.
    double lognormalish(double median, double sigma_log2) { return median * pow2(sigma_log2 * normalish()); }

    /// Log-uniform in [low, low * 2^octaves): a uniform exponent.
    double log_uniform(double low, double octaves) { return low * pow2(octaves * unit()); }

private:
    static std::mt19937 engine_for(std::uint32_t seed, RandomStream stream) {
        std::seed_seq words{seed, static_cast<std::uint32_t>(stream)};
        return std::mt19937(words);
    }

    static double pow2(double x) {
        const double whole = std::floor(x);
        return std::ldexp(1.0 + (x - whole), static_cast<int>(whole));
    }

    std::mt19937 engine_;
};

}  // namespace guestfrag::mkimage
