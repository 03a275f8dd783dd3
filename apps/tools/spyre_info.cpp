// spyre-info: prints the effective Spyre machine description.
//
// The description is loaded exactly as every other tool and the simulator load
// it (the built-in JSON, or the file named by $SPYRE_MACHINE, then the
// overrides in $SPYRE_MACHINE_SET=key=value,...), so this shows what a run in
// the same environment would use: the machine's name, its structural
// fingerprint (the parameters program legality depends on), every parameter
// with its unit, provenance (P published, M measured, E our estimate), where
// its value came from and why it has that value, and a few derived figures.
//
//   spyre-info           human-readable table
//   spyre-info --json    the same as JSON, in the machine description's own format
//                        (parameters an object keyed by name), so SPYRE_MACHINE loads it back
//
// A bad description or override prints "spyre-info: <message>" and exits 1.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "output_files.h"
#include "spyre/error.h"
#include "spyre/machine.h"

namespace {

struct DerivedFigure {
    std::string name;
    double value;
    std::string unit;
    std::string formula;
};

std::vector<DerivedFigure> derived_figures(const spyre::MachineDescription &m) {
    const double peak_tflops = 2.0 * m.pt_peak_macs_per_cycle_fp16 * m.clock_ghz * m.cores / 1000.0;
    const double dram_bytes_per_ns = m.dram_bandwidth_gbps;  // GB/s == bytes/ns
    // Balanced read+write: R = W = B/2 -> time = B/bw + turnaround * B/2.
    const double balanced_gbps = 1.0 / (1.0 / m.dram_bandwidth_gbps + m.dram_turnaround_ns_per_byte / 2.0);
    return {
        {"peak_fp16_tflops_per_card", peak_tflops, "TFLOP/s", "2 x pt_peak_macs_per_cycle_fp16 x clock_ghz x cores"},
        {"dram_bytes_per_cycle", m.dram_bytes_per_cycle(), "bytes/cycle", "dram_bandwidth_gbps / clock_ghz"},
        {"dram_one_core_fraction", m.dram_concurrency_efficiency(1), "of peak",
         "dram_one_core_fraction: the card's throughput with one core moving data"},
        {"dram_half_cores_fraction", m.dram_concurrency_efficiency((double)m.cores / 2), "of peak",
         "linear from dram_one_core_fraction at one core to 1 at all cores"},
        {"dram_balanced_gbps", balanced_gbps, "GB/s",
         "1 / (1 / dram_bandwidth_gbps + dram_turnaround_ns_per_byte / 2), at full concurrency"},
        {"pt_sustained_fraction_of_peak", m.pt_sustained_macs_per_ns / (m.pt_peak_macs_per_cycle_fp16 * m.clock_ghz),
         "of peak", "pt_sustained_macs_per_ns / (pt_peak_macs_per_cycle_fp16 x clock_ghz)"},
        {"ridge_flop_per_dram_byte", peak_tflops * 1000.0 / dram_bytes_per_ns, "FLOP/byte",
         "peak fp16 FLOP/s / DRAM bytes/s"},
        {"ring_gbps_per_direction", m.ring_bytes_per_cycle * m.clock_ghz, "GB/s", "ring_bytes_per_cycle x clock_ghz"},
        {"scratchpad_sticks_per_core", static_cast<double>(m.scratchpad_bytes / m.stick_bytes), "sticks",
         "scratchpad_bytes / stick_bytes"},
    };
}

// Short form of MachineParameterInfo::source for the table ("file <path>" -> "file").
std::string source_kind(const std::string &source) {
    if (source.rfind("file ", 0) == 0) return "file";
    return source;
}

// Where the description as a whole came from: the file path, or built-in.
std::string description_origin(const spyre::MachineDescription &m) {
    for (const auto &p : m.parameters) {
        if (p.source.rfind("file ", 0) == 0) return p.source;
    }
    return "built-in";
}

bool is_exact_integer(double v) { return std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 9.007199254740992e15; }

std::string format_value(double v) {
    char buf[64];
    if (is_exact_integer(v)) {
        std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(v));
    } else {
        std::snprintf(buf, sizeof buf, "%.6g", v);
    }
    return buf;
}

std::string fingerprint_hex(uint64_t fp) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%016" PRIx64, fp);
    return buf;
}

