// spyre_simulator_bench: how fast the simulated Spyre device runs gen_bmm,
// measured against the host build of the same generator, and the three
// targets of the simulator-speed issue, computed from THIS run's results:
//  (a) functional simulation reaches >= 25% of the host build's GFLOP/s,
//      for float32 and for float16 (BM_SpyreFunctionalBmm vs BM_HostBmm);
//  (b) timing-only mode is >= 50x faster than functional simulation of the
//      same program (BM_TimingOnly/default_f16 vs BM_FunctionalSimOnly/default_f16,
//      both simulate_program on one decoded program, functional=false vs true);
//  (c) an fp16 bmm of batch 8, m=512 n=4096 k=4096 simulates in timing-only
//      mode in under 1 s (BM_TimingOnly/big_f16).
// FLOP counts are 2 * MACs of the bmm. Shapes and program paths come from
// benchmarks/CMakeLists.txt. See benchmarks/README.md.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "HalideBuffer.h"
#include "bench_bmm_f16_host.h"
#include "bench_bmm_f16_spyre.h"
#include "bench_bmm_f32_host.h"
#include "bench_bmm_f32_spyre.h"
#include "spyre/device_memory.h"
#include "spyre/dtype.h"
#include "spyre/host_run.h"
#include "spyre/layout.h"
#include "spyre/machine.h"
#include "spyre/program_format.h"
#include "spyre/simulator.h"
#include "spyre/spyre_runtime.h"
#include "spyre/validator.h"

