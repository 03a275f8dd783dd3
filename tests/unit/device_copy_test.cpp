// Device crops, slices and transposed views (device_crop / device_slice, and
// Halide's transposed() sharing the device handle), spyre_device_copy between
// them (values against plain host loops, neighbours and padding untouched,
// the DMA cost model's exact stick counts and time) and spyre_device_reshape
// views feeding a kernel, with their refusals.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "device_crop_at_min_zero.h"
#include "program_builder.h"
#include "spyre/layout.h"
#include "spyre/program_format.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace spyre::testing {
namespace {

using Halide::Runtime::Buffer;

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

const halide_device_interface_t *iface() { return spyre_device_interface(); }

const halide_type_t kF16(halide_type_float, 16);

// Distinct values per element, as float or as float16 bit patterns (copies move bits).
float value(int x, int y, int z, int salt) { return (float)(x + 1000 * y + 100000 * z + salt) * 0.5f; }
uint16_t bits16(int x, int y, int z, int salt) { return (uint16_t)(x * 7 + y * 131 + z * 1031 + salt * 17 + 1); }

// Calls fn(p) for every coordinate of `sizes` (all mins 0), dim 0 fastest.
template <typename Fn>
void for_each_coordinate(const std::vector<int> &sizes, Fn fn) {
    int64_t n = 1;
    for (int e : sizes) n *= e;
    for (int64_t i = 0; i < n; i++) {
        int p[3] = {0, 0, 0};
        int64_t q = i;
        for (size_t d = 0; d < sizes.size(); d++) p[d] = (int)(q % sizes[d]), q /= sizes[d];
        fn(p);
    }
}

Buffer<float> f32(const std::vector<int> &sizes, int salt) {
    Buffer<float> b(sizes);
    for_each_coordinate(sizes, [&](int *p) { b(p) = value(p[0], p[1], p[2], salt); });
    return b;
}

// The float16 element at p (Buffer<void> has no element access).
uint16_t *elem16(const Buffer<void> &b, const int *p) {
    const halide_buffer_t *r = b.raw_buffer();
    int64_t off = 0;
    for (int d = 0; d < r->dimensions; d++) off += (int64_t)(p[d] - r->dim[d].min) * r->dim[d].stride;
    return (uint16_t *)r->host + off;
}

Buffer<void> f16(std::vector<int> sizes, int salt) {
    Buffer<void> b(kF16, sizes);
    for_each_coordinate(sizes, [&](int *p) { *elem16(b, p) = bits16(p[0], p[1], p[2], salt); });
    b.set_host_dirty();
    return b;
}

uint16_t at16(const Buffer<void> &b, int x, int y, int z = 0) {
    std::vector<int> p{x, y, z};
    p.resize(b.dimensions());
    return *elem16(b, p.data());
}

// The device contents of a whole tensor, brought to its host memory.
template <typename B>
void read_back(B &b) {
    b.set_host_dirty(false);
    b.set_device_dirty(true);
    ASSERT_EQ(b.copy_to_host(), 0) << spyre_last_error();
}

spyre_kernel_stats entry(const char *name) {
    spyre_kernel_stats s{};
    spyre_get_kernel_stats(name, &s);
    return s;
}

struct Charge {
    uint64_t read = 0, write = 0;
    double us = 0;
};
Charge charge_of(const halide_buffer_t *src, halide_buffer_t *dst);

// ---- crops ----

TEST(DeviceCopy, CropIntoTheMiddleOfABiggerTensorF32LeavesNeighboursUntouched) {
    Buffer<float> big = f32({70, 9}, 1), small = f32({20, 3}, 2);
    ASSERT_EQ(big.copy_to_device(iface()), 0);
    ASSERT_EQ(small.copy_to_device(iface()), 0);
    {
        // Lanes 25..44: the end of stick 0 and the start of stick 1 of rows 4..6.
        Buffer<float> region = big.cropped(0, 25, 20).cropped(1, 4, 3);
        ASSERT_NE(region.raw_buffer()->device, 0u);
        ASSERT_EQ(spyre_device_copy(nullptr, small.raw_buffer(), region.raw_buffer()), 0) << spyre_last_error();
        EXPECT_TRUE(region.device_dirty());
    }
    read_back(big);
    for (int y = 0; y < 9; y++) {
        for (int x = 0; x < 70; x++) {
            const bool in = x >= 25 && x < 45 && y >= 4 && y < 7;
            ASSERT_EQ(big(x, y), in ? small(x - 25, y - 4) : value(x, y, 0, 1)) << x << "," << y;
        }
    }
    int zero = 0;
    ASSERT_EQ(spyre_device_get_layout(big.raw_buffer(), nullptr, &zero), 0);
    EXPECT_EQ(zero, 1) << "a copy writes element lanes only: the padding stays zero";
}

TEST(DeviceCopy, CropIntoTheMiddleOfABiggerTensorF16) {
    Buffer<void> big = f16({150, 5}, 3), small = f16({70, 2}, 4);
    ASSERT_EQ(big.copy_to_device(iface()), 0);
    ASSERT_EQ(small.copy_to_device(iface()), 0);
    {
        Buffer<void> region = big.cropped(0, 33, 70).cropped(1, 2, 2);
        ASSERT_EQ(spyre_device_copy(nullptr, small.raw_buffer(), region.raw_buffer()), 0) << spyre_last_error();
    }
    read_back(big);
    for (int y = 0; y < 5; y++) {
        for (int x = 0; x < 150; x++) {
            const bool in = x >= 33 && x < 103 && y >= 2 && y < 4;
            ASSERT_EQ(at16(big, x, y), in ? at16(small, x - 33, y - 2) : bits16(x, y, 0, 3)) << x << "," << y;
        }
    }
}

TEST(DeviceCopy, CropToCropAndCopyToHostOfACrop) {
    Buffer<float> a = f32({64, 4}, 5), b = f32({64, 4}, 6);
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    ASSERT_EQ(b.copy_to_device(iface()), 0);
    {
        Buffer<float> from = a.cropped(0, 3, 30).cropped(1, 1, 2), to = b.cropped(0, 30, 30).cropped(1, 2, 2);
        ASSERT_EQ(spyre_device_copy(nullptr, from.raw_buffer(), to.raw_buffer()), 0) << spyre_last_error();
        // copy_to_host of a crop brings back just its region.
        std::memset(b.data(), 0, 64 * 4 * sizeof(float));
        ASSERT_EQ(to.copy_to_host(), 0) << spyre_last_error();
        for (int y = 2; y < 4; y++)
            for (int x = 30; x < 60; x++) ASSERT_EQ(b(x, y), value(x - 27, y - 1, 0, 5)) << x << "," << y;
        EXPECT_EQ(b(29, 2), 0.0f) << "outside the crop: not copied";
    }
    read_back(b);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 64; x++) {
            const bool in = x >= 30 && x < 60 && y >= 2;
            ASSERT_EQ(b(x, y), in ? value(x - 27, y - 1, 0, 5) : value(x, y, 0, 6)) << x << "," << y;
        }
}

