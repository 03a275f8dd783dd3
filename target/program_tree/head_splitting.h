// Head splitting: a core that keeps one operand's panel resident for all its
// tiles (a matmul's whole-K A rows, reused by every N tile of the row) loads
// that panel in one DMA before its first tile, and its first matmul waits for
// all of it:
//   dma.load panel (all rows), dma.load B0, ..., pt.matmul tile 0 (all rows), ...
// On few cores the panel is large (gen_matmul m=n=2048 k=512 on 4 cores: 512 KB
// a core, 16-19 us before the PT starts). This pass cuts the panel's load and
// the first matmul reading it into the same row pieces and orders them
//   dma.load panel rows 0..r, dma.load B0, ..., dma.load panel rows r..2r, ...,
//   pt.matmul tile 0 rows 0..r, pt.matmul rows r..2r, ...
// so the PT starts once the first rows and the tile's other operands have
// landed, and the panel's other rows load while it computes.
//
// The panel load is a top-level DMA load before the first top-level matmul or
// loop, not shared over the ring, independent of the loops, whose bytes are
// exactly the A operand of the first matmul that reads them (rows every lda
// bytes, or one flattened row), every row and byte valid. The first matmul is
// at the top level or in the first iteration of the top-level loop that
// follows, which is peeled (the loop keeps the others). The other pieces load
// right after the last DMA load that the first matmul or the items before it
// read (the tile's own operands stay ahead of them), where moving them past
// the items in between is legal (no scratchpad or DRAM conflict). A piece is
// whole PT passes (`pt_pass_rows`) and at least `min_piece_bytes`; the piece
// count is the largest up to `max_pieces` that divides the rows so.
//
// Expects the tree after every other program-tree pass but tail splitting
// (run after it: the first and the last tile are then different items);
// guarantees the same results (the matmul's row pieces compute its rows in
// order, and a load only moves past items that do not touch its bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

constexpr int kMaxHeadPieces = 8;

struct HeadSplitting {
    int max_pieces = kMaxHeadPieces;
    int64_t pt_pass_rows = 8;     // a matmul piece is whole PT passes
    int64_t stick_bytes = 128;    // a flattened panel (one row) is cut into whole sticks
    int64_t min_piece_bytes = 0;  // no panel piece smaller than this
};

// Returns the number of pieces the panel and the first matmul were cut into (1: left alone).
int split_leading_panel(std::vector<ProgramNode> &tree, const HeadSplitting &options);

}  // namespace compiler
}  // namespace spyre
