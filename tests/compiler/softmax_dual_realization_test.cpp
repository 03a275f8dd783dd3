// gen_softmax built for Spyre against its host build on random data, over
// shapes that are not multiples of a stick, a tile or the core count.
#include <gtest/gtest.h>

#include <cmath>

#include "jit_helpers.h"
#include "softmax_schedule.h"

namespace spyre::testing {
namespace {

struct SoftmaxCase {
    int cols, rows;
    const char *dtype;
};

class SoftmaxDualRealization : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxDualRealization, SpyreMatchesHost) {
    const SoftmaxCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    // Inputs spread over [-4, 4) so the exponentials differ a lot within a row.
    Halide::Buffer<> in = random_buffer("in", t, {c.cols, c.rows}, 5);
    if (t == Halide::Float(32)) in.as<float>().for_each_value([](float &v) { v *= 4.0f; });
    else in.as<Halide::float16_t>().for_each_value([](Halide::float16_t &v) { v = Halide::float16_t((float)v * 4.0f); });
    const std::map<std::string, std::string> params = {
        {"cols", std::to_string(c.cols)}, {"rows", std::to_string(c.rows)}, {"dtype", c.dtype}};
    set_compiling_for_spyre(true);
    const SoftmaxSpyrePlan plan = plan_softmax_spyre(c.cols, c.rows, t);
    set_compiling_for_spyre(false);
    Halide::Buffer<> in_padded = padded_copy(in, {plan.cols_padded, plan.rows_padded});
    Halide::Buffer<> spyre = run_generator("softmax", params, true, t, {c.cols, c.rows}, in_padded);
    Halide::Buffer<> host = run_generator("softmax", params, false, t, {c.cols, c.rows}, in);

    // exp is approximated differently on the host; fp16 outputs round once.
    const double tol = t == Halide::Float(32) ? 2e-5 : 2e-3;
    double max_err = 0, row_sum_err = 0;
    int distinct = 0;
    for (int y = 0; y < c.rows; y++) {
        double row_sum = 0;
        for (int x = 0; x < c.cols; x++) {
            const double h = value_at(host, x, y, 0), s = value_at(spyre, x, y, 0);
            max_err = std::max(max_err, std::fabs(h - s));
            row_sum += s;
            if (h != value_at(host, 0, 0, 0)) distinct++;
        }
        row_sum_err = std::max(row_sum_err, std::fabs(row_sum - 1.0));
    }
    if (c.cols > 1) {
        EXPECT_GT(distinct, 0) << "the host reference is constant";
    }
    EXPECT_LE(max_err, tol);
    EXPECT_LE(row_sum_err, t == Halide::Float(32) ? 1e-4 : 0.05) << "rows of the Spyre result do not sum to 1";
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxDualRealization,
                         ::testing::Values(SoftmaxCase{64, 32, "float32"}, SoftmaxCase{1000, 37, "float16"},
                                           SoftmaxCase{33, 100, "float32"}, SoftmaxCase{128, 1, "float16"},
                                           SoftmaxCase{1, 5, "float32"}, SoftmaxCase{512, 256, "float16"}),
                         [](const auto &info) {
                             return std::string(info.param.dtype) + "_" + std::to_string(info.param.cols) + "x" +
                                    std::to_string(info.param.rows);
                         });

// axis=1: softmax over the rows of each column (torch's softmax(dim=0) of an [R, C] tensor), on
// ragged columns (not whole sticks or tiles) and rows; the host build checked against the
// formula in double, the Spyre build against the host, and every column of the Spyre result
// summing to 1.
class SoftmaxColumnsDualRealization : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxColumnsDualRealization, SpyreMatchesHost) {
    const SoftmaxCase c = GetParam();
    const Halide::Type t = std::string(c.dtype) == "float16" ? Halide::Float(16) : Halide::Float(32);
    Halide::Buffer<> in = random_buffer("in", t, {c.cols, c.rows}, 7);
    if (t == Halide::Float(32)) in.as<float>().for_each_value([](float &v) { v *= 4.0f; });
    else in.as<Halide::float16_t>().for_each_value([](Halide::float16_t &v) { v = Halide::float16_t((float)v * 4.0f); });
    const std::map<std::string, std::string> params = {
        {"cols", std::to_string(c.cols)}, {"rows", std::to_string(c.rows)}, {"dtype", c.dtype}, {"axis", "1"}};
    set_compiling_for_spyre(true);
    const SoftmaxSpyrePlan plan = plan_softmax_spyre(c.cols, c.rows, t, {}, 1);
    set_compiling_for_spyre(false);
    EXPECT_EQ(plan.axis, 1);
    Halide::Buffer<> in_padded = padded_copy(in, {plan.cols_padded, c.rows});
    Halide::Buffer<> spyre = run_generator("softmax", params, true, t, {c.cols, c.rows}, in_padded);
    Halide::Buffer<> host = run_generator("softmax", params, false, t, {c.cols, c.rows}, in);

