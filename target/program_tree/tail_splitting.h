// Tail splitting: the work a core does after its last loop is often one
// output tile's last step, epilogue and store:
//   pt.matmul (the last K chunk, all rows), SFU epilogue (all rows), dma.store (all rows)
// Each unit waits for the whole of the one before, so the store, which every
// core issues at once and which drains at the card's DRAM rate, starts only
// after the last matmul and epilogue have finished: the kernel's exposed drain.
// This pass cuts that trailing run into row pieces and orders it piece by
// piece,
//   pt.matmul rows 0..r, epilogue rows 0..r, store rows 0..r, pt.matmul rows r..2r, ...
// so the first rows are stored while the PT computes the next ones; the units
// overlap and only the last piece's work is exposed.
//
// The run is the trailing sequence of top-level instructions made of the last
// PT matmul (`max_matmuls` of them), the elementwise SFU instructions (no
// reductions) after it and, last, one single-plane DMA store; without a matmul
// right before them, the SFU instructions before the store. When the tree ends
// in a loop (or a loop then a lone store: store spreading's shape), the loop's
// last iteration is peeled first to reach the run. A matmul splits along its
// rows (whole PT passes), a DMA store along its rows (or whole sticks of its
// one row), an SFU instruction along its rows, or along its elements when it
// is one row (a tile flattened into one vector); the pieces cover each
// instruction exactly. A cut is applied only when no piece moved ahead of a
// piece of an earlier instruction touches scratchpad bytes that piece writes,
// or writes bytes it reads (the ranges of scratchpad_accesses.h), so each
// unit computes what it computed before; else the tree is left alone. Where
// the allocator placed the stored tile over the matmul's operands (no cut is
// then legal), the tile moves above every buffer of the core first, if
// `scratchpad_bytes` leaves room. The piece count is the largest up to
// `max_pieces` that every instruction divides into and that keeps each store
// piece at least `min_store_piece_bytes` (min_tail_store_piece_bytes below).
//
// Expects the tree after every other program-tree pass (its top-level order
// is each unit's stream order); guarantees the same results.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "program_tree/program_tree.h"
#include "spyre/machine.h"

namespace spyre {
namespace compiler {

// The most pieces a run is cut into: a store piece's DMA latency is paid per piece.
constexpr int kMaxTailPieces = 8;

struct TailSplitting {
    int max_pieces = kMaxTailPieces;
    int max_matmuls = 1;                // trailing matmuls cut and interleaved (the last ones)
    int64_t pt_pass_rows = 8;           // a matmul piece is whole PT passes
    int64_t stick_bytes = 128;          // a store of one row is cut into whole sticks
    int64_t scratchpad_bytes = 0;       // the stored tile may move up to here (see below)
    int64_t min_store_piece_bytes = 0;  // no store piece smaller than this
};

// Returns the number of pieces the tail was cut into (1: left alone).
int split_trailing_tile(std::vector<ProgramNode> &tree, const TailSplitting &options);

// The smallest store piece worth its own transfer: the bytes one core's DMA moves during one
// access latency at its DRAM rate alone, so no piece takes less than the latency it adds.
inline int64_t min_tail_store_piece_bytes(const MachineDescription &m) {
    return (int64_t)std::ceil(m.dma_latency_cycles * m.dram_bytes_per_cycle(1));
}

// The pieces split_trailing_tile cuts a run whose last matmul has `rows` rows and whose store
// moves `store_bytes` into when its epilogue and store divide as its rows do (for the
// planners' cost models).
inline int trailing_tile_pieces(int64_t rows, int64_t store_bytes, const MachineDescription &m) {
    if (m.pt_pass_rows <= 0 || rows % m.pt_pass_rows != 0) return 1;
    for (int pieces = kMaxTailPieces; pieces >= 2; pieces--) {
        if ((rows / m.pt_pass_rows) % pieces == 0 && store_bytes / pieces >= min_tail_store_piece_bytes(m)) return pieces;
    }
    return 1;
}

}  // namespace compiler
}  // namespace spyre
