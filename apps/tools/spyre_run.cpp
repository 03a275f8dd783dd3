// spyre-run: runs any Spyre program on the simulated device.
//   spyre-run PROGRAM [--seed N] [--input NAME=FILE.npy]... [--output NAME=FILE.npy]...
//             [--param NAME=VALUE]... [--timing-only] [--sync normal|serial|random]
//             [--report out.json] [--trace trace.json] [--svg timeline.svg]
//             [--max-instructions N] [--max-cycles N]
// Inputs not given as .npy files are random (seeded). Prints a one-screen summary.
// Every --param must name a parameter of the program, once, with a value of its
// type (an i32 a whole number in its range; scalar_params.h).
// --trace writes a Chrome trace (chrome://tracing, ui.perfetto.dev) and --svg a
// timeline picture; either one records the per-instruction trace.
// A run stops with an error naming the budget once it executes more than
// --max-instructions dynamic instructions (default 1e9: minutes of simulation;
// the example kernels execute about 1e4) or its
// simulated time passes --max-cycles (default 1e12, over 10 minutes of device
// time; compiled kernels take milliseconds). 0 lifts a budget.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include <CLI/CLI.hpp>

#include "spyre/host_run.h"
#include "cli_options.h"
#include "output_files.h"
#include "spyre/npy.h"
#include "spyre/program_format.h"
#include "spyre/report.h"
#include "spyre/scalar_params.h"
#include "spyre/trace_output.h"
#include "spyre/validator.h"

using namespace spyre;

namespace {

constexpr uint64_t kDefaultMaxInstructions = 1000000000;
// --trace/--svg keep at most this many instruction events by default: 128 MB of them in memory.
constexpr uint64_t kDefaultTraceMaxEvents = 4000000;
constexpr double kDefaultMaxCycles = 1e12;

// NAME=VALUE items of one flag; a name given twice is an error, not the last one winning.
std::map<std::string, std::string> parse_pairs(const std::vector<std::string> &items, const char *flag) {
    std::map<std::string, std::string> out;
    for (const auto &s : items) {
        auto eq = s.find('=');
        if (eq == std::string::npos || eq == 0) throw Error(std::string(flag) + " expects NAME=VALUE, got '" + s + "'");
        if (!out.emplace(s.substr(0, eq), s.substr(eq + 1)).second) {
            throw Error(std::string(flag) + " gives '" + s.substr(0, eq) + "' twice");
        }
    }
    return out;
}

// "k (i32), eps (f32)" or "none".
std::string list_of_params(const Program &p) {
    std::string out;
    for (const auto &sp : p.params) out += (out.empty() ? "" : ", ") + sp.name + " (" + dtype_name(sp.dtype) + ")";
    return out.empty() ? "none" : out;
}

// The --param values in program order, each parsed strictly for its type.
std::vector<double> param_values_of(const Program &p, std::map<std::string, std::string> given) {
    std::vector<double> values;
    for (const auto &sp : p.params) {
        auto it = given.find(sp.name);
        if (it == given.end()) throw Error("missing --param " + sp.name + "=VALUE; " + describe_scalar_param(sp));
        try {
            values.push_back(parse_scalar_param(sp, it->second));
        } catch (const Error &e) {
            throw Error(std::string("--param ") + sp.name + "=" + it->second + ": " + e.what());
        }
        given.erase(it);
    }
    if (!given.empty()) {
        throw Error("--param names '" + given.begin()->first + "', which is not a parameter of the program (its parameters: " +
                    list_of_params(p) + ")");
    }
    return values;
}

// NumPy shapes are outermost first; program shapes innermost first.
HostTensor tensor_from_npy(const std::string &name, const NpyArray &a, const TensorShape &expect) {
    if (a.fortran_order && a.shape.size() > 1) throw Error("input '" + name + "': Fortran-order .npy files are not supported");
    HostTensor t;
    t.name = name;
    t.shape.dtype = a.dtype;
    t.shape.extent.assign(a.shape.rbegin(), a.shape.rend());
    if (t.shape.dtype != expect.dtype || t.shape.extent != expect.extent) {
        std::string want, got;
        for (auto it = expect.extent.rbegin(); it != expect.extent.rend(); ++it) want += std::to_string(*it) + " ";
        for (auto e : a.shape) got += std::to_string(e) + " ";
        throw Error("input '" + name + "': the program expects " + dtype_name(expect.dtype) + " (" + want +
                    ") in NumPy order, the file holds " + dtype_name(a.dtype) + " (" + got + ")");
    }
    t.data = a.data;
    return t;
}

void write_text_file(const std::string &path, const std::string &text, const char *what) {
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f) throw Error(std::string("cannot write ") + what + " '" + path + "'");
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) throw Error(std::string("error writing ") + what + " '" + path + "'");
    std::printf("  wrote %s to %s\n", what, path.c_str());
}

