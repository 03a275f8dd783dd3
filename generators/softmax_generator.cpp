// Softmax over the last (innermost) dimension, numerically stable:
//   out(x, y) = exp(in(x, y) - max_x in(x, y)) / sum_x exp(in(x, y) - max_x in(x, y))
// Shapes are static (GeneratorParams `cols` = X, `rows` = Y); float16 inputs
// compute in float32 and round once. The reductions run over the true X only
// (Spyre tensors are padded to whole sticks; padding must not enter a max or a sum).
// The schedules are in schedules/softmax_schedule.cpp.
#include "Halide.h"
#include "softmax_schedule.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Softmax : public Generator<Softmax> {
public:
    GeneratorParam<int> cols{"cols", 1024};
    GeneratorParam<int> rows{"rows", 2048};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    // Knobs of the Spyre schedule (see SoftmaxSpyreOptions); the defaults are the hand schedule.
    GeneratorParam<int> max_cores{"max_cores", 32};
    GeneratorParam<int> tile_rows{"tile_rows", 0};
    GeneratorParam<bool> row_vectors{"row_vectors", true};
    GeneratorParam<bool> double_buffer{"double_buffer", true};

    Input<Buffer<>> *in = nullptr;    // in(x, y)
    Output<Buffer<>> *out = nullptr;  // out(x, y)

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "softmax: dtype must be float16 or float32, not " << t;
        _halide_user_assert(cols >= 1 && rows >= 1)
            << "softmax: cols and rows must be positive (got cols=" << (int)cols << " rows=" << (int)rows << ")";
        _halide_user_assert(max_cores >= 1 && tile_rows >= 0) << "softmax: max_cores must be >= 1 and tile_rows >= 0";
        in = add_input<Buffer<>>("in", t, 2);
        out = add_output<Buffer<>>("out", t, 2);
    }

    void generate() {
        const Type t = dtype;
        plan_ = spyre::plan_softmax_spyre(cols, rows, t, spyre::SoftmaxSpyreOptions{max_cores, tile_rows, row_vectors, double_buffer});
        RDom r(0, (int)cols, "r");
        Expr v = cast<float>((*in)(x_, y_));
        max_(y_) = Float(32).min();
        max_(y_) = max(max_(y_), cast<float>((*in)(r, y_)));
        exp_(x_, y_) = exp(v - max_(y_));
        sum_(y_) = 0.0f;
        sum_(y_) += exp_(r, y_);
        result_(x_, y_) = cast(t, exp_(x_, y_) / sum_(y_));
        (*out)(x_, y_) = result_(x_, y_);
        spyre::constrain_tensor(*in, {cols, rows}, {1, plan_.tile_rows});
        spyre::constrain_tensor(*out, {cols, rows}, {1, plan_.tile_rows});
    }

    void schedule() {
        spyre::SoftmaxFuncs f{*out, result_, exp_, max_, sum_, x_, y_};
        // auto_schedule=true (Halide's GeneratorParam): the stock autoscheduler given with -p/-s schedules
        // the pipeline instead of the hand schedules; tensors, estimates and the Spyre lowering stay.
        const bool hand = !get_auto_schedule();
        if (spyre::is_spyre()) {
            if (hand) {
                spyre::schedule_softmax_spyre(f, in->in(), plan_);
            }
            spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("softmax"));
        } else if (hand) {
            spyre::schedule_softmax_host(f, get_target());
        }
    }

private:
    Var x_{"x"}, y_{"y"};
    Func max_{"row_max"}, exp_{"row_exp"}, sum_{"row_sum"}, result_{"result"};
    spyre::SoftmaxSpyrePlan plan_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Softmax, softmax)
