// Schedules of the reductions (see reduce_schedule.h).
//
// Performance shape (gen_reduce dtype=float16 d0=1024 d1=2048 d2=4, 16 MiB
// read), 32 cores: axis 0 (sum, row sums, rows staged one at a time and
// double-buffered) 109.2 us simulated against a DRAM roofline of 108.7 us;
// axis 1 (mean, across sticks) 110.3 / 108.7 us; axis 2 (max, 4 MiB written)
// 157.3 / 138.9 us.
#include "reduce_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

bool reduce_lane_steps(const ReduceShape &shape) {
    const int lanes = stick_lanes(shape.dtype);
    return shape.axis == 0 && shape.d0 % lanes == 0 && shape.d0 > lanes;
}

namespace {

// A staged copy of a DRAM tensor: whole sticks, RoundUp (the region it covers
// may be narrower than a stick; the tensor is padded to whole sticks).
// Two copies when double buffered.
void stage_sticks(Func f, Func consumer, const VarOrRVar &at, int lanes, bool double_buffered) {
    if (at.is_rvar) f.compute_at(consumer, at.rvar);
    else f.compute_at(consumer, at.var);
    f.store_in(MemoryType::VTCM).vectorize(f.args()[0], lanes, TailStrategy::RoundUp);
    if (double_buffered) double_buffer_result(f);
}

// What every candidate of one shape shares: the extents, the sizes and the SFU
// work of one reduced row, costed by the timing model's own function
// (MachineDescription::sfu_instruction_cycles) for the instructions
// instruction selection emits: axis 0 one sfu.rowsum / rowmax per row (fp16
// widened by one sfu.cast first); axes 1, 2 per staged chunk one SFU add /
// max over its rows (fp16 widened by one cast of the chunk).
struct ReduceCandidates {
    using SfuCost = MachineDescription::SfuCost;
    const MachineDescription &m = scheduling_machine();
    ReduceShape s;
    ReduceSpyreOptions options;
    int eb = 2, lanes = 64, n = 1, du = 1, dv = 1, d0p = 1, max_cores = 1;
    bool f16 = true;
    planning::PlanSearch<ReduceSpyrePlan> search{"reduce"};
    planning::Verdict last;

    // One candidate: the framework judges it and offers it to the search. True if two
    // copies of its buffered bytes fit the budget (smaller chunks of the same tile only
    // add transfers of a few sticks each, so axes 1, 2 stop there).
    bool offer(ReduceSpyrePlan p, planning::TiledPlan tp) {
        tp.read_bytes = s.axis == 0 ? (double)d0p * p.u_padded * dv * eb : (double)n * p.u_padded * dv * eb;
        tp.write_bytes = (double)p.u_padded * dv * eb;
        tp.pipeline_end_exposed = true;  // a reduction's traffic is its loads
        last = planning::judge(tp, options.double_buffer);
        p.double_buffer = last.double_buffer;
        p.footprint_bytes = last.footprint_bytes;
        search.offer(p, last, [&] {
            return "tile " + std::to_string(p.tile) + " lanes, chunk " + std::to_string(p.chunk) + ", cores " +
                   std::to_string(p.cores_u) + " x " + std::to_string(p.cores_v) + " x " + std::to_string(p.cores_r) +
                   " (u x v x reduced axis)";
        });
        return last.legal && 2 * tp.buffered_bytes + tp.fixed_bytes <= planning::scratchpad_budget();
    }

    // SFU cycles of widening (fp16) and reducing `rows` rows of `width` elements.
    double reduce_cycles(double width, double rows, SfuCost reduce) const {
        return (f16 ? m.sfu_instruction_cycles(width, rows, 4, SfuCost::Simple) : 0.0) +
               m.sfu_instruction_cycles(width, rows, 4, reduce);
    }

