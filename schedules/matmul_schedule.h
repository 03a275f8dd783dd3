// Schedules of the matmul with a fused epilogue (generators/matmul_generator.cpp):
//   C(n, m) = act(sum_k A(k, m) * B(n, k) + bias(n)) [+ R(n, m) with residual],  act in {none, relu, gelu, silu}
//   or, with swiglu, the gate of two interleaved accumulator columns (kSwigluBlock below)
// kept apart from the algorithm. The bias is the accumulator's initial value
// (acc = bias; acc += A * B), so the epilogue is the activation and the cast.
//
// schedule_matmul_host: a CPU schedule for the host reference build.
// schedule_matmul_spyre: one constant-extent parallel loop over the cores
//   (N and M tiles), per core for mo, no:
//     stage the bias tile (DMA, widened to fp32 on the SFU for fp16),
//     acc = bias (SFU), for each K chunk: stage A and B tiles (DMA), acc += A*B (PT;
//     int8 A and B into an int32 acc for dtype int8),
//     activation and cast on the SFU at the tile (whole tile rows per instruction),
//     store the C tile (DMA).
//   With shape.row_scale the accumulator starts at zero, the core's rows of the
//   scale are staged once (DMA), and the epilogue's first stage is
//   scaled = acc * scale(m) + bias(n) on the SFU.
//   With shape.residual the R tile is staged too (DMA at the tile's start,
//   before the bias; widened on the SFU for fp16) and added after the
//   activation, before the cast.
//   With plan.a_shared the cores of one row range load each A tile once per
//   chain and pass it along the ring (share_over_ring); with plan.b_shared the
//   cores of one column range do so with B.
//   With plan.a_resident (K chunked, several N tiles a core) A is staged per row
//   of tiles as its whole-K panel, once, and every N tile's K chunks read their
//   piece of it: A is read once instead of once per N tile.
#pragma once

#include <string>
#include <vector>

#include "Halide.h"
#include "schedule_knobs.h"

namespace spyre {

enum class Activation { None, Relu, Gelu, Silu, Swiglu };

// activation=swiglu: the accumulator has two columns per column of C, B's and the bias's
// columns interleaved in blocks of kSwigluBlock: block b holds the gate's columns
// [b*kSwigluBlock, (b+1)*kSwigluBlock) then the up projection's same columns, and
//   C(n, m) = silu(acc(g(n), m)) * acc(g(n) + kSwigluBlock, m),  g(n) = n + kSwigluBlock * (n / kSwigluBlock)
// (a transformer MLP's gate and up projections in one matmul, with the SwiGLU gate as
// its epilogue). N, C's columns, must be a multiple of the block.
constexpr int kSwigluBlock = 64;

// The Funcs and Vars of the matmul algorithm that a schedule works on.
struct MatmulFuncs {
    Halide::Func C;        // output C(n, m) = result(n, m)
    Halide::Func result;   // result(n, m) = cast(dtype, act(acc(n, m)))
    Halide::Func acc;      // fp32 accumulator: acc = bias_f(n); acc += A(k, m) * B(n, k)
    Halide::Func bias_f;   // bias widened to fp32
    std::vector<Halide::Func> epilogue;  // stages between acc and result: the row scale's, the activation's (gelu, silu, swiglu)
    Halide::RDom k;        // the reduction over the (padded) K
    Halide::Var n, m;
};

struct MatmulShape {
    int m = 1, n = 1, k = 1;  // n: C's columns (the accumulator has twice as many with swiglu)
    Halide::Type dtype;  // of A and B: float16, float32, or int8 (then bias, R and C are int32)
    Activation activation = Activation::None;
    bool residual = false;  // C = act(A.B + bias) + R, R(n, m) like C (gen_matmul residual=true)
    // B and the bias padded along N to whole blocks of (a tile-column step x the machine's cores)
    // columns instead of to this plan's tiles: a layout that depends on N, the type and the
    // machine only, so kernels of one weight at several M (an LLM's prefill and decode)
    // read one copy of it. Plans are limited to those whose padded N fits in it (gen_matmul
    // shared_weight_layout=true).
    bool shared_weight_layout = false;
    // C = act(scale(m) * A.B + bias) [+ R]: a float32 factor per row of C (gen_matmul
    // row_scale=true); the accumulator starts at zero and the epilogue's first stage,
    // scaled = acc * scale + bias, runs over the accumulator's columns.
    bool row_scale = false;
};

// The accumulator's (B's and the bias's) columns: n, or 2 n with activation=swiglu.
int matmul_acc_columns(const MatmulShape &shape);

// B's padded N under shape.shared_weight_layout: N rounded up to whole blocks of
// (a tile-column step, 64 columns or a whole stick, x the scheduling machine's cores) columns.
int shared_weight_padded_n(const MatmulShape &shape);

// The type of C, the bias and R: int32 for int8 operands (accumulated in int32
// on the PT), else the operands' type.
Halide::Type matmul_output_type(const MatmulShape &shape);

// Tiles, padding and core split of the Spyre schedule for one shape.
struct MatmulSpyrePlan {
    int tm = 0, tn = 0, tk = 0;  // tile sizes (tn: accumulator columns); tk == kp unless K is chunked
    int mp = 0, np = 0, kp = 0;  // padded extents (multiples of cm * tm, cn * tn, the input stick; np: accumulator columns)
    int c_tn = 0, c_np = 0;      // C's tile columns and padded N: tn and np, halved with swiglu
    int bp = 0;                  // B's and the bias's padded N: np, or shared_weight_padded_n (>= np)
    int cm = 1, cn = 1;          // cores along m and n
    int in_lanes = 0;            // stick lanes of the dtype
    int64_t footprint_bytes = 0; // estimated scratchpad bytes per core
    int64_t dram_bytes = 0;      // estimated DRAM traffic of the whole kernel
    double estimated_us = 0;     // the planner's estimate of the simulated time (the framework's PT pipeline model, pt_pipeline_cost.h)
    bool double_buffer = false;  // staged A and B tiles (K chunks) in two copies
    bool double_buffer_result = false;  // the result tile too (an even number of N tiles per core)
    bool a_shared = false;       // the cn cores of one row range pass A tiles along the ring (cn > 1)
    bool b_shared = false;       // the cm cores of one column range pass B tiles along the ring (cm > 1)
    bool b_gathered = false;     // ... each loading 1/cm of every B tile (RingForwarding::Gathered), not the first alone
    bool a_resident = false;     // K chunked: A's whole-K panel (tm x kp) staged once per row of tiles, read by its N tiles' chunks
    bool acc_ahead = false;      // whole K: the accumulator in two copies, each tile's matmul computed while the tile before
                                 // finishes its epilogue and store (spyre::compute_one_iteration_ahead)
    bool b_resident = false;     // K chunked, B shared: each core's whole-K B slice (kp x its N tiles) staged once,
                                 // loaded in shares by the cores of its chain and gathered round it; the K steps load A alone

