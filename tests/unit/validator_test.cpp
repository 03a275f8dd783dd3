// Specification of what the decoder (program_format.h) and the validator
// (validator.h) reject. Bad programs are built in memory from a valid one,
// encoded (encode_program does not validate), decoded and validated; each test
// asserts that the message names the specific problem and, for instruction
// errors, the file offset of the offending instruction. Hostile bytes
// (truncation, corruption, random flips) must raise spyre::Error, never crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "spyre/assembler.h"
#include "spyre/error.h"
#include "spyre/program_format.h"
#include "spyre/validator.h"

namespace spyre {
namespace {

using isa::make_instruction;
using isa::Opcode;

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

const MachineDescription &machine() { return default_machine(); }

constexpr int kDma = (int)isa::Unit::Dma;
constexpr int kPt = (int)isa::Unit::Pt;
constexpr int kSfu = (int)isa::Unit::Sfu;

ProgramArgument argument(const std::string &name, ArgKind kind) {
    ProgramArgument a;
    a.name = name;
    a.kind = kind;
    a.shape.dtype = DType::F16;
    a.shape.extent = {256, 4};
    a.layout = default_layout(a.shape, machine().stick_bytes);
    return a;
}

isa::Instruction loop(int64_t count) { return make_instruction(Opcode::Loop, {count}); }
isa::Instruction endloop() { return make_instruction(Opcode::EndLoop, {}); }

// Loads row L0 of `src` (512 bytes), copies it on the SFU and stores it to the same row of `dst`.
isa::Instruction load_row(int64_t arg) {
    isa::Instruction i = make_instruction(Opcode::DmaLoad, {arg, 0, 0, 512, 512, 1, 512, 512, 1, 1, 0, 0, 1});
    i.operand(isa::field::DmaLoad::dram).stride[0] = 512;
    return i;
}
isa::Instruction store_row(int64_t arg) {
    isa::Instruction i = make_instruction(Opcode::DmaStore, {arg, 0, 1024, 512, 1, 512, 512, 1, 0, 0});
    i.operand(isa::field::DmaStore::dram).stride[0] = 512;
    return i;
}
isa::Instruction sfu_unary(Opcode op, DType type) {
    return make_instruction(op, {1024, 512, 0, 512, 0, 256, 1, (int64_t)type, 0});
}

Program valid_program() {
    Program p;
    p.kernel_name = "copy_rows";
    p.machine_fingerprint = machine().structural_fingerprint();
    p.params = {ScalarParam{"alpha", DType::F32}};
    p.args = {argument("src", ArgKind::Input), argument("dst", ArgKind::Output)};
    p.cores.resize(machine().cores);
    p.cores[0].unit[kDma] = {loop(4),
                             load_row(0),
                             make_instruction(Opcode::Signal, {0}),
                             make_instruction(Opcode::Wait, {1}),
                             store_row(1),
                             endloop()};
    p.cores[0].unit[kSfu] = {loop(4), make_instruction(Opcode::Wait, {0}), sfu_unary(Opcode::Exp, DType::F16),
                             make_instruction(Opcode::Signal, {1}), endloop()};
    p.cores[1].unit[kPt] = {make_instruction(Opcode::Matmul, {0, 128, 4096, 128, 8192, 128, 8, 64, 64, 1, 0})};
    return p;
}

// The result of pushing a program through encode -> decode -> validate.
struct Outcome {
    std::string error;  // empty when accepted
    Program decoded;
};

Outcome check(const Program &p, const ValidationLimits &limits = {}) {
    Outcome o;
    try {
        o.decoded = decode_program(encode_program(p));
        validate_program(o.decoded, machine(), limits);
    } catch (const Error &e) {
        o.error = e.what();
    }
    return o;
}

std::string offset_of(const Outcome &o, int core, int unit, size_t index) {
    return "offset " + std::to_string(o.decoded.cores.at(core).unit[unit].at(index).file_offset) + " ";
}

uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

// Rewrites the trailing checksum so a deliberate corruption reaches the body parser.
void reseal(std::vector<uint8_t> &bytes) {
    uint64_t h = fnv1a(bytes.data(), bytes.size() - 8);
    for (int i = 0; i < 8; i++) bytes[bytes.size() - 8 + i] = (uint8_t)(h >> (8 * i));
}

std::string decode_error(const std::vector<uint8_t> &bytes) {
    try {
        decode_program(bytes);
    } catch (const Error &e) {
        return e.what();
    }
    return "(decoded)";
}

// --- the baseline ----------------------------------------------------------

TEST(Validator, AcceptsTheBaselineProgram) {
    Outcome o = check(valid_program());
    EXPECT_EQ(o.error, "");
    EXPECT_EQ(encode_program(o.decoded), encode_program(valid_program()));
}

// --- decoder: hostile bytes ------------------------------------------------

TEST(ValidatorDecoder, RejectsEveryTruncatedPrefix) {
    const std::vector<uint8_t> bytes = encode_program(valid_program());
    for (size_t n = 0; n < bytes.size(); n++) {
        try {
            decode_program(bytes.data(), n);
            ADD_FAILURE() << "a " << n << "-byte prefix of a " << bytes.size() << "-byte program decoded";
        } catch (const Error &e) {
            EXPECT_CONTAINS(e.what(), "offset ");
        }
    }
}

TEST(ValidatorDecoder, RejectsBadMagic) {
    std::vector<uint8_t> bytes = encode_program(valid_program());
    bytes[0] = 'X';
    EXPECT_CONTAINS(decode_error(bytes), "offset 0: not a Spyre program (bad magic)");
}

TEST(ValidatorDecoder, RejectsUnsupportedFormatVersion) {
    std::vector<uint8_t> bytes = encode_program(valid_program());
    bytes[8] = 2;
    reseal(bytes);
    EXPECT_CONTAINS(decode_error(bytes), "offset 8: unsupported format version 2");
}

TEST(ValidatorDecoder, RejectsChecksumMismatch) {
    std::vector<uint8_t> bytes = encode_program(valid_program());
    bytes[bytes.size() / 2] ^= 0x10;
    EXPECT_CONTAINS(decode_error(bytes), "checksum mismatch");
    EXPECT_CONTAINS(decode_error(bytes), "offset " + std::to_string(bytes.size() - 8));
}

TEST(ValidatorDecoder, RejectsUnknownOpcode) {
    std::vector<uint8_t> bytes = encode_program(valid_program());
    const uint64_t at = decode_program(bytes).cores[0].unit[kSfu][2].file_offset;
    bytes[at] = 0xe7;
    bytes[at + 1] = 0x03;
    reseal(bytes);
    EXPECT_CONTAINS(decode_error(bytes), "offset " + std::to_string(at) + ": unknown opcode 999");
}

TEST(ValidatorDecoder, RejectsTrailingBytes) {
    std::vector<uint8_t> bytes = encode_program(valid_program());
    bytes.insert(bytes.end() - 8, {1, 2, 3});
    reseal(bytes);
    EXPECT_CONTAINS(decode_error(bytes), "3 unexpected bytes after the last core");
}

TEST(ValidatorDecoder, RejectsALoopMaskBitWithAZeroStride) {
    // One encoding per program: the encoder sets a mask bit only for a non-zero
    // stride, so a zero stride under a set bit is not a file the encoder wrote.
    const Program p = assemble_program(".kernel zs\n.arg A input f32 extent=[64]\n.core 0\n.unit dma\nloop count=2\n"
                                       "  dma.load arg=A dram=0+305419896*L0 sp=0 row_bytes=128 valid_bytes=128 rows=1 dram_row_stride=128 "
                                       "sp_row_stride=128 valid_rows=1 planes=1 dram_plane_stride=0 sp_plane_stride=0 "
                                       "valid_planes=1\nendloop\n",
                                       default_machine(), "zero_stride.s");
    std::vector<uint8_t> bytes = encode_program(p);
    const uint8_t stride[4] = {0x78, 0x56, 0x34, 0x12};  // 305419896, little-endian
    auto at = std::search(bytes.begin(), bytes.end(), stride, stride + 4);
    ASSERT_NE(at, bytes.end());
    std::fill(at, at + 4, 0);
    reseal(bytes);
    EXPECT_CONTAINS(decode_error(bytes), "zero stride (not a canonical encoding)");
}

TEST(ValidatorDecoder, RandomByteFlipsAreRejectedOrDecodedNeverACrash) {
    const std::vector<uint8_t> original = encode_program(valid_program());
    std::mt19937 rng(20240611);
    int decoded = 0, rejected = 0;
    for (int trial = 0; trial < 4000; trial++) {
        std::vector<uint8_t> bytes = original;
        const int flips = 1 + (int)(rng() % 4);
        for (int i = 0; i < flips; i++) bytes[rng() % (bytes.size() - 8)] ^= (uint8_t)(1 + rng() % 255);
        if (trial % 8 != 0) reseal(bytes);  // mostly get past the checksum to exercise the parser
        try {
            Program p = decode_program(bytes);
            decoded++;
            // Whatever decodes must also survive validation and disassembly.
            try {
                validate_program(p, machine());
            } catch (const Error &) {
            }
            EXPECT_FALSE(disassemble_program(p).empty());
        } catch (const Error &e) {
            rejected++;
            EXPECT_CONTAINS(e.what(), "offset ");
        }
    }
    EXPECT_GT(decoded, 100) << "the flips should often leave a decodable program";
    EXPECT_GT(rejected, 100) << "the flips should often break the encoding";
}

// --- validator: program-level problems -------------------------------------

TEST(Validator, RejectsAProgramBuiltForAnotherMachine) {
    Program p = valid_program();
    p.machine_fingerprint ^= 1;
    EXPECT_CONTAINS(check(p).error, "was built for machine fingerprint");
}

TEST(Validator, RejectsTheWrongCoreCount) {
    Program p = valid_program();
    p.cores.pop_back();
    EXPECT_CONTAINS(check(p).error,
                    "has streams for " + std::to_string(machine().cores - 1) + " cores, the machine has " +
                        std::to_string(machine().cores));
}

TEST(Validator, RejectsAnInvalidArgumentLayout) {
    Program p = valid_program();
    p.args[1].layout.padded[0] = 100;  // not a whole number of 64-lane sticks
    EXPECT_CONTAINS(check(p).error, "argument 'dst': invalid device layout");
}

// --- validator: instruction problems ---------------------------------------

TEST(Validator, RejectsATokenChannelTheCoreDoesNotHave) {
    Program p = valid_program();
    p.cores[0].unit[kDma][2] = make_instruction(Opcode::Signal, {200});
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "token channel 200 does not exist");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kDma, 2));
}