// ---- transposed views ----

TEST(DeviceCopy, TransposedOuterDims) {
    Buffer<float> src = f32({40, 4, 5}, 7), dst(40, 5, 4);
    ASSERT_EQ(src.copy_to_device(iface()), 0);
    ASSERT_EQ(dst.device_malloc(iface()), 0);
    Buffer<float> view = src.transposed(1, 2);  // shares the device handle
    ASSERT_EQ(view.raw_buffer()->device, src.raw_buffer()->device);
    ASSERT_EQ(spyre_device_copy(nullptr, view.raw_buffer(), dst.raw_buffer()), 0) << spyre_last_error();
    read_back(dst);
    for (int z = 0; z < 4; z++)
        for (int y = 0; y < 5; y++)
            for (int x = 0; x < 40; x++) ASSERT_EQ(dst(x, y, z), src(x, z, y)) << x << "," << y << "," << z;
}

TEST(DeviceCopy, CropOfATransposedView) {
    Buffer<float> src = f32({40, 4, 5}, 21), dst(40, 3, 4);
    ASSERT_EQ(src.copy_to_device(iface()), 0);
    ASSERT_EQ(dst.device_malloc(iface()), 0);
    Buffer<float> view = src.transposed(1, 2).cropped(1, 1, 3);  // view(x, y, z) = src(x, z, y), y in [1, 4)
    ASSERT_EQ(spyre_device_copy(nullptr, view.raw_buffer(), dst.raw_buffer()), 0) << spyre_last_error();
    read_back(dst);
    for (int z = 0; z < 4; z++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 40; x++) ASSERT_EQ(dst(x, y, z), src(x, z, y + 1)) << x << "," << y << "," << z;
}

TEST(DeviceCopy, TransposedStickDimF32AndF16) {
    {
        Buffer<float> src = f32({40, 24}, 8), dst(24, 40);
        ASSERT_EQ(src.copy_to_device(iface()), 0);
        ASSERT_EQ(dst.device_malloc(iface()), 0);
        ASSERT_EQ(spyre_device_copy(nullptr, src.transposed(0, 1).raw_buffer(), dst.raw_buffer()), 0) << spyre_last_error();
        read_back(dst);
        for (int y = 0; y < 40; y++)
            for (int x = 0; x < 24; x++) ASSERT_EQ(dst(x, y), src(y, x)) << x << "," << y;
    }
    {
        Buffer<void> src = f16({70, 3}, 9);
        Buffer<void> dst(kF16, {3, 70});
        ASSERT_EQ(src.copy_to_device(iface()), 0);
        ASSERT_EQ(dst.device_malloc(iface()), 0);
        // Into a transposed view of dst: dst(y, x) = src(x, y).
        Buffer<void> dst_t = dst.transposed(0, 1);
        ASSERT_EQ(spyre_device_copy(nullptr, src.raw_buffer(), dst_t.raw_buffer()), 0) << spyre_last_error();
        read_back(dst);
        for (int y = 0; y < 70; y++)
            for (int x = 0; x < 3; x++) ASSERT_EQ(at16(dst, x, y), at16(src, y, x)) << x << "," << y;
    }
}

TEST(DeviceCopy, TransposedViewRoundTripsThroughTheHost) {
    Buffer<float> a = f32({33, 2}, 10);
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    Buffer<float> t = a.transposed(0, 1);  // (2, 33), host strides (33, 1)
    std::memset(a.data(), 0, 66 * sizeof(float));
    t.set_device_dirty(true);
    ASSERT_EQ(t.copy_to_host(), 0) << spyre_last_error();
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 33; x++) ASSERT_EQ(a(x, y), value(x, y, 0, 10));
}

// ---- slices ----

TEST(DeviceCopy, SliceCopiesBothWays) {
    Buffer<void> src = f16({48, 6, 3}, 11);
    ASSERT_EQ(src.copy_to_device(iface()), 0);
    Buffer<void> row(kF16, {48, 3});
    ASSERT_EQ(row.device_malloc(iface()), 0);
    {
        Buffer<void> s = src.sliced(1, 2);  // (48, 3): src(x, 2, z)
        ASSERT_EQ(spyre_device_copy(nullptr, s.raw_buffer(), row.raw_buffer()), 0) << spyre_last_error();
    }
    read_back(row);
    for (int z = 0; z < 3; z++)
        for (int x = 0; x < 48; x++) ASSERT_EQ(at16(row, x, z), at16(src, x, 2, z));

    Buffer<void> dst = f16({48, 3, 2}, 12);
    ASSERT_EQ(dst.copy_to_device(iface()), 0);
    {
        Buffer<void> s = dst.sliced(2, 1);  // (48, 3): dst(x, y, 1)
        ASSERT_EQ(spyre_device_copy(nullptr, row.raw_buffer(), s.raw_buffer()), 0) << spyre_last_error();
    }
    read_back(dst);
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 48; x++)
                ASSERT_EQ(at16(dst, x, y, z), z == 1 ? at16(src, x, 2, y) : bits16(x, y, z, 12)) << x << "," << y << "," << z;
}

