// The decoder chain's kernels for a model shape or a tensor-parallel shard of
// one (decoder.h's ModelShape): each role's generator and parameters, the same
// list apps/llm/CMakeLists.txt builds for the linked configurations (at tp = 1
// the two must agree, and check_plan_matches_build() checks it at start), so a
// shard's kernels can be compiled on first use through the kernel cache.
#pragma once

#include <string>
#include <vector>

#include "decoder.h"
#include "kernel_cache.h"

namespace llm {

struct PlannedKernel {
    std::string role;    // "p_qkv", "d1_lm", ...
    std::string family;  // the generator: "matmul", ...
    spyre_apps::KernelParams params;
};

// The prefill kernels and those of each decode batch in `batches` (with batch 1
// always, for the prefill's LM head).
std::vector<PlannedKernel> kernel_plan(const ModelShape &shape, const std::vector<int> &batches);

// The plan's kernels, compiled or found in the cache, as the decoder's kernel table.
std::vector<KernelEntry> cached_kernels(const std::vector<PlannedKernel> &plan, spyre_apps::KernelCache &cache);

// Throws std::logic_error naming the role unless the plan of the build's own shape
// equals the kernels linked into this executable (generator and parameters).
void check_plan_matches_build(const std::vector<PlannedKernel> &plan, const std::vector<KernelEntry> &linked);

}  // namespace llm
