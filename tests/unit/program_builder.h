// Test helper: builds Spyre programs in memory, instruction by instruction,
// and runs them on dense host tensors. Keeps simulator tests short enough to
// read as specifications.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "spyre/host_run.h"
#include "spyre/machine.h"
#include "spyre/program.h"
#include "spyre/report.h"
#include "spyre/validator.h"

namespace spyre::testing {

inline MachineDescription builtin_machine() { return parse_machine_description(builtin_machine_json(), "built-in"); }

using isa::Opcode;
using isa::Unit;

struct ProgramBuilder {
    MachineDescription m = builtin_machine();
    Program p;

    explicit ProgramBuilder(const std::string &name) {
        p.kernel_name = name;
        p.machine_fingerprint = m.structural_fingerprint();
        p.cores.resize(m.cores);
    }
    // On a machine whose cores address `core_span_bytes` of a tensor at a time.
    ProgramBuilder(const std::string &name, int64_t core_span_bytes) : ProgramBuilder(name) {
        set_core_span(core_span_bytes);
    }

    int arg(const std::string &name, ArgKind kind, DType t, std::vector<int64_t> extent) {
        ProgramArgument a;
        a.name = name;
        a.kind = kind;
        a.shape.dtype = t;
        a.shape.extent = std::move(extent);
        a.layout = default_layout(a.shape, m.stick_bytes);
        p.args.push_back(a);
        return (int)p.args.size() - 1;
    }

    isa::Instruction &emit(int core, Unit u, Opcode op, std::initializer_list<int64_t> fields) {
        auto &s = p.cores[core].unit[(int)u];
        s.push_back(isa::make_instruction(op, fields));
        return s.back();
    }

    // dma.load of rows x row_bytes, all valid, contiguous rows in both memories.
    isa::Instruction &load(int core, int arg, int64_t dram, int64_t sp, int64_t row_bytes, int64_t rows = 1,
                           int64_t dram_row_stride = -1) {
        if (dram_row_stride < 0) dram_row_stride = row_bytes;
        return emit(core, Unit::Dma, Opcode::DmaLoad,
                    {arg, dram, sp, row_bytes, row_bytes, rows, dram_row_stride, row_bytes, rows, 1, 0, 0, 1});
    }
    isa::Instruction &store(int core, int arg, int64_t dram, int64_t sp, int64_t row_bytes, int64_t rows = 1,
                            int64_t dram_row_stride = -1) {
        if (dram_row_stride < 0) dram_row_stride = row_bytes;
        return emit(core, Unit::Dma, Opcode::DmaStore, {arg, dram, sp, row_bytes, rows, dram_row_stride, row_bytes, 1, 0, 0});
    }
    // dma.window of `arg` at base + stride_l0 * L0.
    void window(int core, int arg, int64_t base, int32_t stride_l0 = 0) {
        emit(core, Unit::Dma, Opcode::DmaWindow, {arg, base}).f[isa::field::DmaWindow::base].stride[0] = stride_l0;
    }
    // A machine whose cores address `bytes` of a tensor at a time (a structural parameter).
    void set_core_span(int64_t bytes) {
        m.max_core_span_bytes = bytes;
        p.machine_fingerprint = m.structural_fingerprint();
    }
    void signal(int core, Unit u, int ch) { emit(core, u, Opcode::Signal, {ch}); }
    void wait(int core, Unit u, int ch) { emit(core, u, Opcode::Wait, {ch}); }

    void validate() const { validate_program(p, m); }
};

inline uint32_t f32_bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

template <typename T>
T element(const HostTensor &t, int64_t i) {
    T v;
    std::memcpy(&v, &t.data[i * sizeof(T)], sizeof(T));
    return v;
}

inline float as_float(const HostTensor &t, int64_t i) {
    switch (t.shape.dtype) {
    case DType::F32: return element<float>(t, i);
    case DType::F16: return half_to_float(element<uint16_t>(t, i));
    case DType::I32: return (float)element<int32_t>(t, i);
    case DType::I8: return (float)(int8_t)t.data[i];
    }
    return 0;
}

inline HostTensor random_tensor(const std::string &name, DType t, std::vector<int64_t> extent, uint64_t seed) {
    TensorShape s;
    s.dtype = t;
    s.extent = std::move(extent);
    HostTensor h = HostTensor::zeros(name, s);
    fill_random(h, seed);
    return h;
}

// Runs the program; for every functional run also checks two properties of
// the timing model that must hold for every program: a timing-only run reports
// exactly the same cycles, and no run beats the roofline bound.
inline HostRunResult run(const ProgramBuilder &b, const std::vector<HostTensor> &inputs,
                         const std::vector<double> &params = {}, const SimulationOptions &opt = {}) {
    b.validate();
    DeviceMemory mem(b.m.dram_usable_bytes);
    HostRunResult r = run_on_host_tensors(b.p, b.m, mem, inputs, params, opt);
    if (opt.functional) {
        SimulationOptions timing_only = opt;
        timing_only.functional = false;
        HostRunResult t = run_on_host_tensors(b.p, b.m, mem, inputs, params, timing_only);
        EXPECT_EQ(t.sim.cycles, r.sim.cycles) << "timing-only and functional runs of '" << b.p.kernel_name
                                              << "' disagree";
    }
    const PerformanceFigures f = performance_figures(r.sim, b.m);
    EXPECT_GE(r.sim.simulated_us * (1 + 1e-9), f.roofline_bound_us) << "'" << b.p.kernel_name << "' beats the roofline bound";
    return r;
}

// The simulator's error for the program, or "" if it runs (functional or timing-only).
inline std::string simulation_failure(const ProgramBuilder &b, const std::vector<HostTensor> &inputs, bool functional) {
    SimulationOptions o;
    o.functional = functional;
    try {
        run(b, inputs, {}, o);
    } catch (const SimulationError &e) {
        return e.what();
    }
    return "";
}

// Out(x, y) = A(x, y) + B(x, y), f32 [64, rows] on core 0 (no padding): DMA in, one SFU add, DMA out.
inline ProgramBuilder add_program(const std::string &name, int64_t rows) {
    ProgramBuilder b(name);
    const int A = b.arg("A", ArgKind::Input, DType::F32, {64, rows});
    const int B = b.arg("B", ArgKind::Input, DType::F32, {64, rows});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {64, rows});
    const int64_t row = 256, block = row * rows;
    b.load(0, A, 0, 0, row, rows);
    b.load(0, B, 0, block, row, rows);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Add, {2 * block, row, 0, row, 0, block, row, 0, 64, rows, (int)DType::F32, 0});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 2 * block, row, rows);
    return b;
}

}  // namespace spyre::testing
