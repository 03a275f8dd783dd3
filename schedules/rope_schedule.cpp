// Schedules of rotary position embedding (see rope_schedule.h).
#include "rope_schedule.h"
#include "schedule_arithmetic.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "spyre/machine.h"
#include "spyre_schedule.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

// Scratchpad bytes per core of one tile of `tokens` tokens and `heads` heads in `copies` copies:
// the x and result tiles and the cos and sin rows.
int64_t rope_footprint(int d, int heads, int tokens, int bytes, int copies) {
    return (int64_t)copies * tokens * ((int64_t)2 * heads * d * bytes + (int64_t)d * bytes);
}

}  // namespace

RopeSpyrePlan plan_rope_spyre(int d, int heads, int tokens, const Type &t, const RopeSpyreOptions &options) {
    const MachineDescription &m = default_machine();
    const int64_t budget = m.scratchpad_bytes * 3 / 4;
    const int max_cores = usable_cores(options.max_cores);
    RopeSpyrePlan p;
    p.d = d;
    p.heads = heads;
    p.tokens = tokens;
    p.lanes = stick_lanes(t);
    // Two tiles per core when there are enough tokens (the second tile's DMA overlaps the
    // first's SFU work), one token per tile below that; fewer tokens per tile until one fits
    // with every head on the core.
    if (options.tile_tokens > 0) {
        p.tile_tokens = options.tile_tokens;
    } else {
        p.tile_tokens = std::max(1, (tokens + 2 * max_cores - 1) / (2 * max_cores));
        while (p.tile_tokens > 1 && rope_footprint(d, heads, p.tile_tokens, t.bytes(), 2) > budget) p.tile_tokens--;
    }
    p.tokens_padded = round_up(tokens, p.tile_tokens);
    const std::vector<int> c = plan_core_split("rope", {{Var("t"), p.tokens_padded, p.tile_tokens}, {Var("h"), heads, 1}},
                                               CoreSplitOptions{max_cores, 1});
    p.ct = c[0];
    p.ch = c[1];
    const int heads_per_core = heads / p.ch;
    const int tiles_per_core = p.tokens_padded / p.tile_tokens / p.ct;
    p.footprint_bytes = rope_footprint(d, heads_per_core, p.tile_tokens, t.bytes(), 1);
    if (p.footprint_bytes > budget) {
        throw std::runtime_error("rope: a tile of " + std::to_string(p.tile_tokens) + " tokens x " +
                                 std::to_string(heads_per_core) + " heads x d=" + std::to_string(d) +
                                 " does not fit the scratchpad (" + std::to_string(p.footprint_bytes) + " bytes of " +
                                 std::to_string(budget) + ")");
    }
    if (options.double_buffer && tiles_per_core % 2 == 0 && 2 * p.footprint_bytes <= budget) {
        p.double_buffer = true;
        p.footprint_bytes *= 2;
    }
    return p;
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
