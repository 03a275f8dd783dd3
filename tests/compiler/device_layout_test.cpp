// Device layouts chosen by the schedule (spyre::set_device_layout): the order
// of a tensor's dimensions on the device is free (the stick dimension stays
// dimension 0). The backend maps every DMA through the layout; the runtime
// packs host buffers into it. Same results as the default layout.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "jit_helpers.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

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
    std::ifstream f(o.output_dir + "/" + name + ".spyre.txt");
    std::stringstream ss;
    ss << f.rdbuf();
    *disassembly = ss.str();
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

TEST(DeviceLayout, StickDimensionOtherThanZeroIsRejected) {
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "layout_bad_in");
    Func out("layout_bad_out");
    Var x("x"), y("y");
    out(x, y) = in(x, y);
    constrain_tensor(in, {64, 8});
    std::string msg;
    try {
        set_device_layout(in, StickLayout{1, {0, 1}});
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("the stick dimension must be dimension 0"), std::string::npos) << msg;
}

}  // namespace
}  // namespace spyre::testing
