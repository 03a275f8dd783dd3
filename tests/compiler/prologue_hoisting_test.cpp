// Prologue rotation's straight-line part (target/program_tree/prologue_rotation.h) on
// hand-built trees of two tiles one after the other, as a tile loop unrolled by two for a
// double-buffered result leaves them: the second tile's prologue load moves above the
// first tile's cast and store, stopping at the last instruction that reads the buffer it
// overwrites; a store to the DRAM bytes it reads, or another load, keeps it below, and a
// computed prologue step (an SFU instruction marked so) stays. (The
// dual realization tests of gen_matmul check the results of such plans end to end.)
#include <gtest/gtest.h>

#include "hand_built_trees.h"
#include "program_tree/prologue_rotation.h"

namespace spyre::compiler {
namespace {

namespace Un = isa::field::Copy;

constexpr int64_t kRow = 1024;
constexpr int64_t kB0 = 0, kB1 = 4 * kRow, kAcc = 8 * kRow, kOut = 16 * kRow;

ProgramNode load(int64_t arg, int64_t sp) { return test_trees::load(arg, sp, kRow); }

ProgramNode prologue_load(int64_t arg, int64_t sp) {
    ProgramNode n = load(arg, sp);
    n.prologue_load = true;
    return n;
}

// An SFU copy of one row from `src` to `dst`: stands for a compute step reading a buffer.
ProgramNode reader(int64_t dst, int64_t src) { return test_trees::reader(dst, src, kRow); }

ProgramNode store(int64_t arg, int64_t sp) { return test_trees::store(arg, sp, kRow); }

// Tile 1's last two steps (reading B0, then B1), its cast and store, then tile 2's first
// chunk of B (arg 1) loaded into B0 as a prologue load.
std::vector<ProgramNode> two_tiles(const ProgramNode &tile1_store) {
    return {reader(kAcc, kB0), reader(kAcc, kB1), reader(kOut, kAcc), tile1_store, prologue_load(1, kB0)};
}

size_t index_of_prologue_load(const std::vector<ProgramNode> &tree) {
    for (size_t i = 0; i < tree.size(); i++) {
        if (tree[i].kind == ProgramNode::Kind::Instruction && tree[i].prologue_load) return i;
    }
    return tree.size();
}

TEST(PrologueHoisting, TheNextTilesFirstLoadGoesAheadOfThisTilesStore) {
    std::vector<ProgramNode> tree = two_tiles(store(3, kOut));
    rotate_prologue_loads(tree);
    ASSERT_EQ(tree.size(), 5u);
    // Above the step reading B1, the cast and the store; below the step reading B0.
    EXPECT_EQ(index_of_prologue_load(tree), 1u);
    EXPECT_EQ(tree[0].inst.f[Un::a].base, kB0);
    EXPECT_EQ(tree[4].inst.op, isa::Opcode::DmaStore);
}

TEST(PrologueHoisting, AStoreOfTheBytesItReadsKeepsItBelow) {
    // The store writes the DRAM bytes of arg 1 the load reads: the load must see them.
    std::vector<ProgramNode> tree = two_tiles(store(1, kOut));
    rotate_prologue_loads(tree);
    EXPECT_EQ(index_of_prologue_load(tree), 4u);
}

TEST(PrologueHoisting, LoadsKeepTheirOrder) {
    std::vector<ProgramNode> tree = {reader(kAcc, kB1), load(2, kB1 + kRow), reader(kOut, kAcc), prologue_load(1, kB0)};
    rotate_prologue_loads(tree);
    EXPECT_EQ(index_of_prologue_load(tree), 2u) << "stops below the other load";
}

TEST(PrologueHoisting, AComputedPrologueStepStays) {
    // compute_one_iteration_ahead marks the SFU steps of a pipeline's first iteration as
    // prologue items too; moving them ahead of this tile's work would only delay it (attention
    // d=64 s=1024 heads=8: 72.7 -> 74.2 us when they moved).
    std::vector<ProgramNode> tree = {reader(kAcc, kB0), reader(kOut, kAcc), store(3, kOut), reader(kB1 + kRow, kB1)};
    tree[3].prologue_load = true;
    rotate_prologue_loads(tree);
    EXPECT_EQ(index_of_prologue_load(tree), 3u);
}

}  // namespace
}  // namespace spyre::compiler
