// The decoder chain's kernels for a shape or a shard (see kernel_plan.h).
#include "kernel_plan.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace llm {

namespace {

spyre_apps::KernelParams params(std::initializer_list<std::pair<std::string, long long>> numbers,
                                std::initializer_list<std::pair<std::string, std::string>> words = {}) {
    spyre_apps::KernelParams p;
    for (const auto &kv : numbers) p[kv.first] = std::to_string(kv.second);
    for (const auto &kv : words) p[kv.first] = kv.second;
    return p;
}

spyre_apps::KernelParams parse_params(const std::string &text) {
    spyre_apps::KernelParams p;
    std::stringstream s(text);
    for (std::string item; s >> item;) {
        const size_t eq = item.find('=');
        if (eq != std::string::npos) p[item.substr(0, eq)] = item.substr(eq + 1);
    }
    return p;
}

}  // namespace

std::vector<PlannedKernel> kernel_plan(const ModelShape &s, const std::vector<int> &batches_in) {
    const long long H = s.hidden, D = s.head_dim, F = s.ffn, P = s.prompt, QH = s.qheads, KVH = s.kvheads;
    const long long ROT = QH + KVH, ALLH = QH + 2 * KVH, NQKV = ALLH * D, W = s.attention_width();
    const std::string residual = s.adds_residual() ? "true" : "false";
    std::vector<PlannedKernel> plan = {
        {"p_norm", "rmsnorm", params({{"cols", H}, {"rows", P}})},
        // The attention norm folded into the QKV projection: the rows' 1/rms, the projection's row scale.
        {"p_rms", "rmsnorm", params({{"cols", H}, {"rows", P}}, {{"output", "inverse_rms"}})},
        {"p_qkv", "matmul", params({{"m", P}, {"n", NQKV}, {"k", H}}, {{"row_scale", "true"}, {"shared_weight_layout", "true"}})},
        {"p_rope", "rope", params({{"d", D}, {"heads", ROT}, {"in_heads", ALLH}, {"tokens", P}}, {{"heads_outermost", "true"}})},
        {"p_kt", "transpose", params({{"x", D}, {"y", P}, {"batch", KVH}})},
        {"p_attn", "attention", params({{"d", D}, {"s", P}, {"heads", QH}, {"kv_heads", KVH}}, {{"causal", "true"}, {"o_token_major", "true"}})},
        {"p_oproj", "matmul", params({{"m", P}, {"n", H}, {"k", W}}, {{"residual", residual}, {"shared_weight_layout", "true"}})},
        {"p_gu", "matmul", params({{"m", P}, {"n", F}, {"k", H}}, {{"activation", "swiglu"}, {"shared_weight_layout", "true"}})},
        {"p_down", "matmul", params({{"m", P}, {"n", H}, {"k", F}}, {{"residual", residual}, {"shared_weight_layout", "true"}})},
    };
    std::vector<int> batches = batches_in;
    if (std::find(batches.begin(), batches.end(), 1) == batches.end()) batches.insert(batches.begin(), 1);
    for (int b : batches) {
        const std::string d = "d" + std::to_string(b) + "_";
        plan.push_back({d + "norm", "rmsnorm", params({{"cols", H}, {"rows", b}})});
        plan.push_back({d + "qkv", "matmul", params({{"m", b}, {"n", NQKV}, {"k", H}}, {{"shared_weight_layout", "true"}})});
        plan.push_back({d + "rope", "rope", params({{"d", D}, {"heads", ROT}, {"in_heads", ALLH}, {"tokens", b}})});
        plan.push_back({d + "kt", "transpose", params({{"x", D}, {"y", 1}, {"batch", KVH * b}})});
        plan.push_back({d + "attn", "attention",
                        params({{"d", D}, {"s", s.capacity}, {"q", s.group()}, {"heads", KVH * b}}, {{"key_mask", "true"}})});
        plan.push_back({d + "oproj", "matmul", params({{"m", b}, {"n", H}, {"k", W}}, {{"residual", residual}, {"shared_weight_layout", "true"}})});
        // Decode keeps the gate apart: the fused kernel's accumulator tiles hold whole gate/up
        // block pairs, which at one row split N over fewer cores (1.9% slower at batch 1). The
        // gate/up output is gen_elementwise swiglu's input as it is (gate_up_blocks=true: its rows
        // hold F / block pairs of gate and up blocks), whose output (block, F / block, b) is (F, b).
        plan.push_back({d + "gu", "matmul", params({{"m", b}, {"n", 2 * F}, {"k", H}}, {{"shared_weight_layout", "true"}})});
        plan.push_back({d + "swiglu", "elementwise",
                        params({{"d0", kSwigluWeightBlock}, {"d1", F / kSwigluWeightBlock}, {"d2", b}},
                               {{"op", "swiglu"}, {"gate_up_blocks", "true"}})});
        plan.push_back({d + "down", "matmul", params({{"m", b}, {"n", H}, {"k", F}}, {{"residual", residual}, {"shared_weight_layout", "true"}})});
        plan.push_back({d + "lm", "matmul", params({{"m", b}, {"n", s.vocab}, {"k", H}}, {{"shared_weight_layout", "true"}})});
    }
    return plan;
}

std::vector<KernelEntry> cached_kernels(const std::vector<PlannedKernel> &plan, spyre_apps::KernelCache &cache) {
    std::vector<KernelEntry> out;
    for (const PlannedKernel &k : plan) {
        KernelEntry e;
        e.role = k.role;
        e.generator = k.family;
        for (const auto &kv : k.params) e.params += (e.params.empty() ? "" : " ") + kv.first + "=" + kv.second;
        e.program = cache.get(k.family, k.params);
        e.function = e.program->name();
        out.push_back(std::move(e));
    }
    return out;
}

void check_plan_matches_build(const std::vector<PlannedKernel> &plan, const std::vector<KernelEntry> &linked) {
    for (const KernelEntry &e : linked) {
        auto it = std::find_if(plan.begin(), plan.end(), [&](const PlannedKernel &k) { return k.role == e.role; });
        if (it == plan.end()) throw std::logic_error("kernel_plan has no role '" + e.role + "', which the build links");
        spyre_apps::KernelParams built = parse_params(e.params);
        if (it->family != e.generator || it->params != built) {
            throw std::logic_error("kernel_plan's " + e.role + " (" + spyre_apps::KernelCache::describe(it->family, it->params) +
                                   ") differs from the build's (gen_" + e.generator + " " + e.params +
                                   "): apps/llm/kernel_plan.cpp and apps/llm/CMakeLists.txt must list the same kernels");
        }
    }
}

}  // namespace llm
