// A thin, Halide-like scheduling vocabulary for Spyre (docs/scheduling.md).
//
// Each directive is a free function over ordinary Halide Funcs and Vars that
// applies a few stock scheduling calls in the shape the Spyre lowering pass
// (target/) compiles: vectors of whole sticks, stages in the scratchpad
// (MemoryType::VTCM), one constant-extent parallel loop over the cores, PT
// matmul loop nests. Every directive checks its inputs first and throws
// Halide::CompileError (a std::runtime_error) whose message starts with
// "Spyre schedule: <directive>(Func '<name>' ...)" and states the rule, so a
// misuse is reported where it is written rather than at lowering time.
//
// What the backend cannot compile yet is refused with a "not supported ...
// yet" error instead of compiling something else.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "Halide.h"

namespace spyre {

// ---- sticks -------------------------------------------------------------

// Vectorizes `x` of f's pure definition by the stick lanes of f's type
// (32 x f32/i32, 64 x f16, 128 x i8). Throws if the type has no sticks on
// Spyre or `x` is not a loop of the definition.
void stick_vectorize(Halide::Func f, const Halide::VarOrRVar &x);
// The same for f's update definition `update_index`.
void stick_vectorize(Halide::Func f, int update_index, const Halide::VarOrRVar &x);

// ---- scratchpad ---------------------------------------------------------

// f.compute_at(consumer, at).store_in(MemoryType::VTCM), its innermost pure
// var stick-vectorized: f's tile is copied into the scratchpad at that loop
// level (a DMA when f is a copy, e.g. an input wrapper `input.in()`). An
// inline reduction f's definition calls (sum, product, maximum, minimum: a
// Func the schedule cannot name) accumulates in the scratchpad at the same
// loop (docs/scheduling.md, "Loop indices as values").
void stage_in_scratchpad(Halide::Func f, Halide::Func consumer, const Halide::VarOrRVar &at);

// The same placement for an accumulator (a Func with update definitions):
// `at` is the loop of `consumer` whose iterations each get a fresh
// accumulator tile, initialised and reduced in the scratchpad. The pure
// definition is stick-vectorized; schedule the update with matmul_on_pt or
// stick_vectorize(acc, 0, ...).
void accumulate_in_scratchpad(Halide::Func acc, Halide::Func consumer, const Halide::VarOrRVar &at);

// ---- cores --------------------------------------------------------------

// One output dimension offered for the core split.
struct CoreSplitDim {
    Halide::Var var;  // a pure var of the Func
    int extent = 0;   // its (padded) extent
    int tile = 1;     // granularity: every core gets a whole number of tiles
    int cores = 0;    // 0: chosen by the planner; > 0: exactly this many cores along var
};

struct CoreSplitOptions {
    int max_cores = 0;  // 0: the machine's core count
    int min_cores = 1;  // fewer cores than this is an error
};

struct CoreSplit {
    Halide::Var core;                 // the fused parallel loop (constant extent total_cores)
    std::vector<Halide::Var> vars;    // per dim, in the order given: the var that was split
    std::vector<Halide::Var> serial;  // per dim, in the order given: the per-core serial var
    std::vector<int> cores;           // per dim: cores along it
    std::vector<int> per_core;        // per dim: extent of its serial var
    int total_cores = 1;