TEST(DeviceCopy, OneElementThroughZeroDimensionalSlices) {
    Buffer<float> a = f32({64}, 27), b = f32({40}, 28);
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    ASSERT_EQ(b.copy_to_device(iface()), 0);
    {
        Buffer<float> from = a.sliced(0, 5), to = b.sliced(0, 7);
        ASSERT_EQ(from.dimensions(), 0);
        const Charge c = charge_of(from.raw_buffer(), to.raw_buffer());
        EXPECT_EQ(c.read, 2u * 128) << "one src stick, one partly covered dst stick";
        EXPECT_EQ(c.write, 1u * 128);
    }
    read_back(b);
    for (int x = 0; x < 40; x++) ASSERT_EQ(b(x), x == 7 ? value(5, 0, 0, 27) : value(x, 0, 0, 28)) << x;
}

TEST(DeviceCopy, ViewsKeepTheAllocationAliveAfterTheParentIsFreed) {
    Buffer<float> a = f32({32, 4}, 13), out(32, 2);
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    ASSERT_EQ(out.device_malloc(iface()), 0);
    halide_buffer_t crop = *a.raw_buffer();
    halide_dimension_t dims[2] = {a.raw_buffer()->dim[0], a.raw_buffer()->dim[1]};
    dims[1].min = 2;
    dims[1].extent = 2;
    crop.dim = dims;
    crop.device = 0;
    crop.device_interface = nullptr;
    ASSERT_EQ(iface()->device_crop(nullptr, a.raw_buffer(), &crop), 0) << spyre_last_error();
    ASSERT_EQ(a.device_free(), 0);
    ASSERT_EQ(spyre_device_copy(nullptr, &crop, out.raw_buffer()), 0) << spyre_last_error();
    EXPECT_EQ(iface()->device_release_crop(nullptr, &crop), 0);
    EXPECT_EQ(crop.device, 0u);
    read_back(out);
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 32; x++) ASSERT_EQ(out(x, y), value(x, y + 2, 0, 13));
}

// ---- the cost model ----

// The device->device charge of one copy (read, write, us) in the current mode.
Charge charge_of(const halide_buffer_t *src, halide_buffer_t *dst) {
    const spyre_kernel_stats b = entry("device->device");
    EXPECT_EQ(spyre_device_copy(nullptr, src, dst), 0) << spyre_last_error();
    const spyre_kernel_stats a = entry("device->device");
    return Charge{a.dram_read_bytes - b.dram_read_bytes, a.dram_write_bytes - b.dram_write_bytes, a.simulated_us - b.simulated_us};
}

// Timing-only mode computes the plan without visiting pieces; it must charge what the functional copy does.
void expect_same_charge_in_both_modes(const halide_buffer_t *src, halide_buffer_t *dst) {
    const Charge functional = charge_of(src, dst);
    spyre_set_timing_only(1);
    const Charge timing = charge_of(src, dst);
    spyre_set_timing_only(0);
    EXPECT_EQ(timing.read, functional.read);
    EXPECT_EQ(timing.write, functional.write);
    EXPECT_NEAR(timing.us, functional.us, 1e-9);
}

TEST(DeviceCopy, RunsFollowDstByteOrderInOtherLayouts) {
    // Sticks along dim 0 but dim 0 outermost in the order: the bytes of a (64, 3) f32 tensor are
    // stick 0 of rows 0..2, then stick 1 of rows 0..2. A whole copy between two such tensors is
    // still one contiguous run of 6 sticks.
    spyre_device_layout l{};
    l.dimensions = 2;
    l.stick_dim = 0;
    l.order[0] = 0;
    l.order[1] = 1;
    l.padded[0] = 64;
    l.padded[1] = 3;
    Buffer<float> a = f32({64, 3}, 24), b(64, 3);
    ASSERT_EQ(spyre_device_malloc_with_layout(nullptr, a.raw_buffer(), &l), 0) << spyre_last_error();
    ASSERT_EQ(spyre_device_malloc_with_layout(nullptr, b.raw_buffer(), &l), 0) << spyre_last_error();
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    const MachineDescription m = builtin_machine();
    const Charge c = charge_of(a.raw_buffer(), b.raw_buffer());
    EXPECT_EQ(c.read, 6u * 128);
    EXPECT_EQ(c.write, 6u * 128);
    EXPECT_NEAR(c.us, m.copy_dma_cycles(6 * 128, 6 * 128, 1) / (m.clock_ghz * 1e3), 1e-9);
    expect_same_charge_in_both_modes(a.raw_buffer(), b.raw_buffer());
    // Into the default layout: every stick is its own run (6 runs, whole sticks).
    Buffer<float> d(64, 3);
    ASSERT_EQ(d.device_malloc(iface()), 0);
    const Charge e = charge_of(a.raw_buffer(), d.raw_buffer());
    EXPECT_EQ(e.read, 6u * 128);
    EXPECT_NEAR(e.us, m.copy_dma_cycles(6 * 128, 6 * 128, 6) / (m.clock_ghz * 1e3), 1e-9);
    read_back(d);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 64; x++) ASSERT_EQ(d(x, y), value(x, y, 0, 24));
}

TEST(DeviceCopy, TimingOnlyChargesWhatTheFunctionalCopyCharges) {
    Buffer<void> a = f16({150, 9}, 22), b(kF16, {150, 9}), t(kF16, {9, 150}), c(kF16, {90, 7});
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    for (auto *x : {&b, &t, &c}) ASSERT_EQ(x->device_malloc(iface()), 0);
    expect_same_charge_in_both_modes(a.raw_buffer(), b.raw_buffer());                                    // whole
    expect_same_charge_in_both_modes(a.cropped(0, 7, 90).cropped(1, 1, 7).raw_buffer(), c.raw_buffer());  // partial sticks
    Buffer<void> c2 = f16({90, 7}, 23);  // c holds no values now (a timing-only copy wrote it)
    ASSERT_EQ(c2.copy_to_device(iface()), 0);
    expect_same_charge_in_both_modes(c2.raw_buffer(), b.cropped(0, 33, 90).cropped(1, 2, 7).raw_buffer());
    expect_same_charge_in_both_modes(a.transposed(0, 1).raw_buffer(), t.raw_buffer());                  // single elements
    expect_same_charge_in_both_modes(a.cropped(0, 3, 9).transposed(0, 1).raw_buffer(), t.cropped(0, 0, 9).cropped(1, 3, 9).transposed(0, 1).transposed(0, 1).raw_buffer());
}

