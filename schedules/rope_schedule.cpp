// Schedules of rotary position embedding (see rope_schedule.h).
#include "rope_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "spyre/machine.h"
#include "planner.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

// The candidate space: tiles of tile_tokens tokens (from the most that still
// give every core a tile, down to one token), each with the even core splits
// over token tiles and heads of at least half the most cores. Per tile and
// core: the x and result tiles of its heads and the cos and sin rows.
// Legality, double buffering and cost are the framework's (planner.h).
RopeSpyrePlan plan_rope_spyre(int d, int heads, int tokens, const Type &t, const RopeSpyreOptions &options) {
    using MD = MachineDescription;
    const int max_cores = usable_cores(options.max_cores);
    const int eb = t.bytes();
    RopeSpyrePlan base;
    base.d = d;
    base.heads = heads;
    base.tokens = tokens;
    base.lanes = stick_lanes(t);
    // Per (token, head): each half of the result is x1 cos - x2 sin or x2 cos + x1 sin
    // (two products and a sum, fp32), plus the casts of fp16.
    const int casts = t.bits() == 16 ? 3 : 0;
    const double per_token_head =
        2 * (3 + casts) * scheduling_machine().sfu_instruction_cycles(d / 2, 1, 4, MD::SfuCost::Simple);
    planning::PlanSearch<RopeSpyrePlan> search("rope");
    planning::Verdict last;
    // A forced tile is the only one offered, even above the tokens a core gets.
    const int most = options.tile_tokens > 0 ? options.tile_tokens : std::max(1, (tokens + max_cores - 1) / max_cores);
    for (int tt = most; tt >= 1; tt--) {
        if (options.tile_tokens > 0 && tt != options.tile_tokens) continue;
        const int tokens_padded = round_up(tokens, tt), tiles = tokens_padded / tt;
        for (const std::vector<int> &c : planning::even_core_splits({tiles, heads}, max_cores)) {
            RopeSpyrePlan p = base;
            p.tile_tokens = tt;
            p.tokens_padded = tokens_padded;
            p.ct = c[0];
            p.ch = c[1];
            const int heads_per_core = heads / p.ch, tiles_per_core = tiles / p.ct;
            planning::TiledPlan tp;
            tp.buffered_bytes = (int64_t)tt * ((int64_t)2 * heads_per_core * d * eb + (int64_t)d * eb);
            tp.staging_trip = tiles_per_core;
            tp.read_bytes = (double)p.tokens_padded * ((double)heads * d + (double)p.ch * d) * eb;  // x; cos, sin per head group
            tp.write_bytes = (double)p.tokens_padded * heads * d * eb;
            tp.cores = p.ct * p.ch;
            tp.tiles_per_core = tiles_per_core;
            tp.waited_transfers_per_tile = 2;
            tp.compute_cycles_per_tile = (double)tt * heads_per_core * per_token_head;
            last = planning::judge(tp, options.double_buffer);
            p.double_buffer = last.double_buffer;
            p.footprint_bytes = last.footprint_bytes;
            search.offer(p, last, [&] {
                return "tiles of " + std::to_string(tt) + " tokens, cores " + std::to_string(p.ct) + " x " +
                       std::to_string(p.ch) + " (tokens x heads)";
            });
        }
    }
    if (!search.found()) {
        throw std::runtime_error("rope: no tile of tokens x heads x d=" + std::to_string(d) + " fits (tile_tokens=" +
                                 std::to_string(options.tile_tokens) + "): " +
                                 (last.reason.empty() ? "no core split of its tiles is legal" : last.reason));
    }
    return planning::with_estimate(search);
}

void schedule_rope_host(RopeFuncs f, const Target &) {
    // The reference: tokens in parallel, scalar (no predicated f16 vectors, see schedule_elementwise_host).
    f.out.parallel(f.t);
    f.result.compute_at(f.out, f.t);
}

void schedule_rope_spyre(RopeFuncs f, const RopeSpyrePlan &p) {
    _halide_user_assert((p.d / 2) % p.lanes == 0)
        << "rope Spyre schedule: half the head dim (" << p.d / 2 << ") must be whole sticks of " << p.lanes << " lanes";
    const CoreSplit cores =
        split_across_cores(f.out, {{f.t, p.tokens_padded, p.tile_tokens, p.ct}, {f.h, p.heads, 1, p.ch}});
    Var to("to"), ti("ti");
    f.out.split(cores.serial_of(f.t), to, ti, p.tile_tokens, TailStrategy::RoundUp)
        .reorder(f.d, cores.serial_of(f.h), ti, to);
    stick_vectorize(f.out, f.d);
    // Inputs by DMA per tile; each half of the result one whole-stick SFU vector per (head, token).
    for (Func in : {f.x_in, f.cos_in, f.sin_in}) stage_in_scratchpad(in, f.out, to, p.double_buffer);
    f.result.compute_at(f.out, to).store_in(MemoryType::VTCM);
    stick_vectorize(f.result, 0, f.r.x);
    stick_vectorize(f.result, 1, f.r.x);
    if (p.double_buffer) double_buffer_result(f.result);
}

}  // namespace spyre
