// The matmul's terms of the planning framework: the scratchpad footprint of one
// tiling of C = act(A.B + bias) (+ R) as schedule_matmul_spyre compiles it, and
// the pipeline the framework's PT pipeline model costs (pt_pipeline_cost.h).
// Assumes the candidate is legal (its footprint fits; judge() checks).
#pragma once

#include <cstdint>

#include "matmul_schedule.h"
#include "pt_pipeline_cost.h"
#include "schedule_context.h"
#include "spyre/machine.h"

namespace spyre {

// Scratchpad bytes per core: A (tm x tk; tm x kp, its whole-K panel, with a_resident), B (tk x tn), the fp32 accumulator,
// the epilogue stages (fp32) and the result tile, the bias (staged and fp32)
// and a few fp32 SFU temporaries of one tile row. With a residual also its
// staged tile and two more temporary rows (R widened, the sum). SFU row
// blocking (target/program_tree/sfu_row_blocking.h) widens the temporaries to more rows
// only where the scratchpad has room.
// `bytes` is the element size of A and B, `out_bytes` that of C, the bias and R
// (int8 operands: 1 and 4; a stick holds 128 int8).
// With swiglu, tn counts the accumulator's columns; the epilogue stage, the result and
// R cover C's half of them.
int64_t matmul_footprint(int tm, int tn, int tk, int bytes, int out_bytes, int stages, bool residual, bool swiglu = false,
                         int a_resident_kp = 0);

// The second copies of double buffering: the A and B chunks (K chunked) or tiles;
// with A staged once a core (a resident panel, or whole-K tiles in one row of tiles a
// core: single) only B's.
int64_t second_copies(int tm, int tn, int tk, int bytes, bool a_once = false);

// One candidate of the planner's search: tiles, K chunk, core split, tiles per core.
struct MatmulCandidate {
    int tm, tn, tk, kp, cm, cn;
    int64_t mt, nt;  // M and N tiles per core
    bool double_buffer, a_shared, b_shared;
    bool result_double_buffer;  // the C tile in two copies: its store overlaps the next tile
    bool b_gathered = false;    // a shared B loaded in shares by every core of its chain
    bool a_resident = false;    // K chunked: A's whole-K panel staged once per row of tiles
    bool acc_ahead = false;     // whole K: the accumulator in two copies (MatmulSpyrePlan::acc_ahead)
    bool b_resident = false;    // K chunked, B shared: a core's whole-K B slice staged once (MatmulSpyrePlan::b_resident)
};

// The candidate's pipeline for the framework's PT pipeline model
// (pt_pipeline_cost.h), which judge() costs: A staged per K chunk or per row of
// tiles, the bias per tile, the activation's transcendental passes, the residual.
planning::PtPipeline matmul_pipeline(const MatmulShape &shape, const MatmulCandidate &c,
                                     const MachineDescription &m = scheduling_machine());

}  // namespace spyre
