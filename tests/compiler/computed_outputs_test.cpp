// Outputs computed directly, as Halide users write them (no `output(x, y) = f(x, y)` copy
// stage): the backend computes the output into a scratchpad tile and stores it from there
// (target/selection/computed_outputs.h). Each generator is built for the host and for Spyre
// and the two realizations compared, at extents that are not whole sticks where the
// algorithm allows it. Halide's own apps/blur algorithm (v14) is here verbatim but for its
// element type (float32 instead of uint16, whose division the SFU does not have).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "jit_helpers.h"
#include "spyre_schedule.h"

namespace {

using namespace Halide;

// out(x, y) = in(x, y) * 2 + 1, computed where it is stored; the input staged per core.
class DirectScale : public Generator<DirectScale> {
public:
    GeneratorParam<int> width{"width", 1000};
    GeneratorParam<int> height{"height", 64};
    GeneratorParam<int> tile_rows{"tile_rows", 0};  // 0: the core's rows in one tile
    Input<Buffer<float>> input{"direct_scale_in", 2};
    Output<Buffer<float>> output{"direct_scale_out", 2};

    void generate() {
        spyre::constrain_tensor(input, {(int)width, (int)height});
        output(x, y) = input(x, y) * 2.0f + 1.0f;
        spyre::constrain_tensor(output, {(int)width, (int)height});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi"), yo("yo"), yii("yii");
        output.split(y, core, yi, 8, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, x);
        if (tile_rows > 0) {
            // Tiles of rows inside the core: the input staged per tile, the output stored per tile.
            output.split(yi, yo, yii, tile_rows, TailStrategy::RoundUp);
            spyre::stage_in_scratchpad(input.in(), output, yo);
        } else {
            spyre::stage_in_scratchpad(input.in(), output, core);
        }
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("direct_scale"));
    }

private:
    Var x{"x"}, y{"y"};
};

// Halide's apps/blur (v14) algorithm: the output is blur_y itself.
class HalideAppBlur : public Generator<HalideAppBlur> {
public:
    GeneratorParam<int> width{"width", 128};
    GeneratorParam<int> height{"height", 64};
    Input<Buffer<float>> input{"app_blur_in", 2};
    Output<Buffer<float>> blur_y{"app_blur_out", 2};

    void generate() {
        spyre::constrain_tensor(input, {(int)width + 32, (int)height + 2});
        Func blur_x("blur_x");
        Var x("x"), y("y"), xi("xi"), yi("yi");

        // The algorithm
        blur_x(x, y) = (input(x, y) + input(x + 1, y) + input(x + 2, y)) / 3;
        blur_y(x, y) = (blur_x(x, y) + blur_x(x, y + 1) + blur_x(x, y + 2)) / 3;

        spyre::constrain_tensor(blur_y, {(int)width, (int)height});
        blur_x_ = blur_x;
        x_ = x;
        y_ = y;
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        Func out = blur_y;
        out.split(y_, core, yi, 2, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(out, x_);
        spyre::stage_in_scratchpad(input.in(), out, core);
        blur_x_.compute_at(out, core).store_in(MemoryType::VTCM);
        spyre::stick_vectorize(blur_x_, blur_x_.args()[0]);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("app_blur"));
    }

private:
    Func blur_x_;
    Var x_, y_;
};

// out(x) = sum over r of in(x, r), accumulated in the output itself: refused, naming the fix.
class InPlaceColumnSum : public Generator<InPlaceColumnSum> {
public:
    Input<Buffer<float>> input{"column_sum_in", 2};
    Output<Buffer<float>> output{"column_sum_out", 1};

    void generate() {
        spyre::constrain_tensor(input, {256, 8});
        RDom r(0, 8, "r");
        output(x) = 0.0f;
        output(x) += input(x, r);
        spyre::constrain_tensor(output, {256});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        // One core: the pure and the update definition each a loop nest of their own.
        spyre::stick_vectorize(output, x);
        output.update().vectorize(x, 32);
        input.in().compute_root().store_in(MemoryType::VTCM);
        spyre::stick_vectorize(input.in(), input.in().args()[0]);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("column_sum"));
    }