TEST(Validator, RejectsATripCountOverTheMachineLimit) {
    Program p = valid_program();
    p.cores[0].unit[kSfu][0] = loop(70000);
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "loop trip count 70000 exceeds the hardware limit 65535");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kSfu, 0));
}

TEST(Validator, RejectsAnUnknownElementType) {
    Program p = valid_program();
    p.cores[0].unit[kSfu][2].operand(isa::field::Exp::type).base = 9;
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "field 'type' = 9 out of range [0, 3]");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kSfu, 2));
}

TEST(Validator, RejectsRingTransfersToACoreThatDoesNotExist) {
    Program p = valid_program();
    p.cores[3].unit[kDma] = {make_instruction(Opcode::RingPut, {machine().cores, 0, 0, 128, 0})};
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "core " + std::to_string(machine().cores) + " does not exist");
    EXPECT_CONTAINS(o.error, offset_of(o, 3, kDma, 0));
}

TEST(Validator, RejectsLoopNestingDeeperThanTheMachineAllows) {
    Program p = valid_program();
    auto &s = p.cores[2].unit[kSfu];
    for (int d = 0; d <= machine().max_loop_depth; d++) s.push_back(loop(2));
    for (int d = 0; d <= machine().max_loop_depth; d++) s.push_back(endloop());
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "loop nesting deeper than the machine's max_loop_depth");
    EXPECT_CONTAINS(o.error, offset_of(o, 2, kSfu, machine().max_loop_depth));
}