void print_table(const spyre::MachineDescription &m) {
    std::printf("machine:                %s\n", m.name.c_str());
    std::printf("description:            %s\n", description_origin(m).c_str());
    std::printf("structural fingerprint: %s\n\n", fingerprint_hex(m.structural_fingerprint()).c_str());

    const std::vector<std::string> headers = {"parameter", "value", "unit", "prov.", "source", "rationale"};
    std::vector<std::vector<std::string>> rows;
    for (const auto &p : m.parameters) {
        rows.push_back({p.name, format_value(p.value), p.unit, p.provenance, source_kind(p.source), p.rationale});
    }
    std::vector<size_t> width(headers.size());
    for (size_t c = 0; c < headers.size(); c++) width[c] = headers[c].size();
    for (const auto &r : rows) {
        for (size_t c = 0; c < r.size(); c++) width[c] = std::max(width[c], r[c].size());
    }
    auto print_row = [&](const std::vector<std::string> &r) {
        std::string line;
        for (size_t c = 0; c < r.size(); c++) {
            const bool last = c + 1 == r.size();
            const bool right = c == 1;  // numbers right-aligned
            std::string cell = r[c];
            if (!last && cell.size() < width[c]) {
                const std::string fill(width[c] - cell.size(), ' ');
                cell = right ? fill + cell : cell + fill;
            }
            line += cell;
            if (!last) line += "  ";
        }
        std::printf("%s\n", line.c_str());
    };
    print_row(headers);
    std::vector<std::string> rule;
    for (size_t c = 0; c < headers.size(); c++) rule.push_back(std::string(c + 1 == headers.size() ? headers[c].size() : width[c], '-'));
    print_row(rule);
    for (const auto &r : rows) print_row(r);

    std::printf("\nprovenance: P published by the vendor, M measured on hardware by torch-spyre, E our estimate\n");
    std::printf("\nderived figures:\n");
    const auto derived = derived_figures(m);
    size_t name_width = 0;
    for (const auto &d : derived) name_width = std::max(name_width, d.name.size());
    for (const auto &d : derived) {
        std::printf("  %-*s %12.6g %-12s = %s\n", static_cast<int>(name_width), d.name.c_str(), d.value, d.unit.c_str(),
                    d.formula.c_str());
    }
}

void print_json(const spyre::MachineDescription &m) {
    nlohmann::ordered_json j;
    j["name"] = m.name;
    j["description"] = description_origin(m);
    j["structural_fingerprint"] = fingerprint_hex(m.structural_fingerprint());
    nlohmann::ordered_json params = nlohmann::ordered_json::object();
    for (const auto &p : m.parameters) {
        nlohmann::ordered_json e;
        if (is_exact_integer(p.value)) {
            e["value"] = static_cast<int64_t>(p.value);
        } else {
            e["value"] = p.value;
        }
        e["unit"] = p.unit;
        e["provenance"] = p.provenance;
        e["source"] = p.source;
        e["rationale"] = p.rationale;
        params[p.name] = std::move(e);
    }
    j["parameters"] = std::move(params);
    nlohmann::ordered_json derived = nlohmann::ordered_json::object();
    for (const auto &d : derived_figures(m)) {
        derived[d.name] = {{"value", d.value}, {"unit", d.unit}, {"formula", d.formula}};
    }
    j["derived"] = std::move(derived);
    std::printf("%s\n", j.dump(2).c_str());
}

void print_usage(FILE *out) {
    std::fprintf(out,
                 "usage: spyre-info [--json]\n"
                 "Prints the effective Spyre machine description: the built-in description, or the\n"
                 "JSON file named by SPYRE_MACHINE, with the overrides in SPYRE_MACHINE_SET=key=value,...\n"
                 "  --json    print JSON instead of a table\n"
                 "  --help    print this message\n");
}

}  // namespace

int main(int argc, char **argv) {
    check_stdout_at_exit("spyre-info");
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            print_usage(stdout);
            return 0;
        } else {
            std::fprintf(stderr, "spyre-info: unknown argument '%s'\n", argv[i]);
            print_usage(stderr);
            return 2;
        }
    }
    try {
        const spyre::MachineDescription m = spyre::load_machine_from_environment();
        if (json) {
            print_json(m);
        } else {
            print_table(m);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "spyre-info: %s\n", e.what());
        return 1;
    }
    return 0;
}
