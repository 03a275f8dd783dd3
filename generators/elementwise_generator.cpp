// Elementwise kernels over a 3-D tensor (x = d0 innermost, y = d1, z = d2):
//   op = add, mul:   out(x, y, z) = a(x, y, z) op b(bx, by, bz)
//   op = gelu, silu, relu: out(x, y, z) = op(a(x, y, z))
//   op = swiglu:     out(x, y, z) = silu(a(x, y, z)) * a(x + d0, y, z)
// `broadcast_b` lists the dims along which b has extent 1 ("", "d1", "d0,d2",
// ...); b is read at index 0 along them. On Spyre a b broadcast along d0 alone
// (one value per row) is laid out with its sticks along the rows (packed) where
// the plan gives every core whole sticks of rows (ElementwiseSpyrePlan::b_packed),
// and staged once per core: it moves the rows' values, not a padded stick per row
// (add of a [rows, 1] column to 2048 x 512 fp16 on 32 cores: 39.6 -> 38.0 us). gelu is the tanh approximation
//   gelu(v) = 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
// (the SFU has tanh and no erf); silu(v) = v / (1 + exp(-v)); relu(v) = max(v, 0).
// swiglu is the gate of a SwiGLU MLP after a fused gate/up projection: a is
// (2 d0, d1, d2), the gate in x < d0 and the up projection in d0 <= x < 2 d0
// (gen_matmul n=2F computes gu(2F, M) in exactly this layout: pass d0=F,
// d1=M, d2=1); out is (d0, d1, d2). For Spyre d0 must be whole sticks (e.g.
// F = 12800: 200 fp16 sticks), so the up half starts on a stick boundary.
// It is planned and scheduled like silu (schedules/elementwise_schedule.cpp),
// with a row of a twice as wide: den = 1 + exp(-gate), result = gate / den * up.
// gate_up_blocks=true (swiglu only): a is the product whose gate and up columns
// alternate in blocks of d0 (gen_matmul activation=swiglu's B layout, without
// the fused gate), (2 d0 d1, d2, 1): row z of it holds d1 block pairs, and
//   out(x, y, z) = silu(a(x + 2 d0 y, z, 0)) * a(x + 2 d0 y + d0, z, 0),
// out (d0, d1, d2) being out(F = d0 d1, d2) with rows split into blocks: an
// LLM's decode step gates its gate/up product this way (apps/llm).
// The unary ops are written as a few Funcs (gelu: wide = v, sq = wide * wide,
// result; silu: wide = v, den = 1 + exp(-wide), result), every use of an fp16
// input reading wide, its fp32 row: the SFU widens a row once, not once per
// use (each cast(a) in a definition is one sfu.cast of the row; fp32 inputs
// are read directly). The host inlines them; the Spyre schedule computes them
// row by row in scratchpad.
// Shapes and dtype (float16 or float32) are static GeneratorParams; float16
// computes in float32 and rounds once. The schedules are in
// schedules/elementwise_schedule.cpp.
#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "Halide.h"
#include "family_generator.h"
#include "elementwise_schedule.h"
#include "schedule_arithmetic.h"
#include "shape_limits.h"
#include "stock_legalization_rules.h"
#include "spyre_schedule.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Elementwise
    : public spyre::FamilyGenerator<Elementwise, spyre::ElementwiseSpyreOptions, spyre::ElementwiseSpyrePlan> {
public:
    GeneratorParam<int> d0{"d0", 1024};
    GeneratorParam<int> d1{"d1", 2048};
    GeneratorParam<int> d2{"d2", 2};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<std::string> op{"op", "add"};
    GeneratorParam<std::string> broadcast_b{"broadcast_b", ""};
    // swiglu: a's gate and up columns alternate in blocks of d0 (see the header comment).
    GeneratorParam<bool> gate_up_blocks{"gate_up_blocks", false};
    // Knobs of the Spyre schedule (SPYRE_ELEMENTWISE_KNOBS); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_ELEMENTWISE_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_ELEMENTWISE_KNOBS, spyre::ElementwiseSpyreOptions)

    Input<Buffer<>> *a = nullptr;     // a(x, y, z); swiglu: (2 d0, d1, d2), gate then up along x; gate_up_blocks: (2 d0 d1, d2, 1)
    Input<Buffer<>> *b = nullptr;     // b(x, y, z), extent 1 along the broadcast dims; binary ops only
    Output<Buffer<>> *out = nullptr;  // out(x, y, z)

    void configure() {
        shape_.d0 = d0;
        shape_.d1 = d1;
        shape_.d2 = d2;
        shape_.dtype = dtype;
        shape_.op = op;
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "elementwise: dtype must be float16 or float32, not " << t;
        _halide_user_assert(shape_.binary() || shape_.op == "gelu" || shape_.op == "silu" || shape_.op == "relu" ||
                            shape_.gated())
            << "elementwise: op must be add, mul, gelu, silu, relu or swiglu, not '" << shape_.op << "'";
        _halide_user_assert(shape_.d0 > 0 && shape_.d1 > 0 && shape_.d2 > 0)
            << "elementwise: extents must be positive (got d0=" << shape_.d0 << " d1=" << shape_.d1 << " d2=" << shape_.d2
            << ")";
        _halide_user_assert(!shape_.gated() || !spyre::is_spyre() || shape_.d0 % spyre::stick_lanes(t) == 0)
            << "elementwise: for Spyre, op=swiglu needs d0 (the gate's width; a is 2 d0 wide) to be whole sticks of "
            << spyre::stick_lanes(t) << " " << t << " lanes, so the up half a(d0.., y, z) starts on a stick; d0="
            << shape_.d0 << " is not";
        // device_order's own message first (it says what the order means), then every knob's check.
        _halide_user_assert(device_order.value() == "zyx" || device_order.value() == "yzx")
            << "elementwise: device_order must be zyx or yzx (dims outermost first; x, the stick dim, last), not '"
            << device_order.value() << "'";
        (void)knob_options();  // every knob in its range or among its values (schedule_knobs.h)
        parse_broadcast(broadcast_b);
        shape_.gate_up_blocks = gate_up_blocks;
        _halide_user_assert(!shape_.gate_up_blocks || shape_.gated())
            << "elementwise: gate_up_blocks=true is a layout of op=swiglu's input, not of op=" << shape_.op;
        _halide_user_assert(!shape_.gate_up_blocks || device_order.value() == "zyx")
            << "elementwise: gate_up_blocks=true needs the default device_order (zyx), not " << device_order.value();
        if (shape_.gate_up_blocks) {
            spyre::check_tensor_fits("elementwise", "a", {{"2 d0 d1", 2LL * shape_.d0 * shape_.d1}, {"d2", shape_.d2}, {"", 1}}, t);
        } else {
            spyre::check_tensor_fits("elementwise", "a",
                                     {{shape_.gated() ? "2 d0" : "d0", shape_.a_d0()}, {"d1", shape_.d1}, {"d2", shape_.d2}}, t);
        }
        a = add_input<Buffer<>>("a", t, 3);
        if (shape_.binary()) b = add_input<Buffer<>>("b", t, 3);
        out = add_output<Buffer<>>("out", t, 3);
    }

    void generate() {
        plan_ = plan_for(knob_options());
        const Type t = dtype;
        // swiglu over blocks: the gate of out's (x, y, z) in a's row z (gate_up_blocks).
        const Expr a_x = shape_.gate_up_blocks ? x_ + 2 * shape_.d0 * y_ : Expr(x_);
        auto a_at = [&](const Expr &x) {
            return shape_.gate_up_blocks ? (*a)(x, z_, 0) : (*a)(x, y_, z_);
        };
        Expr v = cast<float>(a_at(a_x));
        Expr r;
        if (shape_.binary()) {
            const bool *bc = shape_.broadcast_b;
            Expr w = cast<float>((*b)(bc[0] ? Expr(0) : Expr(x_), bc[1] ? Expr(0) : Expr(y_), bc[2] ? Expr(0) : Expr(z_)));
            r = shape_.op == "add" ? v + w : v * w;
        } else if (shape_.op == "relu") {
            r = max(v, 0.0f);  // one SFU max per row; exact in fp16 and fp32
        } else if (shape_.op == "gelu") {
            // 0.5 w (1 + tanh(c w (1 + 0.044715 w^2))) over w = wide, a's row widened
            // once (every use of it reads the fp32 row: one cast, not one per use).
            Func wide("gelu_wide"), sq("gelu_sq");
            const Expr w = widened(wide, v);
            sq(x_, y_, z_) = w * w;
            r = 0.5f * w * (1.0f + tanh(0.7978845608f * w * (1.0f + 0.044715f * sq(x_, y_, z_))));
            intermediates_ = wide.defined() ? std::vector<Func>{wide, sq} : std::vector<Func>{sq};
        } else {
            // w / (1 + exp(-w)) over w = wide, the gate widened once.
            Func wide("silu_wide"), den("silu_den");
            const Expr w = widened(wide, v);
            den(x_, y_, z_) = 1.0f + exp(-w);
            r = w / den(x_, y_, z_);
            if (shape_.gated()) r = r * cast<float>(a_at(a_x + shape_.d0));  // silu(gate) * up
            intermediates_ = wide.defined() ? std::vector<Func>{wide, den} : std::vector<Func>{den};
        }
        result_(x_, y_, z_) = cast(t, r);
        (*out)(x_, y_, z_) = result_(x_, y_, z_);

        constrain_tensors();
    }

    // The fp32 row a unary op reads: v widened once into `wide` when a is fp16
    // (one sfu.cast per row), v itself when fp32 (wide stays undefined: a copy
    // would cost an SFU pass).
    Expr widened(Func &wide, const Expr &v) {
        if (Type(dtype).bits() != 16) return v;
        wide(x_, y_, z_) = v;
        return wide(x_, y_, z_);
    }

    // Spyre: rows padded to the plan's tile (d1); d0 to whole sticks; the plan's device order the layout.
    void constrain_tensors() {
        if (shape_.gate_up_blocks) {  // a row of a holds out's rows of blocks, d1 padded as out's
            spyre::constrain_tensor(*a, {2 * shape_.d0 * shape_.d1, shape_.d2, 1}, {2 * shape_.d0 * plan_.d1p, 1, 1});
        } else {
            spyre::constrain_tensor(*a, {shape_.a_d0(), shape_.d1, shape_.d2}, {1, plan_.tile_rows, 1});
        }
        spyre::constrain_tensor(*out, {shape_.d0, shape_.d1, shape_.d2}, {1, plan_.tile_rows, 1});
        if (b && plan_.b_packed) {
            // One value per row, its sticks along the rows (d1), packed: z, then x (extent 1), then y innermost.
            spyre::constrain_tensor(*b, {1, shape_.d1, shape_.broadcast_b[2] ? 1 : shape_.d2}, {1, plan_.d1p, 1}, 1);
            if (spyre::is_spyre()) spyre::set_device_layout(*b, spyre::StickLayout{1, {2, 0, 1}});
        } else if (b) {
            const bool *bc = shape_.broadcast_b;
            spyre::constrain_tensor(*b, {bc[0] ? 1 : shape_.d0, bc[1] ? 1 : shape_.d1, bc[2] ? 1 : shape_.d2},
                                    {1, bc[1] ? 1 : plan_.tile_rows, 1});
        }
        if (spyre::is_spyre() && plan_.device_order == "yzx") {
            const spyre::StickLayout rows_outermost{0, {1, 2, 0}};
            spyre::set_device_layout(*a, rows_outermost);
            spyre::set_device_layout(*out, rows_outermost);
            if (b) spyre::set_device_layout(*b, rows_outermost);
        }
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "spyre::ElementwiseSpyreOptions";
    std::string family() const { return "elementwise"; }
    spyre::ElementwiseSpyrePlan plan_for(const spyre::ElementwiseSpyreOptions &o) const {
        return spyre::plan_elementwise_spyre(shape_, o);
    }
    void schedule_spyre() { spyre::schedule_elementwise_spyre(funcs(), a->in(), b ? b->in() : Func(), shape_, plan_); }
    void schedule_host() { spyre::schedule_elementwise_host(funcs(), shape_, get_target()); }
    spyre::KnobValues shape_params() const {
        std::string bc;
        for (int d = 0; d < 3; d++) {
            if (shape_.broadcast_b[d]) bc += (bc.empty() ? "d" : ",d") + std::to_string(d);
        }
        spyre::KnobValues p = {{"d0", std::to_string(shape_.d0)}, {"d1", std::to_string(shape_.d1)},
                               {"d2", std::to_string(shape_.d2)}, {"dtype", spyre::dtype_param(shape_.dtype)},
                               {"op", shape_.op},                 {"broadcast_b", bc.empty() ? "none" : bc}};
        if (shape_.gate_up_blocks) p["gate_up_blocks"] = "true";
        return p;
    }
    std::string describe(const spyre::ElementwiseSpyrePlan &p) const {
        return "tiles of " + std::to_string(p.tile_rows) + " rows (d1 padded to " + std::to_string(p.d1p) +
               "), SFU vectors of " + std::to_string(p.row_vector) + " lanes, cores " + std::to_string(p.cores_d2) +
               " x " + std::to_string(p.cores_d1) + " x " + std::to_string(p.cores_d0) + " (d2 x d1 x d0), device order " +
               p.device_order + ", " + spyre::buffering_and_footprint(p.double_buffer, p.footprint_bytes);
    }
    // device_order is the layout of the tensors, not a line of the schedule.
    std::string knob_lines(const spyre::ElementwiseSpyreOptions &o) const {
        return spyre::knob_assignments(o, {"device_order"}) + "// device_order=" + o.device_order +
               ": the layout of a, b and out (constrain_tensors())\n";
    }
    std::string schedule_call() const {
        return "spyre::schedule_elementwise_spyre(f, a->in(), b ? b->in() : Func(), shape, "
               "spyre::plan_elementwise_spyre(shape, options));\n";
    }

    // The legalization of a stock schedule: rows per tile from its tile of out
    // along y (1, one row per parallel iteration, when y is not split), halved
    // until the planner accepts it; the dense layout; the fusion into the tiles.
    spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d, std::vector<std::string> *kept,
                                     std::vector<std::string> *changed) {
        const std::string o = Func(*out).name();
        const int stock_rows = d.tile(o, 0, y_.name()), stock_x = d.tile(o, 0, x_.name());
        spyre::ElementwiseSpyreOptions start;
        start.double_buffer = false;
        spyre::KnobValues v = spyre::knob_values(start);
        spyre::legalize_tile_rows(
            stock_rows, shape_.d1, v, [&](const spyre::KnobValues &kv) { (void)plan_for(options_from(kv)); }, kept);
        const spyre::StockFuncDecision *od = d.find(o);
        if (stock_x > 0 && !(od && od->stages[0].vector_width == stock_x)) {
            changed->push_back("x split by " + std::to_string(stock_x) + " -> whole rows per tile (d0 padded to sticks)");
        }
        kept->push_back("the dense layout, x innermost, then y, z (device_order=zyx)");
        spyre::legalize_fusion(d, result_, o, y_.name(), "per tile of rows in the scratchpad", kept, changed);
        for (const Func &g : intermediates_) {
            spyre::legalize_fusion(d, g, result_.name(), y_.name(), "per row of the tile in the scratchpad", kept, changed);
        }
        spyre::legalize_parallel_and_vectors(d, o, spyre::stick_lanes(shape_.dtype), kept, changed);
        return v;
    }

private:
    spyre::ElementwiseFuncs funcs() { return {*out, result_, intermediates_, x_, y_, z_}; }

    // "d1", "d0,d2", "" or "none": the dims along which b has extent 1.
    void parse_broadcast(const std::string &spec) {
        std::stringstream ss(spec);
        std::string item;
        while (std::getline(ss, item, ',')) {
            if (item.empty() || item == "none") continue;
            _halide_user_assert(item == "d0" || item == "d1" || item == "d2")
                << "elementwise: broadcast_b takes a comma-separated list of d0, d1, d2, not '" << spec << "'";
            shape_.broadcast_b[item[1] - '0'] = true;
        }
        _halide_user_assert(shape_.binary() || spec.empty() || spec == "none")
            << "elementwise: broadcast_b is only meaningful for the binary ops add and mul";
    }

    Var x_{"x"}, y_{"y"}, z_{"z"};
    Func result_{"result"};
    std::vector<Func> intermediates_;  // unary ops: Funcs result reads (inlined on the host)
    spyre::ElementwiseShape shape_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Elementwise, elementwise)
