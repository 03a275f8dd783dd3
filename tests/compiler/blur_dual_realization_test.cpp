// A 3x3 box blur with boundary conditions, written as a user would write it
// (BoundaryConditions::repeat_edge / constant_exterior, or clamps and selects
// on the indices), built for Spyre against the host build of the same
// generator on random non-constant data.
#include <gtest/gtest.h>

#include "jit_helpers.h"
#include "spyre_schedule.h"

namespace {

using namespace Halide;

class UserBlur : public Generator<UserBlur> {
public:
    GeneratorParam<int> width{"width", 128};
    GeneratorParam<int> height{"height", 64};
    GeneratorParam<int> rows_per_core{"rows_per_core", 2};
    GeneratorParam<std::string> boundary{"boundary", "repeat_edge"};
    Input<Buffer<float>> input{"input", 2};
    Output<Buffer<float>> output{"output", 2};

    void generate() {
        const int W = width, H = height;
        spyre::constrain_tensor(input, {W, H});
        const std::string b = boundary;
        if (b == "repeat_edge") {
            padded = BoundaryConditions::repeat_edge(input, {{0, W}, {0, H}});
        } else if (b == "zero") {
            padded = BoundaryConditions::constant_exterior(input, 0.0f, {{0, W}, {0, H}});
        } else if (b == "clamp") {  // the same as repeat_edge, written by hand (no likely())
            padded(x, y) = input(clamp(x, 0, W - 1), clamp(y, 0, H - 1));
        } else if (b == "select") {  // zero padding by hand
            padded(x, y) = select(x >= 0 && x < W && y >= 0 && y < H, input(clamp(x, 0, W - 1), clamp(y, 0, H - 1)), 0.0f);
        }
        Expr s = 0.0f;
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) s += padded(x + dx, y + dy);
        blur(x, y) = s * (1.0f / 9.0f);
        output(x, y) = blur(x, y);
        spyre::constrain_tensor(output, {W, H});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;
        Var core("core"), yi("yi");
        output.split(y, core, yi, (int)rows_per_core, TailStrategy::RoundUp).parallel(core);
        spyre::stick_vectorize(output, x);
        spyre::stage_in_scratchpad(padded, output, core);
        spyre::stage_in_scratchpad(blur, output, core);
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("user_blur"));
    }

private:
    Var x{"x"}, y{"y"};
    Func padded{"padded"}, blur{"blur"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(UserBlur, user_blur)

namespace spyre::testing {
namespace {

TEST(BlurDualRealization, RepeatEdgeProbe) {
    const int W = 128, H = 64;
    Halide::Buffer<> in = random_buffer("input", Halide::Float(32), {W, H}, 7);
    std::map<std::string, std::string> p = {{"width", "128"}, {"height", "64"}};
    if (const char *b = getenv("BLUR_BOUNDARY")) p["boundary"] = b;
    Halide::Buffer<> host = run_generator("user_blur", p, false, Halide::Float(32), {W, H}, in);
    Halide::Buffer<> spyre = run_generator("user_blur", p, true, Halide::Float(32), {W, H}, in);
    double max_err = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) max_err = std::max(max_err, (double)std::fabs(host.as<float>()(x, y) - spyre.as<float>()(x, y)));
    EXPECT_LE(max_err, 1e-6);
}

}  // namespace
}  // namespace spyre::testing