private:
    Var x{"x"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(DirectScale, direct_scale)
HALIDE_REGISTER_GENERATOR(HalideAppBlur, halide_app_blur)
HALIDE_REGISTER_GENERATOR(InPlaceColumnSum, in_place_column_sum)

namespace spyre::testing {
namespace {

Halide::Buffer<> uniform_buffer(const std::string &name, int width, int height, uint64_t seed) {
    Halide::Buffer<> b(Float(32), std::vector<int>{width, height}, name);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    b.as<float>().for_each_value([&](float &v) { v = u(rng); });
    return b;
}

int differing(const Halide::Buffer<> &a, const Halide::Buffer<> &b, int width, int height) {
    int wrong = 0;
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) wrong += a.as<float>()(x, y) != b.as<float>()(x, y);
    return wrong;
}

struct ScaleCase {
    int width, tile_rows;
};

class ComputedOutput : public ::testing::TestWithParam<ScaleCase> {};

TEST_P(ComputedOutput, AnOutputComputedWhereItIsStoredMatchesTheHost) {
    const int w = GetParam().width, h = 64;
    const std::map<std::string, std::string> params = {
        {"width", std::to_string(w)}, {"height", std::to_string(h)}, {"tile_rows", std::to_string(GetParam().tile_rows)}};
    Halide::Buffer<> in = uniform_buffer("direct_scale_in", w, h, 11);
    Halide::Buffer<> host = run_generator("direct_scale", params, false, Float(32), {w, h}, in);
    Halide::Buffer<> spyre =
        run_generator("direct_scale", params, true, Float(32), {w, h}, padded_copy(in, {(w + 31) / 32 * 32, h}));
    int host_wrong = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) host_wrong += host.as<float>()(x, y) != in.as<float>()(x, y) * 2.0f + 1.0f;
    EXPECT_EQ(host_wrong, 0) << "the host build is not in * 2 + 1";
    EXPECT_EQ(differing(host, spyre, w, h), 0) << "of " << w * h << " outputs";
}

INSTANTIATE_TEST_SUITE_P(Shapes, ComputedOutput,
                         ::testing::Values(ScaleCase{1000, 0}, ScaleCase{33, 0}, ScaleCase{256, 2}, ScaleCase{100, 4}),
                         [](const ::testing::TestParamInfo<ScaleCase> &info) {
                             return "width" + std::to_string(info.param.width) + "_tile_rows" +
                                    std::to_string(info.param.tile_rows);
                         });

TEST(ComputedOutputHalideApps, BlurVerbatimMatchesTheHost) {
    const int w = 128, h = 64;
    const std::map<std::string, std::string> params = {{"width", std::to_string(w)}, {"height", std::to_string(h)}};
    Halide::Buffer<> in = uniform_buffer("app_blur_in", w + 32, h + 2, 13);
    Halide::Buffer<> host = run_generator("halide_app_blur", params, false, Float(32), {w, h}, in);
    Halide::Buffer<> spyre = run_generator("halide_app_blur", params, true, Float(32), {w, h}, in);
    const float want = ((in.as<float>()(5, 7) + in.as<float>()(6, 7) + in.as<float>()(7, 7)) / 3 +
                        (in.as<float>()(5, 8) + in.as<float>()(6, 8) + in.as<float>()(7, 8)) / 3 +
                        (in.as<float>()(5, 9) + in.as<float>()(6, 9) + in.as<float>()(7, 9)) / 3) /
                       3;
    EXPECT_FLOAT_EQ(host.as<float>()(5, 7), want) << "the host build is not the blur";
    int wrong = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) wrong += std::fabs(host.as<float>()(x, y) - spyre.as<float>()(x, y)) > 1e-6f;
    EXPECT_EQ(wrong, 0) << "of " << w * h << " outputs";
}

TEST(ComputedOutputRefusals, AnOutputUpdatedInPlaceNamesTheAccumulatorFix) {
    Halide::Buffer<> in = uniform_buffer("column_sum_in", 256, 8, 17);
    std::string message;
    try {
        run_generator("in_place_column_sum", {}, true, Float(32), {256}, in);
        ADD_FAILURE() << "an output accumulated in DRAM compiled";
    } catch (const Halide::CompileError &e) {
        message = e.what();
    }
    EXPECT_NE(message.find("'column_sum_out' is updated in place"), std::string::npos) << message;
    EXPECT_NE(message.find("accumulate_in_scratchpad"), std::string::npos) << message;
}

}  // namespace
}  // namespace spyre::testing

namespace spyre::testing {
namespace {

// An output whose sticks run along y stores strided vectors, which a tile of dense vectors
// cannot hold: the output is left to selection, whose message names the copy stage to write
// (never a buffer the user did not write).
TEST(ComputedOutputRefusals, AnOutputStoredInStridedVectorsKeepsTheCopyStageAdvice) {
    set_compiling_for_spyre(true);
    ImageParam A(Float(32), 2, "strided_A");
    Func out("strided_out");
    Var x("x"), y("y"), core("core"), xi("xi");
    Func as = A.in();
    out(x, y) = as(x, y) * 2.0f;
    constrain_tensor(A, {64, 64}, {}, /*stick_dim=*/1);
    OutputImageParam ob = out.output_buffer();
    constrain_tensor(ob, {64, 64}, {}, /*stick_dim=*/1);
    out.reorder(y, x).split(x, core, xi, 2).parallel(core);
    stick_vectorize(out, y);
    stage_in_scratchpad(as, out, core);
    const std::string msg = spyre_compile_error(out, "strided");
    EXPECT_NE(msg.find("strided_out"), std::string::npos) << msg;
    EXPECT_EQ(msg.find(".tile"), std::string::npos) << msg;
    std::cout << msg << "\n";
}

}  // namespace
}  // namespace spyre::testing
