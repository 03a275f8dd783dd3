// Transpose of a 2-D tensor, optionally batched (3-D):
//   out(y, x) = in(x, y)            (batch == 0: 2-D tensors)
//   out(y, x, b) = in(x, y, b)      (batch >= 1: 3-D tensors, b outermost)
// Dimensions are innermost first, so this is a re-layout that moves the stick
// dimension ("restickify"): in is sticked along x, out along y.
//
// Shapes are static (GeneratorParams x, y, batch); dtype float16 or float32.
// For Spyre builds both tensors are padded to whole T x T tiles
// (tensor_constraints.h); the padding holds zeros, so transposed padding is
// padding again. The schedules are in schedules/transpose_schedule.cpp.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "Halide.h"
#include "family_generator.h"
#include "schedule_arithmetic.h"
#include "shape_limits.h"
#include "stock_legalization_rules.h"
#include "spyre_target.h"
#include "tensor_constraints.h"
#include "transpose_schedule.h"

namespace {

using namespace Halide;

class Transpose : public spyre::FamilyGenerator<Transpose, spyre::TransposeSpyreOptions, spyre::TransposeSpyrePlan> {
public:
    GeneratorParam<int> x_size{"x", 1024};
    GeneratorParam<int> y_size{"y", 1024};
    GeneratorParam<int> batch{"batch", 0};  // 0: 2-D tensors; >= 1: 3-D with this batch
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    // Knobs of the Spyre schedule (SPYRE_TRANSPOSE_KNOBS); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_TRANSPOSE_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_TRANSPOSE_KNOBS, spyre::TransposeSpyreOptions)

    Input<Buffer<>> *in = nullptr;    // in(x, y[, b])
    Output<Buffer<>> *out = nullptr;  // out(y, x[, b])

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "transpose: dtype must be float16 or float32, not " << t;
        _halide_user_assert((int)x_size >= 1 && (int)y_size >= 1)
            << "transpose: x and y must be positive (got x=" << (int)x_size << " y=" << (int)y_size << ")";
        _halide_user_assert((int)batch >= 0) << "transpose: batch must be >= 0 (0: 2-D), not " << (int)batch;
        _halide_user_assert((int)max_cores >= 0) << "transpose: max_cores must be >= 0 (0: the machine's core count), not " << (int)max_cores;
        _halide_user_assert((int)tile >= 0) << "transpose: tile must be >= 0 (0: chosen by the planner), not " << (int)tile;
        const int rank = batched() ? 3 : 2;
        std::vector<spyre::ShapeDim> in_dims = {{"x", x_size}, {"y", y_size}};
        std::vector<spyre::ShapeDim> out_dims = {{"y", y_size}, {"x", x_size}};
        if ((int)batch > 0) {
            in_dims.push_back({"batch", batch});
            out_dims.push_back({"batch", batch});
        }
        spyre::check_tensor_fits("transpose", "in", in_dims, t);
        spyre::check_tensor_fits("transpose", "out", out_dims, t);
        in = add_input<Buffer<>>("in", t, rank);
        out = add_output<Buffer<>>("out", t, rank);
    }

    void generate() {
        plan_ = plan_for(knob_options());
        if (batched()) {
            transposed_(y_, x_, b_) = (*in)(x_, y_, b_);
            (*out)(y_, x_, b_) = transposed_(y_, x_, b_);
        } else {
            transposed_(y_, x_) = (*in)(x_, y_);
            (*out)(y_, x_) = transposed_(y_, x_);
        }
        constrain_tensors();
    }