    bool k_chunked() const { return tk < kp; }
    int cores() const { return cm * cn; }
};

// The planner's ties (planning::PlanSearch): the matmul cost (matmul_cost.h) resolves 0.1%.
// Its candidate space is stated at plan_matmul_spyre (docs/planning.md's table).
constexpr double kMatmulTieTolerance = 1e-3;
// A plan with A's whole-K panel resident (a_staging) wins only when estimated this much
// faster than every other (Verdict::rank_margin). Its own estimate is within 3% of the
// simulator where checked, but the K-chunked plans it displaces, with A shared and B
// gathered, are estimated 6-8% slow (m=512 n=12800 k=4096 swiglu: 1997 against 1841 us
// simulated; n=14336 k=8192: 4043 against 3799). Without the margin, panels estimated
// ahead by less than that took the place of faster plans: at n=14336 k=8192 one
// estimated 0.5% ahead simulated 4018.5 us against 3799.1 (forwarded whole; gathered:
// 1.1% ahead, 3871.6 us), and the LM head at m=1, 0.2% ahead, 2671.6 against 2665.0 us.
// Where the panel pays it is estimated 12% ahead (1761 against 1997 us; 1709.6 against
// 1841.4 simulated).
constexpr double kMatmulResidentPanelMargin = 0.02;

// Whole-K tiles along a B chain (one row of tiles a core) win only by this much too: the
// model's estimate for them is checked on fewer shapes and tends to the optimistic side
// where one long chain spans the cores (gen_matmul m=2048 n=1024 k=1024, one 32-core chain:
// estimated 115.6 us, simulated 125.2), and where it tied the K-chunked plan (within
// 0.1%, m=1024 n=4096 k=2048 on 16 cores) it simulated 2.5% slower.
constexpr double kMatmulWholeKChainMargin = 0.02;

// With result=auto the result tile in one copy where two fit (its store spread over the next
// tile's chunks) wins only by this much as well, on top of the margins above: within it the two are near
// ties the model does not break. Without it, one copy was taken on estimates 0.3-1.7% ahead
// and simulated 0.6-1.8% behind: llama3-70b's gate/up + SwiGLU at TP 2 (m=512 n=14336 k=8192,
// A resident, 3843 us against 3774 with two copies), the performance report's
// matmul+bias+gelu (576.4 against 573.2 us), m=3072 n=k=2048 on 32 cores (459.4 against
// 453.9). Against its own second copy one copy is estimated 5-25% ahead where the store's
// spreading pays, so the margin keeps it there; the gains it gives up were near ties too
// (m=768 n=k=2048 on 16 cores: 48 x 1024 tiles with one copy estimated 219.1 us, simulated
// 219.0, against the plan kept, 223.4 and 225.7; docs/planning.md).
constexpr double kMatmulResultSingleMargin = 0.02;

// Knobs of the Spyre schedule (GeneratorParams of gen_matmul).
// X(type, name, default, what it does, the autoscheduler's candidates; schedule_knobs.h)
#define SPYRE_MATMUL_KNOBS(X) \
    X(int, max_cores, 0, "use at most this many cores, cm * cn (0: all the machine's cores)", spyre::knob_core_counts) \
    X(bool, double_buffer, true, "staged tiles in two copies when they fit: DMA overlaps the PT", spyre::knob_bools) \
    X(int, tile_m, 0, "rows per output tile (0: automatic; rounded up to whole 8-row PT passes)", spyre::knob_from_shape) \
    X(int, tile_n, 0, "columns of C per output tile (0: automatic; rounded up to whole sticks, with swiglu to whole 64-column blocks)", spyre::knob_from_shape) \
    X(bool, share_a, true, "consider plans whose cores along N share A tiles over the ring", spyre::knob_bools) \
    X(bool, share_b, true, "consider K-chunked plans whose cores along M share B tiles over the ring (docs/planning.md)", spyre::knob_bools) \
    X(std::string, b_forwarding, "auto", "how a B chain's cores get each B tile: whole (the first loads it and forwards it), gathered (each loads a share and forwards the others' round the chain: RingForwarding::Gathered) or auto (the planner's choice)", {"auto", "whole", "gathered"}) \
    X(std::string, a_staging, "auto", "how a K-chunked plan stages A: chunks (a tm x tk piece per K chunk of every tile), resident (only plans that stage a row of tiles' whole-K panel once for all its N tiles: K chunked, two or more N tiles and one row of tiles a core, B not shared or shared gathered; a panel shared over the ring travels gathered, a row or more per core of its chain) or auto (the planner's choice)", {"auto", "chunks", "resident"}) \
    X(std::string, accumulator, "auto", "the fp32 accumulator tile: single (one copy: each tile's epilogue and store run while the PT waits), double (only plans with two copies: whole-K tiles, two or more a core, double buffered, B not gathered; the next tile's matmul runs during this one's epilogue and store) or auto (the planner's choice: two copies where the PT pipeline model says they pay)", {"auto", "single", "double"}) \
    X(std::string, result, "auto", "the result tile, staged for C's store: single (one copy; with K chunks its store is spread over the next tile's chunk loads: store_spreading.h), double (only plans with two copies: an even number of N tiles a core, double buffered, room for the copy; the next tile's epilogue need not wait for the store, which stays whole in the DMA queue ahead of the next tile's loads) or auto (the planner's choice)", {"auto", "single", "double"}) \
    X(std::string, b_staging, "auto", "how a K-chunked plan with B shared stages B: chunks (a tk x tn piece per K chunk of every tile, along the chain) or resident (only plans whose one B chain spans every core of the machine: each core's whole-K B slice for all its tiles, loaded once in shares by the chain's cores and gathered round it; at least a K row per core) or auto (the planner's choice)", {"auto", "chunks", "resident"})

struct MatmulSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_MATMUL_KNOBS)
};

