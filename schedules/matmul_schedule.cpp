// Schedules of the matmul with a fused epilogue (see matmul_schedule.h).
#include "matmul_schedule.h"
#include "matmul_cost.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

Type matmul_output_type(const MatmulShape &shape) {
    return shape.dtype == Int(8) ? Int(32) : shape.dtype;
}

int epilogue_stages(Activation a) {
    return a == Activation::Gelu || a == Activation::Silu || a == Activation::Swiglu ? 1 : 0;
}

int matmul_acc_columns(const MatmulShape &shape) {
    return shape.activation == Activation::Swiglu ? 2 * shape.n : shape.n;
}

int shared_weight_padded_n(const MatmulShape &shape) {
    // Whole tile-column steps (plan_matmul_spyre's tn_step: 64 columns or a whole stick) per core,
    // so the one-step tiles on one core always fit whatever the lanes and the core count.
    const int lanes = stick_lanes(shape.dtype);
    // The same rule on swiglu's accumulator columns, so one weight serves a swiglu kernel and
    // a plain product of it (2 n is whole swiglu tile steps, so a plan on one core always fits).
    const int64_t block = (int64_t)std::lcm(std::max(64, lanes), lanes) * scheduling_machine().cores;
    const int64_t n = matmul_acc_columns(shape);
    return (int)std::min<int64_t>((n + block - 1) / block * block, INT32_MAX);
}

