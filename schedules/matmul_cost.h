// The matmul cost model: the simulated time, DRAM traffic and scratchpad
// footprint of one tiling of C = act(A.B + bias) (+ R) as schedule_matmul_spyre
// compiles it, in closed form from the machine description the simulator runs
// on (docs/timing-model.md). The matmul planner ranks its candidates with it,
// and the bmm planner its batch-1 candidates (a bmm of one batch is this
// matmul without the bias), so the two families rank the same work alike.
// Assumes the candidate is legal (its footprint fits; the caller checks).
#pragma once

#include <cstdint>

#include "matmul_schedule.h"
#include "spyre/machine.h"

namespace spyre {

// Scratchpad bytes per core: A (tm x tk), B (tk x tn), the fp32 accumulator,
// the epilogue stages (fp32) and the result tile, the bias (staged and fp32)
// and a few fp32 SFU temporaries of one tile row. With a residual also its
// staged tile and two more temporary rows (R widened, the sum). SFU row
// blocking (target/program_tree/sfu_row_blocking.h) widens the temporaries to more rows
// only where the scratchpad has room.
// `bytes` is the element size of A and B, `out_bytes` that of C, the bias and R
// (int8 operands: 1 and 4; a stick holds 128 int8).
int64_t matmul_footprint(int tm, int tn, int tk, int bytes, int out_bytes, int stages, bool residual);

// The second copies of double buffering: the A and B chunks (K chunked) or tiles.
int64_t second_copies(int tm, int tn, int tk, int bytes);

// One candidate of the planner's search: tiles, K chunk, core split, tiles per core.
struct MatmulCandidate {
    int tm, tn, tk, kp, cm, cn;
    int64_t mt, nt;  // M and N tiles per core
    bool double_buffer, a_shared, b_shared;
    bool result_double_buffer;  // the C tile in two copies: its store overlaps the next tile
};

struct MatmulCost {
    double cycles = 0;                     // estimated simulated cycles of the kernel
    double read_bytes = 0, write_bytes = 0;  // DRAM traffic of the whole kernel
    double per_core_cycles = 0, dram_cycles = 0;  // the two terms of the estimate (for SPYRE_PLAN_LOG)
};

// The simulated time of a candidate, built from the machine description the
// simulator runs on (docs/timing-model.md) and the program schedule_matmul_spyre
// emits for it. Per core the program is a sequence of steps, one per K chunk of
// each output tile: stage the step's A and B pieces (DMA), acc += A*B (PT); at a
// tile's first step also the bias (DMA, then acc = bias on the SFU), at its last
// the epilogue and cast (SFU) and the store of the C tile (DMA). With a
// residual each tile first loads its R tile (DMA, before the bias), which the
// epilogue adds (SFU); R's bytes join the kernel's DRAM reads.
// No simulation: a closed form per candidate, so planning stays cheap.
//  - DMA: a core's transfers run one at a time at its share of the card's DRAM
//    work rate while `active` cores move data at once (dram_cycles at that
//    concurrency); `active` is the cores times the fraction of the run the
//    card's DRAM work for all bytes takes, settled in a few rounds (the
//    simulator's DramModel shares the card among the cores with transfers in
//    flight). Ring forwarding of shared A pieces occupies the same unit, and a
//    core inside a chain forwards every piece.
//  - Each wait on a transfer pays the access latency (dma_latency_cycles).
//  - PT at the sustained rate (pt_macs_per_cycle) with the pass fill.
//  - What double buffering overlaps, read from the emitted DMA streams: with K
//    chunks, the next chunk's loads with this chunk's matmul, within a tile
//    (each tile's first chunk loads before its first matmul); with whole-K
//    tiles only the second tile's B, since every later B load is issued after
//    the previous store and before the next bias. Between tiles the bias and the
//    SFU work overlap nothing, nor does the store unless the backend spreads it
//    over the next tile's K chunks (store_spreading.h).
//  - A chain of cores sharing A (or B) runs at its head's pace: the head loads
//    every piece of the chain at its fair share of the card. A B chain's cores
//    are cn apart on the ring, so its forwards cross cn links each, which the
//    cn B chains share: its stagger (the fill of its last core) crosses
//    (cm - 1) x cn links (whole tiles: matmul does not forward in pieces), and
//    a step takes at least cn B pieces' link time. (Whole-K tiles are not offered B chains:
//    docs/planning.md.)
//  - Stores: every core stores a whole tile at about the same time, so such a
//    store costs the card's work for all of them, turnaround included (the
//    card charges it to the stores of a kernel that reads more than it writes).
//  - Fill: the first loads (and, for shared A, the chain head's first piece
//    plus cn - 1 ring hops) before the first matmul; drain: the last tile's
//    epilogue and store after the last matmul.
//  - The card's DRAM work for the kernel's total bytes (dram_cycles), plus the
//    last matmul and epilogue, during which no transfer is in flight, bounds the
//    whole run from below.
MatmulCost estimate_matmul(const MachineDescription &m, const MatmulShape &shape, const MatmulCandidate &c);

}  // namespace spyre
