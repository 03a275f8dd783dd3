// The C API generated kernels call (spyre_runtime.h), driven the way generated
// code drives it: an encoded program blob in a uint8 halide_buffer_t and
// Halide::Runtime::Buffer tensors with arbitrary strides and mins. Results
// against a C++ reference; every failure by its code and message.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "program_builder.h"
#include "spyre/program_format.h"
#include "spyre/spyre_runtime.h"

namespace spyre::testing {
namespace {

using Halide::Runtime::Buffer;

// Out(x, y) = A(x, y) + B(x, y), f16 [70, 3]. A row is 70 lanes padded to two
// sticks (256 bytes); core 0 adds rows 0-1, core 1 the ragged rest (row 2).
ProgramBuilder add_f16_program(const std::string &name = "add_f16") {
    ProgramBuilder b(name);
    const int A = b.arg("A", ArgKind::Input, DType::F16, {70, 3});
    const int B = b.arg("B", ArgKind::Input, DType::F16, {70, 3});
    const int Out = b.arg("Out", ArgKind::Output, DType::F16, {70, 3});
    const int64_t row = 256;
    struct Part {
        int core;
        int64_t first_row, rows;
    };
    for (Part part : {Part{0, 0, 2}, Part{1, 2, 1}}) {
        const int c = part.core;
        const int64_t dram = part.first_row * row;
        b.load(c, A, dram, 0, row, part.rows);
        b.load(c, B, dram, 1024, row, part.rows);
        b.signal(c, Unit::Dma, 0);
        b.wait(c, Unit::Sfu, 0);
        b.emit(c, Unit::Sfu, Opcode::Add, {2048, row, 0, row, 0, 1024, row, 0, 128, part.rows, (int)DType::F16, 0});
        b.signal(c, Unit::Sfu, 1);
        b.wait(c, Unit::Dma, 1);
        b.store(c, Out, dram, 2048, row, part.rows);
    }
    return b;
}

// Y(x) = X(x) + p, f32 [32] on core 0; p is scalar parameter 0.
ProgramBuilder add_param_program(const std::string &name) {
    ProgramBuilder b(name);
    b.p.params.push_back({"p", DType::F32});
    const int X = b.arg("X", ArgKind::Input, DType::F32, {32});
    const int Y = b.arg("Y", ArgKind::Output, DType::F32, {32});
    b.load(0, X, 0, 0, 128);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Add, {512, 0, 0, 0, 0, 0, 0, 3, 32, 1, (int)DType::F32, 0});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Y, 0, 512, 128);
    return b;
}

// An encoded program wrapped the way generated code embeds it.
struct Blob {
    std::vector<uint8_t> bytes;
    Buffer<uint8_t> buffer;

    explicit Blob(const Program &p) : bytes(encode_program(p)), buffer(bytes.data(), (int)bytes.size()) {}
    explicit Blob(std::vector<uint8_t> b) : bytes(std::move(b)), buffer(bytes.data(), (int)bytes.size()) {}
    halide_buffer_t *raw() { return buffer.raw_buffer(); }
};

// Halide's runtime has no C++ float16 type, so f16 tensors are uint16 buffers
// whose halide_buffer_t is relabelled float16 (same bits, same strides).
halide_buffer_t as_f16(Buffer<uint16_t> &b) {
    halide_buffer_t r = *b.raw_buffer();
    r.type = halide_type_t(halide_type_float, 16);
    return r;
}

void fill_f16(Buffer<uint16_t> &b, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    b.for_each_value([&](uint16_t &v) { v = float_to_half(u(rng)); });
}

struct RunOutcome {
    int code;
    std::string message;
};

RunOutcome call(Blob &blob, std::vector<halide_buffer_t *> buffers, std::vector<double> params = {}) {
    int code = spyre_run_program(nullptr, blob.raw(), (int32_t)buffers.size(), buffers.data(), (int32_t)params.size(),
                                 params.data());
    return {code, code == 0 ? "" : spyre_last_error()};
}

// Three correctly shaped dense f16 buffers for add_f16_program.
struct AddBuffers {
    Buffer<uint16_t> a{70, 3}, b{70, 3}, out{70, 3};
    halide_buffer_t ra, rb, rout;
    AddBuffers() {
        fill_f16(a, 1);
        fill_f16(b, 2);
        ra = as_f16(a);
        rb = as_f16(b);
        rout = as_f16(out);
    }
    std::vector<halide_buffer_t *> all() { return {&ra, &rb, &rout}; }
};

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// ---- results ----