TEST(DeviceCopy, ChargesWholeStickRunsAndSingleElementRunsExactly) {
    const MachineDescription m = builtin_machine();
    auto expect_us = [&](double read, double write, double runs) {
        return m.copy_dma_cycles(read, write, runs) / (m.clock_ghz * 1e3);
    };

    // (128, 4) f16 into rows 2..5 of a (128, 8) f16 tensor: both sides are 1024 contiguous bytes,
    // one run of whole sticks: 8 sticks read, 8 written, none partial.
    Buffer<void> src(kF16, {128, 4}), big(kF16, {128, 8});
    ASSERT_EQ(src.device_malloc(iface()), 0);
    ASSERT_EQ(big.device_malloc(iface()), 0);
    spyre_kernel_stats before = entry("device->device");
    {
        Buffer<void> rows = big.cropped(1, 2, 4);
        ASSERT_EQ(spyre_device_copy(nullptr, src.raw_buffer(), rows.raw_buffer()), 0) << spyre_last_error();
    }
    spyre_kernel_stats after = entry("device->device");
    EXPECT_EQ(after.calls - before.calls, 1u);
    EXPECT_EQ(after.dram_read_bytes - before.dram_read_bytes, 8u * 128);
    EXPECT_EQ(after.dram_write_bytes - before.dram_write_bytes, 8u * 128);
    EXPECT_NEAR(after.simulated_us - before.simulated_us, expect_us(8 * 128, 8 * 128, 1), 1e-9);

    // A (32, 32) f32 transposition of the stick dim: 1024 single-element runs, each reading one
    // src stick and one dst stick (partly covered: read-modify-write) and writing one dst stick.
    Buffer<float> a(32, 32), b(32, 32);
    ASSERT_EQ(a.device_malloc(iface()), 0);
    ASSERT_EQ(b.device_malloc(iface()), 0);
    before = entry("device->device");
    ASSERT_EQ(spyre_device_copy(nullptr, a.transposed(0, 1).raw_buffer(), b.raw_buffer()), 0) << spyre_last_error();
    after = entry("device->device");
    EXPECT_EQ(after.dram_read_bytes - before.dram_read_bytes, 2048u * 128);
    EXPECT_EQ(after.dram_write_bytes - before.dram_write_bytes, 1024u * 128);
    EXPECT_NEAR(after.simulated_us - before.simulated_us, expect_us(2048 * 128, 1024 * 128, 1024), 1e-9);

    // A row crop with partial sticks: (40, 3) f32 into lanes 10..49 of rows 0..2 of (64, 3):
    // one run per row (dst rows are 256 bytes apart), src row 40 lanes = 2 sticks, dst 2 sticks, both partial.
    Buffer<float> c(40, 3), d(64, 3);
    ASSERT_EQ(c.device_malloc(iface()), 0);
    ASSERT_EQ(d.device_malloc(iface()), 0);
    before = entry("device->device");
    ASSERT_EQ(spyre_device_copy(nullptr, c.raw_buffer(), d.cropped(0, 10, 40).raw_buffer()), 0) << spyre_last_error();
    after = entry("device->device");
    EXPECT_EQ(after.dram_read_bytes - before.dram_read_bytes, 3u * (2 + 2) * 128);
    EXPECT_EQ(after.dram_write_bytes - before.dram_write_bytes, 3u * 2 * 128);
    EXPECT_NEAR(after.simulated_us - before.simulated_us, expect_us(12 * 128, 6 * 128, 3), 1e-9);

    char line[4096] = {0};
    FILE *f = fmemopen(line, sizeof line - 1, "w");
    spyre_print_profile(f);
    std::fclose(f);
    EXPECT_CONTAINS(line, "device->device");
}

// The layout of a Spyre device buffer, as spyre/layout.h sees it.
DeviceLayout layout_of(const halide_buffer_t *b) {
    spyre_device_layout l{};
    EXPECT_EQ(spyre_device_get_layout(b, &l, nullptr), 0);
    DeviceLayout d;
    d.stick_dim = l.stick_dim;
    d.order.assign(l.order, l.order + l.dimensions);
    d.padded.assign(l.padded, l.padded + l.dimensions);
    return d;
}

// A random dimension order for a device_malloc_with_layout of b (sticks along dim 0).
void malloc_in_random_order(halide_buffer_t *b, std::mt19937 &rng) {
    spyre_device_layout l{};
    l.dimensions = b->dimensions;
    l.stick_dim = 0;
    std::vector<int> order(b->dimensions);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int d = 0; d < b->dimensions; d++) {
        l.order[d] = order[d];
        l.padded[d] = d == 0 ? (b->dim[0].extent + 31) / 32 * 32 : b->dim[d].extent;
    }
    ASSERT_EQ(spyre_device_malloc_with_layout(nullptr, b, &l), 0) << spyre_last_error();
}

// The cost model by brute force: every element's src and dst byte offset, sorted by dst
// offset, runs cut wherever either side is not the next element's bytes.
Charge reference_charge(const std::vector<std::pair<int64_t, int64_t>> &dst_src, int64_t eb) {
    const MachineDescription m = builtin_machine();
    const int64_t S = m.stick_bytes;
    std::vector<std::pair<int64_t, int64_t>> e = dst_src;
    std::sort(e.begin(), e.end());
    int64_t runs = 0, src_sticks = 0, dst_sticks = 0, partial = 0;
    size_t i = 0;
    while (i < e.size()) {
        size_t k = i + 1;
        while (k < e.size() && e[k].first == e[k - 1].first + eb && e[k].second == e[k - 1].second + eb) k++;
        const int64_t d0 = e[i].first, d1 = e[k - 1].first + eb, s0 = e[i].second, s1 = e[k - 1].second + eb;
        runs++;
        src_sticks += (s1 - 1) / S - s0 / S + 1;
        dst_sticks += (d1 - 1) / S - d0 / S + 1;
        if ((d1 - 1) / S == d0 / S) partial += (d0 % S || d1 % S) ? 1 : 0;
        else partial += (d0 % S ? 1 : 0) + (d1 % S ? 1 : 0);
        i = k;
    }
    Charge c;
    c.read = (uint64_t)((src_sticks + partial) * S);
    c.write = (uint64_t)(dst_sticks * S);
    c.us = m.copy_dma_cycles((double)c.read, (double)c.write, (double)runs) / (m.clock_ghz * 1e3);
    return c;
}

