// Schedules of the elementwise kernels (see elementwise_schedule.h).
//
// Performance shape (gen_elementwise op=add dtype=float16 d0=1024 d1=2048 d2=2,
// 8 MiB per tensor, 24 MiB moved): tiles of 64 rows x 1024 lanes on 32 cores,
// one SFU vector per row: 223.0 us simulated against a DRAM roofline of 215.9 us
// (96.8%). gelu at the same shape: 186.5 / 160.0 us (85.8%; the SFU work does
// not overlap DRAM within a core's synchronous tile loop).
#include "elementwise_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
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

// SFU instructions per row vector of the op (fp32 work): the simple ones and
// the transcendentals (exp, the division, erf), each costed by the timing model.
struct SfuPasses {
    int simple, transcendental;
};
SfuPasses sfu_passes(const ElementwiseShape &s) {
    // fp16: a's row widened once (the unary ops read it through their wide Func),
    // b's or the up half's too, and the result narrowed.
    const int casts = s.dtype.bits() == 16 ? (s.binary() || s.gated() ? 3 : 2) : 0;
    if (s.op == "gelu") return {casts + 8, 1};
    if (s.gated()) return {casts + 3, 2};  // silu, then the product with the up half
    if (s.op == "silu") return {casts + 2, 2};  // exp and the division
    return {casts + 1, 0};
}

// Fp32 scratchpad temporaries of one SFU expression tree (inner nodes), in row vectors.
// (gelu and silu also keep one row of each intermediate Func.)
int sfu_temporaries(const ElementwiseShape &s) {
    if (s.op == "gelu") return 6 + 2;
    if (s.op == "silu") return 4 + 1;
    if (s.gated()) return 6 + 1;
    return 3;
}

}  // namespace