TEST(HalideGlue, AddsStridedAndCroppedBuffersExactly) {
    Blob blob(add_f16_program().p);
    // A: transposed storage (dimension 0 has stride 3). B: a crop of a larger
    // buffer, translated back to min 0 (a kernel reads [0, extent) of each
    // dimension, as in a host build). Out: a crop of a larger buffer too.
    Buffer<uint16_t> a_storage(3, 70);
    fill_f16(a_storage, 11);
    Buffer<uint16_t> a = a_storage.transposed(0, 1);
    ASSERT_EQ(a.dim(0).stride(), 3);
    Buffer<uint16_t> b_storage(80, 5);
    fill_f16(b_storage, 12);
    Buffer<uint16_t> b = b_storage.cropped(0, 5, 70).cropped(1, 1, 3);
    b.translate({-5, -1});
    Buffer<uint16_t> out_storage(75, 4);
    out_storage.fill(0xffff);
    Buffer<uint16_t> out = out_storage.cropped(0, 2, 70).cropped(1, 1, 3);
    out.translate({-2, -1});
    halide_buffer_t ra = as_f16(a), rb = as_f16(b), rout = as_f16(out);

    RunOutcome r = call(blob, {&ra, &rb, &rout});
    ASSERT_EQ(r.code, spyre_success) << r.message;

    int differing = 0;
    for (int y = 0; y < 3; y++) {
        for (int x = 0; x < 70; x++) {
            const float expect = half_to_float(float_to_half(half_to_float(a(x, y)) + half_to_float(b_storage(x + 5, y + 1))));
            ASSERT_EQ(half_to_float(out_storage(x + 2, y + 1)), expect) << "x " << x << " y " << y;
            if (out(x, y) != out(0, 0)) differing++;
        }
    }
    EXPECT_GT(differing, 0) << "output is constant: the test could pass by accident";
    EXPECT_EQ(out_storage(0, 0), 0xffff) << "the crop's border is untouched";
    EXPECT_EQ(out_storage(74, 3), 0xffff) << "the crop's border is untouched";
}

TEST(HalideGlue, MarksOutputsHostDirtyAndLeavesInputsAlone) {
    Blob blob(add_param_program("add_param_flags").p);
    Buffer<float> x(32), y(32);
    for (int i = 0; i < 32; i++) x(i) = 0.25f * i - 3.0f;
    y.raw_buffer()->flags = halide_buffer_flag_device_dirty;  // stale device copy: overwritten by the run
    const uint64_t x_flags = x.raw_buffer()->flags;
    RunOutcome r = call(blob, {x.raw_buffer(), y.raw_buffer()}, {1.5});
    ASSERT_EQ(r.code, spyre_success) << r.message;
    EXPECT_TRUE(y.raw_buffer()->flags & halide_buffer_flag_host_dirty);
    EXPECT_FALSE(y.raw_buffer()->flags & halide_buffer_flag_device_dirty);
    EXPECT_EQ(x.raw_buffer()->flags, x_flags);
    for (int i = 0; i < 32; i++) ASSERT_EQ(y(i), x(i) + 1.5f) << i;
}

TEST(HalideGlue, RepeatedRunsOfOneBlobGiveTheSameResults) {
    Blob blob(add_f16_program().p);
    AddBuffers first;
    ASSERT_EQ(call(blob, first.all()).code, spyre_success);
    for (int run = 0; run < 3; run++) {
        AddBuffers again;
        RunOutcome r = call(blob, again.all());
        ASSERT_EQ(r.code, spyre_success) << r.message;
        ASSERT_EQ(0, std::memcmp(again.out.data(), first.out.data(), first.out.size_in_bytes())) << "run " << run;
    }
}

