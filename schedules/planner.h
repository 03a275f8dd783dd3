// The planning framework of the Spyre hand schedules (docs/planning.md).
//
// A family's planner (plan_<family>_spyre) supplies its candidate space (the
// tiles, chunks and core splits its schedule can express) and, per candidate,
// a TiledPlan: what the candidate keeps in the scratchpad, which loop its
// stages sit in, its per-core loops, the bytes it moves and the work of one
// tile in the timing model's own units. Everything else is shared and lives
// here, once:
//  - legality: one scratchpad budget (scratchpad_budget), one double-buffer
//    rule, the hardware loop depth and trip limits (judge);
//  - the core split: one search over even splits of whole tiles
//    (even_core_split); tiles are whole sticks along the stick dimension, so
//    every core's part starts on a stick boundary;
//  - the cost, one of two models of how a core's units overlap, both built on
//    the timing model's functions the simulator itself calls
//    (MachineDescription::dram_cycles, sfu_instruction_cycles,
//    pt_matmul_cycles): the streaming estimate (estimate_cycles) of tiles
//    loaded, computed and stored, and the PT pipeline model
//    (pt_pipeline_cost.h) of a matmul streaming both operands in K steps, with
//    ring chains paced by their heads; tests/compiler/planner_ranking_test.cpp
//    and matmul_planner_ranking_test.cpp check that they rank candidates as
//    the simulator does;
//  - the search (PlanSearch): the cheapest legal candidate, the family's
//    order of preference breaking ties.
// Header and source depend on the machine description and the compiler's
// ring forwarding (target/program_tree/ring_sharing.h) only (no Halide).
#pragma once

#include <cstdint>
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pt_pipeline_cost.h"
#include "schedule_context.h"
#include "spyre/machine.h"

