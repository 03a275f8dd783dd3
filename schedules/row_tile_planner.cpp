// The row-tile planner (see row_tile_planner.h).
#include "row_tile_planner.h"

#include <algorithm>
#include <stdexcept>

#include "Halide.h"
#include "planner.h"
#include "schedule_arithmetic.h"
#include "spyre_schedule.h"

namespace spyre {

RowTilePlan plan_row_tiles(const RowTileWork &w, const RowTileOptions &options) {
    const int64_t budget = planning::scratchpad_budget();
    const int64_t per_row = w.buffered_bytes_per_row + w.fixed_bytes_per_row;
    const int64_t fit_once = (budget - w.fixed_bytes_per_core) / per_row;
    if (fit_once < 1) {
        throw std::runtime_error(w.family + ": a row of " + std::to_string(w.cols) + " elements does not fit the scratchpad (" +
                                 std::to_string(per_row) + " bytes per row, " +
                                 std::to_string(budget - w.fixed_bytes_per_core) + " available)");
    }
    _halide_user_assert(options.tile_rows <= fit_once)
        << w.family << " Spyre schedule: tile_rows=" << options.tile_rows << " rows of " << w.cols
        << " elements do not fit the scratchpad (at most " << fit_once << " rows per tile)";
    const int most = std::max(1, std::min(usable_cores(options.max_cores), w.rows));
    const int fit = (int)std::min<int64_t>(w.max_tile_rows, fit_once);
    const int multiple = std::max(1, w.tile_rows_multiple);
    _halide_user_assert(options.tile_rows % multiple == 0)
        << w.family << " Spyre schedule: tile_rows=" << options.tile_rows << " must be a multiple of " << multiple
        << " (one stick of the output's values per tile)";
    if (fit < multiple) {
        throw std::runtime_error(w.family + ": a tile of " + std::to_string(multiple) + " rows of " + std::to_string(w.cols) +
                                 " elements (one stick of the output) does not fit the scratchpad (at most " +
                                 std::to_string(fit) + " rows)");
    }
    planning::PlanSearch<RowTilePlan> search(w.family);
    planning::Verdict last;
    for (int c = most; c >= 1 && (c >= std::max(1, most / 2) || !search.found()); c--) {
        const int rows_per_core = (w.rows + c - 1) / c;
        const int first = options.tile_rows > 0 ? options.tile_rows
                                                : std::max(multiple, std::min(fit, rows_per_core) / multiple * multiple);
        for (int tile = first; tile >= 1; tile -= multiple) {
            const int tiles_per_core = (rows_per_core + tile - 1) / tile;
            RowTilePlan p;
            p.cores = c;
            p.tile_rows = tile;
            p.rows_padded = c * tiles_per_core * tile;
            const bool padding_core = c > 1 && (int64_t)(c - 1) * tiles_per_core * tile >= w.rows;
            const bool layout_kept = w.padding != RowPadding::WholeTiles || p.rows_padded == round_up(w.rows, tile);
            if (!padding_core && layout_kept) {
                planning::TiledPlan tp;
                tp.buffered_bytes = w.buffered_bytes_per_row * tile;
                tp.fixed_bytes = w.fixed_bytes_per_row * tile + w.fixed_bytes_per_core;
                tp.staging_trip = tiles_per_core;
                tp.read_bytes = p.rows_padded * w.read_bytes_per_row + c * w.read_bytes_per_core;
                tp.write_bytes = p.rows_padded * w.write_bytes_per_row;
                tp.cores = c;
                tp.tiles_per_core = tiles_per_core;
                tp.compute_cycles_per_tile = tile * w.compute_cycles_per_row;
                last = planning::judge(tp, options.double_buffer);
                p.double_buffer = last.double_buffer;
                p.footprint_bytes = last.footprint_bytes;
                search.offer(p, last, [&] {
                    return "tiles of " + std::to_string(tile) + " rows on " + std::to_string(c) + " cores (rows padded to " +
                           std::to_string(p.rows_padded) + ")";
                });
            }
            if (options.tile_rows > 0) break;
        }
    }
    if (!search.found()) {
        throw std::runtime_error(w.family + ": no tile of rows of " + std::to_string(w.cols) + " elements fits: " + last.reason);
    }
    return planning::with_estimate(search);
}

}  // namespace spyre
