// gen_softmax built for Spyre against its host build on random data, over
// shapes that are not multiples of a stick, a tile or the core count.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace spyre::testing
