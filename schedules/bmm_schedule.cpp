// Schedules of the batched matmul (see bmm_schedule.h).
#include "bmm_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <vector>

#include "spyre/machine.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {



// Scratchpad bytes per core for one tile: A (tm x tk), B (tk x tn), the fp32
// accumulator and the result tile (tm x tn each).
int64_t bmm_footprint(int tm, int tn, int tk, int bytes) {
    return (int64_t)tm * tk * bytes + (int64_t)tk * tn * bytes + (int64_t)tm * tn * 4 + (int64_t)tm * tn * bytes;
}

// The largest tile count below the core limit, preferring batch, then N, then M
// (only exact divisors, so every core gets the same work). With `n_first`,
// N is preferred over batch and M: the split whose cores share A tiles most.
void choose_core_split(BmmSpyrePlan &p, int batch, int cores, bool n_first = false) {
    const int m_tiles = p.mp / p.tm, n_tiles = p.np / p.tn;
    int best = 0;
    p.cb = p.cn = p.cm = 1;
    for (int cb : divisors(batch)) {
        for (int cn : divisors(n_tiles)) {
            for (int cm : divisors(m_tiles)) {
                const int used = cb * cn * cm;
                if (used > cores) continue;
                // Strictly more cores wins; on a tie the earlier (batch, then N) choice stays,
                // since cb and cn are visited in increasing order we prefer larger cb, cn.
                const bool preferred = n_first ? (cn > p.cn || (cn == p.cn && cb > p.cb))
                                               : (cb > p.cb || (cb == p.cb && cn > p.cn));
                const bool better = used > best || (used == best && preferred);
                if (better) {
                    best = used;
                    p.cb = cb;
                    p.cn = cn;
                    p.cm = cm;
                }
            }
        }
    }
}

}  // namespace

namespace {

// One candidate: tiles tm x tn (K chunk tk), padding, core split, B residency.
BmmSpyrePlan plan_with_tiles(const BmmShape &shape, const BmmSpyreOptions &options, int tm, int tn) {
    const MachineDescription &machine = default_machine();
    BmmSpyrePlan p;
    const int bytes = shape.dtype.bytes();
    p.in_lanes = stick_lanes(shape.dtype);
    p.out_lanes = stick_lanes(shape.dtype);
    p.tn = tn;
    p.tm = tm;
    p.np = round_up(shape.n, std::max(p.tn, p.out_lanes));
    p.mp = round_up(shape.m, p.tm);
    p.kp = round_up(shape.k, p.in_lanes);

    // The whole padded K if it fits in ~90% of the scratchpad (about 1.8 MiB),
    // else the largest stick multiple dividing it that does (0: no chunk fits).
    const int64_t budget = machine.scratchpad_bytes * 9 / 10;
    // A chunked K leaves room for a second copy of the A and B chunks when double buffering.
    p.tk = 0;
    const int forced_tk = options.tile_k > 0 ? round_up(options.tile_k, p.in_lanes) : 0;
    for (int tk = p.kp; tk >= p.in_lanes; tk -= p.in_lanes) {
        if (p.kp % tk != 0 || (forced_tk > 0 && tk != forced_tk)) continue;
        const int64_t second = tk < p.kp && options.double_buffer ? (int64_t)(p.tm + p.tn) * tk * bytes : 0;
        if (bmm_footprint(p.tm, p.tn, tk, bytes) + second <= budget) {
            p.tk = tk;
            break;
        }
    }
    if (p.tk == 0) return p;
    p.footprint_bytes = bmm_footprint(p.tm, p.tn, p.tk, bytes);
    choose_core_split(p, shape.batch, usable_cores(options.max_cores), options.share_a);
    p.a_shared = options.share_a && p.cn > 1;
    // With the whole K in one tile, keep each core's B slice resident when it fits:
    // A tiles are then reused across the core's N tiles and B is read from DRAM once.
    if (!p.k_chunked() && options.resident_b) {
        const int64_t slice_n = p.np / p.cn;
        const int64_t resident = (int64_t)p.tm * p.kp * bytes + slice_n * p.kp * bytes + (int64_t)p.tm * p.tn * (4 + bytes);
        if (resident <= budget) {
            p.b_resident = true;
            p.footprint_bytes = resident;
        }
    }
    // Double buffering: a second copy of the tiles staged per iteration (A only when B is resident).
    if (options.double_buffer) {
        const int64_t second = p.b_resident ? (int64_t)p.tm * p.kp * bytes : (int64_t)(p.tm + p.tn) * p.tk * bytes;
        if (p.footprint_bytes + second <= budget) {
            p.double_buffer = true;
            p.footprint_bytes += second;
        }
    }
    return p;
}

// A first-order estimate of a plan's time in cycles (the planner's cost model)
// from the PT time on the cores used, the DRAM time of the bytes the tiles
// move (A and B per tile, or A per row tile plus B once when resident; A once
// per chain when shared) and each core's ring forwarding time.
double estimated_cycles(const BmmShape &shape, const BmmSpyrePlan &p) {
    const MachineDescription &m = default_machine();
    const double bytes = shape.dtype.bytes();
    const double tiles = (double)shape.batch * (p.mp / p.tm) * (p.np / p.tn);
    const double macs = (double)shape.batch * p.mp * p.np * p.kp;
    const double rate = m.pt_peak_macs_per_cycle_fp16 * (shape.dtype.bits() == 32 ? m.pt_fp32_rate_factor : 1.0);
    const double compute = macs / (rate * p.cores());
    // A is loaded once per chain of cn cores when shared, else by every core.
    const double a_loads = p.a_shared ? 1.0 / p.cn : 1.0;
    double traffic, a_bytes_per_core;
    if (p.b_resident) {
        // A once per core column (cn), each core's B slice once per core row (cm).
        traffic = (double)shape.batch * p.mp * p.kp * bytes * p.cn * a_loads + (double)shape.batch * p.np * p.kp * bytes * p.cm;
        a_bytes_per_core = (double)shape.batch * p.mp * p.kp * bytes / (p.cb * p.cm);
    } else {
        traffic = tiles * (p.tm * a_loads + p.tn) * (double)p.kp * bytes;
        a_bytes_per_core = tiles * p.tm * (double)p.kp * bytes / p.cores();
    }
    traffic += (double)shape.batch * p.mp * p.np * bytes;  // C
    const double dram = traffic / m.dram_bytes_per_cycle();
    // Forwarding A along the chain occupies each core's DMA unit.
    const double ring = p.a_shared ? a_bytes_per_core / m.ring_bytes_per_cycle : 0.0;
    // Single-buffered tiles wait for their transfers; double-buffered ones overlap
    // them with the compute, all but a tenth of the shorter activities.
    const double serial = compute + dram + ring;
    if (!p.double_buffer) return serial;
    const double busiest = std::max({compute, dram, ring});
    return busiest + 0.1 * (serial - busiest);
}

}  // namespace

