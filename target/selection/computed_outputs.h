// Outputs computed directly: an Output whose definition is a computation (not a
// copy of a scratchpad Func) is computed into a scratchpad tile and stored from
// it, as a Halide user writes `out(x, y) = f(in(x, y))` without a copy stage.
//
// The device stores to DRAM only by DMA from the scratchpad, so a store of a
// computed value to an output cannot be compiled as it stands. This pass, on
// the device region's Halide IR before instruction selection, finds each such
// store and the statement S to stage at: the outermost loop around it (inside
// the core loop) whose body stores to that output only (no other Func's
// production, allocation or store inside it) and whose tile of the output fits
// a quarter of the scratchpad and half of what the scratchpad buffers around it
// leave (the tile spans the bytes between the lowest and highest element it
// stores, over all iterations of its loops, gaps between rows included); the
// store itself when no loop qualifies. S becomes
//   allocate <output>.tile[span] in scratchpad
//   S with every store to the output redirected to the tile (index - lowest)
//   S's loops again, storing the tile to the output (a copy, which selection
//     turns into DMA stores and loop folding into one transfer per tile)
//   free <output>.tile
// Stores whose value is already a plain load of a scratchpad buffer (the copy
// stage a schedule writes itself: `output(x, y) = result(x, y)` with result
// staged) are left alone, so every schedule that compiled before compiles to
// the same program. A schedule that wants another tile writes that copy stage.
//
// Stores this cannot stage keep the error selection gives them: a strided or
// gathered index (a tile holds dense vectors), an output updated in DRAM (an
// error here, naming accumulate_in_scratchpad).
//
// Expects the region's body (device_region.h) and the names the IR stores the
// kernel's outputs under; guarantees every store of a computed value to an
// output with a dense index is a copy of a scratchpad tile.
#pragma once

#include <set>
#include <string>

#include "Halide.h"
#include "spyre/machine.h"

namespace spyre {
namespace compiler {

// The output a tile buffer of this pass belongs to ("out.tile" -> "out"), for messages; any
// other name unchanged.
std::string output_of_tile(const std::string &buffer);

Halide::Internal::Stmt stage_computed_outputs(const Halide::Internal::Stmt &body, const std::set<std::string> &outputs,
                                              const MachineDescription &m);

}  // namespace compiler
}  // namespace spyre
