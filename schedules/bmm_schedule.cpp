// Schedules of the batched matmul (see bmm_schedule.h).
#include "bmm_schedule.h"
#include "matmul_cost.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <vector>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

// The candidate space of the bmm planner: output tiles of tm x tn (64-multiples up
// to 1024 rows and 512 columns, a smaller M its own rounded size), K whole or in the
// largest stick-multiple chunks that fit (with and without the second copies of
// double buffering), each core's B slice resident or not, A shared over the ring or
// not, B shared over the ring or not, and the even core splits over (batch, N tiles,
// M tiles): batch first (every core its own operands), N first (the cores that share A
// tiles most), then every other even split. Legality, double buffering, the cost and the choice are
// the framework's (planner.h).
struct BmmCandidate {
    BmmSpyrePlan plan;
    planning::TiledPlan tiled;
};

// The per-core loops around a tile, innermost first: K chunks, N tiles, M tiles, batch.
struct BmmLoops {
    int chunks, nt, mt, bt;
};

// The candidate for one tile, K chunk, residency, sharing and core split.
BmmCandidate bmm_candidate(const BmmShape &shape, int tm, int tn, int tk, bool resident, bool share, bool share_b,
                           const std::vector<int> &split /* cb, cn, cm */) {
    const MachineDescription &m = scheduling_machine();
    const int64_t bytes = shape.dtype.bytes();
    BmmCandidate c;
    BmmSpyrePlan &p = c.plan;
    p.in_lanes = p.out_lanes = stick_lanes(shape.dtype);
    p.tm = tm;
    p.tn = tn;
    p.np = round_up(shape.n, std::max(tn, p.out_lanes));
    p.mp = round_up(shape.m, tm);
    p.kp = round_up(shape.k, p.in_lanes);
    p.tk = tk;
    p.cb = split[0];
    p.cn = split[1];
    p.cm = split[2];
    p.b_resident = resident;
    p.a_shared = share;
    p.b_shared = share_b;
    const BmmLoops loops{p.kp / tk, p.np / tn / p.cn, p.mp / tm / p.cm, shape.batch / p.cb};
    const int64_t tile = (int64_t)tm * tn;
    planning::TiledPlan &t = c.tiled;
    t.reserve = planning::ScratchpadReserve::TilesCounted;
    // The fp32 accumulator and the result tile; the core's B slice when resident.
    t.fixed_bytes = tile * 4 + tile * bytes + (resident ? (int64_t)(p.np / p.cn) * p.kp * bytes : 0);
    // Staged per K chunk (A and B chunks), per row of tiles (A, B resident) or per tile (A and B).
    t.buffered_bytes = resident ? (int64_t)tm * p.kp * bytes : (int64_t)(tm + tn) * tk * bytes;
    t.staging_trip = p.k_chunked() ? loops.chunks
                     : resident    ? planning::staging_trip({loops.mt, loops.bt})
                                   : planning::staging_trip({loops.nt, loops.mt, loops.bt});
    t.per_core_trips = {loops.chunks, loops.nt, loops.mt, loops.bt};
    // With B resident each staged A serves a row of nt tiles: the staging loop (mo, or the
    // batch loop when a core has one row of tiles) starts once per batch, or once.
    if (resident) t.staging_starts = loops.mt > 1 ? loops.bt : 1;
    // DRAM: A per tile (per row of tiles with B resident), once per chain when shared;
    // B per tile, or each core's slice once per batch; C once. A broadcast B is one
    // matrix, read per tile of every batch's rows, and a B chain spans the batch too
    // (a broadcast B is costed as a matmul, by the PT pipeline: these terms keep the plan
    // truthful for judge(), whose footprint and loops decide its legality).
    const double a_all = (double)shape.batch * p.mp * p.kp * bytes;
    const double b_all = (shape.broadcast_b ? 1.0 : (double)shape.batch) * p.np * p.kp * bytes;
    const double a_copies = resident ? p.cn : (double)p.np / tn;
    const double b_copies = resident ? p.cm : (double)p.mp / tm * (shape.broadcast_b ? shape.batch : 1);
    const int b_chain = shape.broadcast_b ? p.cb * p.cm : p.cm;
    // A resident B slice loads at each batch's start, on every core at once, before its
    // first tile computes (fixed_cycles below), not in the pipelined stream.
    t.read_bytes = a_all * a_copies / (share ? p.cn : 1) + (resident ? 0.0 : b_all * b_copies / (share_b ? b_chain : 1));
    if (resident) t.fixed_cycles += loops.bt * m.dram_cycles(b_all * b_copies / loops.bt, 0, p.cores());
    t.write_bytes = (double)shape.batch * p.mp * p.np * bytes;
    t.cores = p.cores();
    // The work unit is one K step of one output tile: its PT matmul and, once per
    // tile, the cast of the accumulator and the store.
    t.tiles_per_core = (double)loops.bt * loops.mt * loops.nt * loops.chunks;
    const double type_factor = planning::pt_type_factor(shape.dtype, m);
    t.compute_cycles_per_tile = m.pt_matmul_cycles(tm, tn, tk, type_factor) +
                                m.sfu_instruction_cycles(tn, tm, 4, MachineDescription::SfuCost::Simple) / loops.chunks;
    t.waited_transfers_per_tile = 1 + 1.0 / loops.chunks;  // the step's loads; the tile's store
    if (share) {
        // A core of a chain forwards every A piece it uses; the last core of a chain
        // holds the first piece a chain fill after its head.
        const double a_piece = (double)tm * (resident ? p.kp : tk) * bytes;
        t.ring_bytes_per_core = a_all * a_copies / (double)(p.cb * p.cm * p.cn);
        t.chain_fill += planning::chain_fill_cycles(a_piece, p.cn, /*in_pieces=*/false, m);
    }
    if (share_b) {
        // The same for B along the cores of one column range (B staged per tile or K chunk, never resident).
        const double b_piece = (double)tn * tk * bytes;
        t.ring_bytes_per_core += b_all * b_copies / (double)(p.cb * p.cm * p.cn);
        t.chain_fill += planning::chain_fill_cycles(b_piece, b_chain, /*in_pieces=*/false, m);
    }
    return c;
}

}  // namespace

