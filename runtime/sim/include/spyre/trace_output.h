// Pictures of one simulated run, drawn from its per-instruction trace (run
// with SimulationOptions::record_trace): a Chrome Trace Event Format file for
// tools (chrome://tracing, ui.perfetto.dev) and a self-contained SVG timeline
// for people. Without a recorded trace both are valid but show no intervals.
#pragma once

#include <ostream>
#include <string>

#include "spyre/machine.h"
#include "spyre/simulator.h"

namespace spyre {

// Chrome Trace Event Format, object form:
//   {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {kernel, machine, cycles, ...}}
// One process per core that has events (pid = core, named "core N", sorted by
// core), one thread per unit (tid = isa::Unit: 0 dma, 1 pt, 2 sfu), and one
// complete event ("ph": "X") per trace event: name = mnemonic, cat = unit
// name, ts/dur in microseconds (cycles / (clock_ghz * 1000)), args
// {start_cycle, end_cycle}.
// write_chrome_trace writes it to a stream one event at a time (a trace of millions of
// events never exists as one string); chrome_trace_json returns it as a string. otherData
// says how many events were recorded and how many were dropped (max_trace_events).
void write_chrome_trace(std::ostream &out, const SimulationResult &r, const MachineDescription &m);
std::string chrome_trace_json(const SimulationResult &r, const MachineDescription &m);

// Upper bound on the busy-interval rectangles timeline_svg draws; past it,
// neighbouring intervals of a lane are merged with a growing pixel tolerance.
constexpr int kTimelineMaxIntervalRects = 20000;

// A standalone SVG picture: title (kernel, simulated time, PT utilization,
// bottleneck), a time axis in microseconds, one row per active core (at most
// max_cores, lowest first) with a DMA, a PT and an SFU lane of busy intervals
// (rect class "dma", "pt", "sfu"), a legend and each core's busy % per unit.
std::string timeline_svg(const SimulationResult &r, const MachineDescription &m, int max_cores = 32);

}  // namespace spyre
