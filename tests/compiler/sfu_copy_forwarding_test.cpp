// SFU copy forwarding (target/program_tree/sfu_copy_forwarding.h) on hand-built program
// trees: a temporary copied unchanged to its destination is computed there
// directly, and every condition that would change what some instruction reads
// keeps the copy. (Kernels that rely on it, such as attention's Tuple state
// update, are checked end to end by their dual-realization tests.)
#include <gtest/gtest.h>

#include "program_tree/sfu_copy_forwarding.h"

namespace spyre::compiler {
namespace {

namespace Bin = isa::field::Add;
namespace Un = isa::field::Copy;

constexpr int64_t kN = 32, kRows = 4, kStride = 128;  // four f32 sticks, contiguous

SymOperand at(int64_t base, bool temporary = false) {
    SymOperand o;
    o.base = base;
    o.temporary = temporary;
    return o;
}

ProgramNode binary(isa::Opcode op, SymOperand dst, SymOperand a, SymOperand b, int64_t a_stride = kStride) {
    SymInstruction in;
    in.op = op;
    in.f[Bin::dst] = dst;
    in.f[Bin::dst_stride].base = kStride;
    in.f[Bin::a] = a;
    in.f[Bin::a_stride].base = a_stride;
    in.f[Bin::b] = b;
    in.f[Bin::b_stride].base = kStride;
    in.f[Bin::n].base = kN;
    in.f[Bin::rows].base = kRows;
    in.f[Bin::type].base = (int64_t)DType::F32;
    return ProgramNode::instruction(in);
}

ProgramNode copy(SymOperand dst, SymOperand a) {
    SymInstruction in;
    in.op = isa::Opcode::Copy;
    in.f[Un::dst] = dst;
    in.f[Un::dst_stride].base = kStride;
    in.f[Un::a] = a;
    in.f[Un::a_stride].base = kStride;
    in.f[Un::n].base = kN;
    in.f[Un::rows].base = kRows;
    in.f[Un::type].base = (int64_t)DType::F32;
    return ProgramNode::instruction(in);
}

constexpr int64_t A = 0, B = 1024, T = 4096, X = 8192, D = 12288;

// mul T = A * B; add X = T + B; copy D = T.
std::vector<ProgramNode> producer_reader_copy(bool temporary = true) {
    return {binary(isa::Opcode::Mul, at(T, temporary), at(A), at(B)),
            binary(isa::Opcode::Add, at(X), at(T, temporary), at(B)), copy(at(D), at(T, temporary))};
}

TEST(SfuCopyForwarding, ProducerWritesTheDestinationAndReadersReadIt) {
    std::vector<ProgramNode> tree = producer_reader_copy();
    EXPECT_EQ(forward_sfu_copies(tree), 1);
    ASSERT_EQ(tree.size(), 2u);
    EXPECT_EQ(tree[0].inst.f[Bin::dst].base, D);
    EXPECT_EQ(tree[1].inst.f[Bin::a].base, D);
    EXPECT_EQ(tree[1].inst.f[Bin::dst].base, X);
}

TEST(SfuCopyForwarding, InsideALoopAndInPlaceOnTheDestination) {
    // D = D * B through a temporary, once per iteration of a loop: the producer may read D element for element.
    ProgramNode loop = ProgramNode::loop(8, "rows");
    SymOperand d = at(D), t = at(T, true);
    d.set_coef(0, 512);
    loop.body = {binary(isa::Opcode::Mul, t, d, at(B)), copy(d, t)};
    std::vector<ProgramNode> tree = {loop};
    EXPECT_EQ(forward_sfu_copies(tree), 1);
    ASSERT_EQ(tree[0].body.size(), 1u);
    EXPECT_EQ(tree[0].body[0].inst.f[Bin::dst].base, D);
    EXPECT_EQ(tree[0].body[0].inst.f[Bin::dst].coef_at(0), 512);
}

TEST(SfuCopyForwarding, KeepsTheCopyWhenTheDestinationIsUsedInBetween) {
    std::vector<ProgramNode> tree = producer_reader_copy();
    tree.insert(tree.begin() + 1, copy(at(X + 4096), at(D)));  // reads D's old value
    EXPECT_EQ(forward_sfu_copies(tree), 0);
    EXPECT_EQ(tree.size(), 4u);

    // Another unit reading D in between (a store of its old value) counts too.
    tree = producer_reader_copy();
    SymInstruction store;
    store.op = isa::Opcode::DmaStore;
    store.f[isa::field::DmaStore::sp] = at(D);
    store.f[isa::field::DmaStore::row_bytes].base = 512;
    store.f[isa::field::DmaStore::rows].base = 1;
    store.f[isa::field::DmaStore::planes].base = 1;
    tree.insert(tree.begin() + 1, ProgramNode::instruction(store));
    EXPECT_EQ(forward_sfu_copies(tree), 0);
}

TEST(SfuCopyForwarding, KeepsTheCopyWhenTheTemporaryIsReadAfterIt) {
    std::vector<ProgramNode> tree = producer_reader_copy();
    tree.push_back(binary(isa::Opcode::Add, at(X), at(T, true), at(B)));
    EXPECT_EQ(forward_sfu_copies(tree), 0);
}

TEST(SfuCopyForwarding, KeepsTheCopyWhenTheProducerReadsTheDestinationShifted) {
    std::vector<ProgramNode> tree = {binary(isa::Opcode::Mul, at(T, true), at(D + 128), at(B)), copy(at(D), at(T, true))};
    EXPECT_EQ(forward_sfu_copies(tree), 0);
}

TEST(SfuCopyForwarding, KeepsCopiesOfBuffersThatAreNotTemporaries) {
    std::vector<ProgramNode> tree = producer_reader_copy(false);
    EXPECT_EQ(forward_sfu_copies(tree), 0);
}

TEST(SfuCopyForwarding, KeepsTheCopyWhenAReaderUsesAnotherGeometry) {
    // The reader takes the temporary as a per-row scalar: it would not read the same bytes of D.
    std::vector<ProgramNode> tree = producer_reader_copy();
    tree[1].inst.f[Bin::a_mode].base = 1;
    tree[1].inst.f[Bin::a_stride].base = 0;
    EXPECT_EQ(forward_sfu_copies(tree), 0);
}

TEST(SfuCopyForwarding, KeepsTheCopyToAStridedDestinationWhenTheRowsAreSplitDifferently) {
    // The producer writes the temporary as one row of 128 elements; the copy moves it as 4 rows of 32
    // into a destination whose rows are 256 bytes apart. The producer cannot write those rows.
    std::vector<ProgramNode> tree = producer_reader_copy();
    for (int i : {0, 1}) {
        tree[i].inst.f[Bin::n].base = kN * kRows;
        tree[i].inst.f[Bin::rows].base = 1;
    }
    tree[2].inst.f[Un::dst_stride].base = 2 * kStride;
    EXPECT_EQ(forward_sfu_copies(tree), 0);
    // Into a contiguous destination the same split is fine.
    tree[2].inst.f[Un::dst_stride].base = kStride;
    EXPECT_EQ(forward_sfu_copies(tree), 1);
}

}  // namespace
}  // namespace spyre::compiler
