// The ring: ring.put moves scratchpad bytes to another core exactly and
// signals the receiver; its timing follows sim/ring_model.h: a put starts only
// after the bytes an earlier transfer of the same unit is landing have
// landed, puts that share a link in the same direction serialize, puts on
// disjoint links or in opposite directions overlap, and a zero-byte put (a
// credit) pays only the hop latency.
#include <gtest/gtest.h>

#include <algorithm>

#include "program_builder.h"

namespace spyre::testing {
namespace {

constexpr int kRingChannel = 9;

// ring.put dst_core src dst bytes dst_channel
isa::Instruction &put(ProgramBuilder &b, int from, int to, int64_t src, int64_t dst, int64_t bytes) {
    return b.emit(from, Unit::Dma, Opcode::RingPut, {to, src, dst, bytes, kRingChannel});
}

std::vector<TraceEvent> ring_events(const HostRunResult &r) {
    std::vector<TraceEvent> out;
    for (const auto &e : r.sim.trace) {
        if (e.op == Opcode::RingPut) out.push_back(e);
    }
    return out;
}

TraceEvent event_of_core(const std::vector<TraceEvent> &events, int core) {
    auto it = std::find_if(events.begin(), events.end(), [&](const TraceEvent &e) { return e.core == core; });
    if (it == events.end()) throw std::runtime_error("no ring event on core " + std::to_string(core));
    return *it;
}

TEST(Ring, PutMovesBytesToAnotherCoreExactly) {
    ProgramBuilder b("ring_copy");
    const int X = b.arg("X", ArgKind::Input, DType::F16, {256});
    const int Y = b.arg("Y", ArgKind::Output, DType::F16, {256});
    b.load(0, X, 0, 0, 512);
    put(b, 0, 9, 0, 1024, 512);
    b.wait(9, Unit::Dma, kRingChannel);
    b.store(9, Y, 0, 1024, 512);
    const HostTensor x = random_tensor("X", DType::F16, {256}, 11);
    const HostRunResult r = run(b, {x});
    EXPECT_EQ(r.outputs.at(0).data, x.data);
    EXPECT_EQ(r.sim.ring_bytes, 512u);
}

// Timing-only run with a trace. These programs time ring transfers and most do not load what
// their puts send, so reads of never-written bytes are not checked here.
HostRunResult traced(const ProgramBuilder &b) {
    SimulationOptions o;
    o.functional = false;
    o.check_uninitialized = false;
    o.record_trace = true;
    std::vector<HostTensor> inputs;
    for (const auto &a : b.p.args) {
        if (a.kind == ArgKind::Input) inputs.push_back(HostTensor::zeros(a.name, a.shape));
    }
    return run(b, inputs, {}, o);
}

TEST(Ring, PutWaitsForTheBytesItsUnitIsStillLanding) {
    ProgramBuilder b("ring_after_load");
    const int X = b.arg("X", ArgKind::Input, DType::F16, {32768});
    b.load(0, X, 0, 0, 65536);
    put(b, 0, 1, 0, 0, 65536);
    b.wait(1, Unit::Dma, kRingChannel);
    const HostRunResult r = traced(b);
    const TraceEvent *load = nullptr;
    for (const auto &e : r.sim.trace) {
        if (e.op == Opcode::DmaLoad) load = &e;
    }
    ASSERT_NE(load, nullptr);
    const TraceEvent ring = event_of_core(ring_events(r), 0);
    EXPECT_GE(ring.start_cycle, load->end_cycle + b.m.dma_latency_cycles - 1e-9)
        << "the put read scratchpad bytes before the load had landed them";
    EXPECT_NEAR(ring.end_cycle - ring.start_cycle, 65536.0 / b.m.ring_bytes_per_cycle, 1e-6);
}

// Cores 0 and 1 put 64 KiB each at the same time; returns the later start minus the earlier.
double start_skew(int to0, int to1) {
    ProgramBuilder b("ring_pair");
    // Each put lands above the bytes it sends: core 0 and core 1 may send to each other, and a put
    // into bytes its receiver is sending at the same time is a hazard the simulator refuses.
    put(b, 0, to0, 0, 65536, 65536);
    put(b, 1, to1, 0, 65536, 65536);
    b.wait(to0, Unit::Dma, kRingChannel);
    b.wait(to1, Unit::Dma, kRingChannel);
    // The puts read scratchpad never written: legal in timing, and the test needs no data.
    const HostRunResult r = traced(b);
    const auto events = ring_events(r);
    return std::abs(event_of_core(events, 0).start_cycle - event_of_core(events, 1).start_cycle);
}

TEST(Ring, PutsSharingALinkInOneDirectionSerialize) {
    // 0 -> 2 and 1 -> 3 both use the link 1 -> 2 clockwise.
    EXPECT_NEAR(start_skew(2, 3), 65536.0 / builtin_machine().ring_bytes_per_cycle, 1e-6);
}

TEST(Ring, PutsOnDisjointLinksOrOppositeDirectionsOverlap) {
    EXPECT_EQ(start_skew(31, 2), 0.0);  // 0 -> 31 counter-clockwise, 1 -> 2 clockwise
    EXPECT_EQ(start_skew(1, 0), 0.0);   // the two directions of the link between 0 and 1
}

TEST(Ring, LatencyGrowsWithHopsAndACreditPaysOnlyLatency) {
    auto arrival = [](int to, int64_t bytes) {
        ProgramBuilder b("ring_hops");
        put(b, 0, to, 0, 0, bytes);
        b.wait(to, Unit::Dma, kRingChannel);
        const HostRunResult r = traced(b);
        return r.sim.cycles;
    };
    const MachineDescription &m = builtin_machine();
    const double hop = m.ring_hop_latency_ns * m.clock_ghz;
    EXPECT_NEAR(arrival(1, 0), hop, 1e-6);
    EXPECT_NEAR(arrival(16, 0), 16 * hop, 1e-6);
    EXPECT_NEAR(arrival(31, 0), hop, 1e-6);  // one hop the other way round
    EXPECT_NEAR(arrival(4, 1280), 1280.0 / m.ring_bytes_per_cycle + 4 * hop, 1e-6);
}

TEST(Ring, TwoCoresPuttingIntoTheSameBytesAtOnceIsAHazard) {
    ProgramBuilder b("ring_collide");
    put(b, 0, 2, 0, 0, 65536);
    put(b, 1, 2, 0, 0, 65536);
    b.wait(2, Unit::Dma, kRingChannel);
    b.wait(2, Unit::Dma, kRingChannel);
    try {
        traced(b);
        ADD_FAILURE() << "expected a SimulationError";
    } catch (const SimulationError &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("ring.put destination (in the receiving core) [0, 65536) writes"), std::string::npos) << msg;
        EXPECT_NE(msg.find("a ring.put into this core [0, 65536) (a ring transfer) is still writing"), std::string::npos)
            << msg;
    }
}

}  // namespace
}  // namespace spyre::testing
