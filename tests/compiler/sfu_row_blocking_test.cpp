// SFU row blocking (target/sfu_row_blocking.h) on a kernel whose tile is
// computed row by row through scratchpad temporaries: the rows of a tile are
// processed by block-wide SFU instructions, and the results equal the
// algorithm's on the host (same fp32 operations, tanh within a few ulp).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "jit_helpers.h"
#include "spyre/spyre_runtime.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

TEST(SfuRowBlocking, RowLoopsThroughTemporariesBecomeBlockInstructions) {
    constexpr int W = 128, H = 2048;
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "spyre_sfu_row_blocking_test";
    std::filesystem::create_directories(dir);
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "rb_in");
    Func staged = in.in(), compute("rb_compute"), out("rb_out");
    Var x("x"), y("y"), core("core"), yr("yr"), yo("yo"), yi("yi");
    compute(x, y) = tanh(staged(x, y) * 0.5f + 1.0f) * staged(x, y) + staged(x, y) * staged(x, y);
    out(x, y) = compute(x, y);
    constrain_tensor(in, {W, H});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {W, H});
    // 64-row tiles, 2 per core; the compute Func is one row-wide vector per row of the tile.
    out.split(y, core, yr, H / 32).split(yr, yo, yi, 64).parallel(core).vectorize(x, W);
    stage_in_scratchpad(staged, out, yo);
    compute.compute_at(out, yo).store_in(MemoryType::VTCM).vectorize(x, W);

    Buffer<float> input(W, H, "rb_in");
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) input(i, j) = (float)((i * 29 + j * 13) % 101) / 25.0f - 2.0f;
    in.set(input);
    SpyreLoweringOptions o;
    o.kernel_name = "row_blocked";
    o.output_dir = dir.string();
    attach_spyre_lowering(out, o);
    Buffer<float> r = out.realize({W, H}, Target("x86-64-linux"));
    set_compiling_for_spyre(false);

    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            const float v = input(i, j), expected = std::tanh(v * 0.5f + 1.0f) * v + v * v;
            ASSERT_NEAR(r(i, j), expected, 1e-5f * std::max(1.0f, std::fabs(expected))) << i << "," << j;
        }

    std::ifstream txt(dir / "row_blocked.spyre.txt");
    ASSERT_TRUE(txt);
    std::stringstream s;
    s << txt.rdbuf();
    // Every SFU instruction of the tile covers all 64 rows: no one-row tanh is left.
    EXPECT_NE(s.str().find("sfu.tanh"), std::string::npos);
    EXPECT_EQ(s.str().find("rows=1 type=f32 imm=0\n  sfu.tanh"), std::string::npos);
    std::istringstream lines(s.str());
    std::string line;
    int tanh_lines = 0, blocked = 0;
    while (std::getline(lines, line)) {
        if (line.find("sfu.tanh") == std::string::npos) continue;
        tanh_lines++;
        blocked += line.find("rows=64 ") != std::string::npos;
    }
    EXPECT_GT(tanh_lines, 0);
    EXPECT_EQ(blocked, tanh_lines) << s.str();
}

// A row of four sticks (vectors of one stick, so each instruction covers the row as 4 rows of 32
// lanes) with a per-row scalar operand: the rows of one instruction are contiguous, so it is merged
// into one 128-element row first and then blocked like the one-row case.
TEST(SfuRowBlocking, MultiStickRowsAreMergedThenBlocked) {
    constexpr int W = 128, H = 2048;
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "spyre_sfu_row_blocking_test";
    std::filesystem::create_directories(dir);
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "rm_in");
    Func staged = in.in(), compute("rm_compute"), out("rm_out");
    Var x("x"), y("y"), core("core"), yr("yr"), yo("yo"), yi("yi");
    compute(x, y) = tanh(staged(x, y) * 0.5f - staged(0, y)) * staged(x, y) + staged(x, y);
    out(x, y) = compute(x, y);
    constrain_tensor(in, {W, H});
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {W, H});
    out.split(y, core, yr, H / 32).split(yr, yo, yi, 64).parallel(core).vectorize(x, W);
    stage_in_scratchpad(staged, out, yo);
    compute.compute_at(out, yo).store_in(MemoryType::VTCM);
    stick_vectorize(compute, x);

    Buffer<float> input(W, H, "rm_in");
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) input(i, j) = (float)((i * 31 + j * 7) % 97) / 24.0f - 2.0f;
    in.set(input);
    SpyreLoweringOptions o;
    o.kernel_name = "rows_merged";
    o.output_dir = dir.string();
    attach_spyre_lowering(out, o);
    Buffer<float> r = out.realize({W, H}, Target("x86-64-linux"));
    set_compiling_for_spyre(false);

    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            const float v = input(i, j), expected = std::tanh(v * 0.5f - input(0, j)) * v + v;
            ASSERT_NEAR(r(i, j), expected, 1e-5f * std::max(1.0f, std::fabs(expected))) << i << "," << j;
        }

    std::ifstream txt(dir / "rows_merged.spyre.txt");
    ASSERT_TRUE(txt);
    std::stringstream s;
    s << txt.rdbuf();
    std::istringstream lines(s.str());
    std::string line;
    int tanh_lines = 0, blocked = 0;
    while (std::getline(lines, line)) {
        if (line.find("sfu.tanh") == std::string::npos) continue;
        tanh_lines++;
        blocked += line.find("n=8192 rows=1 ") != std::string::npos || line.find("n=128 rows=64 ") != std::string::npos;
    }
    EXPECT_GT(tanh_lines, 0);
    EXPECT_EQ(blocked, tanh_lines) << s.str();
}

}  // namespace
}  // namespace spyre::testing