// Random crops of random shapes in random dimension orders, copied through random permutations:
// values against host loops, charges against the brute-force cost model, in both modes.
TEST(DeviceCopy, RandomCropsAndPermutationsMatchHostLoops) {
    std::mt19937 rng(7);
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    for (int iter = 0; iter < 150; iter++) {
        const int rank = uniform(1, 3);
        std::vector<int> v(rank), order_s(rank), order_d(rank);
        for (int i = 0; i < rank; i++) v[i] = uniform(1, i == 0 ? 70 : 6);
        std::iota(order_s.begin(), order_s.end(), 0);
        std::iota(order_d.begin(), order_d.end(), 0);
        std::shuffle(order_s.begin(), order_s.end(), rng);
        std::shuffle(order_d.begin(), order_d.end(), rng);
        // Parents at least as large as the crops. Buffer::transposed(order) makes crop dim j
        // view dim order[j], so crop extent c[j] = v[order[j]].
        std::vector<int> cs(rank), cd(rank), ps(rank), pd(rank), ms(rank), md(rank);
        for (int j = 0; j < rank; j++) cs[j] = v[order_s[j]], cd[j] = v[order_d[j]];
        for (int k = 0; k < rank; k++) {
            ps[k] = cs[k] + uniform(0, 40), ms[k] = uniform(0, ps[k] - cs[k]);
            pd[k] = cd[k] + uniform(0, 40), md[k] = uniform(0, pd[k] - cd[k]);
        }
        Buffer<float> src = f32(ps, 30 + iter), dst = f32(pd, 80 + iter);
        if (iter % 2) {  // layouts in other dimension orders
            malloc_in_random_order(src.raw_buffer(), rng);
            malloc_in_random_order(dst.raw_buffer(), rng);
        }
        ASSERT_EQ(src.copy_to_device(iface()), 0);
        ASSERT_EQ(dst.copy_to_device(iface()), 0);
        Buffer<float> expect = dst.copy();
        Buffer<float> sv = src, dv = dst;
        for (int k = 0; k < rank; k++) sv = sv.cropped(k, ms[k], cs[k]), dv = dv.cropped(k, md[k], cd[k]);
        sv = sv.transposed(order_s);
        dv = dv.transposed(order_d);
        for (int i = 0; i < rank; i++) ASSERT_EQ(sv.dim(i).extent(), v[i]) << "the test's own permutation";
        const spyre_kernel_stats before = entry("device->device");
        ASSERT_EQ(spyre_device_copy(nullptr, sv.raw_buffer(), dv.raw_buffer()), 0) << spyre_last_error() << " iter " << iter;
        const DeviceLayout ls = layout_of(src.raw_buffer()), ld = layout_of(dst.raw_buffer());
        TensorShape ss{DType::F32, std::vector<int64_t>(ps.begin(), ps.end())}, sd{DType::F32, std::vector<int64_t>(pd.begin(), pd.end())};
        const LayoutAddressing as = layout_addressing(ss, ls, 128), ad = layout_addressing(sd, ld, 128);
        std::vector<std::pair<int64_t, int64_t>> offsets;
        for_each_coordinate(v, [&](int *x) {
            int y[3] = {0, 0, 0}, z[3] = {0, 0, 0};
            for (int j = 0; j < rank; j++) z[j] = x[order_s[j]] + ms[j], y[j] = x[order_d[j]] + md[j];
            expect(y) = src(z);
            const int64_t zs[3] = {z[0], z[1], z[2]}, yd[3] = {y[0], y[1], y[2]};
            offsets.emplace_back(device_offset(ad, ld, yd), device_offset(as, ls, zs));
        });
        const Charge model = reference_charge(offsets, 4);
        read_back(dst);
        bool same = true;
        for_each_coordinate(pd, [&](int *y) { same = same && dst(y) == expect(y); });
        ASSERT_TRUE(same) << "iter " << iter;
        const spyre_kernel_stats after = entry("device->device");
        EXPECT_EQ(after.dram_read_bytes - before.dram_read_bytes, model.read) << "iter " << iter;
        EXPECT_EQ(after.dram_write_bytes - before.dram_write_bytes, model.write) << "iter " << iter;
        EXPECT_NEAR(after.simulated_us - before.simulated_us, model.us, 1e-9) << "iter " << iter;
        expect_same_charge_in_both_modes(sv.raw_buffer(), dv.raw_buffer());
    }
}

// ---- refusals ----

TEST(DeviceCopyErrors, MismatchedShapesTypesAndNonDeviceBuffers) {
    Buffer<float> a(32, 4), b(32, 5), c(32, 4, 1), host_only(32, 4);
    Buffer<int32_t> i(32, 4);
    for (auto *x : {&a, &b, &c}) ASSERT_EQ(x->device_malloc(iface()), 0);
    ASSERT_EQ(i.device_malloc(iface()), 0);
    EXPECT_EQ(spyre_device_copy(nullptr, a.raw_buffer(), b.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "src (32, 4) float32, dst (32, 5) float32");
    EXPECT_EQ(spyre_device_copy(nullptr, a.raw_buffer(), c.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "ranks differ");
    EXPECT_EQ(spyre_device_copy(nullptr, a.raw_buffer(), i.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "element types differ");
    EXPECT_EQ(spyre_device_copy(nullptr, host_only.raw_buffer(), a.raw_buffer()), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "no Spyre device allocation");
    halide_buffer_t stale = *b.raw_buffer();
    ASSERT_EQ(b.device_free(), 0);
    Buffer<float> a5(32, 5);
    ASSERT_EQ(a5.device_malloc(iface()), 0);
    EXPECT_EQ(spyre_device_copy(nullptr, a5.raw_buffer(), &stale), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "was freed");
}

TEST(DeviceCopyErrors, OverlappingRegionsOfOneAllocation) {
    Buffer<float> a(64, 8);
    ASSERT_EQ(a.device_malloc(iface()), 0);
    Buffer<float> top = a.cropped(1, 0, 5), bottom = a.cropped(1, 3, 5), last = a.cropped(1, 5, 3), first = a.cropped(1, 0, 3);
    EXPECT_EQ(spyre_device_copy(nullptr, top.raw_buffer(), bottom.raw_buffer()), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "overlap");
    EXPECT_EQ(spyre_device_copy(nullptr, first.raw_buffer(), last.raw_buffer()), 0) << spyre_last_error();
    // Same sticks, different lanes: no overlap.
    Buffer<float> left = a.cropped(0, 0, 10), right = a.cropped(0, 10, 10);
    EXPECT_EQ(spyre_device_copy(nullptr, left.raw_buffer(), right.raw_buffer()), 0) << spyre_last_error();
    EXPECT_EQ(spyre_device_copy(nullptr, a.raw_buffer(), a.raw_buffer()), spyre_error_bad_argument);
    // A reshape view aliases the same bytes in another shape: compared by byte span.
    Buffer<float> r(nullptr, 64, 2, 4);
    ASSERT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), r.raw_buffer()), 0) << spyre_last_error();
    Buffer<float> r_first = r.sliced(2, 0), a_rows = a.cropped(1, 1, 2), a_last = a.cropped(1, 6, 2);
    EXPECT_EQ(spyre_device_copy(nullptr, r_first.raw_buffer(), a_rows.raw_buffer()), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "overlap");
    EXPECT_EQ(spyre_device_copy(nullptr, r_first.raw_buffer(), a_last.raw_buffer()), 0) << spyre_last_error();
}

