// Loads the machine description (JSON via nlohmann-json), applies environment
// overrides and computes the structural fingerprint programs are checked against.
#include "spyre/machine.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "spyre/error.h"

namespace spyre {

namespace {

template <typename T>
T convert_parameter(const std::string &name, double v) {
    if constexpr (std::is_integral_v<T>) {
        if (std::floor(v) != v) {
            throw Error("machine description: parameter '" + name + "' must be an integer, got " + std::to_string(v));
        }
        // Converting a double outside the integer type's range is undefined behaviour.
        if (!(v >= -9.0e18 && v <= 9.0e18)) {
            throw Error("machine description: parameter '" + name + "' is out of range: " + std::to_string(v));
        }
        return static_cast<T>(v);
    } else {
        return static_cast<T>(v);
    }
}

void assign_field(MachineDescription &m, const std::string &name, double v) {
#define SPYRE_MACHINE_PARAM(pname, type)                 \
    if (name == #pname) {                                \
        m.pname = convert_parameter<type>(name, v);      \
        return;                                          \
    }
#include "spyre/machine_params.def"
#undef SPYRE_MACHINE_PARAM
    throw Error("machine description: unknown parameter '" + name + "'");
}

const std::vector<std::string> &required_names() {
    static const std::vector<std::string> names = {
#define SPYRE_MACHINE_PARAM(pname, type) #pname,
#include "spyre/machine_params.def"
#undef SPYRE_MACHINE_PARAM
    };
    return names;
}

void check_sanity(const MachineDescription &m) {
    auto require = [](bool ok, const std::string &msg) {
        if (!ok) throw Error("machine description: " + msg);
    };
    require(m.cores >= 1 && m.cores <= 1024, "cores must be in [1, 1024]");
    require(m.stick_bytes >= 16 && (m.stick_bytes & (m.stick_bytes - 1)) == 0, "stick_bytes must be a power of two >= 16");
    require(m.scratchpad_bytes >= m.stick_bytes && m.scratchpad_bytes % m.stick_bytes == 0,
            "scratchpad_bytes must be a positive multiple of stick_bytes");
    require(m.max_loop_trip_count >= 1 && m.max_loop_trip_count <= 65535, "max_loop_trip_count must be in [1, 65535]");
    require(m.max_loop_depth >= 1 && m.max_loop_depth <= 4, "max_loop_depth must be in [1, 4] (the program format holds 4 loop strides)");
    require(m.token_channels_per_core >= 1 && m.token_channels_per_core <= 64, "token_channels_per_core must be in [1, 64]");
    require(m.barrier_ids >= 1 && m.barrier_ids <= 64, "barrier_ids must be in [1, 64]");
    require(m.clock_ghz > 0, "clock_ghz must be positive");
    require(m.pt_peak_macs_per_cycle_fp16 > 0, "pt_peak_macs_per_cycle_fp16 must be positive");
    require(m.pt_pass_rows >= 1, "pt_pass_rows must be >= 1");
    require(m.dram_bandwidth_gbps > 0, "dram_bandwidth_gbps must be positive");
    require(m.dram_saturation_cores > 0, "dram_saturation_cores must be positive");
    require(m.sfu_bytes_per_cycle_per_corelet > 0, "sfu_bytes_per_cycle_per_corelet must be positive");
    require(m.ring_bytes_per_cycle > 0, "ring_bytes_per_cycle must be positive");
    require(m.dram_usable_bytes > 0 && m.dram_usable_bytes <= m.dram_bytes, "dram_usable_bytes must be in (0, dram_bytes]");
}

// The string member `key` of object `j`, or `fallback` when absent; a value of
// another JSON type is an error naming `what`, not a JSON library exception.
std::string string_member(const nlohmann::ordered_json &j, const char *key, const std::string &fallback, const std::string &what) {
    auto it = j.find(key);
    if (it == j.end()) return fallback;
    if (!it->is_string()) throw Error(what + ": '" + key + "' must be a string, got " + it->dump());
    return it->get<std::string>();
}

}  // namespace

MachineDescription parse_machine_description(const std::string &json_text, const std::string &source) {
    nlohmann::ordered_json j;  // keeps the file order of the parameters
    try {
        j = nlohmann::ordered_json::parse(json_text);
    } catch (const nlohmann::json::exception &e) {
        throw Error("machine description (" + source + "): not valid JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("parameters") || !j["parameters"].is_object()) {
        throw Error("machine description (" + source + "): expected an object with a 'parameters' object");
    }
    MachineDescription m;
    m.name = string_member(j, "name", "unnamed", "machine description (" + source + ")");
    std::set<std::string> seen;
    for (auto it = j["parameters"].begin(); it != j["parameters"].end(); ++it) {
        const std::string name = it.key();
        const auto &p = it.value();
        if (!p.is_object() || !p.contains("value") || !p["value"].is_number()) {
            throw Error("machine description (" + source + "): parameter '" + name + "' needs a numeric 'value'");
        }
        MachineParameterInfo info;
        info.name = name;
        info.value = p["value"].get<double>();
        const std::string what = "machine description (" + source + "): parameter '" + name + "'";
        info.unit = string_member(p, "unit", "", what);
        info.provenance = string_member(p, "provenance", "", what);
        info.rationale = string_member(p, "rationale", "", what);
        info.source = source;
        if (info.provenance != "P" && info.provenance != "M" && info.provenance != "E" && info.provenance != "P/E") {
            throw Error("machine description (" + source + "): parameter '" + name +
                        "' needs provenance P, M, E or P/E (published rate, derived value), got '" + info.provenance + "'");
        }
        assign_field(m, name, info.value);
        seen.insert(name);
        m.parameters.push_back(info);
    }
    for (const auto &name : required_names()) {
        if (!seen.count(name)) {
            throw Error("machine description (" + source + "): missing parameter '" + name + "'");
        }
    }
    check_sanity(m);
    return m;
}

void apply_machine_overrides(MachineDescription &target, const std::string &overrides, const std::string &source) {
    // Work on a copy so that a bad override leaves `target` as it was.
    MachineDescription m = target;
    std::stringstream ss(overrides);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) continue;
        auto eq = item.find('=');
        if (eq == std::string::npos) {
            throw Error(source + ": expected key=value, got '" + item + "'");
        }
        std::string key = item.substr(0, eq);
        std::string text = item.substr(eq + 1);
        char *end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v)) {
            throw Error(source + ": value of '" + key + "' is not a number: '" + text + "'");
        }
        MachineParameterInfo *info = nullptr;
        for (auto &p : m.parameters) {
            if (p.name == key) info = &p;
        }
        if (!info) throw Error(source + ": unknown machine parameter '" + key + "' (see spyre-info)");
        assign_field(m, key, v);
        info->value = v;
        info->source = source;
    }
    check_sanity(m);
    target = std::move(m);
}