namespace {

using Halide::Runtime::Buffer;

constexpr int kBatch = SPYRE_BENCH_BATCH, kM = SPYRE_BENCH_M, kN = SPYRE_BENCH_N, kK = SPYRE_BENCH_K;
constexpr double kDefaultFlops = 2.0 * kBatch * kM * kN * kK;

const halide_type_t kF16{halide_type_float, 16, 1};
const halide_type_t kF32{halide_type_float, 32, 1};

// ---- Halide-built kernels (host and Spyre) ----

using BmmKernel = int (*)(halide_buffer_t *A, halide_buffer_t *B, halide_buffer_t *C);

// A dense tensor with seeded uniform values in [-1, 1) (rounded to fp16 for float16).
Buffer<void> random_buffer(halide_type_t type, int d0, int d1, int d2, uint64_t seed) {
    Buffer<void> b(type, d0, d1, d2);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const size_t n = b.number_of_elements();
    if (type.bits == 16) {
        uint16_t *p = static_cast<uint16_t *>(b.data());
        for (size_t i = 0; i < n; i++) p[i] = spyre::float_to_half(dist(rng));
    } else {
        float *p = static_cast<float *>(b.data());
        for (size_t i = 0; i < n; i++) p[i] = dist(rng);
    }
    return b;
}

void set_flop_rate(benchmark::State &state, double flops_per_iteration) {
    state.counters["FLOP/s"] = benchmark::Counter(flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

// One call = one whole bmm on the default shape. For the Spyre build that is
// the full runtime path: argument checks, host -> device layout, functional
// simulation, device -> host layout.
void run_halide_bmm(benchmark::State &state, BmmKernel kernel, halide_type_t type, bool on_spyre) {
    Buffer<void> A = random_buffer(type, kK, kM, kBatch, 1);
    Buffer<void> B = random_buffer(type, kN, kK, kBatch, 2);
    Buffer<void> C(type, kN, kM, kBatch);
    // Warm-up outside the timing: program decode and validation (cached by the
    // runtime), device allocations, Halide's thread pool.
    if (kernel(A, B, C) != 0) {
        state.SkipWithError(on_spyre ? spyre_last_error() : "the host kernel failed");
        return;
    }
    for (auto _ : state) {
        if (kernel(A, B, C) != 0) {
            state.SkipWithError(on_spyre ? spyre_last_error() : "the host kernel failed");
            break;
        }
    }
    set_flop_rate(state, kDefaultFlops);
    spyre_kernel_stats stats;
    if (on_spyre && spyre_get_last_run_stats(&stats) == 0) state.counters["sim_us"] = stats.simulated_us;
}

void BM_HostBmm(benchmark::State &state, BmmKernel kernel, halide_type_t type) {
    run_halide_bmm(state, kernel, type, false);
}

void BM_SpyreFunctionalBmm(benchmark::State &state, BmmKernel kernel, halide_type_t type) {
    run_halide_bmm(state, kernel, type, true);
}

// ---- The simulator alone, on .spyre program files ----

struct LoadedProgram {
    spyre::Program program;
    double flops = 0;  // 2 * C elements * k
};

// Decodes and validates a program file once per process. Throws spyre::Error.
const LoadedProgram &load_program(const std::string &path) {
    static std::map<std::string, LoadedProgram> cache;
    auto it = cache.find(path);
    if (it != cache.end()) return it->second;
    LoadedProgram lp;
    lp.program = spyre::decode_program(spyre::read_file_bytes(path));
    spyre::validate_program(lp.program, spyre::default_machine());
    const spyre::ProgramArgument *a = nullptr, *c = nullptr;
    for (const spyre::ProgramArgument &arg : lp.program.args) {
        if (arg.name == "A") a = &arg;
        if (arg.name == "C") c = &arg;
    }
    if (!a || !c) throw spyre::Error(path + ": not a bmm program (no arguments A and C)");
    lp.flops = 2.0 * (double)a->shape.extent[0];  // k
    for (int64_t e : c->shape.extent) lp.flops *= (double)e;
    return cache.emplace(path, std::move(lp)).first->second;
}

void set_simulation_counters(benchmark::State &state, const LoadedProgram &lp, const spyre::SimulationResult &r) {
    set_flop_rate(state, lp.flops);
    state.counters["instr/s"] =
        benchmark::Counter((double)r.dynamic_instructions, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["sim_us"] = r.simulated_us;
}

// simulate_program with functional=false: no device memory, null bindings
// carrying only their sizes. The program is decoded once, outside the loop.
void BM_TimingOnly(benchmark::State &state, const char *path) {
    const spyre::MachineDescription &m = spyre::default_machine();
    spyre::SimulationResult r;
    try {
        const LoadedProgram &lp = load_program(path);
        std::vector<spyre::ArgumentBinding> bindings;
        for (const spyre::ProgramArgument &a : lp.program.args) {
            spyre::ArgumentBinding b;
            b.bytes = spyre::layout_addressing(a.shape, a.layout, m.stick_bytes).total_bytes;
            bindings.push_back(b);
        }
        const std::vector<double> params(lp.program.params.size(), 0.0);
        spyre::SimulationOptions options;
        options.functional = false;
        for (auto _ : state) {
            r = spyre::simulate_program(lp.program, m, bindings, params, options);
        }
        set_simulation_counters(state, lp, r);
    } catch (const std::exception &e) {
        state.SkipWithError(e.what());
    }
}

// simulate_program with functional=true on the same program: device memory
// allocated and the random inputs packed once, outside the loop (as the
// runtime's allocation cache does for the Halide path), so that only
// SimulationOptions::functional differs from BM_TimingOnly. Per-call
// allocation (run_on_host_tensors) would add fresh page faults to every run.
void BM_FunctionalSimOnly(benchmark::State &state, const char *path) {
    const spyre::MachineDescription &m = spyre::default_machine();
    spyre::DeviceMemory memory(m.dram_usable_bytes);
    std::vector<uint64_t> handles;
    spyre::SimulationResult r;
    try {
        const LoadedProgram &lp = load_program(path);
        std::vector<spyre::ArgumentBinding> bindings;
        uint64_t seed = 1;
        for (const spyre::ProgramArgument &a : lp.program.args) {
            spyre::ArgumentBinding b;
            b.bytes = spyre::layout_addressing(a.shape, a.layout, m.stick_bytes).total_bytes;
            handles.push_back(memory.allocate(b.bytes, a.name));
            b.data = memory.data(handles.back());
            if (a.kind == spyre::ArgKind::Input) {
                spyre::HostTensor t = spyre::HostTensor::zeros(a.name, a.shape);
                spyre::fill_random(t, seed++);
                spyre::pack_to_device(a.shape, a.layout, m.stick_bytes, t.view(), b.data);
            }
            bindings.push_back(b);
        }
        const std::vector<double> params(lp.program.params.size(), 0.0);
        for (auto _ : state) {
            r = spyre::simulate_program(lp.program, m, bindings, params);
            benchmark::ClobberMemory();
        }
        set_simulation_counters(state, lp, r);
    } catch (const std::exception &e) {
        state.SkipWithError(e.what());
    }
    for (uint64_t h : handles) memory.free(h);
}

// run_on_host_tensors, functional (the spyre-run path): per call it allocates
// device memory, packs the inputs, simulates, unpacks the output and frees.
// Not used by the targets; shows what that per-call work costs.
void BM_FunctionalHostRun(benchmark::State &state, const char *path) {
    const spyre::MachineDescription &m = spyre::default_machine();
    spyre::SimulationResult r;
    try {
        const LoadedProgram &lp = load_program(path);
        std::vector<spyre::HostTensor> inputs;
        uint64_t seed = 1;
        for (const spyre::ProgramArgument &a : lp.program.args) {
            if (a.kind != spyre::ArgKind::Input) continue;
            inputs.push_back(spyre::HostTensor::zeros(a.name, a.shape));
            spyre::fill_random(inputs.back(), seed++);
        }
        const std::vector<double> params(lp.program.params.size(), 0.0);
        spyre::DeviceMemory memory(m.dram_usable_bytes);
        for (auto _ : state) {
            spyre::HostRunResult out = spyre::run_on_host_tensors(lp.program, m, memory, inputs, params);
            benchmark::DoNotOptimize(out.outputs.data());
            r = std::move(out.sim);
        }
        set_simulation_counters(state, lp, r);
    } catch (const std::exception &e) {
        state.SkipWithError(e.what());
    }
}

BENCHMARK_CAPTURE(BM_HostBmm, f16, bench_bmm_f16_host, kF16)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_HostBmm, f32, bench_bmm_f32_host, kF32)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_SpyreFunctionalBmm, f16, bench_bmm_f16_spyre, kF16)
    ->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_SpyreFunctionalBmm, f32, bench_bmm_f32_spyre, kF32)
    ->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_FunctionalSimOnly, default_f16, SPYRE_BENCH_DEFAULT_F16_PROGRAM)
    ->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_FunctionalHostRun, default_f16, SPYRE_BENCH_DEFAULT_F16_PROGRAM)
    ->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_TimingOnly, default_f16, SPYRE_BENCH_DEFAULT_F16_PROGRAM)
    ->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK_CAPTURE(BM_TimingOnly, big_f16, SPYRE_BENCH_BIG_F16_PROGRAM)
    ->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);

