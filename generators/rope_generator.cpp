// gen_rope: rotary position embedding in the rotate-half form (Llama, Granite
// in Hugging Face transformers), per token t and head h, half = d / 2, i < half:
//   out(i, h, t)        = x(i, h, t) cos(i, t) - x(i + half, h, t) sin(i, t)
//   out(i + half, h, t) = x(i + half, h, t) cos(i, t) + x(i, h, t) sin(i, t)
// Dimensions innermost first: x is (d, in_heads, tokens), out (d, heads, tokens)
// (in_heads = heads unless set); cos and sin are
// (half, tokens), the table rows of the tokens' positions, gathered by the
// caller (a prefill of positions 0..T-1 passes the tables' first T rows, a
// decode step the row of its position), in the dtype of x.
// GeneratorParams: d (even), heads, tokens, dtype (float16/float32; computes in
// float32 and rounds once), in_heads (0, the default: heads), heads_outermost
// (false); the Spyre
// schedule's knobs max_cores, double_buffer, tile_tokens.
//
// in_heads > heads: x has in_heads heads per token and only its first `heads`
// are rotated (into out) and read; the others are neither read nor copied.
// This rotates the Q and K heads of a fused QKV projection in place of its
// output, e.g. Granite-3-8B: x = qkv(128, 48, t) (32 query, 8 key and 8 value
// heads of each token) with heads=40 in_heads=48; out is (128, 40, t), the
// rotated query and key heads, and the value heads are read from qkv directly.
// Each core's DMA of its x tile is then `heads / cores along heads` heads of
// every token of the tile, strided by in_heads * d.
//
// heads_outermost=true lays out on the device with the heads outermost (then
// the tokens, then d): each head's tokens are one contiguous run, so out
// transposed to (d, tokens, heads) and cropped to a range of heads is an
// attention's (d, tokens, heads) Q or a key transpose's K, read in place
// (spyre_device_region_layout; apps/llm's prefill: no split copies). Values
// are unchanged; the host build ignores it.
//
// Formulation: the two halves are two update definitions of one Func over an
// RDom r of extent half, result(r) and result(r + half), each reading x at r
// and at r + half. On Spyre half must be whole sticks (d = 128: one fp16
// stick, two fp32 ones), so every access is a dense, stick-aligned vector:
// no index-dependent select and no shuffle, which the SFU backend does not
// have. Spyre builds pad tokens to whole tiles; the schedules are in
// schedules/rope_schedule.cpp.
#include <string>

