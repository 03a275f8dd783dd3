// Reuse of the overlap between consecutive staged tiles (a sub-step of
// double buffering, double_buffering.h).
//
// A stencil stages overlapping tiles: a 3x3 convolution's input tile of ty
// output rows is ty + 2 input rows, and the next tile starts ty rows later, so
// two of its rows are the previous tile's last two. In a double-buffered
// staging loop the previous tile sits in the other copy of the buffer when
// the next one loads. Where the overlap is the end of one contiguous run of
// bytes, or the last rows of a tile of rows (a strip of a wider image, each
// row its own run, the tile moved down by whole rows), the load is split: an
// SFU copy moves the overlap from the other copy (scratchpad to scratchpad, no
// DRAM traffic), and the DMA load reads only the new bytes or rows.
// DRAM then reads each byte of a row of tiles once instead of (ty + 2) / ty
// times.
//
// Expects (the caller, double_buffering.cpp, checks the program-level
// conditions): `load` and `previous` are the same staging load in consecutive
// iterations, into the two copies of one ping-pong buffer; when `load` runs,
// the other copy still holds exactly what `previous` loaded (nothing else
// writes that copy between them); the kernel never writes the tensor they
// read. Guarantees the same bytes in the scratchpad after the copy and the
// shrunk load as after the original load.
#pragma once

#include <cstdint>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// If `load` (one contiguous run of whole sticks, all valid) reads DRAM bytes
// that begin inside the run `previous` read and continue past its end, or
// (rows of one plane, all valid, with the same strides) starts k whole rows
// after `previous` with k below its row count, every other operand moving
// alike: shrinks `load` to the bytes (rows) past `previous`'s end and sets
// `*copy` to the SFU copy (of 4-byte words, bit-exact) of the overlap from
// where `previous` put it; returns true. Otherwise returns false and changes
// nothing. `max_lanes` bounds the copy's elements per row.
bool reuse_tile_overlap(ProgramNode &load, const ProgramNode &previous, int64_t stick_bytes, int64_t max_lanes,
                        ProgramNode *copy);

}  // namespace compiler
}  // namespace spyre
