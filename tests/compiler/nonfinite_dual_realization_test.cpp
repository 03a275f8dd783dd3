// fp16 softmax, layernorm, rmsnorm and row max on rows holding inf, NaN,
// denormals and values at the edge of the f16 range, and attention with a huge
// negative scale, whose scores overflow to +-inf (issue 18, item 11;
// docs/reliability.md, "Non-finite values"). The Spyre build must give, on
// every row, what IEEE-754 binary32 arithmetic of the generator's formula
// gives, rounded once to f16 (computed here, without fast-math). The host
// build (Halide 14's x86 code) must agree with the Spyre build on every row
// where no intermediate is infinite or NaN (for the row kernels: every row
// whose result is finite); elsewhere it does not follow IEEE (it stores NaN as
// +-inf, its exp gives 0 for NaN and +inf), which is documented, not tested as
// a promise.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention_schedule.h"
#include "jit_helpers.h"
#include "norm_schedule.h"
#include "reduce_schedule.h"
#include "softmax_schedule.h"

namespace spyre::testing {
namespace {

constexpr int kCols = 64, kRows = 32;
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// The rows of the reliability reproducer numerics.cpp, by name.
const char *const kRowNames[kRows] = {"zeros",
                                      "random [-2,2]",
                                      "one +inf",
                                      "one -inf",
                                      "all -inf",
                                      "one NaN",
                                      "all 65504",
                                      "+-65504 alternating",
                                      "denormals k*2^-24",
                                      "0 and -60000",
                                      "all 1.0",
                                      "+inf and -inf",
                                      "all +inf",
                                      "11..12",
                                      "all 1000",
                                      "-32..31",
                                      "60000 + one 60032",
                                      "one 65504 rest 0",
                                      "-65504 but one 0",
                                      "all NaN",
                                      "smallest denormal 2^-24",
                                      "min normal 2^-14 +- denormals",
                                      "random * 10^-4",
                                      "random * 10^-3",
                                      "random * 10^-2",
                                      "random * 10^-1",
                                      "random * 10^0",
                                      "random * 10^1",
                                      "random * 10^2",
                                      "random * 10^3",
                                      "random * 10^4",
                                      "random * 10^5"};

float f16(float v) { return (float)Halide::float16_t(v); }

Halide::Buffer<> special_rows() {
    Halide::Buffer<> in(Halide::Float(16), {kCols, kRows}, "in");
    unsigned s = 12345;
    auto rnd = [&] {
        s = s * 1664525u + 1013904223u;
        return ((s >> 8) % 4000) / 1000.0f - 2.0f;
    };
    for (int y = 0; y < kRows; y++)
        for (int x = 0; x < kCols; x++) {
            float v = rnd();
            switch (y) {
            case 0: v = 0; break;
            case 1: break;
            case 2: v = x == 5 ? kInf : v; break;
            case 3: v = x == 5 ? -kInf : v; break;
            case 4: v = -kInf; break;
            case 5: v = x == 7 ? kNaN : v; break;
            case 6: v = 65504; break;
            case 7: v = (x & 1) ? 65504 : -65504; break;
            case 8: v = std::ldexp((float)(x - 32), -24); break;
            case 9: v = (x & 1) ? 0 : -60000; break;
            case 10: v = 1; break;
            case 11: v = x == 3 ? kInf : (x == 4 ? -kInf : v); break;
            case 12: v = kInf; break;
            case 13: v = 11 + x / 64.0f; break;
            case 14: v = 1000; break;
            case 15: v = (float)(x - 32); break;
            case 16: v = x == 9 ? 60032 : 60000; break;
            case 17: v = x == 0 ? 65504 : 0; break;
            case 18: v = x == 63 ? 0 : -65504; break;
            case 19: v = kNaN; break;
            case 20: v = std::ldexp(1.0f, -24); break;
            case 21: v = (x & 1) ? std::ldexp(1.0f, -14) : -std::ldexp(1.0f, -24); break;
            default: v = std::fmax(-65504.0f, std::fmin(65504.0f, v * std::pow(10.0f, (float)(y - 26)))); break;
            }
            in.as<Halide::float16_t>()(x, y) = Halide::float16_t(v);
        }
    return in;
}

float at(const Halide::Buffer<> &b, int x, int y) { return (float)b.as<Halide::float16_t>()(x, y); }

// IEEE 754-2019 maximum: NaN if either operand is NaN.
float ieee_max(float a, float b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::fmax(a, b); }

// The generators' formulas in IEEE binary32, one rounding to f16 at the end.
std::vector<float> softmax_row(const Halide::Buffer<> &in, int y) {
    float m = -kInf, sum = 0;
    for (int x = 0; x < kCols; x++) m = ieee_max(m, at(in, x, y));
    std::vector<float> e(kCols), out(kCols);
    for (int x = 0; x < kCols; x++) sum += (e[x] = std::exp(at(in, x, y) - m));
    for (int x = 0; x < kCols; x++) out[x] = f16(e[x] / sum);
    return out;
}

std::vector<float> norm_row(const Halide::Buffer<> &in, int y, bool centered, float eps) {
    const float inv_n = 1.0f / (float)kCols;
    float mean = 0;
    if (centered) {
        float sum = 0;
        for (int x = 0; x < kCols; x++) sum += at(in, x, y);
        mean = sum * inv_n;
    }
    float sumsq = 0;
    for (int x = 0; x < kCols; x++) sumsq += (at(in, x, y) - mean) * (at(in, x, y) - mean);
    const float inv = 1.0f / std::sqrt(sumsq * inv_n + eps);
    std::vector<float> out(kCols);
    for (int x = 0; x < kCols; x++) out[x] = f16((at(in, x, y) - mean) * inv);  // weight 1, bias 0
    return out;
}

// Same class of value (NaN, +inf, -inf) or, for finite values, within a
// tolerance of the reference. Returns the number of elements that are not.
int mismatches(const std::vector<float> &got, const std::vector<float> &ref) {
    int bad = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        const float g = got[i], r = ref[i];
        bool ok;
        if (std::isnan(r) || std::isnan(g))
            ok = std::isnan(r) && std::isnan(g);
        else if (std::isinf(r) || std::isinf(g))
            ok = g == r;
        else
            ok = std::fabs(g - r) <= 2e-3f + 1e-2f * std::fabs(r);
        bad += !ok;
    }
    return bad;
}

bool all_finite(const std::vector<float> &v) {
    for (float f : v)
        if (!std::isfinite(f)) return false;
    return true;
}

std::vector<float> row_of(const Halide::Buffer<> &b, int y) {
    std::vector<float> r(kCols);
    for (int x = 0; x < kCols; x++) r[x] = at(b, x, y);
    return r;
}

std::string show(const std::vector<float> &v) {
    return std::to_string(v[0]) + ", " + std::to_string(v[5]) + ", " + std::to_string(v[7]) + " (x = 0, 5, 7)";
}

// Checks the Spyre rows against the IEEE reference and the host rows against the
// Spyre rows where the reference is finite; fails if no row is non-finite.
// Returns the number of rows compared with the host build.
template <typename Reference>
int check_rows(const std::string &what, const Halide::Buffer<> &spyre, const Halide::Buffer<> &host, Reference ref) {
    int nonfinite_rows = 0, compared_with_host = 0;
    for (int y = 0; y < kRows; y++) {
        const std::vector<float> r = ref(y), s = row_of(spyre, y), h = row_of(host, y);
        EXPECT_EQ(mismatches(s, r), 0) << what << ", row " << y << " (" << kRowNames[y] << "): Spyre gives " << show(s)
                                       << ", IEEE-754 gives " << show(r);
        if (!all_finite(r)) {
            nonfinite_rows++;
            continue;
        }
        compared_with_host++;
        EXPECT_EQ(mismatches(h, s), 0) << what << ", row " << y << " (" << kRowNames[y] << "): host gives " << show(h)
                                       << ", Spyre gives " << show(s);
    }
    EXPECT_GT(nonfinite_rows, 0) << what << ": no row has a non-finite result: the test could pass by accident";
    return compared_with_host;
}

TEST(NonFiniteDualRealization, SoftmaxFollowsIeeeOnEveryRow) {
    const Halide::Buffer<> in = special_rows();
    const std::map<std::string, std::string> params = {{"cols", std::to_string(kCols)},
                                                       {"rows", std::to_string(kRows)}};
    set_compiling_for_spyre(true);
    const SoftmaxSpyrePlan plan = plan_softmax_spyre(kCols, kRows, Halide::Float(16));
    set_compiling_for_spyre(false);
    const Halide::Buffer<> spyre = run_generator("softmax", params, true, Halide::Float(16), {kCols, kRows},
                                                 padded_copy(in, {plan.cols_padded, plan.rows_padded}));
    const Halide::Buffer<> host = run_generator("softmax", params, false, Halide::Float(16), {kCols, kRows}, in);
    EXPECT_GT(check_rows("softmax", spyre, host, [&](int y) { return softmax_row(in, y); }), 0)
        << "no row was compared with the host build";
}

class NonFiniteNorm : public ::testing::TestWithParam<const char *> {};

TEST_P(NonFiniteNorm, FollowsIeeeOnEveryRowForEveryEps) {
    const std::string kernel = GetParam();
    const bool centered = kernel == "layernorm";
    const Halide::Buffer<> in = special_rows();
    Halide::Buffer<> weight(Halide::Float(16), {kCols}, "weight"), bias(Halide::Float(16), {kCols}, "bias");
    weight.as<Halide::float16_t>().fill(Halide::float16_t(1.0f));
    bias.as<Halide::float16_t>().fill(Halide::float16_t(0.0f));
    const std::map<std::string, std::string> params = {{"cols", std::to_string(kCols)},
                                                       {"rows", std::to_string(kRows)}};
    set_compiling_for_spyre(true);
    const NormSpyrePlan plan = plan_norm_spyre(kCols, kRows, Halide::Float(16), centered);
    set_compiling_for_spyre(false);
    const Halide::Buffer<> in_p = padded_copy(in, {plan.cols_padded, plan.rows_padded});
    const Halide::Buffer<> weight_p = padded_copy(weight, {plan.cols_padded}),
                           bias_p = padded_copy(bias, {plan.cols_padded});
    // eps = -1 and 0 make NaN and inf out of finite rows; NaN and inf eps reach every row.
    const std::vector<float> eps = {1e-5f, 0.0f, -1.0f, kNaN, kInf};
    std::vector<Halide::Buffer<>> spyre, host;
    if (centered) {
        spyre = run_with_eps(kernel, params, true, Halide::Float(16), {kCols, kRows}, eps, in_p, weight_p, bias_p);
        host = run_with_eps(kernel, params, false, Halide::Float(16), {kCols, kRows}, eps, in, weight, bias);
    } else {
        spyre = run_with_eps(kernel, params, true, Halide::Float(16), {kCols, kRows}, eps, in_p, weight_p);
        host = run_with_eps(kernel, params, false, Halide::Float(16), {kCols, kRows}, eps, in, weight);
    }
    int compared_with_host = 0;
    for (size_t i = 0; i < eps.size(); i++) {
        compared_with_host += check_rows(kernel + " eps=" + std::to_string(eps[i]), spyre[i], host[i],
                                         [&](int y) { return norm_row(in, y, centered, eps[i]); });
    }
    EXPECT_GT(compared_with_host, 0) << "no row was compared with the host build";
}

INSTANTIATE_TEST_SUITE_P(Kernels, NonFiniteNorm, ::testing::Values("layernorm", "rmsnorm"));

// gen_reduce max over x of the same rows: one value per row.
TEST(NonFiniteDualRealization, RowMaxIsNaNForARowWithANaNAndMinusInfForARowOfMinusInf) {
    const Halide::Buffer<> in2 = special_rows();
    Halide::Buffer<> in(Halide::Float(16), {kCols, kRows, 1}, "in");
    for (int y = 0; y < kRows; y++)
        for (int x = 0; x < kCols; x++) in.as<Halide::float16_t>()(x, y, 0) = in2.as<Halide::float16_t>()(x, y);
    const std::map<std::string, std::string> params = {
        {"op", "max"}, {"axis", "0"},       {"d0", std::to_string(kCols)}, {"d1", std::to_string(kRows)},
        {"d2", "1"},   {"dtype", "float16"}};
    set_compiling_for_spyre(true);
    const ReduceSpyrePlan plan = plan_reduce_spyre(ReduceShape{kCols, kRows, 1, Halide::Float(16), "max", 0});
    set_compiling_for_spyre(false);
    const Halide::Buffer<> spyre = run_generator(
        "reduce", params, true, Halide::Float(16), {kRows, 1},
        padded_copy(in, {plan.in_lanes * ((kCols + plan.in_lanes - 1) / plan.in_lanes), plan.u_padded, 1}));
    const Halide::Buffer<> host = run_generator("reduce", params, false, Halide::Float(16), {kRows, 1}, in);
    int nonfinite = 0;
    for (int y = 0; y < kRows; y++) {
        float ref = -kInf;
        for (int x = 0; x < kCols; x++) ref = ieee_max(ref, at(in2, x, y));
        const float s = (float)spyre.as<Halide::float16_t>()(y, 0), h = (float)host.as<Halide::float16_t>()(y, 0);
        EXPECT_EQ(mismatches({s}, {ref}), 0)
            << "row " << y << " (" << kRowNames[y] << "): Spyre gives " << s << ", IEEE-754 maximum gives " << ref;
        if (std::isfinite(ref)) {
            EXPECT_EQ(h, s) << "row " << y << " (" << kRowNames[y] << "): host gives " << h << ", Spyre " << s;
        } else {
            nonfinite++;
        }
    }
    EXPECT_GE(nonfinite, 4) << "the NaN and inf rows are missing: the test could pass by accident";
}

// Attention with scale -1e38 over one KV tile of 64 keys. Q and K hold -1, 0 and 1, so the
// scores S are exact small integers and s = S * scale is +-1e38 to +-3e38, -0, or (|S| >= 4)
// +-inf: queries 0..31 see one key coordinate each (finite s), queries 32..63 the sum of five
// or six (rows with s = +inf, which makes exp(s - max) NaN, and rows with s = -inf, which
// exp takes to 0). The reference is the generator's formula for one KV tile (tile max from
// -1e30, probabilities rounded to f16, the running state from (0, -1e30)) in IEEE binary32.
// The host build is compared on the rows whose scores and score differences s - max are all
// finite: where one overflows, its result is not the formula's even where that is finite
// (docs/reliability.md, "Non-finite values").
TEST(NonFiniteDualRealization, AttentionWithAHugeNegativeScaleFollowsIeee) {
    const int d = 64, s = 64;
    const float scale = -1e38f, neg = -1e30f;
    Halide::Buffer<> Q(Halide::Float(16), {d, s, 1}, "Q"), Kt(Halide::Float(16), {s, d, 1}, "Kt");
    Halide::Buffer<> V = random_buffer("V", Halide::Float(16), {d, s, 1}, 41);
    unsigned seed = 777;
    auto trit = [&] {
        seed = seed * 1664525u + 1013904223u;
        return (float)((int)((seed >> 16) % 3) - 1);
    };
    for (int j = 0; j < s; j++)
        for (int e = 0; e < d; e++) Kt.as<Halide::float16_t>()(j, e, 0) = Halide::float16_t(trit());
    for (int i = 0; i < s; i++)
        for (int e = 0; e < d; e++) {
            // Queries 0..31: one coordinate; 32..47: five, 48..63: minus six (more +inf scores).
            float q = 0;
            if (i < 32) q = e == i ? 1.0f : 0.0f;
            else if (i < 48) q = e >= i - 32 && e < i - 32 + 5 ? 1.0f : 0.0f;
            else q = e >= i - 48 && e < i - 48 + 6 ? -1.0f : 0.0f;
            Q.as<Halide::float16_t>()(e, i, 0) = Halide::float16_t(q);
        }
    const std::map<std::string, std::string> params = {{"d", std::to_string(d)}, {"s", std::to_string(s)},
                                                       {"heads", "1"},           {"scale", "-1e38"},
                                                       {"kv_tile", "64"}};
    set_compiling_for_spyre(true);
    AttentionSpyreOptions options;
    options.kv_tile = 64;
    const AttentionSpyrePlan plan = plan_attention_spyre(d, s, 1, 0, Halide::Float(16), options);
    set_compiling_for_spyre(false);
    ASSERT_EQ(plan.kv_tile, s) << "the reference is written for one KV tile";
    const Halide::Buffer<> spyre =
        run_generator("attention", params, true, Halide::Float(16), {d, s, 1}, padded_copy(Q, {plan.dp, plan.qp, 1}),
                      padded_copy(Kt, {plan.sp, plan.dp, 1}), padded_copy(V, {plan.dp, plan.sp, 1}));
    const Halide::Buffer<> host = run_generator("attention", params, false, Halide::Float(16), {d, s, 1}, Q, Kt, V);
    int nan_rows = 0, finite_rows = 0, compared_with_host = 0;
    for (int i = 0; i < s; i++) {
        std::vector<float> sc(s), p(s);
        float tm = neg;
        bool no_overflow = true;
        for (int j = 0; j < s; j++) {
            float S = 0;
            for (int e = 0; e < d; e++)
                S += (float)Kt.as<Halide::float16_t>()(j, e, 0) * (float)Q.as<Halide::float16_t>()(e, i, 0);
            sc[j] = S * scale;
            tm = ieee_max(tm, sc[j]);
            no_overflow = no_overflow && std::isfinite(sc[j]);
        }
        for (int j = 0; j < s; j++) {
            p[j] = f16(std::exp(sc[j] - tm));
            no_overflow = no_overflow && std::isfinite(sc[j] - tm);
        }
        const float m_new = ieee_max(neg, tm);
        std::vector<float> ref(d);
        float l = 0;
        for (int j = 0; j < s; j++) l += p[j];
        l = 0.0f * std::exp(neg - m_new) + l * std::exp(tm - m_new);
        for (int e = 0; e < d; e++) {
            float o = 0;
            for (int j = 0; j < s; j++) o += (float)V.as<Halide::float16_t>()(e, j, 0) * p[j];
            ref[e] = f16((0.0f * std::exp(neg - m_new) + o * std::exp(tm - m_new)) / l);
        }
        std::vector<float> got(d), h(d);
        for (int e = 0; e < d; e++) {
            got[e] = (float)spyre.as<Halide::float16_t>()(e, i, 0);
            h[e] = (float)host.as<Halide::float16_t>()(e, i, 0);
        }
        EXPECT_EQ(mismatches(got, ref), 0) << "query " << i << ": Spyre gives " << got[0] << ", IEEE-754 gives "
                                           << ref[0] << " (d = 0)";
        nan_rows += std::isnan(ref[0]);
        finite_rows += all_finite(ref) && !no_overflow;
        if (no_overflow) {
            compared_with_host++;
            EXPECT_EQ(mismatches(h, got), 0) << "query " << i << ": host gives " << h[0] << ", Spyre " << got[0];
        }
    }
    EXPECT_GT(nan_rows, 0) << "no query row reaches s = +inf: the test could pass by accident";
    EXPECT_GT(finite_rows, 0) << "no row with an infinite intermediate and a finite result: the test could pass by accident";
    EXPECT_GE(compared_with_host, 32) << "the rows with finite scores are missing";
}

}  // namespace
}  // namespace spyre::testing
