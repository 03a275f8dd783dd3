// Instructions for hand-built program trees in the program-tree pass tests:
// a one-row DMA load or store of `row_bytes`, an SFU copy of one row (a
// stand-in for any compute step that reads one buffer and writes another) and
// an f16 PT matmul.
// Addresses are plain scratchpad offsets; a DRAM address may carry a
// coefficient of the outermost loop (level 0).
#pragma once

#include <cstdint>

#include "program_tree/program_tree.h"

namespace spyre::compiler::test_trees {

// A load of one row of arg `arg` (at `dram` + `dram_coef_level0` x the level-0 loop index) to `sp`.
inline ProgramNode load(int64_t arg, int64_t sp, int64_t row_bytes, int64_t dram = 0, int64_t dram_coef_level0 = 0) {
    namespace Ld = isa::field::DmaLoad;
    SymInstruction in;
    in.op = isa::Opcode::DmaLoad;
    in.f[Ld::arg].base = arg;
    in.f[Ld::dram].base = dram;
    if (dram_coef_level0) in.f[Ld::dram].set_coef(0, dram_coef_level0);
    in.f[Ld::sp].base = sp;
    in.f[Ld::row_bytes].base = row_bytes;
    in.f[Ld::valid_bytes].base = row_bytes;
    in.f[Ld::rows].base = 1;
    in.f[Ld::valid_rows].base = 1;
    in.f[Ld::planes].base = 1;
    in.f[Ld::valid_planes].base = 1;
    return ProgramNode::instruction(in);
}

// A store of one row from `sp` to arg `arg` at `dram`.
inline ProgramNode store(int64_t arg, int64_t sp, int64_t row_bytes, int64_t dram = 0) {
    namespace St = isa::field::DmaStore;
    SymInstruction in;
    in.op = isa::Opcode::DmaStore;
    in.f[St::arg].base = arg;
    in.f[St::dram].base = dram;
    in.f[St::sp].base = sp;
    in.f[St::row_bytes].base = row_bytes;
    in.f[St::rows].base = 1;
    in.f[St::planes].base = 1;
    return ProgramNode::instruction(in);
}

// An SFU copy of one row of f32 (row_bytes / 4 elements) from `src` to `dst`.
inline ProgramNode reader(int64_t dst, int64_t src, int64_t row_bytes) {
    namespace Un = isa::field::Copy;
    SymInstruction in;
    in.op = isa::Opcode::Copy;
    in.f[Un::dst].base = dst;
    in.f[Un::a].base = src;
    in.f[Un::n].base = row_bytes / 4;
    in.f[Un::rows].base = 1;
    in.f[Un::type].base = (int64_t)DType::F32;
    return ProgramNode::instruction(in);
}

// An f16 PT matmul C[m x n] (+)= A[m x k] . B[k x n]; the leading dimensions are bytes.
struct MatmulOperands {
    int64_t c, ldc, a, lda, b, ldb, m, n, k;
    bool accumulate = true;
};
inline ProgramNode pt_matmul(const MatmulOperands &o) {
    namespace Mm = isa::field::Matmul;
    SymInstruction in;
    in.op = isa::Opcode::Matmul;
    in.f[Mm::c].base = o.c;
    in.f[Mm::ldc].base = o.ldc;
    in.f[Mm::a].base = o.a;
    in.f[Mm::lda].base = o.lda;
    in.f[Mm::b].base = o.b;
    in.f[Mm::ldb].base = o.ldb;
    in.f[Mm::m].base = o.m;
    in.f[Mm::n].base = o.n;
    in.f[Mm::k].base = o.k;
    in.f[Mm::in_type].base = (int64_t)DType::F16;
    in.f[Mm::accumulate].base = o.accumulate ? 1 : 0;
    return ProgramNode::instruction(in);
}

}  // namespace spyre::compiler::test_trees