TEST(HalideGlue, ANewProgramAtTheAddressOfAnOldOneIsLoadedAfresh) {
    // The cache is keyed by blob address; a different blob later placed at
    // the same address (heap reuse) must not run the old program.
    std::vector<uint8_t> first = encode_program(add_param_program("reuse_first").p);
    std::vector<uint8_t> second = encode_program(add_param_program("reuse_second").p);
    std::vector<uint8_t> storage(std::max(first.size(), second.size()));
    Buffer<float> x(32), y(32);
    x.fill(1.0f);

    std::copy(first.begin(), first.end(), storage.begin());
    Buffer<uint8_t> blob1(storage.data(), (int)first.size());
    ASSERT_EQ(spyre_run_program(nullptr, blob1.raw_buffer(), 2, std::vector<halide_buffer_t *>{x.raw_buffer(), y.raw_buffer()}.data(), 1,
                                std::vector<double>{2.0}.data()),
              spyre_success);
    spyre_kernel_stats s;
    ASSERT_EQ(spyre_get_last_run_stats(&s), 0);
    EXPECT_STREQ(s.kernel, "reuse_first");

    std::copy(second.begin(), second.end(), storage.begin());
    Buffer<uint8_t> blob2(storage.data(), (int)second.size());
    ASSERT_EQ(spyre_run_program(nullptr, blob2.raw_buffer(), 2, std::vector<halide_buffer_t *>{x.raw_buffer(), y.raw_buffer()}.data(), 1,
                                std::vector<double>{2.0}.data()),
              spyre_success);
    ASSERT_EQ(spyre_get_last_run_stats(&s), 0);
    EXPECT_STREQ(s.kernel, "reuse_second");
}

TEST(HalideGlue, ScalarParametersReachTheDevice) {
    Blob blob(add_param_program("add_param").p);
    Buffer<float> x(32), y(32);
    for (int i = 0; i < 32; i++) x(i) = (float)i;
    ASSERT_EQ(call(blob, {x.raw_buffer(), y.raw_buffer()}, {-0.5}).code, spyre_success);
    for (int i = 0; i < 32; i++) ASSERT_EQ(y(i), i - 0.5f);
}

TEST(HalideGlue, SynchronizationModeFromTheEnvironmentChangesTimeNotResults) {
    Blob blob(add_f16_program().p);
    AddBuffers normal;
    ASSERT_EQ(call(blob, normal.all()).code, spyre_success);
    spyre_kernel_stats normal_stats;
    ASSERT_EQ(spyre_get_last_run_stats(&normal_stats), 0);

    setenv("SPYRE_SYNC", "serial", 1);
    AddBuffers serial;
    RunOutcome r = call(blob, serial.all());
    spyre_kernel_stats serial_stats;
    spyre_get_last_run_stats(&serial_stats);
    setenv("SPYRE_SYNC", "sometimes", 1);
    AddBuffers bad;
    RunOutcome bad_mode = call(blob, bad.all());
    unsetenv("SPYRE_SYNC");

    ASSERT_EQ(r.code, spyre_success) << r.message;
    EXPECT_EQ(0, std::memcmp(serial.out.data(), normal.out.data(), normal.out.size_in_bytes()));
    EXPECT_GT(serial_stats.cycles, normal_stats.cycles);
    EXPECT_EQ(bad_mode.code, spyre_error_bad_argument);
    EXPECT_CONTAINS(bad_mode.message, "SPYRE_SYNC='sometimes' is not one of normal, serial, random");
}

// ---- statistics ----

TEST(HalideGlue, RecordsTheLastRunAndPerKernelTotals) {
    Blob blob(add_f16_program("add_f16_stats").p);
    AddBuffers bufs;
    ASSERT_EQ(call(blob, bufs.all()).code, spyre_success);
    spyre_kernel_stats last;
    ASSERT_EQ(spyre_get_last_run_stats(&last), 0);
    EXPECT_STREQ(last.kernel, "add_f16_stats");
    EXPECT_EQ(last.calls, 1u);
    EXPECT_GT(last.cycles, 0);
    EXPECT_GT(last.simulated_us, 0);
    EXPECT_GT(last.roofline_bound_us, 0);
    EXPECT_LE(last.roofline_bound_us, last.simulated_us);
    EXPECT_EQ(last.dram_read_bytes, 2u * 3 * 256);
    EXPECT_EQ(last.dram_write_bytes, 3u * 256);
    EXPECT_STRNE(last.bottleneck, "");

    ASSERT_EQ(call(blob, bufs.all()).code, spyre_success);
    spyre_kernel_stats total;
    ASSERT_EQ(spyre_get_kernel_stats("add_f16_stats", &total), 0);
    EXPECT_EQ(total.calls, 2u);
    EXPECT_DOUBLE_EQ(total.cycles, 2 * last.cycles);
    EXPECT_EQ(total.dram_read_bytes, 2 * last.dram_read_bytes);
    EXPECT_EQ(spyre_get_kernel_stats("never_ran", &total), -1);
}