// The candidate space: every tile of ty rows (largest first), with the core split
// over (row tiles, z) that uses the most cores, the one that leaves each core an
// even number of tiles (what double buffering needs), and, for ops that read no
// other column (not swiglu), where there are fewer rows than cores or b is a row every
// core along the rows would load whole, the splits that also cut the columns into
// whole-stick slices: columns last (the most cores over the rows) and columns
// first (b's row loaded once per row range, in slices). Legality, double buffering and cost are the
// framework's (planner.h).
ElementwiseSpyrePlan plan_elementwise_spyre(const ElementwiseShape &s, const ElementwiseSpyreOptions &options) {
    using MD = MachineDescription;
    const MachineDescription &m = scheduling_machine();
    const int eb = s.dtype.bytes();
    ElementwiseSpyrePlan base;
    base.lanes = stick_lanes(s.dtype);
    base.d0p = round_up(s.d0, base.lanes);

    const bool b_rows = s.binary() && !s.broadcast_b[1];  // b moves with y
    const int a_widths = s.gated() ? 2 : 1;
    const SfuPasses passes = sfu_passes(s);
    const int max_cores = usable_cores(options.max_cores);
    const int64_t budget = planning::scratchpad_budget();
    const int sticks = base.d0p / base.lanes;
    // The scratchpad bytes of one row of a core's tile, and those that do not
    // grow with the rows, for `columns` columns per core.
    auto b_row_bytes = [&](int columns) -> int64_t {
        return s.binary() ? (s.broadcast_b[0] ? m.stick_bytes : (int64_t)columns * eb) : 0;
    };
    auto per_row_bytes = [&](int columns) { return (a_widths + 1) * (int64_t)columns * eb + (b_rows ? b_row_bytes(columns) : 0); };
    auto fixed_bytes = [&](int columns, int row_vector) {
        return (int64_t)sfu_temporaries(s) * row_vector * 4 + (b_rows ? 0 : b_row_bytes(columns));
    };
    const int max_rows = (int)std::max<int64_t>(
        0, std::min<int64_t>((budget - fixed_bytes(base.d0p, planning::row_vector_lanes(base.d0p, base.lanes))) /
                                 per_row_bytes(base.d0p),
                             s.d1));
    const bool column_splits = !s.gated() && sticks > 1;
    // b with one value per row (broadcast along d0 alone) can be packed along the rows.
    const bool b_packable = s.binary() && s.broadcast_b[0] && !s.broadcast_b[1];
    planning::PlanSearch<ElementwiseSpyrePlan> search("elementwise");
    for (int ty = std::max(max_rows, column_splits ? 1 : 0); ty >= 1; ty--) {  // larger tiles first (ties go to them)
        if (options.tile_rows > 0 && ty != options.tile_rows) continue;
        const int d1p = round_up(s.d1, ty), tiles = d1p / ty;
        // Splits as {cores along the row tiles, along z, along the columns}.
        std::vector<std::vector<int>> splits;
        auto add = [&](std::vector<int> split) {
            if (!split.empty() && std::find(splits.begin(), splits.end(), split) == splits.end()) splits.push_back(split);
        };
        auto with_columns = [](std::vector<int> rows_z) {
            if (!rows_z.empty()) rows_z.push_back(1);
            return rows_z;
        };
        add(with_columns(planning::even_core_split({tiles, s.d2}, max_cores)));
        add(with_columns(planning::even_core_split(
            {tiles, s.d2}, max_cores, [&](const std::vector<int> &c) { return (tiles / c[0]) % 2 == 0; })));
        // The columns are split only where that gains: there are fewer rows than cores, or
        // a b row that every core along the rows loads whole would be loaded in slices.
        const bool rows_leave_cores_idle = (int64_t)s.d1 * s.d2 < max_cores;
        const bool b_row_per_core = s.binary() && s.broadcast_b[1] && !s.broadcast_b[0];
        if (column_splits && (rows_leave_cores_idle || b_row_per_core)) {
            add(planning::even_core_split({tiles, s.d2, sticks}, max_cores));
            std::vector<int> columns_first = planning::even_core_split({sticks, tiles, s.d2}, max_cores);
            if (!columns_first.empty()) add({columns_first[1], columns_first[2], columns_first[0]});
        }
        for (const std::vector<int> &split : splits) {
            ElementwiseSpyrePlan p = base;
            p.tile_rows = ty;
            p.d1p = d1p;
            p.cores_d1 = split[0];
            p.cores_d2 = split[1];
            p.cores_d0 = split[2];
            p.b_packed = b_packable && p.cores_d0 == 1 && (d1p / p.cores_d1) % base.lanes == 0 &&
                         options.device_order == "zyx";
            const int columns = p.columns();
            // One SFU instruction covers a core's row when it has at most sfu_max_vector_lanes()
            // lanes; longer rows are cut into the largest stick multiple that divides them.
            p.row_vector = planning::row_vector_lanes(columns, base.lanes);
            const double row_sfu =
                passes.simple * planning::sfu_row_cycles(columns, p.row_vector, 4, MD::SfuCost::Simple) +
                passes.transcendental * planning::sfu_row_cycles(columns, p.row_vector, 4, MD::SfuCost::Transcendental);
            planning::TiledPlan t;
            // Packed, b is a core's rows of values once per z (no stick per row with the tile).
            const int64_t packed_b = p.b_packed ? (int64_t)(d1p / p.cores_d1) * eb : 0;
            t.buffered_bytes = (per_row_bytes(columns) - (p.b_packed ? b_row_bytes(columns) : 0)) * ty;
            t.fixed_bytes = fixed_bytes(columns, p.row_vector) + packed_b;
            t.staging_trip = tiles / p.cores_d1;  // the stages sit in the tile loop of y
            const double out_bytes = (double)s.d2 * d1p * p.d0p * eb;
            // b's row slice with every row (a whole stick per row for a b broadcast along x,
            // on each core along x); a b that does not move with y is staged once per z on
            // each core (once per core if it does not move with z either).
            const double b_bytes = p.b_packed        ? (double)s.d2 * d1p * eb
                                   : b_rows            ? (double)s.d2 * d1p * b_row_bytes(columns) * p.cores_d0
                                   : s.broadcast_b[2] ? (double)p.cores() * b_row_bytes(columns)
                                                      : (double)p.cores_d1 * p.cores_d0 * s.d2 * b_row_bytes(columns);
            t.read_bytes = a_widths * out_bytes + b_bytes;
            t.write_bytes = out_bytes;
            t.cores = p.cores();
            t.tiles_per_core = (double)tiles / p.cores_d1 * s.d2 / p.cores_d2;
            t.compute_cycles_per_tile = ty * row_sfu;
            const planning::Verdict v = planning::judge(t, options.double_buffer);
            p.double_buffer = v.double_buffer;
            p.footprint_bytes = v.footprint_bytes;
            search.offer(p, v, [&] {
                return "tiles of " + std::to_string(p.tile_rows) + " rows, cores " + std::to_string(p.cores_d2) + " x " +
                       std::to_string(p.cores_d1) + " x " + std::to_string(p.cores_d0) + " (d2 x d1 x d0)";
            });
        }
    }
    if (!search.found()) {
        if (options.tile_rows > 0) {
            throw std::runtime_error("elementwise: tile_rows=" + std::to_string(options.tile_rows) + " rows of " +
                                     std::to_string(s.d0) + " elements do not fit the scratchpad, or exceed d1=" +
                                     std::to_string(s.d1));
        }
        throw std::runtime_error("elementwise: a row of " + std::to_string(s.d0) + " elements does not fit the scratchpad (" +
                                 std::to_string(per_row_bytes(base.d0p) +
                                                fixed_bytes(base.d0p, planning::row_vector_lanes(base.d0p, base.lanes))) +
                                 " bytes of " + std::to_string(budget) + ")");
    }
    ElementwiseSpyrePlan chosen = planning::with_estimate(search);
    chosen.device_order = options.device_order;
    return chosen;
}

