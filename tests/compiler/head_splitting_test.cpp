// Head splitting (target/program_tree/head_splitting.h) on hand-built program
// trees: a resident panel's load and the first matmul reading it become row
// pieces (the first tile peeled off its loop), the tile's own B load staying
// ahead of the panel's later pieces; a panel loaded one row per matmul row is
// cut the same way; the smallest piece bounds the count; a panel shared over
// the ring, one with padding rows, and one an item before the matmul reads are
// left alone. (gen_matmul kernels go through it: the dual realization tests
// check the results end to end.)
#include <gtest/gtest.h>

#include "hand_built_trees.h"
#include "program_tree/head_splitting.h"

namespace spyre::compiler {
namespace {

namespace Mm = isa::field::Matmul;
namespace Ld = isa::field::DmaLoad;
namespace St = isa::field::DmaStore;
namespace Un = isa::field::Copy;

constexpr int64_t kRows = 64, kCols = 128, kK = 64;   // the tile, and K
constexpr int64_t kLda = kK * 2;                      // f16 A rows
constexpr int64_t kPanel = 0;                         // A: kRows x kK f16 (8 KB)
constexpr int64_t kB = 64 * 1024;                     // B: kK x kCols f16
constexpr int64_t kAcc = 128 * 1024;                  // f32 accumulator
constexpr int64_t kStoreRowStride = 4096;

// The panel: one flattened row (the layout a contiguous A rows block gets), or a row per A row.
ProgramNode panel_load(bool flattened = true) {
    SymInstruction in;
    in.op = isa::Opcode::DmaLoad;
    in.f[Ld::arg].base = 0;
    in.f[Ld::sp].base = kPanel;
    const int64_t rows = flattened ? 1 : kRows, row_bytes = flattened ? kRows * kLda : kLda;
    in.f[Ld::row_bytes].base = in.f[Ld::valid_bytes].base = row_bytes;
    in.f[Ld::rows].base = in.f[Ld::valid_rows].base = rows;
    in.f[Ld::dram_row_stride].base = 4096;
    in.f[Ld::sp_row_stride].base = row_bytes;
    in.f[Ld::planes].base = in.f[Ld::valid_planes].base = 1;
    return ProgramNode::instruction(in);
}

// B of N tile L0 (its DRAM address moves with the level-0 loop).
ProgramNode b_load() {
    SymInstruction in;
    in.op = isa::Opcode::DmaLoad;
    in.f[Ld::arg].base = 1;
    in.f[Ld::dram].set_coef(0, kCols * 2);
    in.f[Ld::sp].base = kB;
    in.f[Ld::row_bytes].base = in.f[Ld::valid_bytes].base = kCols * 2;
    in.f[Ld::rows].base = in.f[Ld::valid_rows].base = kK;
    in.f[Ld::dram_row_stride].base = 8192;
    in.f[Ld::sp_row_stride].base = kCols * 2;
    in.f[Ld::planes].base = in.f[Ld::valid_planes].base = 1;
    return ProgramNode::instruction(in);
}

ProgramNode matmul() {
    return test_trees::pt_matmul({kAcc, kCols * 4, kPanel, kLda, kB, kCols * 2, kRows, kCols, kK, /*accumulate=*/false});
}

// The accumulator stored as it is (f32) to the tile of N tile L0.
ProgramNode store() {
    SymInstruction in;
    in.op = isa::Opcode::DmaStore;
    in.f[St::arg].base = 2;
    in.f[St::dram].set_coef(0, kCols * 4);
    in.f[St::sp].base = kAcc;
    in.f[St::row_bytes].base = kCols * 4;
    in.f[St::rows].base = kRows;
    in.f[St::dram_row_stride].base = kStoreRowStride;
    in.f[St::sp_row_stride].base = kCols * 4;
    in.f[St::planes].base = 1;
    return ProgramNode::instruction(in);
}

// The panel, then a loop of `tiles` N tiles: B's load, the matmul, the store.
std::vector<ProgramNode> tree_of(int64_t tiles, bool flattened = true) {
    ProgramNode loop = ProgramNode::loop(tiles, "n");
    loop.body = {b_load(), matmul(), store()};
    return {panel_load(flattened), loop};
}

HeadSplitting options() {
    HeadSplitting o;
    o.pt_pass_rows = 8;
    o.stick_bytes = 128;
    return o;
}

TEST(HeadSplitting, ThePanelAndTheFirstMatmulRunInRowPieces) {
    std::vector<ProgramNode> tree = tree_of(4);
    ASSERT_EQ(split_leading_panel(tree, options()), 8);
    // panel piece 0, B of tile 0, panel pieces 1..7, 8 matmul pieces, the store, the loop.
    ASSERT_EQ(tree.size(), 1u + 1 + 7 + 8 + 1 + 1);
    const int64_t piece_bytes = kRows * kLda / 8;
    for (int p = 0; p < 8; p++) {
        const ProgramNode &ld = tree[p == 0 ? 0 : (size_t)(1 + p)];
        ASSERT_EQ(ld.inst.op, isa::Opcode::DmaLoad) << p;
        EXPECT_EQ(ld.inst.f[Ld::sp].base, kPanel + p * piece_bytes) << p;
        EXPECT_EQ(ld.inst.f[Ld::dram].base, p * piece_bytes) << p;
        EXPECT_EQ(ld.inst.f[Ld::row_bytes].base, piece_bytes) << p;
        EXPECT_EQ(ld.inst.f[Ld::valid_bytes].base, piece_bytes) << p;
    }
    EXPECT_EQ(tree[1].inst.f[Ld::arg].base, 1) << "the tile's B loads before the panel's later pieces";
    EXPECT_FALSE(tree[1].inst.f[Ld::dram].depends_on_loops()) << "the first tile, peeled: N tile 0";
    for (int p = 0; p < 8; p++) {
        const SymInstruction &mm = tree[(size_t)(9 + p)].inst;
        ASSERT_EQ(mm.op, isa::Opcode::Matmul) << p;
        EXPECT_EQ(mm.f[Mm::m].base, 8) << p;
        EXPECT_EQ(mm.f[Mm::a].base, kPanel + p * 8 * kLda) << p;
        EXPECT_EQ(mm.f[Mm::c].base, kAcc + p * 8 * kCols * 4) << p;
    }
    EXPECT_EQ(tree[17].inst.op, isa::Opcode::DmaStore);
    const ProgramNode &loop = tree[18];
    ASSERT_EQ(loop.kind, ProgramNode::Kind::Loop);
    EXPECT_EQ(loop.trip, 3);
    // The loop starts from the second tile: its B load and store moved one tile on.
    EXPECT_EQ(loop.body[0].inst.f[Ld::dram].base, kCols * 2);
    EXPECT_EQ(loop.body[0].inst.f[Ld::dram].coef_at(0), kCols * 2);
    EXPECT_EQ(loop.body[2].inst.f[St::dram].base, kCols * 4);
    EXPECT_EQ(loop.body[1].inst.f[Mm::m].base, kRows) << "the later tiles' matmuls stay whole";
}

TEST(HeadSplitting, APanelOfOneRowPerMatmulRowIsCutAlongItsRows) {
    std::vector<ProgramNode> tree = tree_of(2, /*flattened=*/false);
    ASSERT_EQ(split_leading_panel(tree, options()), 8);
    const SymInstruction &second = tree[2].inst;
    ASSERT_EQ(second.op, isa::Opcode::DmaLoad);
    EXPECT_EQ(second.f[Ld::rows].base, 8);
    EXPECT_EQ(second.f[Ld::valid_rows].base, 8);
    EXPECT_EQ(second.f[Ld::sp].base, kPanel + 8 * kLda);
    EXPECT_EQ(second.f[Ld::dram].base, 8 * 4096);
    // A loop of two tiles: the second, alone, replaces the loop.
    EXPECT_EQ(tree.back().kind, ProgramNode::Kind::Instruction);
    EXPECT_EQ(tree.back().inst.f[St::dram].base, kCols * 4);
}

TEST(HeadSplitting, TheSmallestPieceBoundsTheCount) {
    std::vector<ProgramNode> tree = tree_of(4);
    HeadSplitting o = options();
    o.min_piece_bytes = kRows * kLda / 2;
    EXPECT_EQ(split_leading_panel(tree, o), 2);
    o.min_piece_bytes = kRows * kLda + 1;
    std::vector<ProgramNode> untouched = tree_of(4);
    EXPECT_EQ(split_leading_panel(untouched, o), 1);
    EXPECT_EQ(untouched.size(), 2u);
}

TEST(HeadSplitting, PanelsItCannotCutAreLeftAlone) {
    std::vector<ProgramNode> shared = tree_of(4);
    shared[0].inst.ring.role = RingShare::Role::First;
    EXPECT_EQ(split_leading_panel(shared, options()), 1) << "a panel shared over the ring";
    EXPECT_EQ(shared.size(), 2u);

    std::vector<ProgramNode> padded = tree_of(4, /*flattened=*/false);
    padded[0].inst.f[Ld::valid_rows].base = kRows - 3;
    EXPECT_EQ(split_leading_panel(padded, options()), 1) << "a panel with padding rows";
    EXPECT_EQ(padded.size(), 2u);

    // An SFU step of the first tile reads the panel's last row before B's load: the later
    // pieces, which load after B's, cannot move past it.
    std::vector<ProgramNode> read_early = tree_of(4);
    SymInstruction copy;
    copy.op = isa::Opcode::Copy;
    copy.f[Un::dst].base = 256 * 1024;
    copy.f[Un::a].base = kPanel + (kRows - 1) * kLda;
    copy.f[Un::n].base = kK / 2;
    copy.f[Un::rows].base = 1;
    copy.f[Un::type].base = (int64_t)DType::F32;
    read_early[1].body.insert(read_early[1].body.begin(), ProgramNode::instruction(copy));
    EXPECT_EQ(split_leading_panel(read_early, options()), 1);
    EXPECT_EQ(read_early.size(), 2u) << "left alone, the loop not peeled";
}

}  // namespace
}  // namespace spyre::compiler
