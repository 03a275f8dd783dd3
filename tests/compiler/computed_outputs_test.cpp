// Outputs computed directly, as Halide users write them (no `output(x, y) = f(x, y)` copy
// stage): the backend computes the output into a scratchpad tile and stores it from there
// (target/selection/computed_outputs.h). Each generator is built for the host and for Spyre
// and the two realizations compared, at extents that are not whole sticks where the
// algorithm allows it. Halide's own apps (v14) are here verbatim but for sizes and types: blur
// (float32 instead of uint16, whose division the SFU does not have), conv_layer and
// depthwise_separable_conv (the channel multiplier read from the filter's shape, a hand-written
// zero boundary), each with only a Spyre schedule added.
#include <gtest/gtest.h>

#include <array>
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

// Halide's apps/conv_layer (v14) algorithm: the output is relu itself, computed from the
// accumulator conv. Its sizes are parameters here (the app fixes CI = CO = 128, 100 x 80 x 5).
class HalideAppConvLayer : public Generator<HalideAppConvLayer> {
public:
    GeneratorParam<int> channels{"channels", 32};  // CI = CO
    GeneratorParam<int> width{"width", 8};
    GeneratorParam<int> height{"height", 8};
    Input<Buffer<float>> input{"app_conv_input", 4};
    Input<Buffer<float>> filter{"app_conv_filter", 4};
    Input<Buffer<float>> bias{"app_conv_bias", 1};
    Output<Buffer<float>> relu{"app_conv_relu", 4};

    void generate() {
        const int CI = channels, CO = channels, W = width, H = height, N = 1;
        spyre::constrain_tensor(input, {CI, W + 2, H + 2, N});
        spyre::constrain_tensor(filter, {CO, 3, 3, CI});
        spyre::constrain_tensor(bias, {CO});

        Var x("x"), y("y"), c("c"), n("n");

        Func conv("conv");
        RDom r(0, CI, 0, 3, 0, 3);

        conv(c, x, y, n) = bias(c);
        conv(c, x, y, n) += filter(c, r.y, r.z, r.x) * input(r.x, x + r.y, y + r.z, n);

        relu(c, x, y, n) = max(0, conv(c, x, y, n));

        spyre::constrain_tensor(relu, {CO, W, H, N});
        conv_ = conv;
        r_ = r;
        c_ = c, x_ = x, y_ = y, n_ = n;
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        Func out = relu;
        out.split(y_, core, yi, 1, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(out, c_);
        spyre::accumulate_in_scratchpad(conv_, out, core);
        conv_.update().reorder(c_, r_.x, r_.y, r_.z, x_, y_, n_);
        spyre::stick_vectorize(conv_, 0, c_);
        spyre::stage_in_scratchpad(input.in(), out, core);
        spyre::stage_in_scratchpad(filter.in(), out, core);
        spyre::stage_in_scratchpad(bias.in(), out, core);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("app_conv_layer"));
    }

private:
    Func conv_;
    RDom r_;
    Var c_, x_, y_, n_;
};

// Halide's apps/depthwise_separable_conv (v14) algorithm: a hand-written zero boundary (select
// and clamp), the channel multiplier read from the filter's shape, a depthwise and a pointwise
// convolution, and the output relu computed from the pointwise accumulator.
class HalideAppDepthwise : public Generator<HalideAppDepthwise> {
public:
    GeneratorParam<int> channels{"channels", 32};  // CI = CO, channel multiplier 1
    GeneratorParam<int> width{"width", 8};
    GeneratorParam<int> height{"height", 8};
    Input<Buffer<float>> input{"app_dw_input", 4};
    Input<Buffer<float>> depthwise_filter{"app_dw_depthwise_filter", 4};
    Input<Buffer<float>> pointwise_filter{"app_dw_pointwise_filter", 2};
    Input<Buffer<float>> bias{"app_dw_bias", 1};
    Output<Buffer<float>> output{"app_dw_output", 4};

