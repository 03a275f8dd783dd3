// Every user-style image generator of these tests at widths that are not whole
// sticks (1000, 100 and 33 float32 elements; a stick is 32): the Spyre build,
// given the padded tensor a Spyre buffer is, either computes exactly what the
// host build computes or refuses to compile naming the reason. It never
// computes another function (a read of the padded extent instead of the true
// one, a reduction over the padding): the class of bug
// target/driver/true_tensor_shapes.h closed must not come back through a new
// generator. A generator added to these tests with `width` and `height`
// parameters and one 2-D float32 input belongs in the table below.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "jit_helpers.h"

namespace spyre::testing {
namespace {

struct SweepGenerator {
    const char *name;
    const char *input;  // the Input's name
    Halide::Type out_type;
    std::function<std::vector<int>(int w, int h)> out_extents;
    bool always_compiles;  // refusing any width would be a regression
    std::map<std::string, std::string> extra = {};
};

std::vector<SweepGenerator> generators() {
    auto image = [](int w, int h) { return std::vector<int>{w, h}; };
    auto rows = [](int, int h) { return std::vector<int>{h}; };
    return {
        {"user_shape_scale", "shape_scale_in", Halide::Float(32), image, true},
        {"user_row_max", "row_max_in", Halide::Float(32), rows, true},
        {"direct_scale", "direct_scale_in", Halide::Float(32), image, true},
        {"direct_scale", "direct_scale_in", Halide::Float(32), image, true, {{"tile_rows", "2"}}},
        {"index_as_value", "index_value_in", Halide::Float(32), image, true},
        {"index_as_value", "index_value_in", Halide::Float(32), image, true, {{"tile_rows", "1"}}},
        {"row_argmax", "row_argmax_in", Halide::Int(32), rows, true},
        {"row_argmax", "row_argmax_in", Halide::Int(32), rows, true, {{"inline_reductions", "true"}}},
        // Boundaries at an edge inside a stick are refused (docs/scheduling.md, "Boundary conditions").
        {"user_edge_blur", "edge_blur_in", Halide::Float(32), image, false},
        {"user_blur", "blur_input", Halide::Float(32), image, false, {{"boundary", "zero"}}},
        {"user_blur", "blur_input", Halide::Float(32), image, false, {{"boundary", "clamp"}, {"tile_rows", "1"}}},
    };
}

double element(const Halide::Buffer<> &b, const std::vector<int> &at) {
    if (b.type() == Halide::Int(32)) return b.as<int32_t>()(at.data());
    return b.as<float>()(at.data());
}

TEST(NonWholeStickSweep, EveryUserGeneratorComputesTheHostFunctionOrRefuses) {
    const int height = 64;
    int compiled = 0, refused = 0;
    for (const SweepGenerator &g : generators()) {
        for (int width : {1000, 100, 33}) {
            std::map<std::string, std::string> params = g.extra;
            params["width"] = std::to_string(width);
            params["height"] = std::to_string(height);
            std::string label = std::string(g.name) + " width=" + std::to_string(width);
            for (const auto &[k, v] : g.extra) label += " " + k + "=" + v;
            Halide::Buffer<> in = random_buffer(g.input, Halide::Float(32), {width, height}, 17);
            const std::vector<int> out = g.out_extents(width, height);
            Halide::Buffer<> host = run_generator(g.name, params, false, g.out_type, out, in);
            Halide::Buffer<> spyre;
            try {
                spyre = run_generator(g.name, params, true, g.out_type, out,
                                      padded_copy(in, {(width + 31) / 32 * 32, height}));
            } catch (const Halide::CompileError &e) {
                const std::string what = e.what();
                EXPECT_FALSE(g.always_compiles) << label << " is refused: " << what;
                EXPECT_NE(what.find("Spyre"), std::string::npos) << label << ": a refusal that does not say why: " << what;
                refused++;
                continue;
            } catch (const Halide::RuntimeError &e) {
                ADD_FAILURE() << label << " compiled but failed to run: " << e.what();
                continue;
            }
            compiled++;
            int wrong = 0;
            const int rows_out = out.size() > 1 ? out[1] : 1;
            for (int j = 0; j < rows_out; j++) {
                for (int i = 0; i < out[0]; i++) {
                    std::vector<int> p = {i};
                    if (out.size() > 1) p.push_back(j);
                    const double h = element(host, p), s = element(spyre, p);
                    if (!(std::fabs(h - s) <= 1e-5 * (1 + std::fabs(h)))) {
                        if (wrong++ < 3) {
                            ADD_FAILURE() << label << " at (" << i << (out.size() > 1 ? ", " + std::to_string(j) : "")
                                          << "): spyre " << s << ", host " << h;
                        }
                    }
                }
            }
            EXPECT_EQ(wrong, 0) << label << ": the Spyre build computes another function than the host";
        }
    }
    std::cout << "[ sweep    ] " << compiled << " builds matched the host, " << refused << " were refused\n";
    EXPECT_GE(compiled, 24);  // the always_compiles rows at three widths
}

}  // namespace
}  // namespace spyre::testing