TEST(Validator, RejectsEndloopWithoutLoop) {
    Program p = valid_program();
    p.cores[0].unit[kDma].push_back(endloop());
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "endloop without a matching loop");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kDma, 6));
}

TEST(Validator, RejectsALoopThatIsNeverClosed) {
    Program p = valid_program();
    p.cores[0].unit[kDma].pop_back();
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "core 0, dma stream: 1 loop(s) not closed by endloop");
    EXPECT_CONTAINS(o.error, "offset " + std::to_string(o.decoded.cores[0].unit[kDma].back().file_offset));
}

TEST(Validator, RejectsAStrideOnALoopThatIsNotOpen) {
    Program p = valid_program();
    p.cores[0].unit[kDma][1].operand(isa::field::DmaLoad::sp).stride[1] = 128;
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "field 'sp' uses loop index L1 but only 1 loop(s) are open");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kDma, 1));
}

TEST(Validator, RejectsAnInstructionInAnotherUnitsStream) {
    Program p = valid_program();
    p.cores[0].unit[kDma].insert(p.cores[0].unit[kDma].begin(), sfu_unary(Opcode::Copy, DType::F16));
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "belongs to the sfu unit, found in the dma stream");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kDma, 0));
}

TEST(Validator, RejectsAMissingArgumentIndex) {
    Program p = valid_program();
    p.cores[0].unit[kDma][1].operand(isa::field::DmaLoad::arg).base = 5;
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "references argument 5 but the program has 2");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kDma, 1));
}

TEST(Validator, RejectsAStoreIntoAnInput) {
    Program p = valid_program();
    p.cores[0].unit[kDma][4] = store_row(0);
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "stores into input argument 'src'");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kDma, 4));
}

