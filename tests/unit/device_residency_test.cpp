// Tensors that live on the device: the Spyre Halide device interface
// (spyre_device.h), the residency rule of kernel calls (docs/runtime.md),
// host<->device and re-layout accounting in the profile, stale device
// handles, and the pooled device allocator.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "device_crop_at_min_zero.h"
#include "program_builder.h"
#include "spyre/device_memory.h"
#include "spyre/program_format.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace spyre::testing {
namespace {

using Halide::Runtime::Buffer;

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

const halide_device_interface_t *spyre_iface() { return spyre_device_interface(); }

// Out(x, y) = A(x, y) + B(x, y), f32 [x_extent, rows] on core 0. Rows are
// padded to whole sticks of 32 lanes; the add covers the padding lanes too,
// so whatever is in the inputs' padding lands in the output's padding.
ProgramBuilder add_f32_program(const std::string &name, int64_t x_extent, int64_t rows) {
    ProgramBuilder b(name);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {x_extent, rows});
    const int B = b.arg("B", ArgKind::Input, DType::F32, {x_extent, rows});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {x_extent, rows});
    const int64_t lanes = (x_extent + 31) / 32 * 32;
    const int64_t row = lanes * 4, block = row * rows;
    b.load(0, A, 0, 0, row, rows);
    b.load(0, B, 0, block, row, rows);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Add, {2 * block, row, 0, row, 0, block, row, 0, lanes, rows, (int)DType::F32, 0});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 2 * block, row, rows);
    return b;
}

struct Blob {
    std::vector<uint8_t> bytes;
    Buffer<uint8_t> buffer;
    explicit Blob(const Program &p) : bytes(encode_program(p)), buffer(bytes.data(), (int)bytes.size()) {}
    halide_buffer_t *raw() { return buffer.raw_buffer(); }
};

int run(Blob &blob, std::vector<halide_buffer_t *> buffers) {
    return spyre_run_program(nullptr, blob.raw(), (int32_t)buffers.size(), buffers.data(), 0, nullptr);
}

// Distinct, non-constant values (host-dirty, as any write through operator() makes them).
Buffer<float> filled(int x_extent, int rows, float scale) {
    Buffer<float> b(x_extent, rows);
    for (int y = 0; y < rows; y++) {
        for (int x = 0; x < x_extent; x++) b(x, y) = scale * (float)(x + 100 * y) + 0.25f;
    }
    return b;
}

// Reads without touching the dirty flags (const operator()).
float at(const Buffer<float> &b, int x, int y) { return b(x, y); }

spyre_kernel_stats entry(const char *name) {
    spyre_kernel_stats s{};
    spyre_get_kernel_stats(name, &s);  // zeros when the entry does not exist yet
    return s;
}

int64_t stick_rows_bytes(int64_t x_extent, int64_t rows) { return (x_extent + 31) / 32 * 32 * 4 * rows; }

// ---- the device interface ----

TEST(DeviceInterface, MirrorsHalidesTablesAndIsOnePerProcess) {
    const halide_device_interface_t *i = spyre_iface();
    ASSERT_NE(i, nullptr);
    EXPECT_EQ(i, spyre_device_interface());
    EXPECT_NE(i->impl, nullptr);
    for (auto fn : {(void *)i->device_malloc, (void *)i->device_free, (void *)i->device_sync, (void *)i->device_release,
                    (void *)i->copy_to_host, (void *)i->copy_to_device, (void *)i->device_and_host_malloc,
                    (void *)i->device_and_host_free, (void *)i->buffer_copy, (void *)i->device_crop, (void *)i->device_slice,
                    (void *)i->device_release_crop, (void *)i->wrap_native, (void *)i->detach_native,
                    (void *)i->compute_capability}) {
        EXPECT_NE(fn, nullptr);
    }
}

TEST(DeviceInterface, DeviceMallocUsesTheDefaultLayoutPaddedToWholeSticks) {
    Buffer<float> a(40, 3);
    ASSERT_EQ(a.device_malloc(spyre_iface()), 0);
    EXPECT_TRUE(a.has_device_allocation());
    EXPECT_EQ(a.raw_buffer()->device_interface, spyre_iface());
    spyre_device_layout l;
    int zero = 0;
    ASSERT_EQ(spyre_device_get_layout(a.raw_buffer(), &l, &zero), 0);
    EXPECT_EQ(l.dimensions, 2);
    EXPECT_EQ(l.stick_dim, 0);
    EXPECT_EQ(l.order[0], 1);
    EXPECT_EQ(l.order[1], 0);
    EXPECT_EQ(l.padded[0], 64);
    EXPECT_EQ(l.padded[1], 3);
    EXPECT_EQ(l.bytes, 3 * 256);
    EXPECT_EQ(zero, 1);
    ASSERT_EQ(a.device_free(), 0);
    EXPECT_FALSE(a.has_device_allocation());
}

