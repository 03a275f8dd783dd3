// Prologue rotation: the loop around a software-pipelined loop (double_buffering.h)
// starts each iteration with that pipeline's prologue loads, the first tile of
// iteration b, waiting for them while its cores sit idle. This pass moves them
// into iteration b-1, after the last compute that reads their buffers and before
// that iteration's trailing work (casts, stores), so the next iteration's first
// tile arrives while this one finishes:
//   loop b < T:  { loads(b), pipelined loop, rest(b) }
// becomes
//   loads(0)
//   loop b < T-1:  { pipelined loop, rest(b), loads(b+1) hoisted above rest(b) where independent }
//   pipelined loop, rest(T-1)
// A loop is skipped when an item before its loads conflicts with them (in
// scratchpad or DRAM). Loops are visited innermost first.
// Then, in every straight-line list of items (a tile loop unrolled by two for a
// double-buffered result holds two tiles, the second one's prologue loads after
// the first one's cast and store), each prologue DMA load left moves up past the
// items it is independent of, stopping at another load (computed prologue steps,
// SFU work a pipeline runs an iteration ahead, stay: moved ahead of this tile's
// work they only delayed it, attention d=64 s=1024 heads=8 72.7 -> 74.2 us): in the core's in-order
// DMA queue the next tile's first chunk then comes before this tile's store, not
// behind it (gen_matmul m=512 n=k=2048, 128 x 128 tiles with A resident: each
// core's second tile waited 14 us for the 32 cores' stores; 115.8 -> 112.4 us).
//
// Expects the tree double buffering left (the prologue loads marked
// ProgramNode::prologue_load) and then store spreading; guarantees the same
// results (it only moves loads across independent work). Marks are cleared on
// the loads it moves.
#pragma once

#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

void rotate_prologue_loads(std::vector<ProgramNode> &tree);

}  // namespace compiler
}  // namespace spyre
