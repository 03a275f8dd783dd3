// The model's weights on the host, and where a functional run gets them from.
//
// A run loads its weights one layer at a time from a WeightSource: the device
// realization uploads each piece into device memory and drops the host copy,
// so the host holds one layer beyond the simulated card's memory, never the
// whole model twice (Granite-8B: 16.4 GB of weights, not 32.8). The sources:
// RandomWeights makes them from a seed on demand (a layer's values depend only
// on the seed and the layer, so every source and every rank sees the same
// model); HeldWeights serves weights already on the host (the host reference
// chain's, with --check); tensor_parallel.h's ShardedWeights cuts another
// source's pieces into one rank's shard.
#pragma once

#include <cstdint>
#include <vector>

#include "device_tensors.h"

namespace llm {

struct ModelShape;

// wgu's rows: the gate's and the up projection's alternate in blocks of this many
// (gen_matmul activation=swiglu's B layout, spyre::kSwigluBlock in
// schedules/matmul_schedule.h; mpi.llm_tiny_tp*_matches_tp1 checks that a rank's
// shard of whole blocks computes the same model).
constexpr int kSwigluWeightBlock = 64;

// One decoder layer's weights (fp16, matmul B operands (N, K); decoder.h's layouts).
struct LayerWeights {
    Tensor attn_norm, wqkv, wo, mlp_norm, wgu, wdown;
};
// The weights outside the layers: the embedding table, the final norm, the LM head.
struct OuterWeights {
    Tensor embedding, final_norm, lm_head;
};
// A whole model on the host.
struct ModelWeights {
    std::vector<LayerWeights> layers;
    OuterWeights outer;
};

// An RMSNorm folded into the projection after it: rmsnorm(x) . w = (1/rms(x)) (x . (g w)).
// Scales w's column k (its input feature k) by g(k), rounded to fp16, and sets g to ones
// (the norm's weight then reads as none, where a chain still runs the norm itself).
// w is (N, K), g (K).
void fold_norm_into_projection(Tensor *g, Tensor *w);

class WeightSource {
public:
    virtual ~WeightSource() = default;
    // Layer l's weights (0-based), made or cut now: the caller may drop them once placed.
    virtual LayerWeights layer(int l) const = 0;
    virtual OuterWeights outer() const = 0;
};

// Random weights, reproducible from a seed, of the model `shape` (uniform, variance
// 1/fan_in, so every projection's output stays near unit variance).
class RandomWeights : public WeightSource {
public:
    RandomWeights(const ModelShape &shape, uint64_t seed);
    LayerWeights layer(int l) const override;
    OuterWeights outer() const override;

private:
    int hidden_, qkv_features_, ffn_, vocab_;
    uint64_t seed_;
};

// Weights already on the host (shared, not copied).
class HeldWeights : public WeightSource {
public:
    explicit HeldWeights(const ModelWeights &weights) : weights_(weights) {}
    LayerWeights layer(int l) const override { return weights_.layers.at(l); }
    OuterWeights outer() const override { return weights_.outer; }

private:
    const ModelWeights &weights_;
};

// The first `layers` layers and the outer weights of `source`, all on the host.
ModelWeights hold_weights(const WeightSource &source, int layers);

// Host bytes of the largest piece a source hands out at once (a layer, or the outer weights).
int64_t largest_weight_piece_bytes(const ModelShape &shape);

}  // namespace llm