    void generate() {
        const int C = channels, W = width, H = height;
        spyre::constrain_tensor(input, {C, W, H, 1});
        // [channel_multiplier, in_channels, filter_width, filter_height]: sticks along the channels.
        spyre::constrain_tensor(depthwise_filter, {1, C, 3, 3}, {}, /*stick_dim=*/1);
        spyre::constrain_tensor(pointwise_filter, {C, C});
        spyre::constrain_tensor(bias, {C});

        Var x("x"), y("y"), d("d"), b("b");

        Func input_bounded("input_bounded");
        Expr in_bounds = (x >= 0 && x < input.dim(1).extent() &&
                          y >= 0 && y < input.dim(2).extent());
        Expr clamped_x = clamp(x, 0, input.dim(1).max());
        Expr clamped_y = clamp(y, 0, input.dim(2).max());
        input_bounded(d, x, y, b) =
            select(in_bounds, input(d, clamped_x, clamped_y, b), 0.0f);

        Expr channel_multiplier = depthwise_filter.dim(0).extent();

        Func depthwise_convolved("depthwise_convolved");
        Expr pad_width = depthwise_filter.dim(2).extent() / 2;
        Expr pad_height = depthwise_filter.dim(3).extent() / 2;
        RDom depthwise_filter_dom(0, depthwise_filter.dim(0).extent(),
                                  0, depthwise_filter.dim(2).extent(),
                                  0, depthwise_filter.dim(3).extent());
        RVar rd = depthwise_filter_dom[0];
        RVar rx = depthwise_filter_dom[1];
        RVar ry = depthwise_filter_dom[2];
        depthwise_convolved(d, x, y, b) +=
            depthwise_filter(rd, d, rx, ry) *
            input_bounded(d / channel_multiplier,
                          x + rx - pad_width,
                          y + ry - pad_height,
                          b);

        Func pointwise_convolved("pointwise_convolved");
        RDom rc(0, pointwise_filter.dim(1).extent());
        pointwise_convolved(d, x, y, b) = bias(d);
        pointwise_convolved(d, x, y, b) +=
            pointwise_filter(d, rc) * depthwise_convolved(rc, x, y, b);

        output(d, x, y, b) = max(pointwise_convolved(d, x, y, b), 0.f);

        spyre::constrain_tensor(output, {C, W, H, 1});
        bounded_ = input_bounded, dw_ = depthwise_convolved, pw_ = pointwise_convolved;
        rd_ = rd, rx_ = rx, ry_ = ry, rc_ = rc.x;
        d_ = d, x_ = x, y_ = y, b_ = b;
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        Func out = output;
        out.split(y_, core, yi, 1, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(out, d_);
        spyre::accumulate_in_scratchpad(pw_, out, core);
        pw_.update().reorder(d_, rc_, x_, y_, b_);
        spyre::stick_vectorize(pw_, 0, d_);
        spyre::accumulate_in_scratchpad(dw_, out, core);
        dw_.update().reorder(d_, rd_, rx_, ry_, x_, y_, b_);
        spyre::stick_vectorize(dw_, 0, d_);
        spyre::stage_in_scratchpad(bounded_, out, core);
        spyre::stage_in_scratchpad(depthwise_filter.in(), out, core);
        spyre::stage_in_scratchpad(pointwise_filter.in(), out, core);
        spyre::stage_in_scratchpad(bias.in(), out, core);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("app_depthwise"));
    }

private:
    Func bounded_, dw_, pw_;
    RVar rd_, rx_, ry_, rc_;
    Var d_, x_, y_, b_;
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
HALIDE_REGISTER_GENERATOR(HalideAppConvLayer, halide_app_conv_layer)
HALIDE_REGISTER_GENERATOR(HalideAppDepthwise, halide_app_depthwise)
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

// The Spyre build of a [C, W, H, 1] relu output against the host's, within 1e-4 relative
// (the SFU and the host may round a long sum differently), and enough outputs above zero
// that the comparison means something.
void expect_relu_outputs_match(const Halide::Buffer<> &host, const Halide::Buffer<> &spyre, int C, int W, int H) {
    int wrong = 0, positive = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < C; c++) {
                const float h = host.as<float>()(c, x, y, 0), s = spyre.as<float>()(c, x, y, 0);
                wrong += std::fabs(h - s) > 1e-4f * std::max(1.0f, std::fabs(h));
                positive += h > 0;
            }
    EXPECT_GT(positive, C * W * H / 4) << "relu cut almost everything: the test could pass by accident";
    EXPECT_EQ(wrong, 0) << "of " << C * W * H << " outputs";
}

