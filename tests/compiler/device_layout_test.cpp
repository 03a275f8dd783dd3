// Device layouts chosen by the schedule (spyre::set_device_layout): the order
// of a tensor's dimensions on the device is free, and the sticks may run along
// any dimension declared with constrain_tensor(..., stick_dim). The backend
// maps every DMA through the layout; the runtime packs host buffers into it.
// Same results as the default layout.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "jit_helpers.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

// The .spyre.txt the lowering wrote for `kernel` into `dir`.
std::string read_disassembly(const std::string &dir, const std::string &kernel) {
    std::ifstream f(dir + "/" + kernel + ".spyre.txt");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// out(x, y, b) = in(x, y, b) * 2 + 1 on 64 x 6 x 4 f32; one batch per core,
// one row (y) per tile.
Buffer<float> run(const std::string &name, const std::vector<int> &in_order, std::string *disassembly) {
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 3, name + "_in");
    Func compute(name + "_compute"), out(name + "_out");
    Var x("x"), y("y"), b("b");
    compute(x, y, b) = in(x, y, b) * 2.0f + 1.0f;
    out(x, y, b) = compute(x, y, b);
    constrain_tensor(in, {64, 6, 4});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64, 6, 4});
    set_device_layout(in, StickLayout{0, in_order});
    out.parallel(b).vectorize(x, 32);
    stage_in_scratchpad(in.in(), out, y);
    compute.compute_at(out, y).store_in(MemoryType::VTCM).vectorize(x, 32);
    Buffer<float> input(64, 6, 4, name + "_in");
    input.for_each_element([&](int i, int j, int k) { input(i, j, k) = (float)(i + 100 * j + 1000 * k) / 7.0f; });
    in.set(input);
    SpyreLoweringOptions o;
    o.kernel_name = name;
    o.output_dir = ::testing::TempDir();
    attach_spyre_lowering(out, o);
    Buffer<float> r = out.realize({64, 6, 4}, Target("x86-64-linux"));
    set_compiling_for_spyre(false);
    *disassembly = read_disassembly(o.output_dir, name);
    return r;
}

TEST(DeviceLayout, PermutedOrderGivesTheSameResults) {
    std::string default_text, permuted_text;
    Buffer<float> a = run("layout_default", {2, 1, 0}, &default_text);
    Buffer<float> b = run("layout_yb", {1, 2, 0}, &permuted_text);  // rows (y) outermost, then batch
    b.for_each_element([&](int i, int j, int k) {
        ASSERT_EQ(b(i, j, k), (float)(i + 100 * j + 1000 * k) / 7.0f * 2.0f + 1.0f) << i << "," << j << "," << k;
        ASSERT_EQ(a(i, j, k), b(i, j, k));
    });
    // The argument table carries the layout, and the DMA addresses follow it:
    // core 1 (batch 1) starts at 256 bytes (2 sticks of the x row) instead of 1536.
    EXPECT_NE(permuted_text.find("order=[1,2,0]"), std::string::npos) << permuted_text;
    EXPECT_NE(default_text.find("order=[2,1,0]"), std::string::npos) << default_text;
    const size_t core1 = permuted_text.find(".core 1");
    ASSERT_NE(core1, std::string::npos);
    EXPECT_NE(permuted_text.find("dram=256+1024*L0", core1), std::string::npos) << permuted_text.substr(core1, 600);
}

// out(x, y) = in(x, y) * 3 - 2 on a 5 x 200 f16 tensor whose sticks run along y (dimension 1): the
// kernel vectorizes y, the staged tiles keep y innermost (reorder_storage), and y is innermost in
// the device order, so a vector of several sticks is one contiguous DMA row. One x per core (5 cores).
struct StickAlongY {
    ImageParam in;
    Func staged, compute, out;
    Var x{"x"}, y{"y"};
    static constexpr int X = 5, Y = 200;