TEST(DeviceInterface, CopiesRoundTripThroughStridedHostBuffersAndAreAccounted) {
    // Transposed host storage: dimension 0 has stride 3.
    Buffer<float> storage(3, 40);
    Buffer<float> a = storage.transposed(0, 1);
    for (int y = 0; y < 3; y++) {
        for (int x = 0; x < 40; x++) a(x, y) = 0.5f * x - y;
    }
    const std::vector<float> expect(storage.data(), storage.data() + 120);
    const spyre_kernel_stats up0 = entry("host->device"), down0 = entry("device->host");

    ASSERT_EQ(a.copy_to_device(spyre_iface()), 0);  // allocates, then copies (host-dirty)
    EXPECT_FALSE(a.host_dirty());
    std::memset(storage.data(), 0, 120 * sizeof(float));
    a.set_device_dirty(true);
    ASSERT_EQ(a.copy_to_host(), 0);
    EXPECT_FALSE(a.device_dirty());
    EXPECT_EQ(0, std::memcmp(storage.data(), expect.data(), 120 * sizeof(float)));

    const spyre_kernel_stats up = entry("host->device"), down = entry("device->host");
    EXPECT_EQ(up.calls - up0.calls, 1u);
    EXPECT_EQ(up.dram_write_bytes - up0.dram_write_bytes, 768u);
    EXPECT_EQ(down.calls - down0.calls, 1u);
    EXPECT_EQ(down.dram_read_bytes - down0.dram_read_bytes, 768u);
    const double link_us = 768.0 / (builtin_machine().host_link_gbps * 1e3);
    EXPECT_NEAR(up.simulated_us - up0.simulated_us, link_us, 1e-9);
    EXPECT_NEAR(down.simulated_us - down0.simulated_us, link_us, 1e-9);
    EXPECT_STREQ(up.bottleneck, "host link");
    ASSERT_EQ(a.device_free(), 0);
}

TEST(DeviceInterface, CopyToDeviceSkipsBuffersThatAreNotHostDirty) {
    Buffer<float> a(32, 2);
    std::memset(a.data(), 0, a.size_in_bytes());  // not through operator(): not host-dirty
    const spyre_kernel_stats up0 = entry("host->device");
    ASSERT_EQ(a.copy_to_device(spyre_iface()), 0);  // Halide's contract: no copy unless host-dirty
    EXPECT_EQ(entry("host->device").calls, up0.calls);
    a.device_free();
}

TEST(DeviceInterface, DeviceAndHostMallocAllocatesBoth) {
    halide_dimension_t dims[2] = {{0, 40, 1, 0}, {0, 3, 40, 0}};
    halide_buffer_t b{};
    b.type = halide_type_t(halide_type_float, 32);
    b.dimensions = 2;
    b.dim = dims;
    ASSERT_EQ(spyre_iface()->device_and_host_malloc(nullptr, &b, spyre_iface()), 0);
    ASSERT_NE(b.host, nullptr);
    ASSERT_NE(b.device, 0u);
    reinterpret_cast<float *>(b.host)[119] = 7.0f;
    EXPECT_EQ(spyre_iface()->device_and_host_free(nullptr, &b), 0);
    EXPECT_EQ(b.host, nullptr);
    EXPECT_EQ(b.device, 0u);
}

TEST(DeviceInterface, UnsupportedOperationsReturnHalideErrorCodes) {
    Buffer<float> a(32, 2), c(32, 1);
    ASSERT_EQ(a.device_malloc(spyre_iface()), 0);
    // buffer_copy is only device to device (spyre_device_copy); c has no device allocation.
    EXPECT_EQ(spyre_iface()->buffer_copy(nullptr, a.raw_buffer(), nullptr, c.raw_buffer()),
              halide_error_code_device_buffer_copy_failed);
    EXPECT_EQ(spyre_iface()->wrap_native(nullptr, c.raw_buffer(), 1, spyre_iface()), halide_error_code_device_wrap_native_failed);
    int major = 0, minor = -1;
    EXPECT_EQ(spyre_iface()->compute_capability(nullptr, &major, &minor), 0);
    EXPECT_EQ(major, 1);
    a.device_free();
}

