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
#include "Halide.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "tensor_constraints.h"
#include "transpose_schedule.h"

namespace {

using namespace Halide;

class Transpose : public Generator<Transpose> {
public:
    GeneratorParam<int> x_size{"x", 1024};
    GeneratorParam<int> y_size{"y", 1024};
    GeneratorParam<int> batch{"batch", 0};  // 0: 2-D tensors; >= 1: 3-D with this batch
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    // Knob of the Spyre schedule (see TransposeSpyreOptions); the default is the hand schedule.
    GeneratorParam<bool> double_buffer{"double_buffer", true};

    Input<Buffer<>> *in = nullptr;    // in(x, y[, b])
    Output<Buffer<>> *out = nullptr;  // out(y, x[, b])

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "transpose: dtype must be float16 or float32, not " << t;
        _halide_user_assert((int)x_size >= 1 && (int)y_size >= 1)
            << "transpose: x and y must be positive (got x=" << (int)x_size << " y=" << (int)y_size << ")";
        _halide_user_assert((int)batch >= 0) << "transpose: batch must be >= 0 (0: 2-D), not " << (int)batch;
        const int rank = batched() ? 3 : 2;
        in = add_input<Buffer<>>("in", t, rank);
        out = add_output<Buffer<>>("out", t, rank);
    }

    void generate() {
        const Type t = dtype;
        spyre::TransposeSpyreOptions options;
        options.double_buffer = double_buffer;
        plan_ = spyre::plan_transpose_spyre(x_size, y_size, batch, t, options);
        if (batched()) {
            transposed_(y_, x_, b_) = (*in)(x_, y_, b_);
            (*out)(y_, x_, b_) = transposed_(y_, x_, b_);
            spyre::constrain_tensor(*in, {x_size, y_size, batch}, {plan_.tile, plan_.tile, 1});
            spyre::constrain_tensor(*out, {y_size, x_size, batch}, {plan_.tile, plan_.tile, 1});
        } else {
            transposed_(y_, x_) = (*in)(x_, y_);
            (*out)(y_, x_) = transposed_(y_, x_);
            spyre::constrain_tensor(*in, {x_size, y_size}, {plan_.tile, plan_.tile});
            spyre::constrain_tensor(*out, {y_size, x_size}, {plan_.tile, plan_.tile});
        }
    }

    void schedule() {
        const spyre::TransposeFuncs f{*out, transposed_, y_, x_, b_, batched()};
        // auto_schedule=true (Halide's GeneratorParam): the stock autoscheduler given with -p/-s schedules
        // the pipeline instead of the hand schedules; tensors, estimates and the Spyre lowering stay.
        const bool hand = !get_auto_schedule();
        if (spyre::is_spyre()) {
            if (hand) {
                spyre::schedule_transpose_spyre(f, in->in(), plan_);
            }
            spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("transpose"));
        } else if (hand) {
            spyre::schedule_transpose_host(f, get_target());
        }
    }

private:
    bool batched() const { return (int)batch > 0; }

    Var y_{"y"}, x_{"x"}, b_{"b"};
    Func transposed_{"transposed"};
    spyre::TransposeSpyrePlan plan_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Transpose, transpose)
