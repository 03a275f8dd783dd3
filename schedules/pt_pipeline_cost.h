// The PT pipeline model of the planning framework: the simulated time, DRAM
// traffic of one tiling of a matmul-shaped kernel whose cores stream both
// operands through the scratchpad, step by step, into an fp32 accumulator on
// the PT (C = epilogue(A.B [+ bias]) [+ R]). gen_matmul's and gen_bmm's
// programs are this pipeline (their staged, not resident, operands); a family
// fills a PtPipeline for a candidate and judge() (planner.h) costs it here.
// Kernels that keep one operand resident and stream the other (conv2d's
// weights, bmm's resident B slice) are the streaming estimate's
// (estimate_cycles, planner.h). docs/planning.md says why there are two.
// In closed form from the machine description the simulator runs on
// (docs/timing-model.md); assumes the candidate is legal (judge() checks).
#pragma once

#include <cstdint>

#include "spyre/machine.h"

namespace spyre {
namespace planning {

// One candidate's pipeline as the program compiles it.
struct PtPipeline {
    int tm = 0, tn = 0, tk = 0, kp = 0;  // output tile rows x columns; K chunk (== kp: whole K); K padded
    int cm = 1, cn = 1;                  // cores along the rows and the columns
    int64_t mt = 1, nt = 1;    // output tiles per core along the rows and the columns
    int in_bytes = 2;          // element bytes of A and B
    int out_bytes = 2;         // element bytes of C, the bias and R
    double pt_type_factor = 1; // the PT's rate factor for A and B (pt_type_factor(), planner.h)
    bool double_buffer = false;         // staged pieces in two copies (the backend: a K loop of even trips only)
    bool a_shared = false, b_shared = false;  // A along the cn cores of a row range, B along the cm cores of a column range
    bool b_gathered = false;            // a shared B loaded in shares, one per core of its chain (RingForwarding::Gathered)
    bool result_double_buffer = false;  // the C tile in two copies: its store overlaps the next tile
    bool a_per_row_of_tiles = false;    // whole-K tiles: A staged once per row of tiles (else per tile)
    bool a_resident = false;            // K chunked: A's whole-K panel (tm x kp) staged once per row of tiles
    bool acc_ahead = false;             // whole K: the accumulator in two copies, a tile's matmul during the previous epilogue and store
    bool b_resident = false;            // K chunked, B shared: a core's whole-K B slice staged once, gathered over its chain
    bool bias = false;                  // each tile loads a bias row, widens it and initialises the accumulator with it (else zeroes it)
    bool residual = false;              // each tile loads an R tile, which the epilogue adds
    double epilogue_transcendental_passes = 0;  // SFU passes of the epilogue over the fp32 tile charged as transcendental
    double epilogue_simple_passes = 0;          // and those charged as simple ones (an add, a product)
    double out_fraction = 1;   // C's columns per accumulator column (1/2: a gated epilogue, swiglu)
    // Scratchpad bytes a core leaves free (judge() sets it from the plan's footprint): the last
    // tile runs in row pieces (tail_splitting.h) only where its C tile could move into them.
    int64_t scratchpad_free_bytes = 0;
};

struct PtPipelineCost {
    double cycles = 0;                            // estimated simulated cycles of the kernel
    double read_bytes = 0, write_bytes = 0;       // DRAM traffic of the whole kernel
    double per_core_cycles = 0, dram_cycles = 0;  // the two terms of the estimate (for SPYRE_PLAN_LOG)
};

// The simulated time of a candidate, built from the machine description the
// simulator runs on (docs/timing-model.md) and the program the matmul and bmm
// schedules emit for it. Per core the program is a sequence of steps, one per
// K chunk of each output tile: stage the step's A and B pieces (DMA),
// acc += A*B (PT); at a tile's first step also the bias (DMA, then acc = bias
// on the SFU; without a bias acc = 0), at its last the epilogue and cast (SFU)
// and the store of the C tile (DMA). With a residual each tile first loads its
// R tile (DMA, before the bias), which the epilogue adds (SFU); R's bytes join
// the kernel's DRAM reads.
// No simulation: a closed form per candidate, so planning stays cheap.
//  - DMA: a core's transfers run one at a time at its share of the card's DRAM
//    work rate while `active` cores move data at once (dram_cycles at that
//    concurrency); `active` is the cores times the fraction of the run the
//    card's DRAM work for all bytes takes, settled in a few rounds (the
//    simulator's DramModel shares the card among the cores with transfers in
//    flight). Ring forwarding of shared A pieces occupies the same unit, and a
//    core inside a chain forwards every piece.
//  - Each wait on a transfer pays the access latency (dma_latency_cycles),
//    except a gathered B share's in a double-buffered K loop, loaded a step
//    ahead: the chain's fill pays it once.
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
//    (cm - 1) x cn links (whole tiles: the matmul families do not forward in
//    pieces), and a step takes at least cn B pieces' link time. A gathered B
//    chain has no head: every core loads 1/cm of each piece and forwards the
//    other cm - 1 shares one after another, each a share's put and cn links'
//    hops behind the previous one.
//  - Stores: every core stores a whole tile at about the same time, so such a
//    store costs the card's work for all of them, turnaround included (the
//    card charges it to the stores of a kernel that reads more than it writes).
//  - Fill: the first loads before the first matmul; with shared operands, in
//    each core's DMA queue order: every core's first A piece (the A heads'
//    at once when A is shared) and the A chain's fill, then the B chain's
//    head's B piece (gathered: every core's share) and the B chain's fill.
//    The bias row loads before B (load_ordering.h): with whole K the
//    accumulator's initialization overlaps what lands after it, B's load
//    and forwards (with K chunks it is charged after the loads, as fitted);
//    drain: the last tile's epilogue and store after the last matmul, in row
//    pieces (tail_splitting.h) that overlap the matmul where the steps leave
//    the card's DRAM idle and the core has room to move its C tile.
//  - A resident panel (K chunked): each row of tiles first loads A's whole-K
//    panel, every core at once (a shared panel gathered: each core of an A
//    chain loads 1/cn of it and forwards the other shares round the chain);
//    the steps then load only B. A later row of tiles' panel stalls its core
//    the same way.
//  - A resident B slice (K chunked, B shared): every core loads 1/cm of its
//    chain's whole-K slice at once and forwards the other shares round the
//    chain, all before the first step (the fill); the steps load A alone.
//  - Whole-K tiles along a B chain (one row of tiles a core): a tile takes the
//    slower of the chain head's DMA queue (the next B, its own store) and the
//    PT with the epilogue (single buffered: both); the first matmul follows the
//    first B's forward.
//  - The card's DRAM work for the kernel's total bytes (dram_cycles), plus the
//    last matmul and epilogue, during which no transfer is in flight, bounds the
//    whole run from below; where the kernel writes more than it reads, so does
//    the first stores' start plus every byte after it at the card's rate.
// tests/compiler/matmul_planner_ranking_test.cpp (*MatmulPlannerRanking*) and
// planner_ranking_test.cpp's bmm cases check that it ranks candidates as the
// simulator does.
PtPipelineCost estimate_pt_pipeline(const PtPipeline &p, const MachineDescription &m);

// Whether a family offers B chains gathered (RingForwarding::Gathered) for a chain of
// `chain_cores` cores `spacing` apart on the ring, staging K chunks of `tk` rows of a K of
// `k`: the lowering cuts each chunk into a share of whole rows per core, the same on every
// chunk (k a multiple of tk, tk >= chain_cores), and the model above holds:
//  - the chain closes with a hop of `spacing` links like its others, i.e. its chains fill
//    the ring (chain_cores x spacing == m.cores). In a closed chain every core waits on
//    its upstream, so all of it runs at its longest hop's pace: with fewer cores the hop
//    back from the last core to the first crosses the idle ones (gen_matmul m=512
//    n=4096 k=12800 on 28 cores, 7-core chains: gathered 1574.9 us, whole tiles 1065.6);
//  - the chain has at most kMaxGatheredChain cores, or it spans every core of the
//    machine and its steps are long: K in chunks (tk < k), or whole K of at least
//    kLongGatheredChainMinK rows. Each of a chain's
//    n - 1 rounds a step is paced by the slowest core of the ring, whose own stores and
//    late loads stall the rest, which the model leaves out. Before the cores' plain
//    loads rode the rounds (program_tree/gather_riders.h) every core's DMA queue held
//    its loads and then its forwards at the same moments as the others', the DRAM idle
//    through the forwards, and long chains lost: m=2048 n=25600 k=4096 with a 32-core
//    chain 6749.5 us (estimated 6579.6) and 16-core chains 6986.1 against whole tiles
//    6584.5. With riders, 32-core chains win on the incumbent's K-chunked matmuls
//    (m=2048 n=512 k=4096: 189.1 -> 166.3 us; m=8192 n=1024 k=2048: 674.0 -> 606.7)
//    and whole-K ones of K >= 1024 (m=n=k=2048, 64 x 64 tiles: 341.5 -> 313.6), and
//    lose 2-6% on whole-K ones of K <= 512, where a tile's store sits between the
//    rounds of every step (m=n=2048 k=512: 118.8 -> 122.9; m=n=512 k=64: 6.0 -> 6.4;
//    the model estimates them 4-10% short). 16-core chains gained 0.4-1.1% on two
//    incumbent matmuls and lost 0.2% on PR 4302's bmm at B=4 N=12800 (3302.7 ->
//    3309.8 us): not offered. The 2- and 4-core chains of the Granite prefill's
//    projections gain 1-17%.
constexpr int kMaxGatheredChain = 8;
constexpr int kLongGatheredChainMinK = 1024;
bool gathered_chain_offered(int chain_cores, int spacing, int tk, int k, const MachineDescription &m);

}  // namespace planning
}  // namespace spyre
