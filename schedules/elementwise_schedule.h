// Schedules of the elementwise kernels (generators/elementwise_generator.cpp):
//   out(x, y, z) = op(a(x, y, z), b(bx, by, bz))   op in {add, mul}, b broadcast
//                                                   along any of its dims
//   out(x, y, z) = op(a(x, y, z))                   op in {gelu, silu, relu}
//   out(x, y, z) = silu(a(x, y, z)) * a(x + d0, y, z)  op = swiglu (a is 2 d0 wide)
// fp16 tensors compute in fp32 and round once.
//
// schedule_elementwise_host: the CPU reference (rows in parallel, vectorized x).
// schedule_elementwise_spyre: rows (y, z) split across the cores (and, when
//   rows are fewer than the cores, or b is a row every core would load whole,
//   the columns x in whole sticks); per core,
//   for z, for each tile of `tile_rows` rows of y:
//     copy the a tile and the b tile (DRAM -> scratchpad, DMA),
//     compute the result tile on the SFU, one vector per row (whole sticks;
//     the intermediates of the unary ops row by row before it),
//     copy the result tile (scratchpad -> DRAM, DMA).
#pragma once

#include <string>
#include <vector>

#include "Halide.h"
#include "schedule_knobs.h"

namespace spyre {

// The Funcs and Vars of the elementwise algorithm a schedule works on.
struct ElementwiseFuncs {
    Halide::Func out;     // out(x, y, z) = result(x, y, z)
    Halide::Func result;  // result(x, y, z) = cast(dtype, op(...)) in fp32
    std::vector<Halide::Func> intermediates;  // fp32 Funcs result reads (unary ops), producers first
    Halide::Var x, y, z;
};

// The true extents (x = d0 innermost, the stick dimension), the dtype, the op
// and the dims along which b has extent 1.
struct ElementwiseShape {
    int d0 = 1, d1 = 1, d2 = 1;
    Halide::Type dtype;
    std::string op;                       // add, mul (binary); gelu, silu, relu (unary); swiglu (gated, one input)
    bool broadcast_b[3] = {false, false, false};
    // swiglu only: a is (2 d0 d1, d2, 1), row z holding out's d1 rows of gate and up blocks of d0
    // (gen_elementwise gate_up_blocks=true); a row of out still reads 2 d0 of a.
    bool gate_up_blocks = false;

    bool binary() const { return op == "add" || op == "mul"; }
    // swiglu: a holds the gate in x < d0 and the up projection in d0 <= x < 2 d0.
    bool gated() const { return op == "swiglu"; }
    // The extent of a along x: 2 d0 for swiglu, else d0 (out's).
    int a_d0() const { return gated() ? 2 * d0 : d0; }
};

// Tiles, padding and core split of the Spyre schedule for one shape.
struct ElementwiseSpyrePlan {
    int lanes = 0;        // stick lanes of the dtype
    int d0p = 0;          // d0 padded to whole sticks (out's; a is 2 d0p wide for swiglu, whose d0 is whole sticks)
    int d1p = 0;          // d1 padded to a multiple of tile_rows
    int tile_rows = 1;    // rows of y per scratchpad tile
    int row_vector = 0;   // SFU vector length in lanes (whole sticks, divides d0p)
    int cores_d1 = 1, cores_d2 = 1;
    int cores_d0 = 1;     // cores along x: each gets d0p / cores_d0 columns (whole sticks), its slice of b too
    int columns() const { return d0p / cores_d0; }  // columns of a core's tile
    int64_t footprint_bytes = 0;  // scratchpad bytes per core for one tile (a, b, result, temporaries)
    double estimated_us = 0;      // the planning framework's estimate of the kernel (schedules/planner.h)
    bool double_buffer = false;   // a, b (when it moves with y) and result tiles in two copies
    // b broadcast along d0 alone (one value per row) laid out with its sticks along the rows
    // (d1), packed, and staged once per core and z: a core's rows are whole sticks of them.
    // Else each row's value has a stick of its own (d0 padded), which moves a stick per row.
    bool b_packed = false;
    std::string device_order = "zyx";  // the layout of a, b and out (the device_order knob)

    int cores() const { return cores_d0 * cores_d1 * cores_d2; }
};

// Knobs of the Spyre schedule (GeneratorParams of gen_elementwise; schedule_knobs.h); defaults are the hand schedule.
// X(type, name, default, what it does, the autoscheduler's candidates)
#define SPYRE_ELEMENTWISE_KNOBS(X)                                                                                     \
    X(bool, double_buffer, true, "tiles in two copies when they fit and a core has an even number of them",          \
      spyre::knob_bools)                                                                                               \
    X(int, max_cores, 0, "use at most this many cores (0: all the machine's cores)",                   \
      spyre::knob_core_counts)                                                                                         \
    X(int, tile_rows, 0, "rows of y per tile (0: chosen by the planner)", {0, 1, 2, 4, 8, 16, 32, 64})                \
    X(std::string, device_order, "zyx",                                                                                \
      "device layout of a, b and out: their dims outermost first, x (the stick dim) last; set by the generator's "     \
      "tensor constraints, not planned",                                                                               \
      {"zyx", "yzx"})

struct ElementwiseSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_ELEMENTWISE_KNOBS)
};

// Chooses the tile and the core split for `shape` through the planning
// framework (schedules/planner.h, docs/planning.md: the shared budget,
// double-buffer rule, core-split search and cost). Throws std::runtime_error
// if one row (or the forced tile_rows) does not fit the scratchpad.
ElementwiseSpyrePlan plan_elementwise_spyre(const ElementwiseShape &shape, const ElementwiseSpyreOptions &options = {});

void schedule_elementwise_host(ElementwiseFuncs f, const ElementwiseShape &shape, const Halide::Target &target);
// a_staged, b_staged: the inputs' wrappers a.in(), b.in() (b_staged undefined for unary ops).
void schedule_elementwise_spyre(ElementwiseFuncs f, Halide::Func a_staged, Halide::Func b_staged,
                                const ElementwiseShape &shape, const ElementwiseSpyrePlan &plan);

}  // namespace spyre