TEST(DeviceCopyErrors, ACropAsAKernelArgumentAsksForACopy) {
    ProgramBuilder pb("crop_arg");
    const int in = pb.arg("In", ArgKind::Input, DType::F32, {32, 2});
    const int out = pb.arg("Out", ArgKind::Output, DType::F32, {32, 2});
    pb.load(0, in, 0, 0, 256);
    pb.signal(0, Unit::Dma, 0);
    pb.wait(0, Unit::Dma, 0);
    pb.store(0, out, 0, 0, 256);
    std::vector<uint8_t> bytes = encode_program(pb.p);
    Buffer<uint8_t> blob(bytes.data(), (int)bytes.size());
    Buffer<float> a = f32({64, 2}, 14), o(32, 2);
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    // Columns 16..47 of every row of a: strided, not one run of a's bytes (a crop of the rows
    // would be, and is taken as it is: Residency.ACropOfTheOutermostDimensionIsAnInputAsItIs).
    DeviceCropAtMinZero crop;
    ASSERT_EQ(crop.make(a.raw_buffer(), 0, 16, 32), 0) << spyre_last_error();
    halide_buffer_t *args[2] = {&crop.buf, o.raw_buffer()};
    EXPECT_EQ(spyre_run_program(nullptr, blob.raw_buffer(), 2, args, 0, nullptr), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "spyre_device_copy");
    EXPECT_EQ(crop.release(), 0);
    // A crop that is the whole tensor is the tensor.
    Buffer<float> b = f32({32, 2}, 15);
    ASSERT_EQ(b.copy_to_device(iface()), 0);
    Buffer<float> whole = b.cropped(1, 0, 2);
    args[0] = whole.raw_buffer();
    EXPECT_EQ(spyre_run_program(nullptr, blob.raw_buffer(), 2, args, 0, nullptr), 0) << spyre_last_error();
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 32; x++) ASSERT_EQ(o(x, y), value(x, y, 0, 15));
}

// ---- reshape views ----

// An attention output laid out token-major (gen_attention o_token_major: (d, i, h) with i
// outermost, then h, then d) seen transposed as (d, h, i) is the (d x h, i) activations of an
// output projection: a view of the same bytes, no copy. In the default order it would move data.
TEST(DeviceReshape, ATokenMajorTensorTransposedMergesItsHeadsWithoutMovingData) {
    spyre_device_layout l{};
    l.dimensions = 3;
    l.stick_dim = 0;
    l.order[0] = 1, l.order[1] = 2, l.order[2] = 0;  // outermost first: i, h, d
    l.padded[0] = 128, l.padded[1] = 6, l.padded[2] = 4;
    Buffer<void> o = f16({128, 6, 4}, 31);  // (d, i, h)
    ASSERT_EQ(spyre_device_malloc_with_layout(nullptr, o.raw_buffer(), &l), 0) << spyre_last_error();
    ASSERT_EQ(o.copy_to_device(iface()), 0);
    Buffer<void> tokens = o.transposed(1, 2);  // (d, h, i)
    Buffer<void> a(kF16, {128 * 4, 6});
    ASSERT_EQ(spyre_device_reshape(nullptr, tokens.raw_buffer(), a.raw_buffer()), 0) << spyre_last_error();
    ASSERT_EQ(a.copy_to_host(), 0) << spyre_last_error();
    for (int i = 0; i < 6; i++)
        for (int h = 0; h < 4; h++)
            for (int d = 0; d < 128; d++) ASSERT_EQ(at16(a, d + 128 * h, i), at16(o, d, i, h));
    // The same tensor in the default order (h outermost): the view would move data, so it is refused.
    Buffer<void> plain = f16({128, 6, 4}, 32);
    ASSERT_EQ(plain.copy_to_device(iface()), 0);
    Buffer<void> plain_tokens = plain.transposed(1, 2), b(kF16, {128 * 4, 6});
    EXPECT_EQ(spyre_device_reshape(nullptr, plain_tokens.raw_buffer(), b.raw_buffer()), spyre_error_buffer_mismatch);
}