TEST(HalideGlue, ProfileTableListsEveryKernel) {
    Blob blob(add_f16_program("add_f16_profile").p);
    AddBuffers bufs;
    ASSERT_EQ(call(blob, bufs.all()).code, spyre_success);
    char *text = nullptr;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    spyre_print_profile(f);
    std::fclose(f);
    std::string table(text, size);
    std::free(text);
    EXPECT_CONTAINS(table, "kernel");
    EXPECT_CONTAINS(table, "bottleneck");
    EXPECT_CONTAINS(table, "add_f16_profile");
}

// ---- buffer errors ----

TEST(HalideGlueErrors, AnExtentTooSmallIsOutOfBoundsLikeInAHostBuild) {
    Blob blob(add_f16_program().p);
    AddBuffers bufs;
    Buffer<uint16_t> short_b(70, 2);
    halide_buffer_t rb = as_f16(short_b);
    RunOutcome r = call(blob, {&bufs.ra, &rb, &bufs.rout});
    EXPECT_EQ(r.code, halide_error_code_access_out_of_bounds);
    EXPECT_EQ(r.message, "add_f16: buffer 'B' dimension 1 covers [0, 1] (min 0, extent 2); the kernel accesses [0, 2]");
}

TEST(HalideGlueErrors, ALargerExtentViolatesTheCompiledShapeLikeInAHostBuild) {
    Blob blob(add_f16_program().p);
    AddBuffers bufs;
    Buffer<uint16_t> long_b(70, 4);
    halide_buffer_t rb = as_f16(long_b);
    RunOutcome r = call(blob, {&bufs.ra, &rb, &bufs.rout});
    EXPECT_EQ(r.code, halide_error_code_constraint_violated);
    EXPECT_EQ(r.message, "add_f16: buffer 'B' dimension 1 has extent 4, the kernel was compiled for 3");
}

TEST(HalideGlueErrors, ANonZeroMinIsNeverIgnored) {
    Blob blob(add_f16_program().p);
    AddBuffers bufs;
    halide_buffer_t shifted = bufs.ra;
    halide_dimension_t dims[2] = {bufs.ra.dim[0], bufs.ra.dim[1]};
    shifted.dim = dims;
    dims[1].min = 1;  // covers rows [1, 3]; the kernel reads [0, 2]
    RunOutcome r = call(blob, {&shifted, &bufs.rb, &bufs.rout});
    EXPECT_EQ(r.code, halide_error_code_access_out_of_bounds);
    EXPECT_EQ(r.message, "add_f16: buffer 'A' dimension 1 covers [1, 3] (min 1, extent 3); the kernel accesses [0, 2]");
    dims[1].min = -1;  // covers [-1, 1]: too short at the top
    EXPECT_EQ(call(blob, {&shifted, &bufs.rb, &bufs.rout}).code, halide_error_code_access_out_of_bounds);
    dims[1].min = -1;
    dims[1].extent = 4;  // covers [-1, 2]: the region, but not at min 0
    r = call(blob, {&shifted, &bufs.rb, &bufs.rout});
    EXPECT_EQ(r.code, halide_error_code_constraint_violated);
    EXPECT_EQ(r.message, "add_f16: buffer 'A' dimension 1 has min -1 and extent 4, the kernel was compiled for min 0 and extent 3");
}

TEST(HalideGlueErrors, WrongTypeNamesBothTypes) {
    Blob blob(add_f16_program().p);
    AddBuffers bufs;
    Buffer<float> f32(70, 3);
    RunOutcome r = call(blob, {f32.raw_buffer(), &bufs.rb, &bufs.rout});
    EXPECT_EQ(r.code, halide_error_code_bad_type) << "the code a host build gives";
    EXPECT_EQ(r.message, "add_f16: buffer 'A' has type float32, the kernel was compiled for f16 (float16)");
    // Same bits, wrong type code: uint16 is not float16.
    RunOutcome u = call(blob, {bufs.a.raw_buffer(), &bufs.rb, &bufs.rout});
    EXPECT_EQ(u.code, halide_error_code_bad_type);
    EXPECT_CONTAINS(u.message, "has type uint16");
}