// ---- residency ----

TEST(Residency, ChainedKernelsKeepTheIntermediateOnTheDevice) {
    // T = A + B; Out = T + C. T has no host memory at all: any host round
    // trip would have to fail.
    Blob first(add_f32_program("chain_first", 64, 3).p);
    Blob second(add_f32_program("chain_second", 64, 3).p);
    Buffer<float> a = filled(64, 3, 1.0f), b = filled(64, 3, -0.5f), c = filled(64, 3, 2.0f), out(64, 3);
    Buffer<float> t(nullptr, 64, 3);
    ASSERT_EQ(t.device_malloc(spyre_iface()), 0);

    const spyre_kernel_stats down0 = entry("device->host"), relayout0 = entry("relayout");
    ASSERT_EQ(run(first, {a.raw_buffer(), b.raw_buffer(), t.raw_buffer()}), spyre_success) << spyre_last_error();
    EXPECT_TRUE(t.device_dirty());
    EXPECT_FALSE(t.host_dirty());
    int zero = 1;
    ASSERT_EQ(spyre_device_get_layout(t.raw_buffer(), nullptr, &zero), 0);
    EXPECT_EQ(zero, 1) << "64 lanes fill whole sticks: no padding, so it is trivially zero";

    ASSERT_EQ(run(second, {t.raw_buffer(), c.raw_buffer(), out.raw_buffer()}), spyre_success) << spyre_last_error();
    EXPECT_TRUE(out.host_dirty());
    EXPECT_FALSE(t.host_dirty());
    EXPECT_EQ(t.raw_buffer()->host, nullptr);
    const spyre_kernel_stats down = entry("device->host");
    EXPECT_EQ(down.calls - down0.calls, 1u) << "only Out came back to the host";
    EXPECT_EQ(down.dram_read_bytes - down0.dram_read_bytes, (uint64_t)stick_rows_bytes(64, 3));
    EXPECT_EQ(entry("relayout").calls, relayout0.calls) << "same layout, no padding: used in place";

    int differing = 0;
    for (int y = 0; y < 3; y++) {
        for (int x = 0; x < 64; x++) {
            ASSERT_EQ(at(out, x, y), (at(a, x, y) + at(b, x, y)) + at(c, x, y)) << x << "," << y;
            differing += at(out, x, y) != at(out, 0, 0);
        }
    }
    EXPECT_GT(differing, 0);
    t.device_free();
}

TEST(Residency, CopyToHostBringsADeviceResidentOutputBack) {
    Blob blob(add_f32_program("resident_out", 40, 3).p);
    Buffer<float> a = filled(40, 3, 1.0f), b = filled(40, 3, 3.0f), out(40, 3);
    out.fill(-1.0f);
    out.set_host_dirty(false);
    ASSERT_EQ(out.device_malloc(spyre_iface()), 0);
    ASSERT_EQ(run(blob, {a.raw_buffer(), b.raw_buffer(), out.raw_buffer()}), spyre_success) << spyre_last_error();
    EXPECT_TRUE(out.device_dirty());
    EXPECT_FALSE(out.host_dirty());
    EXPECT_EQ(at(out, 5, 1), -1.0f) << "the host copy is untouched until copy_to_host";
    int zero = 1;
    ASSERT_EQ(spyre_device_get_layout(out.raw_buffer(), nullptr, &zero), 0);
    EXPECT_EQ(zero, 0) << "a kernel wrote the padding";

    ASSERT_EQ(out.copy_to_host(), 0);
    EXPECT_FALSE(out.device_dirty());
    for (int y = 0; y < 3; y++) {
        for (int x = 0; x < 40; x++) ASSERT_EQ(at(out, x, y), at(a, x, y) + at(b, x, y)) << x << "," << y;
    }
    out.device_free();
}

