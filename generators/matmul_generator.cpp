// Matrix multiply with a fused epilogue:
//   C(n, m) = act(sum_k A(k, m) * B(n, k) + bias(n)) [+ R(n, m)],  act in {none, relu, gelu, silu},
// or the SwiGLU gate of two accumulator columns (activation=swiglu, below)
// gelu is the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));
// silu is x / (1 + exp(-x)). Shapes are static (GeneratorParams), innermost
// dimension first; fp16 kernels accumulate in fp32 and round once. The bias is
// the accumulator's initial value. For Spyre builds K is padded to whole
// sticks identically in A and B and the reduction runs over the padded K (the
// padding holds zeros). The activations are written as chains of updates that
// read each value once. A value used twice in one expression would compile too
// (the vector let Halide's CSE makes of it is computed once into a scratchpad
// temporary); the chains predate that and are kept so the programs stay the same.
// residual=true (default false) adds one more input after the bias, R(n, m),
// of C's type and shape (and, for Spyre, C's padded device layout), added
// after the activation:
//   C(n, m) = act(sum_k A(k, m) * B(n, k) + bias(n)) + R(n, m)
// in fp32, rounded once (fp16 R is widened first): a transformer layer's
// output or down projection with its residual add, without writing C and
// reading it back for a separate elementwise add. On Spyre each core loads
// the R tile of each output tile into scratchpad (one DMA at the tile's start,
// before the bias) and the SFU adds it before C's tile is stored; the planner
// counts the R tile in the footprint and its loads in the estimate. It
// combines with every activation, dtype and knob. residual=false compiles the
// same programs as before the parameter existed.
// shared_weight_layout=true pads B and the bias along N to whole blocks of
// (stick lanes x the machine's cores) columns rather than to the plan's tiles,
// and plans only tilings whose padded N fits: the layout then depends on N, the
// type and the machine alone, so an app that runs one weight through kernels
// of several M (apps/llm's prefill and decode) places it once. The planner then
// also keeps M padded to whole 8-row PT passes only (tiles that divide it), so
// A, C and R have the layout of the kernels around the matmul.
// activation=swiglu: C(n, m) = silu(gate) * up of two accumulator columns, B and
// the bias 2 n wide with the gate's and the up projection's columns alternating
// in blocks of 64 (spyre::kSwigluBlock; n a multiple of it): a SwiGLU MLP's gate
// and up projections with the gate as the epilogue, C written once at half the
// width. On Spyre each tile's accumulator holds whole block pairs and the
// epilogue runs one SFU instruction per block (schedules/matmul_schedule.h).
// row_scale=true (default false) adds one more input after the bias, scale(m),
// float32, one factor per row of C, which multiplies the product before the
// bias joins it:
//   C(n, m) = act(scale(m) * sum_k A(k, m) * B(n, k) + bias(n)) [+ R(n, m)]
// An RMSNorm folded into the projection after it: rmsnorm(x) . W =
// scale * (x . (g W)) with scale(m) = 1 / sqrt(mean_k x(k, m)^2 + eps)
// (gen_rmsnorm output=inverse_rms) and the norm's weight g folded into W's
// rows, so the normalized activations are never written (apps/llm). The
// accumulator then starts at zero, and the epilogue's first stage is
// scaled = acc * scale(m) + bias(n) over the accumulator's columns (with
// swiglu the gate's and the up projection's alike); scale is staged once per
// core. Not with dtype=int8 (int32 results have no float scale).
// dtype=int8: A and B are int8, the bias, R and C int32, and the accumulation
// is exact int32 arithmetic with two's-complement wrap-around, like the host's
// Halide int32 (the algorithm is the natural acc += i32(A) * i32(B), which
// Halide 14 rewrites to i32(widening_mul(A, B)); on Spyre it is the PT's int8
// matmul into int32, docs/scheduling.md "int8 on the PT"). Activation none or
// relu (an integer max); gelu and silu are refused: requantize first.
// The schedules are in schedules/matmul_schedule.cpp.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "Halide.h"
#include "family_generator.h"
#include "matmul_schedule.h"
#include "schedule_arithmetic.h"
#include "shape_limits.h"
#include "stock_legalization_rules.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;
using spyre::Activation;

