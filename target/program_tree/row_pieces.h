// Cutting instructions of a program tree into row pieces: the pieces the passes
// that interleave one tile's work unit by unit (tail_splitting.h at a core's
// last tile, head_splitting.h at its first) give a PT matmul and a DMA load.
// Piece p of n covers rows [p x rows / n, (p + 1) x rows / n) and nothing else,
// so the n pieces in order compute or move exactly what the whole one did.
#pragma once

#include <cstdint>
#include <optional>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// Piece `piece` of `pieces` of a PT matmul along its rows (C's and A's), or nothing when its
// rows do not divide into whole PT passes of `pt_pass_rows`.
std::optional<SymInstruction> matmul_row_piece(const SymInstruction &matmul, int piece, int pieces, int64_t pt_pass_rows);

// Piece `piece` of `pieces` of a single-plane DMA load whose rows are all valid, cut along its
// rows, or (one row, every byte valid) along whole sticks of the row; nothing when it does not
// divide so.
std::optional<SymInstruction> load_row_piece(const SymInstruction &load, int piece, int pieces, int64_t stick_bytes);

}  // namespace compiler
}  // namespace spyre
