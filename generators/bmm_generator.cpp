// Batched matrix multiply: C(n, m, b) = sum_k A(k, m, b) * B(n, k, b), or with
// broadcast_b=true a 3-D @ 2-D product C(n, m, b) = sum_k A(k, m, b) * B(n, k):
// one weight for every batch, as torch.matmul broadcasts it.
//
// Shapes are static (GeneratorParams), innermost dimension first. fp16
// kernels accumulate in fp32 in the algorithm itself. For Spyre builds the
// tensors are padded (tensor_constraints.h): K to whole sticks of the input
// type, identically in A and B, and the reduction runs over the padded K; the
// padding holds zeros, so the result is the same.
//
// The schedules live in schedules/bmm_schedule.cpp.

#include "Halide.h"
#include "family_generator.h"
#include "bmm_schedule.h"
#include "schedule_arithmetic.h"
#include "shape_limits.h"
#include "stock_legalization_rules.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Bmm : public spyre::FamilyGenerator<Bmm, spyre::BmmSpyreOptions, spyre::BmmSpyrePlan> {
public:
    GeneratorParam<int> batch{"batch", 8};
    GeneratorParam<int> m_size{"m", 512};
    GeneratorParam<int> n_size{"n", 512};
    GeneratorParam<int> k_size{"k", 512};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    // B is one n x k matrix broadcast over the batch (B(n, k)): the product is a matmul of
    // batch x m rows, and the Spyre schedule is planned as one (schedules/bmm_schedule.h).
    GeneratorParam<bool> broadcast_b{"broadcast_b", false};
    // Knobs of the Spyre schedule (SPYRE_BMM_KNOBS); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_BMM_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_BMM_KNOBS, spyre::BmmSpyreOptions)

    // Added in configure() because their type is a GeneratorParam.
    Input<Buffer<>> *A = nullptr;   // A(k, m, b)
    Input<Buffer<>> *B = nullptr;   // B(n, k, b), or B(n, k) with broadcast_b
    Output<Buffer<>> *C = nullptr;  // C(n, m, b)

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "bmm: dtype must be float16 or float32, not " << t;
        _halide_user_assert(batch >= 1 && m_size >= 1 && n_size >= 1 && k_size >= 1)
            << "bmm: batch, m, n and k must be positive (got batch=" << (int)batch << " m=" << (int)m_size << " n=" << (int)n_size
            << " k=" << (int)k_size << ")";
        (void)knob_options();  // every knob in its range or among its values (schedule_knobs.h)
        const spyre::ShapeDim b{"batch", batch}, m{"m", m_size}, n{"n", n_size}, k{"k", k_size};
        spyre::check_tensor_fits("bmm", "A", {k, m, b}, t);
        if (broadcast_b) {
            spyre::check_tensor_fits("bmm", "B", {n, k}, t);
        } else {
            spyre::check_tensor_fits("bmm", "B", {n, k, b}, t);
        }
        spyre::check_tensor_fits("bmm", "C", {n, m, b}, t);
        A = add_input<Buffer<>>("A", t, 3);
        B = add_input<Buffer<>>("B", t, broadcast_b ? 2 : 3);
        C = add_output<Buffer<>>("C", t, 3);
    }

    void generate() {
        shape_ = spyre::BmmShape{batch, m_size, n_size, k_size, dtype, broadcast_b};
        plan_ = plan_for(knob_options());

        // Reduce over the padded K (== K for host builds).
        k_ = RDom(0, spyre::padded_extent(shape_.k, spyre::stick_lanes(shape_.dtype)), "k");
        acc_(n_, m_, b_) = 0.0f;
        const Expr b_value = shape_.broadcast_b ? (*B)(n_, k_) : (*B)(n_, k_, b_);
        acc_(n_, m_, b_) += cast<float>((*A)(k_, m_, b_)) * cast<float>(b_value);
        result_(n_, m_, b_) = cast(shape_.dtype, acc_(n_, m_, b_));
        (*C)(n_, m_, b_) = result_(n_, m_, b_);

        constrain_tensors();
    }

    // Multiples are the Spyre tiles (ignored by host builds); K of A and B
    // is padded identically, to whole input sticks.
    void constrain_tensors() {
        spyre::constrain_tensor(*A, {shape_.k, shape_.m, shape_.batch}, {plan_.in_lanes, plan_.tm, 1});
        if (shape_.broadcast_b) {
            spyre::constrain_tensor(*B, {shape_.n, shape_.k}, {plan_.tn, plan_.in_lanes});
        } else {
            spyre::constrain_tensor(*B, {shape_.n, shape_.k, shape_.batch}, {plan_.tn, plan_.in_lanes, 1});
        }
        spyre::constrain_tensor(*C, {shape_.n, shape_.m, shape_.batch}, {plan_.tn, plan_.tm, 1});
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "spyre::BmmSpyreOptions";
    std::string family() const { return "bmm"; }
    spyre::BmmSpyrePlan plan_for(const spyre::BmmSpyreOptions &o) const { return spyre::plan_bmm_spyre(shape_, o); }
    void schedule_spyre() { spyre::schedule_bmm_spyre(funcs(), A->in(), B->in(), shape_, plan_); }
    void schedule_host() { spyre::schedule_bmm_host(funcs(), shape_, get_target()); }
    spyre::KnobValues shape_params() const {
        return {{"batch", std::to_string(shape_.batch)}, {"m", std::to_string(shape_.m)},
                {"n", std::to_string(shape_.n)},         {"k", std::to_string(shape_.k)},
                {"dtype", spyre::dtype_param(shape_.dtype)}, {"broadcast_b", shape_.broadcast_b ? "true" : "false"}};
    }
    // K chunks: whole, or 256 to 2048 when they divide the padded K.
    std::map<std::string, std::vector<int>> knob_candidates() const {
        const int lanes = spyre::stick_lanes(shape_.dtype);
        const int kp = spyre::padded_extent(shape_.k, lanes);
        std::vector<int> k_chunks = {0};
        for (int c : {256, 512, 1024, 2048}) {
            if (c % lanes == 0 && c < kp && kp % c == 0) k_chunks.push_back(c);
        }
        std::map<std::string, std::vector<int>> c = {{"tile_k", k_chunks}};
        // Planned as the matmul it is (batch 1, or one B for every batch): never a resident B slice.
        if (shape_.is_matmul()) c["resident_b"] = {};
        return c;
    }
    std::string describe(const spyre::BmmSpyrePlan &p) const {
        return "tiles " + std::to_string(p.tm) + " x " + std::to_string(p.tn) + " x " + std::to_string(p.tk) +
               " (m x n x k), cores " + std::to_string(p.cb) + " x " + std::to_string(p.cm) + " x " + std::to_string(p.cn) +
               " (batch x m x n), B " + (p.b_resident ? "resident" : "staged per tile") + ", " +
               spyre::buffering_and_footprint(p.double_buffer, p.footprint_bytes);
    }
    std::string schedule_call() const {
        return "spyre::schedule_bmm_spyre(funcs, A->in(), B->in(), shape, spyre::plan_bmm_spyre(shape, options));\n";
    }

    // The legalization of a stock schedule (see ScheduleTemplate::legalize): its
    // tiles of C along m and n and its K split, rounded to the PT and stick rules
    // and shrunk until they fit; its fusion of acc into C's tiles; one static
    // core split in place of its parallel loops; whole-stick vectors.
    spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d, std::vector<std::string> *kept,
                                     std::vector<std::string> *changed) {
        const std::string out = Func(*C).name(), acc = acc_.name();
        const int lanes = spyre::stick_lanes(shape_.dtype);
        const int kp = spyre::padded_extent(shape_.k, lanes);
        auto describe_tile = [](int t) { return t > 0 ? std::to_string(t) : std::string("untiled"); };
        const int stock_m = d.tile(out, 0, "m"), stock_n = d.tile(out, 0, "n"), stock_k = d.tile(acc, 1, k_.x.name());
        int tm = spyre::round_up(std::min(stock_m > 0 ? stock_m : shape_.m, 512), 8);
        int tn = spyre::round_up(std::min(stock_n > 0 ? stock_n : shape_.n, 512), lanes);
        int tk = 0;
        if (stock_k > 0) {
            tk = spyre::round_up(stock_k, lanes);
            while (kp % tk != 0) tk += lanes;
            if (tk >= kp) tk = 0;
        }
        spyre::BmmSpyreOptions start;
        start.tile_m = tm, start.tile_n = tn, start.tile_k = tk;
        start.resident_b = false, start.double_buffer = false, start.share_a = false;
        spyre::KnobValues v = spyre::knob_values(start);
        // Shrink the tile until the planner finds a K chunk that fits the scratchpad.
        const bool shrank = spyre::shrink_matmul_tile_to_fit(&tm, &tn, lanes, [&](int m, int n) {
            v["tile_m"] = std::to_string(m), v["tile_n"] = std::to_string(n);
            (void)spyre::plan_bmm_spyre(shape_, options_from(v));
        });
        const std::string shrunk = shrank ? " (shrunk to fit the scratchpad)" : "";
        kept->push_back("tile of C: " + describe_tile(stock_m) + " x " + describe_tile(stock_n) + " (m x n) -> " +
                        std::to_string(tm) + " x " + std::to_string(tn) +
                        " (whole 8-row PT passes and whole sticks)" + shrunk);
        if (stock_k > 0) {
            kept->push_back("K split by " + std::to_string(stock_k) + " -> " +
                            (tk > 0 ? "K chunks of " + std::to_string(tk) + " staged one at a time" : "the whole K per tile"));
        }
        const spyre::StockFuncDecision *a = d.find(acc_.name());
        if (a && a->compute_at.rfind(out + ".", 0) == 0) {
            kept->push_back("acc fused into C's tiles (computed at " + a->compute_at + "): accumulated per tile in the scratchpad");
        } else {
            changed->push_back("acc computed " + (a ? a->compute_at : std::string("inline")) +
                               " -> per tile of C in the scratchpad (the PT accumulates a tile at a time)");
        }
        spyre::legalize_parallel_and_vectors(d, out, lanes, kept, changed);
        kept->push_back("B read per tile, as the stock schedule keeps nothing resident");
        kept->push_back("A loaded by every core: no stock autoscheduler shares tiles over the ring");
        return v;
    }

private:
    spyre::BmmFuncs funcs() { return {*C, result_, acc_, k_, n_, m_, b_}; }

    Var n_{"n"}, m_{"m"}, b_{"b"};
    Func acc_{"acc"}, result_{"result"};
    RDom k_;
    spyre::BmmShape shape_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Bmm, bmm)