BmmSpyrePlan plan_bmm_spyre(const BmmShape &shape, const BmmSpyreOptions &options) {
    const int lanes = stick_lanes(shape.dtype);
    const int bytes = shape.dtype.bytes();
    const int kp = round_up(shape.k, lanes);
    if (options.tile_k > 0) {
        const int tk = round_up(options.tile_k, lanes);
        _halide_user_assert(kp % tk == 0) << "bmm Spyre schedule: tile_k=" << options.tile_k << " (" << tk
                                          << " in whole sticks) does not divide K padded to whole sticks (" << kp << ")";
    }
    std::vector<int> tms, tns;
    if (options.tile_m > 0) {
        tms.push_back(round_up(options.tile_m, scheduling_machine().pt_pass_rows));
    } else {
        for (int t = 64; t <= 1024; t *= 2) {
            if (t == 64 || t <= round_up(shape.m, 64)) tms.push_back(std::min(t, round_up(shape.m, scheduling_machine().pt_pass_rows)));
        }
        // As a matmul, also the heights that give each core of a split along the batch and M one
        // row of tiles, as gen_matmul's every-8-rows heights do: a B chain round all the cores
        // needs them (batch 2, m = 512 on 32 cores: 32 rows, B gathered round the 32 cores).
        if (shape.is_matmul()) {
            const int rows = scheduling_machine().pt_pass_rows;
            for (int cores_along_m = 2; cores_along_m <= usable_cores(options.max_cores); cores_along_m *= 2) {
                const int t = round_up((shape.m + cores_along_m - 1) / cores_along_m, rows);
                if (t < 64 && std::find(tms.begin(), tms.end(), t) == tms.end()) tms.push_back(t);
            }
            std::sort(tms.begin(), tms.end());
        }
    }
    if (options.tile_n > 0) {
        tns.push_back(round_up(options.tile_n, lanes));
    } else {
        // Up to 2048 columns: a PT pass streams tk x tn per 8 rows, so wide tiles amortize its fill
        // (a pass over 128 x 128 loses ~14% to it, docs/machine.md); tall-and-thin tiles fit the same
        // accumulator but pay that fill.
        for (int t = 64; t <= 2048; t *= 2) {
            if (t == 64 || t <= round_up(shape.n, 64)) tns.push_back(std::max(t, lanes));
        }
        // And the widths that cut N into a count of whole-stick tiles the cores can share evenly
        // (N = 12800 is 20 tiles of 640, which 32 cores split 4 x 8; in powers of two it is 25 of 512).
        for (int count : {2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64}) {
            const int t = round_up((shape.n + count - 1) / count, lanes);
            if (t >= 64 && t <= 2048 && std::find(tns.begin(), tns.end(), t) == tns.end()) tns.push_back(t);
        }
        std::sort(tns.begin(), tns.end());
    }
    // Offered larger tiles first (the framework's order of preference: fewer instructions and
    // descriptors win ties; bmm 32 x 128^3 simulates 3% faster in 64 x 128 tiles than in 64 x 64,
    // estimated alike).
    std::reverse(tms.begin(), tms.end());
    std::reverse(tns.begin(), tns.end());
    const int64_t budget = planning::scratchpad_budget(scheduling_machine(), planning::ScratchpadReserve::TilesCounted);
    const int max_cores = usable_cores(options.max_cores);
    // A bmm of one batch is the matmul of its (m, n, k) without the bias, and one whose B is
    // broadcast over the batch the matmul of batch x m rows (its tiles never straddle two
    // batches: M is padded per batch). Its candidates are the matmul's (tiles staged per K chunk
    // or per tile, B never resident, the same K chunks) costed by the PT pipeline model as the
    // matmul fills it (matmul_pipeline; it also charges the bias load and the accumulator's initialisation per
    // tile, which the bmm does differently: a small per-tile term), its cores along the batch
    // counted as cores along M, so gen_bmm ranks its tilings as gen_matmul ranks the same work,
    // at the matmul's tie tolerance.
    const bool as_matmul = shape.is_matmul();
    planning::PlanSearch<BmmSpyrePlan> search("bmm", as_matmul ? kMatmulTieTolerance : planning::kTieTolerance);
    for (int tm : tms) {
        for (int tn : tns) {
            // The PT pipeline model is checked against the simulator for the matmul's tile range (up to
            // 1024 columns: *MatmulPlannerRanking*); wider tiles it estimates 12% fast (64 x 1280).
            if (as_matmul && options.tile_n == 0 && tn > 1024) continue;
            // K chunks: the forced one, else the whole K and the largest chunks whose
            // one and two copies fit beside the accumulator and result tiles.
            const int64_t tile_bytes = (int64_t)tm * tn * (4 + bytes);
            std::vector<int> tks;
            for (int copies : {1, 2}) {
                for (int tk = kp; tk >= lanes; tk -= lanes) {
                    if (kp % tk != 0 || (options.tile_k > 0 && tk != round_up(options.tile_k, lanes))) continue;
                    if (copies * (int64_t)(tm + tn) * tk * bytes + tile_bytes <= budget) {
                        if (std::find(tks.begin(), tks.end(), tk) == tks.end()) tks.push_back(tk);
                        break;
                    }
                }
            }
            if (options.tile_k == 0 && std::find(tks.begin(), tks.end(), kp) == tks.end()) tks.insert(tks.begin(), kp);
            if (as_matmul && options.tile_k == 0 && options.double_buffer && !tks.empty()) {
                // As the matmul planner: smaller double-buffered chunks of an even count shorten
                // the pipeline's ends at the cost of more PT pass fills.
                const int smallest_offered = *std::min_element(tks.begin(), tks.end());
                for (int c = smallest_offered - lanes; c >= lanes && kp / c <= 64; c -= lanes) {
                    if (kp % c == 0 && (kp / c) % 2 == 0 && std::find(tks.begin(), tks.end(), c) == tks.end()) tks.push_back(c);
                }
            }
            const int np = round_up(shape.n, std::max(tn, lanes)), mp = round_up(shape.m, tm);
            const int n_tiles = np / tn, m_tiles = mp / tm;
            // Core splits over (batch, N tiles, M tiles): batch first, and N first.
            std::vector<std::vector<int>> splits;
            const std::vector<int> batch_first = planning::even_core_split({shape.batch, n_tiles, m_tiles}, max_cores);
            std::vector<int> n_first = planning::even_core_split({n_tiles, shape.batch, m_tiles}, max_cores);
            if (!n_first.empty()) std::swap(n_first[0], n_first[1]);
            for (const std::vector<int> &s : {batch_first, n_first}) {
                if (!s.empty() && std::find(splits.begin(), splits.end(), s) == splits.end()) splits.push_back(s);
            }
            // Then every other even split over (batch, N, M) of at least half the cores: a split with
            // cores along both N and M shares A along one and B along the other, which wide tiles need.
            for (const std::vector<int> &s : planning::even_core_splits({shape.batch, n_tiles, m_tiles}, max_cores)) {
                if (std::find(splits.begin(), splits.end(), s) == splits.end()) splits.push_back(s);
            }
            for (int tk : tks) {
                for (const std::vector<int> &split : splits) {
                    for (bool resident : {false, true}) {
                        if (resident && (!options.resident_b || tk < kp || as_matmul)) continue;
                        for (bool share : {false, true}) {
                            if (share && (!options.share_a || split[1] < 2)) continue;
                            for (int b_sharing = 0; b_sharing < 3; b_sharing++) {
                                // 0: B not shared; 1: B chains, whole tiles; 2: B chains gathered (as a matmul only,
                                // under gen_matmul's conditions: K in whole chunks of at least a row per core).
                                const bool share_b = b_sharing > 0, gather_b = b_sharing == 2;
                                const int b_chain = shape.broadcast_b ? split[0] * split[2] : split[2];
                                // As the matmul planner: B shared with whole K only where a core has one
                                // row of tiles (each core's rows: its batches times its M tiles).
                                const int64_t row_tiles = (int64_t)((shape.batch + split[0] - 1) / split[0]) * ((m_tiles + split[2] - 1) / split[2]);
                                if (share_b && (!options.share_b || resident || b_chain < 2 || (as_matmul && tk == kp && row_tiles > 1)))
                                    continue;
                                if (gather_b && (!as_matmul || options.b_forwarding == "whole" ||
                                                 !planning::gathered_chain_offered(b_chain, split[1], tk, shape.k, scheduling_machine())))
                                    continue;
                                if (share_b && !gather_b && as_matmul && options.b_forwarding == "gathered") continue;
                                BmmCandidate c = bmm_candidate(shape, tm, tn, tk, resident, share, share_b, split);
                                c.plan.b_gathered = gather_b;
                                if (as_matmul) {
                                    // Rows: each core's batches times its M tiles; the cores along the batch are along M.
                                    const BmmSpyrePlan &q = c.plan;
                                    const MatmulCandidate mc{tm, tn, tk, kp, q.cb * q.cm, q.cn,
                                                             (int64_t)(shape.batch / q.cb) * (mp / tm / q.cm),
                                                             (int64_t)(np / tn / q.cn), options.double_buffer, share, share_b,
                                                             /*result_double_buffer=*/false, gather_b};
                                    c.tiled.pt_pipeline =
                                        matmul_pipeline(MatmulShape{shape.batch * shape.m, shape.n, shape.k, shape.dtype}, mc);
                                }
                                planning::Verdict v = planning::judge(c.tiled, options.double_buffer);
                                // As the matmul planner ranks them: whole-K tiles along a B chain win by its margin.
                                if (as_matmul && share_b && tk == kp) v.rank_margin = kMatmulWholeKChainMargin;
                                BmmSpyrePlan p = c.plan;
                                p.double_buffer = v.double_buffer;
                                p.footprint_bytes = v.footprint_bytes;
                                const auto describe = [&] {
                                    return "tiles " + std::to_string(tm) + " x " + std::to_string(tn) + " x " +
                                           std::to_string(tk) + ", cores " + std::to_string(p.cb) + " x " +
                                           std::to_string(p.cm) + " x " + std::to_string(p.cn) + " (batch x m x n)" +
                                           (resident ? ", B resident" : "") + (share ? ", A shared" : "") +
                                           (share_b ? (gather_b ? ", B shared, gathered" : ", B shared") : "") +
                                           (as_matmul ? " (costed as a matmul)" : "");
                                };
                                search.offer(p, v, describe);
                            }
                        }
                    }
                }
            }
        }
    }
    _halide_user_assert(search.found()) << "bmm Spyre schedule: no K chunk"
                                        << (options.tile_k > 0 ? " of tile_k=" + std::to_string(options.tile_k) : std::string())
                                        << " of a " << tms.back() << "x" << tns.back()
                                        << " tile (tile_m x tile_n) fits in the scratchpad budget (" << budget << " bytes)";
    return planning::with_estimate(search);
}

