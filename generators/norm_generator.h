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
#pragma once

#include "Halide.h"
#include "norm_schedule.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace spyre {

template <bool Centered>
class NormGenerator : public Halide::Generator<NormGenerator<Centered>> {
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
    // Knob of the Spyre schedule (see NormSpyreOptions); the default is the hand schedule.
    GeneratorParam<bool> double_buffer{"double_buffer", true};

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
        in = this->template add_input<BufferAny>("in", t, 2);
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
        NormSpyreOptions options;
        options.double_buffer = double_buffer;
        plan_ = plan_norm_spyre(cols, rows, t, Centered, options);
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
        // Squared as an update (copy, then multiply by itself): `value * value` would become
        // a vector LetStmt after CSE, which the Spyre backend does not compile.
        sq_(x_, y_) = value;
        sq_(x_, y_) *= value;
        sumsq_(y_) = 0.0f;
        sumsq_(y_) += sq_(r, y_);
        inv_(y_) = 1.0f / sqrt(sumsq_(y_) * inv_n + (*eps));
        weight_f_(x_) = cast<float>((*weight)(x_));
        Expr normalized = value * inv_(y_) * weight_f_(x_);
        if (Centered) {
            bias_f_(x_) = cast<float>((*bias)(x_));
            normalized = normalized + bias_f_(x_);
        }
        result_(x_, y_) = cast(t, normalized);
        (*out)(x_, y_) = result_(x_, y_);
        constrain_tensor(*in, {cols, rows}, {1, plan_.tile_rows});
        constrain_tensor(*weight, {cols}, {1});
        if (Centered) {
            constrain_tensor(*bias, {cols}, {1});
        }
        constrain_tensor(*out, {cols, rows}, {1, plan_.tile_rows});
        eps->set_estimate(1e-5f);  // for auto_schedule=true
    }

    void schedule() {
        // rmsnorm leaves sum_, mean_, centered_ and bias_f_ undefined; the schedules check.
        NormFuncs f{*out, result_, sum_, mean_, centered_, sq_, sumsq_, inv_, weight_f_, bias_f_, x_, y_};
        // auto_schedule=true (Halide's GeneratorParam): the stock autoscheduler given with -p/-s schedules
        // the pipeline instead of the hand schedules; tensors, estimates and the Spyre lowering stay.
        const bool hand = !this->get_auto_schedule();
        if (is_spyre()) {
            if (hand) {
                schedule_norm_spyre(f, in->in(), weight->in(), Centered ? bias->in() : Halide::Func(), dtype, plan_);
            }
            attach_spyre_lowering(this->get_pipeline(), lowering_options_from_driver(kernel_name));
        } else if (hand) {
            schedule_norm_host(f, this->get_target());
        }
    }

private:
    Halide::Var x_{"x"}, y_{"y"};
    Halide::Func sum_{"row_sum"}, mean_{"row_mean"}, centered_{"centered"}, sq_{"sq"}, sumsq_{"row_sumsq"},
        inv_{"row_inv"}, weight_f_{"weight_f"}, bias_f_{"bias_f"}, result_{"result"};
    NormSpyrePlan plan_;
};

}  // namespace spyre
