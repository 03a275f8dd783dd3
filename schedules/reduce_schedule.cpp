// Schedules of the reductions (see reduce_schedule.h).
//
// Performance shape (gen_reduce op=sum dtype=float16 d0=1024 d1=2048 d2=4,
// 16 MiB read), 32 cores: axis 0 (row sums) 119.1 us simulated against a DRAM
// roofline of 112.1 us (94.1%); axis 1 (mean, across sticks) 116.4 / 112.0 us
// (96.2%); axis 2 (max) 177.0 / 163.9 us (92.6%).
#include "reduce_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <vector>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {



// The most cores (cu along the output's dim 0 tiles, cv along dim 1) that divide evenly:
// the framework's core-split search, tiles of u first.
void best_split(int u_tiles, int v_extent, int cores, int *cu, int *cv) {
    const std::vector<int> c = planning::even_core_split({u_tiles, v_extent}, cores);
    *cu = c[0];
    *cv = c[1];
}

// A staged copy of a DRAM tensor: whole sticks, RoundUp (the region it covers
// may be narrower than a stick; the tensor is padded to whole sticks).
// Two copies when double buffered.
void stage_sticks(Func f, Func consumer, const VarOrRVar &at, int lanes, bool double_buffered) {
    if (at.is_rvar) f.compute_at(consumer, at.rvar);
    else f.compute_at(consumer, at.var);
    f.store_in(MemoryType::VTCM).vectorize(f.args()[0], lanes, TailStrategy::RoundUp);
    if (double_buffered) double_buffer_result(f);
}

}  // namespace

