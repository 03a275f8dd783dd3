// Double buffering of scratchpad buffers staged inside a hardware loop
// (requested per Func with spyre::double_buffer in schedules/spyre_schedule.h).
//
// Instruction selection gives each requested buffer two copies ("ping-pong")
// and records them. This pass then unrolls the loop that stages the buffer by
// two, renames the second iteration's accesses to the second copy, and hoists
// the second iteration's DMA loads above the first iteration's compute (as far
// as their scratchpad dependences allow, never across a DMA store, so DRAM
// order on the DMA unit is kept). Synchronization then lets the DMA of tile
// i+1 overlap the compute of tile i. A loop with an odd trip count is left
// single-buffered (its iterations keep using the first copy).
//
// Expects a folded program tree; guarantees the same results (the pass only
// reorders independent work and renames private buffers).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "program_tree.h"

namespace spyre {
namespace compiler {

// A buffer with two copies: [lo, hi) is the first, [lo + offset, hi + offset) the second;
// `level` is the hardware loop level that stages it.
struct PingPongBuffer {
    std::string name;
    int level = 0;
    int loop_id = -1;  // the staging loop (ProgramNode::loop_id)
    int64_t lo = 0, hi = 0, offset = 0;
};

void apply_double_buffering(std::vector<ProgramNode> &tree, const std::vector<PingPongBuffer> &buffers);

// The process-wide set of Funcs the schedule asked to double-buffer (Halide Func names).
void request_double_buffering(const std::string &func_name);
std::set<std::string> double_buffering_requests();

}  // namespace compiler
}  // namespace spyre
