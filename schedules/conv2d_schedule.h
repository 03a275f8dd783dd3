// Schedules of the 2-D "valid" convolution (generators/conv2d_generator.cpp):
//   out(co, x, y, b) = act(bias(co) + sum_{ci, kx, ky} in(ci, x + kx, y + ky, b) * w(co, ci, kx, ky))
// channels-last, dimensions innermost first, stride 1, no padding (the output
// is (width - kw + 1) x (height - kh + 1); boundary conditions are a separate
// open item), act in {none, relu}; kept apart from the algorithm.
//
// The PT mapping: C[m][n] += A[m][k] B[k][n] with n = co (the stick
// dimension), m = the output pixels of one output row of a tile, k = kw x ci:
// the kw taps of a filter row ky are one accumulation, since channels-last the
// kw pixels' channels an output pixel reads are one contiguous run of the
// staged input row ky (A's rows overlap: lda = ci) and the filter row's
// weights are (kx, ci)-major rows of co. With pad > 0 each tap (kx, ky) is
// its own accumulation (k = ci) at an affine offset of kx pixels and ky rows
// (the generator's algorithm says which: Conv2dFuncs::r).
//
// schedule_conv2d_host: a CPU schedule for the host reference build.
// schedule_conv2d_spyre: one constant-extent parallel loop over the cores
//   (batch, co tiles, output row tiles, strips of output pixels), per core
//     for bs, no: stage the bias and the weight tile (tn x ci x kw x kh; DMA)
//       for yo, xo: stage the input rows y..y+ty+kh-2 of the tile (DMA, once for all taps),
//         acc = bias (SFU), for each output row and filter row: acc += A_ky * B_ky (PT),
//         activation and cast (SFU), store the tile (DMA).
//   The input tile is double-buffered when it fits and its loop has two trips or more
//   (then a tile of whole rows copies the rows it shares with the previous tile).
//   The cores of one row range and strip (split along co, ring neighbours) share input
//   tiles over the ring, the cores of one co range (split along rows, strips and batch)
//   weight tiles. Strips of pixels cut the rows' halo each core reads twice: a core of
//   8 pixels x 14 rows reads 10 x 16 input pixels, one of 56 x 2 rows 58 x 4.
#pragma once

#include <string>

#include "Halide.h"
#include "schedule_knobs.h"
#include "matmul_schedule.h"  // spyre::Activation

namespace spyre {

// The Funcs and Vars of the convolution algorithm that a schedule works on.
struct Conv2dFuncs {
    Halide::Func out;     // output out(co, x, y, b) = result(co, x, y, b)
    Halide::Func result;  // result = cast(dtype, act(acc))
    Halide::Func acc;     // fp32 accumulator: acc = bias_f(co); acc += in(ci, x + kx, y + ky, b) * w(co, ci, kx, ky)
    Halide::Func bias_f;  // bias widened to fp32
    Halide::RDom r;       // r.x: ci (padded to whole sticks for Spyre), r.y: kx, r.z: ky; Spyre with
                          // pad = 0: r.x = kx x padded ci + ci (the taps folded), r.y of extent 1
    Halide::Var co, x, y, b;
};

struct Conv2dShape {
    int ci = 1, co = 1, width = 1, height = 1, kw = 1, kh = 1, batch = 1;
    Halide::Type dtype;
    Activation activation = Activation::None;
    // Zero padding included in width and height (gen_conv2d's pad): the edge tiles'
    // boundary is written into the staged input rows, an edge behaviour the backend
    // resolves per core only, so each core's tile loops along x and y run once.
    int pad = 0;

