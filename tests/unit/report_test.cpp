// The derived figures of a run (spyre/report.h): the roofline bound of the bytes a program
// moves, and the bound of its arguments (each input read and each output written once), which
// does not reward a schedule for moving more bytes, and the calibrated floor (the arguments and
// MACs at the calibrated rates); all appear in the summary and the JSON report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "program_builder.h"
#include "spyre/report.h"

namespace spyre::testing {
namespace {

using isa::Opcode;
using isa::Unit;

TEST(Report, TheArgumentsBoundCountsEachInputAndOutputOnce) {
    const ProgramBuilder b = add_program("add", 8);
    const HostRunResult r =
        run(b, {random_tensor("A", DType::F32, {64, 8}, 1), random_tensor("B", DType::F32, {64, 8}, 2)});
    EXPECT_EQ(r.sim.argument_input_bytes, 2u * 64 * 8 * 4);
    EXPECT_EQ(r.sim.argument_output_bytes, 64u * 8 * 4);
    const PerformanceFigures f = performance_figures(r.sim, b.m);
    // This program moves each argument exactly once: the two bounds agree.
    EXPECT_DOUBLE_EQ(f.argument_bound_us, f.roofline_bound_us);
    const std::string summary = format_summary(r.sim, b.m);
    EXPECT_NE(summary.find("arguments bound"), std::string::npos) << summary;
    const nlohmann::json j = nlohmann::json::parse(report_json(r.sim, b.m));
    EXPECT_EQ(j.at("argument_input_bytes").get<uint64_t>(), 2u * 64 * 8 * 4);
    EXPECT_DOUBLE_EQ(j.at("argument_bound_us").get<double>(), f.argument_bound_us);
}

TEST(Report, AProgramThatReadsItsInputTwiceScoresHigherAgainstItsOwnBytesThanAgainstItsArguments) {
    ProgramBuilder b("twice");
    const int A = b.arg("A", ArgKind::Input, DType::F32, {64, 64});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {64, 64});
    b.load(0, A, 0, 0, 16384);
    b.load(0, A, 0, 0, 16384);  // the same bytes again
    b.store(0, Out, 0, 0, 16384);
    const HostRunResult r = run(b, {random_tensor("A", DType::F32, {64, 64}, 3)});
    const PerformanceFigures f = performance_figures(r.sim, b.m);
    EXPECT_EQ(r.sim.dram_read_bytes, 2u * 16384);
    EXPECT_EQ(r.sim.argument_input_bytes, 16384u);
    EXPECT_LT(f.argument_bound_us, f.roofline_bound_us);
}

// The calibrated floor: the arguments once at the calibrated DRAM rate and turnaround (and the
// MACs at the sustained PT rate, none here). It is never below the arguments bound (whose
// turnaround and PT peak are the hardware's best), and no simulated run beats it.
TEST(Report, TheCalibratedFloorIsTheArgumentsAtTheCalibratedDramRateAndNoRunBeatsIt) {
    const ProgramBuilder b = add_program("add", 8);
    const HostRunResult r =
        run(b, {random_tensor("A", DType::F32, {64, 8}, 1), random_tensor("B", DType::F32, {64, 8}, 2)});
    const PerformanceFigures f = performance_figures(r.sim, b.m);
    const double read = 2.0 * 64 * 8 * 4, write = 64.0 * 8 * 4;
    EXPECT_DOUBLE_EQ(f.calibrated_floor_us, b.m.dram_cycles(read, write, (double)b.m.cores) / b.m.clock_ghz / 1000.0);
    EXPECT_GE(f.calibrated_floor_us, f.argument_bound_us);
    EXPECT_GT(f.calibrated_floor_us, 0.0);
    EXPECT_LE(f.calibrated_floor_us, r.sim.simulated_us);
    EXPECT_NE(format_summary(r.sim, b.m).find("calibrated floor"), std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(report_json(r.sim, b.m));
    EXPECT_DOUBLE_EQ(j.at("calibrated_floor_us").get<double>(), f.calibrated_floor_us);
}

}  // namespace
}  // namespace spyre::testing
