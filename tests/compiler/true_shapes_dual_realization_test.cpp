// Algorithms that read a buffer's shape (in.width(), in.dim(d).extent(), RDom(0, in.width()),
// BoundaryConditions without explicit bounds), as Halide users write them, compute the same
// function in a Spyre build as in the host build, at extents that are not whole sticks
// (1000, 100, 33 float32 elements): the Spyre build pads the tensor to whole sticks, and the
// padding must never reach the algorithm (target/driver/true_tensor_shapes.h). Without that, a row
// max of negative values over `RDom(0, in.width())` returns the padding's 0 and a scale by
// 1 / in.width() divides by the padded width.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "jit_helpers.h"
#include "spyre_schedule.h"

namespace {

using namespace Halide;

// out(x, y) = in(x, y) / (in.width() * in.height()) + in.dim(0).min(), the shape read from the buffer.
class UserShapeScale : public Generator<UserShapeScale> {
public:
    GeneratorParam<int> width{"width", 1000};
    GeneratorParam<int> height{"height", 64};
    Input<Buffer<float>> input{"shape_scale_in", 2};
    Output<Buffer<float>> output{"shape_scale_out", 2};

    void generate() {
        spyre::constrain_tensor(input, {(int)width, (int)height});
        const Expr count = cast<float>(input.width() * input.dim(1).extent());
        scaled(x, y) = input(x, y) * (1.0f / count) + cast<float>(input.dim(0).min());
        output(x, y) = scaled(x, y);
        spyre::constrain_tensor(output, {(int)width, (int)height});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        output.split(y, core, yi, 2, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, x);
        spyre::stage_in_scratchpad(input.in(), output, core);
        spyre::stage_in_scratchpad(scaled, output, core);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("user_shape_scale"));
    }

private:
    Var x{"x"}, y{"y"};
    Func scaled{"scaled"};
};

// out(y) = max over x of in(x, y), the row read over RDom(0, in.width()).
class UserRowMax : public Generator<UserRowMax> {
public:
    GeneratorParam<int> width{"width", 1000};
    GeneratorParam<int> height{"height", 64};
    Input<Buffer<float>> input{"row_max_in", 2};
    Output<Buffer<float>> output{"row_max_out", 1};

    void generate() {
        spyre::constrain_tensor(input, {(int)width, (int)height});
        RDom r(0, input.width(), "r");
        row_max(y) = Float(32).min();
        row_max(y) = max(row_max(y), input(r, y));
        result(y) = row_max(y);
        output(y) = result(y);
        spyre::constrain_tensor(output, {(int)height});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        output.split(y, core, yi, 32, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, yi);
        result.compute_at(output, core).store_in(MemoryType::VTCM).vectorize(y, 32, TailStrategy::RoundUp);
        row_max.compute_at(output, core).store_in(MemoryType::VTCM);
        spyre::stage_in_scratchpad(input.in(), output, core);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("user_row_max"));
    }

private:
    Var y{"y"};
    Func row_max{"row_max"}, result{"result"};
};

// A 3-tap horizontal blur through BoundaryConditions::repeat_edge(input): the bounds come from the buffer.
class UserEdgeBlur : public Generator<UserEdgeBlur> {
public:
    GeneratorParam<int> width{"width", 128};
    GeneratorParam<int> height{"height", 64};
    Input<Buffer<float>> input{"edge_blur_in", 2};
    Output<Buffer<float>> output{"edge_blur_out", 2};

    void generate() {
        spyre::constrain_tensor(input, {(int)width, (int)height});
        clamped = BoundaryConditions::repeat_edge(input);
        blur(x, y) = (clamped(x - 1, y) + clamped(x, y) + clamped(x + 1, y)) * (1.0f / 3.0f);
        output(x, y) = blur(x, y);
        spyre::constrain_tensor(output, {(int)width, (int)height});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        output.split(y, core, yi, 2, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, x);
        spyre::stage_in_scratchpad(clamped, output, core);
        spyre::stage_in_scratchpad(blur, output, core);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("user_edge_blur"));
    }