    // Axis 0: per output tile of `tile` rows of y, the rows staged `chunk` at a
    // time (the staging loop: chunks, tiles of u, v), each reduced by one
    // sfu.rowsum / rowmax into its scalar; the result tile stored after them.
    void offer_rows(ReduceSpyrePlan p, int chunk, int u_trip, int v_trip) {
        p.chunk = chunk;
        const int chunks = p.tile / chunk;
        planning::TiledPlan tp;
        // The staged rows (and the result when it moves with the same loop); one fp32 row
        // temporary (fp16), the accumulators.
        const bool lane_steps = reduce_lane_steps(s);
        tp.buffered_bytes = (int64_t)chunk * d0p * eb + (chunks == 1 ? (int64_t)p.tile * eb : 0);
        tp.fixed_bytes = (f16 ? (int64_t)d0p * 4 : 0) + (int64_t)p.tile * 4 + (chunks == 1 ? 0 : (int64_t)p.tile * eb) +
                         (lane_steps ? (int64_t)chunk * lanes * 4 : 0);  // the chunk's lane vectors
        tp.staging_trip = planning::staging_trip({chunks, u_trip, v_trip});
        tp.per_core_trips = {chunks, u_trip, v_trip};
        tp.inner_loops = chunk > 1 ? 1 : 0;  // the rows of a chunk
        tp.cores = p.cores();
        tp.tiles_per_core = (double)chunks * u_trip * v_trip;
        tp.waited_transfers_per_tile = 1 + 1.0 / chunks;  // the chunk's load, the tile's store
        // One row reduction per row; or (lane_steps) per stick of the rows one elementwise op
        // over the chunk's rows, then one row reduction of a stick per row.
        tp.compute_cycles_per_tile =
            lane_steps ? (d0p / lanes) * reduce_cycles(lanes, chunk, SfuCost::Simple) +
                               m.sfu_instruction_cycles(lanes, chunk, 4, SfuCost::RowReduce)
                         : chunk * reduce_cycles(s.d0, 1, SfuCost::RowReduce);
        offer(p, tp);
    }

    // Axes 1, 2: per output tile of `tile` lanes, the reduced axis staged `chunk`
    // rows at a time (the staging loop: chunks, tiles of u, v), accumulated into the
    // tile-wide fp32 accumulator by one SFU op over the chunk's rows.
    bool offer_chunks(ReduceSpyrePlan p, int chunk, int u_trip, int v_trip) {
        p.chunk = chunk;
        const int chunks = n / chunk;
        planning::TiledPlan tp;
        // The staged chunk and the result tile; the chunk's fp32 copy (fp16), the accumulator.
        tp.buffered_bytes = (int64_t)chunk * p.tile * eb + (int64_t)p.tile * eb;
        tp.fixed_bytes = (f16 ? (int64_t)chunk * p.tile * 4 : 0) + (int64_t)p.tile * 4;
        // Both stages double-buffer or neither: the result's loop (tiles of u, v) must be even too.
        tp.staging_trip = planning::staging_trip({u_trip, v_trip}) % 2 == 0 ? planning::staging_trip({chunks, u_trip, v_trip}) : 1;
        tp.per_core_trips = {chunks, u_trip, v_trip};
        tp.cores = p.cores();
        tp.tiles_per_core = (double)chunks * u_trip * v_trip;
        tp.waited_transfers_per_tile = 1 + 1.0 / chunks;
        tp.compute_cycles_per_tile = reduce_cycles(p.tile, chunk, SfuCost::Simple);
        return offer(p, tp);
    }

    // Axes 1, 2, the reduced axis over `c` cores: each reduces n / c rows in chunks into
    // its part of a buffer on core 0, which gathers the parts over the ring and combines
    // them (the fixed cost after the tile loop).
    void offer_split(ReduceSpyrePlan p, int c, int chunk) {
        const int rows = n / c;
        p.chunk = chunk;
        p.cores_r = c;
        const int64_t part = (int64_t)p.u_padded * dv * 4;  // one core's fp32 partial results
        planning::TiledPlan tp;
        tp.buffered_bytes = (int64_t)chunk * p.u_padded * eb;
        // Core 0 holds every part, its own partial, the combined accumulator and the result tile.
        tp.fixed_bytes = (int64_t)c * part + part + (int64_t)p.u_padded * (4 + eb) + (f16 ? (int64_t)chunk * p.u_padded * 4 : 0);
        tp.staging_trip = planning::staging_trip({rows / chunk, dv});
        tp.per_core_trips = {rows / chunk, dv};
        tp.cores = c;
        tp.tiles_per_core = (double)(rows / chunk) * dv;
        tp.waited_transfers_per_tile = 1;
        tp.compute_cycles_per_tile = reduce_cycles(p.u_padded, chunk, SfuCost::Simple);
        // The gathers (each part over the ring, one latency each) and one SFU op per part and v.
        tp.fixed_cycles = c * (m.dma_latency_cycles + (double)part / m.ring_bytes_per_cycle) +
                          (double)dv * c * m.sfu_instruction_cycles(p.u_padded, 1, 4, SfuCost::Simple);
        offer(p, tp);
    }
};

}  // namespace

