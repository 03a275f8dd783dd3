// Elementwise kernels over a 3-D tensor (x = d0 innermost, y = d1, z = d2):
//   op = add, mul:   out(x, y, z) = a(x, y, z) op b(bx, by, bz)
//   op = gelu, silu: out(x, y, z) = op(a(x, y, z))
// `broadcast_b` lists the dims along which b has extent 1 ("", "d1", "d0,d2",
// ...); b is read at index 0 along them. gelu is the tanh approximation
//   gelu(v) = 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
// (the SFU has tanh and no erf); silu(v) = v / (1 + exp(-v)).
// The unary ops are written as a few Funcs in which every definition reads
// each value once (gelu: wide = v, sq = v * v, result; silu: den = 1 + exp(-v),
// result). The host inlines them; the Spyre schedule computes them row by row
// in scratchpad. The reason: a value read twice in one definition is CSE'd by
// Halide into a vector LetStmt, which the Spyre backend does not compile yet.
// Shapes and dtype (float16 or float32) are static GeneratorParams; float16
// computes in float32 and rounds once. The schedules are in
// schedules/elementwise_schedule.cpp.
#include <sstream>
#include <vector>

#include "Halide.h"
#include "elementwise_schedule.h"
#include "spyre_schedule.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Elementwise : public Generator<Elementwise> {
public:
    GeneratorParam<int> d0{"d0", 1024};
    GeneratorParam<int> d1{"d1", 2048};
    GeneratorParam<int> d2{"d2", 2};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<std::string> op{"op", "add"};
    GeneratorParam<std::string> broadcast_b{"broadcast_b", ""};
    // Knob of the Spyre schedule (see ElementwiseSpyreOptions); the default is the hand schedule.
    GeneratorParam<bool> double_buffer{"double_buffer", true};
    GeneratorParam<int> max_cores{"max_cores", 32};
    GeneratorParam<int> tile_rows{"tile_rows", 0};  // 0: chosen by the planner
    // Device layout of a, b and out: their dims outermost first, x (the stick dim) last: "zyx" or "yzx".
    GeneratorParam<std::string> device_order{"device_order", "zyx"};

    Input<Buffer<>> *a = nullptr;     // a(x, y, z)
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
        _halide_user_assert(shape_.binary() || shape_.op == "gelu" || shape_.op == "silu")
            << "elementwise: op must be add, mul, gelu or silu, not '" << shape_.op << "'";
        _halide_user_assert(shape_.d0 > 0 && shape_.d1 > 0 && shape_.d2 > 0) << "elementwise: extents must be positive";
        _halide_user_assert(max_cores >= 1 && tile_rows >= 0)
            << "elementwise: max_cores must be >= 1 and tile_rows >= 0 (0: chosen by the planner)";
        _halide_user_assert(device_order.value() == "zyx" || device_order.value() == "yzx")
            << "elementwise: device_order must be zyx or yzx (dims outermost first; x, the stick dim, last), not '"
            << device_order.value() << "'";
        parse_broadcast(broadcast_b);
        a = add_input<Buffer<>>("a", t, 3);
        if (shape_.binary()) b = add_input<Buffer<>>("b", t, 3);
        out = add_output<Buffer<>>("out", t, 3);
    }

    void generate() {
        spyre::ElementwiseSpyreOptions options;
        options.double_buffer = double_buffer;
        options.max_cores = max_cores;
        options.tile_rows = tile_rows;
        plan_ = spyre::plan_elementwise_spyre(shape_, options);
        const Type t = dtype;
        Expr v = cast<float>((*a)(x_, y_, z_));
        Expr r;
        if (shape_.binary()) {
            const bool *bc = shape_.broadcast_b;
            Expr w = cast<float>((*b)(bc[0] ? Expr(0) : Expr(x_), bc[1] ? Expr(0) : Expr(y_), bc[2] ? Expr(0) : Expr(z_)));
            r = shape_.op == "add" ? v + w : v * w;
        } else if (shape_.op == "gelu") {
            // 0.5 v (1 + tanh(c v (1 + 0.044715 v^2))), v^2 = wide * v.
            Func wide("gelu_wide"), sq("gelu_sq");
            wide(x_, y_, z_) = v;
            sq(x_, y_, z_) = wide(x_, y_, z_) * v;
            r = 0.5f * wide(x_, y_, z_) * (1.0f + tanh(0.7978845608f * v * (1.0f + 0.044715f * sq(x_, y_, z_))));
            intermediates_ = {wide, sq};
        } else {
            Func den("silu_den");
            den(x_, y_, z_) = 1.0f + exp(-v);
            r = v / den(x_, y_, z_);
            intermediates_ = {den};
        }
        result_(x_, y_, z_) = cast(t, r);
        (*out)(x_, y_, z_) = result_(x_, y_, z_);

        // Spyre: rows padded to the plan's tile (d1); d0 to whole sticks.
        spyre::constrain_tensor(*a, {shape_.d0, shape_.d1, shape_.d2}, {1, plan_.tile_rows, 1});
        spyre::constrain_tensor(*out, {shape_.d0, shape_.d1, shape_.d2}, {1, plan_.tile_rows, 1});
        if (b) {
            const bool *bc = shape_.broadcast_b;
            spyre::constrain_tensor(*b, {bc[0] ? 1 : shape_.d0, bc[1] ? 1 : shape_.d1, bc[2] ? 1 : shape_.d2},
                                    {1, bc[1] ? 1 : plan_.tile_rows, 1});
        }
        if (spyre::is_spyre() && device_order.value() == "yzx") {
            const spyre::StickLayout rows_outermost{0, {1, 2, 0}};
            spyre::set_device_layout(*a, rows_outermost);
            spyre::set_device_layout(*out, rows_outermost);
            if (b) spyre::set_device_layout(*b, rows_outermost);
        }
    }

    void schedule() {
        const spyre::ElementwiseFuncs f{*out, result_, intermediates_, x_, y_, z_};
        // auto_schedule=true (Halide's GeneratorParam): the stock autoscheduler given with -p/-s schedules
        // the pipeline instead of the hand schedules; tensors, estimates and the Spyre lowering stay.
        const bool hand = !get_auto_schedule();
        if (spyre::is_spyre()) {
            if (hand) {
                spyre::schedule_elementwise_spyre(f, a->in(), b ? b->in() : Func(), shape_, plan_);
            }
            spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("elementwise"));
        } else if (hand) {
            spyre::schedule_elementwise_host(f, shape_, get_target());
        }
    }

private:
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
    spyre::ElementwiseSpyrePlan plan_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Elementwise, elementwise)