void schedule_bmm_host(BmmFuncs f, const BmmShape &shape, const Target &target) {
    Var n = f.n, m = f.m, b = f.b;
    Var no("no"), mo("mo"), ni("ni"), mi("mi"), nn("nn"), nv("nv"), tile("tile");
    const int vec = target.natural_vector_size(Float(32));
    // Tiles no larger than the tensor (ShiftInwards needs extent >= factor)
    // and whole vectors, so the accumulator never reads past B.
    const int vn = std::min(vec, shape.n);
    const int tn = shape.n >= 2 * vn ? 2 * vn : vn;
    const int tm = std::min(4, shape.m);

    // C tiles of tn x tm, parallel over (row tile, batch); each tile keeps its
    // fp32 accumulator in registers (2 vectors x 4 rows), fully unrolled.
    f.C.tile(n, m, no, mo, ni, mi, tn, tm).fuse(mo, b, tile).parallel(tile).vectorize(ni, vn);
    f.acc.compute_at(f.C, no).split(n, nn, nv, vn).vectorize(nv).unroll(nn).unroll(m);
    f.acc.update().reorder(n, m, f.k).split(n, nn, nv, vn).vectorize(nv).unroll(nn).unroll(m);
}

void schedule_bmm_spyre(BmmFuncs f, Func A_in, Func B_in, const BmmShape &shape, const BmmSpyrePlan &p) {
    Var n = f.n, m = f.m, b = f.b;
    Var mo("mo"), no("no"), mi("mi"), ni("ni");

    // Everything divides exactly: the tensors are padded to the tiles.
    _halide_user_assert(shape.batch % p.cb == 0 && p.mp % (p.cm * p.tm) == 0 && p.np % (p.cn * p.tn) == 0 &&
                p.kp % p.tk == 0 && p.tn % p.out_lanes == 0 && p.tn % p.in_lanes == 0)
        << "bmm Spyre schedule: tiles do not divide the padded extents (batch " << shape.batch << ", Mp " << p.mp
        << ", Np " << p.np << ", Kp " << p.kp << ")";

    // Core split (batch, N, M; the plan's counts) fused into one constant-extent
    // parallel loop; per core: for bi, mo, no { one TM x TN tile } as plain serial loops.
    const CoreSplit cores = split_across_cores(f.C, {{b, shape.batch, 1, p.cb}, {n, p.np, p.tn, p.cn}, {m, p.mp, p.tm, p.cm}});
    const Var bi = cores.serial_of(b), mr = cores.serial_of(m), nr = cores.serial_of(n);
    f.C.tile(nr, mr, no, mo, ni, mi, p.tn, p.tm, TailStrategy::RoundUp).reorder(ni, mi, no, mo, bi);
    stick_vectorize(f.C, ni);

    // fp32 accumulator tile in the scratchpad: k outermost, rows, then n in fp32 sticks.
    accumulate_in_scratchpad(f.acc, f.C, no);
    const PtMatmul pt = matmul_on_pt(f.acc, f.k, n, m, p.k_chunked() ? p.tk : 0);

    // Input tiles staged in the scratchpad (DMA): per K chunk; or the A tile per row
    // tile with the core's whole B slice resident; or, with whole K, the A tile per row of
    // tiles where the bmm is planned as a matmul (as gen_matmul stages it), else both per
    // output tile.
    // Double buffering (the DMA of the next tile overlaps this tile's matmul) where the plan has room for it.
    auto stage = [&](Func in, Func consumer, const VarOrRVar &at) { stage_in_scratchpad(in, consumer, at, p.double_buffer); };
    if (pt.k_chunked) {
        stage(A_in, f.acc, pt.k_outer);
        stage(B_in, f.acc, pt.k_outer);
    } else if (p.b_resident) {
        stage(A_in, f.C, mo);
        stage_in_scratchpad(B_in, f.C, bi);
    } else if (shape.is_matmul()) {
        // Planned as the matmul (one batch, or B broadcast over the batch), staged as the matmul
        // stages it: A once per row of tiles, reused by every N tile of it (batch 2, m = 512,
        // n = 12800 on 32 cores, 32 x 64 whole-K tiles along a 32-core gathered B chain: A per
        // output tile read 1.78 GB, 11969 us; per row of tiles 1639 us, as gen_matmul).
        stage(A_in, f.C, mo);
        stage(B_in, f.C, no);
    } else {
        stage(A_in, f.C, no);
        stage(B_in, f.C, no);
    }

    // The cores of one batch and row range load the same A tiles: once per chain, then along the ring.
    if (p.a_shared) share_over_ring(A_in);
    if (p.b_shared) share_over_ring(B_in, p.b_gathered ? RingForwarding::Gathered : RingForwarding::WholeTiles);

    // Output tile cast in the scratchpad, then copied to DRAM by C itself.
    stage_in_scratchpad(f.result, f.C, no);
}

}  // namespace spyre
