// Schedules of the transpose (see transpose_schedule.h).
#include "transpose_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>

#include "spyre/machine.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

// Plans pad whatever the build (padded_extent is the identity in host builds).

}  // namespace

TransposeSpyrePlan plan_transpose_spyre(int x, int y, int batch, const Type &t, const TransposeSpyreOptions &options) {
    const MachineDescription &m = default_machine();
    TransposeSpyrePlan p;
    p.x = x;
    p.y = y;
    p.batch = std::max(1, batch);
    p.lanes = stick_lanes(t);
    // Square tiles of one or two sticks a side (4-16 KiB). Gathers move one
    // element per row whatever the tile and DRAM rows stay whole sticks; two
    // sticks halve the DMA/SFU hand-offs (about 1.5% faster on 2048^2 f16),
    // taken only when they add no padding.
    int tile = p.lanes;
    if (round_up(x, 2 * p.lanes) == round_up(x, p.lanes) && round_up(y, 2 * p.lanes) == round_up(y, p.lanes)) {
        tile = 2 * p.lanes;
    }
    if (options.tile > 0) tile = round_up(options.tile, p.lanes);
    const int64_t budget = m.scratchpad_bytes * 3 / 4;
    const int max_cores = usable_cores(options.max_cores);
    // The per-core loops over batch, y tiles and x tiles that run more than once, plus
    // the two loops of the gather inside a tile, must fit the hardware loop levels.
    // Too many (a large batch on few cores): a larger tile, unless it was given.
    auto plan_with_tile = [&](int t_edge) {
        p.tile = t_edge;
        p.xp = round_up(x, p.tile);
        p.yp = round_up(y, p.tile);
        // Staged tile, transposed tile and one gather temporary (a stick of f32 slots).
        p.footprint_bytes = 2 * (int64_t)p.tile * p.tile * t.bytes() + (int64_t)p.lanes * 4;
        // Batch first, then y tiles, then x tiles: even divisors only.
        const std::vector<int> c =
            plan_core_split("transpose", {{Var("b"), p.batch, 1}, {Var("y"), p.yp, p.tile}, {Var("x"), p.xp, p.tile}},
                            CoreSplitOptions{max_cores, 1});
        p.cb = c[0];
        p.cy = c[1];
        p.cx = c[2];
    };
    auto loops_per_core = [&] {
        int n = 0;
        for (int trip : {p.batch / p.cb, p.yp / p.tile / p.cy, p.xp / p.tile / p.cx}) n += trip > 1 ? 1 : 0;
        return n;
    };
    plan_with_tile(tile);
    while (options.tile == 0 && loops_per_core() + 2 > m.max_loop_depth &&
           2 * (int64_t)(2 * p.tile) * (2 * p.tile) * t.bytes() + (int64_t)p.lanes * 4 <= budget) {
        plan_with_tile(2 * p.tile);
    }
    _halide_user_assert(p.footprint_bytes <= budget)
        << "transpose Spyre schedule: tile=" << options.tile << " (" << p.tile << " x " << p.tile
        << " in whole sticks) does not fit the scratchpad (" << p.footprint_bytes << " bytes per core)";
    _halide_user_assert(loops_per_core() + 2 <= m.max_loop_depth)
        << "transpose Spyre schedule: each core loops over " << p.batch / p.cb << " batch entries, "
        << p.yp / p.tile / p.cy << " y tiles and " << p.xp / p.tile / p.cx << " x tiles of " << p.tile << " x " << p.tile
        << " (max_cores=" << options.max_cores << ", tile=" << options.tile << "): with the two loops of the gather "
        << "that is more than the machine's " << m.max_loop_depth << " hardware loop levels; use more cores or a larger tile";
    // Double buffering: both tiles in two copies, when the staging loop is even. Loops
    // of one iteration vanish, so that is the innermost per-core loop (yo, xo, batch)
    // of more than one iteration.
    int trip = 1;
    for (int t : {p.yp / p.tile / p.cy, p.xp / p.tile / p.cx, p.batch / p.cb}) {
        if (t > 1) {
            trip = t;
            break;
        }
    }
    const int64_t tiles = 2 * (int64_t)p.tile * p.tile * t.bytes();
    if (options.double_buffer && trip % 2 == 0 && p.footprint_bytes + tiles <= m.scratchpad_bytes * 3 / 4) {
        p.double_buffer = true;
        p.footprint_bytes += tiles;
    }
    return p;
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
    // Input tile by DMA, transposed tile by SFU gathers; out stores it by DMA.
    // Double buffered: the next tile's load and this tile's store overlap the gathers.
    stage_in_scratchpad(in_staged, f.out, yo, p.double_buffer);
    stage_in_scratchpad(f.transposed, f.out, yo, p.double_buffer);
}

}  // namespace spyre
