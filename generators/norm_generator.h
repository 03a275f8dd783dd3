// The row-normalization generators, layernorm and rmsnorm, over the last
// (innermost) dimension, with v = float32(in):
//   layernorm: mean(y) = sum_x v(x, y) / X,  c(x, y) = v(x, y) - mean(y)
//              out(x, y) = c(x, y) / sqrt(sum_x c(x, y)^2 / X + eps) * weight(x) + bias(x)
//   rmsnorm:   out(x, y) = v(x, y) / sqrt(sum_x v(x, y)^2 / X + eps) * weight(x)
// They differ only in the centering and the bias, so one class template holds
// both (Centered = layernorm); layernorm_generator.cpp and rmsnorm_generator.cpp
// register them as gen_layernorm and gen_rmsnorm. Shapes are static
// (GeneratorParams `cols` = X, `rows` = Y); float16 tensors compute in float32
// and round once. eps is a run-time scalar (Input<float>). The reductions run
// over the true X only: Spyre tensors are padded to whole sticks and padding
// must not enter the sums. The schedules are in schedules/norm_schedule.cpp.
// rmsnorm output=inverse_rms (default output=normalized): the statistics alone,
//   out(y) = 1 / sqrt(sum_x v(x, y)^2 / X + eps)   (float32, no weight input)
// the row scale of a projection that folds the norm in (gen_matmul row_scale=true,
// with the norm's weight folded into the projection's rows): the normalized
// rows are never written. On Spyre a tile is a stick of 32 rows' results.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "Halide.h"
#include "family_generator.h"
#include "norm_schedule.h"
#include "schedule_arithmetic.h"
#include "shape_limits.h"
#include "stock_legalization_rules.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace spyre {

template <bool Centered>
class NormGenerator : public FamilyGenerator<NormGenerator<Centered>, NormSpyreOptions, NormSpyrePlan> {
    using Family = FamilyGenerator<NormGenerator<Centered>, NormSpyreOptions, NormSpyrePlan>;
    using Family::plan_;

public:
    template <typename T>
    using GeneratorParam = Halide::GeneratorParam<T>;
    template <typename T>
    using Input = Halide::GeneratorInput<T>;
    template <typename T>
    using Output = Halide::GeneratorOutput<T>;
    using BufferAny = Halide::Buffer<>;

    static constexpr const char *kernel_name = Centered ? "layernorm" : "rmsnorm";

    GeneratorParam<int> cols{"cols", 4096};
    GeneratorParam<int> rows{"rows", 1024};
    GeneratorParam<Halide::Type> dtype{"dtype", Halide::Float(16)};
    // normalized (the norm) or inverse_rms (rmsnorm: the rows' 1 / rms alone; see the header comment).
    GeneratorParam<std::string> output{"output", "normalized"};
    // Knobs of the Spyre schedule (SPYRE_NORM_KNOBS); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_NORM_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_NORM_KNOBS, NormSpyreOptions)

    // Added in configure() because their type is a GeneratorParam (and to keep this order).
    Input<BufferAny> *in = nullptr;      // in(x, y)
    Input<BufferAny> *weight = nullptr;  // weight(x)
    Input<BufferAny> *bias = nullptr;    // bias(x); layernorm only
    Input<float> *eps = nullptr;         // run-time scalar
    Output<BufferAny> *out = nullptr;    // out(x, y)

    void configure() {
        const Halide::Type t = dtype;
        _halide_user_assert(t == Halide::Float(16) || t == Halide::Float(32))
            << kernel_name << ": dtype must be float16 or float32, not " << t;
        _halide_user_assert((int)cols >= 1 && (int)rows >= 1)
            << kernel_name << ": cols and rows must be positive (got cols=" << (int)cols << " rows=" << (int)rows
            << ")";
        _halide_user_assert((int)max_cores >= 0) << kernel_name << ": max_cores must be >= 0 (0: the machine's core count), not " << (int)max_cores;
        _halide_user_assert((int)tile_rows >= 0)
            << kernel_name << ": tile_rows must be >= 0 (0: chosen by the planner), not " << (int)tile_rows;
        _halide_user_assert(std::string(output) == "normalized" || std::string(output) == "inverse_rms")
            << kernel_name << ": output must be normalized or inverse_rms, not '" << std::string(output) << "'";
        _halide_user_assert(!Centered || !inverse_rms())
            << kernel_name << ": output=inverse_rms is rmsnorm's (layernorm's statistics are a mean and a variance)";
        check_tensor_fits(kernel_name, "in", {{"cols", (int)cols}, {"rows", (int)rows}}, t);
        in = this->template add_input<BufferAny>("in", t, 2);
        if (inverse_rms()) {
            eps = this->template add_input<float>("eps");
            out = this->template add_output<BufferAny>("out", Halide::Float(32), 1);
            return;
        }
        weight = this->template add_input<BufferAny>("weight", t, 1);
        if (Centered) {
            bias = this->template add_input<BufferAny>("bias", t, 1);
        }
        eps = this->template add_input<float>("eps");
        out = this->template add_output<BufferAny>("out", t, 2);
    }

