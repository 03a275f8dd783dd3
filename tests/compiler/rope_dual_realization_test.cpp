// gen_rope built for Spyre against its host build on random x and the cos and
// sin tables of random token positions, fp16 and fp32, decode (one token) and
// prefill shapes, with token counts that are not whole tiles; the host build
// is itself checked against a direct double-precision rotate-half. With
// in_heads > heads (the Q and K heads of a fused QKV output) x's other heads
// hold NaN, so a build that used them would fail the comparison. With
// heads_outermost=true out is laid out on the device heads outermost (the
// runtime unpacks it through that layout, so the values must not change).
#include <gtest/gtest.h>

#include "jit_helpers.h"
#include "rope_schedule.h"

namespace spyre::testing {
namespace {

struct RopeCase {
    int d, heads, tokens;
    const char *dtype;
    int in_heads = 0;  // heads of x per token (0: heads)
    bool heads_outermost = false;
};

// x with NaN in the heads past `heads` (which the kernel must not use).
void poison_heads_past(Halide::Buffer<> &x, int heads) {
    for (int k = 0; k < x.dim(2).extent(); k++)
        for (int h = heads; h < x.dim(1).extent(); h++)
            for (int i = 0; i < x.dim(0).extent(); i++) {
                if (x.type() == Halide::Float(32)) x.as<float>()(i, h, k) = NAN;
                else x.as<Halide::float16_t>()(i, h, k) = Halide::float16_t(NAN);
            }
}

// cos or sin of position(t) * 10000^(-2i/d), the tables' rows of random positions.
Halide::Buffer<> rope_table(const std::string &name, Halide::Type t, int d, int tokens, bool sine, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> position(0, 8191);
    Halide::Buffer<> b(t, {d / 2, tokens}, name);
    for (int k = 0; k < tokens; k++) {
        const double p = position(rng);
        for (int i = 0; i < d / 2; i++) {
            const double angle = p * std::pow(10000.0, -2.0 * i / d);
            const float v = (float)(sine ? std::sin(angle) : std::cos(angle));
            if (t == Halide::Float(32)) b.as<float>()(i, k) = v;
            else b.as<Halide::float16_t>()(i, k) = Halide::float16_t(v);
        }
    }
    return b;
}

double table_at(const Halide::Buffer<> &b, int i, int k) {
    if (b.type() == Halide::Float(32)) return b.as<float>()(i, k);
    return (double)(float)b.as<Halide::float16_t>()(i, k);
}

class RopeDualRealization : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeDualRealization, SpyreMatchesHost) {
    const RopeCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    const int half = c.d / 2;
    const int x_heads = c.in_heads ? c.in_heads : c.heads;
    Halide::Buffer<> x = random_buffer("x", t, {c.d, x_heads, c.tokens}, 31);
    poison_heads_past(x, c.heads);
    Halide::Buffer<> cos = rope_table("cos", t, c.d, c.tokens, false, 32);
    Halide::Buffer<> sin = rope_table("sin", t, c.d, c.tokens, true, 32);
    std::map<std::string, std::string> params = {{"d", std::to_string(c.d)},
                                                 {"heads", std::to_string(c.heads)},
                                                 {"tokens", std::to_string(c.tokens)},
                                                 {"dtype", c.dtype}};
    if (c.in_heads) params["in_heads"] = std::to_string(c.in_heads);
    if (c.heads_outermost) params["heads_outermost"] = "true";
    set_compiling_for_spyre(true);
    const RopeSpyrePlan plan = plan_rope_spyre(c.d, c.heads, c.tokens, t);
    set_compiling_for_spyre(false);
    const std::vector<int> out_ext = {c.d, c.heads, c.tokens};
    Halide::Buffer<> spyre = run_generator("rope", params, true, t, out_ext,
                                           padded_copy(x, {c.d, x_heads, plan.tokens_padded}),
                                           padded_copy(cos, {half, plan.tokens_padded}),
                                           padded_copy(sin, {half, plan.tokens_padded}));
    Halide::Buffer<> host = run_generator("rope", params, false, t, out_ext, x, cos, sin);