    const double tol = t == Halide::Float(32) ? 2e-5 : 2e-3;
    double max_err = 0, max_err_direct = 0, col_sum_err = 0;
    int distinct = 0;
    for (int x = 0; x < c.cols; x++) {
        double mx = -INFINITY, sum = 0, col_sum = 0;
        for (int y = 0; y < c.rows; y++) mx = std::max(mx, value_at(in, x, y, 0));
        for (int y = 0; y < c.rows; y++) sum += std::exp(value_at(in, x, y, 0) - mx);
        for (int y = 0; y < c.rows; y++) {
            const double h = value_at(host, x, y, 0), s = value_at(spyre, x, y, 0);
            max_err = std::max(max_err, std::fabs(h - s));
            max_err_direct = std::max(max_err_direct, std::fabs(h - std::exp(value_at(in, x, y, 0) - mx) / sum));
            col_sum += s;
            if (h != value_at(host, 0, 0, 0)) distinct++;
        }
        col_sum_err = std::max(col_sum_err, std::fabs(col_sum - 1.0));
    }
    if (c.rows > 1) {  // (one row: every output is 1)
        EXPECT_GT(distinct, 0) << "the host reference is constant";
    }
    EXPECT_LE(max_err_direct, tol) << "the host build is not softmax over the rows";
    EXPECT_LE(max_err, tol);
    EXPECT_LE(col_sum_err, t == Halide::Float(32) ? 1e-4 : 0.05) << "columns of the Spyre result do not sum to 1";
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxColumnsDualRealization,
                         ::testing::Values(SoftmaxCase{64, 32, "float32"}, SoftmaxCase{100, 37, "float16"},
                                           SoftmaxCase{33, 100, "float32"}, SoftmaxCase{1000, 3, "float16"},
                                           SoftmaxCase{5, 1, "float32"}),
                         [](const auto &info) {
                             return std::string(info.param.dtype) + "_" + std::to_string(info.param.cols) + "x" +
                                    std::to_string(info.param.rows);
                         });

// axis=1 holds every row of a tile's columns in the scratchpad: more rows than fit is a compile
// error that says so, not a failure at run time.
TEST(SoftmaxParams, ColumnsWithTooManyRowsAreRefusedSayingWhy) {
    std::string msg;
    try {
        const Halide::Buffer<> in = random_buffer("in", Halide::Float(16), {64, 100000}, 3);
        build_generator("softmax", {{"cols", "64"}, {"rows", "100000"}, {"axis", "1"}}, true, in);
    } catch (const Halide::CompileError &e) {
        msg = e.what();
    }
    set_compiling_for_spyre(false);
    EXPECT_NE(msg.find("softmax axis=1: the 100000 rows of one stick of columns"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not supported"), std::string::npos) << msg;
}

}  // namespace
}  // namespace spyre::testing