TEST(Residency, HostDirtyInputIsUploadedIntoItsOwnAllocation) {
    Blob blob(add_f32_program("host_dirty_in", 64, 2).p);
    Buffer<float> a = filled(64, 2, 1.0f), b = filled(64, 2, 2.0f), out(64, 2);
    ASSERT_EQ(a.device_malloc(spyre_iface()), 0);
    ASSERT_TRUE(a.host_dirty());
    const spyre_kernel_stats up0 = entry("host->device");
    ASSERT_EQ(run(blob, {a.raw_buffer(), b.raw_buffer(), out.raw_buffer()}), spyre_success) << spyre_last_error();
    EXPECT_FALSE(a.host_dirty()) << "the run did what copy_to_device does";
    EXPECT_EQ(entry("host->device").calls - up0.calls, 2u) << "A into its allocation, B into a run temporary";
    for (int x = 0; x < 64; x++) ASSERT_EQ(at(out, x, 1), at(a, x, 1) + at(b, x, 1));

    // Now in sync: a second run uploads only B.
    const spyre_kernel_stats up1 = entry("host->device");
    ASSERT_EQ(run(blob, {a.raw_buffer(), b.raw_buffer(), out.raw_buffer()}), spyre_success);
    EXPECT_EQ(entry("host->device").calls - up1.calls, 1u);
    a.device_free();
}

TEST(Residency, PaddingAKernelWroteIsReLaidOutAndCounted) {
    // 40 lanes pad to 64: the intermediate's padding holds whatever the first
    // kernel wrote, so the second kernel gets a re-laid-out copy with zero padding.
    Blob first(add_f32_program("pad_first", 40, 3).p);
    Blob second(add_f32_program("pad_second", 40, 3).p);
    Buffer<float> a = filled(40, 3, 1.0f), b = filled(40, 3, 1.0f), c = filled(40, 3, -2.0f), out(40, 3);
    Buffer<float> t(nullptr, 40, 3);
    ASSERT_EQ(t.device_malloc(spyre_iface()), 0);
    ASSERT_EQ(run(first, {a.raw_buffer(), b.raw_buffer(), t.raw_buffer()}), spyre_success) << spyre_last_error();

    const spyre_kernel_stats r0 = entry("relayout");
    ASSERT_EQ(run(second, {t.raw_buffer(), c.raw_buffer(), out.raw_buffer()}), spyre_success) << spyre_last_error();
    const spyre_kernel_stats r = entry("relayout");
    const int64_t bytes = stick_rows_bytes(40, 3);
    EXPECT_EQ(r.calls - r0.calls, 1u);
    EXPECT_EQ(r.dram_read_bytes - r0.dram_read_bytes, (uint64_t)bytes);
    EXPECT_EQ(r.dram_write_bytes - r0.dram_write_bytes, (uint64_t)bytes);
    EXPECT_NEAR(r.simulated_us - r0.simulated_us, bytes / (builtin_machine().restickify_gbps * 1e3), 1e-9);
    EXPECT_STREQ(r.bottleneck, "restickify");
    for (int x = 0; x < 40; x++) ASSERT_EQ(at(out, x, 2), (at(a, x, 2) + at(b, x, 2)) + at(c, x, 2));
    t.device_free();
}

TEST(Residency, TensorInAnotherLayoutIsReLaidOutToTheProgramsLayout) {
    Blob blob(add_f32_program("other_layout", 40, 3).p);
    Buffer<float> a = filled(40, 3, 1.5f), b = filled(40, 3, 0.5f), out(40, 3);
    // A: padded to 96 lanes and 5 rows instead of 64 x 3.
    spyre_device_layout l{};
    l.dimensions = 2;
    l.stick_dim = 0;
    l.order[0] = 1;
    l.order[1] = 0;
    l.padded[0] = 96;
    l.padded[1] = 5;
    ASSERT_EQ(spyre_device_malloc_with_layout(nullptr, a.raw_buffer(), &l), 0) << spyre_last_error();
    ASSERT_EQ(a.copy_to_device(spyre_iface()), 0);

    // Out: device-resident in another layout too; the run gives it the program's.
    spyre_device_layout lo = l;
    lo.padded[1] = 4;
    ASSERT_EQ(spyre_device_malloc_with_layout(nullptr, out.raw_buffer(), &lo), 0) << spyre_last_error();

    const spyre_kernel_stats r0 = entry("relayout");
    ASSERT_EQ(run(blob, {a.raw_buffer(), b.raw_buffer(), out.raw_buffer()}), spyre_success) << spyre_last_error();
    const spyre_kernel_stats r = entry("relayout");
    EXPECT_EQ(r.calls - r0.calls, 1u);
    EXPECT_EQ(r.dram_read_bytes - r0.dram_read_bytes, 96u * 4 * 5);
    EXPECT_EQ(r.dram_write_bytes - r0.dram_write_bytes, 64u * 4 * 3);

    spyre_device_layout now;
    ASSERT_EQ(spyre_device_get_layout(out.raw_buffer(), &now, nullptr), 0);
    EXPECT_EQ(now.padded[0], 64);
    EXPECT_EQ(now.padded[1], 3);
    ASSERT_EQ(out.copy_to_host(), 0);
    for (int y = 0; y < 3; y++) {
        for (int x = 0; x < 40; x++) ASSERT_EQ(at(out, x, y), at(a, x, y) + at(b, x, y));
    }
    a.device_free();
    out.device_free();
}