TEST(HalideGlueErrors, WrongDimensionCount) {
    Blob blob(add_f16_program().p);
    AddBuffers bufs;
    Buffer<uint16_t> three_d(70, 3, 1);
    halide_buffer_t rout = as_f16(three_d);
    RunOutcome r = call(blob, {&bufs.ra, &bufs.rb, &rout});
    EXPECT_EQ(r.code, halide_error_code_bad_dimensions) << "the code a host build gives";
    EXPECT_EQ(r.message, "add_f16: buffer 'Out' has 3 dimensions, the kernel was compiled for 2");
}

TEST(HalideGlueErrors, NullHost) {
    Blob blob(add_f16_program().p);
    AddBuffers bufs;
    halide_buffer_t no_host = bufs.ra;
    no_host.host = nullptr;
    RunOutcome r = call(blob, {&no_host, &bufs.rb, &bufs.rout});
    EXPECT_EQ(r.code, spyre_error_null_host);
    EXPECT_EQ(r.message, "add_f16: buffer 'A' has no host memory and no Spyre device allocation");
}

TEST(HalideGlueErrors, DeviceDirtyInputIsRejected) {
    Blob blob(add_f16_program().p);
    AddBuffers bufs;
    bufs.rb.flags |= halide_buffer_flag_device_dirty;
    RunOutcome r = call(blob, bufs.all());
    EXPECT_EQ(r.code, spyre_error_bad_argument);
    EXPECT_CONTAINS(r.message, "add_f16: buffer 'B' is device-dirty");
}

TEST(HalideGlueErrors, WrongNumberOfBuffersListsTheArguments) {
    Blob blob(add_f16_program().p);
    AddBuffers bufs;
    RunOutcome r = call(blob, {&bufs.ra, &bufs.rb});
    EXPECT_EQ(r.code, spyre_error_bad_argument);
    EXPECT_EQ(r.message, "add_f16: called with 2 buffers, the kernel takes 3 (inputs and outputs in argument order: A, B, Out)");
}

TEST(HalideGlueErrors, WrongNumberOfParameters) {
    Blob blob(add_param_program("add_param_count").p);
    Buffer<float> x(32), y(32);
    RunOutcome r = call(blob, {x.raw_buffer(), y.raw_buffer()});
    EXPECT_EQ(r.code, spyre_error_bad_argument);
    EXPECT_EQ(r.message, "add_param_count: called with 0 scalar parameters, the kernel takes 1");
}

TEST(HalideGlueErrors, TemporariesAreNotPassedByTheCaller) {
    ProgramBuilder b("with_temp");
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32, 2});
    const int T = b.arg("T", ArgKind::Temp, DType::F32, {32, 2});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {32, 2});
    b.load(0, A, 0, 0, 128, 2);
    b.store(0, T, 0, 0, 128, 2);
    b.load(0, T, 0, 512, 128, 2);
    b.store(0, Out, 0, 512, 128, 2);
    Blob blob(b.p);
    Buffer<float> a(32, 2), out(32, 2);
    for (int i = 0; i < 64; i++) a.data()[i] = 0.5f * i;
    RunOutcome r = call(blob, {a.raw_buffer(), out.raw_buffer()});
    ASSERT_EQ(r.code, spyre_success) << r.message;
    EXPECT_EQ(0, std::memcmp(a.data(), out.data(), a.size_in_bytes()));
}

// ---- program errors ----

TEST(HalideGlueErrors, CorruptedBlobIsABadProgram) {
    std::vector<uint8_t> bytes = encode_program(add_f16_program("corrupt").p);
    bytes[bytes.size() / 2] ^= 0x5a;
    Blob blob(bytes);
    AddBuffers bufs;
    RunOutcome r = call(blob, bufs.all());
    EXPECT_EQ(r.code, spyre_error_bad_program);
    EXPECT_CONTAINS(r.message, "spyre_run_program: the program blob (" + std::to_string(bytes.size()) + " bytes) is malformed");

    Blob truncated(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20));
    EXPECT_EQ(call(truncated, bufs.all()).code, spyre_error_bad_program);
}

TEST(HalideGlueErrors, ProgramForAnotherMachineIsAMachineMismatch) {
    ProgramBuilder b = add_f16_program("other_machine");
    b.p.machine_fingerprint ^= 0x1234;
    Blob blob(b.p);
    AddBuffers bufs;
    RunOutcome r = call(blob, bufs.all());
    EXPECT_EQ(r.code, spyre_error_machine_mismatch);
    EXPECT_CONTAINS(r.message, "other_machine: program 'other_machine' was built for machine fingerprint");
}

