// Loads the machine description (JSON via nlohmann-json), applies environment
// overrides and computes the structural fingerprint programs are checked against.
#include "spyre/machine.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "spyre/error.h"
#include "spyre/file_bytes.h"

namespace spyre {

namespace {

// "12", "0.1", "1e+06": integers in full, other values in the shortest
// form that reads back the same.
std::string number_text(double v) {
    if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string((long long)v);
    char buf[40];
    for (int digits = 6; digits <= 17; digits++) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

template <typename T>
T convert_parameter(const std::string &where, const std::string &name, double v, double min, double max) {
    if constexpr (std::is_integral_v<T>) {
        if (std::isfinite(v) && std::floor(v) != v) {
            throw Error(where + ": parameter '" + name + "' must be an integer, got " + number_text(v));
        }
    }
    // Every parameter has a range (machine_params.def); checking it first also
    // keeps the integer conversion below defined.
    if (!(v >= min && v <= max)) {
        throw Error(where + ": parameter '" + name + "' = " + number_text(v) + " is outside its allowed range [" +
                    number_text(min) + ", " + number_text(max) + "] (runtime/machine/include/spyre/machine_params.def)");
    }
    return static_cast<T>(v);
}

void assign_field(MachineDescription &m, const std::string &where, const std::string &name, double v) {
#define SPYRE_MACHINE_PARAM(pname, type, min, max)                  \
    if (name == #pname) {                                           \
        m.pname = convert_parameter<type>(where, name, v, min, max); \
        return;                                                     \
    }
#include "spyre/machine_params.def"
#undef SPYRE_MACHINE_PARAM
    throw Error(where + ": unknown parameter '" + name + "'");
}

const std::vector<std::string> &required_names() {
    static const std::vector<std::string> names = {
#define SPYRE_MACHINE_PARAM(pname, type, min, max) #pname,
#include "spyre/machine_params.def"
#undef SPYRE_MACHINE_PARAM
    };
    return names;
}

// The rules between parameters (each parameter's own range is checked as it
// is assigned).
void check_sanity(const MachineDescription &m, const std::string &where) {
    auto require = [&](bool ok, const std::string &msg) {
        if (!ok) throw Error(where + ": " + msg);
    };
    require((m.stick_bytes & (m.stick_bytes - 1)) == 0,
            "stick_bytes = " + std::to_string(m.stick_bytes) + " must be a power of two");
    require(m.scratchpad_bytes >= m.stick_bytes && m.scratchpad_bytes % m.stick_bytes == 0,
            "scratchpad_bytes = " + std::to_string(m.scratchpad_bytes) + " must be a positive multiple of stick_bytes = " +
                std::to_string(m.stick_bytes));
    // A planner cuts a row into SFU vectors of whole sticks: at least one stick of any element type.
    require(m.sfu_max_vector_lanes >= m.stick_bytes,
            "sfu_max_vector_lanes = " + std::to_string(m.sfu_max_vector_lanes) +
                " must be at least the lanes of one stick of 1-byte elements, stick_bytes = " + std::to_string(m.stick_bytes));
    require(m.dram_usable_bytes <= m.dram_bytes, "dram_usable_bytes = " + std::to_string(m.dram_usable_bytes) +
                                                     " must not exceed dram_bytes = " + std::to_string(m.dram_bytes));
    // The bound stays a bound: no simulated rate may exceed the one the roofline bound charges.
    require(m.dram_bound_turnaround_ns_per_byte <= m.dram_turnaround_ns_per_byte,
            "dram_bound_turnaround_ns_per_byte = " + std::to_string(m.dram_bound_turnaround_ns_per_byte) +
                " must not exceed dram_turnaround_ns_per_byte = " + std::to_string(m.dram_turnaround_ns_per_byte) +
                " (the roofline bound charges the smallest turnaround)");
    require(m.pt_sustained_macs_per_ns <= m.pt_peak_macs_per_cycle_fp16 * m.clock_ghz,
            "pt_sustained_macs_per_ns = " + std::to_string(m.pt_sustained_macs_per_ns) +
                " must not exceed the datasheet peak pt_peak_macs_per_cycle_fp16 x clock_ghz = " +
                std::to_string(m.pt_peak_macs_per_cycle_fp16 * m.clock_ghz));
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
        assign_field(m, "machine description (" + source + ")", name, info.value);
        seen.insert(name);
        m.parameters.push_back(info);
    }
    for (const auto &name : required_names()) {
        if (!seen.count(name)) {
            throw Error("machine description (" + source + "): missing parameter '" + name + "'");
        }
    }
    check_sanity(m, "machine description (" + source + ")");
    return m;
}

void apply_machine_overrides(MachineDescription &target, const std::string &overrides, const std::string &source) {
    // Work on a copy so that a bad override leaves `target` as it was.
    // One rule for blanks: spaces and tabs around a key and around a value are ignored.
    // A key given twice is refused (as spyre-run --param does): which one was meant?
    MachineDescription m = target;
    std::stringstream ss(overrides);
    std::string item;
    std::set<std::string> seen;
    auto trim = [](const std::string &t) {
        const size_t first = t.find_first_not_of(" \t");
        if (first == std::string::npos) return std::string();
        return t.substr(first, t.find_last_not_of(" \t") - first + 1);
    };
    while (std::getline(ss, item, ',')) {
        if (trim(item).empty()) continue;
        auto eq = item.find('=');
        if (eq == std::string::npos) {
            throw Error(source + ": expected key=value, got '" + item + "'");
        }
        std::string key = trim(item.substr(0, eq));
        std::string text = trim(item.substr(eq + 1));
        if (!seen.insert(key).second) throw Error(source + ": '" + key + "' is given more than once");
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
        assign_field(m, source, key, v);
        info->value = v;
        info->source = source;
    }
    check_sanity(m, source);
    target = std::move(m);
}

double MachineDescription::dram_cycles(double read, double write, double cores) const {
    const double turnaround = dram_turnaround_ns_per_byte * clock_ghz * std::min(read, write);
    return ((read + write) / dram_bytes_per_cycle() + turnaround) / dram_concurrency_efficiency(cores);
}

double MachineDescription::copy_dma_cycles(double read, double write, double transfers) const {
    if (transfers <= 0) return 0.0;
    // Runs are cut at stick boundaries, so the bytes of even one long run spread over the engines.
    const double engines = std::min<double>((double)cores, std::max(transfers, (read + write) / (double)stick_bytes));
    const double issue = std::ceil(transfers / engines) * (double)dma_latency_cycles;
    return (double)dma_latency_cycles + std::max(dram_cycles(read, write, engines), issue);
}

double MachineDescription::pt_matmul_cycles(double m, double n, double k, double type_factor) const {
    const double passes = std::ceil(m / (double)pt_pass_rows);
    const double per_pass = (double)pt_pass_rows * n * k / pt_macs_per_cycle(type_factor) + pt_pass_fill_cycles;
    return passes * per_pass;
}

double MachineDescription::sfu_instruction_cycles(double n, double rows, double element_bytes, SfuCost cost) const {
    const double bytes_per_cycle = sfu_bytes_per_cycle_per_corelet * (double)corelets_per_core;
    double cycles = std::ceil(n * rows * element_bytes / bytes_per_cycle);
    if (cost == SfuCost::Transcendental) cycles *= sfu_transcendental_cost;
    if (cost == SfuCost::RowReduce) cycles = cycles * sfu_row_reduce_cost + rows * sfu_row_reduce_row_cycles;
    return cycles + sfu_instruction_overhead_cycles;
}

double MachineDescription::dram_bound_ns(double read, double write) const {
    return (read + write) / dram_bandwidth_gbps + dram_bound_turnaround_ns_per_byte * std::min(read, write);
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
        // Only a regular file of at most kMaxMachineFileBytes: a FIFO would block for ever and
        // /dev/zero would be read until memory runs out.
        std::vector<uint8_t> bytes;
        try {
            bytes = read_file_bytes(path, kMaxMachineFileBytes);
        } catch (const Error &e) {
            throw Error(std::string("SPYRE_MACHINE: ") + e.what());
        }
        m = parse_machine_description(std::string(bytes.begin(), bytes.end()), std::string("file ") + path);
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