    // Spyre: both tensors padded to whole T x T tiles.
    void constrain_tensors() {
        if (batched()) {
            spyre::constrain_tensor(*in, {x_size, y_size, batch}, {plan_.tile, plan_.tile, 1});
            spyre::constrain_tensor(*out, {y_size, x_size, batch}, {plan_.tile, plan_.tile, 1});
        } else {
            spyre::constrain_tensor(*in, {x_size, y_size}, {plan_.tile, plan_.tile});
            spyre::constrain_tensor(*out, {y_size, x_size}, {plan_.tile, plan_.tile});
        }
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "spyre::TransposeSpyreOptions";
    std::string family() const { return "transpose"; }
    spyre::TransposeSpyrePlan plan_for(const spyre::TransposeSpyreOptions &o) const {
        return spyre::plan_transpose_spyre(x_size, y_size, batch, dtype, o);
    }
    void schedule_spyre() { spyre::schedule_transpose_spyre(funcs(), in->in(), plan_); }
    void schedule_host() { spyre::schedule_transpose_host(funcs(), get_target()); }
    spyre::KnobValues shape_params() const {
        return {{"x", std::to_string((int)x_size)}, {"y", std::to_string((int)y_size)},
                {"batch", std::to_string((int)batch)}, {"dtype", spyre::dtype_param(dtype)}};
    }
    // Tile edges of one, two and four sticks.
    std::map<std::string, std::vector<int>> knob_candidates() const {
        const int lanes = spyre::stick_lanes(dtype);
        return {{"tile", {0, lanes, 2 * lanes, 4 * lanes}}};
    }
    std::string describe(const spyre::TransposeSpyrePlan &p) const {
        return "tiles " + std::to_string(p.tile) + " x " + std::to_string(p.tile) + " (x, y padded to " +
               std::to_string(p.xp) + ", " + std::to_string(p.yp) + "), cores " + std::to_string(p.cb) + " x " +
               std::to_string(p.cy) + " x " + std::to_string(p.cx) + " (batch x y x x), " +
               spyre::buffering_and_footprint(p.double_buffer, p.footprint_bytes);
    }
    std::string schedule_call() const {
        return "spyre::schedule_transpose_spyre(f, in->in(), spyre::plan_transpose_spyre(x_size, y_size, batch, "
               "dtype, options));\n";
    }

    // The legalization of a stock schedule: a square tile of the larger of its
    // tile edges of out (the extent where untiled), rounded up to whole sticks
    // and halved until it fits; transposed fused into the tiles.
    spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d, std::vector<std::string> *kept,
                                     std::vector<std::string> *changed) {
        const Type t_in = dtype;
        const std::string o = Func(*out).name();
        const int lanes = spyre::stick_lanes(t_in);
        auto describe = [](int t) { return t > 0 ? std::to_string(t) : std::string("untiled"); };
        const int stock_y = d.tile(o, 0, y_.name()), stock_x = d.tile(o, 0, x_.name());
        int edge = spyre::round_up(std::max(stock_y > 0 ? stock_y : (int)y_size, stock_x > 0 ? stock_x : (int)x_size), lanes);
        spyre::TransposeSpyreOptions start;
        start.double_buffer = false;
        start.tile = edge;
        spyre::KnobValues v = spyre::knob_values(start);
        std::string shrunk;
        spyre::TransposeSpyrePlan p;
        for (;;) {
            try {
                p = spyre::plan_transpose_spyre(x_size, y_size, batch, t_in, options_from(v));
                break;
            } catch (const Halide::CompileError &e) {
                if (std::string(e.what()).find("hardware loop levels") != std::string::npos) {
                    // A smaller tile needs more loops: the planner chooses the tile (it grows it).
                    changed->push_back("tile " + std::to_string(edge) + " needs more hardware loop levels than the machine has; "
                                       "the planner chooses the tile");
                    v["tile"] = "0";
                    p = spyre::plan_transpose_spyre(x_size, y_size, batch, t_in, options_from(v));
                    edge = p.tile;
                    break;
                }
                if (edge == lanes) throw std::runtime_error("not even a one-stick tile fits the scratchpad");
                edge = spyre::round_up(edge / 2, lanes);
                v["tile"] = std::to_string(edge);
                shrunk = " (shrunk to fit the scratchpad)";
            }
        }
        kept->push_back("tile of out: " + describe(stock_y) + " x " + describe(stock_x) + " (y x x) -> " + std::to_string(edge) +
                        " x " + std::to_string(edge) + " (square, whole sticks)" + shrunk);
        const spyre::StockFuncDecision *s = d.find(transposed_.name());
        const std::string level = s ? s->compute_at : "inline";
        // out's tile loop: the outer loop of its split along y or along x.
        spyre::legalize_fusion(d, transposed_, o, spyre::at_tile_loop(level, o, x_.name()) ? x_.name() : y_.name(),
                        "per tile, gathered in the scratchpad", kept, changed);
        spyre::legalize_parallel_and_vectors(d, o, p.lanes, kept, changed);
        return v;
    }

private:
    spyre::TransposeFuncs funcs() { return {*out, transposed_, y_, x_, b_, batched()}; }

    bool batched() const { return (int)batch > 0; }

    Var y_{"y"}, x_{"x"}, b_{"b"};
    Func transposed_{"transposed"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Transpose, transpose)
