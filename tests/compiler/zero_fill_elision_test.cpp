// Zero-fill elision (target/program_tree/zero_fill_elision.h) on hand-built program trees:
// a zero fill that a PT matmul then overwrites whole becomes a non-accumulating
// matmul, and every case where the zeros could still be read keeps the fill.
// (Attention relies on it per KV tile and is checked end to end by its
// dual-realization tests.)
#include <gtest/gtest.h>

#include "hand_built_trees.h"
#include "program_tree/zero_fill_elision.h"

namespace spyre::compiler {
namespace {

namespace Mm = isa::field::Matmul;
namespace Un = isa::field::Copy;

constexpr int64_t A = 0, B = 8192, C = 16384;  // C: 64 rows x 32 f32 = 8 KiB

SymOperand at(int64_t base) {
    SymOperand o;
    o.base = base;
    return o;
}

ProgramNode fill_zero(int64_t dst, int64_t bytes, int64_t imm = 0) {
    SymInstruction in;
    in.op = isa::Opcode::Copy;
    in.f[Un::dst] = at(dst);
    in.f[Un::a_mode].base = 2;
    in.f[Un::imm].base = imm;
    in.f[Un::n].base = bytes / 4;
    in.f[Un::rows].base = 1;
    in.f[Un::type].base = (int64_t)DType::F32;
    return ProgramNode::instruction(in);
}

// C[64 x 32] += A[64 x 64] . B[64 x 32], f16 operands.
ProgramNode matmul(int64_t c = C, int64_t a = A) { return test_trees::pt_matmul({c, 128, a, 128, B, 64, 64, 32, 64}); }

TEST(ZeroFillElision, TheMatmulOverwritesInsteadOfAccumulating) {
    std::vector<ProgramNode> tree = {fill_zero(C, 8192), matmul()};
    EXPECT_EQ(elide_zero_fills(tree), 1);
    ASSERT_EQ(tree.size(), 1u);
    EXPECT_EQ(tree[0].inst.op, isa::Opcode::Matmul);
    EXPECT_EQ(tree[0].inst.f[Mm::accumulate].base, 0);
}

TEST(ZeroFillElision, KeepsTheFillWhenTheMatmulCoversPartOfIt) {
    std::vector<ProgramNode> tree = {fill_zero(C, 16384), matmul()};
    EXPECT_EQ(elide_zero_fills(tree), 0);
    EXPECT_EQ(tree.size(), 2u);
}

TEST(ZeroFillElision, KeepsAFillOfAnotherValue) {
    std::vector<ProgramNode> tree = {fill_zero(C, 8192, 0x3f800000), matmul()};  // 1.0f
    EXPECT_EQ(elide_zero_fills(tree), 0);
}

TEST(ZeroFillElision, KeepsTheFillWhenSomethingReadsItFirst) {
    SymInstruction read;
    read.op = isa::Opcode::Copy;
    read.f[Un::dst] = at(32768);
    read.f[Un::a] = at(C);
    read.f[Un::n].base = 32;
    read.f[Un::rows].base = 1;
    read.f[Un::type].base = (int64_t)DType::F32;
    std::vector<ProgramNode> tree = {fill_zero(C, 8192), ProgramNode::instruction(read), matmul()};
    EXPECT_EQ(elide_zero_fills(tree), 0);
}

TEST(ZeroFillElision, KeepsTheFillOfAChunkedAccumulation) {
    // The matmul accumulates over a K loop: only its first iteration could overwrite.
    ProgramNode k_loop = ProgramNode::loop(4, "k");
    k_loop.body = {matmul()};
    std::vector<ProgramNode> tree = {fill_zero(C, 8192), k_loop};
    EXPECT_EQ(elide_zero_fills(tree), 0);
}

}  // namespace
}  // namespace spyre::compiler