TEST(Residency, ACropOfTheOutermostDimensionIsAnInputAsItIs) {
    // Rows [2, 5) of an (64, 8) tensor are one contiguous run of its device bytes
    // (rows are the outermost dim of the default layout): the kernel reads them in
    // place, with no relayout and no copy.
    Blob blob(add_f32_program("crop_in", 64, 3).p);
    Buffer<float> big = filled(64, 8, 1.0f), b = filled(64, 3, -3.0f), out(64, 3);
    ASSERT_EQ(big.copy_to_device(spyre_iface()), 0);
    DeviceCropAtMinZero crop;  // rows 2..4
    ASSERT_EQ(crop.make(big.raw_buffer(), 1, 2, 3), 0) << spyre_last_error();
    halide_buffer_t &rows = crop.buf;
    spyre_device_layout l{};
    ASSERT_EQ(spyre_device_region_layout(&rows, &l), 0) << spyre_last_error();
    EXPECT_EQ(l.dimensions, 2);
    EXPECT_EQ(l.padded[0], 64);
    EXPECT_EQ(l.padded[1], 3) << "the crop's rows, not the tensor's 8";
    EXPECT_EQ(l.bytes, stick_rows_bytes(64, 3));
    const spyre_kernel_stats r0 = entry("relayout"), up0 = entry("host->device"), dd0 = entry("device->device");
    ASSERT_EQ(run(blob, {&rows, b.raw_buffer(), out.raw_buffer()}), spyre_success) << spyre_last_error();
    EXPECT_EQ(entry("relayout").calls, r0.calls) << "the crop is read in place";
    EXPECT_EQ(entry("device->device").calls, dd0.calls);
    EXPECT_EQ(entry("host->device").calls - up0.calls, 1u) << "only B is uploaded";
    int differing = 0;
    for (int y = 0; y < 3; y++) {
        for (int x = 0; x < 64; x++) {
            ASSERT_EQ(at(out, x, y), at(big, x, y + 2) + at(b, x, y)) << x << "," << y;
            differing += at(out, x, y) != at(out, 0, 0);
        }
    }
    EXPECT_GT(differing, 0);
    ASSERT_EQ(crop.release(), 0);
    big.device_free();
}

TEST(ResidencyErrors, OtherCropsAreRefusedNamingTheRule) {
    Blob blob(add_f32_program("crop_refused", 32, 3).p);
    Buffer<float> big = filled(64, 8, 1.0f), b = filled(32, 3, 1.0f), out(32, 3);
    ASSERT_EQ(big.copy_to_device(spyre_iface()), 0);
    {
        // Columns [0, 32) of every row: strided, not one run of bytes.
        Buffer<float> cols = big.cropped(0, 0, 32).cropped(1, 0, 3);
        spyre_device_layout l{};
        EXPECT_EQ(spyre_device_region_layout(cols.raw_buffer(), &l), spyre_error_buffer_mismatch);
        EXPECT_CONTAINS(spyre_last_error(), "is strided, not one run of its bytes");
        EXPECT_EQ(run(blob, {cols.raw_buffer(), b.raw_buffer(), out.raw_buffer()}), spyre_error_buffer_mismatch);
        EXPECT_CONTAINS(spyre_last_error(), "inputs also crops of the outermost dimension of the tensor's device layout alone");
    }
    {
        // A contiguous crop as an output: outputs are whole tensors.
        Blob out_blob(add_f32_program("crop_out", 64, 3).p);
        Buffer<float> a = filled(64, 3, 1.0f), c = filled(64, 3, 2.0f);
        Buffer<float> rows = big.cropped(1, 0, 3);
        EXPECT_EQ(run(out_blob, {a.raw_buffer(), c.raw_buffer(), rows.raw_buffer()}), spyre_error_buffer_mismatch);
        EXPECT_CONTAINS(spyre_last_error(), "kernels take whole tensors");
    }
    {
        // A host-dirty crop: the device copy is stale, and uploading part of a tensor is not done here.
        Blob in_blob(add_f32_program("crop_dirty", 64, 3).p);
        Buffer<float> c = filled(64, 3, 2.0f), o(64, 3);
        Buffer<float> rows = big.cropped(1, 0, 3);
        rows.set_host_dirty(true);
        EXPECT_EQ(run(in_blob, {rows.raw_buffer(), c.raw_buffer(), o.raw_buffer()}), spyre_error_bad_argument);
        EXPECT_CONTAINS(spyre_last_error(), "is a crop of a device tensor and host-dirty");
        rows.set_host_dirty(false);
    }
    big.device_free();
}