    void generate() {
        using namespace Halide;
        const Type t = dtype;
        plan_ = plan_for(knob_options());
        const float inv_n = 1.0f / (float)(int)cols;
        RDom r(0, (int)cols, "r");
        // The value that is squared and normalized: v, or v - mean for layernorm.
        Expr value = cast<float>((*in)(x_, y_));
        if (Centered) {
            sum_(y_) = 0.0f;
            sum_(y_) += cast<float>((*in)(r, y_));
            mean_(y_) = sum_(y_) * inv_n;
            centered_(x_, y_) = value - mean_(y_);
            value = centered_(x_, y_);
        }
        // Squared in its own Func (copy, then multiply by itself), so the reduction below sums a
        // staged row: one sfu.rowsum per row. Reducing `value * value` inside sumsq's update
        // would be a scalar loop per element (the compiler warns). `value * value` as sq_'s
        // definition would compile as well; the update form predates vector lets.
        sq_(x_, y_) = value;
        sq_(x_, y_) *= value;
        sumsq_(y_) = 0.0f;
        sumsq_(y_) += sq_(r, y_);
        inv_(y_) = 1.0f / sqrt(sumsq_(y_) * inv_n + (*eps));
        if (inverse_rms()) {
            result_(y_) = inv_(y_);
            (*out)(y_) = result_(y_);
            constrain_tensors();
            eps->set_estimate(1e-5f);  // for auto_schedule=true
            return;
        }
        weight_f_(x_) = cast<float>((*weight)(x_));
        Expr normalized = value * inv_(y_) * weight_f_(x_);
        if (Centered) {
            bias_f_(x_) = cast<float>((*bias)(x_));
            normalized = normalized + bias_f_(x_);
        }
        result_(x_, y_) = cast(t, normalized);
        (*out)(x_, y_) = result_(x_, y_);
        constrain_tensors();
        eps->set_estimate(1e-5f);  // for auto_schedule=true
    }

