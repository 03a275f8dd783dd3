// Scaled dot-product attention, per head h:
//   O = softmax(Q K^T * scale [+ causal mask]) V
// Dimensions are innermost first; every tensor is sticked along dimension 0:
//   Q(d, i, h)    queries: head dim d innermost          (d x s x heads)
//   Kt(j, d, h)   keys, pre-transposed: sequence j innermost (s x d x heads)
//   V(d, j, h)    values: head dim d innermost           (d x s x heads)
//   O(d, i, h)    output, like Q
// These layouts make both matmuls PT-legal: S = Q.K^T is
// acc[j-vector] += Kt[d, j-vector] * Q[i, d], and P.V is
// acc[d-vector] += V[j, d-vector] * P[i, j]. (A K stored like Q can be brought
// to Kt with the transpose generator.)
//
// GeneratorParams: d, s, heads, dtype (float16/float32; computes in float32),
// causal (key j attends only to queries i >= j), scale (0: 1/sqrt(d)).
//
// Formulation: streaming, not single-pass flash. Per query tile the keys and
// values stream through the scratchpad one KV tile at a time, in two passes:
// pass 1 computes the exact row max m (S tiles recomputed, never stored beyond
// a tile); pass 2 computes P = exp(s - m) tile by tile and accumulates
// [O | l] += P . [V | 1], where the ones column appended to V makes the row sum
// l part of the same PT matmul; finally O / l. The s x s scores are never
// materialized (in DRAM or in scratchpad). The price is computing Q.K^T twice
// (PT work and K traffic). The single-pass online softmax (running max with
// rescaling of O and l per KV tile) needs three recurrences over the KV tile
// loop updated in lockstep (O, m, l); Halide expresses that only as a Tuple
// reduction or compute_with-fused updates, and stick_vectorize / the backend
// do not take Tuple Funcs, so the exact max of pass 1 replaces the rescaling.
//
// Masks are tables in scratchpad, since the SFU has no iota: with causal,
// mask(z) = 0 for z < sp and -1e30 after, read at z = j - i + sp - 1 (a dense,
// affine vector load); without causal, mask(j) = -1e30 on the padded keys
// j >= s only (no mask at all when s is a whole number of tiles).
//
// For Spyre builds, d is padded to whole sticks and s to whole tiles
// (tensor_constraints.h); padded d holds zeros (no effect on Q.K^T or O) and
// padded keys are masked. The schedules are in schedules/attention_schedule.cpp.
#include <cmath>

