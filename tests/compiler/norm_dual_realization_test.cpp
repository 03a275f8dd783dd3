// gen_layernorm and gen_rmsnorm built for Spyre against their host builds on
// random data, over shapes that are not multiples of a stick, a tile or the
// core count, both dtypes. eps is a run-time parameter: each build is compiled
// once and run with two values of it, which must give different results.
#include <gtest/gtest.h>

#include "jit_helpers.h"
#include "norm_schedule.h"

namespace spyre::testing {
namespace {

struct NormCase {
    const char *kernel;  // "layernorm" or "rmsnorm"
    int cols, rows;
    const char *dtype;
};

constexpr float kEpsSmall = 1e-5f, kEpsLarge = 0.5f;

class NormDualRealization : public ::testing::TestWithParam<NormCase> {};

TEST_P(NormDualRealization, SpyreMatchesHostForEveryEps) {
    const NormCase c = GetParam();
    const bool layernorm = std::string(c.kernel) == "layernorm";
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    // Rows with a non-zero mean (in [-1, 1) + 0.5) so centering matters; random weight and bias.
    Halide::Buffer<> in = random_buffer("in", t, {c.cols, c.rows}, 11);
    if (t == Halide::Float(32)) in.as<float>().for_each_value([](float &v) { v += 0.5f; });
    else in.as<Halide::float16_t>().for_each_value([](Halide::float16_t &v) { v = Halide::float16_t((float)v + 0.5f); });
    Halide::Buffer<> weight = random_buffer("weight", t, {c.cols}, 12);
    Halide::Buffer<> bias = random_buffer("bias", t, {c.cols}, 13);
    const std::map<std::string, std::string> params = {
        {"cols", std::to_string(c.cols)}, {"rows", std::to_string(c.rows)}, {"dtype", c.dtype}};
    set_compiling_for_spyre(true);
    const NormSpyrePlan plan = plan_norm_spyre(c.cols, c.rows, t, layernorm);
    set_compiling_for_spyre(false);
    Halide::Buffer<> in_p = padded_copy(in, {plan.cols_padded, plan.rows_padded});
    Halide::Buffer<> weight_p = padded_copy(weight, {plan.cols_padded});
    Halide::Buffer<> bias_p = padded_copy(bias, {plan.cols_padded});
    const std::vector<float> eps = {kEpsSmall, kEpsLarge};
    std::vector<Halide::Buffer<>> spyre, host;
    if (layernorm) {
        spyre = run_with_eps(c.kernel, params, true, t, {c.cols, c.rows}, eps, in_p, weight_p, bias_p);
        host = run_with_eps(c.kernel, params, false, t, {c.cols, c.rows}, eps, in, weight, bias);
    } else {
        spyre = run_with_eps(c.kernel, params, true, t, {c.cols, c.rows}, eps, in_p, weight_p);
        host = run_with_eps(c.kernel, params, false, t, {c.cols, c.rows}, eps, in, weight);
    }

    // Row sums in a different order on each side: float32 error grows with the row
    // length; float16 outputs round once (one ulp of the output).
    const double ulp = t == Halide::Float(32) ? 1.2e-7 : 9.8e-4;
    const double tol = t == Halide::Float(32) ? 8.0 * ulp * std::sqrt((double)c.cols) + 1e-6 : 2.0 * ulp;
    for (size_t i = 0; i < eps.size(); i++) {
        double max_err = 0, max_ref = 0;
        int distinct = 0;
        const double first = value_at(host[i], 0, 0, 0);
        for (int y = 0; y < c.rows; y++) {
            for (int x = 0; x < c.cols; x++) {
                const double h = value_at(host[i], x, y, 0), s = value_at(spyre[i], x, y, 0);
                max_err = std::max(max_err, std::fabs(h - s) / std::max(1.0, std::fabs(h)));
                max_ref = std::max(max_ref, std::fabs(h));
                if (h != first) distinct++;
            }
        }
        EXPECT_GT(distinct, 0) << "the host reference is constant: the test could pass by accident";
        EXPECT_GT(max_ref, 0.1);
        EXPECT_LE(max_err, tol) << "eps " << eps[i] << ": max relative error " << max_err;
    }
    // The run-time eps reaches the device: the same program gives different results.
    double eps_effect = 0;
    for (int y = 0; y < c.rows; y++) {
        for (int x = 0; x < c.cols; x++) {
            eps_effect = std::max(eps_effect, std::fabs(value_at(spyre[0], x, y, 0) - value_at(spyre[1], x, y, 0)));
        }
    }
    if (c.cols > 1 || !layernorm) {
        EXPECT_GT(eps_effect, 0.01) << "eps " << kEpsSmall << " and " << kEpsLarge << " give the same Spyre result";
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormDualRealization,
                         ::testing::Values(NormCase{"layernorm", 64, 32, "float32"},
                                           NormCase{"layernorm", 1000, 37, "float16"},  // ragged row and rows
                                           NormCase{"layernorm", 33, 100, "float32"},   // row below two sticks
                                           NormCase{"layernorm", 4160, 9, "float16"},   // row over one SFU vector
                                           NormCase{"rmsnorm", 64, 32, "float16"},
                                           NormCase{"rmsnorm", 1000, 37, "float32"},
                                           NormCase{"rmsnorm", 1, 5, "float32"},        // one element per row
                                           NormCase{"rmsnorm", 4160, 9, "float16"},
                                           NormCase{"rmsnorm", 4096, 1, "float16"},     // Granite-3-8B: decode
                                           NormCase{"rmsnorm", 4096, 512, "float16"}),  // and a prefill
                         [](const auto &info) {
                             return std::string(info.param.kernel) + "_" + info.param.dtype + "_" +
                                    std::to_string(info.param.cols) + "x" + std::to_string(info.param.rows);
                         });

// gen_rmsnorm output=inverse_rms: the rows' 1 / rms alone (float32, one value per
// row, tiles of a stick of rows), Spyre against host for both eps values.
struct InverseRmsCase {
    int cols, rows;
    const char *dtype;
};

class InverseRmsDualRealization : public ::testing::TestWithParam<InverseRmsCase> {};

TEST_P(InverseRmsDualRealization, SpyreMatchesHostForEveryEps) {
    const InverseRmsCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    Halide::Buffer<> in = random_buffer("in", t, {c.cols, c.rows}, 21);
    const std::map<std::string, std::string> params = {{"cols", std::to_string(c.cols)},
                                                       {"rows", std::to_string(c.rows)},
                                                       {"dtype", c.dtype},
                                                       {"output", "inverse_rms"}};
    set_compiling_for_spyre(true);
    const NormSpyrePlan plan = plan_norm_spyre(c.cols, c.rows, t, false, {}, true);
    set_compiling_for_spyre(false);
    EXPECT_TRUE(plan.inverse_rms);
    EXPECT_EQ(plan.tile_rows % 32, 0) << "a tile is whole sticks of float32 results";
    Halide::Buffer<> in_p = padded_copy(in, {plan.cols_padded, plan.rows_padded});
    const std::vector<float> eps = {kEpsSmall, kEpsLarge};
    const std::vector<Halide::Buffer<>> spyre =
        run_with_eps("rmsnorm", params, true, Halide::Float(32), {c.rows}, eps, in_p);
    const std::vector<Halide::Buffer<>> host =
        run_with_eps("rmsnorm", params, false, Halide::Float(32), {c.rows}, eps, in);
    const double tol = 8.0 * 1.2e-7 * std::sqrt((double)c.cols) + 1e-6;
    for (size_t i = 0; i < eps.size(); i++) {
        double max_err = 0;
        int distinct = 0;
        for (int y = 0; y < c.rows; y++) {
            const double h = value_at(host[i], y, 0, 0), s = value_at(spyre[i], y, 0, 0);
            max_err = std::max(max_err, std::fabs(h - s) / std::fabs(h));
            if (h != value_at(host[i], 0, 0, 0)) distinct++;
            // The reference itself: 1 / sqrt(mean of squares + eps) in double.
            double sq = 0;
            for (int x = 0; x < c.cols; x++) sq += value_at(in, x, y, 0) * value_at(in, x, y, 0);
            EXPECT_NEAR(h, 1.0 / std::sqrt(sq / c.cols + eps[i]), 1e-4 * h) << "row " << y;
        }
        EXPECT_TRUE(c.rows == 1 || distinct > 0) << "the host reference is constant: the test could pass by accident";
        EXPECT_LE(max_err, tol) << "eps " << eps[i] << ": max relative error " << max_err;
    }
    EXPECT_GT(std::fabs(value_at(spyre[0], 0, 0, 0) - value_at(spyre[1], 0, 0, 0)), 0.01)
        << "eps " << kEpsSmall << " and " << kEpsLarge << " give the same Spyre result";
}

// The plan of output=inverse_rms: tiles are whole sticks of float32 results (32 rows) even
// where a core has fewer rows, a forced tile_rows must be such a multiple, and the input's
// rows staged at a time fit at a Llama-3-70B row (8192 fp16).
TEST(InverseRmsPlan, TilesAreWholeSticksOfResults) {
    ScheduleContext::Use use(ScheduleContext::make(true));
    const NormSpyrePlan prefill = plan_norm_spyre(4096, 512, Halide::Float(16), false, {}, true);
    EXPECT_EQ(prefill.tile_rows, 32);
    EXPECT_EQ(prefill.cores, 16) << "512 rows in tiles of 32";
    EXPECT_EQ(prefill.rows_padded, 512);
    const NormSpyrePlan one = plan_norm_spyre(4096, 1, Halide::Float(16), false, {}, true);
    EXPECT_EQ(one.tile_rows, 32) << "one row still stores a whole stick of results";
    EXPECT_EQ(one.rows_padded, 32);
    EXPECT_EQ(one.cores, 1);
    EXPECT_EQ(plan_norm_spyre(8192, 512, Halide::Float(16), false, {}, true).tile_rows, 32);
    NormSpyreOptions forced;
    forced.tile_rows = 16;
    EXPECT_THROW(plan_norm_spyre(4096, 512, Halide::Float(16), false, forced, true), Halide::CompileError);
    forced.tile_rows = 64;
    EXPECT_EQ(plan_norm_spyre(4096, 512, Halide::Float(16), false, forced, true).tile_rows, 64);
    // The normalized output keeps its own tiles (not whole sticks of rows).
    EXPECT_LT(plan_norm_spyre(4096, 512, Halide::Float(16), false).tile_rows, 32);
    // Rows too wide for the rows staged at a time: an error naming them.
    try {
        (void)plan_norm_spyre(2000000, 4, Halide::Float(16), false, {}, true);
        ADD_FAILURE() << "a row of 2000000 elements was planned";
    } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("2 rows of 2000000 elements staged at a time"), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, InverseRmsDualRealization,
                         ::testing::Values(InverseRmsCase{4096, 512, "float16"},  // Granite-3-8B's prefill
                                           InverseRmsCase{8192, 40, "float16"},   // Llama-3-70B's rows
                                           InverseRmsCase{1000, 37, "float32"},   // ragged rows and row
                                           InverseRmsCase{64, 1, "float16"}),     // one row: a tile of padding
                         [](const auto &info) {
                             return std::string(info.param.dtype) + "_" + std::to_string(info.param.cols) + "x" +
                                    std::to_string(info.param.rows);
                         });

}  // namespace
}  // namespace spyre::testing
