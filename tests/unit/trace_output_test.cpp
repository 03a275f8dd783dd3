// The Chrome trace and the SVG timeline drawn from a recorded simulation:
// the trace is valid JSON with one complete event per executed timed
// instruction, times consistent with the cycles, and metadata naming each
// active core and unit; the timeline is a standalone SVG that stays small
// however many instructions ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "program_builder.h"
#include "spyre/trace_output.h"

namespace spyre::testing {
namespace {

using Json = nlohmann::json;

// Core 0: load A and B, PT matmul, SFU exp of the product, store C.
// Core 1: load X, SFU copy, store Y. Every unit waits for its producer by token.
HostRunResult run_two_core_pipeline() {
    const int M = 8, N = 48, K = 40;
    ProgramBuilder b("trace_pipeline");
    int A = b.arg("A", ArgKind::Input, DType::F32, {K, M});
    int B = b.arg("B", ArgKind::Input, DType::F32, {N, K});
    int C = b.arg("C", ArgKind::Output, DType::F32, {N, M});
    int X = b.arg("X", ArgKind::Input, DType::F32, {64, 4});
    int Y = b.arg("Y", ArgKind::Output, DType::F32, {64, 4});
    const int f32 = (int)DType::F32;

    b.load(0, A, 0, 0, 256, M);
    b.load(0, B, 0, 4096, 256, K);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Pt, 0);
    b.emit(0, Unit::Pt, Opcode::Matmul, {32768, 256, 0, 256, 4096, 256, M, 64, K, f32, 0});
    b.signal(0, Unit::Pt, 1);
    b.wait(0, Unit::Sfu, 1);
    b.emit(0, Unit::Sfu, Opcode::Exp, {49152, 256, 32768, 256, 0, 64, M, f32, 0});
    b.signal(0, Unit::Sfu, 2);
    b.wait(0, Unit::Dma, 2);
    b.store(0, C, 0, 49152, 256, M);

    b.load(1, X, 0, 0, 256, 4);
    b.signal(1, Unit::Dma, 0);
    b.wait(1, Unit::Sfu, 0);
    b.emit(1, Unit::Sfu, Opcode::Copy, {1024, 256, 0, 256, 0, 64, 4, f32, 0});
    b.signal(1, Unit::Sfu, 1);
    b.wait(1, Unit::Dma, 1);
    b.store(1, Y, 0, 1024, 256, 4);

    SimulationOptions opt;
    opt.record_trace = true;
    return run(b,
               {random_tensor("A", DType::F32, {K, M}, 1), random_tensor("B", DType::F32, {N, K}, 2),
                random_tensor("X", DType::F32, {64, 4}, 3)},
               {}, opt);
}

std::vector<Json> events_with_phase(const Json &trace, const std::string &ph) {
    std::vector<Json> out;
    for (const Json &e : trace.at("traceEvents")) {
        if (e.at("ph") == ph) out.push_back(e);
    }
    return out;
}

size_t occurrences(const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) n++;
    return n;
}

TEST(ChromeTrace, HasOneCompleteEventPerExecutedTimedInstruction) {
    const HostRunResult r = run_two_core_pipeline();
    const MachineDescription m = builtin_machine();
    const Json trace = Json::parse(chrome_trace_json(r.sim, m));

    // (core, unit, mnemonic) -> count; signals and waits are not timed.
    std::map<std::tuple<int, int, std::string>, int> got;
    for (const Json &e : events_with_phase(trace, "X")) {
        EXPECT_EQ(e.at("cat"), isa::unit_name((isa::Unit)e.at("tid").get<int>()));
        got[{e.at("pid").get<int>(), e.at("tid").get<int>(), e.at("name").get<std::string>()}]++;
    }
    const std::map<std::tuple<int, int, std::string>, int> expect = {
        {{0, 0, "dma.load"}, 2}, {{0, 1, "pt.matmul"}, 1}, {{0, 2, "sfu.exp"}, 1}, {{0, 0, "dma.store"}, 1},
        {{1, 0, "dma.load"}, 1}, {{1, 2, "sfu.copy"}, 1}, {{1, 0, "dma.store"}, 1},
    };
    EXPECT_EQ(got, expect);
    EXPECT_EQ(r.sim.trace.size(), 8u);
}

