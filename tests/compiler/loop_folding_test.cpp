// Loop folding (target/program_tree/loop_folding.h) on hand-built program trees:
// a loop of several SFU instructions that touch nothing another of them writes
// (the initial values of a Tuple's components, as attention's state) is split
// into one folded instruction each; a loop whose instructions meet, or that holds
// a PT instruction, stays a loop. (Kernels that rely on it are checked end to end
// by their dual-realization tests: attention's state init.)
#include <gtest/gtest.h>

#include "program_tree/loop_folding.h"

namespace spyre::compiler {
namespace {

namespace Un = isa::field::Copy;
namespace Mm = isa::field::Matmul;

constexpr int64_t kLanes = 32, kStick = 128;  // f32 sticks

// One stick of `dst` (+ the given per-level coefficients) filled with an immediate.
ProgramNode fill(int64_t dst, std::vector<std::pair<int, int64_t>> coefs, int64_t imm) {
    SymInstruction in;
    in.op = isa::Opcode::Copy;
    in.f[Un::dst].base = dst;
    for (auto [level, c] : coefs) in.f[Un::dst].set_coef(level, c);
    in.f[Un::a_mode].base = 2;  // the immediate
    in.f[Un::n].base = kLanes;
    in.f[Un::rows].base = 1;
    in.f[Un::type].base = (int64_t)DType::F32;
    in.f[Un::imm].base = imm;
    return ProgramNode::instruction(in);
}

// rows x sticks: state(O) at 0 and state(m) right after it, as attention's Tuple init.
std::vector<ProgramNode> two_fills(int64_t second_base) {
    ProgramNode sticks = ProgramNode::loop(5, "sticks");
    sticks.body = {fill(0, {{0, 5 * kStick}, {1, kStick}}, 0), fill(second_base, {{0, 5 * kStick}, {1, kStick}}, 7)};
    ProgramNode rows = ProgramNode::loop(64, "rows");
    rows.body = {sticks};
    return {rows};
}

TEST(LoopFolding, IndependentFillsOfALoopBecomeOneInstructionEach) {
    std::vector<ProgramNode> tree = two_fills(64 * 5 * kStick);
    fold_loops(tree);
    ASSERT_EQ(tree.size(), 2u);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(tree[i].kind, ProgramNode::Kind::Instruction);
        EXPECT_EQ(tree[i].inst.f[Un::n].base * tree[i].inst.f[Un::rows].base, kLanes * 5 * 64) << i;
        EXPECT_EQ(tree[i].inst.f[Un::dst].coef_at(0), 0);
        EXPECT_EQ(tree[i].inst.f[Un::dst].coef_at(1), 0);
    }
    EXPECT_EQ(tree[0].inst.f[Un::dst].base, 0);
    EXPECT_EQ(tree[0].inst.f[Un::imm].base, 0);
    EXPECT_EQ(tree[1].inst.f[Un::dst].base, 64 * 5 * kStick);
    EXPECT_EQ(tree[1].inst.f[Un::imm].base, 7) << "the order of the instructions is kept";
}

TEST(LoopFolding, FillsThatMeetStayInTheirLoop) {
    // The second fill starts inside the first's range: after a split the later values would differ.
    std::vector<ProgramNode> tree = two_fills(3 * kStick);
    fold_loops(tree);
    ASSERT_EQ(tree.size(), 1u);
    EXPECT_EQ(tree[0].kind, ProgramNode::Kind::Loop);
    ASSERT_EQ(tree[0].body.size(), 1u);
    EXPECT_EQ(tree[0].body[0].kind, ProgramNode::Kind::Loop);
    EXPECT_EQ(tree[0].body[0].body.size(), 2u);
}

TEST(LoopFolding, ALoopWithAPtInstructionIsNotSplit) {
    SymInstruction mm;
    mm.op = isa::Opcode::Matmul;
    mm.f[Mm::c].base = 1 << 20;
    mm.f[Mm::m].base = 8;
    mm.f[Mm::n].base = 64;
    mm.f[Mm::k].base = 64;
    ProgramNode loop = ProgramNode::loop(4, "tiles");
    loop.body = {fill(0, {{0, kStick}}, 0), ProgramNode::instruction(mm)};
    std::vector<ProgramNode> tree = {loop};
    fold_loops(tree);
    ASSERT_EQ(tree.size(), 1u);
    EXPECT_EQ(tree[0].kind, ProgramNode::Kind::Loop);
    EXPECT_EQ(tree[0].body.size(), 2u);
}

}  // namespace
}  // namespace spyre::compiler