ReduceSpyrePlan plan_reduce_spyre(const ReduceShape &s, const ReduceSpyreOptions &options) {
    const MachineDescription &m = default_machine();
    const int eb = s.dtype.bytes();
    const bool f16 = s.dtype.bits() == 16;
    ReduceSpyrePlan p;
    p.in_lanes = stick_lanes(s.dtype);
    const int n = s.reduced();
    const int du = s.extent(s.kept(0)), dv = s.extent(s.kept(1));
    const int64_t budget = planning::scratchpad_budget();
    const double sfu_rate = m.sfu_bytes_per_cycle_per_corelet * m.corelets_per_core;
    const double ovh = m.sfu_instruction_overhead_cycles, lat = m.dma_latency_cycles;
    double best = std::numeric_limits<double>::max();
    // The backend double-buffers the innermost loop of more than one iteration around a stage.
    const auto staging_trip = planning::staging_trip;
    if (options.tile > 0 && options.tile % p.in_lanes != 0) {
        throw std::runtime_error("reduce: tile=" + std::to_string(options.tile) + " must be a whole number of sticks (" +
                                 std::to_string(p.in_lanes) + " lanes of the output's dim 0)");
    }
    if (options.chunk > 0 && (s.axis == 0 || n % options.chunk != 0)) {
        throw std::runtime_error("reduce: chunk=" + std::to_string(options.chunk) + " must divide the reduced extent (" +
                                 std::to_string(n) + ") and applies to axes 1 and 2 only (axis " + std::to_string(s.axis) + ")");
    }
    const int max_cores = usable_cores(options.max_cores);
    // Tiles are whole sticks of the output's dim 0, at most one SFU vector (kPlannerSfuVectorLanes).
    for (int tile = p.in_lanes; tile <= std::max(p.in_lanes, std::min(kPlannerSfuVectorLanes, round_up(du, p.in_lanes)));
         tile += p.in_lanes) {
        if (options.tile > 0 && tile != options.tile) continue;
        const int up = round_up(du, tile);
        int cu, cv;
        best_split(up / tile, dv, max_cores, &cu, &cv);
        const double tiles_per_core = (double)up / tile / cu * dv / cv;
        const int u_trip = up / tile / cu, v_trip = dv / cv;
        int chunk = n;
        int64_t footprint = 0;
        double per_tile = 0;
        bool db = false;
        for (int copies = options.double_buffer ? 2 : 1; copies >= 1; copies--) {
            if (s.axis == 0) {
                // The rows of the tile (padded to sticks), one fp32 row temporary (fp16), acc and result.
                const int d0p = round_up(s.d0, p.in_lanes);
                footprint = copies * (int64_t)tile * d0p * eb + (f16 ? (int64_t)d0p * 4 : 0) + (int64_t)tile * 4 +
                            copies * (int64_t)tile * eb;
                per_tile = 2 * lat + tile * ((f16 ? 2 : 1) * ((double)d0p * 4 / sfu_rate + ovh));
                db = copies == 2 && staging_trip({u_trip, v_trip}) % 2 == 0;
            } else {
                // Chunks of the reduced axis: the staged rows (and their fp32 copy), acc and result.
                const int64_t row = (int64_t)tile * (copies * eb + (f16 ? 4 : 0));
                const int64_t room = budget - (int64_t)tile * (4 + copies * eb);
                chunk = 0;
                for (int c : divisors(n)) {
                    if (c * row <= room && c <= (int64_t)default_machine().max_loop_trip_count && (options.chunk == 0 || c == options.chunk)) chunk = c;
                }
                if (chunk == 0) continue;
                footprint = chunk * row + (int64_t)tile * (4 + copies * eb);
                const double chunks = (double)n / chunk;
                per_tile = lat + chunks * (lat + chunk * ((f16 ? 2 : 1) * ((double)tile * 4 / sfu_rate) + ovh) + 2 * ovh);
                db = copies == 2 && staging_trip({n / chunk, u_trip, v_trip}) % 2 == 0 &&
                     staging_trip({u_trip, v_trip}) % 2 == 0;
            }
            if (footprint <= budget && (copies == 1 || db)) break;
            db = false;
        }
        if (chunk == 0 || footprint > budget) continue;
        // Double buffered: the per-tile latency and SFU time hide behind the next tile's
        // DMA but for about one tile's worth (the first load, the last compute and store).
        const double exposed = db ? per_tile + tiles_per_core * 2 * ovh : tiles_per_core * per_tile;
        const double read = (double)n * up * dv * eb * (s.axis == 0 ? 1 : 1), write = (double)up * dv * eb;
        const double read_padded = s.axis == 0 ? (double)round_up(s.d0, p.in_lanes) * up * dv * eb : read;
        const double dram = m.dram_cycles(read_padded, write, cu * cv);
        const double cost = dram + exposed;
        if (cost < best * 0.999) {
            best = cost;
            p.tile = tile;
            p.u_padded = up;
            p.chunk = chunk;
            p.cores_u = cu;
            p.cores_v = cv;
            p.footprint_bytes = footprint;
            p.double_buffer = db;
        }
    }
    // Axes 1, 2 with a small output (the plan above leaves at least half the cores idle, or the
    // split is asked for): split the reduced axis over the cores instead, each core reducing its
    // rows into its part of a buffer that core 0 gathers and combines.
    const int up_all = round_up(du, p.in_lanes);
    const bool cores_idle = p.tile == 0 || p.cores() * 2 <= max_cores;
    if (s.axis != 0 && options.reduce_cores != 1 && (options.reduce_cores > 1 || cores_idle) && up_all <= kPlannerSfuVectorLanes &&
        (options.tile == 0 || options.tile == up_all)) {
        if (options.reduce_cores > 1 && n % options.reduce_cores != 0) {
            throw std::runtime_error("reduce: reduce_cores=" + std::to_string(options.reduce_cores) +
                                     " must divide the reduced extent (" + std::to_string(n) + ")");
        }
        const int64_t part = (int64_t)up_all * dv * 4;  // one core's fp32 partial results
        for (int c : divisors(n)) {
            if (c < 2 || c > max_cores || (options.reduce_cores > 1 && c != options.reduce_cores)) continue;
            const int rows = n / c;
            // Core 0 holds every part, its own partial, the combined accumulator and the result tile.
            const int64_t fixed = (int64_t)c * part + part + (int64_t)up_all * (4 + eb);
            for (int copies = options.double_buffer ? 2 : 1; copies >= 1; copies--) {
                const int64_t row = (int64_t)up_all * (copies * eb + (f16 ? 4 : 0));
                int chunk = 0;
                for (int d : divisors(rows)) {
                    if (fixed + d * row <= budget && d <= (int64_t)default_machine().max_loop_trip_count && (options.chunk == 0 || d == options.chunk)) chunk = d;
                }
                if (chunk == 0) continue;
                const bool db = copies == 2 && (rows / chunk) % 2 == 0;
                if (copies == 2 && !db) continue;
                const double read = (double)n * up_all * dv * eb, write = (double)up_all * dv * eb;
                const double dram = m.dram_cycles(read, write, c);
                const double sfu = (double)dv * rows * ((f16 ? 2 : 1) * ((double)up_all * 4 / sfu_rate) + ovh);
                const double combine = (double)dv * c * ((double)up_all * 4 / sfu_rate + ovh) + c * lat;
                const double cost = (db ? std::max(dram, sfu) : dram + sfu) + combine;
                if (cost < best * 0.999) {
                    best = cost;
                    p.tile = up_all;
                    p.u_padded = up_all;
                    p.chunk = chunk;
                    p.cores_u = p.cores_v = 1;
                    p.cores_r = c;
                    p.footprint_bytes = fixed + chunk * row;
                    p.double_buffer = db;
                }
                break;
            }
        }
    }
    if (p.tile == 0) {
        if (options.tile > 0 || options.chunk > 0) {
            throw std::runtime_error("reduce: tile=" + std::to_string(options.tile) + " chunk=" + std::to_string(options.chunk) +
                                     " does not fit the scratchpad or exceeds the tiled extent (axis " + std::to_string(s.axis) +
                                     ")");
        }
        throw std::runtime_error("reduce: even one stick-wide tile of the reduction does not fit the scratchpad (axis " +
                                 std::to_string(s.axis) + ", extents " + std::to_string(s.d0) + "x" +
                                 std::to_string(s.d1) + "x" + std::to_string(s.d2) + ")");
    }
    return p;
}

