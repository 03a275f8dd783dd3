// A Llama/Granite-style decoder (RMSNorm, one fused QKV projection, rotary
// embeddings, grouped-query attention over a KV cache, SwiGLU MLP, final
// norm and LM head, greedy decoding) as a chain of the suite's generated
// kernels and device copies, written once for both realizations
// (device_tensors.h): on the Spyre device the weights and the KV cache stay
// resident in device memory; the host realization is the reference chain.
//
// Layouts, innermost dimension first (D head dim, G = query heads per KV head):
//   activations        x(H, T)                      one feature vector per token
//   fused QKV output   qkv(D, QH + 2 KVH, T)        heads: QH query, KVH key, KVH value
//   KV cache, layer l  Kt(C, D, KVH * B)            keys transposed: position innermost
//                      V(D, C, KVH * B)             values: head dim innermost
//                      (C positions; cache head kvh + KVH * b belongs to sequence b)
//   weights            matmul B operands (N, K): wqkv(NQKV, H), wo(H, H),
//                      wgu(2F, H) (the gate's and the up projection's rows alternating
//                      in blocks of kSwigluWeightBlock, gen_matmul activation=swiglu's layout),
//                      wdown(H, F), lm(V, H);
//                      the embedding table E(H, V) (a row per token).
// What each step does, kernel by kernel, is in decoder.cpp and docs/llm.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "device_tensors.h"
#include "spyre/spyre_collectives.h"
#include "spyre/spyre_device.h"
#include "kernel_fn.h"
#include "model_weights.h"
#include "run_report.h"

namespace llm {

// A model's shape, or one tensor-parallel rank's shard of it (tensor_parallel_shard):
// then qheads, kvheads, ffn and vocab are this rank's (its query heads, the KV heads
// they read, its MLP columns, its slice of the vocabulary) and qheads * head_dim is
// the width of its attention output, which equals hidden only at tp = 1.
struct ModelShape {
    std::string name;
    int hidden = 0, qheads = 0, kvheads = 0, head_dim = 0, ffn = 0, vocab = 0;
    int tp = 1, rank = 0;   // tensor parallelism: ranks, and this one
    int vocab_total = 0;    // the whole vocabulary (vocab is this rank's slice, padded to vocab_total / tp rounded up)
    int layers = 0;                // the model's layer count (a run may use fewer)
    int prompt = 0, capacity = 0;  // prefill tokens; KV cache positions
    std::vector<int> batches;      // decode batch sizes with kernels
    double rope_theta = 10000.0;
    float eps = 1e-5f;

    int group() const { return qheads / kvheads; }
    int attention_width() const { return qheads * head_dim; }
    // Row-parallel projections (o and down) add the residual on rank 0 only, so the all-reduce adds it once.
    bool adds_residual() const { return rank == 0; }
    int qkv_heads() const { return qheads + 2 * kvheads; }
    int qkv_features() const { return qkv_heads() * head_dim; }
    // Bytes of fp16 weights one decode step reads once: every layer's
    // projections and norms, the final norm, the LM head, and one embedding
    // row per sequence.
    int64_t weight_bytes_per_step(int layers, int batch) const;
    int64_t layer_weight_bytes() const;
};

// The shape and kernels this executable was built with (kernel_table.h).
const ModelShape &compiled_shape();
const std::vector<KernelEntry> &compiled_kernels();

// Rank `rank`'s shard of `full` under Megatron-style tensor parallelism over tp ranks:
// query heads and MLP columns split evenly, KV heads split (or, when tp exceeds them,
// each rank keeps the one its query heads read, as vLLM does), the vocabulary split
// into tp slices of ceil(V / tp) rows (the last padded). Throws naming what does not divide.
ModelShape tensor_parallel_shard(const ModelShape &full, int tp, int rank);

class Decoder {
public:
    // batch: sequences decoded together (one of shape.batches); prefill runs per sequence.
    // `kernels` are the chain's kernels by role (compiled_kernels(), or a shard's from the
    // kernel cache, kernel_plan.h); `comm` the ranks of a tensor-parallel run (null at tp = 1).
    Decoder(const Realization &realization, const ModelShape &shape, int layers, int batch, RunRecorder *recorder,
            std::vector<KernelEntry> kernels = compiled_kernels(), spyre_comm_t *comm = nullptr);

    // Places the weights: on the device each in the layout of the kernel
    // argument it feeds, uploaded from `source` a layer at a time, the host
    // copy dropped once placed (functional), or allocated without values
    // (timing-only: source is null); on the host, the source's tensors themselves.
    void load_weights(const WeightSource *source);

