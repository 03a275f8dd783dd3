// Reductions of a 3-D tensor in(x, y, z) (x = d0 innermost, the stick
// dimension) over one axis: op = sum, mean or max, axis = 0, 1 or 2. The
// output keeps the other two dims in order (axis 0: out(y, z); axis 1:
// out(x, z); axis 2: out(x, y)). Shapes and dtype (float16 or float32) are
// static GeneratorParams; float16 widens to float32 (wide), accumulates in
// float32 (acc) and rounds once. The reduction runs over the true extent of
// the axis (Spyre tensors are padded to whole sticks and tiles; the padding
// never enters a sum or a max). The schedules are in schedules/reduce_schedule.cpp.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "Halide.h"
#include "family_generator.h"
#include "reduce_schedule.h"
#include "schedule_arithmetic.h"
#include "shape_limits.h"
#include "stock_legalization_rules.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Reduce : public spyre::FamilyGenerator<Reduce, spyre::ReduceSpyreOptions, spyre::ReduceSpyrePlan> {
public:
    GeneratorParam<int> d0{"d0", 1024};
    GeneratorParam<int> d1{"d1", 2048};
    GeneratorParam<int> d2{"d2", 4};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<std::string> op{"op", "sum"};
    GeneratorParam<int> axis{"axis", 0};
    // Knobs of the Spyre schedule (SPYRE_REDUCE_KNOBS); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_REDUCE_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_REDUCE_KNOBS, spyre::ReduceSpyreOptions)

    Input<Buffer<>> *in = nullptr;    // in(x, y, z)
    Output<Buffer<>> *out = nullptr;  // out(u, v): the dims other than `axis`

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "reduce: dtype must be float16 or float32, not " << t;
        _halide_user_assert(std::string(op) == "sum" || std::string(op) == "mean" || std::string(op) == "max")
            << "reduce: op must be sum, mean or max, not '" << std::string(op) << "'";
        _halide_user_assert(axis >= 0 && axis <= 2) << "reduce: axis must be 0, 1 or 2, not " << (int)axis;
        _halide_user_assert(d0 > 0 && d1 > 0 && d2 > 0)
            << "reduce: d0, d1 and d2 must be positive (got d0=" << (int)d0 << " d1=" << (int)d1 << " d2=" << (int)d2 << ")";
        (void)knob_options();  // every knob in its range or among its values (schedule_knobs.h)
        spyre::check_tensor_fits("reduce", "in", {{"d0", d0}, {"d1", d1}, {"d2", d2}}, t);
        in = add_input<Buffer<>>("in", t, 3);
        out = add_output<Buffer<>>("out", t, 2);
    }

    void generate() {
        shape_ = spyre::ReduceShape{d0, d1, d2, dtype, op, axis};
        plan_ = plan_for(knob_options());
        const Type t = dtype;
        const int n = shape_.reduced();
        r_ = RDom(0, n, "r");

        wide_(x_, y_, z_) = cast<float>((*in)(x_, y_, z_));
        Expr idx[3];
        idx[shape_.axis] = r_.x;
        idx[shape_.kept(0)] = u_;
        idx[shape_.kept(1)] = v_;
        const Expr w = wide_(idx[0], idx[1], idx[2]);
        if (spyre::reduce_lane_steps(shape_)) {
            // Axis 0 on the SFU, rows of whole sticks: lane by lane over the row's sticks, then
            // over one stick's lanes (the same max; the sum's terms in another order).
            const int lanes = spyre::stick_lanes(t);
            rs_ = RDom(0, shape_.d0 / lanes, "rs");
            rl_lane_ = RDom(0, lanes, "rl_lane");
            const Expr from_row = wide_(rs_ * lanes + l_, u_, v_);
            const bool is_max = shape_.op == "max";
            lane_(l_, u_, v_) = is_max ? Expr(Float(32).min()) : Expr(0.0f);
            lane_(l_, u_, v_) = is_max ? max(lane_(l_, u_, v_), from_row) : lane_(l_, u_, v_) + from_row;
            acc_(u_, v_) = is_max ? Expr(Float(32).min()) : Expr(0.0f);
            acc_(u_, v_) = is_max ? max(acc_(u_, v_), lane_(rl_lane_, u_, v_)) : acc_(u_, v_) + lane_(rl_lane_, u_, v_);
        } else if (shape_.op == "max") {
            acc_(u_, v_) = Float(32).min();
            acc_(u_, v_) = max(acc_(u_, v_), w);
        } else {
            acc_(u_, v_) = 0.0f;
            acc_(u_, v_) = acc_(u_, v_) + w;
        }
        Expr res = acc_(u_, v_);
        if (shape_.op == "mean") res = res / (float)n;
        result_(u_, v_) = cast(t, res);
        (*out)(u_, v_) = result_(u_, v_);

        constrain_tensors();
    }

    // Spyre: the output's dim 0 (and the matching input dim) padded to the
    // tile; the reduced axis keeps its true extent (except x, padded to sticks).
    void constrain_tensors() {
        std::vector<int> in_multiples = {1, 1, 1};
        in_multiples[shape_.kept(0)] = plan_.tile;
        spyre::constrain_tensor(*in, {shape_.d0, shape_.d1, shape_.d2}, in_multiples);
        spyre::constrain_tensor(*out, {shape_.extent(shape_.kept(0)), shape_.extent(shape_.kept(1))}, {plan_.tile, 1});
    }

    // The stage of the input: fp32 reductions across sticks stage `wide` (a copy of in) directly.
    Func staged_input() {
        const bool stage_input = shape_.axis == 0 || shape_.dtype == Float(16);
        return stage_input ? in->in() : Func();
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "spyre::ReduceSpyreOptions";
    std::string family() const { return "reduce"; }
    spyre::ReduceSpyrePlan plan_for(const spyre::ReduceSpyreOptions &o) const { return spyre::plan_reduce_spyre(shape_, o); }
    void schedule_spyre() { spyre::schedule_reduce_spyre(funcs(), staged_input(), shape_, plan_); }
    void schedule_host() { spyre::schedule_reduce_host(funcs(), shape_, get_target()); }
    spyre::KnobValues shape_params() const {
        return {{"d0", std::to_string(shape_.d0)}, {"d1", std::to_string(shape_.d1)},
                {"d2", std::to_string(shape_.d2)}, {"dtype", spyre::dtype_param(shape_.dtype)},
                {"op", shape_.op},                 {"axis", std::to_string(shape_.axis)}};
    }
    // Tiles: 1 to 16 sticks, not above the padded output dim 0; chunks: whole, halves, ... of the reduced axis.
    std::map<std::string, std::vector<int>> knob_candidates() const {
        const int lanes = spyre::stick_lanes(shape_.dtype);
        const int up = spyre::padded_extent(shape_.extent(shape_.kept(0)), lanes);
        std::vector<int> tiles = {0};
        for (int sticks : {1, 2, 4, 8, 16}) {
            if (sticks * lanes <= up) tiles.push_back(sticks * lanes);
        }
        std::vector<int> chunks = {0};
        if (shape_.axis != 0) {
            const int n = shape_.reduced();
            for (int parts : {1, 2, 4, 8, 16}) {
                if (n % parts == 0) chunks.push_back(n / parts);
            }
        }
        return {{"tile", tiles}, {"chunk", chunks}};
    }
    std::string describe(const spyre::ReduceSpyrePlan &p) const {
        std::string s = "tiles of " + std::to_string(p.tile) + " lanes (out dim 0 padded to " + std::to_string(p.u_padded) + ")";
        if (shape_.axis != 0) s += ", chunks of " + std::to_string(p.chunk) + " reduced rows";
        if (spyre::reduce_lane_steps(shape_)) s += ", rows reduced lane by lane over their sticks, then one stick per row";
        return s + ", cores " + std::to_string(p.cores_u) + " x " + std::to_string(p.cores_v) + " x " +
               std::to_string(p.cores_r) + " (u x v x reduced axis), " +
               spyre::buffering_and_footprint(p.double_buffer, p.footprint_bytes);
    }
    std::string schedule_call() const {
        const bool staged = shape_.axis == 0 || shape_.dtype == Float(16);
        return std::string("spyre::schedule_reduce_spyre(f, ") + (staged ? "in->in()" : "Func()") +
               ", shape, spyre::plan_reduce_spyre(shape, options));\n";
    }

    // The legalization of a stock schedule: `tile` from its tile of out along u
    // (the whole dim when u is not split) rounded up to whole sticks; axes 1, 2:
    // `chunk` from its split of the reduction (the whole axis when it is not
    // split) rounded up to a divisor of the reduced extent; the tile, then the
    // chunk, halved until the planner accepts them; acc (and wide) fused into the tiles.
    spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d, std::vector<std::string> *kept,
                                     std::vector<std::string> *changed) {
        const std::string o = Func(*out).name();
        const int lanes = spyre::stick_lanes(shape_.dtype);
        const int up = spyre::padded_extent(shape_.extent(shape_.kept(0)), lanes);
        const int n = shape_.reduced();
        const int stock_u = d.tile(o, 0, u_.name()), stock_r = d.tile(acc_.name(), 1, r_.x.name());
        int tile = std::min(spyre::round_up(stock_u > 0 ? stock_u : up, lanes), up);
        // The smallest divisor of n that is >= c.
        auto divisor_at_least = [n](int c) {
            int q = std::min(std::max(c, 1), n);
            while (n % q != 0) q++;
            return q;
        };
        int chunk = shape_.axis == 0 ? 0 : divisor_at_least(stock_r > 0 ? stock_r : n);
        spyre::ReduceSpyreOptions start;
        start.double_buffer = false;
        start.tile = tile, start.chunk = chunk, start.reduce_cores = 1;
        spyre::KnobValues v = spyre::knob_values(start);
        std::string shrunk;
        for (;;) {
            try {
                (void)spyre::plan_reduce_spyre(shape_, options_from(v));
                break;
            } catch (const std::runtime_error &) {  // the planners' "does not fit" (knob errors are std::logic_error)
                if (tile > lanes) {
                    tile = spyre::round_up(tile / 2, lanes);
                } else if (chunk > 1) {
                    int c = chunk / 2;
                    while (c > 1 && n % c != 0) c--;
                    chunk = c;
                } else {
                    throw std::runtime_error("not even one stick-wide tile fits the scratchpad");
                }
                v["tile"] = std::to_string(tile), v["chunk"] = std::to_string(chunk);
                shrunk = " (shrunk to fit the scratchpad)";
            }
        }
        kept->push_back((stock_u > 0 ? "tile of out along u: " + std::to_string(stock_u)
                                     : "u not split (" + std::to_string(shape_.extent(shape_.kept(0))) + ")") +
                        " -> tile=" + std::to_string(tile) + " (whole sticks)" + shrunk);
        if (shape_.axis == 0) {
            if (stock_r > 0) {
                changed->push_back("reduction split by " + std::to_string(stock_r) +
                                   " -> whole rows, one sfu.rowsum / rowmax per row (axis 0 has no chunks)");
            }
        } else {
            kept->push_back((stock_r > 0 ? "reduction split by " + std::to_string(stock_r) : std::string("reduction not split")) +
                            " -> chunk=" + std::to_string(chunk) + " (divides " + std::to_string(n) + ")" + shrunk);
        }
        for (const Func &g : {acc_, result_}) spyre::legalize_fusion(d, g, o, u_.name(), "per tile in the scratchpad", kept, changed);
        if (shape_.axis != 0) {
            // At acc's r loop when r is not split is one reduced row at a time, not a chunk.
            spyre::legalize_fusion(d, wide_, acc_.name(), stock_r > 0 ? r_.x.name() : std::string("(no split)"),
                            "per chunk of the reduction in the scratchpad", kept, changed);
        }
        spyre::legalize_parallel_and_vectors(d, o, lanes, kept, changed);
        return v;
    }

private:
    spyre::ReduceFuncs funcs() {
        return {*out, result_, acc_, wide_, r_, u_, v_, x_, lane_, rs_, rl_lane_};
    }

    Var x_{"x"}, y_{"y"}, z_{"z"}, u_{"u"}, v_{"v"}, l_{"l"};
    Func wide_{"wide"}, acc_{"acc"}, result_{"result"}, lane_{"lane"};
    RDom r_, rs_, rl_lane_;
    spyre::ReduceShape shape_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Reduce, reduce)