TEST(DeviceReshape, SplitsAndMergesWithoutMovingData) {
    // (6144, 2) f16 as (128, 48, 2): dim 0 split at whole sticks (64 lanes).
    Buffer<void> a = f16({6144, 2}, 16);
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    Buffer<void> v(kF16, {128, 48, 2});
    spyre_kernel_stats up0 = entry("host->device");
    ASSERT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), v.raw_buffer()), 0) << spyre_last_error();
    EXPECT_EQ(entry("host->device").calls, up0.calls);
    ASSERT_EQ(v.copy_to_host(), 0) << spyre_last_error();
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 48; y++)
            for (int x = 0; x < 128; x++) ASSERT_EQ(at16(v, x, y, z), at16(a, x + 128 * y, z));

    // (128, 32, 2) as (128, 4, 16) and (128, 8, 2) as (128, 1, 16).
    Buffer<void> b = f16({128, 32, 2}, 17), bv(kF16, {128, 4, 16});
    ASSERT_EQ(b.copy_to_device(iface()), 0);
    ASSERT_EQ(spyre_device_reshape(nullptr, b.raw_buffer(), bv.raw_buffer()), 0) << spyre_last_error();
    ASSERT_EQ(bv.copy_to_host(), 0);
    for (int z = 0; z < 16; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 128; x++) {
                const int n = y + 4 * z;  // the merged (32, 2) index
                ASSERT_EQ(at16(bv, x, y, z), at16(b, x, n % 32, n / 32));
            }
    Buffer<void> c = f16({128, 8, 2}, 18), cv(kF16, {128, 1, 16});
    ASSERT_EQ(c.copy_to_device(iface()), 0);
    ASSERT_EQ(spyre_device_reshape(nullptr, c.raw_buffer(), cv.raw_buffer()), 0) << spyre_last_error();
    ASSERT_EQ(cv.copy_to_host(), 0);
    for (int z = 0; z < 16; z++)
        for (int x = 0; x < 128; x++) ASSERT_EQ(at16(cv, x, 0, z), at16(c, x, z % 8, z / 8));
}

TEST(DeviceReshape, AStickDimensionOfExtentOneStaysTheStickDimension) {
    // (1, 64): one element per stick, the stick dim padded to 64 lanes. The identity, an added unit
    // dim and a split of the other dim are the same bytes; dropping the stick dim is not.
    Buffer<void> a = f16({1, 64}, 23);
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    Buffer<void> same(kF16, {1, 64}), more(kF16, {1, 64, 1}), split(kF16, {1, 8, 8});
    ASSERT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), same.raw_buffer()), 0) << spyre_last_error();
    ASSERT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), more.raw_buffer()), 0) << spyre_last_error();
    ASSERT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), split.raw_buffer()), 0) << spyre_last_error();
    spyre_device_layout ls{};
    ASSERT_EQ(spyre_device_get_layout(split.raw_buffer(), &ls, nullptr), 0);
    EXPECT_EQ(ls.stick_dim, 0);
    ASSERT_EQ(same.copy_to_host(), 0);
    ASSERT_EQ(split.copy_to_host(), 0);
    for (int y = 0; y < 64; y++) {
        ASSERT_EQ(at16(same, 0, y), at16(a, 0, y));
        ASSERT_EQ(at16(split, 0, y % 8, y / 8), at16(a, 0, y));
    }
    Buffer<void> flat(kF16, {64});
    EXPECT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), flat.raw_buffer()), spyre_error_buffer_mismatch);
    // One element: its stick dim is all there is.
    Buffer<void> one = f16({1}, 24), one_more(kF16, {1, 1});
    ASSERT_EQ(one.copy_to_device(iface()), 0);
    ASSERT_EQ(spyre_device_reshape(nullptr, one.raw_buffer(), one_more.raw_buffer()), 0) << spyre_last_error();
    ASSERT_EQ(one_more.copy_to_host(), 0);
    EXPECT_EQ(at16(one_more, 0, 0), at16(one, 0, 0));
}

TEST(DeviceReshape, KeepsAPaddedUnitDimension) {
    // A kernel output like a decode matmul's C: (1024, 1) with its one row padded to 8.
    Buffer<void> a = f16({1024, 1}, 19);
    spyre_device_layout l{};
    l.dimensions = 2;
    l.stick_dim = 0;
    l.order[0] = 1;
    l.order[1] = 0;
    l.padded[0] = 1024;
    l.padded[1] = 8;
    ASSERT_EQ(spyre_device_malloc_with_layout(nullptr, a.raw_buffer(), &l), 0) << spyre_last_error();
    a.set_host_dirty();
    ASSERT_EQ(a.copy_to_device(iface()), 0);
    // Split dim 0 and keep the padded row as the new unit dim 2; add a unit dim too.
    Buffer<void> v(kF16, {128, 8, 1}), w(kF16, {1024, 1, 1});
    ASSERT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), v.raw_buffer()), 0) << spyre_last_error();
    ASSERT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), w.raw_buffer()), 0) << spyre_last_error();
    spyre_device_layout lv{};
    ASSERT_EQ(spyre_device_get_layout(v.raw_buffer(), &lv, nullptr), 0);
    EXPECT_EQ(lv.padded[2], 8);
    ASSERT_EQ(v.copy_to_host(), 0) << spyre_last_error();
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 128; x++) ASSERT_EQ(at16(v, x, y, 0), at16(a, x + 128 * y, 0));
    // Dropping the padded row would change the bytes.
    Buffer<void> flat(kF16, {1024});
    EXPECT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), flat.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "padded");
}

TEST(DeviceReshape, AViewFeedsAKernel) {
    // Out = A + B over (64, 6) f32; A comes in as a (64, 2, 3) tensor reshaped.
    ProgramBuilder pb("reshape_add");
    const int A = pb.arg("A", ArgKind::Input, DType::F32, {64, 6});
    const int B = pb.arg("B", ArgKind::Input, DType::F32, {64, 6});
    const int Out = pb.arg("Out", ArgKind::Output, DType::F32, {64, 6});
    const int64_t row = 256, block = row * 6;
    pb.load(0, A, 0, 0, row, 6);
    pb.load(0, B, 0, block, row, 6);
    pb.signal(0, Unit::Dma, 0);
    pb.wait(0, Unit::Sfu, 0);
    pb.emit(0, Unit::Sfu, Opcode::Add, {2 * block, row, 0, row, 0, block, row, 0, 64, 6, (int)DType::F32, 0});
    pb.signal(0, Unit::Sfu, 1);
    pb.wait(0, Unit::Dma, 1);
    pb.store(0, Out, 0, 2 * block, row, 6);
    std::vector<uint8_t> bytes = encode_program(pb.p);
    Buffer<uint8_t> blob(bytes.data(), (int)bytes.size());

    Buffer<float> a3 = f32({64, 2, 3}, 19), b = f32({64, 6}, 20), out(64, 6);
    ASSERT_EQ(a3.copy_to_device(iface()), 0);
    Buffer<float> a2(nullptr, 64, 6);
    ASSERT_EQ(spyre_device_reshape(nullptr, a3.raw_buffer(), a2.raw_buffer()), 0) << spyre_last_error();
    halide_buffer_t *args[3] = {a2.raw_buffer(), b.raw_buffer(), out.raw_buffer()};
    ASSERT_EQ(spyre_run_program(nullptr, blob.raw_buffer(), 3, args, 0, nullptr), 0) << spyre_last_error();
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 64; x++) ASSERT_EQ(out(x, y), a3(x, y % 2, y / 2) + b(x, y)) << x << "," << y;
}

