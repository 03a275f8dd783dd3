// The compile-time dry run (target/dry_run.h): a program that would break an
// address rule or deadlock when run is a compile error naming the kernel, the
// core, the instruction and the rule; a good program passes.
#include <gtest/gtest.h>

#include "dry_run.h"
#include "spyre/assembler.h"
#include "spyre/machine.h"
#include "spyre_lowering.h"

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

}  // namespace
}  // namespace spyre::testing
