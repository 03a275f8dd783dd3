// Fuzzes the program loader and validator: decode_program (program_format.h)
// on arbitrary bytes, then validate_program (validator.h) against
// default_machine().
//
// Assumes the format of program_format.h: the input's last 8 bytes are
// overwritten with the FNV-1a checksum of the rest before decoding, so that
// mutations reach the body instead of stopping at "checksum mismatch" (the
// checksum check itself is a few lines of code with no input-dependent
// allocation). Seeds are real .spyre files (corpus/fuzz_program/).
//
// Invariants (abort() when violated; spyre::Error is the only allowed exception):
//   1. the encoding is canonical: a decoded program re-encodes to exactly
//      the input bytes, and decodes again to the same program;
//   2. a program that also validates disassembles to text that assembles, for
//      the same machine, to the identical binary (assembler.h's promise), the
//      reassembled program validates, and its disassembly is the same text.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "spyre/assembler.h"
#include "spyre/error.h"
#include "spyre/machine.h"
#include "spyre/program_format.h"
#include "spyre/validator.h"

namespace {

uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace spyre;
    const MachineDescription &m = default_machine();
    std::vector<uint8_t> input(data, data + size);
    if (input.size() >= 8) {
        const uint64_t h = fnv1a(input.data(), input.size() - 8);
        for (int i = 0; i < 8; i++) input[input.size() - 8 + i] = (uint8_t)(h >> (8 * i));
    }
    Program p;
    try {
        p = decode_program(input);
    } catch (const Error &) {
        return 0;
    }

    // 1. Binary round trip.
    const std::vector<uint8_t> bytes = encode_program(p);
    const Program q = decode_program(bytes);
    SPYRE_FUZZ_CHECK(spyre_fuzz::same_program(p, q), "decode(encode(p)) != p");
    SPYRE_FUZZ_CHECK(bytes == input, "encode(decode(bytes)) != bytes: the encoding is not canonical");

    try {
        validate_program(p, m);
    } catch (const Error &) {
        return 0;
    }
    // Validation depends on the program, not on where it came from.
    validate_program(q, m);

    // 2. Text round trip of a valid program.
    const std::string text = disassemble_program(q);
    Program r;
    try {
        r = assemble_program(text, m, "disassembly");
    } catch (const Error &e) {
        std::fprintf(stderr, "%s\n--- disassembly ---\n%s\n", e.what(), text.c_str());
        SPYRE_FUZZ_CHECK(false, "the disassembly of a valid program does not assemble");
    }
    SPYRE_FUZZ_CHECK(encode_program(r) == bytes, "assemble(disassemble(p)) encodes to other bytes than p");
    try {
        validate_program(r, m);
    } catch (const Error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        SPYRE_FUZZ_CHECK(false, "the reassembled program does not validate");
    }
    SPYRE_FUZZ_CHECK(disassemble_program(decode_program(encode_program(r))) == text, "the disassembly is not a fixed point");
    return 0;
}
