// What a simulation tells people: derived figures (roofline bound, PT
// utilization, bottleneck class), a one-screen text summary and the JSON
// report whose schema is documented in docs/timing-model.md.
#pragma once

#include <string>

#include "spyre/machine.h"
#include "spyre/simulator.h"

namespace spyre {

struct PerformanceFigures {
    double roofline_bound_us = 0;   // max(compute_bound_us, dram_bound_us)
    double compute_bound_us = 0;    // MACs at the datasheet PT peak of their type on every core
    double dram_bound_us = 0;       // MachineDescription::dram_bound_ns of the bytes moved
    // The roofline bound had the program moved each argument once (argument_input_bytes read,
    // argument_output_bytes written; the same compute bound). Unlike roofline_bound_us it does not
    // reward a schedule for moving more bytes: the bound of the algorithm rather than of the program.
    double argument_bound_us = 0;
    // The calibrated floor: the least time the calibrated model allows the kernel's work, its MACs
    // at the sustained PT rate (pt_sustained_macs_per_ns) on every core and each argument read and
    // written once at the calibrated DRAM rate and turnaround (MachineDescription::dram_cycles, every
    // core). The bounds above use the datasheet PT peak and the smallest turnaround any hardware
    // row shows, which the calibrated model (like the card on its best kernels) does not reach; the
    // gap to this floor is the schedule's (and the PT passes' fill, which the floor leaves out).
    double calibrated_floor_us = 0;
    double pt_utilization = 0;      // MACs / (cycles x datasheet peak MAC per cycle x cores)
    double pt_sustained_utilization = 0;  // MACs / (cycles x calibrated sustained MAC per cycle x cores)
    double achieved_dram_gbps = 0;
    double unit_utilization[isa::kNumUnits] = {0, 0, 0};  // mean over cores of busy / cycles
    int active_cores = 0;           // cores that executed at least one timed instruction
    std::string bottleneck;         // compute, dram, scratchpad, sync, imbalance
};

PerformanceFigures performance_figures(const SimulationResult &r, const MachineDescription &m);

// The DRAM roofline bound in ns for R bytes read and W written (MachineDescription::dram_bound_ns).
double dram_time_ns(double read_bytes, double write_bytes, const MachineDescription &m);

std::string format_summary(const SimulationResult &r, const MachineDescription &m);
std::string report_json(const SimulationResult &r, const MachineDescription &m);

}  // namespace spyre
