// Fuzzes the machine-description loader: parse_machine_description and
// apply_machine_overrides (machine.h).
//
// Assumes the input layout JSON-TEXT [ '\0' OVERRIDES ]: the bytes before the
// first NUL are parsed as a machine description; the bytes after it (if any)
// are applied as "key=value,..." overrides to that description, or to the
// built-in one when the JSON is rejected (so the override parser is exercised
// either way). Seeds: runtime/machine/spyre_machine.json and variants
// (corpus/fuzz_machine/).
//
// Invariants (abort() when violated; spyre::Error is the only allowed exception):
//   1. an accepted description is sane: every parameter of machine_params.def
//      present, the structural limits the validator and the program format
//      rely on hold (cores 1..1024, stick_bytes a power of two >= 16,
//      max_loop_depth 1..4, ...), every parameter lies in its range of
//      machine_params.def, and parsing the same text again gives the
//      same fingerprint;
//   2. a rejected override leaves the description unchanged (machine.h's
//      promise); an accepted one keeps it sane.
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "spyre/error.h"
#include "spyre/machine.h"

namespace {

void check_sane(const spyre::MachineDescription &m) {
    SPYRE_FUZZ_CHECK(m.cores >= 1 && m.cores <= 1024, "cores out of range");
    SPYRE_FUZZ_CHECK(m.stick_bytes >= 16 && (m.stick_bytes & (m.stick_bytes - 1)) == 0, "stick_bytes not a power of two >= 16");
    SPYRE_FUZZ_CHECK(m.scratchpad_bytes >= m.stick_bytes && m.scratchpad_bytes % m.stick_bytes == 0, "scratchpad_bytes");
    SPYRE_FUZZ_CHECK(m.max_loop_depth >= 1 && m.max_loop_depth <= 4, "max_loop_depth out of range");
    SPYRE_FUZZ_CHECK(m.max_loop_trip_count >= 1 && m.max_loop_trip_count <= 65535, "max_loop_trip_count out of range");
    SPYRE_FUZZ_CHECK(m.token_channels_per_core >= 1 && m.barrier_ids >= 1, "channels/barriers");
    SPYRE_FUZZ_CHECK(m.clock_ghz > 0 && m.dram_bandwidth_gbps > 0 && m.dram_one_core_fraction > 0, "rates");
    SPYRE_FUZZ_CHECK(m.dram_usable_bytes > 0 && m.dram_usable_bytes <= m.dram_bytes, "dram_usable_bytes");
#define SPYRE_MACHINE_PARAM(pname, type, min, max)                                   \
    SPYRE_FUZZ_CHECK(m.find(#pname) != nullptr, "missing parameter " #pname);           \
    SPYRE_FUZZ_CHECK(m.pname >= (type)(min) && m.pname <= (type)(max), #pname " outside its range");
#include "spyre/machine_params.def"
#undef SPYRE_MACHINE_PARAM
}

bool same_values(const spyre::MachineDescription &a, const spyre::MachineDescription &b) {
    if (a.parameters.size() != b.parameters.size() || a.name != b.name) return false;
    for (size_t i = 0; i < a.parameters.size(); i++) {
        const auto &x = a.parameters[i], &y = b.parameters[i];
        if (x.name != y.name || !(x.value == y.value) || x.source != y.source) return false;
    }
#define SPYRE_MACHINE_PARAM(pname, type, min, max) \
    if (!(a.pname == b.pname)) return false;
#include "spyre/machine_params.def"
#undef SPYRE_MACHINE_PARAM
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace spyre;
    const char *text = reinterpret_cast<const char *>(data);
    const void *nul = std::memchr(data, 0, size);
    const size_t json_size = nul ? (size_t)((const uint8_t *)nul - data) : size;
    const std::string json(text, json_size);

    MachineDescription m;
    bool parsed = false;
    try {
        m = parse_machine_description(json, "fuzz input");
        parsed = true;
    } catch (const Error &) {
    }
    if (parsed) {
        check_sane(m);
        const MachineDescription again = parse_machine_description(json, "fuzz input");
        SPYRE_FUZZ_CHECK(again.structural_fingerprint() == m.structural_fingerprint(), "fingerprint not deterministic");
    } else {
        static const MachineDescription builtin = parse_machine_description(builtin_machine_json(), "built-in");
        m = builtin;
    }
    if (!nul) return 0;

    const std::string overrides(text + json_size + 1, size - json_size - 1);
    const MachineDescription before = m;
    try {
        apply_machine_overrides(m, overrides, "fuzz overrides");
    } catch (const Error &) {
        SPYRE_FUZZ_CHECK(same_values(m, before), "a rejected override changed the description");
        return 0;
    }
    check_sane(m);
    return 0;
}
