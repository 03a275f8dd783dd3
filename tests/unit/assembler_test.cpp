// Specification of the Spyre assembler and disassembler (spyre/assembler.h):
// a disassembly assembles back to the identical binary for every opcode of
// isa.def, `.core A-B` replicates streams with C bound to each core, field
// values are linear expressions in L0..L3, and every class of bad input is
// reported as "source:LINE:COL: message".
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "spyre/assembler.h"
#include "spyre/error.h"
#include "spyre/program_format.h"
#include "spyre/validator.h"

namespace spyre {
namespace {

const MachineDescription &machine() { return default_machine(); }

// A value every field kind accepts, chosen so the program also validates. Affine
// fields use C, both loop indices, parentheses, a negative stride and hex.
std::string field_value(isa::FieldKind kind) {
    switch (kind) {
    case isa::FieldKind::Arg: return "out";
    case isa::FieldKind::DramAddr: return "(C+1)*4096+256*L0-2*(64*L1)";
    case isa::FieldKind::SpAddr: return "0x100+64*L1";
    case isa::FieldKind::Bytes: return "256";
    case isa::FieldKind::Count: return "4";
    case isa::FieldKind::Extent: return "2";
    case isa::FieldKind::DramStride: return "-512";
    case isa::FieldKind::SpStride: return "256";
    case isa::FieldKind::Type: return "f16";
    case isa::FieldKind::Flag: return "1";
    case isa::FieldKind::Core: return "31";
    case isa::FieldKind::Channel: return "3";
    case isa::FieldKind::BarrierId: return "2";
    case isa::FieldKind::TripCount: return "5";
    case isa::FieldKind::Mode: return "1";
    case isa::FieldKind::Imm: return "0.5";
    }
    return "?";
}

std::string instruction_line(const isa::OpcodeSpec &spec) {
    std::string line = spec.mnemonic;
    for (int f = 0; f < spec.num_fields; f++) line += std::string(" ") + spec.fields[f].name + "=" + field_value(spec.fields[f].kind);
    return line;
}

// Every opcode of isa.def, generated from the table: each unit's stream holds
// its own opcodes inside two nested loops; control opcodes go to the DMA stream.
std::string every_opcode_source() {
    std::ostringstream s;
    s << ".kernel every_opcode\n"
      << ".param alpha f32\n"
      << ".arg in input f16 extent=[256,8]\n"
      << ".arg out output f16 extent=[256,8] stick=0 order=[1,0] padded=[256,8]\n"
      << ".core 0-31\n";
    for (int u = 0; u < isa::kNumUnits; u++) {
        s << ".unit " << isa::unit_name((isa::Unit)u) << "\n";
        s << "loop count=2\n  loop count=3\n";
        for (int op = 0; op < isa::kNumOpcodes; op++) {
            const isa::OpcodeSpec &spec = isa::opcode_spec((isa::Opcode)op);
            if (spec.opcode == isa::Opcode::Loop || spec.opcode == isa::Opcode::EndLoop) continue;
            const bool here = spec.unit == (isa::Unit)u || (spec.unit == isa::Unit::Any && (isa::Unit)u == isa::Unit::Dma);
            if (here) s << "    " << instruction_line(spec) << "\n";
        }
        s << "  endloop\nendloop\n";
    }
    return s.str();
}

std::string assembly_error(const std::string &text) {
    try {
        assemble_program(text, machine(), "test.s");
    } catch (const Error &e) {
        return e.what();
    }
    return "(no error)";
}

std::string header() { return ".kernel k\n.arg in input f16 extent=[64]\n.arg out output f16 extent=[64]\n"; }

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

TEST(Assembler, EveryOpcodeOfTheTableAppearsInTheCoverageProgram) {
    Program p = assemble_program(every_opcode_source(), machine(), "every_opcode.s");
    std::set<isa::Opcode> seen;
    for (const auto &core : p.cores) {
        for (const auto &stream : core.unit) {
            for (const auto &inst : stream) seen.insert(inst.op);
        }
    }
    for (int op = 0; op < isa::kNumOpcodes; op++) {
        EXPECT_TRUE(seen.count((isa::Opcode)op)) << "missing " << isa::opcode_spec((isa::Opcode)op).mnemonic;
    }
}

TEST(Assembler, CoverageProgramIsValid) {
    Program p = assemble_program(every_opcode_source(), machine(), "every_opcode.s");
    EXPECT_NO_THROW(validate_program(decode_program(encode_program(p)), machine()));
}

TEST(Assembler, DisassemblyOfEveryOpcodeReassemblesToIdenticalBytes) {
    const std::vector<uint8_t> first = encode_program(assemble_program(every_opcode_source(), machine(), "a.s"));
    const std::string text = disassemble_program(decode_program(first));
    const std::vector<uint8_t> second = encode_program(assemble_program(text, machine(), "b.s"));
    EXPECT_EQ(first, second);
    // And the text is a fixed point: disassembling the reassembled bytes prints it again.
    EXPECT_EQ(text, disassemble_program(decode_program(second)));
}

TEST(Assembler, ExampleVadd32AssemblesValidatesAndRoundTrips) {
    std::ifstream f(std::string(SPYRE_SOURCE_DIR) + "/examples/vadd32.s");
    ASSERT_TRUE(f) << "examples/vadd32.s not found";
    std::stringstream text;
    text << f.rdbuf();
    const std::vector<uint8_t> bytes = encode_program(assemble_program(text.str(), machine(), "vadd32.s"));
    const Program decoded = decode_program(bytes);
    EXPECT_NO_THROW(validate_program(decoded, machine()));
    EXPECT_EQ(bytes, encode_program(assemble_program(disassemble_program(decoded), machine(), "again.s")));
    for (int c = 0; c < machine().cores; c++) {
        EXPECT_EQ(decoded.cores[c].unit[(int)isa::Unit::Dma].size(), 7u);
        EXPECT_EQ(decoded.cores[c].unit[(int)isa::Unit::Sfu].size(), 5u);
        EXPECT_TRUE(decoded.cores[c].unit[(int)isa::Unit::Pt].empty());
    }
}

TEST(Assembler, CoreRangeReplicatesStreamsWithCBoundToEachCore) {
    Program p = assemble_program(header() +
                                     ".core 2-4\n.unit dma\nloop count=2\n"
                                     "dma.store arg=out dram=1000*C+128*L0 sp=C row_bytes=128 rows=1 dram_row_stride=0 "
                                     "sp_row_stride=0 planes=1 dram_plane_stride=0 sp_plane_stride=0\nendloop\n",
                                 machine(), "t.s");
    ASSERT_EQ((int64_t)p.cores.size(), machine().cores);
    EXPECT_TRUE(p.cores[1].unit[0].empty());
    EXPECT_TRUE(p.cores[5].unit[0].empty());
    for (int c = 2; c <= 4; c++) {
        ASSERT_EQ(p.cores[c].unit[0].size(), 3u);
        const isa::Instruction &store = p.cores[c].unit[0][1];
        EXPECT_EQ(store.op, isa::Opcode::DmaStore);
        EXPECT_EQ(store.operand(isa::field::DmaStore::dram).base, 1000 * c);
        EXPECT_EQ(store.operand(isa::field::DmaStore::dram).stride[0], 128);
        EXPECT_EQ(store.operand(isa::field::DmaStore::sp).base, c);
        EXPECT_EQ(store[isa::field::DmaStore::arg], 1);
    }
}

TEST(Assembler, AffineExpressionsAreNormalisedToBaseAndStrides) {
    Program p = assemble_program(header() +
                                     ".core 7\n.unit sfu\nloop count=2\nloop count=2\nloop count=2\n"
                                     "sfu.copy dst=-(L2-3*(L0+2))*4+L1*-5 dst_stride=0x80 a=0 a_stride=0 a_mode=0 "
                                     "n=64 rows=1 type=f16 imm=0\nendloop\nendloop\nendloop\n",
                                 machine(), "t.s");
    const isa::Operand &dst = p.cores[7].unit[(int)isa::Unit::Sfu][3].operand(isa::field::Copy::dst);
    EXPECT_EQ(dst.base, 24);
    EXPECT_EQ(dst.stride[0], 12);
    EXPECT_EQ(dst.stride[1], -5);
    EXPECT_EQ(dst.stride[2], -4);
    EXPECT_EQ(dst.stride[3], 0);
    EXPECT_EQ(p.cores[7].unit[(int)isa::Unit::Sfu][3][isa::field::Copy::dst_stride], 128);
}

TEST(Assembler, ImmediateFloatLiteralsAreStoredAsF32BitsAndIntegersVerbatim) {
    Program p = assemble_program(header() +
                                     ".core 0\n.unit sfu\n"
                                     "sfu.mul dst=0 dst_stride=0 a=0 a_stride=0 a_mode=0 b=0 b_stride=0 b_mode=2 n=64 "
                                     "rows=1 type=f32 imm=-2.5e-1\n"
                                     "sfu.mul dst=0 dst_stride=0 a=0 a_stride=0 a_mode=0 b=0 b_stride=0 b_mode=2 n=64 "
                                     "rows=1 type=f32 imm=0x3e800000\n",
                                 machine(), "t.s");
    const float expected = -0.25f;
    uint32_t bits;
    std::memcpy(&bits, &expected, 4);
    EXPECT_EQ(p.cores[0].unit[(int)isa::Unit::Sfu][0][isa::field::Mul::imm], (int64_t)bits);
    EXPECT_EQ(p.cores[0].unit[(int)isa::Unit::Sfu][1][isa::field::Mul::imm], 0x3e800000);
}

TEST(Assembler, ArgumentsMayBeNamedOrIndexedAndTypesNamedOrNumbered) {
    Program p = assemble_program(header() +
                                     ".core 0\n.unit dma\n"
                                     "dma.store arg=1 dram=0 sp=0 row_bytes=128 rows=1 dram_row_stride=0 sp_row_stride=0 "
                                     "planes=1 dram_plane_stride=0 sp_plane_stride=0\n"
                                     ".unit pt\n"
                                     "pt.matmul c=0 ldc=0 a=0 lda=0 b=0 ldb=0 m=8 n=8 k=8 in_type=3 accumulate=0\n",
                                 machine(), "t.s");
    EXPECT_EQ(p.cores[0].unit[(int)isa::Unit::Dma][0][isa::field::DmaStore::arg], 1);
    EXPECT_EQ(p.cores[0].unit[(int)isa::Unit::Pt][0][isa::field::Matmul::in_type], (int64_t)DType::I8);
}

TEST(Assembler, ArgumentDefaultsToTheDefaultLayoutAndMachineToTheCurrentOne) {
    Program p = assemble_program(".kernel k\n.arg x temp f32 extent=[40,3]\n", machine(), "t.s");
    ASSERT_EQ(p.args.size(), 1u);
    EXPECT_EQ(p.args[0].kind, ArgKind::Temp);
    EXPECT_EQ(p.args[0].layout, default_layout(p.args[0].shape, machine().stick_bytes));
    EXPECT_EQ(p.machine_fingerprint, machine().structural_fingerprint());
    Program q = assemble_program(".kernel k\n.machine 0xabc\n", machine(), "t.s");
    EXPECT_EQ(q.machine_fingerprint, 0xabcu);
}

TEST(AssemblerDisassembly, PrintsFieldsInTableOrderWithAffineOperandsAndLoopIndentation) {
    Program p = assemble_program(header() +
                                     ".core 3\n.unit dma\nloop count=4\nloop count=2\n"
                                     "dma.load arg=in dram=L0*256-L1*128 sp=0 row_bytes=128 valid_bytes=128 rows=1 "
                                     "dram_row_stride=0 sp_row_stride=0 valid_rows=1 planes=1 dram_plane_stride=0 "
                                     "sp_plane_stride=0 valid_planes=1\nendloop\nendloop\n",
                                 machine(), "t.s");
    const std::string text = disassemble_program(p);
    EXPECT_CONTAINS(text, ".kernel k\n");
    EXPECT_CONTAINS(text, ".arg in input f16 extent=[64] stick=0 order=[0] padded=[64]\n");
    EXPECT_CONTAINS(text,
                    "\n.core 3\n.unit dma\nloop count=4\n  loop count=2\n"
                    "    dma.load arg=in dram=0+256*L0-128*L1 sp=0 row_bytes=128 valid_bytes=128 rows=1 "
                    "dram_row_stride=0 sp_row_stride=0 valid_rows=1 planes=1 dram_plane_stride=0 "
                    "sp_plane_stride=0 valid_planes=1\n  endloop\nendloop\n");
    EXPECT_EQ(text.find(".core 0\n"), std::string::npos) << "cores with empty streams are omitted";
    EXPECT_EQ(text.find(".unit pt"), std::string::npos) << "empty units are omitted";
}

TEST(AssemblerDisassembly, AnnotatesDecodedInstructionsWithTheirFileOffset) {
    Program p = assemble_program(header() + ".core 0\n.unit sfu\nsignal channel=1\n", machine(), "t.s");
    const std::vector<uint8_t> bytes = encode_program(p);
    const Program decoded = decode_program(bytes);
    const uint64_t offset = decoded.cores[0].unit[(int)isa::Unit::Sfu][0].file_offset;
    EXPECT_CONTAINS(disassemble_program(decoded), "signal channel=1  ; offset " + std::to_string(offset) + "\n");
}

// --- errors: one test per class of bad input -------------------------------

TEST(AssemblerErrors, UnknownMnemonic) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit sfu\n  sfu.frobnicate x=1\n"),
                    "test.s:6:3: unknown mnemonic 'sfu.frobnicate'");
}