TEST(ComputedOutputHalideApps, ConvLayerVerbatimMatchesTheHost) {
    const int C = 32, W = 8, H = 8;
    const std::map<std::string, std::string> params = {
        {"channels", std::to_string(C)}, {"width", std::to_string(W)}, {"height", std::to_string(H)}};
    Halide::Buffer<> in = random_buffer("app_conv_input", Float(32), {C, W + 2, H + 2, 1}, 19);
    Halide::Buffer<> filter = random_buffer("app_conv_filter", Float(32), {C, 3, 3, C}, 21);
    Halide::Buffer<> bias = random_buffer("app_conv_bias", Float(32), {C}, 23);
    Halide::Buffer<> host = run_generator("halide_app_conv_layer", params, false, Float(32), {C, W, H, 1}, in, filter, bias);
    Halide::Buffer<> spyre = run_generator("halide_app_conv_layer", params, true, Float(32), {C, W, H, 1}, in, filter, bias);
    // The host build against the formula at one point, then the Spyre build against the host everywhere.
    double want = bias.as<float>()(5);
    for (int rz = 0; rz < 3; rz++)
        for (int ry = 0; ry < 3; ry++)
            for (int rx = 0; rx < C; rx++) want += filter.as<float>()(5, ry, rz, rx) * in.as<float>()(rx, 3 + ry, 4 + rz, 0);
    EXPECT_NEAR(host.as<float>()(5, 3, 4, 0), std::max(0.0, want), 1e-4) << "the host build is not the conv layer";
    expect_relu_outputs_match(host, spyre, C, W, H);
}

TEST(ComputedOutputHalideApps, DepthwiseSeparableConvVerbatimMatchesTheHost) {
    const int C = 32, W = 8, H = 8;
    const std::map<std::string, std::string> params = {
        {"channels", std::to_string(C)}, {"width", std::to_string(W)}, {"height", std::to_string(H)}};
    Halide::Buffer<> in = random_buffer("app_dw_input", Float(32), {C, W, H, 1}, 29);
    Halide::Buffer<> dwf = random_buffer("app_dw_depthwise_filter", Float(32), {1, C, 3, 3}, 31);
    Halide::Buffer<> pwf = random_buffer("app_dw_pointwise_filter", Float(32), {C, C}, 37);
    Halide::Buffer<> bias = random_buffer("app_dw_bias", Float(32), {C}, 41);
    Halide::Buffer<> host =
        run_generator("halide_app_depthwise", params, false, Float(32), {C, W, H, 1}, in, dwf, pwf, bias);
    Halide::Buffer<> spyre =
        run_generator("halide_app_depthwise", params, true, Float(32), {C, W, H, 1}, in, dwf, pwf, bias);
    // The host build against the formula at a corner (the zero boundary) and inside.
    auto formula = [&](int d, int x, int y) {
        auto dw = [&](int c) {
            double v = 0;
            for (int ry = 0; ry < 3; ry++)
                for (int rx = 0; rx < 3; rx++) {
                    const int ix = x + rx - 1, iy = y + ry - 1;
                    if (ix >= 0 && ix < W && iy >= 0 && iy < H) v += dwf.as<float>()(0, c, rx, ry) * in.as<float>()(c, ix, iy, 0);
                }
            return v;
        };
        double v = bias.as<float>()(d);
        for (int rc = 0; rc < C; rc++) v += pwf.as<float>()(d, rc) * dw(rc);
        return std::max(v, 0.0);
    };
    for (auto [d, x, y] : {std::array<int, 3>{3, 0, 0}, {7, 4, 5}, {30, 7, 7}}) {
        EXPECT_NEAR(host.as<float>()(d, x, y, 0), formula(d, x, y), 1e-4) << "the host build at " << d << "," << x << "," << y;
    }
    expect_relu_outputs_match(host, spyre, C, W, H);
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
}

}  // namespace
}  // namespace spyre::testing
