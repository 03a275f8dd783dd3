// Gather riders (target/program_tree/gather_riders.h and their emission in
// target/emission/core_streams.cpp) on hand-built program trees: the plain loads
// just before a gathered share, at a position p > 0 of its chain, are marked and
// issued after the core's p-th forward; position 0, a load touching the tile's
// bytes, a load read before the tile, another item between them, and a load
// some unit is told of before the rounds end keep their places. (The dual realization tests of every kernel, and
// MatmulGatheredChains in matmul_planner_ranking_test.cpp, check whole programs.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emission/core_streams.h"
#include "hand_built_trees.h"
#include "program_tree/gather_riders.h"
#include "program_tree/ring_sharing.h"

namespace spyre::compiler {
namespace {

namespace Ld = isa::field::DmaLoad;

constexpr int64_t kStick = 128;
constexpr int64_t A = 0, B = 4096, C = 32768, OTHER = 16384;
constexpr int kChain = 4;

// B's tile, 64 rows of a stick, gathered round a closed chain of four cores at `position`.
ProgramNode gathered_b(int position) {
    ProgramNode n = test_trees::load(1, B, kStick);
    n.inst.f[Ld::rows].base = 64;
    n.inst.f[Ld::valid_rows].base = 64;
    n.inst.f[Ld::dram_row_stride].base = kStick;
    n.inst.f[Ld::sp_row_stride].base = kStick;
    RingShare &r = n.inst.ring;
    r.role = RingShare::Role::Gathered;
    r.position = position;
    r.chain_cores = kChain;
    r.upstream = (position + kChain - 1) % kChain;
    r.downstream = (position + 1) % kChain;
    r.data_channel = kUnitPairChannels;
    r.credit_channel = kUnitPairChannels + 1;
    r.bytes = 64 * kStick;
    return n;
}

ProgramNode load_a(int64_t sp = A) { return test_trees::load(0, sp, kStick); }

// C[1 x 64] += A[1 x 64] . B[64 x 64]: reads A's row and B's tile.
ProgramNode matmul() { return test_trees::pt_matmul({C, 256, A, kStick, B, kStick, 1, 64, 64}); }

TEST(GatherRiders, ThePlainLoadsBeforeAGatheredShareRideItsRounds) {
    std::vector<ProgramNode> tree = {load_a(), load_a(OTHER), gathered_b(2), matmul()};
    EXPECT_EQ(mark_gather_riders(tree), 2);
    EXPECT_EQ(tree[2].inst.ring.riders, 2);
}

TEST(GatherRiders, TheChainsFirstCoreKeepsItsLoadsAhead) {
    std::vector<ProgramNode> tree = {load_a(), gathered_b(0), matmul()};
    EXPECT_EQ(mark_gather_riders(tree), 0);
    EXPECT_EQ(tree[1].inst.ring.riders, 0);
}

TEST(GatherRiders, ALoadTouchingTheTilesBytesStopsTheRiders) {
    // The second load writes into B's tile: it and everything before it stay.
    std::vector<ProgramNode> tree = {load_a(), load_a(B + 64 * kStick - kStick), gathered_b(1), matmul()};
    EXPECT_EQ(mark_gather_riders(tree), 0);
}

TEST(GatherRiders, AnotherItemBetweenStopsTheRiders) {
    std::vector<ProgramNode> tree = {load_a(), test_trees::reader(OTHER, A, kStick), load_a(OTHER + 1024), gathered_b(3),
                                     matmul()};
    EXPECT_EQ(mark_gather_riders(tree), 1) << "only the load right before the share rides";
    EXPECT_EQ(tree[3].inst.ring.riders, 1);
}

TEST(GatherRiders, LoadsInsideALoopRide) {
    std::vector<ProgramNode> body = {test_trees::load(0, A, kStick, 0, kStick), gathered_b(1), matmul()};
    std::vector<ProgramNode> tree = {ProgramNode::loop(8, "k")};
    tree[0].body = body;
    EXPECT_EQ(mark_gather_riders(tree), 1);
    EXPECT_EQ(tree[0].body[1].inst.ring.riders, 1);
}

TEST(GatherRiders, ALoadReadBeforeTheTileStays) {
    // The SFU reads this row before the matmul reads B (a whole-K tile's bias row, widened
    // into the accumulator first): delayed by the rounds it would hold the matmul up.
    std::vector<ProgramNode> tree = {load_a(), load_a(OTHER), gathered_b(2), test_trees::reader(OTHER + 1024, OTHER, kStick),
                                     matmul()};
    EXPECT_EQ(mark_gather_riders(tree), 0) << "the row read first stays, and stops the load before it";
}

// The DMA stream of `tree` (marked by the pass when `mark`), one line per instruction
// ("ring.put", "dma.load", "wait N", ...).
std::vector<std::string> dma_listing(std::vector<ProgramNode> tree, bool mark = true) {
    if (mark) mark_gather_riders(tree);
    const CoreStreams s = emit_core_streams(tree, default_machine());
    std::vector<std::string> out;
    for (const isa::Instruction &in : s.unit[(int)isa::Unit::Dma]) {
        if (in.op == isa::Opcode::Wait || in.op == isa::Opcode::Signal) {
            out.push_back(std::string(in.op == isa::Opcode::Wait ? "wait " : "signal ") + std::to_string(in.f[0].base));
        } else {
            out.push_back(isa::opcode_spec(in.op).mnemonic);
        }
    }
    return out;
}

// How many forwards (ring.put of a share; the credit is the first put) precede the second dma.load (A's).
int forwards_before_a(const std::vector<std::string> &dma) {
    int puts = 0, loads = 0;
    for (const std::string &l : dma) {
        if (l == "ring.put") puts++;
        if (l == "dma.load" && ++loads == 2) return puts - 1;
    }
    return -1;
}

TEST(GatherRiders, ARiderIsIssuedAfterTheCoresPositionthForward) {
    for (int position = 1; position < kChain; position++) {
        const std::vector<std::string> dma = dma_listing({load_a(), gathered_b(position), matmul()});
        EXPECT_EQ(dma.front(), "ring.put") << "the credit, then the share's load, lead; A rides";
        EXPECT_EQ(forwards_before_a(dma), position) << "position " << position;
    }
}

TEST(GatherRiders, ARiderInsideALoopBodyIsIssuedAfterTheForwards) {
    // A K loop: each iteration loads A's chunk and B's gathered tile, then the matmul reads both.
    // The loop-carried tokens (the matmul frees the buffers for the next iteration's loads) stay
    // ahead of the rider: its item keeps its waits, only its load moves.
    std::vector<ProgramNode> tree = {ProgramNode::loop(4, "k")};
    tree[0].body = {test_trees::load(0, A, kStick, 0, kStick), gathered_b(2), matmul()};
    const std::vector<std::string> dma = dma_listing(tree);
    std::vector<std::string> body;
    bool inside = false;
    for (const std::string &l : dma) {
        if (l == "endloop") break;
        if (inside) body.push_back(l);
        if (l == "loop") inside = true;
    }
    ASSERT_FALSE(body.empty());
    EXPECT_NE(body.front(), "dma.load") << "the rider no longer leads the body";
    EXPECT_EQ(forwards_before_a(body), 2);
}

TEST(GatherRiders, ARiderAnotherUnitIsToldOfStaysAhead) {
    // Marked as a rider by hand (the pass would not: its reader comes first), A's load is
    // signalled to the SFU copy that reads it before the rounds end: emission leaves it ahead.
    std::vector<ProgramNode> tree = {load_a(), gathered_b(2), test_trees::reader(OTHER, A, kStick), matmul()};
    tree[1].inst.ring.riders = 1;
    const std::vector<std::string> dma = dma_listing(tree, /*mark=*/false);
    ASSERT_GE(dma.size(), 2u);
    EXPECT_EQ(dma[0], "dma.load");
    EXPECT_EQ(dma[1].rfind("signal", 0), 0u) << dma[1];
}

}  // namespace
}  // namespace spyre::compiler
