// Reductions of a 3-D tensor in(x, y, z) (x = d0 innermost, the stick
// dimension) over one axis: op = sum, mean or max, axis = 0, 1 or 2. The
// output keeps the other two dims in order (axis 0: out(y, z); axis 1:
// out(x, z); axis 2: out(x, y)). Shapes and dtype (float16 or float32) are
// static GeneratorParams; float16 widens to float32 (wide), accumulates in
// float32 (acc) and rounds once. The reduction runs over the true extent of
// the axis (Spyre tensors are padded to whole sticks and tiles; the padding
// never enters a sum or a max). The schedules are in schedules/reduce_schedule.cpp.
#include "Halide.h"
#include "reduce_schedule.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Reduce : public Generator<Reduce> {
public:
    GeneratorParam<int> d0{"d0", 1024};
    GeneratorParam<int> d1{"d1", 2048};
    GeneratorParam<int> d2{"d2", 4};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<std::string> op{"op", "sum"};
    GeneratorParam<int> axis{"axis", 0};
    // Knob of the Spyre schedule (see ReduceSpyreOptions); the default is the hand schedule.
    GeneratorParam<bool> double_buffer{"double_buffer", true};
    GeneratorParam<int> max_cores{"max_cores", 32};
    GeneratorParam<int> tile{"tile", 0};    // 0: chosen by the planner
    GeneratorParam<int> chunk{"chunk", 0};  // 0: chosen by the planner

    Input<Buffer<>> *in = nullptr;    // in(x, y, z)
    Output<Buffer<>> *out = nullptr;  // out(u, v): the dims other than `axis`

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "reduce: dtype must be float16 or float32, not " << t;
        _halide_user_assert(std::string(op) == "sum" || std::string(op) == "mean" || std::string(op) == "max")
            << "reduce: op must be sum, mean or max, not '" << std::string(op) << "'";
        _halide_user_assert(axis >= 0 && axis <= 2) << "reduce: axis must be 0, 1 or 2, not " << (int)axis;
        _halide_user_assert(d0 > 0 && d1 > 0 && d2 > 0) << "reduce: extents must be positive";
        _halide_user_assert(max_cores >= 1 && tile >= 0 && chunk >= 0)
            << "reduce: max_cores must be >= 1 and tile, chunk >= 0 (0: chosen by the planner)";
        in = add_input<Buffer<>>("in", t, 3);
        out = add_output<Buffer<>>("out", t, 2);
    }

    void generate() {
        shape_ = spyre::ReduceShape{d0, d1, d2, dtype, op, axis};
        spyre::ReduceSpyreOptions options;
        options.double_buffer = double_buffer;
        options.max_cores = max_cores;
        options.tile = tile;
        options.chunk = chunk;
        plan_ = spyre::plan_reduce_spyre(shape_, options);
        const Type t = dtype;
        const int n = shape_.reduced();
        r_ = RDom(0, n, "r");

        wide_(x_, y_, z_) = cast<float>((*in)(x_, y_, z_));
        Expr idx[3];
        idx[shape_.axis] = r_.x;
        idx[shape_.kept(0)] = u_;
        idx[shape_.kept(1)] = v_;
        const Expr w = wide_(idx[0], idx[1], idx[2]);
        if (shape_.op == "max") {
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

        // Spyre: the output's dim 0 (and the matching input dim) padded to the
        // tile; the reduced axis keeps its true extent (except x, padded to sticks).
        std::vector<int> in_multiples = {1, 1, 1};
        in_multiples[shape_.kept(0)] = plan_.tile;
        spyre::constrain_tensor(*in, {shape_.d0, shape_.d1, shape_.d2}, in_multiples);
        spyre::constrain_tensor(*out, {shape_.extent(shape_.kept(0)), shape_.extent(shape_.kept(1))}, {plan_.tile, 1});
    }

    void schedule() {
        const spyre::ReduceFuncs f{*out, result_, acc_, wide_, r_, u_, v_, x_};
        // auto_schedule=true (Halide's GeneratorParam): the stock autoscheduler given with -p/-s schedules
        // the pipeline instead of the hand schedules; tensors, estimates and the Spyre lowering stay.
        const bool hand = !get_auto_schedule();
        if (spyre::is_spyre()) {
            if (hand) {
                // fp32 reductions across sticks stage `wide` (a copy of in) directly.
                const bool stage_input = shape_.axis == 0 || shape_.dtype == Float(16);
                spyre::schedule_reduce_spyre(f, stage_input ? in->in() : Func(), shape_, plan_);
            }
            spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("reduce"));
        } else if (hand) {
            spyre::schedule_reduce_host(f, shape_, get_target());
        }
    }

private:
    Var x_{"x"}, y_{"y"}, z_{"z"}, u_{"u"}, v_{"v"};
    Func wide_{"wide"}, acc_{"acc"}, result_{"result"};
    RDom r_;
    spyre::ReduceShape shape_;
    spyre::ReduceSpyrePlan plan_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Reduce, reduce)
