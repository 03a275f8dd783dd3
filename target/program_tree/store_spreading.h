// Store spreading: the DMA store that ends each iteration of a loop around a
// software-pipelined loop (for example a matmul's C tile after its K loop) is
// moved into the next iteration and split into row pieces, one per iteration
// of that iteration's pipelined loop:
//   loop b < T:  { ..., K loop, ..., store S(b) }
// becomes
//   { ..., K loop, ... }(b = 0)
//   loop b in 1..T-1:  { ..., K loop with piece p of S(b-1) in iteration p, ... }
//   store S(T-1)
// A whole tile's store blocks its core's DMA queue (one transfer at a time)
// while every core stores at once; its pieces instead share DRAM with the
// next tile's loads, which keep the PT fed. Synchronization orders the pieces
// after the tile's cast and before the next cast overwrites it.
//
// Pieces are whole rows, or whole sticks of a store that is one contiguous row.
// Applies only to that shape: a loop of at least 2 iterations whose body ends
// in a single-plane DMA store, contains a pipelined loop (double_buffering.h)
// of at least 2 iterations, and nothing in the body before the pieces writes
// the stored scratchpad bytes or touches the stored DRAM bytes. Otherwise the
// tree is left alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// Every loop of the tree, innermost first; pieces are whole sticks of `stick_bytes`.
// Expects the tree double buffering left (its pipelined loops and prologue loads marked).
void spread_trailing_stores(std::vector<ProgramNode> &tree, int64_t stick_bytes);

}  // namespace compiler
}  // namespace spyre