    int out_width() const { return width - kw + 1; }
    int out_height() const { return height - kh + 1; }
};

// Tiles, padding and core split of the Spyre schedule for one shape.
struct Conv2dSpyrePlan {
    int tn = 0, tx = 0, ty = 0;  // output tile: co x pixels of a row x rows
    int cip = 0;                 // ci padded to whole sticks
    int cop = 0, xp = 0, yp = 0; // padded output extents (multiples of cn * tn, cx * tx, cy * ty)
    int in_xp = 0, in_yp = 0;    // padded input extents: xp + kw - 1, yp + kh - 1
    int cb = 1, cn = 1, cy = 1;  // cores along batch, co and output rows
    int cx = 1;                  // cores along the output pixels of a row (strips of whole tiles)
    int in_lanes = 0;            // stick lanes of the dtype
    int64_t footprint_bytes = 0; // estimated scratchpad bytes per core
    int64_t dram_bytes = 0;      // estimated DRAM traffic of the whole kernel
    double estimated_us = 0;     // the planner's estimate
    bool double_buffer = false;  // the staged input tile in two copies
    bool input_shared = false;   // the cn cores of one row range pass input tiles along the ring (cn > 1)
    bool weights_shared = false; // the cb * cy * cx cores of one co range pass weight tiles along the ring

    int cores() const { return cb * cn * cy * cx; }
    int batch_per_core(int batch) const { return batch / cb; }
    int co_tiles_per_core() const { return cop / (cn * tn); }
    int row_tiles_per_core() const { return yp / (cy * ty); }
    int x_tiles() const { return xp / (cx * tx); }  // per core
};

// The planner's ties (planning::PlanSearch): conv2d's estimate leaves out the DRAM contention
// few tiles per core meet, so among candidates within 2% more cores win (docs/planning.md).
constexpr double kConv2dTieTolerance = 0.02;

// Knobs of the Spyre schedule (GeneratorParams of gen_conv2d).
// X(type, name, default, what it does, the autoscheduler's candidates; schedule_knobs.h)
#define SPYRE_CONV2D_KNOBS(X) \
    X(bool, double_buffer, true, "the staged input tile in two copies when it fits", spyre::knob_bools) \
    X(int, max_cores, 0, "use at most this many cores (0: all the machine's cores)", spyre::knob_core_counts) \
    X(int, tile_co, 0, "output channels per tile (0: automatic; rounded up to whole sticks)", spyre::knob_from_shape) \
    X(int, tile_x, 0, "output pixels per tile row (0: automatic; rounded up to whole 8-row PT passes)", spyre::knob_from_shape) \
    X(int, tile_y, 0, "output rows per tile (0: automatic)", spyre::knob_from_shape) \
    X(bool, share_input, true, "cores along co share input tiles over the ring (share_over_ring)", spyre::knob_bools) \
    X(bool, share_weights, true, "cores along batch, rows and pixels share weight tiles over the ring", spyre::knob_bools)

struct Conv2dSpyreOptions {
    SPYRE_KNOB_MEMBERS(SPYRE_CONV2D_KNOBS)
};

// Checks the shape (throws Halide::CompileError naming the parameter and the rule).
void check_conv2d_shape(const Conv2dShape &shape);

// Chooses tiles and the core split for `shape` with the least estimated time
// (machine sizes and rates from the runtime's machine description). Plans whose
// per-core loop nest would exceed the hardware loop depth are skipped. A forced
// tile is the only one considered; throws Halide::CompileError if it does not fit.
Conv2dSpyrePlan plan_conv2d_spyre(const Conv2dShape &shape, const Conv2dSpyreOptions &options = {});

void schedule_conv2d_host(Conv2dFuncs f, const Conv2dShape &shape, const Halide::Target &target);
// in_in, w_in, bias_in: the input wrappers (input.in(), ...); bias_in is staged
// only for fp16 (for fp32 bias_f is itself a copy of the input, i.e. a DMA).
void schedule_conv2d_spyre(Conv2dFuncs f, Halide::Func in_in, Halide::Func w_in, Halide::Func bias_in,
                           const Conv2dShape &shape, const Conv2dSpyrePlan &plan);

}  // namespace spyre
