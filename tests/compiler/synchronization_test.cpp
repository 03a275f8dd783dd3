// Stream emission and its token synchronization (target/emission/core_streams.h) on hand-built program
// trees: the order of signals and waits per channel pairs every wait with the
// signal of the instruction it depends on.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "spyre/machine.h"
#include "emission/core_streams.h"

namespace spyre::compiler {
namespace {

namespace Load = isa::field::DmaLoad;
namespace Un = isa::field::Copy;

SymOperand at(int64_t base) {
    SymOperand o;
    o.base = base;
    return o;
}

ProgramNode load(int64_t sp, int64_t bytes) {
    SymInstruction in;
    in.op = isa::Opcode::DmaLoad;
    in.f[Load::sp] = at(sp);
    in.f[Load::row_bytes].base = bytes;
    in.f[Load::valid_bytes].base = bytes;
    in.f[Load::rows].base = 1;
    in.f[Load::valid_rows].base = 1;
    in.f[Load::planes].base = 1;
    in.f[Load::valid_planes].base = 1;
    return ProgramNode::instruction(in);
}

ProgramNode sfu_copy(int64_t dst, int64_t src, int64_t elements) {
    SymInstruction in;
    in.op = isa::Opcode::Copy;
    in.f[Un::dst] = at(dst);
    in.f[Un::a] = at(src);
    in.f[Un::n].base = elements;
    in.f[Un::rows].base = 1;
    in.f[Un::type].base = (int64_t)DType::F32;
    return ProgramNode::instruction(in);
}

// One line per instruction of a stream: "wait 2", "signal 2", "loop", "end", or the mnemonic.
std::vector<std::string> listing(const std::vector<isa::Instruction> &stream) {
    std::vector<std::string> out;
    for (const isa::Instruction &in : stream) {
        switch (in.op) {
        case isa::Opcode::Wait: out.push_back("wait " + std::to_string(in.f[0].base)); break;
        case isa::Opcode::Signal: out.push_back("signal " + std::to_string(in.f[0].base)); break;
        case isa::Opcode::Loop: out.push_back("loop"); break;
        case isa::Opcode::EndLoop: out.push_back("end"); break;
        default: out.push_back(isa::opcode_spec(in.op).mnemonic); break;
        }
    }
    return out;
}

// The DMA and SFU streams of `tree` as listings, and the DMA -> SFU channel's wait and signal lines.
struct DmaSfuListing {
    std::vector<std::string> sfu, dma;
    std::string dma_to_sfu, dma_signals_sfu;  // "wait N", "signal N"
};
DmaSfuListing dma_sfu_listing(const std::vector<ProgramNode> &tree) {
    const CoreStreams s = emit_core_streams(tree, default_machine());
    const std::string channel = std::to_string((int)isa::Unit::Dma * isa::kNumUnits + (int)isa::Unit::Sfu);
    return {listing(s.unit[(int)isa::Unit::Sfu]), listing(s.unit[(int)isa::Unit::Dma]), "wait " + channel,
            "signal " + channel};
}

// A load before a loop whose SFU reader comes only after the loop, while the loop itself
// has DMA -> SFU pairs on the same channel: the token of the first load must not be taken
// by the loop's first wait (which would let every iteration's copy run one load early).
TEST(Synchronization, ATokenFromBeforeALoopIsNotTakenByAWaitInsideIt) {
    ProgramNode body = ProgramNode::loop(3, "tiles");
    body.body = {load(4096, 512), sfu_copy(8192, 4096, 128)};  // each tile: load it, then read it
    const std::vector<ProgramNode> tree = {load(0, 512), body, sfu_copy(16384, 0, 128)};
    const auto [sfu, dma, dma_to_sfu, dma_signals_sfu] = dma_sfu_listing(tree);

    // The DMA signals once after the first load and once per iteration; the SFU waits once before
    // the loop (the first load's token), once per iteration before its copy, and never after the loop.
    ASSERT_FALSE(sfu.empty());
    EXPECT_EQ(sfu.front(), dma_to_sfu) << "the first load's token is consumed before the loop";
    const size_t loop = std::find(sfu.begin(), sfu.end(), "loop") - sfu.begin();
    ASSERT_LT(loop + 2, sfu.size());
    EXPECT_EQ(sfu[loop + 1], dma_to_sfu);
    EXPECT_EQ(sfu[loop + 2], "sfu.copy");  // then its signal back to the DMA (the next load overwrites the tile)
    int waits = 0, signals = 0;
    for (const auto &l : sfu) waits += l == dma_to_sfu;
    for (const auto &l : dma) signals += l == dma_signals_sfu;
    EXPECT_EQ(waits, 2) << "one before the loop, one in its body";
    EXPECT_EQ(signals, 2) << "one after the first load, one in the loop body";
}

ProgramNode store(int64_t sp, int64_t bytes) {
    namespace St = isa::field::DmaStore;
    SymInstruction in;
    in.op = isa::Opcode::DmaStore;
    in.f[St::sp] = at(sp);
    in.f[St::row_bytes].base = bytes;
    in.f[St::rows].base = 1;
    in.f[St::planes].base = 1;
    return ProgramNode::instruction(in);
}

// A loop-carried dependence is waited for where the next iteration first needs it, not at the
// end of the body: here the SFU's copy into R must wait for the previous iteration's store of R,
// but the SFU's first copy of the body (which touches neither) must not. The channel is signalled
// once before the loop (the first iteration has no predecessor) and drained once after it.
TEST(Synchronization, ALoopCarriedWaitSitsBeforeTheFirstItemThatNeedsIt) {
    ProgramNode body = ProgramNode::loop(4, "tiles");
    // Per tile: an independent SFU copy, load A, copy A into R, store R.
    body.body = {sfu_copy(20480, 24576, 128), load(4096, 512), sfu_copy(8192, 4096, 128), store(8192, 512)};
    const std::vector<ProgramNode> tree = {body};
    const auto [sfu, dma, dma_to_sfu, dma_signals_sfu] = dma_sfu_listing(tree);

    const size_t loop = std::find(sfu.begin(), sfu.end(), "loop") - sfu.begin();
    const size_t end = std::find(sfu.begin(), sfu.end(), "end") - sfu.begin();
    ASSERT_LT(loop + 4, end);
    ASSERT_LT(end, sfu.size());
    EXPECT_EQ(sfu[loop + 1], "sfu.copy") << "the independent copy does not wait for the previous store";
    // Before the second copy: the previous iteration's store (carried), then this iteration's load.
    EXPECT_EQ(sfu[loop + 2], dma_to_sfu);
    EXPECT_EQ(sfu[loop + 3], dma_to_sfu);
    EXPECT_EQ(sfu[loop + 4], "sfu.copy");
    EXPECT_EQ(sfu[end + 1], dma_to_sfu) << "the last iteration's store is waited for after the loop";
    const size_t dma_loop = std::find(dma.begin(), dma.end(), "loop") - dma.begin();
    ASSERT_LT(dma_loop, dma.size());
    EXPECT_EQ(std::count(dma.begin(), dma.begin() + dma_loop, dma_signals_sfu), 1)
        << "one token before the loop stands for the store of the iteration before the first";
    // Per channel the tokens balance over the whole program.
    EXPECT_EQ(std::count(sfu.begin(), sfu.end(), dma_to_sfu), std::count(dma.begin(), dma.end(), dma_signals_sfu));
}

// After a loop, an item takes the loop's leftover tokens (those its last iteration signalled for
// the next) as far as the first one that follows what it conflicts with, instead of the loop's
// end and a signal after it. Here the leftover DMA-to-SFU token is the store's, which follows
// the load of A that the copy after the loop reads: the DMA signals nothing after its loop,
// and the SFU takes that one token before the copy.
TEST(Synchronization, AnItemAfterALoopTakesTheLoopsLeftoverTokenItNeeds) {
    ProgramNode body = ProgramNode::loop(4, "tiles");
    // Per tile: load A, copy A into R, store R (the next tile's copy into R waits for this store).
    body.body = {load(4096, 512), sfu_copy(8192, 4096, 128), store(8192, 512)};
    const std::vector<ProgramNode> tree = {body, sfu_copy(20480, 4096, 128)};  // reads A after the loop
    const auto [sfu, dma, dma_to_sfu, dma_signals_sfu] = dma_sfu_listing(tree);

    const size_t dma_end = std::find(dma.begin(), dma.end(), "end") - dma.begin();
    ASSERT_LT(dma_end, dma.size());
    EXPECT_EQ(std::count(dma.begin() + dma_end, dma.end(), dma_signals_sfu), 0)
        << "no signal after the loop: the last iteration's store token covers the load of A";
    const size_t sfu_end = std::find(sfu.begin(), sfu.end(), "end") - sfu.begin();
    ASSERT_EQ(sfu.size(), sfu_end + 3);
    EXPECT_EQ(sfu[sfu_end + 1], dma_to_sfu);
    EXPECT_EQ(sfu[sfu_end + 2], "sfu.copy");
    EXPECT_EQ(std::count(sfu.begin(), sfu.end(), dma_to_sfu), std::count(dma.begin(), dma.end(), dma_signals_sfu));
}

// The same across two loop levels: an outer loop whose body is an inner loop leaves the inner
// loop's carried token (signalled after the load of P, partway through the inner loop's last
// iteration) and then the inner loop's own token (after all of it). The copy after the outer
// loop reads R, which the inner loop's last item loads, so it must take both tokens, not stop at
// the first: nothing is then left for the end of the program to take after the copy.
TEST(Synchronization, AfterNestedLoopsAnItemWaitsForTheWholeInnerLoopItConflictsWith) {
    ProgramNode inner = ProgramNode::loop(3, "inner");
    // Per inner iteration: the SFU reads P (loaded by the previous iteration), load P, load R.
    inner.body = {sfu_copy(16384, 4096, 128), load(4096, 512), load(8192, 512)};
    ProgramNode outer = ProgramNode::loop(2, "outer");
    outer.body = {inner};
    const std::vector<ProgramNode> tree = {outer, sfu_copy(20480, 8192, 128)};  // reads R after both loops
    const auto [sfu, dma, dma_to_sfu, dma_signals_sfu] = dma_sfu_listing(tree);
    ASSERT_FALSE(sfu.empty());
    EXPECT_EQ(sfu.back(), "sfu.copy") << "the copy of R took every token through the one after the load of R";
    const size_t dma_last_load = dma.rend() - std::find(dma.rbegin(), dma.rend(), "dma.load") - 1;
    EXPECT_NE(std::find(dma.begin() + dma_last_load, dma.end(), dma_signals_sfu), dma.end())
        << "a DMA -> SFU token follows the last load of R";
    EXPECT_EQ(std::count(sfu.begin(), sfu.end(), dma_to_sfu), std::count(dma.begin(), dma.end(), dma_signals_sfu));
}

}  // namespace
}  // namespace spyre::compiler