void schedule_reduce_host(ReduceFuncs f, const ReduceShape &s, const Target &target) {
    // Whole vectors only (ShiftInwards, no masked loads; see schedule_elementwise_host).
    const int du = s.extent(s.kept(0));
    int vec = 1;
    while (vec * 2 <= std::min(du, target.natural_vector_size<float>())) vec *= 2;
    f.out.parallel(f.v);
    f.acc.compute_at(f.out, f.v);
    if (s.dtype.bits() == 16) {
        // Widen fp16 with whole vectors (no masked fp16 loads) before the guarded update.
        int wvec = 1;
        while (wvec * 2 <= std::min(s.d0, target.natural_vector_size<float>())) wvec *= 2;
        f.wide.compute_at(f.out, f.v);
        if (wvec > 1) f.wide.vectorize(f.x, wvec, TailStrategy::ShiftInwards);
    }
    if (vec > 1) {
        f.out.vectorize(f.u, vec, TailStrategy::ShiftInwards);
        // (Updates cannot shift inwards; the update's guarded tail is fp32 arithmetic.)
        f.acc.vectorize(f.u, vec, TailStrategy::GuardWithIf);
        f.acc.update().vectorize(f.u, vec, TailStrategy::GuardWithIf);
    }
}

namespace {

// Axes 1, 2, the reduced axis over p.cores_r cores (see reduce_schedule.h). rfactor turns the
// reduction into part(u, v, c) over each core's rows and acc(u, v) over c; `gathered`, a wrapper
// of part computed at the root in the scratchpad with c parallel, is the distributed buffer: the
// core loop, each core's part, gathered into core 0, where the output's tiles combine it.
void schedule_reduce_split_across_cores(ReduceFuncs f, Func in_staged, const ReduceShape &s, const ReduceSpyrePlan &p) {
    const int rows = s.reduced() / p.cores_r;
    Var c("c"), uo("uo"), ui("ui");
    RVar rc("rc"), rr("rr"), ro("ro"), ri("ri");
    // The output on core 0: tiles of u; acc combines the parts.
    f.out.split(f.u, uo, ui, p.tile, TailStrategy::RoundUp);
    stick_vectorize(f.out, ui);
    f.result.compute_at(f.out, uo).store_in(MemoryType::VTCM).vectorize(f.u, p.tile, TailStrategy::RoundUp);
    f.acc.compute_at(f.out, uo).store_in(MemoryType::VTCM).vectorize(f.u, p.tile, TailStrategy::RoundUp);
    f.acc.update().split(f.r.x, rc, rr, rows);
    Func part = f.acc.update().rfactor(rc, c);
    f.acc.update().reorder(f.u, rc, f.v).vectorize(f.u, p.tile, TailStrategy::RoundUp);
    // The distributed buffer: one core per c.
    Func gathered = part.in(f.acc);
    gathered.compute_root().store_in(MemoryType::VTCM).reorder(f.u, f.v, c).parallel(c)
        .vectorize(f.u, p.tile, TailStrategy::RoundUp);
    // Each core's partial: its rows in chunks, one SFU op per chunk.
    part.compute_at(gathered, c).store_in(MemoryType::VTCM).vectorize(f.u, p.tile, TailStrategy::RoundUp);
    part.update().split(rr, ro, ri, p.chunk).reorder(f.u, ri, ro, f.v).vectorize(f.u, p.tile, TailStrategy::RoundUp);
    if (in_staged.defined()) stage_sticks(in_staged, part, ro, p.in_lanes, p.double_buffer);
    f.wide.compute_at(part, ro).store_in(MemoryType::VTCM).vectorize(f.x, p.tile, TailStrategy::RoundUp);
    if (!in_staged.defined() && p.double_buffer) double_buffer_result(f.wide);
}

}  // namespace

