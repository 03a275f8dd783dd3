// The knob tables (schedules/schedule_knobs.h): what a family's one list
// generates, checked on the elementwise list (bool, int and string knobs) and
// on lists whose candidates come from the shape; and that the planners take
// the SFU vector limit from the machine description (tests/compiler/CMakeLists.txt
// runs that test again on a machine with sfu_max_vector_lanes=1024).
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "attention_schedule.h"
#include "elementwise_schedule.h"
#include "norm_schedule.h"
#include "reduce_schedule.h"
#include "schedule_knobs.h"

namespace spyre {
namespace {

TEST(ScheduleKnobs, MembersHaveTheListsDefaults) {
    const ElementwiseSpyreOptions o;
    EXPECT_TRUE(o.double_buffer);
    EXPECT_EQ(o.max_cores, 0);
    EXPECT_EQ(o.tile_rows, 0);
    EXPECT_EQ(o.device_order, "zyx");
    const AttentionSpyreOptions a;  // knobs from the list, the algorithm's members beside them
    EXPECT_EQ(a.tile, 0);
    EXPECT_EQ(a.kv_tile, 0);
    EXPECT_EQ(a.kv_heads, 0);
}

TEST(ScheduleKnobs, ValuesRoundTripThroughOptions) {
    ElementwiseSpyreOptions o;
    o.double_buffer = false, o.max_cores = 4, o.tile_rows = 16, o.device_order = "yzx";
    const KnobValues v = knob_values(o);
    EXPECT_EQ(v, (KnobValues{{"double_buffer", "false"}, {"max_cores", "4"}, {"tile_rows", "16"}, {"device_order", "yzx"}}));
    const ElementwiseSpyreOptions back = options_of<ElementwiseSpyreOptions>(v);
    EXPECT_FALSE(back.double_buffer);
    EXPECT_EQ(back.max_cores, 4);
    EXPECT_EQ(back.tile_rows, 16);
    EXPECT_EQ(back.device_order, "yzx");
}

TEST(ScheduleKnobs, AssignmentsAreSourceLinesInListOrder) {
    ElementwiseSpyreOptions o;
    o.tile_rows = 8;
    EXPECT_EQ(knob_assignments(o),
              "options.double_buffer = true;\noptions.max_cores = 0;\noptions.tile_rows = 8;\noptions.device_order = \"zyx\";\n");
    EXPECT_EQ(knob_assignments(o, {"device_order"}),
              "options.double_buffer = true;\noptions.max_cores = 0;\noptions.tile_rows = 8;\n");
}

TEST(ScheduleKnobs, TemplateKnobsStartAtTheCurrentValueThenTheCandidates) {
    ElementwiseSpyreOptions o;
    o.double_buffer = false, o.tile_rows = 4, o.device_order = "yzx";
    const std::vector<ScheduleKnob> k = schedule_knobs(o);
    ASSERT_EQ(k.size(), 4u);
    EXPECT_EQ(k[0].name, "double_buffer");
    EXPECT_EQ(k[0].values, (std::vector<std::string>{"false", "true"}));
    EXPECT_EQ(k[1].name, "max_cores");
    EXPECT_EQ(k[1].values.front(), std::to_string(usable_cores(0)));  // 0 offered as the machine's count
    EXPECT_EQ(k[2].values, (std::vector<std::string>{"4", "0", "1", "2", "8", "16", "32", "64"}));
    EXPECT_EQ(k[3].values, (std::vector<std::string>{"yzx", "zyx"}));
}

TEST(ScheduleKnobs, CandidatesFromTheShapeAreGivenByName) {
    const ReduceSpyreOptions o;
    const std::vector<ScheduleKnob> k = schedule_knobs(o, {{"tile", {64, 128}}, {"chunk", {0, 8}}});
    ASSERT_EQ(k.size(), 5u);
    EXPECT_EQ(k[2].values, (std::vector<std::string>{"0", "64", "128"}));
    EXPECT_EQ(k[3].values, (std::vector<std::string>{"0", "8"}));
    EXPECT_EQ(k[4].values, (std::vector<std::string>{"0", "1"}));
    EXPECT_THROW(schedule_knobs(o, {{"tile", {64}}}), std::logic_error);  // chunk's are missing
}

// A bool knob that does nothing for the shape (given no candidates) keeps its value: the search
// never measures the same plan twice (conv2d's share_* with pad > 0, bmm's resident_b as a matmul).
TEST(ScheduleKnobs, ABoolKnobWithNoCandidatesIsNotSearched) {
    ElementwiseSpyreOptions o;
    o.double_buffer = true;
    const std::vector<ScheduleKnob> k = schedule_knobs(o, {{"double_buffer", {}}});
    ASSERT_EQ(k.size(), 4u);
    EXPECT_EQ(k[0].name, "double_buffer");
    EXPECT_EQ(k[0].values, (std::vector<std::string>{"true"}));
    EXPECT_EQ(schedule_knobs(o)[0].values, (std::vector<std::string>{"true", "false"}));  // searched otherwise
}

TEST(ScheduleKnobs, BadValuesAreRefusedNamingTheKnob) {
    KnobValues v = knob_values(ElementwiseSpyreOptions{});
    v["device_order"] = "xyz";
    try {
        (void)options_of<ElementwiseSpyreOptions>(v);
        FAIL() << "accepted device_order=xyz";
    } catch (const std::invalid_argument &e) {
        EXPECT_STREQ(e.what(), "schedule template: knob 'device_order' must be zyx or yzx");
    }
    v = knob_values(ElementwiseSpyreOptions{});
    v.erase("tile_rows");
    EXPECT_THROW((void)options_of<ElementwiseSpyreOptions>(v), std::invalid_argument);
}

// A row of 8192 fp16 lanes is cut into SFU vectors of the machine's
// sfu_max_vector_lanes (4096 built in; 1024 under
// SPYRE_MACHINE_SET=sfu_max_vector_lanes=1024), by every planner that cuts rows.
TEST(ScheduleKnobs, PlannersCutRowsAtTheMachinesSfuVectorLimit) {
    const int limit = (int)default_machine().sfu_max_vector_lanes;
    const int expected = std::min(limit, 8192) / 64 * 64;  // whole fp16 sticks that divide 8192 (limits are powers of 2 here)
    EXPECT_EQ(sfu_max_vector_lanes(), limit);
    ElementwiseShape e;  // rows enough for every core: each core's tile holds whole rows
    e.d0 = 8192, e.d1 = 4096, e.dtype = Halide::Float(16), e.op = "add";
    const ElementwiseSpyrePlan ep = plan_elementwise_spyre(e);
    EXPECT_EQ(ep.cores_d0, 1);
    EXPECT_EQ(ep.row_vector, expected);
    EXPECT_EQ(plan_norm_spyre(8192, 64, Halide::Float(16), /*centered=*/false).row_vector, expected);
    ReduceShape r;
    r.d0 = 8192, r.d1 = 64, r.dtype = Halide::Float(16), r.op = "sum", r.axis = 1;
    EXPECT_LE(plan_reduce_spyre(r).tile, limit);  // a tile of the output's dim 0 is at most one SFU vector
}

}  // namespace
}  // namespace spyre
