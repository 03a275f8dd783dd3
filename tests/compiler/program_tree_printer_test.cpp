// The program tree printer (target/program_tree/program_tree_printer.h) that SPYRE_DEBUG=2
// shows after each per-core pass: loops with name and trip count, every field
// of an instruction by its isa.def name, affine operands, the Func and the
// passes' marks.
#include <gtest/gtest.h>

#include "program_tree/program_tree_printer.h"

namespace spyre::testing {
namespace {

using compiler::ProgramNode;
using compiler::SymInstruction;
using compiler::SymOperand;

SymOperand value(int64_t base, std::vector<int64_t> coef = {}) {
    SymOperand o;
    o.base = base;
    o.coef = std::move(coef);
    return o;
}

TEST(ProgramTreePrinter, ShowsLoopsFieldsByNameAffineOperandsAndTheFunc) {
    SymInstruction store;
    store.op = isa::Opcode::DmaStore;
    store.func = "out";
    namespace S = isa::field::DmaStore;
    for (int i = 0; i < S::kNumFields; i++) store.f[i] = value(1);
    store.f[S::arg] = value(2);
    store.f[S::dram] = value(0, {4096, -128});
    store.f[S::row_bytes] = value(256);
    ProgramNode loop = ProgramNode::loop(8, "out.s0.y");
    loop.pipelined = true;
    loop.body.push_back(ProgramNode::instruction(store));
    const std::string text = compiler::print_program_tree({loop});
    EXPECT_NE(text.find("loop L0 'out.s0.y' x 8 (pipelined) {\n"), std::string::npos) << text;
    EXPECT_NE(text.find("    dma.store arg=2 dram=0 + 4096*L0 - 128*L1 sp=1 row_bytes=256 rows=1"), std::string::npos)
        << text;
    EXPECT_NE(text.find("  # out\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\n  }\n"), std::string::npos) << text;
}

TEST(ProgramTreePrinter, ShowsTemporariesAndRingRoles) {
    SymInstruction load;
    load.op = isa::Opcode::DmaLoad;
    load.ring.role = compiler::RingShare::Role::Middle;
    load.ring.upstream = 3;
    load.ring.downstream = 5;
    SymInstruction copy;
    copy.op = isa::Opcode::Copy;
    copy.f[isa::field::Copy::dst] = value(512);
    copy.f[isa::field::Copy::dst].temporary = true;
    const std::string text =
        compiler::print_program_tree({ProgramNode::instruction(load), ProgramNode::instruction(copy)});
    EXPECT_NE(text.find("(ring middle, up 3, down 5)"), std::string::npos) << text;
    EXPECT_NE(text.find("sfu.copy dst=512 (temp) dst_stride=0"), std::string::npos) << text;
}

}  // namespace
}  // namespace spyre::testing