    // Prefill of sequence `slot`'s prompt (shape.prompt tokens, positions
    // 0..prompt-1): writes the slot's KV cache, returns the greedy next token
    // (-1 in timing-only mode).
    int prefill(int slot, const std::vector<int> &prompt);
    // One decode step of all sequences at `position` (every sequence has the
    // same length): appends one position to every layer's cache and returns
    // the greedy next token of each sequence (-1s in timing-only mode).
    std::vector<int> decode_step(const std::vector<int> &tokens, int position);

    // The logits (V, B) of the last decode step, or (V, 1) of the last prefill (functional runs).
    const Tensor &last_logits() const { return logits_; }
    // Bytes of weights placed a second time, in a prefill kernel's layout.
    int64_t second_copy_bytes() const { return second_copy_bytes_; }
    // Host CPU time spent in greedy argmax so far (us), measured.
    double host_argmax_us() const { return host_argmax_us_; }

private:
    // A weight as the decode kernels and as the prefill kernels read it: the
    // same tensor unless the two were compiled with different layouts for it.
    struct Weight {
        Tensor decode, prefill;
    };
    struct LayerState {
        Weight attn_norm, wqkv, wo, mlp_norm, wgu, wdown;
        Tensor kt_cache, v_cache;
    };
    Weight place(const Tensor *host, const std::vector<int> &extents, const std::string &kernel, const char *arg);
    Weight place_for(const Tensor *host, const std::vector<int> &extents, const std::string &decode_role,
                     const std::string &prefill_role, const char *arg);
    bool has_role(const std::string &role) const;
    static Tensor &W(Weight &w, const std::string &k);

    const KernelEntry &kernel(const std::string &role) const;
    template <typename... Args>
    void run(const std::string &kernel_role, const std::string &label, Args... args);
    void copies(const std::string &label, const std::function<void()> &op);
    Tensor place_weight(const Tensor *host, const std::vector<int> &extents, const std::string &kernel_role,
                        const char *arg);
    Tensor tensor_for(const std::string &kernel_role, const char *arg, const std::vector<int> &extents,
                      bool host_memory = false, halide_type_t type = kF16);
    // The device chain folds the prefill's attention norm into the QKV projection (p_rms; see
    // qkv_and_rope); the host chain, the reference of --check, runs the norm itself.
    bool folds_attention_norm() const { return has_role("p_rms") && r_.on_device(); }
    Tensor view(Tensor &t, const std::vector<int> &extents);
    Tensor kernel_input(Tensor region, const std::string &kernel_role, const char *arg, const std::string &copy_label);
    void probe(const char *what, const Tensor &t);
    void release_views();
    Tensor upload(const std::string &label, const Tensor &host);
    Tensor rope_table(const std::vector<int> &positions, bool sine);
    std::vector<int> greedy(Tensor &logits);
    Tensor embed(const std::vector<int> &tokens);
    Tensor qkv_and_rope(const std::string &k, LayerState &L, Tensor &x, Tensor &cos, Tensor &sin, Tensor *qk);
    Tensor mlp(const std::string &k, LayerState &L, Tensor &x);
    Tensor lm_head(Tensor &x);
    void o_projection(const std::string &k, Tensor &wo, Tensor &bias, Tensor &a, Tensor &x, Tensor &x2);
    // x = the sum of every rank's x (tp > 1), charged and shown as a collective.
    void all_reduce(const std::string &label, Tensor &x);
    void record_collective(const std::string &label);

    const Realization &r_;
    ModelShape shape_;
    std::vector<KernelEntry> kernels_;
    spyre_comm_t *comm_;
    int layers_, batch_;
    RunRecorder *recorder_;
    std::vector<LayerState> layer_;
    Tensor embedding_;
    Weight final_norm_, lm_head_;
    Weight bias_qkv_, bias_hidden_, bias_down_, bias_gu_;  // zeros: the matmuls' bias operands
    Weight bias_vocab_;
    int64_t second_copy_bytes_ = 0;
    Tensor logits_;
    std::map<std::string, std::pair<bool, spyre_device_layout>> layouts_;  // program layouts by "role/arg"
    std::vector<Tensor> views_;       // device views of this step, freed at its end
    std::vector<Tensor> keep_alive_;  // the tensors this step's views see
    double host_argmax_us_ = 0;
};

}  // namespace llm
