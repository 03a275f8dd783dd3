// Rewrites of program-tree operands for passes that move items across loop
// iterations or out of loops (double_buffering.cpp, store_spreading.cpp).
// Operands are affine in the loop levels (program_tree.h); these keep them so.
#pragma once

#include <cstddef>
#include <cstdint>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// Fixes the index of loop `level` to `value` in every operand of n and removes
// that level (deeper levels move up by one): for items moved out of the loop.
void substitute_level(ProgramNode &n, size_t level, int64_t value);

// Moves n `iterations` iterations of the loop at `level` later (index + iterations).
void shift_iteration(ProgramNode &n, size_t level, int64_t iterations = 1);

}  // namespace compiler
}  // namespace spyre
