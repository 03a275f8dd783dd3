// Randomized schedules of the row-wise kernel families (gen_softmax,
// gen_layernorm, gen_rmsnorm, gen_rope; gen_attention, row-wise per query
// tile; gen_conv2d, row-wise per output row tile)
// checked against the host build: the same property test as
// randomized_schedule_test.cpp (random shapes, ragged ones included; random
// schedules through the generator's knobs, with the planner as the legality
// filter; each schedule run in the three synchronization modes, which must
// agree bit for bit, and compared with the host build of the same generator).
#include <gtest/gtest.h>

#include <algorithm>

#include "attention_schedule.h"
#include "conv2d_schedule.h"
#include "jit_helpers.h"
#include "norm_schedule.h"
#include "randomized_schedule_draws.h"
#include "rope_schedule.h"
#include "softmax_schedule.h"

namespace spyre::testing {
namespace {

using namespace randomized;

// ---- softmax: rows per tile, whole-row SFU vectors, cores, double buffering ----
// (a quarter of the shapes over the rows, axis=1: tiles of columns; its own draw, so the
// axis-0 shapes and schedules of a seed stay those they were)

TEST(RandomizedSchedules, Softmax) {
    DrawCounts counts;
    for (int index : shape_indices(shapes_per_family(20))) {
        std::mt19937_64 rng = rng_for("softmax", index);
        std::mt19937_64 axis_rng = rng_for("softmax_axis", index);
        const int axis = uniform(axis_rng, 0, 3) == 0 ? 1 : 0;
        const std::string dtype = coin(rng) ? "float16" : "float32";
        const Halide::Type t = dtype_of(dtype);
        const int cols = uniform(rng, 1, 700), rows = uniform(rng, 1, 90);
        const Params shape_params = {{"cols", std::to_string(cols)}, {"rows", std::to_string(rows)}, {"dtype", dtype},
                                     {"axis", std::to_string(axis)}};
        auto draw = [&](std::mt19937_64 &r) {
            return Params{{"max_cores", std::to_string(draw_max_cores(r))},
                          {"tile_rows", std::to_string(coin(r) ? 0 : uniform(r, 1, std::min(rows, 16)))},
                          {"row_vectors", coin(r) ? "true" : "false"},
                          {"double_buffer", coin(r) ? "true" : "false"}};
        };
        auto options_of = [](const Params &p) {
            SoftmaxSpyreOptions o;
            o.max_cores = std::stoi(p.at("max_cores"));
            o.tile_rows = std::stoi(p.at("tile_rows"));
            o.row_vectors = p.at("row_vectors") == "true";
            o.double_buffer = p.at("double_buffer") == "true";
            return o;
        };
        const std::vector<Params> schedules = draw_schedules(
            rng, draw, [&](const Params &p) { return plan_softmax_spyre(cols, rows, t, options_of(p), axis).tile_rows > 0; },
            counts);

        Halide::Buffer<> in = random_buffer("in", t, {cols, rows}, 900 + index);
        scale(in, 4.0f);  // exponentials that differ a lot within a row
        const std::vector<int> out_extents = {cols, rows};
        Halide::Pipeline host_p = build_generator("softmax", shape_params, false, in);
        const Halide::Buffer<> host = realize_generator(host_p, false, t, out_extents);
        // exp is approximated differently on the host; fp16 outputs round once.
        const double tol = t == Halide::Float(32) ? 2e-5 : 2e-3;

        for (const Params &knobs : schedules) {
            const Params params = merged(shape_params, knobs);
            SCOPED_TRACE(replay_hint("softmax", "Softmax", index, params));
            set_compiling_for_spyre(true);
            const SoftmaxSpyrePlan plan = plan_softmax_spyre(cols, rows, t, options_of(knobs), axis);
            set_compiling_for_spyre(false);
            try {
                Halide::Pipeline p = build_generator("softmax", params, true, padded_copy(in, {plan.cols_padded, plan.rows_padded}));
                const Halide::Buffer<> spyre = run_in_every_sync_mode(p, t, out_extents, kSeed + index);
                double max_err = 0;
                for (int y = 0; y < rows; y++)
                    for (int x = 0; x < cols; x++)
                        max_err = std::max(max_err, std::fabs(value_at(host, x, y, 0) - value_at(spyre, x, y, 0)));
                EXPECT_LE(max_err, tol) << "plan: axis " << axis << ", " << plan.tile_rows << " rows per tile ("
                                        << plan.tile_cols << " columns over the rows) on " << plan.cores
                                        << " cores, row vectors " << plan.row_vectors << ", double buffer "
                                        << plan.double_buffer;
            } catch (const std::exception &e) {
                ADD_FAILURE() << "a schedule the planner accepted failed: " << e.what();
            }
        }
    }
    expect_mostly_accepted(counts, "softmax");
}

// ---- layernorm and rmsnorm: rows per tile, cores, double buffering ----

TEST(RandomizedSchedules, Norms) {
    DrawCounts counts;
    for (int index : shape_indices(shapes_per_family(20))) {
        std::mt19937_64 rng = rng_for("norm", index);
        const std::string kernel = coin(rng) ? "layernorm" : "rmsnorm";
        const bool centered = kernel == "layernorm";
        const std::string dtype = coin(rng) ? "float16" : "float32";
        const Halide::Type t = dtype_of(dtype);
        const int cols = uniform(rng, 1, 700), rows = uniform(rng, 1, 90);
        const Params shape_params = {{"cols", std::to_string(cols)}, {"rows", std::to_string(rows)}, {"dtype", dtype}};
        auto draw = [&](std::mt19937_64 &r) {
            return Params{{"max_cores", std::to_string(draw_max_cores(r))},
                          {"tile_rows", std::to_string(coin(r) ? 0 : uniform(r, 1, std::min(rows, 16)))},
                          {"double_buffer", coin(r) ? "true" : "false"}};
        };
        auto options_of = [](const Params &p) {
            NormSpyreOptions o;
            o.max_cores = std::stoi(p.at("max_cores"));
            o.tile_rows = std::stoi(p.at("tile_rows"));
            o.double_buffer = p.at("double_buffer") == "true";
            return o;
        };
        const std::vector<Params> schedules = draw_schedules(
            rng, draw,
            [&](const Params &p) { return plan_norm_spyre(cols, rows, t, centered, options_of(p)).tile_rows > 0; },
            counts);

        Halide::Buffer<> in = random_buffer("in", t, {cols, rows}, 1300 + index);
        scale(in, 1.0f, 0.5f);  // a non-zero mean, so centering matters
        Halide::Buffer<> weight = random_buffer("weight", t, {cols}, 1400 + index);
        Halide::Buffer<> bias = random_buffer("bias", t, {cols}, 1500 + index);
        const Halide::Expr eps(1e-5f);
        const std::vector<int> out_extents = {cols, rows};
        Halide::Pipeline host_p = centered ? build_generator(kernel, shape_params, false, in, weight, bias, eps)
                                           : build_generator(kernel, shape_params, false, in, weight, eps);
        const Halide::Buffer<> host = realize_generator(host_p, false, t, out_extents);
        // Row sums in another order on each side (float32 error grows with the row); fp16 rounds once.
        const double ulp = t == Halide::Float(32) ? 1.2e-7 : 9.8e-4;
        const double tol = t == Halide::Float(32) ? 8.0 * ulp * std::sqrt((double)cols) + 1e-6 : 2.0 * ulp;

        for (const Params &knobs : schedules) {
            const Params params = merged(shape_params, knobs);
            SCOPED_TRACE(replay_hint(kernel, "Norms", index, params));
            set_compiling_for_spyre(true);
            const NormSpyrePlan plan = plan_norm_spyre(cols, rows, t, centered, options_of(knobs));
            set_compiling_for_spyre(false);
            try {
                Halide::Buffer<> in_p = padded_copy(in, {plan.cols_padded, plan.rows_padded});
                Halide::Buffer<> weight_p = padded_copy(weight, {plan.cols_padded});
                Halide::Buffer<> bias_p = padded_copy(bias, {plan.cols_padded});
                Halide::Pipeline p = centered ? build_generator(kernel, params, true, in_p, weight_p, bias_p, eps)
                                              : build_generator(kernel, params, true, in_p, weight_p, eps);
                const Halide::Buffer<> spyre = run_in_every_sync_mode(p, t, out_extents, kSeed + index);
                double max_err = 0;
                for (int y = 0; y < rows; y++)
                    for (int x = 0; x < cols; x++) {
                        const double h = value_at(host, x, y, 0);
                        max_err = std::max(max_err, std::fabs(h - value_at(spyre, x, y, 0)) / std::max(1.0, std::fabs(h)));
                    }
                EXPECT_LE(max_err, tol) << "plan: " << plan.tile_rows << " rows per tile on " << plan.cores
                                        << " cores, double buffer " << plan.double_buffer;
            } catch (const std::exception &e) {
                ADD_FAILURE() << "a schedule the planner accepted failed: " << e.what();
            }
        }
    }
    expect_mostly_accepted(counts, "layernorm and rmsnorm");
}

// ---- rope: tokens per tile, cores, double buffering; heads read out of a wider x ----

TEST(RandomizedSchedules, Rope) {
    DrawCounts counts;
    for (int index : shape_indices(shapes_per_family(20))) {
        std::mt19937_64 rng = rng_for("rope", index);
        const std::string dtype = coin(rng) ? "float16" : "float32";
        const Halide::Type t = dtype_of(dtype);
        const int lanes = t == Halide::Float(16) ? 64 : 32;
        const int d = 2 * lanes * uniform(rng, 1, 2);  // half must be whole sticks
        const int heads = uniform(rng, 1, 6), in_heads = heads + (coin(rng) ? 0 : uniform(rng, 1, 3));
        const int tokens = uniform(rng, 1, 40);
        Params shape_params = {{"d", std::to_string(d)},
                               {"heads", std::to_string(heads)},
                               {"tokens", std::to_string(tokens)},
                               {"dtype", dtype}};
        if (in_heads != heads) shape_params["in_heads"] = std::to_string(in_heads);
        auto draw = [&](std::mt19937_64 &r) {
            return Params{{"max_cores", std::to_string(draw_max_cores(r))},
                          {"tile_tokens", std::to_string(coin(r) ? 0 : uniform(r, 1, std::min(tokens, 12)))},
                          {"double_buffer", coin(r) ? "true" : "false"}};
        };
        auto options_of = [](const Params &p) {
            RopeSpyreOptions o;
            o.max_cores = std::stoi(p.at("max_cores"));
            o.tile_tokens = std::stoi(p.at("tile_tokens"));
            o.double_buffer = p.at("double_buffer") == "true";
            return o;
        };
        const std::vector<Params> schedules = draw_schedules(
            rng, draw,
            [&](const Params &p) { return plan_rope_spyre(d, heads, tokens, t, options_of(p)).tile_tokens > 0; }, counts);

        const int half = d / 2;
        Halide::Buffer<> x = random_buffer("x", t, {d, in_heads, tokens}, 1000 + index);
        Halide::Buffer<> cos = random_buffer("cos", t, {half, tokens}, 1100 + index);
        Halide::Buffer<> sin = random_buffer("sin", t, {half, tokens}, 1200 + index);
        const std::vector<int> out_extents = {d, heads, tokens};
        Halide::Pipeline host_p = build_generator("rope", shape_params, false, x, cos, sin);
        const Halide::Buffer<> host = realize_generator(host_p, false, t, out_extents);
        // Two products and a sum in fp32, rounded once, in both builds.
        const double tol = t == Halide::Float(32) ? 1e-6 : 1e-3;

        for (const Params &knobs : schedules) {
            const Params params = merged(shape_params, knobs);
            SCOPED_TRACE(replay_hint("rope", "Rope", index, params));
            set_compiling_for_spyre(true);
            const RopeSpyrePlan plan = plan_rope_spyre(d, heads, tokens, t, options_of(knobs));
            set_compiling_for_spyre(false);
            try {
                Halide::Pipeline p = build_generator("rope", params, true, padded_copy(x, {d, in_heads, plan.tokens_padded}),
                                                     padded_copy(cos, {half, plan.tokens_padded}),
                                                     padded_copy(sin, {half, plan.tokens_padded}));
                const Halide::Buffer<> spyre = run_in_every_sync_mode(p, t, out_extents, kSeed + index);
                double max_err = 0;
                for (int k = 0; k < tokens; k++)
                    for (int h = 0; h < heads; h++)
                        for (int i = 0; i < d; i++)
                            max_err = std::max(max_err, std::fabs(value_at(host, i, h, k) - value_at(spyre, i, h, k)));
                EXPECT_LE(max_err, tol) << "plan: " << plan.tile_tokens << " tokens per tile, cores " << plan.ct << "x"
                                        << plan.ch << ", double buffer " << plan.double_buffer;
            } catch (const std::exception &e) {
                ADD_FAILURE() << "a schedule the planner accepted failed: " << e.what();
            }
        }
    }
    expect_mostly_accepted(counts, "rope");
}

// ---- attention: queries per tile, cores, double buffering; KV tile, causal, q != s drawn with the shape ----

TEST(RandomizedSchedules, Attention) {
    DrawCounts counts;
    for (int index : shape_indices(shapes_per_family(12))) {
        std::mt19937_64 rng = rng_for("attention", index);
        const std::string dtype = coin(rng) ? "float16" : "float32";
        const Halide::Type t = dtype_of(dtype);
        const int lanes = t == Halide::Float(16) ? 64 : 32;
        const int d = uniform(rng, 1, 130), s = uniform(rng, 1, 200), heads = uniform(rng, 1, 3);
        const bool causal = coin(rng);
        const int q = coin(rng) ? 0 : uniform(rng, 1, std::min(s, 70));  // q <= s, as causal needs
        const int rows = q == 0 ? s : q;
        const int kv_tile = coin(rng) ? 0 : lanes * uniform(rng, 1, 2);  // part of the algorithm: both builds
        const Params shape_params = {{"d", std::to_string(d)},         {"s", std::to_string(s)},
                                     {"q", std::to_string(q)},         {"heads", std::to_string(heads)},
                                     {"dtype", dtype},                 {"causal", causal ? "true" : "false"},
                                     {"kv_tile", std::to_string(kv_tile)}};
        auto draw = [&](std::mt19937_64 &r) {
            return Params{{"max_cores", std::to_string(draw_max_cores(r))},
                          {"tile", std::to_string(coin(r) ? 0 : lanes * uniform(r, 1, 2))},
                          {"double_buffer", coin(r) ? "true" : "false"}};
        };
        auto options_of = [&](const Params &p) {
            AttentionSpyreOptions o;
            o.max_cores = std::stoi(p.at("max_cores"));
            o.tile = std::stoi(p.at("tile"));
            o.double_buffer = p.at("double_buffer") == "true";
            o.kv_tile = kv_tile;
            return o;
        };
        const std::vector<Params> schedules = draw_schedules(
            rng, draw, [&](const Params &p) { return plan_attention_spyre(d, s, heads, q, t, options_of(p)).sp > 0; },
            counts);

        // Q and K in [-2, 2): scores of a few units, a softmax far from uniform.
        Halide::Buffer<> Q = random_buffer("Q", t, {d, rows, heads}, 1600 + index);
        Halide::Buffer<> Kt = random_buffer("Kt", t, {s, d, heads}, 1700 + index);
        Halide::Buffer<> V = random_buffer("V", t, {d, s, heads}, 1800 + index);
        scale(Q, 2.0f);
        scale(Kt, 2.0f);
        const std::vector<int> out_extents = {d, rows, heads};
        Halide::Pipeline host_p = build_generator("attention", shape_params, false, Q, Kt, V);
        const Halide::Buffer<> host = realize_generator(host_p, false, t, out_extents);
        const double red = std::sqrt((double)s) + std::sqrt((double)d);
        const double tol = t == Halide::Float(32) ? 2e-6 * red + 1e-6 : 1e-3 + 1e-4 * red;

        for (const Params &knobs : schedules) {
            const Params params = merged(shape_params, knobs);
            SCOPED_TRACE(replay_hint("attention", "Attention", index, params));
            set_compiling_for_spyre(true);
            const AttentionSpyrePlan plan = plan_attention_spyre(d, s, heads, q, t, options_of(knobs));
            set_compiling_for_spyre(false);
            try {
                Halide::Pipeline p = build_generator("attention", params, true, padded_copy(Q, {plan.dp, plan.qp, heads}),
                                                     padded_copy(Kt, {plan.sp, plan.dp, heads}),
                                                     padded_copy(V, {plan.dp, plan.sp, heads}));
                const Halide::Buffer<> spyre = run_in_every_sync_mode(p, t, out_extents, kSeed + index);
                double max_err = 0;
                for (int h = 0; h < heads; h++)
                    for (int i = 0; i < rows; i++)
                        for (int x = 0; x < d; x++)
                            max_err = std::max(max_err, std::fabs(value_at(host, x, i, h) - value_at(spyre, x, i, h)));
                EXPECT_LE(max_err, tol) << "plan: KV tile " << plan.kv_tile << ", padded queries " << plan.qp;
            } catch (const std::exception &e) {
                ADD_FAILURE() << "a schedule the planner accepted failed: " << e.what();
            }
        }
    }
    expect_mostly_accepted(counts, "attention");
}

// ---- conv2d: output tile (channels, pixels, rows), cores, ring sharing, double buffering ----

TEST(RandomizedSchedules, Conv2d) {
    DrawCounts counts;
    for (int index : shape_indices(shapes_per_family(12))) {
        std::mt19937_64 rng = rng_for("conv2d", index);
        const std::string dtype = coin(rng) ? "float16" : "float32";
        const Halide::Type t = dtype_of(dtype);
        const std::string act = coin(rng) ? "relu" : "none";
        const int kw = uniform(rng, 1, 3), kh = uniform(rng, 1, 3);
        const Conv2dShape shape{uniform(rng, 1, 70), uniform(rng, 1, 90), uniform(rng, kw, 20), uniform(rng, kh, 14),
                                kw, kh, uniform(rng, 1, 2), t, act == "relu" ? Activation::Relu : Activation::None};
        const Params shape_params = {{"ci", std::to_string(shape.ci)},       {"co", std::to_string(shape.co)},
                                     {"width", std::to_string(shape.width)}, {"height", std::to_string(shape.height)},
                                     {"kw", std::to_string(kw)},             {"kh", std::to_string(kh)},
                                     {"batch", std::to_string(shape.batch)}, {"dtype", dtype},
                                     {"activation", act}};
        const int lanes = t == Halide::Float(16) ? 64 : 32;
        auto draw = [&](std::mt19937_64 &r) {
            return Params{{"max_cores", std::to_string(draw_max_cores(r))},
                          {"tile_co", std::to_string(coin(r) ? 0 : lanes * uniform(r, 1, 2))},
                          {"tile_x", std::to_string(coin(r) ? 0 : 8 * uniform(r, 1, 3))},
                          {"tile_y", std::to_string(coin(r) ? 0 : uniform(r, 1, 4))},
                          {"share_input", coin(r) ? "true" : "false"},
                          {"share_weights", coin(r) ? "true" : "false"},
                          {"double_buffer", coin(r) ? "true" : "false"}};
        };
        auto options_of = [](const Params &p) {
            Conv2dSpyreOptions o;
            o.max_cores = std::stoi(p.at("max_cores"));
            o.tile_co = std::stoi(p.at("tile_co"));
            o.tile_x = std::stoi(p.at("tile_x"));
            o.tile_y = std::stoi(p.at("tile_y"));
            o.share_input = p.at("share_input") == "true";
            o.share_weights = p.at("share_weights") == "true";
            o.double_buffer = p.at("double_buffer") == "true";
            return o;
        };
        const std::vector<Params> schedules = draw_schedules(
            rng, draw, [&](const Params &p) { return plan_conv2d_spyre(shape, options_of(p)).tn > 0; }, counts);

        const int ow = shape.width - kw + 1, oh = shape.height - kh + 1;
        Halide::Buffer<> in = random_buffer("input", t, {shape.ci, shape.width, shape.height, shape.batch}, 1900 + index);
        Halide::Buffer<> w = random_buffer("weights", t, {shape.co, shape.ci, kw, kh}, 2000 + index);
        Halide::Buffer<> bias = random_buffer("bias", t, {shape.co}, 2100 + index);
        const std::vector<int> out_extents = {shape.co, ow, oh, shape.batch};
        Halide::Pipeline host_p = build_generator("conv2d", shape_params, false, in, w, bias);
        const Halide::Buffer<> host = realize_generator(host_p, false, t, out_extents);
        const int K = shape.ci * kw * kh;
        const double ulp = t == Halide::Float(32) ? 1.2e-7 : 9.8e-4;
        const double tol = (t == Halide::Float(32) ? 4.0 * K * ulp : 2.0 * ulp) * std::sqrt((double)K) + 2e-6;

        for (const Params &knobs : schedules) {
            const Params params = merged(shape_params, knobs);
            SCOPED_TRACE(replay_hint("conv2d", "Conv2d", index, params));
            set_compiling_for_spyre(true);
            const Conv2dSpyrePlan plan = plan_conv2d_spyre(shape, options_of(knobs));
            set_compiling_for_spyre(false);
            try {
                Halide::Pipeline p = build_generator(
                    "conv2d", params, true, padded_copy(in, {plan.cip, plan.in_xp, plan.in_yp, shape.batch}),
                    padded_copy(w, {plan.cop, plan.cip, kw, kh}), padded_copy(bias, {plan.cop}));
                const Halide::Buffer<> spyre = run_in_every_sync_mode(p, t, out_extents, kSeed + index);
                EXPECT_LE(max_relative_error(host, spyre), tol)
                    << "plan: tiles " << plan.tn << "x" << plan.tx << "x" << plan.ty << " on " << plan.cores() << " cores";
            } catch (const std::exception &e) {
                ADD_FAILURE() << "a schedule the planner accepted failed: " << e.what();
            }
        }
    }
    expect_mostly_accepted(counts, "conv2d");
}

}  // namespace
}  // namespace spyre::testing