// The candidate space: tiles of 1 to 64 sticks of the output's dim 0 (at most one SFU
// vector), each with the core split of the most cores (the framework's); per tile,
// axis 0: chunks of the tile's rows staged at once (every divisor of the tile, so the
// staging loop can be double-buffered where a whole tile per core leaves it one trip);
// axes 1, 2: chunks of the reduced axis (every divisor that fits a hardware loop), and,
// when that output leaves at least half the cores idle, the reduced axis split over the
// cores instead. Legality, double buffering, cost and search are the framework's
// (planner.h).
ReduceSpyrePlan plan_reduce_spyre(const ReduceShape &s, const ReduceSpyreOptions &options) {
    ReduceCandidates k;
    k.s = s;
    k.options = options;
    k.eb = s.dtype.bytes();
    k.f16 = s.dtype.bits() == 16;
    k.lanes = stick_lanes(s.dtype);
    k.n = s.reduced();
    k.du = s.extent(s.kept(0));
    k.dv = s.extent(s.kept(1));
    k.d0p = round_up(s.d0, k.lanes);
    k.max_cores = usable_cores(options.max_cores);
    const int n = k.n, dv = k.dv;
    if (options.tile > 0 && options.tile % k.lanes != 0) {
        throw std::runtime_error("reduce: tile=" + std::to_string(options.tile) + " must be a whole number of sticks (" +
                                 std::to_string(k.lanes) + " lanes of the output's dim 0)");
    }
    if (options.chunk > 0 && s.axis != 0 && n % options.chunk != 0) {
        throw std::runtime_error("reduce: chunk=" + std::to_string(options.chunk) + " must divide the reduced extent (" +
                                 std::to_string(n) + ")");
    }
    ReduceSpyrePlan base;
    base.in_lanes = k.lanes;
    // Tiles are whole sticks of the output's dim 0, at most one SFU vector (sfu_max_vector_lanes()),
    // offered largest first (fewer, larger transfers win ties).
    for (int tile = std::max(k.lanes, std::min(sfu_max_vector_lanes(), round_up(k.du, k.lanes) / k.lanes * k.lanes));
         tile >= k.lanes; tile -= k.lanes) {
        if (options.tile > 0 && tile != options.tile) continue;
        ReduceSpyrePlan p = base;
        p.tile = tile;
        p.u_padded = round_up(k.du, tile);
        const std::vector<int> split = planning::even_core_split({p.u_padded / tile, dv}, k.max_cores);
        p.cores_u = split[0];
        p.cores_v = split[1];
        const int u_trip = p.u_padded / tile / p.cores_u, v_trip = dv / p.cores_v;
        const std::vector<int> chunks = divisors(s.axis == 0 ? tile : n);
        for (auto c = chunks.rbegin(); c != chunks.rend(); ++c) {
            if (options.chunk > 0 && *c != options.chunk) continue;
            if (s.axis == 0) {
                k.offer_rows(p, *c, u_trip, v_trip);
            } else if (*c <= k.m.max_loop_trip_count) {
                // Axes 1, 2: chunks down to the largest whose two copies fit.
                if (k.offer_chunks(p, *c, u_trip, v_trip)) break;
            }
        }
    }
    // Axes 1, 2 with a small output (the plans above leave at least half the cores idle, or the
    // split is asked for): split the reduced axis over the cores instead.
    const int up_all = round_up(k.du, k.lanes);
    const bool cores_idle = !k.search.found() || k.search.verdict().cores * 2 <= k.max_cores;
    if (s.axis != 0 && options.reduce_cores != 1 && (options.reduce_cores > 1 || cores_idle) && up_all <= sfu_max_vector_lanes() &&
        (options.tile == 0 || options.tile == up_all)) {
        if (options.reduce_cores > 1 && n % options.reduce_cores != 0) {
            throw std::runtime_error("reduce: reduce_cores=" + std::to_string(options.reduce_cores) +
                                     " must divide the reduced extent (" + std::to_string(n) + ")");
        }
        ReduceSpyrePlan p = base;
        p.tile = p.u_padded = up_all;
        for (int c : divisors(n)) {
            if (c < 2 || c > k.max_cores || (options.reduce_cores > 1 && c != options.reduce_cores)) continue;
            const std::vector<int> chunks = divisors(n / c);
            for (auto d = chunks.rbegin(); d != chunks.rend(); ++d) {
                if ((options.chunk == 0 || *d == options.chunk) && *d <= k.m.max_loop_trip_count) k.offer_split(p, c, *d);
            }
        }
    }
    if (!k.search.found()) {
        if (options.tile > 0 || options.chunk > 0) {
            throw std::runtime_error("reduce: tile=" + std::to_string(options.tile) + " chunk=" + std::to_string(options.chunk) +
                                     " does not fit the scratchpad or exceeds the tiled extent (axis " + std::to_string(s.axis) +
                                     "): " + k.last.reason);
        }
        throw std::runtime_error("reduce: even one stick-wide tile of the reduction does not fit the scratchpad (axis " +
                                 std::to_string(s.axis) + ", extents " + std::to_string(s.d0) + "x" +
                                 std::to_string(s.d1) + "x" + std::to_string(s.d2) + "): " + k.last.reason);
    }
    return planning::with_estimate(k.search);
}

