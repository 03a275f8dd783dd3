// Stream emission for one core, with its token synchronization (the last
// pass on the program tree: after it a core is three instruction streams). The program tree
// is in the sequential order of the Halide IR; the hardware runs the DMA, PT
// and SFU streams independently. This pass finds every pair of instructions
// on different units that touch overlapping scratchpad bytes (one of them
// writing), in program order and across loop iterations, and orders them with
// a token: the earlier unit signals after its instruction (or after the loop
// that contains it), the later unit waits before its instruction (or loop).
// Each directed unit pair has its own token channel. A loop body signals and
// waits as many tokens per channel in every iteration, so counts never drift
// across iterations: the tokens of an iteration that only the next iteration
// needs (loop-carried dependences) are waited for there, before the first
// item that needs one of them or that waits on their channel at all; the
// channel is signalled that many times before the loop (the first iteration
// has no predecessor), and the last iteration's are taken by the items after
// the loop: an item that depends on the loop takes them as far as the first
// that follows the last body item it conflicts with (instead of the loop's
// end and a signal after it), and whatever nothing takes is taken at the end
// of the enclosing body. So a tile's compute in iteration i + 1 waits for the
// store of iteration i only where it overwrites what that store reads, and
// the epilogue of a software pipeline, after its loop, waits for the loop's
// last load without waiting for its last store. Tokens are
// taken in order per channel, so a token still pending when a loop starts is
// drained before the loop if the loop waits on its channel. Instructions
// on the same unit need nothing: a unit runs its stream in order.
//
// Loads marked for ring sharing (program_tree.h RingShare) are expanded here
// into their ring protocol, on the DMA stream, in place of the load.
//
// Expects a folded program tree; guarantees streams that compute exactly what
// the sequential program computes, in any timing (tested with the simulator's
// forced-serial and random-latency modes).
#pragma once

#include <vector>

#include "program_tree/program_tree.h"
#include "spyre/machine.h"
#include "spyre/program.h"

namespace spyre {
namespace compiler {

// Emits the three unit streams of one core. Throws CompileError when the tree
// needs more loop levels than the hardware has.
CoreStreams emit_core_streams(const std::vector<ProgramNode> &tree, const MachineDescription &m);

}  // namespace compiler
}  // namespace spyre