BmmSpyrePlan plan_bmm_spyre(const BmmShape &shape, const BmmSpyreOptions &options) {
    // Candidate tiles: 64-multiples up to 1024 rows and 512 columns (smaller M gets its own rounded size);
    // the plan with the lowest estimated time wins, ties to the smaller tile.
    const int lanes = stick_lanes(shape.dtype);
    if (options.tile_k > 0) {
        const int kp = round_up(shape.k, lanes), tk = round_up(options.tile_k, lanes);
        _halide_user_assert(kp % tk == 0) << "bmm Spyre schedule: tile_k=" << options.tile_k << " (" << tk
                                          << " in whole sticks) does not divide K padded to whole sticks (" << kp << ")";
    }
    std::vector<int> tms, tns;
    if (options.tile_m > 0) {
        tms.push_back(round_up(options.tile_m, 8));
    } else {
        for (int t = 64; t <= 1024; t *= 2) {
            if (t == 64 || t <= round_up(shape.m, 64)) tms.push_back(std::min(t, round_up(shape.m, 8)));
        }
    }
    if (options.tile_n > 0) {
        tns.push_back(round_up(options.tile_n, lanes));
    } else {
        for (int t = 64; t <= 512; t *= 2) {
            if (t == 64 || t <= round_up(shape.n, 64)) tns.push_back(t);
        }
    }
    BmmSpyrePlan best;
    double best_cycles = 0;
    for (int tm : tms) {
        for (int tn : tns) {
            for (bool resident : {false, true}) {
                if (resident && !options.resident_b) continue;
                for (bool share : {false, true}) {
                    if (share && !options.share_a) continue;
                    BmmSpyreOptions o = options;
                    o.resident_b = resident;
                    o.share_a = share;
                    BmmSpyrePlan p = plan_with_tiles(shape, o, tm, tn);
                    if (p.tk == 0 || (share && !p.a_shared)) continue;
                    const double c = estimated_cycles(shape, p);
                    if (best.tk == 0 || c < best_cycles * 0.98) {
                        best = p;
                        best_cycles = c;
                    }
                }
            }
        }
    }
    _halide_user_assert(best.tk > 0) << "bmm Spyre schedule: no K chunk"
                                     << (options.tile_k > 0 ? " of tile_k=" + std::to_string(options.tile_k) : std::string())
                                     << " of a " << tms.front() << "x" << tns.front()
                                     << " tile (tile_m x tile_n) fits in the scratchpad";
    return best;
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
    // tile with the core's whole B slice resident; or both per output tile.
    // Double buffering (the DMA of the next tile overlaps this tile's matmul) where the plan has room for it.
    auto stage = [&](Func in, Func consumer, const VarOrRVar &at) { stage_in_scratchpad(in, consumer, at, p.double_buffer); };
    if (pt.k_chunked) {
        stage(A_in, f.acc, pt.k_outer);
        stage(B_in, f.acc, pt.k_outer);
    } else if (p.b_resident) {
        stage(A_in, f.C, mo);
        stage_in_scratchpad(B_in, f.C, bi);
    } else {
        stage(A_in, f.C, no);
        stage(B_in, f.C, no);
    }

    // The cores of one batch and row range load the same A tiles: once per chain, then along the ring.
    if (p.a_shared) share_over_ring(A_in);

    // Output tile cast in the scratchpad, then copied to DRAM by C itself.
    stage_in_scratchpad(f.result, f.C, no);
}

}  // namespace spyre
