// Load sinking: a core's DMA unit runs its transfers in program order, so a
// load placed early but read only after a loop of loads (a matmul's residual
// tile, staged at the tile's start and added in the epilogue) holds up the
// loads the loop's first steps wait for. This pass moves such a load down its
// list of siblings to just before its first reader, past the loop: in the DMA
// queue it then follows the loop's last loads, which the double-buffered loop
// issues a step or two ahead of its compute, so it still lands before the
// epilogue reads it, and the first matmul no longer waits for it (gen_matmul
// residual=true, m=512 n=4096 k=12800: the first matmul waited ~27 us for the
// 32 cores' residual tiles).
//
// A load moves only past nodes that neither touch its scratchpad bytes nor
// store to DRAM where it reads (loop_rewrites.h's dram_conflict), and only when
// a loop holding DMA loads lies in between; loads shared over the ring, a
// pipeline's prologue loads and anything in a loop they do not share are left.
// Expects the tree after ring sharing (sibling order is each unit's stream
// order); guarantees the same results.
#pragma once

#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// Returns how many loads moved.
int sink_late_loads(std::vector<ProgramNode> &tree);

}  // namespace compiler
}  // namespace spyre