    // by_vocabulary: the input staged with stage_in_scratchpad (which finds its stick dimension)
    // instead of by hand.
    StickAlongY(const std::string &name, const std::vector<int> &order, int vector_lanes, bool by_vocabulary = false)
        : in(Float(16), 2, name + "_in"), compute(name + "_compute"), out(name + "_out") {
        set_compiling_for_spyre(true);
        staged = in.in();
        compute(x, y) = staged(x, y) * Halide::float16_t(3.0f) - Halide::float16_t(2.0f);
        out(x, y) = compute(x, y);
        constrain_tensor(in, {X, Y}, {}, /*stick_dim=*/1);
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {X, Y}, {}, /*stick_dim=*/1);
        set_device_layout(in, StickLayout{1, order});
        set_device_layout(out.name(), StickLayout{1, order});
        out.reorder(y, x).parallel(x).vectorize(y, vector_lanes);
        const Var sx = staged.args()[0], sy = staged.args()[1];  // the wrapper's own vars
        if (by_vocabulary) {
            stage_in_scratchpad(staged, out, x);
        } else {
            staged.compute_at(out, x).store_in(MemoryType::VTCM).reorder_storage(sy, sx).vectorize(sy, vector_lanes);
        }
        compute.compute_at(out, x).store_in(MemoryType::VTCM).reorder_storage(y, x).vectorize(y, vector_lanes);
    }

    Buffer<Halide::float16_t> run(const std::string &kernel, std::string *disassembly) {
        // Buffers have the true extents; the runtime pads them into the device layout.
        Buffer<Halide::float16_t> input(X, Y, in.name());
        input.for_each_element([&](int i, int j) { input(i, j) = Halide::float16_t(input_value(i, j)); });
        in.set(input);
        SpyreLoweringOptions o;
        o.kernel_name = kernel;
        o.output_dir = ::testing::TempDir();
        attach_spyre_lowering(out, o);
        Buffer<Halide::float16_t> r(X, Y);  // the true extents (realize({X, Y}) would allocate the padded ones)
        realize_for_spyre(out, r);
        *disassembly = read_disassembly(o.output_dir, kernel);
        return r;
    }

    static float input_value(int i, int j) { return (float)((i * 7 + j * 3) % 23) / 4.0f; }

    // r is in * 3 - 2 in fp16 at every element, and not constant.
    static void expect_the_algorithm(const Buffer<Halide::float16_t> &r) {
        int distinct = 0;
        for (int j = 0; j < Y; j++)
            for (int i = 0; i < X; i++) {
                const float v = (float)Halide::float16_t(input_value(i, j));
                const float expected = (float)Halide::float16_t((float)Halide::float16_t(v * 3.0f) - 2.0f);
                ASSERT_EQ((float)r(i, j), expected) << i << "," << j;
                distinct += (float)r(i, j) != (float)r(0, 0);
            }
        EXPECT_GT(distinct, 0);
    }
};

TEST(DeviceLayout, StickDimensionOtherThanZeroComputesTheAlgorithm) {
    StickAlongY k("stick_y", {0, 1}, 128);
    std::string text;
    StickAlongY::expect_the_algorithm(k.run("stick_y", &text));
    // The argument table has the layout; y is padded to 4 sticks of 64, x is not padded.
    EXPECT_NE(text.find("extent=[5,200] stick=1 order=[0,1] padded=[5,256]"), std::string::npos) << text;
    // Core 1 (x = 1) starts at 4 sticks (512 bytes): its whole y row is one stick-dimension run.
    const size_t core1 = text.find(".core 1");
    ASSERT_NE(core1, std::string::npos);
    EXPECT_NE(text.find("dram=512", core1), std::string::npos) << text.substr(core1, 600);
}

// stage_in_scratchpad on the wrapper of a tensor whose sticks run along y vectorizes y (one stick
// per vector) and keeps it innermost in the tile: before, it vectorized x (dimension 0).
TEST(DeviceLayout, StageInScratchpadVectorizesTheTensorsStickDimension) {
    StickAlongY k("stick_y_vocab", {0, 1}, 128, /*by_vocabulary=*/true);
    std::string text;
    StickAlongY::expect_the_algorithm(k.run("stick_y_vocab", &text));
    EXPECT_NE(text.find("extent=[5,200] stick=1 order=[0,1] padded=[5,256]"), std::string::npos) << text;
}

TEST(DeviceLayout, AVectorOfSticksThatAreNotAdjacentIsACompileError) {
    // y is the stick dimension but x is innermost in the order: consecutive sticks of a y vector are
    // X sticks apart, so a two-stick vector cannot be one DMA row.
    StickAlongY k("stick_y_bad", {1, 0}, 128);
    std::string text, msg;
    try {
        (void)k.run("stick_y_bad", &text);
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    EXPECT_NE(msg.find("is a vector of 2 sticks"), std::string::npos) << msg;
    EXPECT_NE(msg.find("put the stick dimension last in the order"), std::string::npos) << msg;
}

TEST(DeviceLayout, OneStickVectorsWorkWhateverTheOrder) {
    StickAlongY k("stick_y_1", {1, 0}, 64);
    std::string text;
    StickAlongY::expect_the_algorithm(k.run("stick_y_1", &text));
}

TEST(DeviceLayout, StickDimensionMustMatchTheDeclaredOne) {
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "layout_bad_in");
    constrain_tensor(in, {64, 8});
    std::string msg;
    try {
        set_device_layout(in, StickLayout{1, {0, 1}});
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("declared with sticks along dimension 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("pass stick_dim=1 to spyre::constrain_tensor"), std::string::npos) << msg;
}

}  // namespace
}  // namespace spyre::testing