TEST(AssemblerErrors, MissingField) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit dma\nbarrier id=1\n"),
                    "test.s:6:1: barrier is missing field 'participants'");
}

TEST(AssemblerErrors, UnknownField) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit dma\nsignal channel=1 colour=2\n"),
                    "test.s:6:18: signal has no field 'colour'");
}

TEST(AssemblerErrors, DuplicateField) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit dma\nsignal channel=1 channel=2\n"),
                    "test.s:6:18: duplicate field 'channel'");
}

TEST(AssemblerErrors, FieldWithoutValue) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit dma\nsignal 3\n"), "test.s:6:8: expected field=value");
}

TEST(AssemblerErrors, ValueOutOfRangeForTheFieldKind) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit dma\nsignal channel=256\n"),
                    "test.s:6:16: field 'channel' = 256 out of range [0, 255] for Channel");
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit dma\nloop count=0\nendloop\n"),
                    "test.s:6:12: field 'count' = 0 out of range [1, 4294967295] for TripCount");
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit pt\n"
                                              "pt.matmul c=0 ldc=0 a=0 lda=0 b=0 ldb=0 m=8 n=8 k=8 in_type=f16 accumulate=2\n"),
                    "field 'accumulate' = 2 out of range [0, 1] for Flag");
}

TEST(AssemblerErrors, LoopIndexInANonAffineField) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit dma\nloop count=2\n  signal channel=1+L0\nendloop\n"),
                    "test.s:7:18: field 'channel' (Channel) cannot depend on loop indices");
}