void schedule_reduce_host(ReduceFuncs f, const ReduceShape &s, const Target &target) {
    // Whole vectors only (ShiftInwards, no masked loads; see schedule_elementwise_host).
    const int du = s.extent(s.kept(0));
    int vec = 1;
    while (vec * 2 <= std::min(du, target.natural_vector_size<float>())) vec *= 2;
    f.out.parallel(f.v);
    f.acc.compute_at(f.out, f.v);
    if (f.lane.defined()) f.lane.compute_at(f.out, f.v);
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
                        (s.axis == 0 ? p.tile : s.reduced()) % p.chunk == 0)
        << "reduce Spyre schedule: the plan does not divide the padded extents";
    // Output split across the cores (v, then tiles of u); per core: v, tiles of u.
    const CoreSplit cores = split_across_cores(f.out, {{f.v, dv, 1, p.cores_v}, {f.u, p.u_padded, p.tile, p.cores_u}});
    Var uo("uo"), ui("ui");
    f.out.split(cores.serial_of(f.u), uo, ui, p.tile, TailStrategy::RoundUp);
    stick_vectorize(f.out, ui);
    f.result.compute_at(f.out, uo).store_in(MemoryType::VTCM).vectorize(f.u, p.tile, TailStrategy::RoundUp);
    // Double buffered: this tile's store overlaps the next tile's SFU work, and the
    // next staged input's DMA this one's (axis 0 in chunks of the tile: only the input).
    const bool row_chunks = s.axis == 0 && p.chunk < p.tile;
    if (p.double_buffer && !row_chunks) double_buffer_result(f.result);

    if (s.axis == 0) {
        // One scalar accumulator per row; the update's r loop is innermost (one
        // sfu.rowsum / rowmax per row over the staged row, widened first for fp16).
        // The tile's rows are staged p.chunk at a time (the update's loop over them split).
        f.acc.compute_at(f.out, uo).store_in(MemoryType::VTCM);
        Var yo("yo"), yi("yi");
        if (row_chunks) {
            f.acc.update().split(f.u, yo, yi, p.chunk);
            stage_sticks(in_staged, f.acc, yo, p.in_lanes, p.double_buffer);
        } else {
            stage_sticks(in_staged, f.out, uo, p.in_lanes, p.double_buffer);
        }
        if (f.lane.defined()) {
            // Per stick of the rows, the lanes' running reduction (one SFU op over the chunk's
            // rows); then acc reduces each row's stick (one row reduction per row).
            const Var l = f.lane.args()[0];
            f.lane.bound(l, 0, p.in_lanes);
            if (row_chunks) f.lane.compute_at(f.acc, yo);
            else f.lane.compute_at(f.out, uo);
            f.lane.store_in(MemoryType::VTCM).vectorize(l, p.in_lanes);
            f.lane.update().reorder(l, f.u, f.rs.x).vectorize(l, p.in_lanes);
        }
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
