// The Spyre machine description: the only source of sizes and rates for the
// compiler and the simulator.
//
// The values come from runtime/machine/spyre_machine.json (compiled into the
// library, so binaries work from any directory), optionally replaced by the
// file named in SPYRE_MACHINE and then by SPYRE_MACHINE_SET=key=value,...
// Every parameter remembers its provenance (P/M/E), rationale and where its
// effective value came from, so tools can print them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spyre/dtype.h"

namespace spyre {

struct MachineParameterInfo {
    std::string name;
    double value = 0;
    std::string unit;
    std::string provenance;  // "P", "M" or "E"
    std::string rationale;
    std::string source;      // "built-in", "file <path>", "SPYRE_MACHINE_SET"
};

struct MachineDescription {
#define SPYRE_MACHINE_PARAM(name, type, min, max) type name = 0;
#include "spyre/machine_params.def"
#undef SPYRE_MACHINE_PARAM

    std::string name;
    std::vector<MachineParameterInfo> parameters;  // in file order

    // Lanes of a stick for an element size in bytes.
    int64_t stick_lanes(int64_t element_bytes) const { return stick_bytes / element_bytes; }
    double cycles_per_ns() const { return clock_ghz; }
    // The card's peak DRAM bytes per cycle (read-only or write-only traffic, many cores).
    double dram_bytes_per_cycle() const { return dram_bandwidth_gbps / clock_ghz; }
    // The fraction of that peak the card serves while `cores` cores move data at
    // once: dram_one_core_fraction for one core, rising linearly to 1 when every
    // core does (DRAM throughput grows with the number of concurrent streams).
    double dram_concurrency_efficiency(double cores) const {
        if (cores <= 0) return 0.0;
        if (cores >= (double)this->cores || this->cores <= 1) return 1.0;
        return dram_one_core_fraction + (1.0 - dram_one_core_fraction) * (cores - 1.0) / ((double)this->cores - 1.0);
    }
    double dram_bytes_per_cycle(double cores) const { return dram_bytes_per_cycle() * dram_concurrency_efficiency(cores); }
    // DRAM time in cycles for R bytes read and W written by `cores` cores at once,
    // with the read/write turnaround (MACHINE.md's formula at that concurrency).
    double dram_cycles(double read, double write, double cores) const;
    // A device-to-device copy done by DMA (spyre_device_copy), in cycles: its
    // `transfers` descriptors (contiguous runs, cut at stick boundaries when
    // there are fewer runs than engines) are spread over the cores' DMA
    // engines, which issue one descriptor per dma_latency_cycles each while the
    // data streams at the DRAM rate of that many concurrent engines; the first
    // descriptor's latency is not hidden. So a copy of few long runs costs its
    // bytes, and one of many single-element runs the issue rate of all engines.
    double copy_dma_cycles(double read, double write, double transfers) const;
    // The DRAM roofline bound in ns: bytes at the peak rate plus the smallest
    // turnaround the hardware measurements allow (dram_bound_turnaround_ns_per_byte),
    // so no run, simulated or measured, is faster.
    double dram_bound_ns(double read, double write) const;
    // PT MACs per cycle per core that a full pass sustains, for an input type
    // factor (1 fp16, pt_fp32_rate_factor, pt_int8_rate_factor).
    double pt_macs_per_cycle(double type_factor) const { return pt_sustained_macs_per_ns / clock_ghz * type_factor; }
    // The PT's rate for matmul inputs of `t` relative to fp16: pt_fp32_rate_factor for
    // fp32, pt_int8_rate_factor for int8, 1 otherwise. The one place the type picks
    // the rate (the timing model and every planner ask here).
    double pt_rate_factor(DType t) const {
        return t == DType::F32 ? pt_fp32_rate_factor : t == DType::I8 ? pt_int8_rate_factor : 1.0;
    }

    // The timing model's compute terms (runtime/sim/src/timing_model.cpp calls
    // these, and so do the compiler's planners, schedules/planner.h: one formula).
    // A pt.matmul of an m x k tile by a k x n tile at an input type factor: passes
    // of pt_pass_rows rows of A at the sustained rate, each with its fill cost.
    double pt_matmul_cycles(double m, double n, double k, double type_factor) const;
    // One SFU instruction over `rows` rows of `n` elements of `element_bytes`
    // bytes: the bytes through both corelets' vector units, transcendentals
    // sfu_transcendental_cost times dearer, reductions across a row's lanes
    // sfu_row_reduce_cost times dearer plus sfu_row_reduce_row_cycles per row,
    // plus the issue overhead.
    enum class SfuCost { Simple, Transcendental, RowReduce };
    double sfu_instruction_cycles(double n, double rows, double element_bytes, SfuCost cost) const;

    // Fingerprint of the parameters a program's legality depends on (structure,
    // not rates): a program is valid on any machine with the same fingerprint,
    // so timing experiments with other rates do not need a recompile.
    uint64_t structural_fingerprint() const;

    const MachineParameterInfo *find(const std::string &name) const;
};

// Parses a machine description from JSON text. Throws spyre::Error naming the
// parameter on a missing, unknown or ill-typed entry.
MachineDescription parse_machine_description(const std::string &json_text, const std::string &source);

// Applies "key=value,key=value" overrides. Throws spyre::Error on unknown keys or bad numbers.
void apply_machine_overrides(MachineDescription &m, const std::string &overrides, const std::string &source);

// The JSON text compiled into the library.
const std::string &builtin_machine_json();

// The effective machine: built-in JSON, or $SPYRE_MACHINE, then $SPYRE_MACHINE_SET.
// Loaded once per process; later calls return the same object.
const MachineDescription &default_machine();

// A machine description file is a regular file of at most this many bytes (the built-in one is a
// few KB); anything else named by SPYRE_MACHINE is refused before it is read.
constexpr uint64_t kMaxMachineFileBytes = uint64_t{1} << 20;

// Same as default_machine() but re-reads the environment (for tests and tools).
MachineDescription load_machine_from_environment();

}  // namespace spyre