TEST(AssemblerErrors, LoopIndexOfALoopThatIsNotOpen) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit sfu\nloop count=2\n"
                                              "sfu.abs dst=64*L1 dst_stride=0 a=0 a_stride=0 a_mode=0 n=1 rows=1 "
                                              "type=f32 imm=0\nendloop\n"),
                    "test.s:7:13: field 'dst' uses loop index L1 but only 1 loop(s) are open");
}

TEST(AssemblerErrors, ExpressionNotLinearInTheLoopIndices) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit sfu\nloop count=2\nloop count=2\n"
                                              "sfu.abs dst=L0*(L1+1) dst_stride=0 a=0 a_stride=0 a_mode=0 n=1 "
                                              "rows=1 type=f32 imm=0\nendloop\nendloop\n"),
                    "test.s:8:15: expression is not linear in the loop indices");
}

TEST(AssemblerErrors, MalformedExpressions) {
    const std::string prefix = header() + ".core 0\n.unit dma\n";
    EXPECT_CONTAINS(assembly_error(prefix + "signal channel=12abc\n"), "test.s:6:16: malformed integer literal");
    EXPECT_CONTAINS(assembly_error(prefix + "signal channel=(1+2\n"), "test.s:6:20: missing ')'");
    EXPECT_CONTAINS(assembly_error(prefix + "signal channel=3+\n"), "test.s:6:18: expression ends where a value was expected");
    EXPECT_CONTAINS(assembly_error(prefix + "signal channel=K\n"), "test.s:6:16: unknown symbol 'K'");
    EXPECT_CONTAINS(assembly_error(prefix + "signal channel=\n"), "test.s:6:16: missing value");
}

