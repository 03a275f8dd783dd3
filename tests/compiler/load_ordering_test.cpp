// Load ordering (target/program_tree/load_ordering.h) on hand-built program trees:
// in a run of consecutive loads, a load read before every load after it passes the
// load before it when that one is read later and moves at least as many bytes (the
// bias row ahead of B); a load already followed by a later-read load, a larger
// load, loads read by the same item, loads whose scratchpad bytes overlap,
// ring-shared loads and loads with other items between them keep their places. (The dual realization tests of every
// kernel check the results end to end.)
#include <gtest/gtest.h>

#include "hand_built_trees.h"
#include "program_tree/load_ordering.h"

namespace spyre::compiler {
namespace {

namespace Ld = isa::field::DmaLoad;

constexpr int64_t kRow = 1024;
constexpr int64_t A = 0, B = 4 * kRow, BIAS = 8 * kRow, OUT = 12 * kRow;

ProgramNode load(int64_t arg, int64_t sp) { return test_trees::load(arg, sp, kRow); }
ProgramNode reader(int64_t dst, int64_t src) { return test_trees::reader(dst, src, kRow); }

int64_t arg_of(const ProgramNode &n) { return n.inst.f[Ld::arg].base; }

// load A; load B; load bias; widen the bias; read A; read B.
std::vector<ProgramNode> tile_tree(int64_t bias_sp) {
    return {load(0, A), load(1, B), load(2, bias_sp), reader(OUT, bias_sp), reader(OUT + kRow, A), reader(OUT + 2 * kRow, B)};
}

TEST(LoadOrdering, TheLastLoadReadFirstPassesTheLoadBeforeIt) {
    std::vector<ProgramNode> tree = tile_tree(BIAS);
    EXPECT_EQ(order_loads_by_first_reader(tree), 1);
    ASSERT_EQ(tree.size(), 6u);
    EXPECT_EQ(arg_of(tree[0]), 0);
    EXPECT_EQ(arg_of(tree[1]), 2) << "the bias row, read first, lands before B, whose load its widening overlaps";
    EXPECT_EQ(arg_of(tree[2]), 1);
    EXPECT_EQ(tree[3].inst.op, isa::Opcode::Copy);
}

TEST(LoadOrdering, ALoadFollowedByALaterReadLoadStays) {
    // load A; load bias; load B: the bias row's widening already overlaps B's load.
    std::vector<ProgramNode> tree = {load(0, A), load(2, BIAS), load(1, B), reader(OUT, BIAS), reader(OUT + kRow, A),
                                     reader(OUT + 2 * kRow, B)};
    EXPECT_EQ(order_loads_by_first_reader(tree), 0);
    EXPECT_EQ(arg_of(tree[0]), 0);
    EXPECT_EQ(arg_of(tree[1]), 2);
}

TEST(LoadOrdering, LoadsReadInTheirOrderStay) {
    std::vector<ProgramNode> tree = {load(0, A), load(1, B), reader(OUT, A), reader(OUT + kRow, B)};
    EXPECT_EQ(order_loads_by_first_reader(tree), 0);
    EXPECT_EQ(arg_of(tree[0]), 0);
    EXPECT_EQ(arg_of(tree[1]), 1);
}

TEST(LoadOrdering, ALargerLoadReadFirstStaysBehindASmallerOne) {
    // A row of four rows' bytes, read first, does not pass a one-row load: the one-row load's
    // reader (on another unit, in a real program) would wait for all four rows.
    std::vector<ProgramNode> tree = {load(0, A), test_trees::load(2, BIAS, 4 * kRow), reader(OUT, BIAS), reader(OUT + kRow, A)};
    EXPECT_EQ(order_loads_by_first_reader(tree), 0);
    EXPECT_EQ(arg_of(tree[0]), 0);
}

TEST(LoadOrdering, LoadsReadByOneItemKeepTheirOrder) {
    // One reader of both A and B: the matmul (here an SFU copy over both ranges).
    std::vector<ProgramNode> tree = {load(0, A), load(1, A + kRow), test_trees::reader(OUT, A, 2 * kRow)};
    EXPECT_EQ(order_loads_by_first_reader(tree), 0);
    EXPECT_EQ(arg_of(tree[0]), 0);
}

TEST(LoadOrdering, LoadsOverlappingInScratchpadKeepTheirOrder) {
    // The second load's row overlaps the first's second half and is read first (its
    // other half): moved ahead, the first load would overwrite part of it.
    std::vector<ProgramNode> tree = {load(0, A), load(2, A + kRow / 2), reader(OUT, A + kRow), reader(OUT + kRow, A)};
    EXPECT_EQ(order_loads_by_first_reader(tree), 0);
    EXPECT_EQ(arg_of(tree[0]), 0);
    EXPECT_EQ(arg_of(tree[1]), 2);
}

TEST(LoadOrdering, RingSharedLoadsAndSeparatedLoadsStay) {
    std::vector<ProgramNode> tree = tile_tree(BIAS);
    tree[2].inst.ring.role = RingShare::Role::First;
    EXPECT_EQ(order_loads_by_first_reader(tree), 0) << "a ring-shared load is not part of a run";
    tree = {load(0, A), reader(OUT + 3 * kRow, OUT + 4 * kRow), load(2, BIAS), reader(OUT, BIAS), reader(OUT + kRow, A)};
    EXPECT_EQ(order_loads_by_first_reader(tree), 0) << "loads with an item between them are two runs";
}

TEST(LoadOrdering, RunsInsideLoopsAreOrdered) {
    ProgramNode tile = ProgramNode::loop(4, "no");
    tile.body = tile_tree(BIAS);
    std::vector<ProgramNode> tree = {tile};
    EXPECT_EQ(order_loads_by_first_reader(tree), 1);
    EXPECT_EQ(arg_of(tree[0].body[1]), 2);
}

TEST(LoadOrdering, AReaderInsideALaterLoopCounts) {
    // The bias row's reader is an item of a loop that follows: found at that loop.
    ProgramNode widen = ProgramNode::loop(4, "rows");
    widen.body = {reader(OUT, BIAS)};
    std::vector<ProgramNode> tree = {load(0, A), load(1, B), load(2, BIAS), widen, reader(OUT + kRow, A), reader(OUT + 2 * kRow, B)};
    EXPECT_EQ(order_loads_by_first_reader(tree), 1);
    EXPECT_EQ(arg_of(tree[1]), 2);
}

TEST(LoadOrdering, ALoadNoItemReadsStays) {
    // Nothing after the run reads the last load: it is read no earlier than the others.
    std::vector<ProgramNode> tree = {load(0, A), load(1, B), load(2, BIAS), reader(OUT, A), reader(OUT + kRow, B)};
    EXPECT_EQ(order_loads_by_first_reader(tree), 0);
    EXPECT_EQ(arg_of(tree[2]), 2);
}

TEST(LoadOrdering, ALoadWhoseBytesVaryWithTheLoopsStays) {
    ProgramNode tile = ProgramNode::loop(4, "no");
    tile.body = tile_tree(BIAS);
    tile.body[2].inst.f[Ld::rows].set_coef(0, 1);  // one more row each iteration
    std::vector<ProgramNode> tree = {tile};
    EXPECT_EQ(order_loads_by_first_reader(tree), 0);
}

TEST(LoadOrdering, OverlapsAcrossTheLoopsIterationsKeepTheOrder) {
    // In a loop of two iterations the bias row lands one row further on in the second, where
    // B's row is: apart in the first iteration, overlapping over both.
    ProgramNode tile = ProgramNode::loop(2, "no");
    tile.body = {load(0, A), load(1, BIAS + kRow), load(2, BIAS), reader(OUT, BIAS), reader(OUT + kRow, A),
                 reader(OUT + 2 * kRow, BIAS + kRow)};
    tile.body[2].inst.f[Ld::sp].set_coef(0, kRow);
    std::vector<ProgramNode> tree = {tile};
    EXPECT_EQ(order_loads_by_first_reader(tree), 0);
    EXPECT_EQ(arg_of(tree[0].body[1]), 1);
}

}  // namespace
}  // namespace spyre::compiler
