// A generated kernel (gen_bmm, batch=2 m=16 n=64 k=32 float32) run in
// timing-only mode: the same simulated cycles as its functional run, its
// device-resident output marked as holding no values, and back to functional.
#include <gtest/gtest.h>

#include <string>

#include "HalideBuffer.h"
#include "aot_bmm_spyre.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace {

using Halide::Runtime::Buffer;
constexpr int K = 32, M = 16, N = 64, BATCH = 2;

void quiet(void *, const char *) {}

TEST(TimingOnlyAot, GeneratedKernelGivesTheFunctionalCycles) {
    halide_set_error_handler(quiet);
    Buffer<float> a(K, M, BATCH), b(N, K, BATCH), c(N, M, BATCH);
    a.for_each_element([&](int k, int m, int z) { a(k, m, z) = (float)((k + 3 * m + z) % 7) - 3.0f; });
    b.for_each_element([&](int n, int k, int z) { b(n, k, z) = (float)((n * 5 + k + 2 * z) % 11) - 5.0f; });
    ASSERT_EQ(c.device_malloc(spyre_device_interface()), 0);

    ASSERT_EQ(aot_bmm_spyre(a, b, c), 0) << spyre_last_error();
    spyre_kernel_stats functional{};
    ASSERT_EQ(spyre_get_last_run_stats(&functional), 0);
    ASSERT_EQ(c.copy_to_host(), 0) << spyre_last_error();
    float expect = 0;
    for (int k = 0; k < K; k++) expect += a(k, 1, 1) * b(2, k, 1);
    EXPECT_FLOAT_EQ(c(2, 1, 1), expect);

    spyre_kernel_stats sums0{};
    ASSERT_EQ(spyre_get_kernel_stats(functional.kernel, &sums0), 0);
    ASSERT_EQ(spyre_set_timing_only(1), 0);
    a.set_host_dirty();  // uploaded again: charged, no bytes read
    const int rc = aot_bmm_spyre(a, b, c);
    spyre_kernel_stats timing{};
    spyre_get_last_run_stats(&timing);
    spyre_set_timing_only(0);
    ASSERT_EQ(rc, 0) << spyre_last_error();
    EXPECT_EQ(timing.cycles, functional.cycles);
    EXPECT_EQ(timing.simulated_us, functional.simulated_us);
    EXPECT_EQ(timing.macs, functional.macs);
    EXPECT_EQ(std::string(timing.kernel), std::string(functional.kernel));
    spyre_kernel_stats sums{};
    ASSERT_EQ(spyre_get_kernel_stats(functional.kernel, &sums), 0);
    EXPECT_EQ(sums.calls, sums0.calls + 1);
    EXPECT_DOUBLE_EQ(sums.cycles, sums0.cycles + functional.cycles);

    EXPECT_EQ(c.copy_to_host(), spyre_error_bad_argument);
    EXPECT_NE(std::string(spyre_last_error()).find("timing-only"), std::string::npos) << spyre_last_error();
    // Functional again: real values.
    ASSERT_EQ(aot_bmm_spyre(a, b, c), 0) << spyre_last_error();
    ASSERT_EQ(c.copy_to_host(), 0) << spyre_last_error();
    EXPECT_FLOAT_EQ(c(2, 1, 1), expect);
    c.device_free();
}

}  // namespace
