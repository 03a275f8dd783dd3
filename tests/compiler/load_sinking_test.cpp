// Load sinking (target/program_tree/load_sinking.h) on hand-built program trees:
// a load read only after a loop of loads moves to just before its reader; one
// that the loop touches, one with no loop of loads in between, and a ring-shared
// or prologue load stay. (gen_matmul residual=true relies on it: the dual
// realization tests of the residual check the results end to end.)
#include <gtest/gtest.h>

#include "hand_built_trees.h"
#include "program_tree/load_sinking.h"

namespace spyre::compiler {
namespace {

namespace Ld = isa::field::DmaLoad;
namespace Un = isa::field::Copy;

constexpr int64_t kRow = 1024;

ProgramNode load(int64_t arg, int64_t sp, int64_t dram_coef_level0 = 0) {
    return test_trees::load(arg, sp, kRow, 0, dram_coef_level0);
}

// An SFU copy of one row from `src` to `dst` (reads src).
ProgramNode reader(int64_t dst, int64_t src) { return test_trees::reader(dst, src, kRow); }

constexpr int64_t R = 0, CHUNK = 4 * kRow, OUT = 8 * kRow;

// load R; loop { load a chunk (arg 1); use it }; read R.
std::vector<ProgramNode> residual_tree(int64_t chunk_sp) {
    ProgramNode k = ProgramNode::loop(8, "ko");
    k.body = {load(1, chunk_sp, kRow), reader(OUT + kRow, chunk_sp)};
    return {load(0, R), k, reader(OUT, R)};
}

TEST(LoadSinking, ALoadReadAfterALoopOfLoadsMovesPastIt) {
    std::vector<ProgramNode> tree = residual_tree(CHUNK);
    EXPECT_EQ(sink_late_loads(tree), 1);
    ASSERT_EQ(tree.size(), 3u);
    EXPECT_EQ(tree[0].kind, ProgramNode::Kind::Loop);
    ASSERT_EQ(tree[1].kind, ProgramNode::Kind::Instruction);
    EXPECT_EQ(tree[1].inst.op, isa::Opcode::DmaLoad);
    EXPECT_EQ(tree[1].inst.f[Ld::arg].base, 0) << "R's load now follows the loop";
    EXPECT_EQ(tree[2].inst.op, isa::Opcode::Copy);
}

TEST(LoadSinking, ALoadTheLoopTouchesStays) {
    // The loop's chunks land where R is: moving R's load past them would let them overwrite it.
    std::vector<ProgramNode> tree = residual_tree(R);
    EXPECT_EQ(sink_late_loads(tree), 0);
    EXPECT_EQ(tree[0].inst.op, isa::Opcode::DmaLoad);
}

TEST(LoadSinking, NoLoopOfLoadsInBetweenMeansNoMove) {
    std::vector<ProgramNode> tree = {load(0, R), reader(OUT + kRow, CHUNK), reader(OUT, R)};
    EXPECT_EQ(sink_late_loads(tree), 0);
    EXPECT_EQ(tree[0].inst.op, isa::Opcode::DmaLoad);
}

TEST(LoadSinking, PrologueAndRingSharedLoadsStay) {
    std::vector<ProgramNode> tree = residual_tree(CHUNK);
    tree[0].prologue_load = true;
    EXPECT_EQ(sink_late_loads(tree), 0);
    tree = residual_tree(CHUNK);
    tree[0].inst.ring.role = RingShare::Role::First;
    EXPECT_EQ(sink_late_loads(tree), 0);
}

}  // namespace
}  // namespace spyre::compiler
