// Fuzzes the .npy reader: parse_npy (npy.h), the in-memory parser read_npy uses,
// on arbitrary bytes. Seeds are small .npy files (corpus/fuzz_npy/, written by
// make-seeds.sh).
//
// Invariants (abort() when violated; spyre::Error is the only allowed exception):
//   1. an accepted array holds exactly prod(shape) * element size data bytes
//      and no negative extent;
//   2. encode_npy (the bytes write_npy writes) of an accepted array parses back
//      to the same dtype, shape, order and data, and re-encoding that gives the
//      same bytes (the writer's output is canonical).
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "spyre/error.h"
#include "spyre/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace spyre;
    NpyArray a;
    try {
        a = parse_npy(data, size, "fuzz input");
    } catch (const Error &) {
        return 0;
    }
    // 1. Size consistency (the shape's product cannot overflow: the reader
    // checked it, and the data is really there).
    unsigned __int128 elements = 1;
    for (int64_t e : a.shape) {
        SPYRE_FUZZ_CHECK(e >= 0, "accepted a negative extent");
        elements *= (uint64_t)e;
    }
    SPYRE_FUZZ_CHECK(elements * (unsigned)dtype_bytes(a.dtype) == a.data.size(), "data size does not match the shape");

    // 2. Writer round trip.
    const std::vector<uint8_t> bytes = encode_npy(a, "round trip");
    NpyArray b;
    try {
        b = parse_npy(bytes.data(), bytes.size(), "round trip");
    } catch (const Error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        SPYRE_FUZZ_CHECK(false, "the reader rejects what the writer wrote");
    }
    SPYRE_FUZZ_CHECK(b.dtype == a.dtype && b.shape == a.shape && b.fortran_order == a.fortran_order && b.data == a.data,
                     "write + read changed the array");
    SPYRE_FUZZ_CHECK(encode_npy(b, "round trip") == bytes, "the writer's output is not canonical");
    return 0;
}