TEST(Residency, AnOutputThatIsAlsoAnInputIsUpdatedInPlaceSafely) {
    Blob blob(add_f32_program("in_place", 64, 2).p);
    Buffer<float> a = filled(64, 2, 1.0f), b = filled(64, 2, 4.0f);
    const Buffer<float> a0 = a.copy();
    ASSERT_EQ(a.copy_to_device(spyre_iface()), 0);
    ASSERT_EQ(run(blob, {a.raw_buffer(), b.raw_buffer(), a.raw_buffer()}), spyre_success) << spyre_last_error();
    ASSERT_EQ(run(blob, {a.raw_buffer(), b.raw_buffer(), a.raw_buffer()}), spyre_success) << spyre_last_error();
    ASSERT_EQ(a.copy_to_host(), 0);
    for (int x = 0; x < 64; x++) ASSERT_EQ(at(a, x, 1), (at(a0, x, 1) + at(b, x, 1)) + at(b, x, 1));
    a.device_free();
}

TEST(Residency, PlainHostBuffersStillRoundTrip) {
    Blob blob(add_f32_program("plain_host", 40, 2).p);
    Buffer<float> a = filled(40, 2, 1.0f), b = filled(40, 2, 2.0f), out(40, 2);
    const spyre_kernel_stats up0 = entry("host->device"), down0 = entry("device->host");
    ASSERT_EQ(run(blob, {a.raw_buffer(), b.raw_buffer(), out.raw_buffer()}), spyre_success);
    EXPECT_TRUE(out.host_dirty());
    EXPECT_FALSE(out.has_device_allocation());
    EXPECT_EQ(entry("host->device").calls - up0.calls, 2u);
    EXPECT_EQ(entry("device->host").calls - down0.calls, 1u);
    for (int x = 0; x < 40; x++) ASSERT_EQ(at(out, x, 1), at(a, x, 1) + at(b, x, 1));
}

// ---- errors ----

TEST(ResidencyErrors, NullHostWithoutADeviceAllocation) {
    Blob blob(add_f32_program("no_host", 32, 1).p);
    Buffer<float> a(nullptr, 32, 1), b(32, 1), out(32, 1);
    EXPECT_EQ(run(blob, {a.raw_buffer(), b.raw_buffer(), out.raw_buffer()}), spyre_error_null_host);
    EXPECT_EQ(std::string(spyre_last_error()), "no_host: buffer 'A' has no host memory and no Spyre device allocation");
    Buffer<float> no_host_out(nullptr, 32, 1);
    EXPECT_EQ(run(blob, {b.raw_buffer(), b.raw_buffer(), no_host_out.raw_buffer()}), spyre_error_null_host);
}

