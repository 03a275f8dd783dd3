// Helpers shared by the fuzz targets: an invariant check that prints what
// failed and abort()s (so libFuzzer records the input as a crash), and
// structural equality of decoded programs (Program has no operator==; the
// decoder's file_offset annotations are deliberately not compared).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "spyre/program.h"

namespace spyre_fuzz {

#define SPYRE_FUZZ_CHECK(cond, what)                                                                   \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            std::fprintf(stderr, "fuzz invariant violated at %s:%d: %s\n", __FILE__, __LINE__, what); \
            std::abort();                                                                              \
        }                                                                                              \
    } while (0)

inline bool same_program(const spyre::Program &a, const spyre::Program &b) {
    if (a.format_version != b.format_version || a.machine_fingerprint != b.machine_fingerprint ||
        a.kernel_name != b.kernel_name || a.params.size() != b.params.size() || a.args.size() != b.args.size() ||
        a.cores.size() != b.cores.size()) {
        return false;
    }
    for (size_t i = 0; i < a.params.size(); i++) {
        if (a.params[i].name != b.params[i].name || a.params[i].dtype != b.params[i].dtype) return false;
    }
    for (size_t i = 0; i < a.args.size(); i++) {
        const auto &x = a.args[i], &y = b.args[i];
        if (x.name != y.name || x.kind != y.kind || x.shape.dtype != y.shape.dtype || x.shape.extent != y.shape.extent ||
            x.layout.stick_dim != y.layout.stick_dim || x.layout.order != y.layout.order ||
            x.layout.padded != y.layout.padded) {
            return false;
        }
    }
    for (size_t c = 0; c < a.cores.size(); c++) {
        if (a.cores[c].unit != b.cores[c].unit) return false;  // Instruction::operator== ignores file_offset
    }
    return true;
}

}  // namespace spyre_fuzz