    // The per-core serial var that replaced `v` (throws if v was not split).
    const Halide::Var &serial_of(const Halide::Var &v) const;
};

// The planner alone: cores per dim. Dims with a fixed `cores` keep it; the
// others, greedily in the order given, take the largest divisor of their tile
// count that keeps the total within max_cores (so small work gets fewer cores).
std::vector<int> plan_core_split(const std::string &func_name, const std::vector<CoreSplitDim> &dims,
                                 const CoreSplitOptions &options = {});

// Splits each given dim of f's pure definition into cores x per-core parts
// (TailStrategy::RoundUp; exact, since the extents are whole tiles), moves
// the core parts outermost, fuses them (f's dimension order, innermost first)
// into one .parallel() var of constant extent and returns the serial parts
// for further tiling. Serial loops are never fused (indices stay affine).
CoreSplit split_across_cores(Halide::Func f, const std::vector<CoreSplitDim> &dims,
                             const CoreSplitOptions &options = {});

// The loop nest of a row-wise kernel (softmax, the norms): out's rows split
// evenly over `cores` cores (one static parallel loop, outermost), each core's
// rows in tiles of `tile_rows` (yo over tiles, yi within one), x vectorized by
// `lanes`. rows_padded must be a multiple of cores * tile_rows.
struct RowTileLoops {
    Halide::Var core{"core"}, yo{"yo"}, yi{"yi"};
};
RowTileLoops split_row_tiles_across_cores(Halide::Func out, const Halide::Var &x, const Halide::Var &y,
                                          int rows_padded, int cores, int tile_rows, int lanes);

// ---- device layouts -----------------------------------------------------

// The device layout of a kernel tensor: its stick dimension and the order of
// its dimensions in device DRAM, outermost first (empty: host order).
struct StickLayout {
    int stick_dim = 0;
    std::vector<int> order;
};

// The default layout of a rank-`rank` tensor: stick = dim 0, order rank-1 .. 0.
StickLayout default_stick_layout(int rank);

// Records the device layout of a tensor declared with constrain_tensor.
// Any order of the dimensions compiles. The stick dimension must be the one
// the tensor was declared with (constrain_tensor's stick_dim, which decides its
// padding); kernels vectorize it, and a vector of several sticks needs it
// innermost in the order.
void set_device_layout(const std::string &tensor_name, const StickLayout &layout);
inline void set_device_layout(const char *tensor_name, const StickLayout &layout) {
    set_device_layout(std::string(tensor_name), layout);
}

// T as in constrain_tensor: Input/Output<Buffer<>>, ImageParam, Func::output_buffer().
template <typename T>
void set_device_layout(T &buf, const StickLayout &layout) {
    if constexpr (std::is_base_of_v<Halide::Internal::GeneratorOutputBase, T>) {
        set_device_layout(Halide::Func(buf).name(), layout);
    } else {
        set_device_layout(buf.name(), layout);
    }
}

// The layout set_device_layout recorded for `tensor_name` in the active schedule context, if any.
std::optional<StickLayout> recorded_device_layout(const std::string &tensor_name);

// ---- PT -----------------------------------------------------------------

struct PtMatmul {
    Halide::RVar k_outer;  // the loop to stage K chunks of the operands at (== k unless chunked)
    Halide::RVar k_inner;  // the reduction loop inside the PT tile
    bool k_chunked = false;
};

// Schedules acc's first update, acc(n, m, ...) += A(k, m, ...) * B(n, k, ...)
// with an fp32 acc (fp16/fp32 operands) or an int32 acc of int8 operands
// (acc += i32(A) * i32(B): exact, int32 wrap-around like Halide's host int32),
// as the PT recognizer needs it: loops n (innermost, vectorized by 32
// fp32/int32 lanes), m, k (outermost) -> reorder(n, m, k). With
// k_chunk > 0 the reduction is split into k_outer x k_inner (k_chunk must
// divide K) and ordered n, m, k_inner, k_outer: one PT tile per K chunk.
PtMatmul matmul_on_pt(Halide::Func acc, Halide::RVar k, Halide::Var n, Halide::Var m, int k_chunk = 0);

// ---- double buffering ---------------------------------------------------

// stage_in_scratchpad(f, consumer, at) with two copies of f's buffer: the
// backend unrolls the loop `at` by two, alternates the copies and issues the
// DMA of tile i+1 before the compute of tile i, so they overlap (Halide's own
// async()/fold_storage is not used: the backend rejects async()). A loop with
// an odd trip count ends with its last tile on the first copy. Costs twice f's
// scratchpad.
void double_buffer(Halide::Func f, Halide::Func consumer, const Halide::VarOrRVar &at);

// double_buffer(f, consumer, at) when `double_buffered`, else stage_in_scratchpad: for
// schedules whose plan decides per shape whether the second copy fits.
void stage_in_scratchpad(Halide::Func f, Halide::Func consumer, const Halide::VarOrRVar &at, bool double_buffered);

// The same with `sticks_per_vector` sticks in each vector of f's stick dimension
// instead of one: a Func computed on the SFU gets one instruction per that many
// sticks of a row. For a gather (a transpose-like read of another tile's column)
// one instruction then gathers that many sticks' rows, paying the instruction's
// issue overhead once instead of once a stick. f's region along the stick
// dimension is rounded up to whole vectors; at most the machine's
// sfu_max_vector_lanes lanes.
void stage_in_scratchpad(Halide::Func f, Halide::Func consumer, const Halide::VarOrRVar &at, bool double_buffered,
                         int sticks_per_vector);

// f, a Func computed in the scratchpad (store_in(MemoryType::VTCM) and
// compute_at the loop that produces one tile of it), gets two copies of its
// buffer: the store of tile i overlaps the compute of tile i+1, as for
// double_buffer's staged inputs. Call it after scheduling f. The backend
// refuses, naming f, a Func that is not in the scratchpad.
void double_buffer_result(Halide::Func f);

// f, a Func computed in the scratchpad at a loop (as for double_buffer_result),
// gets two copies of its buffer and is computed one iteration of that loop
// ahead of the rest of the iteration: the instructions that write f (and the
// loads before them) of iteration i+1 are issued before the rest of iteration
// i, so a unit computes f's next tile while the other units consume this one
// (a software pipeline over computed tiles, as double_buffer is over loaded
// ones: attention's scores on the PT while the SFU takes this tile's
// softmax). Where the loop's body does not allow it (f written inside a loop
// nested in it, or by an instruction that also writes something else, or a
// conflict with what the writes would move across) the backend keeps the two
// copies and the program order. With second_copy false f keeps one buffer,
// for a tile that the iteration's rest never reads (read only by other Funcs
// computed ahead: attention's scores, read only by the softmax): its writes
// still move with them. Call it after scheduling f; the backend refuses,
// naming f, a Func that is not in the scratchpad.
void compute_one_iteration_ahead(Halide::Func f, bool second_copy = true);

// ---- ring ---------------------------------------------------------------

// f, a staged copy of an input (stage_in_scratchpad or double_buffer first),
// is read from DRAM once per chain of cores that load the same tile and passed
// along the chain over the ring (target/program_tree/ring_sharing.h): for example the A
// tile of a matmul whose cores are split along N only. Cores whose tiles of f
// differ keep loading their own. The backend refuses, naming f, a Func that no
// two cores load identically or whose tile is not contiguous in the scratchpad.
// `forwarding`: a tile travels the chain whole (each core forwards it once it
// has all of it), or in pieces (compiler::ring_forward_pieces: each core
// forwards a piece as soon as it has arrived, so the last core of a chain of n
// holds the tile about n - 1 piece hops after the first, not n - 1 tile hops;
// but a core's DMA queue streams the whole tile through before its own next
// transfer, which a pipeline of many small tiles per core pays for), or
// gathered (every core of a chain loads its share of the tile, rows or planes,
// and the shares travel round the closed chain, so all the chain's cores read
// DRAM at once and none queues the whole tile's load ahead of its forwards;
// the tile's partial rows or planes, if any, must not depend on the tile's loops).
enum class RingForwarding { WholeTiles, Pieces, Gathered };
void share_over_ring(Halide::Func f, RingForwarding forwarding = RingForwarding::WholeTiles);

}  // namespace spyre
