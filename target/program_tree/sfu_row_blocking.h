// SFU row blocking: a hardware loop whose body is several SFU instructions,
// one row per iteration, linked through scratchpad temporaries (an
// elementwise expression tree over the rows of a tile, such as a matmul's
// GELU epilogue), becomes a loop over blocks of rows whose instructions each
// process the whole block (the SFU's `rows` and stride fields). Each
// temporary gets one row slot per row of the block, above every buffer of the
// core, so the rows of a block never share one. This divides the number of
// SFU instructions (and their fixed issue cost) by the block size; the block
// is the whole loop when the scratchpad has room.
//
// An instruction whose rows are contiguous in every operand (a multi-stick
// vector of one tile row) is first rewritten as one row of rows x n elements.
// Applies only when every instruction of the body is a non-reducing SFU
// instruction over one row, every temporary is written in the body before it
// is read, each non-temporary result advances every iteration and different
// rows of the body never touch the same non-temporary bytes. Otherwise the
// loop is left alone.
//
// Expects a folded program tree and the core's scratchpad peak; guarantees
// the same results and returns the new peak.
#pragma once

#include <cstdint>
#include <vector>

#include "program_tree/program_tree.h"
#include "spyre/machine.h"

namespace spyre {
namespace compiler {

int64_t block_sfu_rows(std::vector<ProgramNode> &tree, int64_t scratchpad_peak, const MachineDescription &m);

}  // namespace compiler
}  // namespace spyre