TEST(ChromeTrace, TimesAreCyclesInMicrosecondsAndEndWithinTheRun) {
    const HostRunResult r = run_two_core_pipeline();
    const MachineDescription m = builtin_machine();
    const Json trace = Json::parse(chrome_trace_json(r.sim, m));
    const double cycles_per_us = m.clock_ghz * 1000.0;
    const auto complete = events_with_phase(trace, "X");
    ASSERT_EQ(complete.size(), r.sim.trace.size());
    double latest_end = 0;
    for (size_t i = 0; i < complete.size(); i++) {
        const Json &e = complete[i];
        const TraceEvent &t = r.sim.trace[i];
        const double start = e.at("args").at("start_cycle").get<double>();
        const double end = e.at("args").at("end_cycle").get<double>();
        EXPECT_EQ(start, t.start_cycle);
        EXPECT_EQ(end, t.end_cycle);
        EXPECT_NEAR(e.at("ts").get<double>() * cycles_per_us, start, 1e-6 * (1 + start));
        EXPECT_NEAR(e.at("dur").get<double>() * cycles_per_us, end - start, 1e-6 * (1 + end));
        EXPECT_GT(end, start) << e.dump();
        EXPECT_LE(end, r.sim.cycles) << e.dump();
        latest_end = std::max(latest_end, end);
    }
    EXPECT_GT(latest_end, 0.5 * r.sim.cycles);  // the events span the run, not a sliver of it
    // The load of core 0 precedes its matmul, which precedes its exp.
    std::map<std::string, double> start_on_core0;
    for (const Json &e : complete) {
        if (e.at("pid") == 0) start_on_core0.emplace(e.at("name").get<std::string>(), e.at("ts").get<double>());
    }
    EXPECT_LT(start_on_core0.at("dma.load"), start_on_core0.at("pt.matmul"));
    EXPECT_LT(start_on_core0.at("pt.matmul"), start_on_core0.at("sfu.exp"));
}

TEST(ChromeTrace, NamesOnlyActiveCoresAndEachOfTheirUnits) {
    const HostRunResult r = run_two_core_pipeline();
    const MachineDescription m = builtin_machine();
    const Json trace = Json::parse(chrome_trace_json(r.sim, m));
    std::map<int, std::string> process_names;
    std::map<int, int> process_order;
    std::set<std::tuple<int, int, std::string>> thread_names;
    for (const Json &e : events_with_phase(trace, "M")) {
        const int pid = e.at("pid");
        if (e.at("name") == "process_name") process_names[pid] = e.at("args").at("name").get<std::string>();
        if (e.at("name") == "process_sort_index") process_order[pid] = e.at("args").at("sort_index").get<int>();
        if (e.at("name") == "thread_name") thread_names.insert({pid, e.at("tid").get<int>(), e.at("args").at("name").get<std::string>()});
    }
    EXPECT_EQ(process_names, (std::map<int, std::string>{{0, "core 0"}, {1, "core 1"}}));
    EXPECT_EQ(process_order, (std::map<int, int>{{0, 0}, {1, 1}}));
    const std::set<std::tuple<int, int, std::string>> expect_threads = {
        {0, 0, "dma"}, {0, 1, "pt"}, {0, 2, "sfu"}, {1, 0, "dma"}, {1, 1, "pt"}, {1, 2, "sfu"}};
    EXPECT_EQ(thread_names, expect_threads);
    EXPECT_EQ(trace.at("displayTimeUnit"), "ns");
    EXPECT_EQ(trace.at("otherData").at("kernel"), "trace_pipeline");
    EXPECT_EQ(trace.at("otherData").at("machine"), m.name);
    EXPECT_EQ(trace.at("otherData").at("cycles").get<double>(), r.sim.cycles);
}

TEST(ChromeTrace, WithoutARecordedTraceIsValidAndEmpty) {
    SimulationResult r;
    r.kernel = "nothing";
    const Json trace = Json::parse(chrome_trace_json(r, builtin_machine()));
    EXPECT_TRUE(trace.at("traceEvents").empty());
    EXPECT_EQ(trace.at("otherData").at("kernel"), "nothing");
}

