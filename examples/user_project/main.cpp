// Runs bmm_small (gen_bmm for Spyre, batch=1 m=n=k=64 float32) and
// bmm_small_autoscheduled (the same, scheduled by the installed Spyre
// autoscheduler plugin) on random data on the simulated device and compares
// both with a naive loop,
//   C(n, m, b) = sum_k A(k, m, b) * B(n, k, b),
// then row_scale (a user's own generator on the installed compiler) built for
// the host and, scheduled by the Spyre autoscheduler plugin, for Spyre.
// Exit code 0 when all match.
#include <cmath>
#include <cstdio>
#include <random>

#include "HalideBuffer.h"
#include "bmm_small.h"
#include "bmm_small_autoscheduled.h"
#include "row_scale_autoscheduled.h"
#include "row_scale_host.h"
#include "spyre/spyre_runtime.h"

namespace {

// Must match PARAMS in CMakeLists.txt.
constexpr int kBatch = 1, kM = 64, kN = 64, kK = 64;

using Halide::Runtime::Buffer;

Buffer<float> random_tensor(std::mt19937 &rng, int d0, int d1, int d2) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    Buffer<float> b(d0, d1, d2);
    b.for_each_value([&](float &v) { v = dist(rng); });
    return b;
}

}  // namespace

int main() {
    std::mt19937 rng(20240611);
    Buffer<float> a = random_tensor(rng, kK, kM, kBatch);
    Buffer<float> b = random_tensor(rng, kN, kK, kBatch);
    Buffer<float> c(kN, kM, kBatch);
    c.fill(-12345.0f);  // a kernel that writes nothing cannot pass

    const int err = bmm_small(a, b, c);
    if (err != 0) {
        std::fprintf(stderr, "bmm_small failed with %d: %s\n", err, spyre_last_error());
        return 1;
    }
    // The same kernel scheduled by the installed Spyre autoscheduler plugin.
    Buffer<float> c_auto(kN, kM, kBatch);
    c_auto.fill(-12345.0f);
    if (const int e = bmm_small_autoscheduled(a, b, c_auto); e != 0) {
        std::fprintf(stderr, "bmm_small_autoscheduled failed with %d: %s\n", e, spyre_last_error());
        return 1;
    }

    int mismatches = 0;
    for (int bi = 0; bi < kBatch; bi++) {
        for (int m = 0; m < kM; m++) {
            for (int n = 0; n < kN; n++) {
                double expected = 0.0;
                for (int k = 0; k < kK; k++) expected += (double)a(k, m, bi) * (double)b(n, k, bi);
                for (const Buffer<float> *out : {&c, &c_auto}) {
                    const double got = (*out)(n, m, bi);
                    if (!(std::fabs(got - expected) <= 1e-4 * (1.0 + std::fabs(expected)))) {
                        if (mismatches++ < 5) {
                            std::fprintf(stderr, "%s C(%d, %d, %d) = %.7g, expected %.7g\n",
                                         out == &c ? "bmm_small" : "bmm_small_autoscheduled", n, m, bi, got, expected);
                        }
                    }
                }
            }
        }
    }
    if (mismatches > 0) {
        std::fprintf(stderr, "%d of %d elements differ\n", mismatches, kN * kM * kBatch);
        return 1;
    }

    // The kernel ran on the simulated Spyre device, not on the host.
    spyre_kernel_stats stats;
    if (spyre_get_last_run_stats(&stats) != 0 || stats.macs == 0) {
        std::fprintf(stderr, "no Spyre run was recorded\n");
        return 1;
    }
    std::printf("bmm_small: %d x %d x %d float32 matches the naive loop; %.2f simulated us, %llu MACs\n", kM, kN, kK,
                stats.simulated_us, (unsigned long long)stats.macs);

    // Must match row_scale_generator.cpp's defaults.
    constexpr int kCols = 256, kRows = 64;
    Buffer<float> in(kCols, kRows), want(kCols, kRows), got(kCols, kRows);
    in.for_each_element([&](int x, int y) { in(x, y) = 0.25f * x - 0.5f * y - 3.0f; });
    want.fill(0.0f);
    got.fill(-12345.0f);
    if (const int e = row_scale_host(in, want); e != 0) {
        std::fprintf(stderr, "row_scale_host failed with %d\n", e);
        return 1;
    }
    if (const int e = row_scale_autoscheduled(in, got); e != 0) {
        std::fprintf(stderr, "row_scale_autoscheduled failed with %d: %s\n", e, spyre_last_error());
        return 1;
    }
    spyre_kernel_stats row_stats;
    if (spyre_get_last_run_stats(&row_stats) != 0 || row_stats.simulated_us <= 0) {
        std::fprintf(stderr, "row_scale_autoscheduled: no Spyre run was recorded\n");
        return 1;
    }
    for (int y = 0; y < kRows; y++) {
        for (int x = 0; x < kCols; x++) {
            if (want(x, y) != in(x, y) * 3.0f + 1.0f || got(x, y) != want(x, y)) {
                std::fprintf(stderr, "row_scale at (%d, %d): host %g, spyre %g, expected %g\n", x, y, want(x, y),
                             got(x, y), in(x, y) * 3.0f + 1.0f);
                return 1;
            }
        }
    }
    std::printf("row_scale: the autoscheduled Spyre build matches the host build; %.2f simulated us\n",
                row_stats.simulated_us);
    return 0;
}