// ---- The summary: the targets from the runs of this process ----

// Prints like ConsoleReporter and keeps one successful run per benchmark,
// keyed by its registered name ("BM_HostBmm/f16", without the min_time and
// real_time suffixes): the median when --benchmark_repetitions gives one,
// else the last repetition.
class TargetSummaryReporter : public benchmark::ConsoleReporter {
public:
    using benchmark::ConsoleReporter::ConsoleReporter;

    void ReportRuns(const std::vector<Run> &runs) override {
        for (const Run &r : runs) {
            if (r.error_occurred) continue;
            const std::string &name = r.run_name.function_name;
            if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
                runs_[name] = r;
                medians_.insert(name);
            } else if (r.run_type == Run::RT_Iteration && !medians_.count(name)) {
                runs_[name] = r;
            }
        }
        benchmark::ConsoleReporter::ReportRuns(runs);
    }

    void print_summary() const {
        std::printf("\nTargets (from the runs above, this process):\n");
        print_host_ratio();
        print_timing_speedup();
        print_big_timing_only();
    }

private:
    const Run *find(const std::string &name) const {
        auto it = runs_.find(name);
        return it == runs_.end() ? nullptr : &it->second;
    }
    static double gflops(const Run &r) {
        auto it = r.counters.find("FLOP/s");
        return it == r.counters.end() ? 0.0 : it->second.value / 1e9;
    }
    static double real_seconds(const Run &r) {
        return r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
    }
    static const char *verdict(bool pass) { return pass ? "PASS" : "MISS"; }

    // (a) functional simulation / host build, in GFLOP/s.
    void print_host_ratio() const {
        std::string line = "  functional sim / host GFLOP/s:";
        std::string detail;
        const char *sep = " ";
        for (const char *dtype : {"f32", "f16"}) {
            const Run *host = find(std::string("BM_HostBmm/") + dtype);
            const Run *sim = find(std::string("BM_SpyreFunctionalBmm/") + dtype);
            char buf[160];
            if (host && sim && gflops(*host) > 0) {
                const double pct = 100.0 * gflops(*sim) / gflops(*host);
                std::snprintf(buf, sizeof buf, "%s%s = %.1f%% (target >= 25%%) %s", sep, dtype, pct, verdict(pct >= 25.0));
                line += buf;
                std::snprintf(buf, sizeof buf, "%s%s %.2f / %.2f", sep, dtype, gflops(*sim), gflops(*host));
                detail += buf;
            } else {
                std::snprintf(buf, sizeof buf, "%s%s = n/a (not measured)", sep, dtype);
                line += buf;
            }
            sep = ", ";
        }
        std::printf("%s\n", line.c_str());
        if (!detail.empty()) std::printf("    (GFLOP/s simulated / host:%s)\n", detail.c_str());
    }

    // (b) wall time of functional simulation / wall time of timing-only, same program.
    void print_timing_speedup() const {
        const Run *functional = find("BM_FunctionalSimOnly/default_f16");
        const Run *timing = find("BM_TimingOnly/default_f16");
        if (!functional || !timing || real_seconds(*timing) <= 0) {
            std::printf("  timing-only speedup over functional sim: n/a (not measured)\n");
            return;
        }
        const double speedup = real_seconds(*functional) / real_seconds(*timing);
        std::printf("  timing-only speedup over functional sim: %.1fx (target >= 50x) %s\n", speedup,
                    verdict(speedup >= 50.0));
        std::printf("    (default f16 program: functional %.3f ms, timing-only %.3f ms)\n",
                    1e3 * real_seconds(*functional), 1e3 * real_seconds(*timing));
    }

    // (c) wall time of one timing-only simulation of the big fp16 bmm.
    void print_big_timing_only() const {
        const Run *big = find("BM_TimingOnly/big_f16");
        if (!big) {
            std::printf("  big fp16 bmm timing-only: n/a (not measured)\n");
            return;
        }
        const double s = real_seconds(*big);
        std::printf("  big fp16 bmm timing-only: %.3f s (target < 1 s) %s\n", s, verdict(s < 1.0));
        std::printf("    (batch=8 m=512 n=4096 k=4096, %.0f GFLOP simulated per run)\n",
                    gflops(*big) * s);
    }

    std::map<std::string, Run> runs_;
    std::set<std::string> medians_;
};

}  // namespace

int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    TargetSummaryReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                         : benchmark::ConsoleReporter::OO_Tabular);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    std::fflush(stdout);
    reporter.print_summary();
    benchmark::Shutdown();
    return 0;
}
