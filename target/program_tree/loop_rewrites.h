// Rewrites of program-tree operands for passes that move items across loop
// iterations or out of loops (double_buffering.cpp, store_spreading.cpp,
// prologue_rotation.cpp), and the DRAM dependence test and load hoisting they share.
// Operands are affine in the loop levels (program_tree.h); these keep them so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// Fixes the index of loop `level` to `value` in every operand of n and removes
// that level (deeper levels move up by one): for items moved out of the loop.
void substitute_level(ProgramNode &n, size_t level, int64_t value);

// Moves n `iterations` iterations of the loop at `level` later (index + iterations).
void shift_iteration(ProgramNode &n, size_t level, int64_t iterations = 1);

// Moves the first iteration of the loop tree[index] out of it, as top-level items before it
// (the loop keeps the others, starting from the second; a loop of one or two iterations is
// replaced by its items).
void peel_first_iteration(std::vector<ProgramNode> &tree, size_t index);

// True when `a` and `b` touch overlapping DRAM bytes of one tensor and one of them
// writes, over the loop box of `trips` (the enclosing loops' trip counts, outermost first).
bool dram_conflict(const ProgramNode &a, const ProgramNode &b, std::vector<int64_t> trips);

// Moves the DMA load body[index] as early as no earlier item conflicts with it, in scratchpad
// or in DRAM (a DMA store of bytes the load reads stays before it), and never above another
// DMA load (loads keep their order among themselves). Returns its new index.
size_t hoist_load(std::vector<ProgramNode> &body, size_t index, const std::vector<int64_t> &trips);

// Moves every DMA load of the second half of `body` (indices >= half) as early
// as no earlier item conflicts with it, in scratchpad or in DRAM (a DMA store
// of bytes the load reads stays before it); loads keep their order among themselves.
void hoist_loads(std::vector<ProgramNode> &body, size_t half, const std::vector<int64_t> &trips);

// A rewrite of one loop: nodes[index] is a loop at `depth` inside loops of trip counts `trips`
// (outermost first); it may replace the loop by several items.
using LoopRewrite = std::function<void(std::vector<ProgramNode> &nodes, size_t index, int depth,
                                       std::vector<int64_t> &trips)>;

// Applies `rewrite` to every loop of the tree, innermost first; after a rewrite the walk goes
// on past every item that replaced the loop.
void rewrite_loops_innermost_first(std::vector<ProgramNode> &tree, const LoopRewrite &rewrite);

}  // namespace compiler
}  // namespace spyre