    // Both builds compute each output as two products and a sum in fp32 and round once.
    const double tol = t == Halide::Float(32) ? 1e-6 : 1e-3;
    const double tol_direct = t == Halide::Float(32) ? 1e-6 : 2e-3;
    double max_err = 0, max_err_direct = 0, max_moved = 0, max_ref = 0;
    int nonfinite = 0;  // (std::max drops NaN: counted apart)
    for (int k = 0; k < c.tokens; k++)
        for (int h = 0; h < c.heads; h++)
            for (int i = 0; i < c.d; i++) {
                const int j = i % half;
                const double lo = value_at(x, j, h, k), hi = value_at(x, j + half, h, k);
                const double cs = table_at(cos, j, k), sn = table_at(sin, j, k);
                const double direct = i < half ? lo * cs - hi * sn : hi * cs + lo * sn;
                const double hv = value_at(host, i, h, k), sv = value_at(spyre, i, h, k);
                nonfinite += !std::isfinite(hv) || !std::isfinite(sv);
                max_err = std::max(max_err, std::fabs(hv - sv));
                max_err_direct = std::max(max_err_direct, std::fabs(hv - direct));
                max_moved = std::max(max_moved, std::fabs(hv - value_at(x, i, h, k)));
                max_ref = std::max(max_ref, std::fabs(hv));
            }
    EXPECT_EQ(nonfinite, 0) << "outputs that are not finite (the unrotated heads past `heads` hold NaN)";
    EXPECT_GT(max_ref, 0.5) << "the host reference is near zero: the test could pass by accident";
    EXPECT_GT(max_moved, 0.1) << "the rotation left x (nearly) unchanged: the test could pass by accident";
    EXPECT_LE(max_err_direct, tol_direct) << "the host build is not the rotate-half rotation";
    EXPECT_LE(max_err, tol) << "max abs error of the Spyre build against the host build";
}

INSTANTIATE_TEST_SUITE_P(Shapes, RopeDualRealization,
                         ::testing::Values(RopeCase{128, 32, 1, "float16"},   // decode, Granite-8B query heads
                                           RopeCase{128, 8, 1, "float16"},    // decode, KV heads
                                           RopeCase{128, 8, 512, "float16"},  // prefill
                                           RopeCase{128, 4, 300, "float16"},  // tokens not whole tiles
                                           RopeCase{128, 32, 1, "float32"},   // each half two fp32 sticks
                                           RopeCase{128, 8, 77, "float32"},
                                           RopeCase{256, 2, 40, "float16"},   // two sticks per half
                                           // The Q and K heads of Granite-3-8B's fused QKV output (48 heads):
                                           // decode, small batches and a prefill.
                                           RopeCase{128, 40, 1, "float16", 48}, RopeCase{128, 40, 4, "float16", 48},
                                           RopeCase{128, 40, 8, "float16", 48}, RopeCase{128, 40, 512, "float16", 48},
                                           RopeCase{128, 3, 37, "float32", 5},  // odd counts, fp32
                                           RopeCase{128, 2, 9, "float16", 2},  // in_heads = heads
                                           // out heads outermost on the device (apps/llm's prefill), tokens
                                           // not whole tiles too.
                                           RopeCase{128, 40, 512, "float16", 48, true},
                                           RopeCase{128, 3, 37, "float32", 5, true}),
                         [](const auto &info) {
                             const RopeCase &c = info.param;
                             return std::string(c.dtype) + "_d" + std::to_string(c.d) + "_h" + std::to_string(c.heads) +
                                    "_t" + std::to_string(c.tokens) +
                                    (c.in_heads ? "_of" + std::to_string(c.in_heads) : std::string()) +
                                    (c.heads_outermost ? "_heads_outermost" : "");
                         });

// in_heads below heads is refused at configure() time, naming both.
TEST(RopeParams, InHeadsBelowHeadsIsRefused) {
    std::string msg;
    try {
        run_generator("rope", {{"d", "128"}, {"heads", "8"}, {"in_heads", "4"}, {"tokens", "2"}}, true, Halide::Float(16),
                      {128, 8, 2}, random_buffer("x", Halide::Float(16), {128, 4, 2}, 1),
                      random_buffer("cos", Halide::Float(16), {64, 2}, 2), random_buffer("sin", Halide::Float(16), {64, 2}, 3));
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("in_heads"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at least heads=8, not 4"), std::string::npos) << msg;
}

// Half a head dim that is not whole sticks is refused for Spyre, naming the rule.
TEST(RopeParams, SpyreRefusesAHalfThatIsNotWholeSticks) {
    std::string msg;
    try {
        run_generator("rope", {{"d", "64"}, {"heads", "2"}, {"tokens", "4"}, {"dtype", "float16"}}, true, Halide::Float(16),
                      {64, 2, 4}, random_buffer("x", Halide::Float(16), {64, 2, 4}, 1),
                      random_buffer("cos", Halide::Float(16), {32, 4}, 2), random_buffer("sin", Halide::Float(16), {32, 4}, 3));
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("whole sticks"), std::string::npos) << msg;
}

}  // namespace
}  // namespace spyre::testing
