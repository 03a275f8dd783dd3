// Regression tests for inputs the fuzz targets (fuzz/) found: each bug has a
// named test feeding that input (or its minimal form) to the function that
// mishandled it, and FuzzRegressionCorpus replays every file under
// tests/data/fuzz_regressions/<target>/ through the same parse function as the
// fuzz target <target>, where the only acceptable outcomes are a result or a
// spyre::Error (a crash or sanitizer report fails the test binary).
// Assumes SPYRE_SOURCE_DIR (tests/CMakeLists.txt) points at the repository.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "spyre/assembler.h"
#include "spyre/error.h"
#include "spyre/machine.h"
#include "spyre/npy.h"
#include "spyre/program_format.h"
#include "spyre/validator.h"

namespace spyre {
namespace {

namespace fs = std::filesystem;

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

// Rewrites the trailing FNV-1a checksum (program_format.h) after a patch.
void fix_checksum(std::vector<uint8_t> &bytes) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i + 8 < bytes.size(); i++) {
        h ^= bytes[i];
        h *= 1099511628211ull;
    }
    for (int i = 0; i < 8; i++) bytes[bytes.size() - 8 + i] = (uint8_t)(h >> (8 * i));
}

std::string error_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    }
    return "(no error)";
}

// fuzz_program: the decoder accepted names with spaces, whose disassembly
// (".arg a b input ...") the assembler cannot read back, breaking the promise
// that a valid program survives disassembly and reassembly.
TEST(FuzzRegression, ProgramNameWithASpaceIsRejectedByDecoderAndEncoder) {
    const MachineDescription &m = default_machine();
    Program p = assemble_program(".kernel k\n.arg aXb input f16 extent=[64]\n", m, "t.s");
    std::vector<uint8_t> bytes = encode_program(p);
    const uint8_t name[] = {'a', 'X', 'b'};
    auto at = std::search(bytes.begin(), bytes.end(), name, name + 3);
    ASSERT_NE(at, bytes.end());
    for (char bad : {' ', ';'}) {
        at[1] = (uint8_t)bad;
        fix_checksum(bytes);
        EXPECT_CONTAINS(error_of([&] { decode_program(bytes); }), "argument name: character");
        p.args[0].name = std::string("a") + bad + "b";
        EXPECT_CONTAINS(error_of([&] { encode_program(p); }), "has a space, ';' or a non-printable character");
    }
    p.kernel_name = "two words";
    p.args[0].name = "ab";
    EXPECT_CONTAINS(error_of([&] { encode_program(p); }), "name 'two words'");
}

// fuzz_assembler: thousands of nested parentheses (or unary signs) in a field
// value overflowed the stack of the recursive-descent expression parser.
TEST(FuzzRegression, DeeplyNestedExpressionIsAnErrorNotAStackOverflow) {
    const MachineDescription &m = default_machine();
    const std::string parens = ".kernel k\n.arg A input f16 extent=[64] order=[" + std::string(100000, '(') + "0]\n";
    EXPECT_CONTAINS(error_of([&] { assemble_program(parens, m, "t.s"); }), "t.s:2:");
    EXPECT_CONTAINS(error_of([&] { assemble_program(parens, m, "t.s"); }), "nested deeper than 64 levels");
    const std::string signs = ".kernel k\n.core 0\n.unit dma\nsignal channel=" + std::string(100000, '-') + "1\n";
    EXPECT_CONTAINS(error_of([&] { assemble_program(signs, m, "t.s"); }), "nested deeper than 64 levels");
    // 64 levels are fine.
    const std::string ok = ".kernel k\n.core 0\n.unit dma\nsignal channel=" + std::string(64, '(') + "1" + std::string(64, ')') + "\n";
    EXPECT_EQ(assemble_program(ok, m, "t.s").cores[0].unit[0].size(), 1u);
}

// Runs one input through the parse functions of fuzz target `target` and
// checks the round-trip invariants that target checks (fuzz/<target>.cpp):
// rejection with a spyre::Error is fine, anything else accepted must survive
// the round trip.
void replay(const std::string &target, const std::vector<uint8_t> &bytes) {
    const MachineDescription &m = default_machine();
    // The text round trip: disassemble, reassemble, compare the encodings.
    auto expect_text_round_trip = [&](const Program &p) {
        try {
            EXPECT_EQ(encode_program(assemble_program(disassemble_program(p), m, "disassembly")), encode_program(p));
        } catch (const Error &e) {
            ADD_FAILURE() << "the disassembly does not assemble: " << e.what();
        }
    };
    if (target == "fuzz_program") {
        Program p;
        try {
            p = decode_program(bytes);
            validate_program(p, m);
        } catch (const Error &) {
            return;
        }
        expect_text_round_trip(p);
    } else if (target == "fuzz_npy") {
        NpyArray a;
        try {
            a = parse_npy(bytes.data(), bytes.size(), "replay");
        } catch (const Error &) {
            return;
        }
        const std::vector<uint8_t> out = encode_npy(a, "replay");
        EXPECT_EQ(parse_npy(out.data(), out.size(), "replay").data, a.data);
    } else if (target == "fuzz_machine") {
        try {
            const auto nul = std::find(bytes.begin(), bytes.end(), 0);
            MachineDescription d = parse_machine_description(std::string(bytes.begin(), nul), "replay");
            if (nul != bytes.end()) apply_machine_overrides(d, std::string(nul + 1, bytes.end()), "replay");
        } catch (const Error &) {
        }
    } else if (target == "fuzz_assembler") {
        Program p;
        try {
            p = assemble_program(std::string(bytes.begin(), bytes.end()), m, "replay.s");
        } catch (const Error &) {
            return;
        }
        expect_text_round_trip(p);
    } else {
        ADD_FAILURE() << "unknown fuzz target directory '" << target << "'";
    }
}

TEST(FuzzRegressionCorpus, EveryRecordedInputGivesAResultOrASpyreError) {
    const fs::path root = fs::path(SPYRE_SOURCE_DIR) / "tests" / "data" / "fuzz_regressions";
    ASSERT_TRUE(fs::is_directory(root)) << root;
    int replayed = 0;
    for (const auto &dir : fs::directory_iterator(root)) {
        if (!dir.is_directory()) continue;
        for (const auto &file : fs::directory_iterator(dir.path())) {
            SCOPED_TRACE(file.path().string());
            replay(dir.path().filename().string(), read_file_bytes(file.path().string()));
            replayed++;
        }
    }
    EXPECT_GT(replayed, 0);
}

}  // namespace
}  // namespace spyre