TEST(ResidencyErrors, ABufferUsedAfterDeviceFreeIsAnErrorNotACrash) {
    Blob blob(add_f32_program("after_free", 32, 1).p);
    Buffer<float> a = filled(32, 1, 1.0f), b = filled(32, 1, 1.0f), out(32, 1);
    ASSERT_EQ(a.copy_to_device(spyre_iface()), 0);
    halide_buffer_t stale = *a.raw_buffer();  // a copy that keeps the device field
    ASSERT_EQ(a.device_free(), 0);
    ASSERT_NE(stale.device, 0u);

    EXPECT_EQ(run(blob, {&stale, b.raw_buffer(), out.raw_buffer()}), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "after_free: buffer 'A' names Spyre device allocation");
    EXPECT_CONTAINS(spyre_last_error(), "which was freed (device_free) or never existed");
    stale.flags = halide_buffer_flag_device_dirty;
    EXPECT_EQ(spyre_iface()->copy_to_host(nullptr, &stale), spyre_error_bad_argument);
    EXPECT_EQ(spyre_iface()->device_free(nullptr, &stale), spyre_error_bad_argument) << "double free";
    EXPECT_EQ(spyre_device_get_layout(&stale, nullptr, nullptr), spyre_error_bad_argument);

    // A never-issued id is not followed either.
    halide_buffer_t forged = *b.raw_buffer();
    forged.device = 0xdeadbeefull;
    forged.device_interface = spyre_iface();
    EXPECT_EQ(run(blob, {&forged, b.raw_buffer(), out.raw_buffer()}), spyre_error_bad_argument);
}

TEST(ResidencyErrors, DeviceMemoryExhaustedReportsRequestedAndFreeBytes) {
    // Two 61.44 GB tensors: each fits the device, both do not. No host memory.
    halide_dimension_t dims[2] = {{0, 64, 1, 0}, {0, 480000000, 64, 0}};
    halide_buffer_t x{}, y{};
    x.type = y.type = halide_type_t(halide_type_float, 16);
    x.dimensions = y.dimensions = 2;
    x.dim = y.dim = dims;
    ASSERT_EQ(spyre_iface()->device_malloc(nullptr, &x, spyre_iface()), 0) << spyre_last_error();
    EXPECT_EQ(spyre_iface()->device_malloc(nullptr, &y, spyre_iface()), spyre_error_out_of_memory);
    // The message names the tensor (shape, type, layout) and the API that asked.
    EXPECT_CONTAINS(spyre_last_error(), "device memory exhausted: 'a (64, 480000000) float16 tensor in layout "
                                        "stick=0 order=[1,0] padded=[64,480000000] (spyre device_malloc)' "
                                        "requested 61440000000 bytes");
    EXPECT_CONTAINS(spyre_last_error(), "bytes are free");
    EXPECT_EQ(y.device, 0u);
    ASSERT_EQ(spyre_iface()->device_free(nullptr, &x), 0);
    EXPECT_EQ(spyre_iface()->device_malloc(nullptr, &y, spyre_iface()), 0) << "freed memory is available again";
    ASSERT_EQ(spyre_iface()->device_free(nullptr, &y), 0);
}

TEST(ResidencyErrors, ElementTypesWithoutADeviceTypeAreRejected) {
    Buffer<uint16_t> u(64, 2);
    EXPECT_EQ(u.device_malloc(spyre_iface()), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "element type uint16 has no Spyre device type");
    EXPECT_FALSE(u.has_device_allocation());
}

TEST(ResidencyErrors, DeviceTensorOfAnotherShapeIsABufferMismatch) {
    Blob blob(add_f32_program("reshaped", 32, 2).p);
    Buffer<float> a = filled(32, 2, 1.0f), b = filled(32, 2, 1.0f), out(32, 2);
    ASSERT_EQ(a.copy_to_device(spyre_iface()), 0);
    halide_buffer_t cropped = *a.raw_buffer();  // same device tensor, one row
    halide_dimension_t dims[2] = {a.raw_buffer()->dim[0], a.raw_buffer()->dim[1]};
    dims[1].extent = 1;
    cropped.dim = dims;
    Blob one_row(add_f32_program("reshaped_one_row", 32, 1).p);
    Buffer<float> b1(32, 1), out1(32, 1);
    EXPECT_EQ(run(one_row, {&cropped, b1.raw_buffer(), out1.raw_buffer()}), spyre_error_buffer_mismatch);
    EXPECT_CONTAINS(spyre_last_error(), "has a Spyre device allocation of another type or shape");
    a.device_free();
}

TEST(ResidencyErrors, BadExplicitLayoutIsRejected) {
    Buffer<float> a(40, 3);
    spyre_device_layout l{};
    l.dimensions = 2;
    l.order[0] = 1;
    l.order[1] = 0;
    l.padded[0] = 40;  // not whole sticks
    l.padded[1] = 3;
    EXPECT_EQ(spyre_device_malloc_with_layout(nullptr, a.raw_buffer(), &l), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "whole number of sticks");
    EXPECT_FALSE(a.has_device_allocation());
}