void schedule_elementwise_host(ElementwiseFuncs f, const ElementwiseShape &s, const Target &target) {
    // Vectors no wider than a row, tails by ShiftInwards: no predicated (masked)
    // loads. Halide 14 takes some AVX-512 hosts (AMD Zen 4) for Sapphire Rapids,
    // and LLVM then lowers masked float16 loads with AVX512-FP16 instructions those
    // hosts do not have (SIGILL).
    int vec = 1;
    while (vec * 2 <= std::min(s.d0, target.natural_vector_size<float>())) vec *= 2;
    Var yz("yz");
    f.out.fuse(f.y, f.z, yz).parallel(yz, 8, TailStrategy::GuardWithIf);
    if (vec > 1) f.out.vectorize(f.x, vec, TailStrategy::ShiftInwards);
}

void schedule_elementwise_spyre(ElementwiseFuncs f, Func a_staged, Func b_staged, const ElementwiseShape &s,
                                const ElementwiseSpyrePlan &p) {
    _halide_user_assert(p.d1p % p.tile_rows == 0 && (p.d1p / p.tile_rows) % p.cores_d1 == 0 && s.d2 % p.cores_d2 == 0 &&
                        p.d0p % (p.cores_d0 * p.lanes) == 0 && p.columns() % p.row_vector == 0 &&
                        (p.cores_d0 == 1 || !s.gated()))
        << "elementwise Spyre schedule: the plan does not divide the padded extents";
    // Rows split across the cores (z, then tiles of y, then whole-stick slices of
    // the columns); per core: z, tiles, rows.
    std::vector<CoreSplitDim> dims = {{f.z, s.d2, 1, p.cores_d2}, {f.y, p.d1p, p.tile_rows, p.cores_d1}};
    if (p.cores_d0 > 1) dims.push_back({f.x, p.d0p, p.columns(), p.cores_d0});
    const CoreSplit cores = split_across_cores(f.out, dims);
    Var yo("yo"), yi("yi");
    const Var zr = cores.serial_of(f.z);
    f.out.split(cores.serial_of(f.y), yo, yi, p.tile_rows, TailStrategy::RoundUp);
    stick_vectorize(f.out, p.cores_d0 > 1 ? cores.serial_of(f.x) : f.x);

    // Input tiles in scratchpad (DMA). A b that does not move with y is staged
    // once per z (once per core if it does not move with z either).
    // Double buffered: the next tile's DMA overlaps this tile's SFU work.
    auto stage = [&](Func g, const VarOrRVar &at) { stage_in_scratchpad(g, f.out, at, p.double_buffer); };
    stage(a_staged, yo);
    if (b_staged.defined()) {
        const Var at = !s.broadcast_b[1] ? yo : !s.broadcast_b[2] ? zr : cores.core;
        if (p.b_packed) {
            // Packed along the rows: the core's rows of b (whole sticks), once per z; the SFU
            // reads each row's value as a scalar.
            const std::vector<Var> args = b_staged.args();
            b_staged.compute_at(f.out, zr).store_in(MemoryType::VTCM).reorder_storage(args[1], args[0], args[2]).vectorize(
                args[1], p.lanes, TailStrategy::RoundUp);
        } else if (s.broadcast_b[0]) {
            // One element per row, staged as one whole stick (b is padded to a stick
            // along d0); RoundUp, since the stick is wider than the element it holds.
            b_staged.compute_at(f.out, at).store_in(MemoryType::VTCM).vectorize(b_staged.args()[0], p.lanes,
                                                                                 TailStrategy::RoundUp);
            if (p.double_buffer && !s.broadcast_b[1]) double_buffer_result(b_staged);
        } else if (!s.broadcast_b[1]) {
            stage(b_staged, at);
        } else {
            stage_in_scratchpad(b_staged, f.out, at);
        }
    }

    // The result tile on the SFU, one vector of whole sticks per row; the
    // output copies it to DRAM (DMA).
    f.result.compute_at(f.out, yo).store_in(MemoryType::VTCM).vectorize(f.x, p.row_vector, TailStrategy::RoundUp);
    if (p.double_buffer) double_buffer_result(f.result);  // this tile's store overlaps the next tile's SFU work
    for (Func g : f.intermediates) {
        g.compute_at(f.result, f.y).store_in(MemoryType::VTCM).vectorize(f.x, p.row_vector, TailStrategy::RoundUp);
    }
}

}  // namespace spyre
