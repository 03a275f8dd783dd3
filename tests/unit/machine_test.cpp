// Tests of the machine description (runtime/machine/include/spyre/machine.h): the
// built-in JSON, its key figures against the shared MACHINE.md, overrides from
// the API and the environment, error messages, and the structural fingerprint.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "spyre/error.h"
#include "declared_machine_ranges.h"
#include "spyre/machine.h"

namespace spyre {
namespace {

MachineDescription builtin() { return parse_machine_description(builtin_machine_json(), "built-in"); }

// Sets (or unsets, with nullptr) an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char *name, const char *value) : name_(name) {
        if (const char *old = std::getenv(name)) old_ = std::string(old);
        if (value) {
            setenv(name, value, 1);
        } else {
            unsetenv(name);
        }
    }
    ~ScopedEnv() {
        if (old_) {
            setenv(name_.c_str(), old_->c_str(), 1);
        } else {
            unsetenv(name_.c_str());
        }
    }
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
    std::string name_;
    std::optional<std::string> old_;
};

// The message of the spyre::Error that fn throws, or "" if it throws none.
template <typename Fn>
std::string error_of(Fn fn) {
    try {
        fn();
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

// The built-in JSON with the first occurrence of `from` replaced by `to`.
std::string builtin_with(const std::string &from, const std::string &to) {
    std::string text = builtin_machine_json();
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << "built-in JSON has no '" << from << "'";
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

// The built-in JSON without the line that defines parameter `name`.
std::string builtin_without(const std::string &name) {
    std::string text = builtin_machine_json();
    const size_t at = text.find("\"" + name + "\"");
    EXPECT_NE(at, std::string::npos);
    const size_t begin = text.rfind('\n', at);
    const size_t end = text.find('\n', at);
    text.erase(begin, end - begin);
    return text;
}

TEST(MachineBuiltin, ParsesAndHasEveryParameterWithProvenanceAndRationale) {
    MachineDescription m = builtin();
    EXPECT_EQ(m.name, "spyre-card");
    const std::set<std::string> declared = {
#define SPYRE_MACHINE_PARAM(pname, type, min, max) #pname,
#include "spyre/machine_params.def"
#undef SPYRE_MACHINE_PARAM
    };
    std::set<std::string> present;
    for (const auto &p : m.parameters) {
        SCOPED_TRACE(p.name);
        EXPECT_TRUE(declared.count(p.name)) << "not declared in machine_params.def";
        EXPECT_TRUE(present.insert(p.name).second) << "listed twice";
        EXPECT_TRUE(p.provenance == "P" || p.provenance == "M" || p.provenance == "E") << p.provenance;
        EXPECT_GE(p.rationale.size(), 10u) << "needs a rationale";
        EXPECT_FALSE(p.unit.empty()) << "needs a unit";
        EXPECT_EQ(p.source, "built-in");
        ASSERT_EQ(m.find(p.name), &p);
    }
    EXPECT_EQ(present, declared);
    EXPECT_EQ(m.find("no_such_parameter"), nullptr);
}

TEST(MachineBuiltin, ParametersKeepTheFileOrder) {
    MachineDescription m = builtin();
    ASSERT_GE(m.parameters.size(), 3u);
    EXPECT_EQ(m.parameters[0].name, "cores");
    EXPECT_EQ(m.parameters[1].name, "corelets_per_core");
    EXPECT_EQ(m.parameters.back().name, "kernel_launch_cycles");
}

TEST(MachineBuiltin, KeyFiguresMatchMachineMd) {
    MachineDescription m = builtin();
    EXPECT_EQ(m.cores, 32);
    EXPECT_EQ(m.corelets_per_core, 2);
    EXPECT_EQ(m.scratchpad_bytes, 2 * 1024 * 1024);
    EXPECT_EQ(m.stick_bytes, 128);
    EXPECT_EQ(m.pt_peak_macs_per_cycle_fp16, 1024);
    EXPECT_EQ(m.max_loop_trip_count, 65535);
    EXPECT_DOUBLE_EQ(m.clock_ghz, 1.5);
    // Fitted to hardware timings (docs/fidelity.md): near MACHINE.md's figures, the sustained PT
    // rate below the datasheet peak.
    EXPECT_GT(m.dram_bandwidth_gbps, 140);
    EXPECT_LT(m.dram_bandwidth_gbps, 175);
    EXPECT_GT(m.pt_sustained_macs_per_ns, 1000);
    EXPECT_LT(m.pt_sustained_macs_per_ns, m.pt_peak_macs_per_cycle_fp16 * m.clock_ghz);
    EXPECT_EQ(m.ring_bytes_per_cycle, 128);
    EXPECT_EQ(m.dram_bytes, int64_t(128) << 30);
    EXPECT_EQ(m.dram_usable_bytes, int64_t(112) << 30);
    EXPECT_EQ(m.max_core_span_bytes, (int64_t(256) << 20) - 4096);
    // Provenance as MACHINE.md gives it.
    EXPECT_EQ(m.find("cores")->provenance, "P");
    EXPECT_EQ(m.find("dram_bandwidth_gbps")->provenance, "M");
    EXPECT_EQ(m.find("clock_ghz")->provenance, "E");
    // The struct fields and the parameter list agree.
    EXPECT_EQ(m.find("cores")->value, 32);
    EXPECT_EQ(m.find("scratchpad_bytes")->value, 2097152);
}

TEST(MachineBuiltin, FittedParametersNameTheRowsTheyWereFittedOn) {
    // calibrate.py marks what it fitted with "[fitted: ...]" and lists the hardware rows in fitted_on.
    const nlohmann::json j = nlohmann::json::parse(builtin_machine_json());
    int fitted = 0;
    for (const auto &[name, p] : j["parameters"].items()) {
        const std::string rationale = p.value("rationale", "");
        if (rationale.find("[fitted: ") == std::string::npos) continue;
        fitted++;
        SCOPED_TRACE(name);
        EXPECT_EQ(p.value("provenance", ""), "M");
        if (name == "dram_bound_turnaround_ns_per_byte") continue;  // set from every mapped row, not a subset
        ASSERT_TRUE(p.contains("fitted_on") && p["fitted_on"].is_array());
        EXPECT_GE(p["fitted_on"].size(), 4u);
        for (const auto &id : p["fitted_on"]) EXPECT_TRUE(id.is_string() && id.get<std::string>().size() == 10);
    }
    EXPECT_GE(fitted, 8) << "the PT, DRAM and SFU rates are fitted";
}

TEST(MachineBuiltin, DerivedRates) {
    MachineDescription m = builtin();
    EXPECT_EQ(m.stick_lanes(2), 64);
    EXPECT_EQ(m.stick_lanes(4), 32);
    EXPECT_EQ(m.stick_lanes(1), 128);
    EXPECT_DOUBLE_EQ(m.dram_bytes_per_cycle(), m.dram_bandwidth_gbps / 1.5);
    // One core alone gets 1 / (1 + h) of the card; more cores approach the peak.
    EXPECT_DOUBLE_EQ(m.dram_concurrency_efficiency(1), m.dram_one_core_fraction);
    EXPECT_LT(m.dram_concurrency_efficiency(2), m.dram_concurrency_efficiency(16));
    EXPECT_DOUBLE_EQ(m.dram_concurrency_efficiency(32), 1.0);
    // About 98 TFLOP/s fp16 per card, as MACHINE.md says.
    const double tflops = 2.0 * m.pt_peak_macs_per_cycle_fp16 * m.clock_ghz * m.cores / 1000.0;
    EXPECT_NEAR(tflops, 98.3, 0.1);
}

TEST(MachineBuiltin, CopyDmaSpreadsDescriptorsOverTheEngines) {
    const MachineDescription m = builtin();
    const double L = (double)m.dma_latency_cycles;
    // One long run, cut at stick boundaries over every engine: its latency, then its bytes at the card's DRAM rate.
    EXPECT_DOUBLE_EQ(m.copy_dma_cycles(1 << 20, 1 << 20, 1), L + m.dram_cycles(1 << 20, 1 << 20, m.cores));
    // One stick: one engine.
    EXPECT_DOUBLE_EQ(m.copy_dma_cycles(128, 0, 1), L + std::max(m.dram_cycles(128, 0, 1), L));
    // Many single-stick runs: the issue rate of all the cores' engines, not one latency after another.
    const double runs = 32.0 * m.cores;
    const double c = m.copy_dma_cycles(runs * 128, runs * 128, runs);
    EXPECT_DOUBLE_EQ(c, L + std::max(m.dram_cycles(runs * 128, runs * 128, m.cores), 32.0 * L));
    EXPECT_LT(c, runs * L / 4);
    // Splitting the same bytes into more runs never makes a copy cheaper.
    EXPECT_LE(m.copy_dma_cycles(4096, 4096, 1), m.copy_dma_cycles(4096, 4096, 32));
    EXPECT_LE(m.copy_dma_cycles(4096, 4096, 32), m.copy_dma_cycles(4096, 4096, 4096));
    EXPECT_EQ(m.copy_dma_cycles(0, 0, 0), 0.0);
}

TEST(MachineBuiltin, DefaultMachineIsLoadedOnce) {
    const MachineDescription &a = default_machine();
    const MachineDescription &b = default_machine();
    EXPECT_EQ(&a, &b);
    EXPECT_FALSE(a.parameters.empty());
}

TEST(MachineOverrides, ApplyChangesValuesAndRecordsTheSource) {
    MachineDescription m = builtin();
    apply_machine_overrides(m, "cores=16,dram_bandwidth_gbps=200.5", "test overrides");
    EXPECT_EQ(m.cores, 16);
    EXPECT_DOUBLE_EQ(m.dram_bandwidth_gbps, 200.5);
    EXPECT_EQ(m.find("cores")->value, 16);
    EXPECT_EQ(m.find("cores")->source, "test overrides");
    EXPECT_EQ(m.find("dram_bandwidth_gbps")->source, "test overrides");
    EXPECT_EQ(m.find("stick_bytes")->source, "built-in") << "untouched parameters keep their source";
    // Provenance and rationale stay those of the description.
    EXPECT_EQ(m.find("cores")->provenance, "P");
}

TEST(MachineOverrides, EmptyItemsAreIgnored) {
    MachineDescription m = builtin();
    apply_machine_overrides(m, ",cores=8,,", "x");
    EXPECT_EQ(m.cores, 8);
    apply_machine_overrides(m, "", "x");
    EXPECT_EQ(m.cores, 8);
}

TEST(MachineOverrides, FromSpyreMachineSet) {
    ScopedEnv file("SPYRE_MACHINE", nullptr);
    ScopedEnv set("SPYRE_MACHINE_SET", "clock_ghz=2,max_loop_trip_count=1000");
    MachineDescription m = load_machine_from_environment();
    EXPECT_DOUBLE_EQ(m.clock_ghz, 2.0);
    EXPECT_EQ(m.max_loop_trip_count, 1000);
    EXPECT_EQ(m.find("clock_ghz")->source, "SPYRE_MACHINE_SET");
    EXPECT_EQ(m.find("cores")->source, "built-in");
}

TEST(MachineOverrides, FromSpyreMachineFile) {
    namespace fs = std::filesystem;
    const fs::path path = fs::temp_directory_path() / ("spyre_machine_test_" + std::to_string(getpid()) + ".json");
    {
        std::ofstream f(path);
        f << builtin_with("\"name\": \"spyre-card\"", "\"name\": \"half-card\"");
    }
    // Replace the cores line's value in the written file.
    std::string text;
    {
        std::ifstream f(path);
        text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    const size_t at = text.find("\"value\": 32,");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 12, "\"value\": 16,");
    {
        std::ofstream f(path);
        f << text;
    }

    ScopedEnv file("SPYRE_MACHINE", path.c_str());
    {
        ScopedEnv set("SPYRE_MACHINE_SET", nullptr);
        MachineDescription m = load_machine_from_environment();
        EXPECT_EQ(m.name, "half-card");
        EXPECT_EQ(m.cores, 16);
        EXPECT_EQ(m.find("cores")->source, "file " + path.string());
    }
    {
        // The overrides apply on top of the file.
        ScopedEnv set("SPYRE_MACHINE_SET", "cores=4");
        MachineDescription m = load_machine_from_environment();
        EXPECT_EQ(m.cores, 4);
        EXPECT_EQ(m.find("cores")->source, "SPYRE_MACHINE_SET");
        EXPECT_EQ(m.find("stick_bytes")->source, "file " + path.string());
    }
    fs::remove(path);
}

TEST(MachineErrors, MissingSpyreMachineFile) {
    ScopedEnv file("SPYRE_MACHINE", "/nonexistent/spyre/machine.json");
    ScopedEnv set("SPYRE_MACHINE_SET", nullptr);
    const std::string msg = error_of([] { load_machine_from_environment(); });
    EXPECT_NE(msg.find("SPYRE_MACHINE"), std::string::npos) << msg;
    EXPECT_NE(msg.find("/nonexistent/spyre/machine.json"), std::string::npos) << msg;
}

// A FIFO would block every tool for ever, /dev/zero would be read until memory runs out.
TEST(MachineErrors, SpyreMachineNamingADeviceOrFifoIsRefusedBeforeReading) {
    ScopedEnv set("SPYRE_MACHINE_SET", nullptr);
    namespace fs = std::filesystem;
    const fs::path fifo = fs::temp_directory_path() / ("spyre_machine_fifo_" + std::to_string(::getpid()));
    fs::remove(fifo);
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    for (const std::string &path : {std::string("/dev/zero"), fifo.string()}) {
        ScopedEnv file("SPYRE_MACHINE", path.c_str());
        const std::string msg = error_of([] { load_machine_from_environment(); });
        EXPECT_NE(msg.find("SPYRE_MACHINE: '" + path + "' is not a regular file"), std::string::npos) << msg;
    }
    fs::remove(fifo);
}

TEST(MachineErrors, BadSpyreMachineSet) {
    ScopedEnv file("SPYRE_MACHINE", nullptr);
    ScopedEnv set("SPYRE_MACHINE_SET", "warp_factor=9");
    const std::string msg = error_of([] { load_machine_from_environment(); });
    EXPECT_NE(msg.find("SPYRE_MACHINE_SET"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unknown machine parameter 'warp_factor'"), std::string::npos) << msg;
}

TEST(MachineErrors, OverrideUnknownKeyBadNumberAndMissingEquals) {
    MachineDescription m = builtin();
    EXPECT_NE(error_of([&] { apply_machine_overrides(m, "corez=4", "S"); }).find("unknown machine parameter 'corez'"),
              std::string::npos);
    std::string msg = error_of([&] { apply_machine_overrides(m, "cores=four", "S"); });
    EXPECT_NE(msg.find("value of 'cores' is not a number: 'four'"), std::string::npos) << msg;
    EXPECT_NE(error_of([&] { apply_machine_overrides(m, "cores=", "S"); }).find("not a number"), std::string::npos);
    EXPECT_NE(error_of([&] { apply_machine_overrides(m, "cores=4x", "S"); }).find("not a number"), std::string::npos);
    EXPECT_NE(error_of([&] { apply_machine_overrides(m, "clock_ghz=inf", "S"); }).find("not a number"),
              std::string::npos);
    EXPECT_NE(error_of([&] { apply_machine_overrides(m, "cores", "S"); }).find("expected key=value"), std::string::npos);
    msg = error_of([&] { apply_machine_overrides(m, "cores=2.5", "S"); });
    EXPECT_NE(msg.find("'cores' must be an integer"), std::string::npos) << msg;
    msg = error_of([&] { apply_machine_overrides(m, "cores=0", "S"); });
    EXPECT_NE(msg.find("S: parameter 'cores' = 0 is outside its allowed range [1, 1024]"), std::string::npos) << msg;
    msg = error_of([&] { apply_machine_overrides(m, "stick_bytes=100", "S"); });
    EXPECT_NE(msg.find("power of two"), std::string::npos) << msg;
    msg = error_of([&] { apply_machine_overrides(m, "cores=1e30", "S"); });
    EXPECT_FALSE(msg.empty()) << "an integer parameter far out of range must be rejected";
}

TEST(MachineErrors, FailedOverrideLeavesTheDescriptionUnchanged) {
    MachineDescription m = builtin();
    EXPECT_THROW(apply_machine_overrides(m, "cores=8,bogus=1", "S"), Error);
    EXPECT_EQ(m.cores, 32);
    EXPECT_EQ(m.find("cores")->source, "built-in");
    EXPECT_THROW(apply_machine_overrides(m, "cores=0", "S"), Error);
    EXPECT_EQ(m.cores, 32);
    EXPECT_EQ(m.find("cores")->value, 32);
}

TEST(MachineErrors, MissingParameter) {
    const std::string msg = error_of([] { parse_machine_description(builtin_without("barrier_ids"), "test.json"); });
    EXPECT_NE(msg.find("missing parameter 'barrier_ids'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test.json"), std::string::npos) << msg;
}

TEST(MachineErrors, UnknownParameterInTheFile) {
    const std::string text =
        builtin_with("\"parameters\": {", "\"parameters\": {\n \"flux_capacitors\": { \"value\": 1, \"unit\": \"x\", "
                                          "\"provenance\": \"E\", \"rationale\": \"none\" },");
    const std::string msg = error_of([&] { parse_machine_description(text, "test.json"); });
    EXPECT_NE(msg.find("unknown parameter 'flux_capacitors'"), std::string::npos) << msg;
}

TEST(MachineErrors, BadProvenance) {
    std::string msg = error_of(
        [] { parse_machine_description(builtin_with("\"provenance\": \"P\"", "\"provenance\": \"Q\""), "test.json"); });
    EXPECT_NE(msg.find("provenance P, M, E or P/E"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'cores'"), std::string::npos) << msg;
    msg = error_of(
        [] { parse_machine_description(builtin_with(", \"provenance\": \"P\"", ""), "test.json"); });
    EXPECT_NE(msg.find("provenance"), std::string::npos) << "a missing provenance is an error: " << msg;
}

TEST(MachineErrors, BadValues) {
    std::string msg = error_of(
        [] { parse_machine_description(builtin_with("\"value\": 32,", "\"value\": \"32\","), "test.json"); });
    EXPECT_NE(msg.find("'cores' needs a numeric 'value'"), std::string::npos) << msg;
    msg = error_of([] { parse_machine_description(builtin_with("\"value\": 32,", "\"value\": 32.5,"), "test.json"); });
    EXPECT_NE(msg.find("must be an integer"), std::string::npos) << msg;
    msg = error_of([] { parse_machine_description("{ \"parameters\": [1, 2] }", "test.json"); });
    EXPECT_NE(msg.find("'parameters' object"), std::string::npos) << msg;
    msg = error_of([] { parse_machine_description("{ not json", "test.json"); });
    EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
}

TEST(MachineErrors, IllTypedTextFieldsGiveASpyreError) {
    // A unit, rationale or name of the wrong JSON type is a spyre::Error like
    // every other mistake in the file, not a JSON library exception.
    std::string msg = error_of(
        [] { parse_machine_description(builtin_with("\"unit\": \"cores\"", "\"unit\": 3"), "test.json"); });
    EXPECT_NE(msg.find("cores"), std::string::npos) << msg;
    msg = error_of(
        [] { parse_machine_description(builtin_with("\"name\": \"spyre-card\"", "\"name\": 7"), "test.json"); });
    EXPECT_NE(msg.find("name"), std::string::npos) << msg;
}

// ---- allowed ranges (machine_params.def) ----

using spyre::testing::declared_ranges;
using spyre::testing::DeclaredRange;


TEST(MachineRanges, EveryBuiltInValueLiesInsideItsRange) {
    const MachineDescription m = builtin();
    for (const DeclaredRange &r : declared_ranges()) {
        SCOPED_TRACE(r.name);
        EXPECT_LT(r.min, r.max);
        const double v = m.find(r.name)->value;
        EXPECT_GE(v, r.min);
        EXPECT_LE(v, r.max);
    }
}

TEST(MachineRanges, AValueJustOutsideEitherEndOfAnyRangeIsRejectedNamingParameterValueAndRange) {
    const MachineDescription m = builtin();
    for (const DeclaredRange &r : declared_ranges()) {
        SCOPED_TRACE(r.name);
        const double below = r.integral ? r.min - 1 : (r.min > 0 ? r.min * 0.999 : -1e-9);
        const double above = r.integral ? r.max + 1 : r.max * 1.001;
        for (double v : {below, above}) {
            char text[64];
            std::snprintf(text, sizeof text, "%.17g", v);
            MachineDescription copy = m;
            const std::string msg = error_of([&] { apply_machine_overrides(copy, r.name + "=" + text, "SPYRE_MACHINE_SET"); });
            EXPECT_NE(msg.find("SPYRE_MACHINE_SET: parameter '" + r.name + "' = "), std::string::npos) << msg;
            EXPECT_NE(msg.find("is outside its allowed range ["), std::string::npos) << msg;
            EXPECT_EQ(copy.find(r.name)->value, m.find(r.name)->value) << "a rejected override changes nothing";
        }
    }
}

TEST(MachineRanges, OverridesThatOnceHungOrBrokeTheSimulatorAreRejected) {
    const MachineDescription m = builtin();
    const char *const hostile[] = {
        "clock_ghz=1e8", "clock_ghz=1e300", "clock_ghz=1e-300", "dma_latency_cycles=1e12", "dram_bandwidth_gbps=1e-300",
        "corelets_per_core=0", "dram_turnaround_ns_per_byte=-1", "dma_latency_cycles=-150", "ring_hop_latency_ns=-5",
        "sfu_instruction_overhead_cycles=-4", "kernel_launch_cycles=-1", "pt_pass_fill_cycles=-8", "host_link_gbps=0",
        "restickify_gbps=0", "pt_fp32_rate_factor=0", "sfu_bytes_per_cycle_per_corelet=0", "ring_bytes_per_cycle=-128",
    };
    for (const char *item : hostile) {
        SCOPED_TRACE(item);
        MachineDescription copy = m;
        const std::string msg = error_of([&] { apply_machine_overrides(copy, item, "SPYRE_MACHINE_SET"); });
        EXPECT_NE(msg.find("is outside its allowed range"), std::string::npos) << msg;
    }
    EXPECT_EQ(error_of([&] { MachineDescription copy = m; apply_machine_overrides(copy, "clock_ghz=1e8", "SPYRE_MACHINE_SET"); }),
              "SPYRE_MACHINE_SET: parameter 'clock_ghz' = 100000000 is outside its allowed range [0.1, 10] "
              "(runtime/machine/include/spyre/machine_params.def)");
}

TEST(MachineRanges, ADescriptionFileCannotWidenARange) {
    const std::string msg = error_of([] {
        parse_machine_description(builtin_with("\"value\": 1.5,", "\"value\": 1e8,"), "file big_clock.json");
    });
    EXPECT_NE(msg.find("machine description (file big_clock.json): parameter 'clock_ghz' = 100000000 is outside its "
                       "allowed range [0.1, 10]"),
              std::string::npos)
        << msg;
}

TEST(MachineRanges, RulesBetweenParametersNameBothValues) {
    MachineDescription m = builtin();
    std::string msg = error_of([&] { apply_machine_overrides(m, "dram_usable_bytes=137438953473", "S"); });
    EXPECT_EQ(msg, "S: dram_usable_bytes = 137438953473 must not exceed dram_bytes = 137438953472");
    msg = error_of([&] { apply_machine_overrides(m, "scratchpad_bytes=1000", "S"); });
    EXPECT_EQ(msg, "S: scratchpad_bytes = 1000 must be a positive multiple of stick_bytes = 128");
    msg = error_of([&] { apply_machine_overrides(m, "sfu_max_vector_lanes=64", "S"); });
    EXPECT_EQ(msg, "S: sfu_max_vector_lanes = 64 must be at least the lanes of one stick of 1-byte elements, stick_bytes = 128");
    apply_machine_overrides(m, "sfu_max_vector_lanes=128", "S");  // exactly one stick of int8
    EXPECT_EQ(m.sfu_max_vector_lanes, 128);
}

TEST(MachineFingerprint, ChangesWithStructureNotWithRates) {
    const MachineDescription base = builtin();
    const uint64_t fp = base.structural_fingerprint();
    EXPECT_EQ(fp, builtin().structural_fingerprint()) << "deterministic";

    MachineDescription fewer_cores = base;
    apply_machine_overrides(fewer_cores, "cores=16", "S");
    EXPECT_NE(fewer_cores.structural_fingerprint(), fp);

    MachineDescription smaller_scratchpad = base;
    apply_machine_overrides(smaller_scratchpad, "scratchpad_bytes=1048576", "S");
    EXPECT_NE(smaller_scratchpad.structural_fingerprint(), fp);

    MachineDescription faster = base;
    apply_machine_overrides(faster, "dram_bandwidth_gbps=300,clock_ghz=2,pt_sustained_macs_per_ns=1500", "S");
    EXPECT_EQ(faster.structural_fingerprint(), fp);
}

}  // namespace

// One rule for SPYRE_MACHINE_SET: blanks around keys and values are ignored, wherever they are;
// a key given twice is refused (which value was meant?), as spyre-run --param does.
TEST(MachineErrors, OverridesIgnoreBlanksAroundKeysAndValuesAndRefuseRepeats) {
    for (const char *text : {"cores=16", "cores= 16", "cores=16 ", " cores=16", "\tcores =\t16 , "}) {
        MachineDescription m = builtin();
        apply_machine_overrides(m, text, "S");
        EXPECT_EQ(m.cores, 16) << "'" << text << "'";
    }
    MachineDescription m = builtin();
    const std::string msg = error_of([&] { apply_machine_overrides(m, "cores=32,cores=16", "S"); });
    EXPECT_NE(msg.find("'cores' is given more than once"), std::string::npos) << msg;
    EXPECT_EQ(m.cores, builtin().cores);  // unchanged
    EXPECT_NE(error_of([&] { apply_machine_overrides(m, "cores=16, cores =8", "S"); }).find("more than once"),
              std::string::npos);
}

}  // namespace spyre
