// Fuzzes the text assembler: assemble_program (assembler.h) on arbitrary text,
// for default_machine(). Seeds: examples/vadd32.s and small programs covering
// every directive and operand form (corpus/fuzz_assembler/).
//
// Invariants (abort() when violated; spyre::Error is the only allowed exception):
//   1. an assembled program encodes (program_format.h) and decodes back to the
//      same program;
//   2. its disassembly assembles to the identical binary (assembler.h's
//      promise; it holds for any assembled program, valid or not) and is a
//      fixed point of disassemble(assemble(.));
//   3. validate_program on it either accepts or throws spyre::Error.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "spyre/assembler.h"
#include "spyre/error.h"
#include "spyre/machine.h"
#include "spyre/program_format.h"
#include "spyre/validator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace spyre;
    const MachineDescription &m = default_machine();
    const std::string text(reinterpret_cast<const char *>(data), size);
    Program p;
    try {
        p = assemble_program(text, m, "fuzz.s");
    } catch (const Error &) {
        return 0;
    }

    // 1. Binary round trip.
    std::vector<uint8_t> bytes;
    try {
        bytes = encode_program(p);
    } catch (const Error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        SPYRE_FUZZ_CHECK(false, "an assembled program does not encode");
    }
    const Program q = decode_program(bytes);
    SPYRE_FUZZ_CHECK(spyre_fuzz::same_program(p, q), "decode(encode(p)) != p");

    // 2. Text round trip.
    const std::string listing = disassemble_program(p);
    Program r;
    try {
        r = assemble_program(listing, m, "disassembly");
    } catch (const Error &e) {
        std::fprintf(stderr, "%s\n--- disassembly ---\n%s\n", e.what(), listing.c_str());
        SPYRE_FUZZ_CHECK(false, "the disassembly of an assembled program does not assemble");
    }
    SPYRE_FUZZ_CHECK(encode_program(r) == bytes, "assemble(disassemble(p)) encodes to other bytes than p");
    SPYRE_FUZZ_CHECK(disassemble_program(r) == listing, "the disassembly is not a fixed point");

    // 3. The validator on assembler output.
    try {
        validate_program(q, m);
    } catch (const Error &) {
    }
    return 0;
}