// Chooses tiles and the core split for `shape` with the least estimated time:
// a model of the program each candidate compiles to, costed with the machine
// description the simulator runs on (DRAM at the concurrency of the cores used,
// access latency, sustained PT rate, ring chain, pipeline fill and drain: the
// framework's PT pipeline model, pt_pipeline_cost.h). Nothing is simulated while planning. Double
// buffering reserves room for the second copies of the A and B tiles; tiles for
// which they do not fit stay single-buffered. The result tile's second copy is a
// choice of its own where it fits (the result knob). A forced
// tile (tile_m, tile_n) is the only one considered; throws Halide::CompileError
// if no K chunk of it fits. The cores along N need not divide N's tile count:
// np may be padded by up to one tile per core (zeros in B and the bias), so an
// N of a prime number of sticks (a vocabulary: 49155 is 769 fp16 sticks) still
// spreads over the cores.
MatmulSpyrePlan plan_matmul_spyre(const MatmulShape &shape, const MatmulSpyreOptions &options = {});

// Number of fp32 tile-sized epilogue stages an activation needs in scratchpad.
int epilogue_stages(Activation a);

void schedule_matmul_host(MatmulFuncs f, const MatmulShape &shape, const Halide::Target &target);
// A_in, B_in, bias_in: the input wrappers (A.in(), ...); bias_in is staged only
// for fp16 (for fp32 bias_f is itself a copy of the input, i.e. a DMA).
// R_in: the residual's input wrapper (R.in()) when shape.residual, staged per
// tile of C like the result tile and added on the SFU before the store.
// S_in: the row scale's input wrapper (scale.in()) when shape.row_scale, staged
// once per core (its rows of scale, a few sticks).
void schedule_matmul_spyre(MatmulFuncs f, Halide::Func A_in, Halide::Func B_in, Halide::Func bias_in,
                           const MatmulShape &shape, const MatmulSpyrePlan &plan, Halide::Func R_in = Halide::Func(),
                           Halide::Func S_in = Halide::Func());

}  // namespace spyre