// The Chrome trace, streamed to the file an event at a time (never held as one string).
void write_trace_file(const std::string &path, const SimulationResult &sim, const MachineDescription &m) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write trace '" + path + "'");
    write_chrome_trace(out, sim, m);
    out.close();
    if (!out) throw Error("error writing trace '" + path + "'");
    std::printf("  wrote trace to %s\n", path.c_str());
}

}  // namespace

int main(int argc, char **argv) {
    check_stdout_at_exit("spyre-run");
    CLI::App app{"Run a Spyre program on the simulated device"};
    std::string program_path, report_path, trace_path, svg_path, sync = "normal";
    uint64_t seed = 1;
    bool timing_only = false;
    uint64_t max_instructions = kDefaultMaxInstructions;
    uint64_t trace_max_events = kDefaultTraceMaxEvents;
    double max_cycles = kDefaultMaxCycles;
    std::vector<std::string> inputs, outputs, params;
    app.add_option("program", program_path, "program file (.spyre)")->required();
    app.add_option("--seed", seed, "seed of the random inputs")->check(spyre_cli::unsigned_64());
    app.add_option("--input", inputs, "NAME=FILE.npy: take an input from a .npy file");
    app.add_option("--output", outputs, "NAME=FILE.npy: write an output to a .npy file");
    app.add_option("--param", params, "NAME=VALUE: a scalar run-time parameter");
    app.add_flag("--timing-only", timing_only, "simulate time only; never touch data");
    app.add_option("--sync", sync, "normal | serial | random (synchronization test modes)")
        ->check(CLI::IsMember({"normal", "serial", "random"}));
    app.add_option("--report", report_path, "write the JSON report here");
    app.add_option("--trace", trace_path, "write a Chrome trace (chrome://tracing, Perfetto) of every instruction here");
    app.add_option("--svg", svg_path, "write an SVG timeline of the cores' units here");
    app.add_option("--trace-max-events", trace_max_events,
                   "--trace/--svg keep the first N instruction events (32 bytes each in memory; 0: all)")
        ->capture_default_str()
        ->check(spyre_cli::unsigned_64());
    app.add_option("--max-instructions", max_instructions,
                   "stop once more dynamic instructions than this have run (0: no limit)")
        ->capture_default_str()
        ->check(spyre_cli::unsigned_64());
    app.add_option("--max-cycles", max_cycles, "stop once simulated time passes this many cycles (0: no limit)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    try {
        const MachineDescription &m = default_machine();
        Program p = decode_program(read_file_bytes(program_path));
        validate_program(p, m);

        auto in_files = parse_pairs(inputs, "--input");
        auto out_files = parse_pairs(outputs, "--output");
        auto param_values = parse_pairs(params, "--param");

        // Everything the run will write is checked before it starts: a wrong name or a path that
        // cannot be written fails now, not after a simulation that may take hours.
        if (timing_only && !out_files.empty()) throw Error("--output needs a functional run (drop --timing-only)");
        for (const auto &o : out_files) {
            const bool is_output = std::any_of(p.args.begin(), p.args.end(), [&](const ProgramArgument &a) {
                return a.kind == ArgKind::Output && a.name == o.first;
            });
            if (!is_output) throw Error("--output names '" + o.first + "', which is not an output of the program");
            const std::string why = output_path_problem(o.second);
            if (!why.empty()) throw Error("--output " + o.first + "=" + o.second + ": cannot write it: " + why);
        }
        for (const auto &[flag, path] : {std::pair<const char *, std::string>{"--report", report_path},
                                         {"--trace", trace_path}, {"--svg", svg_path}}) {
            const std::string why = path.empty() ? "" : output_path_problem(path);
            if (!why.empty()) throw Error(std::string(flag) + " " + path + ": cannot write it: " + why);
        }

        std::vector<HostTensor> host_inputs;
        uint64_t s = seed;
        for (const auto &a : p.args) {
            if (a.kind != ArgKind::Input) continue;
            auto it = in_files.find(a.name);
            if (it != in_files.end()) {
                host_inputs.push_back(tensor_from_npy(a.name, read_npy(it->second), a.shape));
                in_files.erase(it);
            } else if (!timing_only) {  // a timing-only run reads no data: no host memory for it
                HostTensor t = HostTensor::zeros(a.name, a.shape);
                fill_random(t, s++);
                host_inputs.push_back(std::move(t));
            }
        }
        if (!in_files.empty()) throw Error("--input names '" + in_files.begin()->first + "', which is not an input of the program");
        const std::vector<double> pv = param_values_of(p, param_values);

        SimulationOptions opt;
        opt.functional = !timing_only;
        opt.sync = sync == "serial" ? SyncMode::ForcedSerial : sync == "random" ? SyncMode::RandomLatency : SyncMode::Normal;
        opt.seed = seed;
        opt.record_trace = !trace_path.empty() || !svg_path.empty();
        opt.max_trace_events = trace_max_events;
        opt.max_instructions = max_instructions;
        opt.max_cycles = max_cycles;
        DeviceMemory memory(m.dram_usable_bytes);
        HostRunResult r;
        try {
            r = run_on_host_tensors(p, m, memory, host_inputs, pv, opt);
        } catch (const BudgetExceeded &e) {
            const bool instructions = e.budget == BudgetExceeded::Budget::Instructions;
            throw Error(std::string(e.what()) + "; raise it with " + (instructions ? "--max-instructions" : "--max-cycles") +
                        " N (0: no limit)");
        }

        std::printf("%s", format_summary(r.sim, m).c_str());
        for (const auto &t : r.outputs) {
            auto it = out_files.find(t.name);
            if (it == out_files.end()) continue;
            if (timing_only) throw Error("--output needs a functional run (drop --timing-only)");
            NpyArray a;
            a.dtype = t.shape.dtype;
            a.shape.assign(t.shape.extent.rbegin(), t.shape.extent.rend());
            a.data = t.data;
            write_npy(it->second, a);
            std::printf("  wrote output %s to %s\n", t.name.c_str(), it->second.c_str());
            out_files.erase(it);
        }
        if (!out_files.empty()) throw Error("--output names '" + out_files.begin()->first + "', which is not an output of the program");
        if (!report_path.empty()) write_text_file(report_path, report_json(r.sim, m), "report");
        if (!trace_path.empty()) write_trace_file(trace_path, r.sim, m);
        if (opt.record_trace && r.sim.trace_events_dropped > 0) {
            std::printf("  the trace keeps the first %zu instruction events and drops the other %llu "
                        "(--trace-max-events; 0 keeps all, 32 bytes each)\n",
                        r.sim.trace.size(), (unsigned long long)r.sim.trace_events_dropped);
        }
        if (!svg_path.empty()) write_text_file(svg_path, timeline_svg(r.sim, m), "timeline");
    } catch (const std::exception &e) {
        std::fprintf(stderr, "spyre-run: %s: %s\n", program_path.c_str(), e.what());
        return 1;
    }
    return 0;
}