private:
    Var x{"x"}, y{"y"};
    Func clamped{"clamped"}, blur{"blur"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(UserShapeScale, user_shape_scale)
HALIDE_REGISTER_GENERATOR(UserRowMax, user_row_max)
HALIDE_REGISTER_GENERATOR(UserEdgeBlur, user_edge_blur)

namespace spyre::testing {
namespace {

constexpr int kHeight = 64;

// Values in [lo, hi), random and non-constant.
Halide::Buffer<> uniform_buffer(const std::string &name, int width, float lo, float hi, uint64_t seed) {
    Halide::Buffer<> b(Float(32), std::vector<int>{width, kHeight}, name);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    b.as<float>().for_each_value([&](float &v) { v = u(rng); });
    return b;
}

std::vector<int> stick_padded(int width) { return {(width + 31) / 32 * 32, kHeight}; }

std::map<std::string, std::string> shape_params(int width) {
    return {{"width", std::to_string(width)}, {"height", std::to_string(kHeight)}};
}

class TrueShapes : public ::testing::TestWithParam<int> {};

TEST_P(TrueShapes, AScaleByTheBufferShapeUsesTheTrueExtents) {
    const int w = GetParam();
    Halide::Buffer<> in = uniform_buffer("shape_scale_in", w, -1.0f, 1.0f, 3);
    Halide::Buffer<> host = run_generator("user_shape_scale", shape_params(w), false, Float(32), {w, kHeight}, in);
    Halide::Buffer<> spyre = run_generator("user_shape_scale", shape_params(w), true, Float(32), {w, kHeight},
                                           padded_copy(in, stick_padded(w)));
    const float scale = 1.0f / (float)(w * kHeight);
    int wrong = 0, host_wrong = 0;
    for (int y = 0; y < kHeight; y++)
        for (int x = 0; x < w; x++) {
            const float h = host.as<float>()(x, y), s = spyre.as<float>()(x, y);
            host_wrong += std::fabs(h - in.as<float>()(x, y) * scale) > 1e-9f;
            wrong += s != h;
        }
    EXPECT_EQ(host_wrong, 0) << "the host build is not in / (width * height)";
    EXPECT_EQ(wrong, 0) << "of " << w * kHeight << " outputs, width " << w;
}

TEST_P(TrueShapes, ARowMaxOverTheBufferWidthNeverSeesThePadding) {
    const int w = GetParam();
    // Every value negative: a maximum that took in the padding's zeros would be 0.
    Halide::Buffer<> in = uniform_buffer("row_max_in", w, -1.0f, -0.1f, 5);
    Halide::Buffer<> host = run_generator("user_row_max", shape_params(w), false, Float(32), {kHeight}, in);
    Halide::Buffer<> spyre = run_generator("user_row_max", shape_params(w), true, Float(32), {kHeight},
                                           padded_copy(in, stick_padded(w)));
    int wrong = 0, host_wrong = 0;
    for (int y = 0; y < kHeight; y++) {
        float want = -INFINITY;
        for (int x = 0; x < w; x++) want = std::max(want, in.as<float>()(x, y));
        host_wrong += host.as<float>()(y) != want;
        wrong += spyre.as<float>()(y) != want;
    }
    EXPECT_EQ(host_wrong, 0) << "the host build is not the row max";
    EXPECT_EQ(wrong, 0) << "of " << kHeight << " rows, width " << w;
}

INSTANTIATE_TEST_SUITE_P(NotWholeSticks, TrueShapes, ::testing::Values(1000, 100, 33),
                         [](const ::testing::TestParamInfo<int> &info) { return "width" + std::to_string(info.param); });

// repeat_edge(input) takes its bounds from the buffer: whole sticks compile and match the host;
// an edge inside a stick (width 100, padded to 128) is refused, never clamped at the padding.
TEST(TrueShapesBoundary, RepeatEdgeWithoutBoundsClampsAtTheTrueEdge) {
    Halide::Buffer<> in = uniform_buffer("edge_blur_in", 128, -1.0f, 1.0f, 7);
    Halide::Buffer<> host = run_generator("user_edge_blur", shape_params(128), false, Float(32), {128, kHeight}, in);
    Halide::Buffer<> spyre = run_generator("user_edge_blur", shape_params(128), true, Float(32), {128, kHeight}, in);
    int wrong = 0;
    for (int y = 0; y < kHeight; y++)
        for (int x = 0; x < 128; x++) wrong += std::fabs(host.as<float>()(x, y) - spyre.as<float>()(x, y)) > 1e-6f;
    EXPECT_EQ(wrong, 0);
    const float edge = (2 * in.as<float>()(127, 3) + in.as<float>()(126, 3)) * (1.0f / 3.0f);
    EXPECT_NEAR(host.as<float>()(127, 3), edge, 1e-6f) << "the host build does not repeat the edge";
}

TEST(TrueShapesBoundary, RepeatEdgeWithoutBoundsInsideAStickIsRefused) {
    Halide::Buffer<> in = uniform_buffer("edge_blur_in", 100, -1.0f, 1.0f, 7);
    std::string message;
    try {
        run_generator("user_edge_blur", shape_params(100), true, Float(32), {100, kHeight}, padded_copy(in, stick_padded(100)));
        ADD_FAILURE() << "a repeat_edge whose edge is inside a stick compiled";
    } catch (const Halide::CompileError &e) {
        message = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(message.find("inside a stick"), std::string::npos) << message;
    EXPECT_NE(message.find("x32(99)"), std::string::npos) << "not clamped at the true edge (element 99): " << message;
}

}  // namespace
}  // namespace spyre::testing
