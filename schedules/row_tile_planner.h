// The row-tile planner: the one candidate space and search of the families
// whose rows are independent and each done whole by one core (softmax,
// layernorm, rmsnorm). A family describes a row (what it stages, keeps and
// computes per row, and once per core); this planner chooses the cores and
// the rows per tile, and the framework (planner.h) judges each candidate.
//
// The candidate space: c cores, from the most that each get a row down to half
// of them (or further, to one, only while no candidate is legal: a forced
// tile_rows that fits only on fewer), each with ceil(rows / c) rows in tiles
// of 1 to the family's largest tile (the most that fit once), the rows padded
// to c x tiles per core x tile_rows; a core left with only padding rows is
// not a candidate. A family whose tensors are padded to whole tiles only
// (RowPadding::WholeTiles: the norms, which keep the layout of the kernels
// around them) takes only the candidates whose padded rows are exactly that.
// A forced tile_rows is the only tile offered, and an error if it does not fit.
//
// Rope is planned by the framework directly (rope_schedule.cpp): its tokens are
// split together with its heads (even splits of two dimensions), which this
// one-dimensional space does not express.
#pragma once

#include <cstdint>
#include <string>

namespace spyre {

// How a family's tensors are padded along the rows.
enum class RowPadding {
    CoresTimesTiles,  // to cores x tiles per core x tile_rows (any core count)
    WholeTiles,       // to whole tiles only: the cores must split them evenly enough
};

// One row of a family's kernel, as the planner and the framework count it.
struct RowTileWork {
    std::string family;  // for messages ("softmax", "norm")
    int cols = 0;        // elements per row (for messages)
    int rows = 0;
    int max_tile_rows = 1;  // the family's largest tile
    // Tiles are whole multiples of this many rows (a family whose output packs one
    // value per row into sticks: a stick's lanes), even above a core's rows.
    int tile_rows_multiple = 1;
    RowPadding padding = RowPadding::CoresTimesTiles;
    // Scratchpad bytes: per row staged with the tile loop (two copies when
    // double-buffered: the input and result rows), per row kept once (work
    // rows, per-row scalars) and once per core (weights, temporaries).
    int64_t buffered_bytes_per_row = 0, fixed_bytes_per_row = 0, fixed_bytes_per_core = 0;
    // DRAM bytes of a padded row (read and written) and read once per core.
    double read_bytes_per_row = 0, write_bytes_per_row = 0, read_bytes_per_core = 0;
    double compute_cycles_per_row = 0;  // SFU cycles of a row (MachineDescription's timing functions)
};

struct RowTileOptions {
    int max_cores = 0;  // 0: all the machine's cores
    int tile_rows = 0;  // 0: the planner's choice
    bool double_buffer = true;
};

struct RowTilePlan {
    int cores = 1, tile_rows = 1, rows_padded = 0;
    bool double_buffer = false;
    int64_t footprint_bytes = 0;
    double estimated_us = 0;
};

// The cheapest legal candidate (planning::PlanSearch). Throws
// std::runtime_error when a single row does not fit the scratchpad or no
// candidate is legal, and Halide::CompileError when a forced tile_rows does
// not fit; each message names the family, the row and the limit.
RowTilePlan plan_row_tiles(const RowTileWork &work, const RowTileOptions &options);

// Copies the planner's choice into a family's plan (its cores, tile_rows, rows_padded,
// double_buffer, footprint_bytes and estimated_us members).
template <typename FamilyPlan>
void take_row_tiles(const RowTilePlan &r, FamilyPlan *p) {
    p->cores = r.cores;
    p->tile_rows = r.tile_rows;
    p->rows_padded = r.rows_padded;
    p->double_buffer = r.double_buffer;
    p->footprint_bytes = r.footprint_bytes;
    p->estimated_us = r.estimated_us;
}

}  // namespace spyre
