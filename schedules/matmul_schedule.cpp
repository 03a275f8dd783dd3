// Schedules of the matmul with a fused epilogue (see matmul_schedule.h).
#include "matmul_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "spyre/machine.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {



// Scratchpad bytes per core: A (tm x tk), B (tk x tn), the fp32 accumulator,
// the epilogue stages (fp32) and the result tile, the bias (staged and fp32)
// and a few fp32 SFU temporaries of one tile row.
int64_t matmul_footprint(int tm, int tn, int tk, int bytes, int stages) {
    const int64_t tile = (int64_t)tm * tn;
    return (int64_t)tm * tk * bytes + (int64_t)tk * tn * bytes + tile * 4 * (1 + stages) + tile * bytes +
           (int64_t)tn * (bytes + 4) + 4LL * tn * 4;
}

// The second copies of double buffering: the A and B chunks (K chunked) or tiles.
int64_t second_copies(int tm, int tn, int tk, int bytes) {
    return (int64_t)tm * tk * bytes + (int64_t)tk * tn * bytes;
}

}  // namespace

int epilogue_stages(Activation a) {
    return a == Activation::Gelu || a == Activation::Silu ? 1 : 0;
}

MatmulSpyrePlan plan_matmul_spyre(const MatmulShape &shape, const MatmulSpyreOptions &options) {
    const MachineDescription &machine = default_machine();
    const int bytes = shape.dtype.bytes();
    const int stages = epilogue_stages(shape.activation);
    const int lanes = stick_lanes(shape.dtype);
    const int kp = round_up(shape.k, lanes);
    const int64_t budget = machine.scratchpad_bytes * 9 / 10;
    const double pt_rate = machine.pt_peak_macs_per_cycle_fp16 * (shape.dtype == Float(32) ? machine.pt_fp32_rate_factor : 1.0);
    const double sfu_bytes_per_cycle = machine.sfu_bytes_per_cycle_per_corelet * machine.corelets_per_core;
    const double dram_bytes_per_ns = machine.dram_bandwidth_gbps;
    const int mp8 = round_up(shape.m, machine.pt_pass_rows), np64 = round_up(shape.n, 64);
    const int max_cores = usable_cores(options.max_cores);

    // Candidate tiles: multiples of 64 columns up to 1024 and of 8 rows up to 1024,
    // or only the forced tile (rows in whole PT passes, columns in whole sticks).
    std::vector<int> tns, tms;
    if (options.tile_n > 0) {
        tns.push_back(round_up(options.tile_n, lanes));
    } else {
        for (int tn = 64; tn <= std::min(np64, 1024); tn += 64) tns.push_back(tn);
    }
    if (options.tile_m > 0) {
        tms.push_back(round_up(options.tile_m, machine.pt_pass_rows));
    } else {
        for (int tm = 8; tm <= std::min(mp8, 1024); tm += 8) tms.push_back(tm);
    }

    MatmulSpyrePlan best;
    best.estimated_us = -1;
    for (int tn : tns) {
        for (int tm : tms) {
            // The largest K chunk (whole sticks, dividing the padded K) that fits, with
            // the second copies when double buffering (else without them).
            int tk = 0;
            bool db = false;
            for (int copies = options.double_buffer ? 2 : 1; copies >= 1 && tk == 0; copies--) {
                for (int c = kp; c >= lanes; c -= lanes) {
                    const int64_t extra = copies == 2 ? second_copies(tm, tn, c, bytes) : 0;
                    if (kp % c == 0 && matmul_footprint(tm, tn, c, bytes, stages) + extra <= budget) {
                        tk = c;
                        db = copies == 2;
                        break;
                    }
                }
            }
            if (tk == 0) continue;
            const int mp = round_up(shape.m, tm), m_tiles = mp / tm;
            const int min_n_tiles = (shape.n + tn - 1) / tn;
            // N is padded to whole tiles, and further to a multiple of cn tiles (at most one
            // more tile per core): a tile count with no good divisor (N = 49155, a vocabulary,
            // is 769 sticks, a prime) would otherwise leave most cores idle.
            for (int cn = 1; cn <= std::min(max_cores, min_n_tiles); cn++) {
                const int n_tiles = round_up(min_n_tiles, cn), np = n_tiles * tn;
                for (int cm : divisors(m_tiles)) {
                  for (bool share : {false, true}) {
                    if (cn * cm > max_cores || (share && (!options.share_a || cn < 2))) continue;
                    const int64_t mt = m_tiles / cm, nt = n_tiles / cn;  // tiles per core
                    // A is staged once per M tile unless K is chunked; B and the bias per tile.
                    const int64_t a_bytes = (tk == kp ? mt : mt * nt) * tm * (int64_t)kp * bytes;
                    const int64_t b_bytes = mt * nt * ((int64_t)kp * tn * bytes + (int64_t)tn * bytes);
                    // Shared, A is read once per chain of the cn cores of a row range.
                    const double read = (double)a_bytes * cm * (share ? 1 : cn) + (double)b_bytes * cn * cm;
                    const double write = (double)mp * np * bytes;
                    const double dram_ns = (read + write) / dram_bytes_per_ns +
                                           machine.dram_turnaround_ns_per_byte * std::min(read, write);
                    const double passes = std::ceil((double)tm / machine.pt_pass_rows);
                    const double pt_cycles = (double)(kp / tk) * passes *
                                             ((double)machine.pt_pass_rows * tn * tk / pt_rate + machine.pt_pass_fill_cycles);
                    const double sfu_cycles = (3.0 + 4 * stages) * tm * tn * 4 / sfu_bytes_per_cycle;
                    const double compute_ns = (double)(mt * nt) * (pt_cycles + sfu_cycles) / machine.clock_ghz;
                    // Forwarding A along the chain occupies each core's DMA unit.
                    const double ring_ns = share ? (double)a_bytes / machine.ring_bytes_per_cycle / machine.clock_ghz : 0.0;
                    // Double buffered, the DMA of the next chunk overlaps this chunk's matmul
                    // (within pairs of iterations: partly).
                    const double transfer_ns = std::max(dram_ns, ring_ns);
                    const double us = (db ? std::max(transfer_ns, compute_ns) + 0.25 * std::min(transfer_ns, compute_ns)
                                          : transfer_ns + compute_ns) / 1000.0;
                    if (best.estimated_us < 0 || us < best.estimated_us * 0.999) {
                        best.tm = tm;
                        best.tn = tn;
                        best.tk = tk;
                        best.mp = mp;
                        best.np = np;
                        best.kp = kp;
                        best.cm = cm;
                        best.cn = cn;
                        best.in_lanes = lanes;
                        best.footprint_bytes = matmul_footprint(tm, tn, tk, bytes, stages) +
                                               (db ? second_copies(tm, tn, tk, bytes) : 0);
                        best.double_buffer = db;
                        // The result tile too when it fits and a core has an even number >= 2 of N tiles.
                        const int64_t result_copy = (int64_t)tm * tn * bytes;
                        best.double_buffer_result = db && nt % 2 == 0 && best.footprint_bytes + result_copy <= budget;
                        if (best.double_buffer_result) best.footprint_bytes += result_copy;
                        best.dram_bytes = (int64_t)(read + write);
                        best.estimated_us = us;
                        best.a_shared = share;
                    }
                  }
                }
            }
        }
    }
    if (options.tile_m > 0 || options.tile_n > 0) {
        _halide_user_assert(best.estimated_us >= 0)
            << "matmul Spyre schedule: no K chunk of a " << tms.front() << "x" << tns.front()
            << " tile (tile_m=" << options.tile_m << ", tile_n=" << options.tile_n << "; rows x columns) fits in the scratchpad ("
            << budget << " bytes)";
    }
    _halide_user_assert(best.estimated_us >= 0)
        << "matmul Spyre schedule: even a one-stick K chunk of an 8x64 tile does not fit in the scratchpad (" << budget
        << " bytes)";
    return best;
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
                           const MatmulSpyrePlan &p) {
    Var n = f.n, m = f.m;
    Var mo("mo"), no("no"), mi("mi"), ni("ni");
    _halide_user_assert(p.mp % (p.cm * p.tm) == 0 && p.np % (p.cn * p.tn) == 0 && p.kp % p.tk == 0 &&
                        p.tn % p.in_lanes == 0)
        << "matmul Spyre schedule: tiles do not divide the padded extents (Mp " << p.mp << ", Np " << p.np << ", Kp "
        << p.kp << ")";

    // Core split (N, M) fused into one constant-extent parallel loop; per core
    // for mo, no { one tm x tn tile } as plain serial loops.
    const CoreSplit cores = split_across_cores(f.C, {{n, p.np, p.tn, p.cn}, {m, p.mp, p.tm, p.cm}});
    const Var mr = cores.serial_of(m), nr = cores.serial_of(n);
    f.C.tile(nr, mr, no, mo, ni, mi, p.tn, p.tm, TailStrategy::RoundUp).reorder(ni, mi, no, mo);
    stick_vectorize(f.C, ni);

    // The bias tile, widened to fp32 (for fp32 bias_f is a plain copy: a DMA).
    if (shape.dtype != Float(32)) stage_in_scratchpad(bias_in, f.C, no);
    stage_in_scratchpad(f.bias_f, f.C, no);

    // fp32 accumulator tile, initialised with the bias, reduced on the PT.
    accumulate_in_scratchpad(f.acc, f.C, no);
    const PtMatmul pt = matmul_on_pt(f.acc, f.k, n, m, p.k_chunked() ? p.tk : 0);
    // Double buffered: the next chunk's (tile's) DMA overlaps this one's matmul.
    // (A loop of odd trip count is left single-buffered by the backend.)
    auto stage = [&](Func in, Func consumer, const VarOrRVar &at) { stage_in_scratchpad(in, consumer, at, p.double_buffer); };
    if (pt.k_chunked) {
        stage(A_in, f.acc, pt.k_outer);
        stage(B_in, f.acc, pt.k_outer);
    } else {
        stage(A_in, f.C, mo);  // reused by every N tile of the row of tiles
        stage(B_in, f.C, no);
    }
    // The cores of one row range load the same A tiles: once per chain, then along the ring.
    if (p.a_shared) share_over_ring(A_in);

    // Epilogue on the SFU at the tile: one instruction per stage and tile row
    // (vectors of the whole tile width), then the cast; C stores the tile (DMA).
    for (Func g : f.epilogue) {
        g.compute_at(f.C, no).store_in(MemoryType::VTCM).vectorize(n, p.tn, TailStrategy::RoundUp);
        for (int u = 0; u < g.num_update_definitions(); u++) g.update(u).vectorize(n, p.tn, TailStrategy::RoundUp);
    }
    f.result.compute_at(f.C, no).store_in(MemoryType::VTCM).vectorize(n, p.tn, TailStrategy::RoundUp);
    if (p.double_buffer_result) double_buffer_result(f.result);  // the store overlaps the next tile
}

}  // namespace spyre