class Matmul : public spyre::FamilyGenerator<Matmul, spyre::MatmulSpyreOptions, spyre::MatmulSpyrePlan> {
public:
    GeneratorParam<int> m_size{"m", 512};
    GeneratorParam<int> n_size{"n", 512};
    GeneratorParam<int> k_size{"k", 512};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<Activation> activation{"activation", Activation::None,
                                          {{"none", Activation::None},
                                           {"relu", Activation::Relu},
                                           {"gelu", Activation::Gelu},
                                           {"silu", Activation::Silu},
                                           {"swiglu", Activation::Swiglu}}};
    // Knobs of the Spyre schedule (SPYRE_MATMUL_KNOBS); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_MATMUL_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_MATMUL_KNOBS, spyre::MatmulSpyreOptions)
    // A residual R(n, m) added after the activation (see the header comment).
    GeneratorParam<bool> residual{"residual", false};
    // B and the bias in a layout that depends on N, the type and the machine only, so
    // kernels of one weight at several M read one copy of it (MatmulShape::shared_weight_layout).
    GeneratorParam<bool> shared_weight_layout{"shared_weight_layout", false};
    // A float32 factor per row of C, scale(m), multiplying the product (see the header comment).
    GeneratorParam<bool> row_scale{"row_scale", false};