TEST(AssemblerErrors, StrideThatDoesNotFitThe32BitEncoding) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit sfu\nloop count=2\n"
                                              "sfu.abs dst=0x80000000*L0 dst_stride=0 a=0 a_stride=0 a_mode=0 n=1 "
                                              "rows=1 type=f32 imm=0\nendloop\n"),
                    "test.s:7:13: field 'dst': stride 2147483648 of L0 does not fit in 32 bits");
}

TEST(AssemblerErrors, UnknownArgumentName) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit dma\n"
                                              "dma.store arg=missing dram=0 sp=0 row_bytes=128 rows=1 dram_row_stride=0 "
                                              "sp_row_stride=0 planes=1 dram_plane_stride=0 sp_plane_stride=0\n"),
                    "test.s:6:15: unknown argument name 'missing'");
}

TEST(AssemblerErrors, UnknownTypeName) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit sfu\n"
                                              "sfu.abs dst=0 dst_stride=0 a=0 a_stride=0 a_mode=0 n=1 rows=1 type=f64 imm=0\n"),
                    "test.s:6:68: unknown type 'f64'");
}

TEST(AssemblerErrors, MalformedFloatImmediate) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit sfu\n"
                                              "sfu.abs dst=0 dst_stride=0 a=0 a_stride=0 a_mode=2 n=1 rows=1 type=f32 imm=1.5x\n"),
                    "test.s:6:76: malformed float literal '1.5x'");
}