TEST(DeviceCopy, AKernelUpdatingATensorInPlaceKeepsItsViewsInSync) {
    // Out = A + B with A and Out the same tensor: the kernel writes a new block; a crop of the
    // tensor that is alive must see the result, so the result is written back into the tensor's block.
    ProgramBuilder pb("inplace_add");
    const int A = pb.arg("A", ArgKind::Input, DType::F32, {64, 2});
    const int B = pb.arg("B", ArgKind::Input, DType::F32, {64, 2});
    const int Out = pb.arg("Out", ArgKind::Output, DType::F32, {64, 2});
    pb.load(0, A, 0, 0, 256, 2);
    pb.load(0, B, 0, 512, 256, 2);
    pb.signal(0, Unit::Dma, 0);
    pb.wait(0, Unit::Sfu, 0);
    pb.emit(0, Unit::Sfu, Opcode::Add, {1024, 256, 0, 256, 0, 512, 256, 0, 64, 2, (int)DType::F32, 0});
    pb.signal(0, Unit::Sfu, 1);
    pb.wait(0, Unit::Dma, 1);
    pb.store(0, Out, 0, 1024, 256, 2);
    std::vector<uint8_t> bytes = encode_program(pb.p);
    Buffer<uint8_t> blob(bytes.data(), (int)bytes.size());
    Buffer<float> t = f32({64, 2}, 25), b = f32({64, 2}, 26), row(64, 1);
    ASSERT_EQ(t.copy_to_device(iface()), 0);
    ASSERT_EQ(row.device_malloc(iface()), 0);
    Buffer<float> second = t.cropped(1, 1, 1);
    halide_buffer_t *args[3] = {t.raw_buffer(), b.raw_buffer(), t.raw_buffer()};
    ASSERT_EQ(spyre_run_program(nullptr, blob.raw_buffer(), 3, args, 0, nullptr), 0) << spyre_last_error();
    ASSERT_EQ(spyre_device_copy(nullptr, second.raw_buffer(), row.raw_buffer()), 0) << spyre_last_error();
    read_back(row);
    const Buffer<float> &row_values = row;  // a const read: Halide's non-const operator() marks the host dirty
    for (int x = 0; x < 64; x++) ASSERT_EQ(row_values(x, 0), value(x, 1, 0, 25) + value(x, 1, 0, 26)) << x;
    // The same through a whole-tensor crop (a view record) as input and output.
    {
        Buffer<float> whole = t.cropped(1, 0, 2);
        halide_buffer_t *vargs[3] = {whole.raw_buffer(), b.raw_buffer(), whole.raw_buffer()};
        ASSERT_EQ(spyre_run_program(nullptr, blob.raw_buffer(), 3, vargs, 0, nullptr), 0) << spyre_last_error();
    }
    ASSERT_EQ(spyre_device_copy(nullptr, second.raw_buffer(), row.raw_buffer()), 0) << spyre_last_error();
    read_back(row);
    for (int x = 0; x < 64; x++) ASSERT_EQ(row_values(x, 0), value(x, 1, 0, 25) + 2 * value(x, 1, 0, 26)) << x;
}

TEST(DeviceReshape, RefusesWhatWouldMoveData) {
    Buffer<float> a(40, 6);
    ASSERT_EQ(a.device_malloc(iface()), 0);
    Buffer<float> split_lanes(20, 12), merged(240), other(40, 5);
    EXPECT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), split_lanes.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "padded");
    EXPECT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), merged.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "padded");
    EXPECT_EQ(spyre_device_reshape(nullptr, a.raw_buffer(), other.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "element counts differ");
    Buffer<float> b(64, 6), not_sticks(16, 24);
    ASSERT_EQ(b.device_malloc(iface()), 0);
    EXPECT_EQ(spyre_device_reshape(nullptr, b.raw_buffer(), not_sticks.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "whole number of sticks");
    Buffer<float> crop_src = b.cropped(1, 0, 3), three(64, 3);
    EXPECT_EQ(spyre_device_reshape(nullptr, crop_src.raw_buffer(), three.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "spyre_device_copy");
}

}  // namespace
}  // namespace spyre::testing

namespace spyre::testing {
namespace {

using Halide::Runtime::Buffer;

TEST(DeviceCopy, RefusesAHostDirtyDestinationOrReshapeSource) {
    // A destination whose host data is newer would have it uploaded over the copy at its next use.
    Buffer<float> src(64, 2), dst(64, 2);
    ASSERT_EQ(src.device_malloc(spyre_device_interface()), 0);
    ASSERT_EQ(dst.device_malloc(spyre_device_interface()), 0);
    dst.set_host_dirty();
    EXPECT_EQ(spyre_device_copy(nullptr, src.raw_buffer(), dst.raw_buffer()), spyre_error_bad_argument);
    EXPECT_NE(std::string(spyre_last_error()).find("dst is host-dirty"), std::string::npos) << spyre_last_error();
    // A reshape view of a host-dirty tensor would see its stale device copy.
    Buffer<float> view(128, 1);
    EXPECT_EQ(spyre_device_reshape(nullptr, dst.raw_buffer(), view.raw_buffer()), spyre_error_bad_argument);
    EXPECT_NE(std::string(spyre_last_error()).find("src is host-dirty"), std::string::npos) << spyre_last_error();
    dst.set_host_dirty(false);
    EXPECT_EQ(spyre_device_copy(nullptr, src.raw_buffer(), dst.raw_buffer()), 0) << spyre_last_error();
}

}  // namespace
}  // namespace spyre::testing
