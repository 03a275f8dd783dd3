// Weight sources of a functional run (model_weights.h).
#include "model_weights.h"

#include <algorithm>
#include <cmath>

#include "decoder.h"
#include "spyre/dtype.h"

namespace llm {

RandomWeights::RandomWeights(const ModelShape &s, uint64_t seed)
    : hidden_(s.hidden), qkv_features_(s.qkv_features()), ffn_(s.ffn), vocab_(s.vocab_total ? s.vocab_total : s.vocab),
      seed_(seed) {}

namespace {

Tensor uniform(const std::vector<int> &extents, int fan_in, uint64_t seed, uint64_t stream) {
    Tensor t(kF16, extents);
    fill_uniform_f16(t, seed * 1000003 + stream, 0.0f, std::sqrt(3.0f / (float)fan_in));
    return t;
}

Tensor norm(int hidden, uint64_t seed, uint64_t stream) {
    Tensor t(kF16, hidden);
    fill_uniform_f16(t, seed * 1000003 + stream, 1.0f, 0.2f);
    return t;
}

}  // namespace

void fold_norm_into_projection(Tensor *g, Tensor *w) {
    const int N = w->dim(0).extent(), K = w->dim(1).extent();
    if (g->dimensions() != 1 || g->dim(0).extent() != K) {
        throw std::logic_error("fold_norm_into_projection: the norm's weight has " + std::to_string(g->dim(0).extent()) +
                               " elements, the projection " + std::to_string(K) + " input features");
    }
    uint16_t *gw = static_cast<uint16_t *>(g->data());
    uint16_t *ww = static_cast<uint16_t *>(w->data());
    for (int k = 0; k < K; k++) {
        const float gk = spyre::half_to_float(gw[k]);
        uint16_t *col = ww + (size_t)k * N;
        for (int n = 0; n < N; n++) col[n] = spyre::float_to_half(spyre::half_to_float(col[n]) * gk);
        gw[k] = spyre::float_to_half(1.0f);
    }
}

// Each tensor has its own random stream (layer l: 100 + 10 l + i), so a layer is made alone.
LayerWeights RandomWeights::layer(int l) const {
    const uint64_t base = 100 + 10 * (uint64_t)l;
    LayerWeights w;
    w.attn_norm = norm(hidden_, seed_, base + 0);
    w.wqkv = uniform({qkv_features_, hidden_}, hidden_, seed_, base + 1);
    w.wo = uniform({hidden_, hidden_}, hidden_, seed_, base + 2);
    w.mlp_norm = norm(hidden_, seed_, base + 3);
    w.wgu = uniform({2 * ffn_, hidden_}, hidden_, seed_, base + 4);
    w.wdown = uniform({hidden_, ffn_}, ffn_, seed_, base + 5);
    return w;
}

OuterWeights RandomWeights::outer() const {
    OuterWeights w;
    w.embedding = uniform({hidden_, vocab_}, 3, seed_, 1);  // unit variance
    w.final_norm = norm(hidden_, seed_, 2);
    w.lm_head = uniform({vocab_, hidden_}, hidden_, seed_, 3);
    return w;
}

ModelWeights hold_weights(const WeightSource &source, int layers) {
    ModelWeights w;
    for (int l = 0; l < layers; l++) w.layers.push_back(source.layer(l));
    w.outer = source.outer();
    return w;
}

int64_t largest_weight_piece_bytes(const ModelShape &s) {
    const int64_t vocab = s.vocab_total ? s.vocab_total : s.vocab;
    return std::max(s.layer_weight_bytes(), 2 * (2 * vocab * s.hidden + s.hidden));
}

}  // namespace llm