TEST(AssemblerErrors, UnitBeforeCore) {
    EXPECT_CONTAINS(assembly_error(header() + ".unit dma\n"), "test.s:4:1: .unit before .core");
}

TEST(AssemblerErrors, InstructionBeforeCoreOrUnit) {
    EXPECT_CONTAINS(assembly_error(header() + "signal channel=0\n"), "test.s:4:1: instruction before .core");
    EXPECT_CONTAINS(assembly_error(header() + ".core 1\nsignal channel=0\n"), "test.s:5:1: instruction before .unit");
}

TEST(AssemblerErrors, UnknownUnit) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit gpu\n"), "test.s:5:7: unknown unit 'gpu'");
}

TEST(AssemblerErrors, InstructionInAnotherUnitsStream) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit dma\n"
                                              "sfu.abs dst=0 dst_stride=0 a=0 a_stride=0 a_mode=0 n=1 rows=1 type=f32 imm=0\n"),
                    "test.s:6:1: sfu.abs belongs to the sfu unit, not the dma unit");
}

TEST(AssemblerErrors, CoreOutsideTheMachine) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0-32\n"), "test.s:4:7: core index 32 out of range [0, 31]");
    EXPECT_CONTAINS(assembly_error(header() + ".core 9-3\n"), "test.s:4:7: empty core range 9-3");
}

TEST(AssemblerErrors, EndloopWithoutLoop) {
    EXPECT_CONTAINS(assembly_error(header() + ".core 0\n.unit pt\nendloop\n"), "test.s:6:1: endloop without a matching loop");
}

TEST(AssemblerErrors, MissingOrDuplicateKernelDirective) {
    EXPECT_CONTAINS(assembly_error("; nothing\n.arg x input f32 extent=[4]\n"), "test.s:3:1: missing .kernel directive");
    EXPECT_CONTAINS(assembly_error(".kernel a\n.kernel b\n"), "test.s:2:1: duplicate .kernel directive");
}

TEST(AssemblerErrors, BadDirectives) {
    EXPECT_CONTAINS(assembly_error(".kernel caf\xc3\xa9\n"), "test.s:1:9: kernel name has a non-ASCII character");
    EXPECT_CONTAINS(assembly_error(".kernel k\n.section text\n"), "test.s:2:1: unknown directive '.section'");
    EXPECT_CONTAINS(assembly_error(".kernel k\n.machine 12zz\n"), "test.s:2:10: malformed machine fingerprint '12zz'");
    EXPECT_CONTAINS(assembly_error(".kernel k\n.param alpha\n"), "test.s:2:13: expected a parameter: .param NAME DTYPE");
    EXPECT_CONTAINS(assembly_error(".kernel k\n.param alpha f64\n"), "test.s:2:14: unknown dtype 'f64'");
}

TEST(AssemblerErrors, BadArgumentDeclarations) {
    EXPECT_CONTAINS(assembly_error(".kernel k\n.arg x input f32 extent=[4]\n.arg x output f32 extent=[4]\n"),
                    "test.s:3:6: duplicate name 'x'");
    EXPECT_CONTAINS(assembly_error(".kernel k\n.arg x inout f32 extent=[4]\n"), "test.s:2:8: unknown argument kind 'inout'");
    EXPECT_CONTAINS(assembly_error(".kernel k\n.arg x input f32 stick=0\n"), "test.s:2:6: argument 'x' needs extent=[..]");
    EXPECT_CONTAINS(assembly_error(".kernel k\n.arg x input f32 extent=[4] shape=[4]\n"), "test.s:2:29: unknown key 'shape'");
    EXPECT_CONTAINS(assembly_error(".kernel k\n.arg x input f32 extent=[40,2] padded=[40,2]\n"),
                    "test.s:2:6: argument 'x': invalid device layout");
}

TEST(AssemblerErrors, CommentsAreIgnoredButDoNotHideErrors) {
    EXPECT_CONTAINS(assembly_error(".kernel k ; the name\n; a comment line\n.core 0 ; zero\n.unit dma;x\nsignal channel=999 ; bad\n"),
                    "test.s:5:16: field 'channel' = 999 out of range");
}

}  // namespace
}  // namespace spyre
