// Double buffering of scratchpad buffers staged inside a hardware loop
// (requested per Func with spyre::double_buffer in schedules/spyre_schedule.h).
//
// Instruction selection gives each requested buffer two copies ("ping-pong")
// and records them. This pass then unrolls the loop that stages the buffer by
// two, renames the second iteration's accesses to the second copy, and
// software-pipelines the pair: the first tile is loaded before the loop, and
// each iteration loads copy 1's tile, computes copy 0, loads copy 0's next
// tile, computes copy 1; the last pair follows the loop. Synchronization then
// lets the DMA of each tile overlap the compute of the other copy, and the
// DMA never waits for both computes of a pair. Where that pipeline does not
// apply (staging loads inside nested loops, nested double-buffered loops, a
// scratchpad or DRAM conflict with what a load would move across) the pass falls back to
// hoisting the second iteration's loads above the first iteration's compute,
// never across a conflicting DMA store. A loop with an odd trip count is
// pipelined the same way, its last iteration on the first copy after the loop;
// where the pipeline does not apply, it is left single-buffered (its iterations
// keep using the first copy).
//
// A buffer computed ahead (spyre::compute_one_iteration_ahead; in two copies,
// or in one where the iteration's rest never reads it) is pipelined the same
// way: the items of the body that write nothing but such buffers and their own
// SFU temporaries (a PT matmul producing attention's scores, the SFU
// instructions of its softmax, a loop of them), and the DMA loads into them,
// count as the tile's staging, so iteration i+1's are issued before the rest
// of iteration i and their units compute the next tile while the others
// consume this one. They keep their program order among the staging loads (a
// tile's operands are loaded before it is computed). A body that writes such
// a buffer inside a loop that also writes something else is not pipelined.
// Three more moves, only in a loop with a buffer computed ahead, each only
// across independent items: copy 0's next loads move up through copy 0's
// compute (not behind its trailing store in the DMA queue); copy 1's trailing
// stores move after the next pair's copy 1 loads (the first pair keeps none,
// the last pair's follow the epilogue's loads); and the first tile's items
// move up through what precedes the loop (attention's Q tile and scores ahead
// of the V that only P.V reads), then the second tile's DMA loads when the
// first pair is inline, below the first's (the next Q tile's load ahead of a
// resident V received over the ring: Granite-8B's prefill attention 103.8 ->
// 101.1 us).
//
// Two passes finish the pipeline on the loops around a pipelined loop:
// store_spreading.h (the loop's trailing store in pieces during the next
// iteration) and prologue_rotation.h (the next iteration's first tile loaded
// during this one).
//
// Expects a folded program tree (zero fills already elided, so a computed tile's
// producer is its matmul alone); guarantees the same results (the pass only
// reorders independent work and renames private buffers).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// A buffer with two copies: [lo, hi) is the first, [lo + offset, hi + offset) the second;
// `level` is the hardware loop level that stages it.
struct PingPongBuffer {
    std::string name;
    int level = 0;
    int loop_id = -1;  // the staging loop (ProgramNode::loop_id)
    int64_t lo = 0, hi = 0, offset = 0;  // offset 0: one copy (computed ahead in one copy)
    // compute_one_iteration_ahead: the instructions that write only this buffer move with the
    // staging loads (below), so the next iteration's tile is computed during this one's rest.
    bool computed_ahead = false;
};

// Also lets consecutive tiles that overlap share the overlap (tile_overlap_reuse.h; its SFU copies
// have at most `max_sfu_lanes` elements per row). Marks what the passes after it rewrite: the
// pipelined loops and their prologue loads, with computed-ahead buffers the first tile's
// producers too (store_spreading.h, prologue_rotation.h).
void apply_double_buffering(std::vector<ProgramNode> &tree, const std::vector<PingPongBuffer> &buffers,
                            int64_t stick_bytes, int64_t max_sfu_lanes);

}  // namespace compiler
}  // namespace spyre
