// SFU row blocking (target/program_tree/sfu_row_blocking.h) on a kernel whose tile is
// computed row by row through scratchpad temporaries: the rows of a tile are
// processed by block-wide SFU instructions, and the results equal the
// algorithm's on the host (same fp32 operations, tanh within a few ulp).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "jit_helpers.h"
#include "spyre/spyre_runtime.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

// Realizes `out` (bound input `in` set to `input`) through the Spyre lowering as kernel `name`;
// returns the result and, in *program, the program's text.
Buffer<float> realize_kernel(Func out, ImageParam in, const Buffer<float> &input, const std::string &name,
                             std::string *program) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "spyre_sfu_row_blocking_test";
    std::filesystem::create_directories(dir);
    in.set(input);
    SpyreLoweringOptions o;
    o.kernel_name = name;
    o.output_dir = dir.string();
    attach_spyre_lowering(out, o);
    Buffer<float> r = out.realize({input.width(), input.height()}, Target("x86-64-linux"));
    set_compiling_for_spyre(false);
    std::ifstream txt(dir / (name + ".spyre.txt"));
    std::stringstream s;
    s << txt.rdbuf();
    *program = s.str();
    return r;
}

// The field `name=` of an instruction line, or -1.
int64_t field_value(const std::string &line, const std::string &name) {
    const size_t at = line.find(" " + name + "=");
    return at == std::string::npos ? -1 : std::stoll(line.substr(at + name.size() + 2));
}

// The program's sfu.tanh lines, and how many of them cover at least `min_elements` (n x rows):
// a block of rows, or a piece of one (tail splitting cuts the last tile's into row pieces).
std::pair<int, int> tanh_lines(const std::string &program, int64_t min_elements) {
    std::istringstream lines(program);
    std::string line;
    int all = 0, blocked = 0;
    while (std::getline(lines, line)) {
        if (line.find("sfu.tanh") == std::string::npos) continue;
        all++;
        blocked += field_value(line, "n") * field_value(line, "rows") >= min_elements;
    }
    return {all, blocked};
}

TEST(SfuRowBlocking, RowLoopsThroughTemporariesBecomeBlockInstructions) {
    constexpr int W = 128, H = 2048;
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
    std::string program;
    Buffer<float> r = realize_kernel(out, in, input, "row_blocked", &program);

    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            const float v = input(i, j), expected = std::tanh(v * 0.5f + 1.0f) * v + v * v;
            ASSERT_NEAR(r(i, j), expected, 1e-5f * std::max(1.0f, std::fabs(expected))) << i << "," << j;
        }

    // Every SFU instruction covers all 64 rows of its tile, or (the last tile's) a piece of 8
    // rows or more: no one-row tanh is left.
    const auto [all, blocked] = tanh_lines(program, 8 * W);
    EXPECT_GT(all, 0);
    EXPECT_EQ(blocked, all) << program;
}

// A row of four sticks (vectors of one stick, so each instruction covers the row as 4 rows of 32
// lanes) with a per-row scalar operand: the rows of one instruction are contiguous, so it is merged
// into one 128-element row first and then blocked like the one-row case.
TEST(SfuRowBlocking, MultiStickRowsAreMergedThenBlocked) {
    constexpr int W = 128, H = 2048;
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
    std::string program;
    Buffer<float> r = realize_kernel(out, in, input, "rows_merged", &program);

    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            const float v = input(i, j), expected = std::tanh(v * 0.5f - input(0, j)) * v + v;
            ASSERT_NEAR(r(i, j), expected, 1e-5f * std::max(1.0f, std::fabs(expected))) << i << "," << j;
        }

    // Merged and blocked: n=8192 rows=1 or n=128 rows=64 (the last tile's pieces at least 8
    // rows), where unmerged rows would be n=32 rows=4.
    const auto [all, blocked] = tanh_lines(program, 8 * W);
    EXPECT_GT(all, 0);
    EXPECT_EQ(blocked, all) << program;
}

}  // namespace
}  // namespace spyre::testing