MatmulSpyrePlan plan_matmul_spyre(const MatmulShape &shape, const MatmulSpyreOptions &options) {
    const MachineDescription &machine = scheduling_machine();
    const int bytes = shape.dtype.bytes(), out_bytes = matmul_output_type(shape).bytes();
    // The row scale's stage is one more fp32 tile (of the accumulator's width: two of C's with
    // swiglu); its scale rows (a core's rows x 4 bytes) are left to the budget's reserve.
    const bool gated = shape.activation == Activation::Swiglu;
    const int stages = epilogue_stages(shape.activation) + (shape.row_scale ? (gated ? 2 : 1) : 0);
    const int lanes = stick_lanes(shape.dtype);
    const int kp = round_up(shape.k, lanes);
    const int64_t budget = planning::scratchpad_budget(machine, planning::ScratchpadReserve::TilesCounted);
    // Tile columns in steps of 64, or of whole B sticks when a stick holds more (128 int8);
    // with swiglu in whole pairs of blocks (a gate block and its up block), so C's tile is whole blocks.
    const bool swiglu = shape.activation == Activation::Swiglu;
    const int acc_n = matmul_acc_columns(shape);
    const int tn_step = swiglu ? 2 * kSwigluBlock : std::max(64, lanes);
    const int mp8 = round_up(shape.m, machine.pt_pass_rows), np64 = round_up(acc_n, tn_step);
    const int max_cores = usable_cores(options.max_cores);
    // Under a shared weight layout only plans whose padded N fits in it.
    const int weight_np = shape.shared_weight_layout ? shared_weight_padded_n(shape) : 0;

    // Candidate tiles: multiples of 64 columns up to 1024 and of 8 rows up to 1024,
    // or only the forced tile (rows in whole PT passes, columns in whole sticks).
    std::vector<int> tns, tms;
    if (options.tile_n > 0) {
        // tile_n counts C's columns: with swiglu the accumulator's tile is twice as wide.
        tns.push_back(swiglu ? 2 * round_up(options.tile_n, kSwigluBlock) : round_up(options.tile_n, lanes));
    } else {
        for (int tn = tn_step; tn <= std::max(tn_step, std::min(np64, 1024)); tn += tn_step) tns.push_back(tn);
    }
    if (options.tile_m > 0) {
        tms.push_back(round_up(options.tile_m, machine.pt_pass_rows));
    } else {
        for (int tm = machine.pt_pass_rows; tm <= std::min(mp8, 1024); tm += machine.pt_pass_rows) tms.push_back(tm);
    }

    planning::PlanSearch<MatmulSpyrePlan> search("matmul", kMatmulTieTolerance);
    for (int tn : tns) {
        for (int tm : tms) {
            // Under a shared weight layout the activations keep theirs too: M padded to whole
            // PT passes only, so the kernels before and after read and write A, C and R as
            // they are (no relayout between an LLM's kernels).
            if (shape.shared_weight_layout && options.tile_m == 0 && round_up(shape.m, tm) != mp8) continue;
            // The largest K chunk (whole sticks, dividing the padded K) that fits, with
            // the second copies when double buffering (else without them). The backend
            // double buffers only a K loop of even trip count, so when that chunk leaves
            // an odd count the largest double-buffered one of an even count is a
            // candidate too.
            int tk = 0;
            bool db = false;
            for (int copies = options.double_buffer ? 2 : 1; copies >= 1 && tk == 0; copies--) {
                for (int c = kp; c >= lanes; c -= lanes) {
                    const int64_t extra = copies == 2 ? second_copies(tm, tn, c, bytes) : 0;
                    if (kp % c == 0 && matmul_footprint(tm, tn, c, bytes, out_bytes, stages, shape.residual, swiglu) + extra <= budget) {
                        tk = c;
                        db = copies == 2;
                        break;
                    }
                }
            }
            if (tk == 0) continue;
            // Smaller double-buffered chunks of an even count are candidates too: a
            // shorter chunk shortens the ring chain's fill and the pipeline's ends
            // at the cost of more PT pass fills.
            std::vector<int> chunk_choices = {tk};
            if (db) {
                for (int c = tk - lanes; c >= lanes && kp / c <= 64; c -= lanes) {
                    if (kp % c == 0 && (kp / c) % 2 == 0) chunk_choices.push_back(c);
                }
            }
            for (int tk : chunk_choices) {
            const int mp = round_up(shape.m, tm), m_tiles = mp / tm;
            const int min_n_tiles = (acc_n + tn - 1) / tn;
            // N is padded to whole tiles, and further to a multiple of cn tiles (at most one
            // more tile per core): a tile count with no good divisor (N = 49155, a vocabulary,
            // is 769 sticks, a prime) would otherwise leave most cores idle.
            for (int cn = 1; cn <= std::min(max_cores, min_n_tiles); cn++) {
                const int n_tiles = round_up(min_n_tiles, cn), np = n_tiles * tn;
                if (weight_np && np > weight_np) continue;
                for (int cm : divisors(m_tiles)) {
                  for (int staging = 0; staging < 96; staging++) {
                    const int sharing = staging % 6;
                    // A resident (staging >= 6): K chunked with several N tiles a core, each
                    // row of tiles' whole-K A panel staged once and read by all its N tiles;
                    // offered where the cost model is checked (docs/planning.md): one row of
                    // tiles a core, B not shared or shared gathered.
                    const bool resident = staging % 12 >= 6;
                    // The accumulator in two copies (staging >= 12): whole-K tiles, two or more a core,
                    // double buffered, B not gathered (a gathered chain's rounds keep the cores in
                    // lockstep, which loads moved ahead of a store break: m=2048 n=2048 k=512 on 32
                    // cores, 64 x 256 tiles on 8-core chains, 118.8 -> 121.2 us; m=1024 n=4096 k=2048,
                    // 128 x 64 tiles, 307.3 -> 324.0 us).
                    const bool acc_ahead = staging % 24 >= 12;
                    // B resident (staging % 48 >= 24): K chunked with B shared along one chain of every
                    // core, each core's whole-K B slice for all its tiles loaded once, in shares by
                    // the chain's cores and gathered round it; the K steps then stage A alone, every
                    // core loading at once instead of the chain's head loading B for all (m=4096
                    // n=128 k=2048 on 32 cores: 134.4 -> 128.1 us).
                    const bool b_res = staging % 48 >= 24;
                    // Which operands the cores of a chain pass along the ring: A along N, B along M;
                    // 4 and 5: B gathered, each core of its chain loading a share of every tile.
                    const bool share = sharing & 1, share_b = sharing & 6, gather_b = sharing & 4;
                    // B chains with whole-K tiles too (one row of tiles a core, below): each N
                    // tile's whole-K B travels its chain as a K chunk's does (m=512 n=512 k=64 on
                    // 32 cores: B read once, not once per row range; docs/planning.md).
                    if (cn * cm > max_cores || (share && (!options.share_a || cn < 2)) ||
                        (share_b && (!options.share_b || cm < 2)))
                        continue;
                    // Gathered B chains where the lowering can cut the tiles and the cost model holds.
                    if (gather_b && (options.b_forwarding == "whole" || !planning::gathered_chain_offered(cm, cn, tk, shape.k, machine)))
                        continue;
                    if (share_b && !gather_b && options.b_forwarding == "gathered") continue;
                    const int64_t mt = m_tiles / cm, nt = n_tiles / cn;  // tiles per core
                    // Whole-K tiles along a B chain: with one row of tiles a core. At each next row
                    // the chain refills while the next rows' A loads take the card, which the cost
                    // model does not follow (m=16384 n=k=2048, 64 x 64 tiles, one 32-core chain:
                    // 65 us a row change, estimated 6; simulated 2607 us against 2243 chunked).
                    // With a residual, gathered only: a chain head's B loads share the card with
                    // every other core's R tile, loaded with them, which the model does not follow
                    // either (m=512 n=8192 k=1024 + residual, 64 x 64 tiles forwarded whole on
                    // 8-core chains: the head's 128 KB in 7-8 us, estimated 271.9 us, simulated
                    // 318.4 against 285.7 chunked; gathered, with no head, 281.7).
                    if (share_b && tk == kp && (mt > 1 || (shape.residual && !gather_b))) continue;
                    // A row scale is staged per core, its rows at once: whole float32 sticks of them
                    // unless one core has all the rows (a DMA starts on a stick).
                    if (shape.row_scale && cm > 1 && (mt * tm) % stick_lanes(Float(32)) != 0) continue;
                    // A shared panel is gathered: a share of at least a row per core of its chain.
                    const bool panel_possible = tk < kp && nt >= 2 && mt == 1 && !(share_b && !gather_b) && (!share || tm >= cn);
                    if (resident && (!panel_possible || options.a_staging == "chunks")) continue;
                    // A chain round more cores than kMaxGatheredChain only with A loaded per step,
                    // the loads that ride its rounds (gather_riders.h; pt_pipeline_cost.h): a
                    // resident panel leaves the steps nothing to ride them.
                    if (gather_b && cm > planning::kMaxGatheredChain && resident) continue;
                    if (!resident && options.a_staging == "resident") continue;
                    // A staged once a core (a resident panel, or whole-K tiles in one row of tiles a
                    // core): the backend gives it no second copy.
                    const bool a_once = resident || (tk == kp && mt == 1);
                    const int64_t acc_copy = (int64_t)tm * tn * 4;
                    const bool ahead_possible = tk == kp && db && !gather_b && mt * nt >= 2 &&
                                                matmul_footprint(tm, tn, tk, bytes, out_bytes, stages, shape.residual, swiglu) +
                                                        second_copies(tm, tn, tk, bytes, a_once) + acc_copy <= budget;
                    if (acc_ahead && (!ahead_possible || options.accumulator == "single")) continue;
                    if (!acc_ahead && options.accumulator == "double") continue;
                    // Offered with one chain over all the cores (cn = 1), where the model is checked:
                    // with several chains the slice is read over links the cn chains share, and the
                    // estimate ran 1-12% short (m=n=k=2048, 64 x 256 tiles on 4-core chains: 370.7
                    // us estimated, 389.6 simulated; m=4096 n=k=1024, 16 x 512 tiles: 202.0 against
                    // 230.2), misordering *MatmulPlannerRanking*'s candidates.
                    const bool b_res_possible = tk < kp && share_b && !gather_b && !resident && cn == 1 && cm == machine.cores && kp >= cm;
                    if (b_res && (!b_res_possible || options.b_staging == "chunks")) continue;
                    if (!b_res && options.b_staging == "resident") continue;
                    // The resident slice replaces B's chunk and its second copy.
                    const int64_t b_chunk = (int64_t)tk * tn * bytes, b_panel_bytes = b_res ? (int64_t)kp * tn * nt * bytes : 0;
                    const int a_kp = resident ? kp : 0;
                    const int64_t second = b_res ? (int64_t)tm * tk * bytes : second_copies(tm, tn, tk, bytes, a_once);
                    const int64_t single = matmul_footprint(tm, tn, tk, bytes, out_bytes, stages, shape.residual, swiglu, a_kp) +
                                           (b_res ? b_panel_bytes - b_chunk : 0);
                    const int64_t footprint = single + (db ? second : 0) + (acc_ahead ? acc_copy : 0);
                    // The result tile too when it fits and a core has an even number >= 2 of N tiles.
                    const int64_t result_copy = (int64_t)tm * (swiglu ? tn / 2 : tn) * out_bytes;
                    const int64_t panel_bytes = resident ? (int64_t)tm * kp * bytes : b_panel_bytes;  // whole sticks of K
                    const bool result_db_fits = db && nt % 2 == 0 &&
                                                footprint + result_copy <= planning::scratchpad_budget(machine, planning::ScratchpadReserve::TilesCounted, panel_bytes);
                    // The result in one copy where two fit too (staging >= 48): with K chunks its store is then
                    // spread over the next tile's chunks (store_spreading.h) instead of left whole in the core's
                    // DMA queue ahead of them, which the second copy does. Offered both ways: m=3072 n=k=2048 on
                    // 32 cores, 96 x 1024 tiles with 128-deep chunks, estimated 539.4 us with two copies and 467.4
                    // with one, simulated 519.3 and 459.4. With result=auto one copy where two fit wins by
                    // kMatmulResultSingleMargin (there auto keeps the 256-deep chunks, estimated 474.1, simulated
                    // 453.9; docs/planning.md).
                    const bool result_single = staging >= 48;
                    if (result_single && !result_db_fits) continue;
                    const bool result_db = result_db_fits && !result_single;
                    if ((options.result == "single" && result_db) || (options.result == "double" && !result_db)) continue;
                    MatmulSpyrePlan p;
                    p.tm = tm;
                    p.tn = tn;
                    p.tk = tk;
                    p.mp = mp;
                    p.np = np;
                    p.c_tn = swiglu ? tn / 2 : tn;
                    p.c_np = swiglu ? np / 2 : np;
                    p.bp = weight_np ? weight_np : np;
                    p.kp = kp;
                    p.cm = cm;
                    p.cn = cn;
                    p.in_lanes = lanes;
                    p.double_buffer = db;
                    p.double_buffer_result = result_db;
                    p.a_shared = share;
                    p.b_shared = share_b;
                    p.b_gathered = gather_b;
                    p.a_resident = resident;
                    p.acc_ahead = acc_ahead;
                    p.b_resident = b_res;
                    // Legality and the cost are the framework's (judge: the scratchpad budget, the
                    // hardware loops: K chunks, N tiles and M tiles per core; the PT pipeline model,
                    // checked against the simulator by *MatmulPlannerRanking*), and so is the
                    // verdict's double buffering, but for the backend pipelining a K loop of
                    // even trips only.
                    planning::TiledPlan tp;
                    tp.reserve = planning::ScratchpadReserve::TilesCounted;
                    tp.exact_bytes = panel_bytes;
                    tp.buffered_bytes = second;  // A (unless staged once) and B (unless resident), one copy
                    tp.fixed_bytes = single - tp.buffered_bytes + (result_db ? result_copy : 0) + (acc_ahead ? acc_copy : 0);
                    const int n_trips = (int)std::min<int64_t>(nt, INT32_MAX), m_trips = (int)std::min<int64_t>(mt, INT32_MAX);
                    tp.staging_trip = tk < kp ? kp / tk : planning::staging_trip({n_trips, m_trips});
                    tp.per_core_trips = {kp / tk, n_trips, m_trips};
                    tp.cores = cm * cn;
                    tp.pt_pipeline = matmul_pipeline(
                        shape, MatmulCandidate{tm, tn, tk, kp, cm, cn, mt, nt, db, share, share_b, result_db, gather_b, resident, acc_ahead, b_res}, machine);
                    planning::Verdict v = planning::judge(tp, db, machine);
                    v.double_buffer = v.double_buffer && (tk == kp || (kp / tk) % 2 == 0);
                    if (resident) v.rank_margin = kMatmulResidentPanelMargin;
                    if (share_b && tk == kp) v.rank_margin = kMatmulWholeKChainMargin;
                    if (result_single && options.result == "auto") v.rank_margin += kMatmulResultSingleMargin;
                    const planning::PtPipelineCost &cost = v.pt_cost;
                    const double read = cost.read_bytes, write = cost.write_bytes;
                    p.dram_bytes = (int64_t)(read + write);
                    p.footprint_bytes = v.footprint_bytes;
                    search.offer(p, v, [&] {
                        char what[200];
                        std::snprintf(what, sizeof what, "tm=%d tn=%d tk=%d cm=%d cn=%d share_a=%d share_b=%d%s%s%s%s%s", tm, tn,
                                      tk, cm, cn, (int)share, (int)share_b, gather_b ? " gathered" : "", resident ? " a_resident" : "",
                                      acc_ahead ? " acc_ahead" : "", b_res ? " b_resident" : "", result_single ? " result_single" : "");
                        std::string s = what;
                        if (v.legal) {  // the model's figures (a refused candidate is not costed)
                            std::snprintf(what, sizeof what, " read=%.0f write=%.0f per_core_us=%.2f dram_us=%.2f", read,
                                          write, cost.per_core_cycles / machine.clock_ghz / 1000.0,
                                          cost.dram_cycles / machine.clock_ghz / 1000.0);
                            s += what;
                        }
                        return s;
                    });
                  }
                }
            }
            }
        }
    }
    _halide_user_assert(search.found() || options.a_staging != "resident")
        << "matmul Spyre schedule: a_staging=resident, but no plan keeps A's whole-K panel resident: that needs K in "
           "chunks (a panel of tile_m x K beside the B chunks, the accumulator and the epilogue within the scratchpad's "
        << budget << " bytes), at least two N tiles and one row of tiles a core, and B not shared or shared "
           "gathered; use a_staging=auto, or smaller tiles";
    _halide_user_assert(search.found() || options.b_staging != "resident")
        << "matmul Spyre schedule: b_staging=resident, but no plan keeps a whole-K B slice resident: that needs K in "
           "chunks (at least a K row per core), B shared along one chain of all the machine's "
        << machine.cores << " cores (one range of columns, every core along M), and the slice (K x the columns) beside "
           "A's chunks, the accumulator and the epilogue within the scratchpad's "
        << budget << " bytes; use b_staging=auto, or max_cores=0 and fewer columns";
    _halide_user_assert(search.found() || options.accumulator != "double")
        << "matmul Spyre schedule: accumulator=double, but no plan has room for two accumulators: that needs K in one "
           "chunk (whole-K tiles of tile_m x K and K x tile_n beside two fp32 accumulators, the epilogue and the second "
           "copies of double buffering within the scratchpad's "
        << budget << " bytes), two or more tiles a core, double buffering, and B not gathered; use accumulator=auto, "
           "fewer cores or smaller tiles";
    _halide_user_assert(search.found() || options.result != "double")
        << "matmul Spyre schedule: result=double, but no plan has room for two result tiles: that needs an even number "
           "of N tiles a core (two or more), double buffering, and the second result tile beside the staged tiles, the "
           "accumulator and the epilogue within the scratchpad's "
        << budget << " bytes; use result=auto, or smaller tiles";
    if (weight_np && options.tile_n > 0) {
        _halide_user_assert(round_up(acc_n, tns.front()) <= weight_np)
            << "matmul Spyre schedule: tile_n=" << options.tile_n << " (" << tns.front()
            << (swiglu ? " accumulator columns: with swiglu a tile holds gate and up blocks" : " columns")
            << ") pads B's N (" << acc_n << ") to " << round_up(acc_n, tns.front())
            << " columns, past the shared weight layout's " << weight_np
            << " (shared_weight_layout=true): use a tile_n whose tile divides " << weight_np
            << (swiglu ? " (twice tile_n, rounded up to blocks of " + std::to_string(kSwigluBlock) + ")" : std::string())
            << ", or tile_n=0";
    }
    if (options.tile_m > 0 || options.tile_n > 0) {
        _halide_user_assert(search.found())
            << "matmul Spyre schedule: no K chunk of a " << tms.front() << "x" << tns.front()
            << " tile (tile_m=" << options.tile_m << ", tile_n=" << options.tile_n << "; rows x columns) fits in the scratchpad ("
            << budget << " bytes)";
    }
    _halide_user_assert(search.found() || !weight_np)
        << "matmul Spyre schedule: no plan pads B's N (" << acc_n << ") within the shared weight layout's " << weight_np
        << " columns (shared_weight_layout=true) and fits the scratchpad (" << budget << " bytes)";
    _halide_user_assert(search.found())
        << "matmul Spyre schedule: even a one-stick K chunk of an 8x64 tile does not fit in the scratchpad (" << budget
        << " bytes)";
    return planning::with_estimate(search, machine);
}