    // Spyre: rows padded to the plan's tile; cols to whole sticks.
    void constrain_tensors() {
        constrain_tensor(*in, {cols, rows}, {1, plan_.tile_rows});
        if (inverse_rms()) {
            constrain_tensor(*out, {rows}, {plan_.tile_rows});
            return;
        }
        constrain_tensor(*weight, {cols}, {1});
        if (Centered) {
            constrain_tensor(*bias, {cols}, {1});
        }
        constrain_tensor(*out, {cols, rows}, {1, plan_.tile_rows});
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "NormSpyreOptions";
    std::string family() const { return kernel_name; }
    NormSpyrePlan plan_for(const NormSpyreOptions &o) const {
        return plan_norm_spyre(cols, rows, dtype, Centered, o, inverse_rms());
    }
    void schedule_spyre() {
        if (inverse_rms()) {
            schedule_inverse_rms_spyre(funcs(), in->in(), plan_);
            return;
        }
        schedule_norm_spyre(funcs(), in->in(), weight->in(), Centered ? bias->in() : Halide::Func(), dtype, plan_);
    }
    void schedule_host() {
        if (inverse_rms()) {
            schedule_inverse_rms_host(funcs(), this->get_target());
            return;
        }
        schedule_norm_host(funcs(), this->get_target());
    }
    KnobValues shape_params() const {
        KnobValues v = {{"cols", std::to_string((int)cols)}, {"rows", std::to_string((int)rows)}, {"dtype", dtype_param(dtype)}};
        if (inverse_rms()) v["output"] = "inverse_rms";
        return v;
    }
    // Rows per tile: no more than the rows, and only tiles that fit.
    std::map<std::string, std::vector<int>> knob_candidates() const {
        std::vector<int> tiles = {0};
        // output=inverse_rms: only whole sticks of float32 results, even above the rows.
        const int multiple = inverse_rms() ? stick_lanes(Halide::Float(32)) : 1;
        for (int c : {1, 2, 4, 8, 16, 32, 64}) {
            if (c % multiple != 0) continue;
            if (c > (int)rows && c > multiple) break;
            NormSpyreOptions o;
            o.tile_rows = c;
            try {
                (void)plan_for(o);
                tiles.push_back(c);
            } catch (const std::runtime_error &) {  // the planners' "does not fit" (knob errors are std::logic_error)
            }
        }
        return {{"tile_rows", tiles}};
    }
    std::string describe(const NormSpyrePlan &p) const {
        return "tiles of " + std::to_string(p.tile_rows) + " rows (rows padded to " + std::to_string(p.rows_padded) + "), " +
               std::to_string(p.cores) + " cores, SFU vectors of " + std::to_string(p.row_vector) + " lanes, " +
               buffering_and_footprint(p.double_buffer, p.footprint_bytes);
    }
    std::string schedule_call() const {
        if (inverse_rms()) return "schedule_inverse_rms_spyre(f, in->in(), plan_norm_spyre(cols, rows, dtype, false, options, true));\n";
        return std::string("schedule_norm_spyre(f, in->in(), weight->in(), ") + (Centered ? "bias->in()" : "Halide::Func()") +
               ", dtype, plan_norm_spyre(cols, rows, dtype, " + (Centered ? "true" : "false") + ", options));\n";
    }

    // The legalization of a stock schedule: rows per tile from its tile of out
    // along y (1, one row per parallel iteration, when y is not split), halved
    // until the planner accepts it; the row statistics fused into the tiles;
    // weight (and bias) once per core.
    KnobValues legalize_stock(const StockScheduleDecisions &d, std::vector<std::string> *kept,
                              std::vector<std::string> *changed) {
        _halide_user_assert(!inverse_rms()) << kernel_name
                                            << ": output=inverse_rms has no legalization of a stock schedule; use the hand "
                                               "schedule or -s Spyre (the Spyre autoscheduler)";
        const std::string o = Halide::Func(*out).name();
        const int stock_rows = d.tile(o, 0, y_.name());
        NormSpyreOptions start;
        start.double_buffer = false;
        KnobValues v = knob_values(start);
        NormSpyrePlan p;
        legalize_tile_rows(
            stock_rows, (int)rows, v, [&](const KnobValues &kv) { p = plan_for(this->options_from(kv)); }, kept);
        for (const Halide::Func &g : {sum_, mean_, centered_, sq_, sumsq_, inv_, result_}) {
            if (g.defined()) legalize_fusion(d, g, o, y_.name(), "per tile of rows in the scratchpad", kept, changed);
        }
        for (const Halide::Func &g : {weight_f_, bias_f_}) {
            if (!g.defined()) continue;
            const StockFuncDecision *s = d.find(g.name());
            const std::string level = s ? s->compute_at : "inline";
            changed->push_back(g.name() + " computed " + (level == "inline" || level == "root" ? "" : "at ") + level +
                               " -> once per core in the scratchpad");
        }
        legalize_parallel_and_vectors(d, o, p.in_lanes, kept, changed);
        return v;
    }

private:
    bool inverse_rms() const { return std::string(output) == "inverse_rms"; }

    // rmsnorm leaves sum_, mean_, centered_ and bias_f_ undefined; the schedules check.
    NormFuncs funcs() { return {*out, result_, sum_, mean_, centered_, sq_, sumsq_, inv_, weight_f_, bias_f_, x_, y_}; }

    Halide::Var x_{"x"}, y_{"y"};
    Halide::Func sum_{"row_sum"}, mean_{"row_mean"}, centered_{"centered"}, sq_{"sq"}, sumsq_{"row_sumsq"},
        inv_{"row_inv"}, weight_f_{"weight_f"}, bias_f_{"bias_f"}, result_{"result"};
};

}  // namespace spyre