TEST(TimelineSvg, IsAStandaloneSvgWithTitleAndALaneOfEachUnit) {
    const HostRunResult r = run_two_core_pipeline();
    const std::string svg = timeline_svg(r.sim, builtin_machine());
    EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg.substr(0, 80);
    EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
    EXPECT_NE(svg.find("trace_pipeline"), std::string::npos);
    EXPECT_NE(svg.find("bottleneck"), std::string::npos);
    EXPECT_NE(svg.find("time (us)"), std::string::npos);
    for (const char *unit : {"dma", "pt", "sfu"}) {
        EXPECT_NE(svg.find("." + std::string(unit) + "{fill:#"), std::string::npos) << unit;
        EXPECT_GE(occurrences(svg, "<rect class=\"" + std::string(unit) + "\""), 1u) << unit;
    }
    EXPECT_NE(svg.find(">core 0<"), std::string::npos);
    EXPECT_NE(svg.find(">core 1<"), std::string::npos);
    EXPECT_EQ(svg.find(">core 2<"), std::string::npos);  // idle cores get no row
    EXPECT_EQ(occurrences(svg, "<svg"), 1u);
    EXPECT_EQ(occurrences(svg, "<text"), occurrences(svg, "</text>"));
}

TEST(TimelineSvg, EscapesTheKernelName) {
    SimulationResult r;
    r.kernel = "a<b&c";
    r.cycles = 10;
    r.trace.push_back({0, 0, isa::Opcode::DmaLoad, 0, 10});
    const std::string svg = timeline_svg(r, builtin_machine());
    EXPECT_NE(svg.find("a&lt;b&amp;c"), std::string::npos);
    EXPECT_EQ(svg.find("a<b"), std::string::npos);
}

// 32 cores x 3 units x 600 one-cycle instructions two cycles apart: far more
// separated intervals than the picture may hold.
SimulationResult many_separated_instructions() {
    SimulationResult r;
    r.kernel = "many";
    const int per_lane = 600;
    r.cycles = 3.0 * per_lane;
    r.cores.resize(32);
    const isa::Opcode ops[isa::kNumUnits] = {isa::Opcode::DmaLoad, isa::Opcode::Matmul, isa::Opcode::Add};
    for (int c = 0; c < 32; c++) {
        for (int u = 0; u < isa::kNumUnits; u++) {
            for (int i = 0; i < per_lane; i++) r.trace.push_back({c, u, ops[u], 3.0 * i + u * 0.5, 3.0 * i + u * 0.5 + 1});
            r.cores[c].unit[u] = {(double)per_lane, (uint64_t)per_lane};
        }
    }
    return r;
}

TEST(TimelineSvg, CoarsensManyInstructionsToTheRectangleLimit) {
    const SimulationResult r = many_separated_instructions();
    ASSERT_GT(r.trace.size(), 2u * kTimelineMaxIntervalRects);
    const std::string svg = timeline_svg(r, builtin_machine());
    size_t intervals = 0;
    for (const char *unit : {"dma", "pt", "sfu"}) {
        const size_t n = occurrences(svg, "<rect class=\"" + std::string(unit) + "\"");
        EXPECT_GE(n, 32u) << unit;  // every lane of every core still drawn
        intervals += n;
    }
    EXPECT_LE(intervals, (size_t)kTimelineMaxIntervalRects);
    EXPECT_LT(svg.size(), 2u << 20);
    EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(TimelineSvg, DrawsAtMostMaxCoresRowsAndSaysSo) {
    const SimulationResult r = many_separated_instructions();
    const std::string svg = timeline_svg(r, builtin_machine(), 4);
    EXPECT_NE(svg.find(">core 3<"), std::string::npos);
    EXPECT_EQ(svg.find(">core 4<"), std::string::npos);
    EXPECT_NE(svg.find("28 more active cores not shown"), std::string::npos);
}

}  // namespace
}  // namespace spyre::testing