uint64_t MachineDescription::structural_fingerprint() const {
    // FNV-1a over the parameters that decide whether a program is legal.
    const int64_t structural[] = {cores, scratchpad_bytes, stick_bytes, max_loop_trip_count,
                                  max_loop_depth, token_channels_per_core, barrier_ids, max_core_span_bytes};
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : structural) {
        for (int i = 0; i < 8; i++) {
            h ^= static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
            h *= 1099511628211ull;
        }
    }
    return h;
}

const MachineParameterInfo *MachineDescription::find(const std::string &pname) const {
    for (const auto &p : parameters) {
        if (p.name == pname) return &p;
    }
    return nullptr;
}

MachineDescription load_machine_from_environment() {
    MachineDescription m;
    if (const char *path = std::getenv("SPYRE_MACHINE"); path && *path) {
        std::ifstream f(path);
        if (!f) throw Error(std::string("SPYRE_MACHINE: cannot open '") + path + "'");
        std::stringstream buf;
        buf << f.rdbuf();
        m = parse_machine_description(buf.str(), std::string("file ") + path);
    } else {
        m = parse_machine_description(builtin_machine_json(), "built-in");
    }
    if (const char *set = std::getenv("SPYRE_MACHINE_SET"); set && *set) {
        apply_machine_overrides(m, set, "SPYRE_MACHINE_SET");
    }
    return m;
}

const MachineDescription &default_machine() {
    static const MachineDescription m = load_machine_from_environment();
    return m;
}

}  // namespace spyre