// ---- the pooled allocator ----

TEST(DeviceMemoryPool, ReusesAFreedBlockOfTheSameSizeClassZeroed) {
    DeviceMemory mem(int64_t(1) << 30);
    const uint64_t h = mem.allocate(10000, "first");
    std::memset(mem.data(h), 0xab, 10000);
    uint8_t *p = mem.data(h);
    mem.free(h);
    EXPECT_EQ(mem.pooled_bytes(), 12288);
    EXPECT_EQ(mem.used(), 0);

    const uint64_t again = mem.allocate(9000, "same class");
    EXPECT_EQ(mem.pool_reuses(), 1u);
    EXPECT_EQ(mem.data(again), p);
    EXPECT_NE(again, h) << "handles are never reused";
    for (int i = 0; i < 9000; i++) ASSERT_EQ(mem.data(again)[i], 0) << i;

    const uint64_t other = mem.allocate(20000, "other class");
    EXPECT_EQ(mem.pool_reuses(), 1u);
    mem.free(again);
    mem.free(other);
}

TEST(DeviceMemoryPool, SizeClassesBoundTheWaste) {
    EXPECT_EQ(DeviceMemory::size_class(1), 4096);
    EXPECT_EQ(DeviceMemory::size_class(16 * 4096), 16 * 4096);
    for (int64_t bytes : {int64_t(70000), int64_t(1) << 20, int64_t(3) << 20, int64_t(50000000)}) {
        const int64_t c = DeviceMemory::size_class(bytes);
        EXPECT_GE(c, bytes);
        EXPECT_LE(c, bytes + bytes / 8 + 4096) << bytes;
    }
}

TEST(DeviceMemoryPool, ThePoolIsCapped) {
    DeviceMemory mem(int64_t(1) << 30, 16384);
    const uint64_t a = mem.allocate(12288, "a"), b = mem.allocate(12288, "b");
    mem.free(a);
    mem.free(b);  // would exceed the 16 KiB cap: unmapped
    EXPECT_EQ(mem.pooled_bytes(), 12288);
    mem.release_pool();
    EXPECT_EQ(mem.pooled_bytes(), 0);
}

TEST(DeviceMemoryPool, ExhaustionStillNamesRequestedAndFreeBytes) {
    DeviceMemory mem(1 << 20);
    const uint64_t a = mem.allocate(900000, "big");
    try {
        mem.allocate(300000, "too much");
        FAIL() << "expected exhaustion";
    } catch (const Error &e) {
        EXPECT_CONTAINS(e.what(), "device memory exhausted: 'too much' requested 300000 bytes");
        EXPECT_CONTAINS(e.what(), "of 1048576 bytes are free");
    }
    mem.free(a);
}

}  // namespace
}  // namespace spyre::testing

namespace spyre::testing {
namespace {

TEST(ProgramArgumentLayout, ReadsAnArgumentsLayoutFromAProgramFile) {
    ProgramBuilder b("layout_probe");
    const int a = b.arg("A", ArgKind::Input, DType::F16, {100, 3});
    b.p.args[a].layout.padded = {128, 8};  // a padded row count, as a kernel's planner may choose
    b.arg("Out", ArgKind::Output, DType::F16, {100, 3});
    const std::string path = ::testing::TempDir() + "/layout_probe.spyre";
    write_file_bytes(path, encode_program(b.p));
    spyre_device_layout l{};
    ASSERT_EQ(spyre_program_argument_layout(path.c_str(), "A", &l), 0) << spyre_last_error();
    EXPECT_EQ(l.dimensions, 2);
    EXPECT_EQ(l.stick_dim, 0);
    EXPECT_EQ(l.padded[0], 128);
    EXPECT_EQ(l.padded[1], 8);
    EXPECT_EQ(spyre_program_argument_layout(path.c_str(), "B", &l), spyre_error_bad_argument);
    EXPECT_NE(std::string(spyre_last_error()).find("has no argument 'B'"), std::string::npos) << spyre_last_error();
    EXPECT_EQ(spyre_program_argument_layout((path + ".missing").c_str(), "A", &l), spyre_error_bad_program);
    EXPECT_NE(std::string(spyre_last_error()).find(".missing"), std::string::npos);
}

}  // namespace
}  // namespace spyre::testing