#include "Halide.h"
#include "family_generator.h"
#include "rope_schedule.h"
#include "shape_limits.h"
#include "spyre_schedule.h"
#include "spyre_target.h"
#include "stock_legalization_rules.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Rope : public spyre::FamilyGenerator<Rope, spyre::RopeSpyreOptions, spyre::RopeSpyrePlan> {
public:
    GeneratorParam<int> d_size{"d", 128};
    GeneratorParam<int> heads{"heads", 32};
    GeneratorParam<int> tokens{"tokens", 1};
    GeneratorParam<int> in_heads{"in_heads", 0};  // heads of x per token (0: heads); the first `heads` are rotated
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<bool> heads_outermost{"heads_outermost", false};  // out's device order (h, t, d), outermost first
    // Knobs of the Spyre schedule (see RopeSpyreOptions); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_ROPE_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_ROPE_KNOBS, spyre::RopeSpyreOptions)

    Input<Buffer<>> *x = nullptr;       // x(d, in_heads, t)
    Input<Buffer<>> *cos_t = nullptr;   // cos(i, t), i < d / 2
    Input<Buffer<>> *sin_t = nullptr;   // sin(i, t)
    Output<Buffer<>> *out = nullptr;    // out(d, h, t)

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "rope: dtype must be float16 or float32, not " << t;
        _halide_user_assert((int)d_size >= 1 && (int)heads >= 1 && (int)tokens >= 1)
            << "rope: d, heads and tokens must be positive (got d=" << (int)d_size << " heads=" << (int)heads
            << " tokens=" << (int)tokens << ")";
        _halide_user_assert((int)in_heads >= 0 && ((int)in_heads == 0 || (int)in_heads >= (int)heads))
            << "rope: in_heads (the heads of x per token, of which the first `heads` are rotated) must be 0 (the "
               "default: heads) or at least heads=" << (int)heads << ", not " << (int)in_heads;
        _halide_user_assert((int)d_size % 2 == 0) << "rope: d must be even (rotate-half pairs i with i + d/2), not "
                                                  << (int)d_size;
        _halide_user_assert(!spyre::is_spyre() || ((int)d_size / 2) % spyre::stick_lanes(t) == 0)
            << "rope: for Spyre, half the head dim (d/2=" << (int)d_size / 2 << ") must be whole sticks of "
            << spyre::stick_lanes(t) << " " << t << " lanes (e.g. d=128), so both halves are stick-aligned vectors";
        (void)knob_options();  // every integer knob in [0, 2^20] or an error quoting it as given (schedule_knobs.h)
        const spyre::ShapeDim d{"d", d_size}, h{"heads", heads}, n{"tokens", tokens};
        const spyre::ShapeDim hx = (int)in_heads == 0 ? h : spyre::ShapeDim{"in_heads", in_heads};
        spyre::check_tensor_fits("rope", "x", {d, hx, n}, t);
        spyre::check_tensor_fits("rope", "cos", {{"d", (int)d_size / 2}, n}, t);
        x = add_input<Buffer<>>("x", t, 3);
        cos_t = add_input<Buffer<>>("cos", t, 2);
        sin_t = add_input<Buffer<>>("sin", t, 2);
        out = add_output<Buffer<>>("out", t, 3);
    }

    void generate() {
        const Type t = dtype;
        const int d = d_size, half = d / 2;
        plan_ = plan_for(knob_options());
        auto &f = f_;
        f.r = RDom(0, half, "r");
        const Expr lo = cast<float>((*x)(f.r, f.h, f.t)), hi = cast<float>((*x)(f.r + half, f.h, f.t));
        const Expr c = cast<float>((*cos_t)(f.r, f.t)), s = cast<float>((*sin_t)(f.r, f.t));
        f.result(f.d, f.h, f.t) = undef(t);
        f.result(f.r, f.h, f.t) = cast(t, lo * c - hi * s);
        f.result(f.r + half, f.h, f.t) = cast(t, hi * c + lo * s);
        (*out)(f.d, f.h, f.t) = f.result(f.d, f.h, f.t);
        f.out = *out;

        constrain_tensors();
    }

    // Spyre: tokens padded to whole tiles of the plan.
    void constrain_tensors() {
        const int d = d_size, half = d / 2, T = plan_.tile_tokens;
        const int x_heads = (int)in_heads == 0 ? (int)heads : (int)in_heads;
        spyre::constrain_tensor(*x, {d, x_heads, (int)tokens}, {1, 1, T});
        spyre::constrain_tensor(*cos_t, {half, (int)tokens}, {1, T});
        spyre::constrain_tensor(*sin_t, {half, (int)tokens}, {1, T});
        spyre::constrain_tensor(*out, {d, (int)heads, (int)tokens}, {1, 1, T});
        if (spyre::is_spyre() && heads_outermost) spyre::set_device_layout(*out, spyre::StickLayout{0, {1, 2, 0}});
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "spyre::RopeSpyreOptions";
    std::string family() const { return "rope"; }
    spyre::RopeSpyrePlan plan_for(const spyre::RopeSpyreOptions &o) const {
        return spyre::plan_rope_spyre(d_size, heads, tokens, dtype, o);
    }
    void schedule_spyre() {
        f_.x_in = x->in();
        f_.cos_in = cos_t->in();
        f_.sin_in = sin_t->in();
        spyre::schedule_rope_spyre(f_, plan_);
    }
    void schedule_host() { spyre::schedule_rope_host(f_, get_target()); }
    spyre::KnobValues shape_params() const {
        return {{"d", std::to_string((int)d_size)}, {"heads", std::to_string((int)heads)},
                {"tokens", std::to_string((int)tokens)}, {"in_heads", std::to_string((int)in_heads)},
                {"heads_outermost", (bool)heads_outermost ? "true" : "false"},
                {"dtype", spyre::dtype_param(dtype)}};
    }
    // Tokens per tile: 1 to 64, no more than the tokens.
    std::map<std::string, std::vector<int>> knob_candidates() const {
        std::vector<int> tiles = {0};
        for (int c : {1, 2, 4, 8, 16, 32, 64}) {
            if (c <= (int)tokens) tiles.push_back(c);
        }
        return {{"tile_tokens", tiles}};
    }
    std::string describe(const spyre::RopeSpyrePlan &p) const {
        return "tiles of " + std::to_string(p.tile_tokens) + " tokens (tokens padded to " + std::to_string(p.tokens_padded) +
               "), cores " + std::to_string(p.ct) + " x " + std::to_string(p.ch) + " (tokens x heads), " +
               spyre::buffering_and_footprint(p.double_buffer, p.footprint_bytes);
    }
    // A stock autoscheduler's decisions: its tile of out along the tokens as tile_tokens (shrunk
    // to fit), the rotated result fused per tile, one static core split and whole-stick vectors.
    spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d, std::vector<std::string> *kept,
                                     std::vector<std::string> *changed) {
        const std::string o = Func(*out).name();
        spyre::RopeSpyreOptions start;
        start.double_buffer = false;
        spyre::KnobValues v = spyre::knob_values(start);
        spyre::legalize_tile_rows(
            d.tile(o, 0, f_.t.name()), (int)tokens, v, [&](const spyre::KnobValues &kv) { (void)plan_for(options_from(kv)); },
            kept, "tile_tokens", "t");
        spyre::legalize_fusion(d, f_.result, o, f_.t.name(), "per tile of tokens in the scratchpad", kept, changed);
        spyre::legalize_parallel_and_vectors(d, o, spyre::stick_lanes(dtype), kept, changed);
        return v;
    }
    std::string schedule_call() const {
        return "f_.x_in = x->in();\n"
               "f_.cos_in = cos_t->in();\n"
               "f_.sin_in = sin_t->in();\n"
               "spyre::schedule_rope_spyre(f_, spyre::plan_rope_spyre(d, heads, tokens, dtype, options));\n";
    }

private:
    spyre::RopeFuncs f_{Func(), Func("result"), Func(), Func(), Func(), RDom(), Var("d"), Var("h"), Var("t")};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Rope, rope)
