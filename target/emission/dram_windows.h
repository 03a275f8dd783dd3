// DRAM windows: every tensor addressed through the core's window of it.
// A core addresses at most max_core_span_bytes of a tensor at a time
// (spyre/dram_window.h, the rule). This pass runs on a core's emitted streams
// (after emit_core_streams) and, per argument its DMA stream touches:
//   - all its bytes in [0, span): nothing (the initial window covers them);
//   - at most `span` bytes in all, not from 0: one dma.window at the start of
//     the stream, at the lowest byte;
//   - more than `span` bytes: a dma.window before each of its transfers of the
//     argument, at that transfer's lowest byte (affine in the same loop
//     indices as the transfer's DRAM offset), so the window walks the tensor;
//     a transfer that itself reaches over more than `span` bytes (tall strided
//     tiles) is first split into pieces that do not: groups of whole planes,
//     else rows of one plane, else whole sticks of one row.
// Expects: loops are loop/endloop pairs with constant trip counts; a
// transfer's DRAM offset is its only affine field that touches DRAM.
// Guarantees: every dma.load / dma.store lies inside its argument's current
// window, so a tensor of any size that fits device DRAM can be addressed
// (a span below one stick is a CompileError naming the tensor).
#pragma once

#include <vector>

#include "spyre/machine.h"
#include "spyre/program.h"

namespace spyre {
namespace compiler {

void address_through_dram_windows(CoreStreams &core, const std::vector<ProgramArgument> &args,
                                  const MachineDescription &m);

}  // namespace compiler
}  // namespace spyre
