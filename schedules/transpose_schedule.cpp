// Schedules of the transpose (see transpose_schedule.h).
#include "transpose_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

int transposed_gather_sticks(const TransposeSpyrePlan &p) {
    // The most sticks that divide the tile's row and fit one SFU vector.
    const int64_t max_lanes = scheduling_machine().sfu_max_vector_lanes;
    const int row_sticks = p.tile / p.lanes;
    for (int sticks = row_sticks; sticks > 1; sticks--) {
        if (row_sticks % sticks == 0 && (int64_t)sticks * p.lanes <= max_lanes) return sticks;
    }
    return 1;
}

// The candidate space: square tiles of 2, 1, 4, 8 ... sticks a side (in that
// order of preference: two sticks halve the DMA/SFU hand-offs, about 1.5%
// faster on 2048^2 f16, one stick pads least), each with the even core split
// over batch, y tiles and x tiles that uses the most cores. Legality (the
// scratchpad, the hardware loop levels: the per-core loops plus the two of the
// gather), double buffering and cost are the framework's (planner.h).
TransposeSpyrePlan plan_transpose_spyre(int x, int y, int batch, const Type &t, const TransposeSpyreOptions &options) {
    TransposeSpyrePlan base;
    base.x = x;
    base.y = y;
    base.batch = std::max(1, batch);
    base.lanes = stick_lanes(t);
    const int max_cores = usable_cores(options.max_cores);
    std::vector<int> edges;
    if (options.tile > 0) {
        edges.push_back(round_up(options.tile, base.lanes));
    } else {
        edges = {2 * base.lanes, base.lanes};
        for (int e = 4 * base.lanes; e <= 2 * round_up(std::max(x, y), base.lanes); e *= 2) edges.push_back(e);
    }
    planning::PlanSearch<TransposeSpyrePlan> search("transpose");
    planning::Verdict last;
    for (int edge : edges) {
        TransposeSpyrePlan p = base;
        p.tile = edge;
        p.xp = round_up(x, edge);
        p.yp = round_up(y, edge);
        const std::vector<int> c = planning::even_core_split({p.batch, p.yp / edge, p.xp / edge}, max_cores);
        p.cb = c[0];
        p.cy = c[1];
        p.cx = c[2];
        const int yt = p.yp / edge / p.cy, xt = p.xp / edge / p.cx, bt = p.batch / p.cb;
        planning::TiledPlan tp;
        // The gathers: per row of the transposed tile, edge / gather_rows instructions of
        // gather_rows rows of one element each (one per row when the tile fits a vector).
        const int gather_rows = p.lanes * transposed_gather_sticks(p);
        tp.buffered_bytes = 2 * (int64_t)edge * edge * t.bytes();  // the staged and the transposed tile
        tp.fixed_bytes = (int64_t)gather_rows * 4;                  // one gather temporary (a vector of f32 slots)
        tp.staging_trip = planning::staging_trip({yt, xt, bt});     // innermost first: yo, xo, batch
        tp.per_core_trips = {bt, yt, xt};
        tp.inner_loops = 2;  // the gather's two loops
        tp.read_bytes = tp.write_bytes = (double)p.batch * p.xp * p.yp * t.bytes();
        tp.cores = p.cores();
        tp.tiles_per_core = (double)bt * yt * xt;
        tp.compute_cycles_per_tile = (double)edge * (edge / gather_rows) *
                                     scheduling_machine().sfu_instruction_cycles(1, gather_rows, t.bytes(),
                                                                                 MachineDescription::SfuCost::Simple);
        last = planning::judge(tp, options.double_buffer);
        p.double_buffer = last.double_buffer;
        p.footprint_bytes = last.footprint_bytes;
        search.offer(p, last, [&] {
            return "tiles " + std::to_string(p.tile) + " x " + std::to_string(p.tile) + ", cores " + std::to_string(p.cb) +
                   " x " + std::to_string(p.cy) + " x " + std::to_string(p.cx) + " (batch x y x x)";
        });
    }
    _halide_user_assert(search.found())
        << "transpose Spyre schedule: no tile fits (max_cores=" << options.max_cores << ", tile=" << options.tile
        << "): " << last.reason << "; use more cores or another tile";
    return planning::with_estimate(search);
}

void schedule_transpose_host(TransposeFuncs f, const Target &target) {
    Var yo("yo"), xo("xo"), yi("yi"), xi("xi"), tile("tile");
    const int vec = target.natural_vector_size<float>();
    f.out.tile(f.y, f.x, yo, xo, yi, xi, vec, vec, TailStrategy::GuardWithIf);
    // float16 stays scalar: the JIT's predicated float16 vectors of ragged
    // tiles raise SIGILL on this build machine (Halide 14, AVX-512 host).
    if (f.out.output_types()[0] == Float(32)) f.out.vectorize(yi);
    if (f.batched) {
        f.out.fuse(xo, f.b, tile).parallel(tile);
    } else {
        f.out.parallel(xo);
    }
}

void schedule_transpose_spyre(TransposeFuncs f, Func in_staged, const TransposeSpyrePlan &p) {
    // out(y, x, b): y is out's stick dimension, x its rows.
    std::vector<CoreSplitDim> dims;
    if (f.batched) dims.push_back({f.b, p.batch, 1, p.cb});
    dims.push_back({f.y, p.yp, p.tile, p.cy});
    dims.push_back({f.x, p.xp, p.tile, p.cx});
    const CoreSplit cores = split_across_cores(f.out, dims);
    Var yo("yo"), xo("xo"), yi("yi"), xi("xi");
    const Var yr = cores.serial_of(f.y), xr = cores.serial_of(f.x);
    f.out.tile(yr, xr, yo, xo, yi, xi, p.tile, p.tile, TailStrategy::RoundUp);
    if (f.batched) {
        f.out.reorder(yi, xi, yo, xo, cores.serial_of(f.b));
    } else {
        f.out.reorder(yi, xi, yo, xo);
    }
    stick_vectorize(f.out, yi);
    // Input tile by DMA, transposed tile by SFU gathers, one per row of the tile
    // (p.tile elements, a column of the staged tile: transposed_gather_sticks);
    // out stores it by DMA. Double buffered: the next tile's load and this tile's
    // store overlap the gathers.
    stage_in_scratchpad(in_staged, f.out, yo, p.double_buffer);
    stage_in_scratchpad(f.transposed, f.out, yo, p.double_buffer, transposed_gather_sticks(p));
}

}  // namespace spyre