void schedule_matmul_host(MatmulFuncs f, const MatmulShape &shape, const Target &target) {
    Var n = f.n, m = f.m;
    Var no("no"), mo("mo"), ni("ni"), mi("mi"), nn("nn"), nv("nv");
    const int vec = target.natural_vector_size(Float(32));
    // Tiles no larger than the tensor (ShiftInwards needs extent >= factor).
    const int vn = std::min(vec, shape.n);
    const int tn = shape.n >= 2 * vn ? 2 * vn : vn;
    const int tm = std::min(4, shape.m);
    f.C.tile(n, m, no, mo, ni, mi, tn, tm).parallel(mo).vectorize(ni, vn);
    f.bias_f.compute_root();
    f.acc.compute_at(f.C, no).split(n, nn, nv, vn).vectorize(nv).unroll(nn).unroll(m);
    f.acc.update().reorder(n, m, f.k).split(n, nn, nv, vn).vectorize(nv).unroll(nn).unroll(m);
    for (Func g : f.epilogue) {
        g.compute_at(f.C, no).vectorize(n, vn);
        for (int u = 0; u < g.num_update_definitions(); u++) g.update(u).vectorize(n, vn);
    }
}

void schedule_matmul_spyre(MatmulFuncs f, Func A_in, Func B_in, Func bias_in, const MatmulShape &shape,
                           const MatmulSpyrePlan &p, Func R_in, Func S_in) {
    _halide_user_assert(shape.residual == R_in.defined())
        << "matmul Spyre schedule: " << (shape.residual ? "the shape has a residual but no R_in was given"
                                                        : "an R_in was given but the shape has no residual");
    _halide_user_assert(shape.row_scale == S_in.defined())
        << "matmul Spyre schedule: " << (shape.row_scale ? "the shape has a row scale but no S_in was given"
                                                         : "an S_in was given but the shape has no row scale");
    Var n = f.n, m = f.m;
    Var mo("mo"), no("no"), mi("mi"), ni("ni");
    _halide_user_assert(p.mp % (p.cm * p.tm) == 0 && p.np % (p.cn * p.tn) == 0 && p.kp % p.tk == 0 &&
                        p.tn % p.in_lanes == 0 && p.c_np % (p.cn * p.c_tn) == 0)
        << "matmul Spyre schedule: tiles do not divide the padded extents (Mp " << p.mp << ", Np " << p.np << ", Kp "
        << p.kp << ")";
    const bool swiglu = shape.activation == Activation::Swiglu;

    // Core split (N, M) fused into one constant-extent parallel loop; per core
    // for mo, no { one tm x tn tile } as plain serial loops. C's tiles are c_tn
    // wide (with swiglu half the accumulator's tn: acc's bounds follow).
    const CoreSplit cores = split_across_cores(f.C, {{n, p.c_np, p.c_tn, p.cn}, {m, p.mp, p.tm, p.cm}});
    const Var mr = cores.serial_of(m), nr = cores.serial_of(n);
    f.C.tile(nr, mr, no, mo, ni, mi, p.c_tn, p.tm, TailStrategy::RoundUp).reorder(ni, mi, no, mo);
    stick_vectorize(f.C, ni);

    // The bias tile, widened to fp32 (for fp32 and int32 bias_f is a plain copy: a DMA).
    // With whole K, double-buffered: the next tile's bias row then loads ahead of this tile's
    // store instead of behind it in the core's DMA queue, so the next tile's matmul need not
    // wait for the store (m=2048 n=2048 k=64 on 32 cores: 73.3 -> 71.4 us; six more small-K
    // shapes 2-18% faster). With K chunks it is left single: there the second copy made 46
    // of the incumbent benchmark's K-chunked shapes 1-27% slower.
    const bool bias_double = p.double_buffer && !p.k_chunked();
    if (matmul_output_type(shape) != Float(32) && matmul_output_type(shape) != Int(32)) stage_in_scratchpad(bias_in, f.C, no, bias_double);
    stage_in_scratchpad(f.bias_f, f.C, no);

    // fp32 accumulator tile, initialised with the bias (with a row scale: zero), reduced on the PT.
    accumulate_in_scratchpad(f.acc, f.C, no);
    const PtMatmul pt = matmul_on_pt(f.acc, f.k, n, m, p.k_chunked() ? p.tk : 0);
    // Two accumulators: the next tile's bias row, its widening and its matmul are computed
    // while this tile's epilogue and store run (the widened bias row in one copy: only the
    // accumulator's initialization reads it). m=n=2048 k=512 on 4 cores: 551.4 -> 542.3 us.
    if (p.acc_ahead) {
        compute_one_iteration_ahead(f.acc);
        compute_one_iteration_ahead(f.bias_f, /*second_copy=*/false);
    }
    // Double buffered: the next chunk's (tile's) DMA overlaps this one's matmul.
    // (A loop of odd trip count is left single-buffered by the backend.)
    auto stage = [&](Func in, Func consumer, const VarOrRVar &at) { stage_in_scratchpad(in, consumer, at, p.double_buffer); };
    if (pt.k_chunked && p.b_resident) {
        // The core's whole-K B slice once (single), A per K chunk.
        stage_in_scratchpad(B_in, f.C, cores.core);
        stage(A_in, f.acc, pt.k_outer);
    } else if (pt.k_chunked && p.a_resident) {
        // A's whole-K panel once per row of tiles (single: it is loaded once), B per K chunk.
        stage_in_scratchpad(A_in, f.C, mo);
        stage(B_in, f.acc, pt.k_outer);
    } else if (pt.k_chunked) {
        stage(A_in, f.acc, pt.k_outer);
        stage(B_in, f.acc, pt.k_outer);
    } else {
        stage(A_in, f.C, mo);  // reused by every N tile of the row of tiles
        stage(B_in, f.C, no);
    }
    // The cores of one row range load the same A tiles: once per chain, then along the ring.
    // A resident panel travels gathered (each core loads 1/cn of its rows): the panel is the
    // kernel's fill, and its cores' loads at once fill it sooner than a head's load and cn - 1
    // whole forwards (gate/up + SwiGLU of the Granite prefill: 1727.9 -> 1709.6 us).
    if (p.a_shared) share_over_ring(A_in, p.a_resident ? RingForwarding::Gathered : RingForwarding::WholeTiles);
    // A resident B slice travels gathered too: each core of the chain loads 1/cm of it.
    if (p.b_shared) share_over_ring(B_in, (p.b_gathered || p.b_resident) ? RingForwarding::Gathered : RingForwarding::WholeTiles);
    // The residual tile, staged per tile of C (DMA) and added by the SFU in the epilogue.
    if (shape.residual) stage_in_scratchpad(R_in, f.C, no);
    // The row scale: the core's rows, once (a few sticks), read by the epilogue's first stage.
    if (shape.row_scale) stage_in_scratchpad(S_in, f.C, cores.core);

    // Epilogue on the SFU at the tile: one instruction per stage and tile row
    // (vectors of the whole tile width), then the cast; C stores the tile (DMA).
    // With swiglu one instruction per block of kSwigluBlock columns (the gate's and the up
    // projection's blocks alternate in the accumulator): the block loop inside the tile.
    // (The activation's stage computed per block instead, a block's rows rather than the
    // tile's, frees scratchpad but simulated 1.4% slower on Granite-8B's prefill shape.)
    auto vectorize_epilogue = [&](Stage s) {
        if (swiglu) {
            Var nb("nb"), nv("nv");
            s.split(n, nb, nv, kSwigluBlock, TailStrategy::RoundUp).vectorize(nv);
        } else {
            s.vectorize(n, p.c_tn, TailStrategy::RoundUp);
        }
    };
    for (Func g : f.epilogue) {
        g.compute_at(f.C, no).store_in(MemoryType::VTCM);
        vectorize_epilogue(g);
        for (int u = 0; u < g.num_update_definitions(); u++) vectorize_epilogue(g.update(u));
    }
    f.result.compute_at(f.C, no).store_in(MemoryType::VTCM);
    vectorize_epilogue(f.result);
    if (p.double_buffer_result) double_buffer_result(f.result);  // the store overlaps the next tile
}

}  // namespace spyre