TEST(Validator, RejectsAFloatOnlyOpOnIntegers) {
    Program p = valid_program();
    p.cores[0].unit[kSfu][2] = sfu_unary(Opcode::Exp, DType::I32);
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "sfu.exp): is defined for f32 and f16 only, got i32");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kSfu, 2));
    p.cores[0].unit[kSfu][2] = sfu_unary(Opcode::Abs, DType::I32);
    EXPECT_EQ(check(p).error, "") << "sfu.abs is defined for integers";
}

TEST(Validator, RejectsAMatmulOnI32Inputs) {
    Program p = valid_program();
    p.cores[1].unit[kPt][0].operand(isa::field::Matmul::in_type).base = (int64_t)DType::I32;
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "in_type must be f16, f32 or i8");
    EXPECT_CONTAINS(o.error, offset_of(o, 1, kPt, 0));
}

TEST(Validator, AcceptsAnI8MatmulIntoI32AtOddByteOffsetsOfItsOperands) {
    Program p = valid_program();
    isa::Instruction &mm = p.cores[1].unit[kPt][0];
    mm.operand(isa::field::Matmul::in_type).base = (int64_t)DType::I8;
    mm.operand(isa::field::Matmul::a).base = 4096 + 3;  // int8 A and B: any byte
    mm.operand(isa::field::Matmul::ldb).base = 129;
    EXPECT_EQ(check(p).error, "");
}

TEST(Validator, RejectsAMatmulWhoseI32AccumulatorIsNotOnWholeElements) {
    Program p = valid_program();
    isa::Instruction &mm = p.cores[1].unit[kPt][0];
    mm.operand(isa::field::Matmul::in_type).base = (int64_t)DType::I8;
    mm.operand(isa::field::Matmul::c).base = 2;
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "field 'c' is not a whole number of i32 elements (4 bytes)");
    EXPECT_CONTAINS(o.error, offset_of(o, 1, kPt, 0));
    mm.operand(isa::field::Matmul::c).base = 0;
    mm.operand(isa::field::Matmul::ldc).base = 130;
    EXPECT_CONTAINS(check(p).error, "field 'ldc' is not a whole number of i32 elements");
}

TEST(Validator, RejectsAnF16MatmulOperandOffHalfWords) {
    Program p = valid_program();
    p.cores[1].unit[kPt][0].operand(isa::field::Matmul::lda).base = 129;
    EXPECT_CONTAINS(check(p).error, "field 'lda' is not a whole number of f16 elements (2 bytes)");
}

TEST(Validator, RejectsADmaLoadWhoseValidBytesExceedTheRow) {
    Program p = valid_program();
    p.cores[0].unit[kDma][1].operand(isa::field::DmaLoad::valid_bytes).base = 640;
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "valid_bytes/valid_rows/valid_planes must not exceed row_bytes/rows/planes");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kDma, 1));
}

TEST(Validator, RejectsAnOperandReadingAMissingRuntimeParameter) {
    Program p = valid_program();
    isa::Instruction &exp = p.cores[0].unit[kSfu][2];
    exp.operand(isa::field::Exp::a_mode).base = 3;
    exp.operand(isa::field::Exp::imm).base = 0;
    EXPECT_EQ(check(p).error, "") << "parameter 0 exists";
    exp.operand(isa::field::Exp::imm).base = 1;
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "operand reads run-time parameter 1 but the program has 1");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kSfu, 2));
}

TEST(Validator, RejectsAStreamOverTheDynamicInstructionLimit) {
    Program p = valid_program();
    auto &s = p.cores[5].unit[kDma];
    s = {loop(65535), loop(65535), loop(65535), make_instruction(Opcode::Signal, {0}), endloop(), endloop(), endloop()};
    Outcome o = check(p);
    EXPECT_CONTAINS(o.error, "the stream executes more than 4294967296 instructions (loops expanded)");
    EXPECT_CONTAINS(o.error, offset_of(o, 5, kDma, 2));
}

TEST(Validator, HonoursACustomDynamicInstructionLimit) {
    ValidationLimits limits;
    limits.max_dynamic_instructions_per_stream = 19;
    // The dma stream counts each instruction of its 4-trip loop (the loop itself included) 4 times:
    // the store, its fifth instruction, brings the count to 20.
    Outcome o = check(valid_program(), limits);
    EXPECT_CONTAINS(o.error, "executes more than 19 instructions");
    EXPECT_CONTAINS(o.error, offset_of(o, 0, kDma, 4));
}

}  // namespace
}  // namespace spyre
