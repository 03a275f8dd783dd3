// The compile-time dry run (target/checks/dry_run.h): a program that would break an
// address rule, read scratchpad bytes no instruction wrote, or deadlock when
// run is a compile error naming the kernel, the core, the instruction and the
// rule (and for an unwritten read, the buffer); a good program passes.
#include <gtest/gtest.h>

#include "checks/dry_run.h"
#include "program_tree/program_tree.h"
#include "spyre/assembler.h"
#include "spyre/machine.h"
#include "diagnostics.h"

namespace spyre::testing {
namespace {

const char *kHeader =
    ".kernel past_its_input\n"
    ".arg A input f16 extent=[64,128] stick=0 order=[1,0] padded=[64,128]\n"
    ".arg Out output f16 extent=[64,1] stick=0 order=[1,0] padded=[64,1]\n"
    ".core 0\n"
    ".unit dma\n";

std::string program_loading_row(int row) {
    return std::string(kHeader) + "  dma.load arg=A dram=" + std::to_string(row * 128) +
           " sp=0 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 valid_rows=1 planes=1 "
           "dram_plane_stride=0 sp_plane_stride=0 valid_planes=1\n"
           "  dma.store arg=Out dram=0 sp=0 row_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 planes=1 "
           "dram_plane_stride=0 sp_plane_stride=0\n";
}

TEST(DryRun, AProgramInsideItsTensorsPasses) {
    const MachineDescription &m = default_machine();
    EXPECT_NO_THROW(compiler::dry_run_program(assemble_program(program_loading_row(127), m), m));
}

TEST(DryRun, AProgramThatReadsPastItsTensorIsACompileError) {
    const MachineDescription &m = default_machine();
    // Row 128 of a 128-row tensor: the bytes right after its allocation.
    try {
        compiler::dry_run_program(assemble_program(program_loading_row(128), m), m);
        FAIL() << "the dry run accepted a load past the input";
    } catch (const CompileError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("kernel 'past_its_input'"), std::string::npos) << what;
        EXPECT_NE(what.find("breaks a hardware rule when it runs"), std::string::npos) << what;
        EXPECT_NE(what.find("outside the tensor"), std::string::npos) << what;
        EXPECT_NE(what.find("core 0"), std::string::npos) << what;
    }
}

// One stick loaded into core 0's scratchpad at 0, then `store_bytes` of it stored.
std::string program_storing(int store_bytes) {
    return ".kernel overhang\n"
           ".arg A input f16 extent=[64,2] stick=0 order=[1,0] padded=[64,2]\n"
           ".arg Out output f16 extent=[64,2] stick=0 order=[1,0] padded=[64,2]\n"
           ".core 0\n"
           ".unit dma\n"
           "  dma.load arg=A dram=0 sp=0 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 sp_row_stride=128 "
           "valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 valid_planes=1\n"
           "  dma.store arg=Out dram=0 sp=0 row_bytes=" +
           std::to_string(store_bytes) +
           " rows=1 dram_row_stride=256 sp_row_stride=256 planes=1 dram_plane_stride=0 sp_plane_stride=0\n";
}

std::string dry_run_error(const std::string &text, const std::vector<compiler::ScratchpadPlacement> &core0) {
    const MachineDescription &m = default_machine();
    try {
        compiler::dry_run_program(assemble_program(text, m), m, {core0});
    } catch (const CompileError &e) {
        return e.what();
    }
    return "";
}

TEST(DryRun, AReadOfUnwrittenScratchpadIsACompileErrorNamingTheBuffer) {
    EXPECT_EQ(dry_run_error(program_storing(128), {{"stage", 0, 128}}), "");
    // The buffer holds one stick; the store reads two.
    const std::string past = dry_run_error(program_storing(256), {{"stage", 0, 128}});
    EXPECT_NE(past.find("kernel 'overhang'"), std::string::npos) << past;
    EXPECT_NE(past.find("core 0, dma instruction 1 (dma.store"), std::string::npos) << past;
    EXPECT_NE(past.find("reads scratchpad byte 128 which was never written"), std::string::npos) << past;
    EXPECT_NE(past.find("the scratchpad buffer 'stage' [0, 128) of core 0, and runs past its end"), std::string::npos)
        << past;
    EXPECT_NE(past.find("Make the consumer's vector width (and tile) divide the extent of 'stage'"), std::string::npos)
        << past;
    // The buffer holds two sticks, only the first was written.
    const std::string part = dry_run_error(program_storing(256), {{"stage", 0, 256}});
    EXPECT_NE(part.find("'stage' [0, 256) of core 0, in a part of it no instruction wrote"), std::string::npos) << part;
    // Without placements: the simulator's message alone.
    const std::string bare = dry_run_error(program_storing(256), {});
    EXPECT_NE(bare.find("reads scratchpad byte 128 which was never written"), std::string::npos) << bare;
    EXPECT_EQ(bare.find("scratchpad buffer"), std::string::npos) << bare;
}

// With the tree the program was emitted from, the message also names the Func whose
// instruction reads the unwritten bytes and the Halide loops around it.
TEST(DryRun, AReadOfUnwrittenScratchpadNamesTheReadingFuncAndItsLoops) {
    namespace S = isa::field::DmaStore;
    compiler::SymInstruction store;
    store.op = isa::Opcode::DmaStore;
    store.func = "out";
    store.f[S::arg].base = 1;
    store.f[S::sp].base = 0;
    store.f[S::row_bytes].base = 256;
    store.f[S::rows].base = 1;
    store.f[S::sp_row_stride].base = 256;
    store.f[S::dram_row_stride].base = 256;
    store.f[S::planes].base = 1;
    std::vector<compiler::ProgramNode> tree = {compiler::ProgramNode::loop(1, "out.s0.y.yo")};
    tree[0].body.push_back(compiler::ProgramNode::instruction(store));
    const MachineDescription &m = default_machine();
    try {
        compiler::dry_run_program(assemble_program(program_storing(256), m), m, {{{"stage", 0, 128}}}, {&tree});
        FAIL() << "the dry run accepted a store of unwritten bytes";
    } catch (const CompileError &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("The first dma.store in the core's program whose reads reach that byte is Func 'out''s, in "
                            "loop 'out.s0.y.yo'"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("the scratchpad buffer 'stage' [0, 128) of core 0"), std::string::npos) << what;
    }
}

}  // namespace
}  // namespace spyre::testing
