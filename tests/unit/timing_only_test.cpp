// Timing-only mode (spyre_set_timing_only): kernels run only the simulator's
// timing phase with the functional run's cycles, copies are charged but move
// no bytes and need no host memory, and everything written in the mode holds
// no values: reading it (copy_to_host, a functional kernel, spyre_device_copy)
// fails with a message instead of returning garbage.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "program_builder.h"
#include "spyre/program_format.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace spyre::testing {
namespace {

using Halide::Runtime::Buffer;

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

const halide_device_interface_t *iface() { return spyre_device_interface(); }

// Restores functional mode when a test ends, whatever it did.
struct TimingOnly {
    explicit TimingOnly(bool on) { spyre_set_timing_only(on ? 1 : 0); }
    ~TimingOnly() { spyre_set_timing_only(0); }
};

// Out = A + B, f32 (64, rows) on core 0.
struct AddKernel {
    std::vector<uint8_t> bytes;
    Buffer<uint8_t> blob;
    explicit AddKernel(int rows) {
        bytes = encode_program(add_program("timing_add", rows).p);
        blob = Buffer<uint8_t>(bytes.data(), (int)bytes.size());
    }
    int operator()(Buffer<float> &a, Buffer<float> &b, Buffer<float> &out) {
        halide_buffer_t *args[3] = {a.raw_buffer(), b.raw_buffer(), out.raw_buffer()};
        return spyre_run_program(nullptr, blob.raw_buffer(), 3, args, 0, nullptr);
    }
};

Buffer<float> filled(int rows, float scale) {
    Buffer<float> b(64, rows);
    b.for_each_element([&](int x, int y) { b(x, y) = scale * (float)(x + 100 * y); });
    return b;
}

spyre_kernel_stats entry(const char *name) {
    spyre_kernel_stats s{};
    spyre_get_kernel_stats(name, &s);
    return s;
}

// Run by ctest a second time with SPYRE_TIMING_ONLY=1 (unit.timing_only_from_environment).
TEST(TimingOnlyEnvironment, SwitchesTheModeOnAtFirstUse) {
    const char *env = std::getenv("SPYRE_TIMING_ONLY");
    if (env == nullptr || std::string(env) != "1") GTEST_SKIP() << "SPYRE_TIMING_ONLY is not 1";
    EXPECT_EQ(spyre_timing_only(), 1);
    AddKernel add(2);
    Buffer<float> a = filled(2, 1.0f), b = filled(2, 1.0f), out(64, 2);
    ASSERT_EQ(out.device_malloc(iface()), 0);
    ASSERT_EQ(add(a, b, out), 0) << spyre_last_error();
    EXPECT_EQ(out.copy_to_host(), spyre_error_bad_argument);
    spyre_set_timing_only(0);
}

TEST(TimingOnly, SwitchingReturnsThePreviousSetting) {
    if (std::getenv("SPYRE_TIMING_ONLY") != nullptr) GTEST_SKIP() << "SPYRE_TIMING_ONLY is set";
    EXPECT_EQ(spyre_set_timing_only(0), 0);
    EXPECT_EQ(spyre_timing_only(), 0);
    EXPECT_EQ(spyre_set_timing_only(1), 0);
    EXPECT_EQ(spyre_timing_only(), 1);
    EXPECT_EQ(spyre_set_timing_only(0), 1);
    EXPECT_EQ(spyre_timing_only(), 0);
}

TEST(TimingOnly, AKernelRunsWithTheFunctionalRunsCyclesAndItsOutputHoldsNoValues) {
    AddKernel add(4);
    Buffer<float> a = filled(4, 1.0f), b = filled(4, 2.0f), out(64, 4);
    ASSERT_EQ(out.device_malloc(iface()), 0);
    ASSERT_EQ(add(a, b, out), 0) << spyre_last_error();
    spyre_kernel_stats functional{};
    ASSERT_EQ(spyre_get_last_run_stats(&functional), 0);
    ASSERT_EQ(out.copy_to_host(), 0);
    EXPECT_EQ(out(3, 2), 3.0f * 203);

    const spyre_kernel_stats up0 = entry("host->device"), sums0 = entry("timing_add");
    {
        TimingOnly on(true);
        Buffer<float> a2 = filled(4, 5.0f);
        ASSERT_EQ(add(a2, b, out), 0) << spyre_last_error();
        spyre_kernel_stats timing{};
        ASSERT_EQ(spyre_get_last_run_stats(&timing), 0);
        EXPECT_EQ(timing.cycles, functional.cycles);
        EXPECT_EQ(timing.simulated_us, functional.simulated_us);
        EXPECT_EQ(timing.dram_read_bytes, functional.dram_read_bytes);
        EXPECT_EQ(entry("timing_add").calls, sums0.calls + 1);
        EXPECT_EQ(entry("host->device").calls, up0.calls + 2) << "host inputs are still charged as uploads";
        EXPECT_TRUE(out.device_dirty());
        EXPECT_EQ(out.copy_to_host(), spyre_error_bad_argument);
        EXPECT_CONTAINS(spyre_last_error(), "timing-only mode");
    }
    // Still no values in functional mode, and a functional kernel refuses to read it.
    EXPECT_EQ(out.copy_to_host(), spyre_error_bad_argument);
    Buffer<float> sum(64, 4);
    EXPECT_EQ(add(out, b, sum), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "holds no values");
    // Written again in functional mode, it holds values.
    ASSERT_EQ(add(a, b, out), 0) << spyre_last_error();
    ASSERT_EQ(out.copy_to_host(), 0) << spyre_last_error();
    EXPECT_EQ(out(3, 2), 3.0f * 203);
}

TEST(TimingOnly, HostOutputsAreRefused) {
    TimingOnly on(true);
    AddKernel add(2);
    Buffer<float> a = filled(2, 1.0f), b = filled(2, 1.0f), out(64, 2);
    EXPECT_EQ(add(a, b, out), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "device_malloc");
}

TEST(TimingOnly, CopiesAreChargedMoveNoBytesAndNeedNoHostMemory) {
    Buffer<float> t(nullptr, 64, 3);
    ASSERT_EQ(t.device_malloc(iface()), 0);
    const spyre_kernel_stats up0 = entry("host->device");
    {
        TimingOnly on(true);
        t.set_host_dirty();
        ASSERT_EQ(t.copy_to_device(iface()), 0) << spyre_last_error();
        const spyre_kernel_stats up = entry("host->device");
        EXPECT_EQ(up.calls, up0.calls + 1);
        EXPECT_EQ(up.dram_write_bytes - up0.dram_write_bytes, 3u * 256);
        // A device->device copy is charged the same as in functional mode.
        Buffer<float> u(nullptr, 64, 3);
        ASSERT_EQ(u.device_malloc(iface()), 0);
        const spyre_kernel_stats d0 = entry("device->device");
        ASSERT_EQ(spyre_device_copy(nullptr, t.raw_buffer(), u.raw_buffer()), 0) << spyre_last_error();
        const spyre_kernel_stats d1 = entry("device->device");
        spyre_set_timing_only(0);
        Buffer<float> v = filled(3, 1.0f), w(64, 3);
        ASSERT_EQ(v.copy_to_device(iface()), 0);
        ASSERT_EQ(w.device_malloc(iface()), 0);
        ASSERT_EQ(spyre_device_copy(nullptr, v.raw_buffer(), w.raw_buffer()), 0) << spyre_last_error();
        const spyre_kernel_stats d2 = entry("device->device");
        EXPECT_EQ(d1.dram_read_bytes - d0.dram_read_bytes, d2.dram_read_bytes - d1.dram_read_bytes);
        EXPECT_DOUBLE_EQ(d1.simulated_us - d0.simulated_us, d2.simulated_us - d1.simulated_us);
        // u was written in timing-only mode: copying from it in functional mode fails.
        EXPECT_EQ(spyre_device_copy(nullptr, u.raw_buffer(), w.raw_buffer()), spyre_error_bad_argument);
        EXPECT_CONTAINS(spyre_last_error(), "holds no values");
    }
}

long resident_kib() {
    long pages_total = 0, pages_resident = 0;
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return -1;
    if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = -1;
    std::fclose(f);
    return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

TEST(TimingOnly, LargeDeviceTensorsCostNoHostMemory) {
    TimingOnly on(true);
    const long before = resident_kib();
    ASSERT_GT(before, 0);
    // 1 GiB of f32 on the device, uploaded (charged) and copied, never touched.
    Buffer<float> big(nullptr, 4096, 65536), other(nullptr, 4096, 65536);
    ASSERT_EQ(big.device_malloc(iface()), 0);
    ASSERT_EQ(other.device_malloc(iface()), 0);
    big.set_host_dirty();
    ASSERT_EQ(big.copy_to_device(iface()), 0) << spyre_last_error();
    ASSERT_EQ(spyre_device_copy(nullptr, big.raw_buffer(), other.raw_buffer()), 0) << spyre_last_error();
    EXPECT_LT(resident_kib() - before, 64 * 1024) << "device tensors in timing-only mode must stay untouched";
    big.device_free();
    other.device_free();
}

}  // namespace
}  // namespace spyre::testing