namespace spyre {
namespace planning {

// The scratchpad bytes per core a plan may fill: the machine's scratchpad less
// the reserve the backend needs beyond what the planner counts. The one rule
// every planner uses; what it reserves depends on what the family counts:
//  - SfuRowWork (a quarter): a row-wise family (elementwise, softmax, the
//    norms, rope, reduce, transpose, attention) counts its staged tiles, but
//    not the SFU row temporaries that row blocking adds, the stick padding of
//    small buffers or the per-row scalars;
//  - TilesCounted (a tenth): a PT family (matmul, bmm, conv2d) counts every
//    buffer it stages, its accumulators and its SFU temporaries (row blocking
//    widens those only where the scratchpad has room); what is left is stick
//    padding. Its accumulator tiles are large, so a quarter's reserve would
//    cost it tiles: bmm batch=8 m=1024 n=4096 k=4096 without ring sharing
//    then reads 1678 MB instead of 1141 MB (11.4 ms against 7.8 ms).
// `exact_bytes` of the counted bytes are buffers with no stick padding to
// leave room for (a matmul's resident A panel: tm rows of a K of whole
// sticks), so the reserve is taken of the rest of the scratchpad only.
// The dry run (target/checks/dry_run.h) checks every program against the machine's
// scratchpad, so a reserve that was too small is a compile error, never a
// failure at run time.
enum class ScratchpadReserve { SfuRowWork, TilesCounted };
int64_t scratchpad_budget(const MachineDescription &m = scheduling_machine(),
                          ScratchpadReserve reserve = ScratchpadReserve::SfuRowWork, int64_t exact_bytes = 0);

// The PT's rate factor for matmul inputs of Halide type `t` (machine.h's
// pt_rate_factor: fp32 and int8 at their factors, fp16 at 1).
double pt_type_factor(const Halide::Type &t, const MachineDescription &m = scheduling_machine());

// The trip count of the loop the backend double-buffers around a stage: the
// innermost per-core loop of more than one iteration (loops of one iteration
// vanish), given innermost first; 1 if every loop runs once.
int staging_trip(std::initializer_list<int> trips_innermost_first);

// One candidate plan as the shared legality and cost see it.
struct TiledPlan {
    // Scratchpad, one copy: the buffers double buffering keeps in two copies
    // (the staged tiles and results that move with the staging loop) and the rest.
    int64_t buffered_bytes = 0;
    int64_t fixed_bytes = 0;
    ScratchpadReserve reserve = ScratchpadReserve::SfuRowWork;  // what the family leaves uncounted
    int64_t exact_bytes = 0;        // of fixed_bytes: buffers with no stick padding (scratchpad_budget)
    int staging_trip = 1;           // the double-buffered loop's trips (staging_trip())
    // The times the staging loop starts on a core (its enclosing per-core loops'
    // trips); 0: tiles_per_core / staging_trip, one tile per staging iteration.
    double staging_starts = 0;
    std::vector<int> per_core_trips;  // per-core loops around the tile (those of one trip vanish)
    int inner_loops = 0;            // hardware loop levels the tile's own code needs
    // Cost: the kernel's DRAM bytes (as moved, padding included), the cores
    // moving them at once, the trips of the per-core tile loop, and per tile
    // the DMA transfers whose latency the tile waits for and its PT/SFU cycles.
    double read_bytes = 0, write_bytes = 0;
    int cores = 1;
    double tiles_per_core = 1;
    double waited_transfers_per_tile = 2;  // a load and a store
    double compute_cycles_per_tile = 0;
    // Bytes each core forwards over the ring (operands shared by a chain of
    // cores, share_over_ring): the forwards occupy the core's DMA unit.
    double ring_bytes_per_core = 0;
    // Double-buffered, a staged tile that overlaps the tile before it (a
    // stencil's rows) copies the overlap from the other copy on the SFU
    // (target/program_tree/tile_overlap_reuse.h): the kernel then does not read
    // overlap_read_bytes of read_bytes, and a tile's compute gains
    // overlap_copy_cycles_per_tile. Single-buffered, every tile loads whole.
    double overlap_read_bytes = 0;
    double overlap_copy_cycles_per_tile = 0;
    // Once per kernel, outside the tile loop: an exposed load before the first
    // tile, a cross-core combine after the last.
    double fixed_cycles = 0;
    // Cycles of a chain's fill (chain_fill_cycles()): its last core starts its first tile
    // that much after the first. It delays that core's compute; its DMA
    // stream only shifts while the other cores keep the DRAM busy, so a
    // DRAM-bound kernel hides it.
    double chain_fill = 0;
    // Double-buffered, the pipeline's end is exposed: the kernel's traffic is
    // its loads (a reduction: nothing streams out while the last tile
    // computes), so the unit that is not the bottleneck adds one tile of its
    // work: the first load before any compute, or the last tile's compute
    // after the last load.
    bool pipeline_end_exposed = false;
    // A kernel that streams both operands of a PT matmul through the scratchpad
    // step by step (gen_matmul, gen_bmm with B staged) describes that pipeline
    // here, and judge() costs it with the PT pipeline model (pt_pipeline_cost.h)
    // instead of the streaming estimate above; its double buffering is the
    // verdict's. The fields above still decide legality.
    std::optional<PtPipeline> pt_pipeline;
};

// What the shared rules make of a candidate.
struct Verdict {
    bool legal = false;
    bool double_buffer = false;
    int64_t footprint_bytes = 0;  // scratchpad bytes per core as planned
    int cores = 1;                // the plan's cores (TiledPlan::cores)
    double cycles = std::numeric_limits<double>::infinity();
    // How much faster than the others the estimate must be for this candidate to win:
    // PlanSearch ranks it at cycles x (1 + rank_margin). A family sets it on a kind of plan
    // whose estimate, or its rivals', is checked only where it wins clearly (matmul's A panel).
    double rank_margin = 0.0;
    std::string reason;  // why not legal
    PtPipelineCost pt_cost;  // a PT pipeline's estimate in full (TiledPlan::pt_pipeline; legal plans only)
};

// The one double-buffer rule: two copies of the buffered bytes when asked, the
// staging loop has at least two trips (the backend pipelines even and odd trip
// counts) and both copies fit the budget; else one copy. Legal if that fits the budget and the
// loops fit the hardware (depth: the per-core loops of more than one trip plus
// inner_loops <= max_loop_depth; every trip <= max_loop_trip_count). The cost
// is the PT pipeline model's when the plan has a pt_pipeline, else estimate_cycles's.
Verdict judge(const TiledPlan &plan, bool double_buffer_asked, const MachineDescription &m = scheduling_machine());

// The cost of a candidate, in cycles. Per core, the DMA unit streams the
// kernel's bytes at the DRAM rate of `cores` concurrent cores
// (MachineDescription::dram_cycles) and, in the same queue, its ring forwards
// (ring_bytes_per_core at the ring's rate), and each tile waits for the
// latency of its waited transfers; the PT/SFU work is compute_cycles_per_tile
// per tile.
// Single-buffered the two add up (a synchronous tile loop); double-buffered
// they overlap, and one tile's waited latencies stay exposed (and, with
// pipeline_end_exposed, the shorter of one tile's DRAM time and its compute);
// where the staging loop sits inside an outer per-core loop (staging_starts
// > 1), the pipeline refills at each outer iteration, exposing that shorter
// step and the waited latencies again.
double estimate_cycles(const TiledPlan &plan, bool double_buffered, const MachineDescription &m = scheduling_machine());

// The one core-split search: one core count per dimension, each dividing that
// dimension's tile count, their product at most max_cores and accepted by
// `accept` (if given); the split with the most cores, ties to the one giving
// the earlier dimensions more (dimensions in priority order). Empty if no
// split is accepted.
std::vector<int> even_core_split(const std::vector<int> &tiles, int max_cores,
                                 const std::function<bool(const std::vector<int> &)> &accept = {});

// Every even split of at least half the cores even_core_split finds (the
// candidates a family offers when the split trades against something else,
// such as the tiles per core), in even_core_split's order of preference.
std::vector<std::vector<int>> even_core_splits(const std::vector<int> &tiles, int max_cores);

// The cycles until the last of `chain_cores` cores sharing a tile of
// `tile_bytes` over the ring holds all of it, from when the first holds it:
// the tile travels whole or in the pieces the compiler forwards it in
// (compiler::ring_forward_pieces), each core forwarding a piece as soon as it
// has arrived, so the first piece crosses chain_cores - 1 links (each its ring
// time and the hop latency) and the rest follow it on the last link.
double chain_fill_cycles(double tile_bytes, int chain_cores, bool in_pieces, const MachineDescription &m = scheduling_machine());

// The longest SFU vector, in lanes, of whole sticks of `lanes` that divides
// `padded` and has at most sfu_max_vector_lanes() lanes (schedule_arithmetic.h).
int row_vector_lanes(int padded, int lanes);

// SFU cycles of one instruction per row vector over a row of `padded` lanes of
// `element_bytes` bytes (the timing model's cost of that many instructions).
double sfu_row_cycles(int padded, int vector_lanes, int element_bytes, MachineDescription::SfuCost cost,
                      const MachineDescription &m = scheduling_machine());

// Chooses among the legal candidates offered: the cheapest, each ranked at its
// estimate x (1 + its Verdict::rank_margin), except that candidates within
// kTieTolerance of the cheapest are ties (the estimate is no finer than that). Ties go to a double-buffered candidate (the estimate
// underrates what a synchronous tile loop loses: while a core computes, fewer
// cores share the DRAM, which then serves less), then to the one with more
// cores (the estimate's DRAM concurrency is
// coarse for few cores: gen_elementwise mul 4096 x 16384 fp16 on 2 cores
// simulates 13% faster than on 1, estimated within 1%), then to the first
// offered: a family offers its candidates in its order of preference (fewer,
// larger tiles first: fewer instructions and DMA descriptors).
// A family whose estimate is coarser declares its own, next to its knob table
// (kMatmulTieTolerance, kConv2dTieTolerance).
constexpr double kTieTolerance = 1e-4;

// SPYRE_PLAN_LOG=1 (any value but 0): every planner lists on stderr each candidate it
// is offered, as its family describes it, with the verdict and the estimate, and then
// its choice ("plan <family>: ..."), for every kernel a process plans.
bool plan_log_enabled();
void log_plan_line(const std::string &family, const std::string &what, const Verdict &v, bool chosen);

template <typename Plan>
class PlanSearch {
public:
    // `family` names the planner in the plan log; `tie_tolerance`: how close to the
    // cheapest a candidate ties (a family whose estimate is coarser than the shared one widens it).
    explicit PlanSearch(std::string family, double tie_tolerance = kTieTolerance)
        : family_(std::move(family)), tie_tolerance_(tie_tolerance), log_(plan_log_enabled()) {}
    // `describe()` (called only when the plan log is on) says what the candidate is.
    template <typename Describe>
    void offer(const Plan &plan, const Verdict &verdict, const Describe &describe) {
        const std::string what = log_ ? describe() : std::string();
        if (log_) log_plan_line(family_, what, verdict, /*chosen=*/false);
        if (verdict.legal) offered_.push_back({plan, verdict, what});
    }
    void offer(const Plan &plan, const Verdict &verdict) {
        offer(plan, verdict, [] { return std::string(); });
    }
    bool found() const { return !offered_.empty(); }
    // The chosen candidate (found() must hold).
    const Plan &best() const { return chosen().plan; }
    const Verdict &verdict() const { return chosen().verdict; }

private:
    static double ranked(const Verdict &v) { return v.cycles * (1 + v.rank_margin); }
    size_t best_index() const {
        double cheapest = std::numeric_limits<double>::infinity();
        for (const Offered &o : offered_) cheapest = std::min(cheapest, ranked(o.verdict));
        size_t chosen = offered_.size();
        for (size_t i = 0; i < offered_.size(); i++) {
            const Verdict &v = offered_[i].verdict;
            if (ranked(v) > cheapest * (1 + tie_tolerance_)) continue;
            if (chosen == offered_.size()) {
                chosen = i;
                continue;
            }
            const Verdict &c = offered_[chosen].verdict;
            if (v.double_buffer != c.double_buffer) {
                if (v.double_buffer) chosen = i;
            } else if (v.cores > c.cores) {
                chosen = i;
            }
        }
        return chosen;
    }
    struct Offered {
        Plan plan;
        Verdict verdict;
        std::string what;  // the family's description (plan log only)
    };
    const Offered &chosen() const {
        const Offered &o = offered_[best_index()];
        if (log_ && !choice_logged_) {
            log_plan_line(family_, o.what, o.verdict, /*chosen=*/true);
            choice_logged_ = true;
        }
        return o;
    }
    std::string family_;
    double tie_tolerance_;
    bool log_;
    mutable bool choice_logged_ = false;
    std::vector<Offered> offered_;
};

// The chosen plan with its estimate in microseconds (plans have estimated_us).
template <typename Plan>
Plan with_estimate(const PlanSearch<Plan> &search, const MachineDescription &m = scheduling_machine()) {
    Plan p = search.best();
    p.estimated_us = search.verdict().cycles / m.clock_ghz / 1000.0;
    return p;
}

}  // namespace planning
}  // namespace spyre