#include "Halide.h"
#include "attention_schedule.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class Attention : public Generator<Attention> {
public:
    GeneratorParam<int> d_size{"d", 64};
    GeneratorParam<int> s_size{"s", 1024};
    GeneratorParam<int> heads{"heads", 8};
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<bool> causal{"causal", false};
    GeneratorParam<float> scale{"scale", 0.0f};
    // Knob of the Spyre schedule (see AttentionSpyreOptions).
    GeneratorParam<bool> double_buffer{"double_buffer", true};

    Input<Buffer<>> *Q = nullptr;     // Q(d, i, h)
    Input<Buffer<>> *Kt = nullptr;    // Kt(j, d, h)
    Input<Buffer<>> *V = nullptr;     // V(d, j, h)
    Output<Buffer<>> *O = nullptr;    // O(d, i, h)

    void configure() {
        const Type t = dtype;
        _halide_user_assert(t == Float(16) || t == Float(32)) << "attention: dtype must be float16 or float32, not " << t;
        _halide_user_assert((int)d_size >= 1 && (int)s_size >= 1 && (int)heads >= 1)
            << "attention: d, s and heads must be positive (got d=" << (int)d_size << " s=" << (int)s_size << " heads=" << (int)heads << ")";
        Q = add_input<Buffer<>>("Q", t, 3);
        Kt = add_input<Buffer<>>("Kt", t, 3);
        V = add_input<Buffer<>>("V", t, 3);
        O = add_output<Buffer<>>("O", t, 3);
    }

    void generate() {
        const Type t = dtype;
        const int d = d_size, s = s_size, hs = heads;
        spyre::AttentionSpyreOptions options;
        options.double_buffer = double_buffer;
        plan_ = spyre::plan_attention_spyre(d, s, hs, t, options);
        const bool spyre = spyre::is_spyre();
        // Padded extents on Spyre (the device tensors), true ones on the host.
        const int dp = spyre ? plan_.dp : d;
        const int sp = spyre ? plan_.sp : s;
        const int nx = spyre ? plan_.nx : d + 1;
        const float k = (float)scale == 0.0f ? 1.0f / std::sqrt((float)d) : (float)scale;
        const float neg = -1e30f;  // exp(neg - m) == 0 for any finite score
        auto &f = f_;

        // Mask table.
        Expr bias = 0.0f;
        if (causal) {
            f.mask(f.z) = 0.0f;
            f.rmask = RDom(sp, sp, "rmask");
            f.mask(f.rmask) = neg;
            bias = f.mask(f.j - f.i + sp - 1);
        } else if (sp > s) {
            f.mask(f.z) = 0.0f;
            f.rmask = RDom(s, sp - s, "rmask");
            f.mask(f.rmask) = neg;
            bias = f.mask(f.j);
        }
        has_mask_ = f.mask.defined();

        // Scores, once per pass: S(j, i) = sum_d Kt(j, d) Q(d, i), s = S * scale + mask.
        f.rd = RDom(0, dp, "rd");
        f.q_in = Q->in();
        for (int pass = 0; pass < 2; pass++) {
            Func &S = pass == 0 ? f.scores1 : f.scores2;
            Func &sc = pass == 0 ? f.s1 : f.s2;
            S(f.j, f.i, f.h) = 0.0f;
            S(f.j, f.i, f.h) += cast<float>((*Kt)(f.j, f.rd, f.h)) * cast<float>(f.q_in(f.rd, f.i, f.h));
            sc(f.j, f.i, f.h) = S(f.j, f.i, f.h) * k + bias;
        }
        // Pass 1: the exact row max.
        f.rj_max = RDom(0, sp, "rj_max");
        f.row_max(f.i, f.h) = neg;
        f.row_max(f.i, f.h) = max(f.row_max(f.i, f.h), f.s1(f.rj_max, f.i, f.h));
        // Pass 2: probabilities (rounded to dtype, as the PT takes them) and
        // [O | l] += P . [V | 1].
        f.probs(f.j, f.i, f.h) = cast(t, exp(f.s2(f.j, f.i, f.h) - f.row_max(f.i, f.h)));
        f.rv = RDom(0, dp, "rv");
        f.vx(f.n, f.j, f.h) = cast(t, 1.0f);
        f.vx(f.rv, f.j, f.h) = (*V)(f.rv, f.j, f.h);
        f.rj_acc = RDom(0, sp, "rj_acc");
        f.acc(f.n, f.i, f.h) = 0.0f;
        f.acc(f.n, f.i, f.h) += cast<float>(f.vx(f.n, f.rj_acc, f.h)) * cast<float>(f.probs(f.rj_acc, f.i, f.h));
        f.result(f.d, f.i, f.h) = cast(t, f.acc(f.d, f.i, f.h) / f.acc(dp, f.i, f.h));
        (*O)(f.d, f.i, f.h) = f.result(f.d, f.i, f.h);
        f.out = *O;
        nx_ = nx;

        const int T = plan_.tile;
        spyre::constrain_tensor(*Q, {d, s, hs}, {1, T, 1});
        spyre::constrain_tensor(*Kt, {s, d, hs}, {T, plan_.lanes, 1});  // d padded like Q's
        spyre::constrain_tensor(*V, {d, s, hs}, {1, T, 1});
        spyre::constrain_tensor(*O, {d, s, hs}, {1, T, 1});
    }

    void schedule() {
        // auto_schedule=true (Halide's GeneratorParam): the stock autoscheduler given with -p/-s schedules
        // the pipeline instead of the hand schedules; tensors, estimates and the Spyre lowering stay.
        const bool hand = !get_auto_schedule();
        if (spyre::is_spyre()) {
            if (hand) {
                // One Kt wrapper per pass: each pass stages its own KV tiles.
                f_.kt_in1 = Kt->in(f_.scores1);
                f_.kt_in2 = Kt->in(f_.scores2);
                spyre::schedule_attention_spyre(f_, plan_, has_mask_);
            }
            spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("attention"));
        } else {
            f_.acc.bound(f_.n, 0, nx_);
            if (hand) {
                spyre::schedule_attention_host(f_, get_target());
            }
        }
    }

private:
    spyre::AttentionFuncs f_{Func(), Func("result"), Func("acc"), Func("vx"), Func("probs"),
                             Func("scores2"), Func("s2"), Func("row_max"), Func("scores1"), Func("s1"),
                             Func("mask"), Func(), Func(), Func(), RDom(), RDom(), RDom(), RDom(), RDom(),
                             Var("d"), Var("i"), Var("h"), Var("j"), Var("n"), Var("z")};
    spyre::AttentionSpyrePlan plan_;
    bool has_mask_ = false;
    int nx_ = 0;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Attention, attention)
