// Batched matrix multiply: C(n, m, b) = sum_k A(k, m, b) * B(n, k, b).
//
// Shapes are static (GeneratorParams), innermost dimension first. fp16
// kernels accumulate in fp32 in the algorithm itself. For Spyre builds the
// tensors are padded (tensor_constraints.h): K to whole sticks of the input
// type, identically in A and B, and the reduction runs over the padded K; the
// padding holds zeros, so the result is the same.
//
// The schedules live in schedules/bmm_schedule.cpp.
#include "Halide.h"
#include "bmm_schedule.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Bmm : public Generator<Bmm> {
public:
    GeneratorParam<int> batch{"batch", 8};
    GeneratorParam<int> m_size{"m", 512};
    GeneratorParam<int> n_size{"n", 512};
    GeneratorParam<int> k_size{"k", 512};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    // Knobs of the Spyre schedule (see BmmSpyreOptions); the defaults are the hand schedule.
    GeneratorParam<int> max_cores{"max_cores", 32};
    GeneratorParam<int> tile_m{"tile_m", 0};
    GeneratorParam<int> tile_n{"tile_n", 0};
    GeneratorParam<int> tile_k{"tile_k", 0};
    GeneratorParam<bool> resident_b{"resident_b", true};
    GeneratorParam<bool> double_buffer{"double_buffer", true};

    // Added in configure() because their type is a GeneratorParam.
    Input<Buffer<>> *A = nullptr;   // A(k, m, b)
    Input<Buffer<>> *B = nullptr;   // B(n, k, b)
    Output<Buffer<>> *C = nullptr;  // C(n, m, b)

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "bmm: dtype must be float16 or float32, not " << t;
        _halide_user_assert(batch >= 1 && m_size >= 1 && n_size >= 1 && k_size >= 1)
            << "bmm: batch, m, n and k must be positive (got batch=" << (int)batch << " m=" << (int)m_size << " n=" << (int)n_size
            << " k=" << (int)k_size << ")";
        _halide_user_assert(max_cores >= 1 && tile_m >= 0 && tile_n >= 0 && tile_k >= 0)
            << "bmm: max_cores must be >= 1 and tile_m, tile_n, tile_k >= 0 (0: chosen by the planner)";
        A = add_input<Buffer<>>("A", t, 3);
        B = add_input<Buffer<>>("B", t, 3);
        C = add_output<Buffer<>>("C", t, 3);
    }

    void generate() {
        shape_ = spyre::BmmShape{batch, m_size, n_size, k_size, dtype};
        plan_ = spyre::plan_bmm_spyre(shape_, spyre::BmmSpyreOptions{max_cores, tile_m, tile_n, tile_k, resident_b, double_buffer});

        // Reduce over the padded K (== K for host builds).
        k_ = RDom(0, spyre::padded_extent(shape_.k, spyre::stick_lanes(shape_.dtype)), "k");
        acc_(n_, m_, b_) = 0.0f;
        acc_(n_, m_, b_) += cast<float>((*A)(k_, m_, b_)) * cast<float>((*B)(n_, k_, b_));
        result_(n_, m_, b_) = cast(shape_.dtype, acc_(n_, m_, b_));
        (*C)(n_, m_, b_) = result_(n_, m_, b_);

        // Multiples are the Spyre tiles (ignored by host builds); K of A and B
        // is padded identically, to whole input sticks.
        spyre::constrain_tensor(*A, {shape_.k, shape_.m, shape_.batch}, {plan_.in_lanes, plan_.tm, 1});
        spyre::constrain_tensor(*B, {shape_.n, shape_.k, shape_.batch}, {plan_.tn, plan_.in_lanes, 1});
        spyre::constrain_tensor(*C, {shape_.n, shape_.m, shape_.batch}, {plan_.tn, plan_.tm, 1});
    }

    void schedule() {
        const spyre::BmmFuncs funcs{*C, result_, acc_, k_, n_, m_, b_};
        // auto_schedule=true (Halide's GeneratorParam): the stock autoscheduler given with -p/-s schedules
        // the pipeline instead of the hand schedules; tensors, estimates and the Spyre lowering stay.
        const bool hand = !get_auto_schedule();
        if (spyre::is_spyre()) {
            if (hand) {
                spyre::schedule_bmm_spyre(funcs, A->in(), B->in(), shape_, plan_);
            }
            spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("bmm"));
        } else if (hand) {
            spyre::schedule_bmm_host(funcs, shape_, get_target());
        }
    }

private:
    Var n_{"n"}, m_{"m"}, b_{"b"};
    Func acc_{"acc"}, result_{"result"};
    RDom k_;
    spyre::BmmShape shape_;
    spyre::BmmSpyrePlan plan_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Bmm, bmm)
