// The model shapes `llm --model NAME` runs (see model_catalog.h).
#include "model_catalog.h"

#include <stdexcept>

namespace llm {

namespace {

// Llama-3-70B's published shape (hidden 8192, 80 layers, 64 query / 8 KV heads of 128,
// SwiGLU 28672, vocabulary 128256, RoPE theta 500000), with the runner's prompt of 512
// tokens and a 1024-position KV cache, decoded at batch 1, 4 and 8 as Granite-8B is.
ModelShape llama3_70b() {
    ModelShape s;
    s.name = "llama3-70b";
    s.hidden = 8192;
    s.qheads = 64;
    s.kvheads = 8;
    s.head_dim = 128;
    s.ffn = 28672;
    s.vocab = s.vocab_total = 128256;
    s.layers = 80;
    s.prompt = 512;
    s.capacity = 1024;
    s.batches = {1, 4, 8};
    s.rope_theta = 500000.0;
    return s;
}

}  // namespace

std::vector<std::string> model_names() { return {compiled_shape().name, "llama3-70b"}; }

ModelShape model_shape(const std::string &name) {
    if (name == compiled_shape().name) return compiled_shape();
    if (name == "llama3-70b") return llama3_70b();
    std::string known;
    for (const std::string &n : model_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::runtime_error("no model '" + name + "' (known: " + known + ")");
}

}  // namespace llm
