// Softmax, numerically stable, over the last (innermost) dimension (axis=0, the default):
//   out(x, y) = exp(in(x, y) - max_x in(x, y)) / sum_x exp(in(x, y) - max_x in(x, y))
// or over the rows (axis=1; torch's softmax(dim=0) of an [R, C] tensor):
//   out(x, y) = exp(in(x, y) - max_y in(x, y)) / sum_y exp(in(x, y) - max_y in(x, y))
// Shapes are static (GeneratorParams `cols` = X, `rows` = Y); float16 inputs
// compute in float32 and round once. The reductions run over the true extent only
// (Spyre tensors are padded to whole sticks; padding must not enter a max or a sum).
// The schedules are in schedules/softmax_schedule.cpp.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "Halide.h"
#include "family_generator.h"
#include "schedule_arithmetic.h"
#include "shape_limits.h"
#include "stock_legalization_rules.h"
#include "softmax_schedule.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Softmax : public spyre::FamilyGenerator<Softmax, spyre::SoftmaxSpyreOptions, spyre::SoftmaxSpyrePlan> {
public:
    GeneratorParam<int> cols{"cols", 1024};
    GeneratorParam<int> rows{"rows", 2048};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<int> axis{"axis", 0};  // 0: over x, each row; 1: over y, each column
    // Knobs of the Spyre schedule (SPYRE_SOFTMAX_KNOBS); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_SOFTMAX_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_SOFTMAX_KNOBS, spyre::SoftmaxSpyreOptions)

    Input<Buffer<>> *in = nullptr;    // in(x, y)
    Output<Buffer<>> *out = nullptr;  // out(x, y)

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "softmax: dtype must be float16 or float32, not " << t;
        _halide_user_assert(cols >= 1 && rows >= 1)
            << "softmax: cols and rows must be positive (got cols=" << (int)cols << " rows=" << (int)rows << ")";
        _halide_user_assert(axis == 0 || axis == 1)
            << "softmax: axis must be 0 (over x, each row) or 1 (over y, each column), not " << (int)axis;
        (void)knob_options();  // every integer knob in [0, 2^20] or an error quoting it as given (schedule_knobs.h)
        spyre::check_tensor_fits("softmax", "in", {{"cols", cols}, {"rows", rows}}, t);
        in = add_input<Buffer<>>("in", t, 2);
        out = add_output<Buffer<>>("out", t, 2);
    }

    void generate() {
        const Type t = dtype;
        try {
            plan_ = plan_for(knob_options());
        } catch (const std::runtime_error &e) {
            _halide_user_assert(false) << e.what();
        }
        Expr v = cast<float>((*in)(x_, y_));
        // The statistics keep y (axis 0: one per row) or x (axis 1: one per column, over the
        // rows, lane by lane); r runs over the true extent of the other.
        const bool over_rows = axis == 1;
        const Var kept = over_rows ? x_ : y_;
        r_ = RDom(0, over_rows ? (int)rows : (int)cols, "r");
        // Axis 0, rows of whole sticks: the row max and sum in two steps (the same values: the
        // max is exact, the sum adds the same terms in another order), lane by lane over the
        // row's sticks, the max over the input's sticks and the sum over exp's f32 sticks, then
        // over one such vector's lanes (softmax_schedule.h).
        const bool lane_steps = !over_rows && spyre::softmax_lane_steps(cols, t);
        const int il = spyre::stick_lanes(t), fl = spyre::stick_lanes(Float(32));
        max_(kept) = Float(32).min();
        if (lane_steps) {
            rs_max_ = RDom(0, (int)cols / il, "rs_max");
            rl_max_ = RDom(0, il, "rl_max");
            lane_max_(l_, y_) = Float(32).min();
            lane_max_(l_, y_) = max(lane_max_(l_, y_), cast<float>((*in)(rs_max_ * il + l_, y_)));
            max_(kept) = max(max_(kept), lane_max_(rl_max_, y_));
        } else {
            max_(kept) = max(max_(kept), cast<float>(over_rows ? (*in)(x_, r_) : (*in)(r_, y_)));
        }
        exp_(x_, y_) = exp(v - max_(kept));
        sum_(kept) = 0.0f;
        if (lane_steps) {
            rs_sum_ = RDom(0, (int)cols / fl, "rs_sum");
            rl_sum_ = RDom(0, fl, "rl_sum");
            lane_sum_(l_, y_) = 0.0f;
            lane_sum_(l_, y_) += exp_(rs_sum_ * fl + l_, y_);
            sum_(kept) += lane_sum_(rl_sum_, y_);
        } else {
            sum_(kept) += over_rows ? exp_(x_, r_) : exp_(r_, y_);
        }
        result_(x_, y_) = cast(t, exp_(x_, y_) / sum_(kept));
        (*out)(x_, y_) = result_(x_, y_);
        constrain_tensors();
    }

    // Spyre, axis 0: rows padded to the rows the plan iterates; cols to whole sticks. Axis 1:
    // cols padded to whole tiles; the rows as they are (every tile holds them all).
    void constrain_tensors() {
        // Rows padded to what the schedule iterates: cores x tiles x tile_rows, which can
        // exceed whole tiles when the rows do not split evenly over the cores.
        if (axis == 1) {
            spyre::constrain_tensor(*in, {cols, rows}, {plan_.tile_cols, 1});
            spyre::constrain_tensor(*out, {cols, rows}, {plan_.tile_cols, 1});
            return;
        }
        spyre::constrain_tensor(*in, {cols, rows}, {1, plan_.rows_padded});
        spyre::constrain_tensor(*out, {cols, rows}, {1, plan_.rows_padded});
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "spyre::SoftmaxSpyreOptions";
    std::string family() const { return "softmax"; }
    spyre::SoftmaxSpyrePlan plan_for(const spyre::SoftmaxSpyreOptions &o) const {
        return spyre::plan_softmax_spyre(cols, rows, dtype, o, axis);
    }
    void schedule_spyre() { spyre::schedule_softmax_spyre(funcs(), in->in(), plan_); }
    void schedule_host() { spyre::schedule_softmax_host(funcs(), get_target(), axis); }
    spyre::KnobValues shape_params() const {
        return {{"cols", std::to_string((int)cols)}, {"rows", std::to_string((int)rows)}, {"dtype", spyre::dtype_param(dtype)},
                {"axis", std::to_string((int)axis)}};
    }
    std::string describe(const spyre::SoftmaxSpyrePlan &p) const {
        if (p.axis == 1) {
            return "over the rows: tiles of " + std::to_string(p.tile_cols) + " columns (cols padded to " +
                   std::to_string(p.cols_padded) + "), " + std::to_string(p.cores) + " cores, " +
                   spyre::buffering_and_footprint(p.double_buffer, p.footprint_bytes);
        }
        return "tiles of " + std::to_string(p.tile_rows) + " rows (rows padded to " + std::to_string(p.rows_padded) + "), " +
               std::to_string(p.cores) + " cores, " + (p.row_vectors ? "whole-row" : "one-stick") + " SFU vectors, " +
               spyre::buffering_and_footprint(p.double_buffer, p.footprint_bytes);
    }
    std::string schedule_call() const {
        return "spyre::schedule_softmax_spyre(f, in->in(), spyre::plan_softmax_spyre(cols, rows, dtype, options, axis));\n";
    }

    // The legalization of a stock schedule: rows per tile from its tile of out
    // along y (1, one row per parallel iteration, when y is not split), halved
    // until the planner accepts it; the row statistics fused into the tiles;
    // one stick per SFU instruction unless the stock vectors are wider.
    spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d, std::vector<std::string> *kept,
                                     std::vector<std::string> *changed) {
        if (axis == 1) {
            throw std::runtime_error("the legalization of stock schedules covers softmax over x (axis=0) only");
        }
        const Type t_in = dtype;
        const std::string o = Func(*out).name();
        const int lanes = spyre::stick_lanes(t_in);
        const int stock_rows = d.tile(o, 0, y_.name());
        int width = 0;
        if (const spyre::StockFuncDecision *od = d.find(o)) width = od->stages[0].vector_width;
        const bool row_vectors = width < 0 || width > lanes;
        spyre::SoftmaxSpyreOptions start;
        start.row_vectors = row_vectors;
        start.double_buffer = false;
        spyre::KnobValues v = spyre::knob_values(start);
        spyre::legalize_tile_rows(
            stock_rows, (int)this->rows, v, [&](const spyre::KnobValues &kv) { (void)plan_for(options_from(kv)); }, kept);
        for (const Func &g : {max_, exp_, sum_, result_}) {
            spyre::legalize_fusion(d, g, o, y_.name(), "per tile of rows in the scratchpad", kept, changed);
        }
        spyre::legalize_parallel_and_vectors(d, o, lanes, kept, changed);
        kept->push_back(row_vectors ? "vectors wider than a stick -> one SFU vector per row (row_vectors=true)"
                                    : "vectors narrower than a stick -> one stick per SFU instruction (row_vectors=false)");
        return v;
    }

private:
    spyre::SoftmaxFuncs funcs() {
        // lane_max_ and lane_sum_ stay undefined unless the algorithm reduces rows in two steps.
        return {*out, result_, exp_, max_, sum_, x_, y_, r_, lane_max_, lane_sum_, rs_max_, rs_sum_, rl_max_, rl_sum_, l_};
    }

    Var x_{"x"}, y_{"y"}, l_{"l"};
    RDom r_, rs_max_, rs_sum_, rl_max_, rl_sum_;
    Func lane_max_{"lane_max"}, lane_sum_{"lane_sum"};
    Func max_{"row_max"}, exp_{"row_exp"}, sum_{"row_sum"}, result_{"result"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Softmax, softmax)
