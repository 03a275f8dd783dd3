// Tail splitting (target/program_tree/tail_splitting.h) on hand-built program
// trees: a last matmul, its cast and its store become row pieces in
// piece-by-piece order (the accumulator's initialization before the matmul
// stays whole); a stored tile placed over the matmul's operands moves
// above the core's buffers (or, with no room, nothing changes); the last
// iteration of a loop of tiles is peeled to reach its run; a run whose pieces
// would read what a later piece of an earlier instruction writes is left alone.
// (Every gen_matmul kernel goes through it: the dual realization tests check
// the results end to end.)
#include <gtest/gtest.h>

#include "hand_built_trees.h"
#include "program_tree/tail_splitting.h"

namespace spyre::compiler {
namespace {

namespace Mm = isa::field::Matmul;
namespace Cs = isa::field::Cast;
namespace St = isa::field::DmaStore;

constexpr int64_t kRows = 64, kCols = 128;                  // the tile
constexpr int64_t kAcc = 0;                                 // f32 accumulator, kRows x kCols
constexpr int64_t kK = 64;                                  // A's rows are shorter than the tile's
constexpr int64_t kA = 64 * 1024, kB = 96 * 1024;           // A (kRows x kK f16), B (kK x kCols f16)
constexpr int64_t kBEnd = kB + kK * kCols * 2;
constexpr int64_t kOut = 128 * 1024;                        // the f16 tile the store reads
constexpr int64_t kAccRow = kCols * 4, kOutRow = kCols * 2;  // bytes

ProgramNode matmul(int64_t a = kA) { return test_trees::pt_matmul({kAcc, kAccRow, a, kK * 2, kB, kCols * 2, kRows, kCols, kK}); }

// The whole tile as one vector (the accumulator is contiguous), f32 -> f16.
ProgramNode cast(int64_t dst = kOut) {
    SymInstruction in;
    in.op = isa::Opcode::Cast;
    in.f[Cs::dst].base = dst;
    in.f[Cs::dst_type].base = (int64_t)DType::F16;
    in.f[Cs::a].base = kAcc;
    in.f[Cs::n].base = kRows * kCols;
    in.f[Cs::rows].base = 1;
    in.f[Cs::type].base = (int64_t)DType::F32;
    return ProgramNode::instruction(in);
}

ProgramNode store(int64_t sp = kOut, int64_t dram_coef_level0 = 0) {
    SymInstruction in;
    in.op = isa::Opcode::DmaStore;
    in.f[St::arg].base = 3;
    in.f[St::sp].base = sp;
    in.f[St::row_bytes].base = kOutRow;
    in.f[St::rows].base = kRows;
    in.f[St::dram_row_stride].base = 4096;
    in.f[St::sp_row_stride].base = kOutRow;
    in.f[St::planes].base = 1;
    if (dram_coef_level0) in.f[St::dram].set_coef(0, dram_coef_level0);
    return ProgramNode::instruction(in);
}

TailSplitting options() {
    TailSplitting o;
    o.pt_pass_rows = 8;
    o.stick_bytes = 128;
    o.scratchpad_bytes = 2 << 20;
    return o;
}

TEST(TailSplitting, TheLastMatmulCastAndStoreRunPieceByPiece) {
    std::vector<ProgramNode> tree = {matmul(), matmul(), cast(), store()};
    ASSERT_EQ(split_trailing_tile(tree, options()), 8);
    ASSERT_EQ(tree.size(), 1u + 8 * 3);
    EXPECT_EQ(tree[0].inst.f[Mm::m].base, kRows) << "only the last matmul is cut";
    for (int p = 0; p < 8; p++) {
        const SymInstruction &mm = tree[1 + 3 * p].inst, &cv = tree[2 + 3 * p].inst, &st = tree[3 + 3 * p].inst;
        ASSERT_EQ(mm.op, isa::Opcode::Matmul);
        ASSERT_EQ(cv.op, isa::Opcode::Cast);
        ASSERT_EQ(st.op, isa::Opcode::DmaStore);
        EXPECT_EQ(mm.f[Mm::m].base, 8);
        EXPECT_EQ(mm.f[Mm::c].base, kAcc + p * 8 * kAccRow);
        EXPECT_EQ(mm.f[Mm::a].base, kA + p * 8 * kK * 2);
        EXPECT_EQ(cv.f[Cs::n].base, 8 * kCols);
        EXPECT_EQ(cv.f[Cs::a].base, kAcc + p * 8 * kAccRow);
        EXPECT_EQ(cv.f[Cs::dst].base, kOut + p * 8 * kOutRow);
        EXPECT_EQ(st.f[St::rows].base, 8);
        EXPECT_EQ(st.f[St::sp].base, kOut + p * 8 * kOutRow);
        EXPECT_EQ(st.f[St::dram].base, p * 8 * 4096);
    }
}

TEST(TailSplitting, TheAccumulatorsInitializationBeforeTheMatmulStaysWhole) {
    // acc = bias (a broadcast copy) before the one matmul: only the matmul and what follows it
    // are the run; the initialization stays one instruction before them.
    SymInstruction init;
    init.op = isa::Opcode::Copy;
    init.f[isa::field::Copy::dst].base = kAcc;
    init.f[isa::field::Copy::dst_stride].base = kAccRow;
    init.f[isa::field::Copy::a].base = kOut + 64 * 1024;  // the widened bias row
    init.f[isa::field::Copy::n].base = kCols;
    init.f[isa::field::Copy::rows].base = kRows;
    init.f[isa::field::Copy::type].base = (int64_t)DType::F32;
    std::vector<ProgramNode> tree = {ProgramNode::instruction(init), matmul(), cast(), store()};
    ASSERT_EQ(split_trailing_tile(tree, options()), 8);
    ASSERT_EQ(tree.size(), 1u + 8 * 3);
    EXPECT_EQ(tree[0].inst.op, isa::Opcode::Copy);
    EXPECT_EQ(tree[0].inst.f[isa::field::Copy::rows].base, kRows);
    EXPECT_EQ(tree[1].inst.op, isa::Opcode::Matmul);
    EXPECT_EQ(tree[1].inst.f[Mm::m].base, 8);
}

TEST(TailSplitting, ATileOverTheMatmulsOperandsMovesAboveTheBuffers) {
    // The allocator reused A's bytes for the stored tile: a cast piece written early would
    // overwrite A rows a later matmul piece reads (the tile's rows are twice A's).
    std::vector<ProgramNode> tree = {matmul(), cast(kA), store(kA)};
    ASSERT_EQ(split_trailing_tile(tree, options()), 8);
    const int64_t moved = tree[1].inst.f[Cs::dst].base;
    EXPECT_GE(moved, kBEnd) << "above every buffer the tree touches";
    EXPECT_EQ(moved % 128, 0);
    EXPECT_EQ(tree[2].inst.f[St::sp].base, moved);
    EXPECT_EQ(tree[1 + 3].inst.f[Cs::dst].base, moved + 8 * kOutRow);
    EXPECT_EQ(tree[2 + 3].inst.f[St::sp].base, moved + 8 * kOutRow);
    EXPECT_EQ(tree[0 + 3].inst.f[Mm::a].base, kA + 8 * kK * 2) << "the matmul still reads A where it is";
}

TEST(TailSplitting, NoRoomToMoveTheTileLeavesTheTreeAlone) {
    std::vector<ProgramNode> tree = {matmul(), cast(kA), store(kA)};
    TailSplitting o = options();
    o.scratchpad_bytes = kBEnd;  // full up to B's end
    EXPECT_EQ(split_trailing_tile(tree, o), 1);
    ASSERT_EQ(tree.size(), 3u);
    EXPECT_EQ(tree[1].inst.f[Cs::dst].base, kA);
    EXPECT_EQ(tree[2].inst.f[St::rows].base, kRows);
}

TEST(TailSplitting, TheLastIterationOfALoopOfTilesIsPeeled) {
    // loop t < 3 { matmul, cast, store(t) }: the last tile's run follows a loop of two.
    ProgramNode tiles = ProgramNode::loop(3, "tiles");
    tiles.body = {matmul(), cast(), store(kOut, kRows * 4096)};
    std::vector<ProgramNode> tree = {tiles};
    ASSERT_EQ(split_trailing_tile(tree, options()), 8);
    ASSERT_EQ(tree[0].kind, ProgramNode::Kind::Loop);
    EXPECT_EQ(tree[0].trip, 2);
    ASSERT_EQ(tree.size(), 1u + 8 * 3);
    EXPECT_EQ(tree[3].inst.f[St::dram].base, 2 * kRows * 4096) << "the peeled tile is the third";
    EXPECT_FALSE(tree[3].inst.f[St::dram].depends_on_loops());
    EXPECT_EQ(tree[6].inst.f[St::dram].base, 2 * kRows * 4096 + 8 * 4096);

    // A loop of one tile is replaced by its pieces.
    tiles.trip = 1;
    tree = {tiles};
    ASSERT_EQ(split_trailing_tile(tree, options()), 8);
    ASSERT_EQ(tree.size(), 8u * 3);
    EXPECT_EQ(tree[0].kind, ProgramNode::Kind::Instruction);
}

TEST(TailSplitting, PiecesThatWouldReadALaterPiecesRowsAreNotCut) {
    // Every row of the cast reads the accumulator's last row, which only the matmul's last
    // piece writes: no cast piece may run before it.
    std::vector<ProgramNode> tree = {matmul(), cast(), store()};
    SymInstruction &cv = tree[1].inst;
    cv.f[Cs::n].base = kCols;
    cv.f[Cs::rows].base = kRows;
    cv.f[Cs::a].base = kAcc + (kRows - 1) * kAccRow;
    cv.f[Cs::a_stride].base = 0;
    cv.f[Cs::dst_stride].base = kOutRow;
    EXPECT_EQ(split_trailing_tile(tree, options()), 1);
    ASSERT_EQ(tree.size(), 3u);
    EXPECT_EQ(tree[0].inst.f[Mm::m].base, kRows);
}

TEST(TailSplitting, AStoreAloneOrAReductionIsNotARun) {
    std::vector<ProgramNode> tree = {matmul(), store()};
    tree.insert(tree.begin() + 1, cast());
    SymInstruction rowsum;
    rowsum.op = isa::Opcode::RowSum;
    rowsum.f[isa::field::RowSum::dst].base = kOut;
    rowsum.f[isa::field::RowSum::dst_stride].base = 4;
    rowsum.f[isa::field::RowSum::a].base = kAcc;
    rowsum.f[isa::field::RowSum::a_stride].base = kAccRow;
    rowsum.f[isa::field::RowSum::n].base = kCols;
    rowsum.f[isa::field::RowSum::rows].base = kRows;
    rowsum.f[isa::field::RowSum::type].base = (int64_t)DType::F32;
    tree[1] = ProgramNode::instruction(rowsum);
    EXPECT_EQ(split_trailing_tile(tree, options()), 1) << "a reduction ends the run: the store is alone";
    std::vector<ProgramNode> lone = {store()};
    EXPECT_EQ(split_trailing_tile(lone, options()), 1);
}

}  // namespace
}  // namespace spyre::compiler