void schedule_reduce_spyre(ReduceFuncs f, Func in_staged, const ReduceShape &s, const ReduceSpyrePlan &p) {
    if (p.cores_r > 1) {
        schedule_reduce_split_across_cores(f, in_staged, s, p);
        return;
    }
    const int dv = s.extent(s.kept(1));
    _halide_user_assert(p.u_padded % p.tile == 0 && (p.u_padded / p.tile) % p.cores_u == 0 && dv % p.cores_v == 0 &&
                        s.reduced() % p.chunk == 0)
        << "reduce Spyre schedule: the plan does not divide the padded extents";
    // Output split across the cores (v, then tiles of u); per core: v, tiles of u.
    const CoreSplit cores = split_across_cores(f.out, {{f.v, dv, 1, p.cores_v}, {f.u, p.u_padded, p.tile, p.cores_u}});
    Var uo("uo"), ui("ui");
    f.out.split(cores.serial_of(f.u), uo, ui, p.tile, TailStrategy::RoundUp);
    stick_vectorize(f.out, ui);
    f.result.compute_at(f.out, uo).store_in(MemoryType::VTCM).vectorize(f.u, p.tile, TailStrategy::RoundUp);
    // Double buffered: this tile's store overlaps the next tile's SFU work, and the
    // next staged input's DMA this one's.
    if (p.double_buffer) double_buffer_result(f.result);

    if (s.axis == 0) {
        // One scalar accumulator per row; the update's r loop is innermost (one
        // sfu.rowsum / rowmax per row over the staged row, widened first for fp16).
        f.acc.compute_at(f.out, uo).store_in(MemoryType::VTCM);
        stage_sticks(in_staged, f.out, uo, p.in_lanes, p.double_buffer);
        return;
    }
    // Across sticks: a tile-wide fp32 vector accumulator; per chunk of the
    // reduced axis, one SFU add over the chunk's rows.
    f.acc.compute_at(f.out, uo).store_in(MemoryType::VTCM).vectorize(f.u, p.tile, TailStrategy::RoundUp);
    RVar ro("ro"), ri("ri");
    f.acc.update().split(f.r.x, ro, ri, p.chunk).reorder(f.u, ri, ro, f.v).vectorize(f.u, p.tile);
    if (in_staged.defined()) stage_sticks(in_staged, f.acc, ro, p.in_lanes, p.double_buffer);
    f.wide.compute_at(f.acc, ro).store_in(MemoryType::VTCM).vectorize(f.x, p.tile, TailStrategy::RoundUp);
    if (!in_staged.defined() && p.double_buffer) double_buffer_result(f.wide);  // fp32: wide is the DMA
}

}  // namespace spyre
