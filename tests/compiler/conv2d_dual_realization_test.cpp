// gen_conv2d built for Spyre against the host build of the same generator, on
// random non-constant data: 3x3 and 1x1 filters, kw != kh, ci below and not a
// multiple of a stick (a CNN's first layer), batch 2, both dtypes, relu, tiles
// along the output row and along co, zero padding (pad=1, 2). The host build itself is checked against
// a direct loop nest of the formula, so a wrong algorithm fails too. Bad
// parameters are refused with errors that name them.
#include <gtest/gtest.h>

#include <sstream>

#include "conv2d_schedule.h"
#include "jit_helpers.h"

namespace spyre::testing {
namespace {

struct Conv2dCase {
    int ci, co, width, height, kw, kh, batch;
    const char *dtype;
    const char *activation;
    const char *knobs = "";  // schedule knobs, "name=value ..." (the planner's choice when empty)
};

std::string case_name(const ::testing::TestParamInfo<Conv2dCase> &info) {
    const Conv2dCase &c = info.param;
    return std::string(c.dtype) + "_" + c.activation + "_ci" + std::to_string(c.ci) + "_co" + std::to_string(c.co) + "_" +
           std::to_string(c.width) + "x" + std::to_string(c.height) + "_k" + std::to_string(c.kw) + "x" +
           std::to_string(c.kh) + "_b" + std::to_string(c.batch) + (c.knobs[0] ? "_knobs" + std::to_string(info.index) : "");
}

double value4(const Halide::Buffer<> &b, int i, int j, int k, int l) {
    if (b.type() == Halide::Float(32)) return b.as<float>()(i, j, k, l);
    return (double)(float)b.as<Halide::float16_t>()(i, j, k, l);
}

std::map<std::string, std::string> params_of(const Conv2dCase &c) {
    std::map<std::string, std::string> p = {{"ci", std::to_string(c.ci)},     {"co", std::to_string(c.co)},       {"width", std::to_string(c.width)},
            {"height", std::to_string(c.height)}, {"kw", std::to_string(c.kw)},    {"kh", std::to_string(c.kh)},
            {"batch", std::to_string(c.batch)}, {"dtype", c.dtype},               {"activation", c.activation}};
    std::istringstream knobs(c.knobs);
    for (std::string kv; knobs >> kv;) p[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    return p;
}

Conv2dSpyreOptions options_of(const Conv2dCase &c) {
    const std::map<std::string, std::string> p = params_of(c);
    auto num = [&](const char *k) { return p.count(k) ? std::stoi(p.at(k)) : 0; };
    auto flag = [&](const char *k) { return !p.count(k) || p.at(k) == "true"; };
    Conv2dSpyreOptions o;
    o.max_cores = num("max_cores");
    o.tile_co = num("tile_co");
    o.tile_x = num("tile_x");
    o.tile_y = num("tile_y");
    o.double_buffer = flag("double_buffer");
    o.share_input = flag("share_input") && !p.count("pad");  // as the generator: a padded tile is not shared
    o.share_weights = flag("share_weights") && !p.count("pad");
    return o;
}

class Conv2dDualRealization : public ::testing::TestWithParam<Conv2dCase> {};

TEST_P(Conv2dDualRealization, SpyreMatchesHost) {
    const Conv2dCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    const bool relu = std::string(c.activation) == "relu";
    const std::map<std::string, std::string> all = params_of(c);
    const int pad = all.count("pad") ? std::stoi(all.at("pad")) : 0;
    const int ow = c.width + 2 * pad - c.kw + 1, oh = c.height + 2 * pad - c.kh + 1;
    Halide::Buffer<> in = random_buffer("input", t, {c.ci, c.width, c.height, c.batch}, 31);
    Halide::Buffer<> w = random_buffer("weights", t, {c.co, c.ci, c.kw, c.kh}, 32);
    Halide::Buffer<> bias = random_buffer("bias", t, {c.co}, 33);
    const Conv2dShape shape{c.ci, c.co, c.width + 2 * pad, c.height + 2 * pad, c.kw, c.kh, c.batch, t,
                            relu ? Activation::Relu : Activation::None, pad};
    set_compiling_for_spyre(true);
    const Conv2dSpyrePlan plan = plan_conv2d_spyre(shape, options_of(c));
    set_compiling_for_spyre(false);
    // With pad the device input is the true image (its boundary is written in the scratchpad).
    Halide::Buffer<> in_p = pad > 0 ? padded_copy(in, {plan.cip, c.width, c.height, c.batch})
                                    : padded_copy(in, {plan.cip, plan.in_xp, plan.in_yp, c.batch});
    Halide::Buffer<> w_p = padded_copy(w, {plan.cop, plan.cip, c.kw, c.kh});
    Halide::Buffer<> bias_p = padded_copy(bias, {plan.cop});
    const std::vector<int> out_extents = {c.co, ow, oh, c.batch};
    Halide::Buffer<> spyre = run_generator("conv2d", params_of(c), true, t, out_extents, in_p, w_p, bias_p);
    Halide::Buffer<> host = run_generator("conv2d", params_of(c), false, t, out_extents, in, w, bias);

    // fp32 accumulation over K = ci x kw x kh products on both sides, possibly in different
    // orders; the error grows with K. fp16 outputs round once.
    const int K = c.ci * c.kw * c.kh;
    const double ulp = t == Halide::Float(32) ? 1.2e-7 : 9.8e-4;
    const double tol = (t == Halide::Float(32) ? 4.0 * K * ulp : 2.0 * ulp) * std::sqrt((double)K) + 2e-6;
    double max_err = 0, max_ref_err = 0, max_ref = 0;
    int positive = 0, negative = 0, zero = 0, checked = 0;
    for (int b = 0; b < c.batch; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                for (int o = 0; o < c.co; o++) {
                    const double h = value4(host, o, x, y, b), s = value4(spyre, o, x, y, b);
                    max_err = std::max(max_err, std::isfinite(s) ? std::fabs(h - s) / std::max(1.0, std::fabs(h)) : INFINITY);
                    max_ref = std::max(max_ref, std::fabs(h));
                    positive += h > 0, negative += h < 0, zero += h == 0;
                    // The formula directly, on a sample of the outputs (every 7th).
                    if ((o + 3 * x + 5 * y + b) % 7 != 0) continue;
                    double ref = t == Halide::Float(32) ? (double)bias.as<float>()(o)
                                                        : (double)(float)bias.as<Halide::float16_t>()(o);
                    for (int ky = 0; ky < c.kh; ky++)
                        for (int kx = 0; kx < c.kw; kx++)
                            for (int i = 0; i < c.ci; i++) {
                                const int xx = x + kx - pad, yy = y + ky - pad;
                                if (xx < 0 || yy < 0 || xx >= c.width || yy >= c.height) continue;  // zero padding
                                ref += value4(in, i, xx, yy, b) * value4(w, o, i, kx, ky);
                            }
                    if (relu) ref = std::max(ref, 0.0);
                    max_ref_err = std::max(max_ref_err, std::fabs(h - ref) / std::max(1.0, std::fabs(ref)));
                    checked++;
                }
    EXPECT_GT(checked, 0);
    EXPECT_GT(max_ref, 0.1) << "the host reference is (nearly) zero: the test could pass by accident";
    EXPECT_GT(positive, 0);
    if (relu) {
        EXPECT_GT(zero, 0) << "relu clamped nothing: the test does not exercise it";
    } else {
        EXPECT_GT(negative, 0);
    }
    EXPECT_LE(max_ref_err, tol) << "the host build differs from the formula by " << max_ref_err;
    EXPECT_LE(max_err, tol) << "max relative error of the Spyre build " << max_err << " (plan: tiles " << plan.tn
                            << " co x " << plan.tx << " px x " << plan.ty << " rows, cores " << plan.cb << " x " << plan.cn
                            << " x " << plan.cy << " (batch x co x rows))";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Conv2dDualRealization,
    ::testing::Values(Conv2dCase{64, 64, 34, 34, 3, 3, 1, "float16", "none"},   // 3x3, 64 -> 64, 32x32 output
                      Conv2dCase{64, 64, 18, 18, 3, 3, 1, "float32", "relu"},
                      Conv2dCase{64, 96, 16, 8, 1, 1, 1, "float32", "none"},    // 1x1: a matmul
                      Conv2dCase{48, 40, 12, 9, 1, 1, 1, "float16", "relu"},    // 1x1, ci and co below a stick
                      Conv2dCase{3, 64, 20, 18, 3, 3, 1, "float16", "relu"},    // a CNN's first layer: ci = 3
                      Conv2dCase{3, 32, 17, 13, 3, 3, 1, "float32", "none"},
                      Conv2dCase{40, 70, 23, 11, 5, 2, 1, "float32", "none"},   // kw != kh, nothing a stick multiple
                      Conv2dCase{24, 64, 9, 16, 1, 4, 1, "float16", "none"},    // kw = 1, kh = 4
                      Conv2dCase{32, 64, 14, 10, 3, 3, 2, "float16", "relu"},   // batch 2
                      Conv2dCase{16, 32, 11, 7, 3, 2, 2, "float32", "none"},
                      Conv2dCase{64, 200, 70, 6, 3, 3, 1, "float16", "none"},   // several co tiles, long rows
                      // Knobs: several co tiles, row tiles and images per core, nothing shared,
                      // single-buffered, x tiles of one PT pass.
                      Conv2dCase{32, 192, 12, 12, 3, 3, 2, "float16", "relu", "max_cores=2 tile_co=64 tile_y=2"},
                      Conv2dCase{40, 96, 20, 9, 3, 2, 1, "float32", "none",
                                 "max_cores=4 tile_x=8 double_buffer=false share_input=false share_weights=false"},
                      Conv2dCase{64, 128, 18, 10, 3, 3, 2, "float16", "none", "tile_co=64 tile_y=1 share_weights=false"},
                      // Zero padding ("same" convolutions): the boundary written into the staged input rows.
                      Conv2dCase{64, 64, 32, 32, 3, 3, 1, "float16", "none", "pad=1"},   // 3x3 same, 32x32
                      Conv2dCase{32, 64, 14, 10, 3, 3, 2, "float32", "relu", "pad=1"},
                      Conv2dCase{16, 32, 11, 7, 5, 3, 1, "float32", "none", "pad=2"},  // kw = 5, pad 2: more than kh needs
                      Conv2dCase{3, 32, 17, 13, 3, 3, 1, "float16", "relu", "pad=1 max_cores=4 double_buffer=false share_input=false"}),
    case_name);

// A filter larger than the input is refused, naming the parameter and the rule.
TEST(Conv2dParams, AFilterWiderThanTheInputIsRefusedNamingKw) {
    Conv2dCase c{8, 8, 4, 6, 5, 3, 1, "float32", "none"};
    try {
        build_generator("conv2d", params_of(c), true);
        FAIL() << "kw > width compiled";
    } catch (const Halide::CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("kw=5 is wider than the input (width=4)"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("no padding"), std::string::npos) << e.what();
    }
    set_compiling_for_spyre(false);
}

// Weights of one stick of output channels that do not fit the scratchpad are refused, saying so.
TEST(Conv2dParams, AWeightTileOverTheScratchpadIsRefusedNamingCi) {
    set_compiling_for_spyre(true);
    try {
        plan_conv2d_spyre(Conv2dShape{2048, 64, 10, 10, 3, 3, 1, Halide::Float(16), Activation::None});
        FAIL() << "a 2.4 MB weight tile was planned";
    } catch (const Halide::CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("ci=2048"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("ci is not split into chunks yet"), std::string::npos) << e.what();
    }
    set_compiling_for_spyre(false);
}

TEST(Conv2dParams, ANegativePadIsRefusedNamingIt) {
    Conv2dCase c{8, 8, 6, 6, 3, 3, 1, "float32", "none", "pad=-1"};
    try {
        build_generator("conv2d", params_of(c), true);
        FAIL() << "pad=-1 compiled";
    } catch (const Halide::CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("pad must be >= 0, not -1"), std::string::npos) << e.what();
    }
    set_compiling_for_spyre(false);
}

TEST(Conv2dParams, AnUnsupportedActivationIsRefused) {
    Conv2dCase c{8, 8, 6, 6, 3, 3, 1, "float32", "gelu"};
    EXPECT_ANY_THROW(build_generator("conv2d", params_of(c), true));
    set_compiling_for_spyre(false);
}

TEST(Conv2dParams, ANonPositiveChannelCountIsRefusedNamingIt) {
    Conv2dCase c{0, 8, 6, 6, 3, 3, 1, "float32", "none"};
    try {
        build_generator("conv2d", params_of(c), true);
        FAIL() << "ci=0 compiled";
    } catch (const Halide::CompileError &e) {
        EXPECT_NE(std::string(e.what()).find("ci=0"), std::string::npos) << e.what();
    }
    set_compiling_for_spyre(false);
}

}  // namespace
}  // namespace spyre::testing
