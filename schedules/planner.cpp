// The planning framework of the Spyre hand schedules (see planner.h).
#include "planner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "program_tree/ring_sharing.h"
#include "schedule_arithmetic.h"

namespace spyre {
namespace planning {

int64_t scratchpad_budget(const MachineDescription &m, ScratchpadReserve reserve, int64_t exact_bytes) {
    const int64_t rest = m.scratchpad_bytes - std::clamp<int64_t>(exact_bytes, 0, m.scratchpad_bytes);
    return m.scratchpad_bytes - rest / (reserve == ScratchpadReserve::TilesCounted ? 10 : 4);
}

double pt_type_factor(const Halide::Type &t, const MachineDescription &m) {
    const DType d = t == Halide::Float(32) ? DType::F32 : t == Halide::Int(8) ? DType::I8 : DType::F16;
    return m.pt_rate_factor(d);
}

int staging_trip(std::initializer_list<int> trips) {
    for (int t : trips) {
        if (t > 1) return t;
    }
    return 1;
}

Verdict judge(const TiledPlan &p, bool double_buffer_asked, const MachineDescription &m) {
    Verdict v;
    v.cores = p.cores;
    const int64_t budget = scratchpad_budget(m, p.reserve, p.exact_bytes);
    int depth = p.inner_loops;
    for (int t : p.per_core_trips) {
        if (t > 1) depth++;
        if (t > m.max_loop_trip_count) {
            v.reason = "a per-core loop of " + std::to_string(t) + " trips exceeds max_loop_trip_count " +
                       std::to_string(m.max_loop_trip_count);
            return v;
        }
    }
    if (depth > m.max_loop_depth) {
        v.reason = std::to_string(depth) + " hardware loop levels exceed the machine's max_loop_depth " + std::to_string(m.max_loop_depth);
        return v;
    }
    v.double_buffer = double_buffer_asked && p.staging_trip >= 2 &&
                      2 * p.buffered_bytes + p.fixed_bytes <= budget;
    v.footprint_bytes = (v.double_buffer ? 2 : 1) * p.buffered_bytes + p.fixed_bytes;
    if (v.footprint_bytes > budget) {
        v.reason = std::to_string(v.footprint_bytes) + " scratchpad bytes per core exceed the budget of " +
                   std::to_string(budget);
        return v;
    }
    v.legal = true;
    if (p.pt_pipeline) {
        PtPipeline pipeline = *p.pt_pipeline;
        pipeline.double_buffer = v.double_buffer;
        pipeline.scratchpad_free_bytes = m.scratchpad_bytes - v.footprint_bytes;
        v.pt_cost = estimate_pt_pipeline(pipeline, m);
        v.cycles = v.pt_cost.cycles;
    } else {
        v.cycles = estimate_cycles(p, v.double_buffer, m);
    }
    return v;
}

double estimate_cycles(const TiledPlan &p, bool double_buffered, const MachineDescription &m) {
    // The DMA unit of a core moves its share of the card's traffic and, in the
    // same queue, forwards its ring pieces.
    const double read = p.read_bytes - (double_buffered ? p.overlap_read_bytes : 0.0);
    const double dram = m.dram_cycles(read, p.write_bytes, std::max(1, p.cores)) +
                        p.ring_bytes_per_core / m.ring_bytes_per_cycle;
    const double waited = p.waited_transfers_per_tile * m.dma_latency_cycles;
    if (!double_buffered) {
        return dram + p.tiles_per_core * (waited + p.compute_cycles_per_tile) + p.fixed_cycles + p.chain_fill;
    }
    const double tile_compute = p.compute_cycles_per_tile + p.overlap_copy_cycles_per_tile;
    // Overlapped: the DMA stream of the kernel's bytes against the compute,
    // and one tile's waited latencies (the first load, the last store) stay
    // exposed. Transfers pipeline (the simulator's DMA unit issues the next one
    // at once; a latency is paid only by whoever waits for it), and the last
    // tile's compute hides behind the other cores' traffic: simulated,
    // gen_elementwise add 1024 x 4096 fp16 double-buffered takes the same time
    // for tiles of 1 to 64 rows. (What the tile size does change, on few
    // cores, the estimate leaves to the tie rule of PlanSearch: larger tiles.)
    const double compute = p.tiles_per_core * tile_compute;
    // A kernel of loads only has no traffic to hide its pipeline's end behind:
    // DRAM-bound, the last tile's compute follows the last load; compute-bound,
    // the first load precedes the first compute.
    const double step_dram = p.tiles_per_core > 0 ? dram / p.tiles_per_core : 0.0;
    const double end = p.pipeline_end_exposed ? std::min(step_dram, tile_compute) : 0.0;
    // The backend pipelines the staging loop alone: where it runs inside an outer
    // per-core loop (a tile's K chunks), the pipeline drains and refills at every
    // outer iteration, each time exposing one step of the unit that is not the
    // bottleneck (the first load before the compute, or the last compute before
    // the store) and its waited latencies.
    const double restarts =
        std::max(1.0, p.staging_starts > 0 ? p.staging_starts : p.tiles_per_core / std::max(1, p.staging_trip));
    const double refills = (restarts - 1) * (std::min(step_dram, tile_compute) + waited);
    return std::max(dram, compute + p.chain_fill) + waited + end + refills + p.fixed_cycles;
}

namespace {
void enumerate_splits(const std::vector<int> &tiles, size_t dim, int budget, std::vector<int> &current,
                      std::vector<int> &best, int &best_cores, int cores_so_far,
                      const std::function<bool(const std::vector<int> &)> &accept) {
    if (dim == tiles.size()) {
        // Most cores; ties to the earlier dimensions (lexicographically larger), which the
        // enumeration (larger divisors first) meets first.
        if (cores_so_far > best_cores && (!accept || accept(current))) {
            best = current;
            best_cores = cores_so_far;
        }
        return;
    }
    const std::vector<int> ds = divisors(std::max(1, tiles[dim]));
    for (auto it = ds.rbegin(); it != ds.rend(); ++it) {
        if (*it > budget) continue;
        current[dim] = *it;
        enumerate_splits(tiles, dim + 1, budget / *it, current, best, best_cores, cores_so_far * *it, accept);
    }
}
}  // namespace

std::vector<int> even_core_split(const std::vector<int> &tiles, int max_cores,
                                 const std::function<bool(const std::vector<int> &)> &accept) {
    std::vector<int> current(tiles.size(), 1), best;
    int best_cores = 0;
    enumerate_splits(tiles, 0, std::max(1, max_cores), current, best, best_cores, 1, accept);
    return best;
}

std::vector<std::vector<int>> even_core_splits(const std::vector<int> &tiles, int max_cores) {
    std::vector<std::vector<int>> all;
    const std::vector<int> most = even_core_split(tiles, max_cores);
    if (most.empty()) return all;
    int most_cores = 1;
    for (int c : most) most_cores *= c;
    std::vector<int> current(tiles.size(), 1), ignored;
    int ignored_cores = 0;
    // Collect every split the enumeration meets (its order: earlier dimensions' larger counts first).
    enumerate_splits(tiles, 0, std::max(1, max_cores), current, ignored, ignored_cores, 1,
                     [&](const std::vector<int> &c) {
                         int n = 1;
                         for (int k : c) n *= k;
                         if (2 * n >= most_cores) all.push_back(c);
                         return false;
                     });
    std::stable_sort(all.begin(), all.end(), [](const std::vector<int> &a, const std::vector<int> &b) {
        int na = 1, nb = 1;
        for (int k : a) na *= k;
        for (int k : b) nb *= k;
        return na > nb;
    });
    return all;
}

double chain_fill_cycles(double tile_bytes, int chain_cores, bool in_pieces, const MachineDescription &m) {
    if (chain_cores < 2 || tile_bytes <= 0) return 0.0;
    const std::vector<int64_t> pieces = compiler::ring_forward_pieces((int64_t)tile_bytes, in_pieces, m);
    const double first = (double)pieces.front() / m.ring_bytes_per_cycle;
    return (chain_cores - 1) * (first + m.ring_hop_latency_ns * m.clock_ghz) + (tile_bytes - pieces.front()) / m.ring_bytes_per_cycle;
}

int row_vector_lanes(int padded, int lanes) {
    int best = lanes;
    for (int v = lanes; v <= std::min(padded, sfu_max_vector_lanes()); v += lanes) {
        if (padded % v == 0) best = v;
    }
    return best;
}

double sfu_row_cycles(int padded, int vector_lanes, int element_bytes, MachineDescription::SfuCost cost,
                      const MachineDescription &m) {
    const int vectors = (padded + vector_lanes - 1) / vector_lanes;
    return vectors * m.sfu_instruction_cycles(vector_lanes, 1, element_bytes, cost);
}

bool plan_log_enabled() {
    const char *v = std::getenv("SPYRE_PLAN_LOG");
    return v && *v && std::string(v) != "0";
}

void log_plan_line(const std::string &family, const std::string &what, const Verdict &v, bool chosen) {
    const MachineDescription &m = scheduling_machine();
    std::string line = "plan " + family + (chosen ? ": chosen: " : ": ") + (what.empty() ? "(candidate)" : what);
    char figures[160];
    if (v.legal) {
        std::snprintf(figures, sizeof figures, " -> %.2f us, %d cores, %s-buffered, %lld scratchpad bytes per core",
                      v.cycles / m.clock_ghz / 1000.0, v.cores, v.double_buffer ? "double" : "single",
                      (long long)v.footprint_bytes);
        line += figures;
    } else {
        line += " -> refused: " + v.reason;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace planning
}  // namespace spyre