TEST(HalideGlueErrors, InvalidProgramIsABadProgram) {
    ProgramBuilder b = add_f16_program("invalid");
    b.p.cores.resize(3);
    Blob blob(b.p);
    AddBuffers bufs;
    RunOutcome r = call(blob, bufs.all());
    EXPECT_EQ(r.code, spyre_error_bad_program);
    EXPECT_CONTAINS(r.message, "invalid: program 'invalid' has streams for 3");
}

TEST(HalideGlueErrors, ArgumentLargerThanTheDeviceIsRejectedWhenLoaded) {
    ProgramBuilder b("too_big");
    b.arg("Y", ArgKind::Output, DType::F16, {64, 1000000000});  // 128 GB > 112 GB usable
    Blob blob(b.p);
    RunOutcome r = call(blob, {nullptr});
    EXPECT_EQ(r.code, spyre_error_bad_program);
    EXPECT_CONTAINS(r.message, "too_big: argument 'Y' needs 128000000000 bytes of device DRAM, the machine has");
}

// Two outputs of 61.44 GB: each fits the device, both do not.
TEST(HalideGlueErrors, ExhaustedDeviceMemoryReportsRequestedAndFreeBytes) {
    ProgramBuilder b("two_huge_outputs");
    b.arg("X", ArgKind::Output, DType::F16, {64, 480000000});
    b.arg("Y", ArgKind::Output, DType::F16, {64, 480000000});
    Blob blob(b.p);
    // The host memory is never touched: allocation fails before any data moves
    // (an inaccessible page, so any touch would crash the test).
    void *page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(page, MAP_FAILED);
    halide_dimension_t dims[2] = {{0, 64, 1, 0}, {0, 480000000, 64, 0}};
    halide_buffer_t x{};
    x.host = static_cast<uint8_t *>(page);
    x.type = halide_type_t(halide_type_float, 16);
    x.dimensions = 2;
    x.dim = dims;
    halide_buffer_t y = x;

    RunOutcome r = call(blob, {&x, &y});
    EXPECT_EQ(r.code, spyre_error_out_of_memory);
    EXPECT_CONTAINS(r.message, "two_huge_outputs: argument 'Y': device memory exhausted: 'two_huge_outputs/Y' requested 61440000000 bytes");
    EXPECT_CONTAINS(r.message, "bytes are free");
    // The failed run returned what it had allocated: a second attempt sees the same free space.
    RunOutcome again = call(blob, {&x, &y});
    EXPECT_EQ(again.message, r.message);
    munmap(page, 4096);
}

TEST(HalideGlueErrors, ReadingUninitialisedScratchpadIsARuleViolation) {
    ProgramBuilder b("poison");
    const int A = b.arg("A", ArgKind::Input, DType::F32, {32});
    const int O = b.arg("O", ArgKind::Output, DType::F32, {32});
    b.load(0, A, 0, 0, 128);
    b.store(0, O, 0, 128, 128);  // 128..256 was never written
    Blob blob(b.p);
    Buffer<float> a(32), o(32);
    a.fill(1.0f);
    RunOutcome r = call(blob, {a.raw_buffer(), o.raw_buffer()});
    EXPECT_EQ(r.code, spyre_error_rule_violation);
    EXPECT_CONTAINS(r.message, "poison: ");
    EXPECT_CONTAINS(r.message, "reads scratchpad byte 128 which was never written");
    EXPECT_EQ(o.raw_buffer()->flags, 0u) << "a failed run must not mark outputs as written";
}

TEST(HalideGlueErrors, MessageGoesToStderrWithoutAHalideRuntime) {
    Blob blob(add_f16_program().p);
    AddBuffers bufs;
    ::testing::internal::CaptureStderr();
    RunOutcome r = call(blob, {&bufs.ra});
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(r.code, spyre_error_bad_argument);
    EXPECT_CONTAINS(err, r.message);
}

TEST(HalideGlueErrors, MalformedProgramBufferIsAnArgumentError) {
    AddBuffers bufs;
    std::vector<halide_buffer_t *> all = bufs.all();
    EXPECT_EQ(spyre_run_program(nullptr, nullptr, 3, all.data(), 0, nullptr), spyre_error_bad_argument);
    Buffer<float> not_bytes(16);
    EXPECT_EQ(spyre_run_program(nullptr, not_bytes.raw_buffer(), 3, all.data(), 0, nullptr), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "dense 1-D uint8 buffer");
}

}  // namespace
}  // namespace spyre::testing