    // Added in configure() because their type is a GeneratorParam.
    Input<Buffer<>> *A = nullptr;     // A(k, m)
    Input<Buffer<>> *B = nullptr;     // B(n, k)
    Input<Buffer<>> *bias = nullptr;  // bias(n)
    Input<Buffer<>> *S = nullptr;     // scale(m), row_scale=true only
    Input<Buffer<>> *R = nullptr;     // R(n, m), residual=true only
    Output<Buffer<>> *C = nullptr;    // C(n, m)

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32) || t == Int(8))
            << "matmul: dtype must be float16, float32 or int8, not " << t;
        _halide_user_assert(t != Int(8) || activation == Activation::None || activation == Activation::Relu)
            << "matmul: dtype=int8 (int32 results) supports activation none or relu, not gelu, silu or swiglu: those are "
               "float functions; requantize the int32 result to float first (a separate elementwise kernel)";
        const bool swiglu = activation == Activation::Swiglu;
        _halide_user_assert(!swiglu || (int)n_size % spyre::kSwigluBlock == 0)
            << "matmul: activation=swiglu needs n (C's columns, half of B's) to be a multiple of "
            << spyre::kSwigluBlock << " (B's gate and up columns alternate in blocks of " << spyre::kSwigluBlock
            << "), not n=" << (int)n_size;
        const Type out_t = spyre::matmul_output_type(spyre::MatmulShape{1, 1, 1, t});
        _halide_user_assert(t != Int(8) || !row_scale)
            << "matmul: row_scale=true needs float operands (dtype float16 or float32), not int8: the int32 results "
               "have no float scale; requantize first";
        _halide_user_assert((int)m_size >= 1 && (int)n_size >= 1 && (int)k_size >= 1)
            << "matmul: m, n and k must be positive (got m=" << (int)m_size << " n=" << (int)n_size << " k=" << (int)k_size << ")";
        _halide_user_assert((int)max_cores >= 0) << "matmul: max_cores must be >= 0 (0: the machine's core count), not " << (int)max_cores;
        _halide_user_assert((int)tile_m >= 0 && (int)tile_n >= 0)
            << "matmul: tile_m and tile_n must be >= 0 (0: chosen by the planner), not tile_m=" << (int)tile_m
            << " tile_n=" << (int)tile_n;
        (void)knob_options();  // every knob in its range or among its values (schedule_knobs.h)
        const spyre::ShapeDim m{"m", m_size}, n{"n", n_size}, k{"k", k_size};
        const spyre::ShapeDim acc_n{swiglu ? "2 n" : "n", (swiglu ? 2 : 1) * (int64_t)(int)n_size};
        spyre::check_tensor_fits("matmul", "A", {k, m}, t);
        spyre::check_tensor_fits("matmul", "B", {acc_n, k}, t);
        spyre::check_tensor_fits("matmul", "C", {n, m}, out_t);
        A = add_input<Buffer<>>("A", t, 2);
        B = add_input<Buffer<>>("B", t, 2);
        bias = add_input<Buffer<>>("bias", out_t, 1);
        if (row_scale) S = add_input<Buffer<>>("scale", Float(32), 1);
        if (residual) {
            spyre::check_tensor_fits("matmul", "R", {n, m}, out_t);
            R = add_input<Buffer<>>("R", out_t, 2);
        }
        C = add_output<Buffer<>>("C", out_t, 2);
    }

    void generate() {
        shape_ = spyre::MatmulShape{m_size, n_size, k_size, dtype, activation, residual, shared_weight_layout, row_scale};
        plan_ = plan_for(knob_options());
        const Type in_t = shape_.dtype, t = spyre::matmul_output_type(shape_);
        // fp16/fp32 accumulate in fp32; int8 in int32 (exact, wrapping like any Halide int32).
        const Type acc_t = in_t == Int(8) ? Int(32) : Float(32);

        // Reduce over the padded K (== K for host builds).
        k_ = RDom(0, spyre::padded_extent(shape_.k, spyre::stick_lanes(in_t)), "k");
        bias_f_(n_) = cast(acc_t, (*bias)(n_));
        // The bias is the accumulator's initial value, or with a row scale joins after it.
        acc_(n_, m_) = S ? Internal::make_zero(acc_t) : bias_f_(n_);
        acc_(n_, m_) += cast(acc_t, (*A)(k_, m_)) * cast(acc_t, (*B)(n_, k_));
        Func pre = acc_;  // the pre-activation value of every accumulator column
        if (S) {
            scaled_(n_, m_) = acc_(n_, m_) * (*S)(m_) + bias_f_(n_);
            pre = scaled_;
        }

        // swiglu: the gate's and the up projection's columns of C's column n (kSwigluBlock).
        const Expr gate_col = n_ + spyre::kSwigluBlock * (n_ / spyre::kSwigluBlock);
        const Expr x = shape_.activation == Activation::Swiglu ? pre(gate_col, m_) : pre(n_, m_);
        // The residual joins the fp32 value after the activation; the cast rounds once.
        auto plus_residual = [&](const Expr &y) { return R ? y + cast(acc_t, (*R)(n_, m_)) : y; };
        switch (shape_.activation) {
        case Activation::None:
            result_(n_, m_) = cast(t, plus_residual(x));
            break;
        case Activation::Relu:
            result_(n_, m_) = cast(t, plus_residual(max(x, Internal::make_zero(acc_t))));
            break;
        case Activation::Gelu: {
            // g = x (c0 + c1 x^2), then 0.5 (1 + tanh(g)); result = x * that.
            const float c0 = 0.7978845608f, c1 = 0.7978845608f * 0.044715f;
            act_(n_, m_) = x * c1;
            act_(n_, m_) = act_(n_, m_) * x + c0;
            act_(n_, m_) = act_(n_, m_) * x;
            act_(n_, m_) = tanh(act_(n_, m_)) * 0.5f + 0.5f;
            result_(n_, m_) = cast(t, plus_residual(act_(n_, m_) * x));
            break;
        }
        case Activation::Silu:
            act_(n_, m_) = exp(-x) + 1.0f;
            result_(n_, m_) = cast(t, plus_residual(x / act_(n_, m_)));
            break;
        case Activation::Swiglu:
            act_(n_, m_) = exp(-x) + 1.0f;
            result_(n_, m_) = cast(t, plus_residual(x / act_(n_, m_) * pre(gate_col + spyre::kSwigluBlock, m_)));
            break;
        }
        (*C)(n_, m_) = result_(n_, m_);

        constrain_tensors();
    }

    // Multiples are the Spyre tiles (ignored by host builds); K of A and B
    // is padded identically, to whole input sticks; B's and the bias's N to
    // the plan's bp (its np, or the shared weight layout's wider extent);
    // C's and R's to the plan's c_np (np, or half of it with swiglu).
    void constrain_tensors() {
        const int acc_n = spyre::matmul_acc_columns(shape_);
        spyre::constrain_tensor(*A, {shape_.k, shape_.m}, {plan_.in_lanes, plan_.mp});
        spyre::constrain_tensor(*B, {acc_n, shape_.k}, {plan_.bp, plan_.in_lanes});
        spyre::constrain_tensor(*bias, {acc_n}, {plan_.bp});
        spyre::constrain_tensor(*C, {shape_.n, shape_.m}, {plan_.c_np, plan_.mp});
        if (R) spyre::constrain_tensor(*R, {shape_.n, shape_.m}, {plan_.c_np, plan_.mp});
        if (S) spyre::constrain_tensor(*S, {shape_.m}, {plan_.mp});
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "spyre::MatmulSpyreOptions";
    std::string family() const { return "matmul"; }
    spyre::MatmulSpyrePlan plan_for(const spyre::MatmulSpyreOptions &o) const { return spyre::plan_matmul_spyre(shape_, o); }
    void schedule_spyre() {
        spyre::schedule_matmul_spyre(funcs(), A->in(), B->in(), bias->in(), shape_, plan_, residual_in(), scale_in());
    }
    void schedule_host() { spyre::schedule_matmul_host(funcs(), shape_, get_target()); }
    spyre::KnobValues shape_params() const {
        const char *act = shape_.activation == Activation::Relu   ? "relu"
                          : shape_.activation == Activation::Gelu ? "gelu"
                          : shape_.activation == Activation::Silu ? "silu"
                          : shape_.activation == Activation::Swiglu ? "swiglu"
                                                                  : "none";
        spyre::KnobValues p = {{"m", std::to_string(shape_.m)}, {"n", std::to_string(shape_.n)},
                               {"k", std::to_string(shape_.k)}, {"dtype", spyre::dtype_param(shape_.dtype)},
                               {"activation", act}};
        if (R) p["residual"] = "true";
        if (S) p["row_scale"] = "true";
        if (shape_.shared_weight_layout) p["shared_weight_layout"] = "true";
        return p;
    }
    // Tile candidates no larger than the (PT-pass / stick) rounded extents. The accumulator, the
    // result's copies and B's staging are left to the planner (not searched): their auto is the PT pipeline model's
    // choice, and the accumulator's three values alone tripled the space, so a 50 s search of
    // m=512 n=1024 k=1024 gelu reached 1653 of 12960 candidates and kept the hand schedule
    // (41.1 us) where it had found 39.1.
    std::map<std::string, std::vector<int>> knob_candidates() const {
        const int lanes = spyre::stick_lanes(shape_.dtype);
        std::vector<int> tms = {0}, tns = {0};
        for (int c : {64, 128, 256}) {
            if (c <= spyre::round_up(shape_.m, 8)) tms.push_back(c);
        }
        for (int c : {64, 128, 256, 512}) {
            if (c <= spyre::round_up(shape_.n, lanes)) tns.push_back(c);
        }
        return {{"tile_m", tms}, {"tile_n", tns}, {"accumulator", {}}, {"result", {}}, {"b_staging", {}}};
    }
    std::string describe(const spyre::MatmulSpyrePlan &p) const {
        return "tiles " + std::to_string(p.tm) + " x " + std::to_string(p.tn) + " x " + std::to_string(p.tk) +
               " (m x n x k), cores " + std::to_string(p.cm) + " x " + std::to_string(p.cn) + " (m x n), " +
               (p.double_buffer ? "double" : "single") + "-buffered" + (p.double_buffer_result ? " (result too)" : "") +
               (p.a_shared ? ", A shared over the ring" : "") + (p.b_shared ? ", B shared over the ring" : "") + ", " +
               std::to_string(p.footprint_bytes) + " scratchpad bytes per core";
    }
    std::string schedule_call() const {
        return std::string("spyre::schedule_matmul_spyre(funcs, A->in(), B->in(), bias->in(), shape, "
                           "spyre::plan_matmul_spyre(shape, options)") +
               (R || S ? std::string(", ") + (R ? "R->in()" : "Halide::Func()") : std::string()) + (S ? ", scale->in()" : "") + ");\n";
    }

    // The legalization of a stock schedule: its tile of C along m and n, rounded
    // to whole PT passes and sticks and shrunk until the planner finds a K chunk
    // that fits; the planner's K chunk (no K knob); acc, the epilogue and the
    // bias fused into C's tiles.
    spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d, std::vector<std::string> *kept,
                                     std::vector<std::string> *changed) {
        const std::string c = Func(*C).name();
        const int lanes = spyre::stick_lanes(shape_.dtype);
        auto tile = [](int t) { return t > 0 ? std::to_string(t) : std::string("untiled"); };
        const int stock_m = d.tile(c, 0, m_.name()), stock_n = d.tile(c, 0, n_.name()), stock_k = d.tile(acc_.name(), 1, k_.x.name());
        int tm = spyre::round_up(std::min(stock_m > 0 ? stock_m : shape_.m, 512), 8);
        int tn = spyre::round_up(std::min(stock_n > 0 ? stock_n : shape_.n, 1024), lanes);
        spyre::MatmulSpyreOptions start;
        start.double_buffer = false, start.share_a = false, start.share_b = false;
        start.tile_m = tm, start.tile_n = tn;
        spyre::KnobValues v = spyre::knob_values(start);
        // Shrink the tile until the planner finds a K chunk that fits the scratchpad.
        spyre::MatmulSpyrePlan p;
        const bool shrank = spyre::shrink_matmul_tile_to_fit(&tm, &tn, lanes, [&](int m, int n) {
            v["tile_m"] = std::to_string(m), v["tile_n"] = std::to_string(n);
            p = spyre::plan_matmul_spyre(shape_, options_from(v));
        });
        const std::string shrunk = shrank ? " (shrunk to fit the scratchpad)" : "";
        kept->push_back("tile of C: " + tile(stock_m) + " x " + tile(stock_n) + " (m x n) -> " + std::to_string(tm) + " x " +
                        std::to_string(tn) + " (whole 8-row PT passes and whole sticks)" + shrunk);
        if (stock_k > 0 || p.k_chunked()) {
            changed->push_back((stock_k > 0 ? "K split by " + std::to_string(stock_k) : std::string("K not split")) +
                               " -> the planner's " + (p.k_chunked() ? "K chunks of " + std::to_string(p.tk) : std::string("whole K per tile")) +
                               " (the template has no K knob)");
        }
        std::vector<Func> per_tile = {acc_, bias_f_, result_};
        if (act_.defined()) per_tile.insert(per_tile.begin() + 1, act_);
        if (scaled_.defined()) per_tile.insert(per_tile.begin() + 1, scaled_);
        for (const Func &g : per_tile) {
            const spyre::StockFuncDecision *s = d.find(g.name());
            const std::string level = s ? s->compute_at : "inline";
            // C's tile loop: the outer loop of its split along n or along m.
            spyre::legalize_fusion(d, g, c, spyre::at_tile_loop(level, c, m_.name()) ? m_.name() : n_.name(), "per tile of C in the scratchpad",
                            kept, changed);
        }
        spyre::legalize_parallel_and_vectors(d, c, p.in_lanes, kept, changed);
        kept->push_back("A loaded by every core: no stock autoscheduler shares tiles over the ring");
        return v;
    }

private:
    spyre::MatmulFuncs funcs() {
        spyre::MatmulFuncs f{*C, result_, acc_, bias_f_, {}, k_, n_, m_};
        if (scaled_.defined()) f.epilogue.push_back(scaled_);
        if (act_.defined()) f.epilogue.push_back(act_);
        return f;
    }

    // R's wrapper, staged per tile of C on Spyre (undefined without a residual).
    Func residual_in() { return R ? R->in() : Func(); }
    // scale's wrapper, staged once per core on Spyre (undefined without a row scale).
    Func scale_in() { return S ? S->in() : Func(); }

    Var n_{"n"}, m_{"m"};
    Func acc_{"acc"}, bias_f_{"bias_f"}, scaled_{"scaled"}, act_{"act"}, result_{"result"};
    RDom k_;
    spyre::MatmulShape shape_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Matmul, matmul)
