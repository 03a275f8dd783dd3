// RMS normalization over the last (innermost) dimension:
//   out(x, y) = v(x, y) / sqrt(sum_x v(x, y)^2 / X + eps) * weight(x)
// with v = float32(in). Shapes are static (GeneratorParams `cols` = X, `rows`
// = Y); float16 tensors compute in float32 and round once. eps is a run-time
// scalar (Input<float>). The reduction runs over the true X only: Spyre
// tensors are padded to whole sticks and padding must not enter the sum.
// The schedules are in schedules/norm_schedule.cpp.
#include "Halide.h"
#include "norm_schedule.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class RmsNorm : public Generator<RmsNorm> {
public:
    GeneratorParam<int> cols{"cols", 4096};
    GeneratorParam<int> rows{"rows", 1024};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    // Knob of the Spyre schedule (see NormSpyreOptions); the default is the hand schedule.
    GeneratorParam<bool> double_buffer{"double_buffer", true};

    // Added in configure() because their type is a GeneratorParam (and to keep this order).
    Input<Buffer<>> *in = nullptr;      // in(x, y)
    Input<Buffer<>> *weight = nullptr;  // weight(x)
    Input<float> *eps = nullptr;        // run-time scalar
    Output<Buffer<>> *out = nullptr;    // out(x, y)

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "rmsnorm: dtype must be float16 or float32, not " << t;
        _halide_user_assert((int)cols >= 1 && (int)rows >= 1)
            << "rmsnorm: cols and rows must be positive (got cols=" << (int)cols << " rows=" << (int)rows << ")";
        in = add_input<Buffer<>>("in", t, 2);
        weight = add_input<Buffer<>>("weight", t, 1);
        eps = add_input<float>("eps");
        out = add_output<Buffer<>>("out", t, 2);
    }

    void generate() {
        const Type t = dtype;
        spyre::NormSpyreOptions options;
        options.double_buffer = double_buffer;
        plan_ = spyre::plan_norm_spyre(cols, rows, t, /*centered=*/false, options);
        const float inv_n = 1.0f / (float)(int)cols;
        RDom r(0, (int)cols, "r");
        Expr v = cast<float>((*in)(x_, y_));
        // Squared as an update (v, then multiplied by v): `v * v` would become a vector
        // LetStmt after CSE, which the Spyre backend does not compile.
        sq_(x_, y_) = v;
        sq_(x_, y_) *= v;
        sumsq_(y_) = 0.0f;
        sumsq_(y_) += sq_(r, y_);
        inv_(y_) = 1.0f / sqrt(sumsq_(y_) * inv_n + (*eps));
        weight_f_(x_) = cast<float>((*weight)(x_));
        result_(x_, y_) = cast(t, v * inv_(y_) * weight_f_(x_));
        (*out)(x_, y_) = result_(x_, y_);
        spyre::constrain_tensor(*in, {cols, rows}, {1, plan_.tile_rows});
        spyre::constrain_tensor(*weight, {cols}, {1});
        spyre::constrain_tensor(*out, {cols, rows}, {1, plan_.tile_rows});
        eps->set_estimate(1e-5f);  // for auto_schedule=true
    }

    void schedule() {
        spyre::NormFuncs f{*out, result_, Func(), Func(), Func(), sq_, sumsq_, inv_, weight_f_, Func(), x_, y_};
        // auto_schedule=true (Halide's GeneratorParam): the stock autoscheduler given with -p/-s schedules
        // the pipeline instead of the hand schedules; tensors, estimates and the Spyre lowering stay.
        const bool hand = !get_auto_schedule();
        if (spyre::is_spyre()) {
            if (hand) {
                spyre::schedule_norm_spyre(f, in->in(), weight->in(), Func(), dtype, plan_);
            }
            spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("rmsnorm"));
        } else if (hand) {
            spyre::schedule_norm_host(f, get_target());
        }
    }

private:
    Var x_{"x"}, y_{"y"};
    Func sq_{"sq"}, sumsq_{"row_sumsq"}, inv_{"row_inv"}, weight_f_{"weight_f"}, result_{"result"};
    spyre::NormSpyrePlan plan_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(RmsNorm, rmsnorm)
