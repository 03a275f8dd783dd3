// One pipeline's schedule as its Spyre lowering needs it: whether it is compiled for Spyre, the
// machine it is compiled for, the driver's options (output directory, kernel name), the
// tensors' static shapes, padding and device layouts (constrain_tensor, set_device_layout), the
// treatments the schedule asked for by Func name (double_buffer, double_buffer_result,
// compute_one_iteration_ahead, share_over_ring), and a deadline for its compile.
//
// The scheduling vocabulary writes into the context that is *active* on the calling thread;
// the lowering pass receives its context explicitly when it is attached (attach_spyre_lowering)
// and reads nothing else, so several pipelines, for different targets and machines, can be
// scheduled and compiled in one process, interleaved or on several threads:
//
//     auto ctx = spyre::ScheduleContext::make(/*for_spyre=*/true, machine);
//     {
//         spyre::ScheduleContext::Use use(ctx);   // this thread schedules into ctx
//         ... generate(), schedule(), attach_spyre_lowering(...) ...
//     }
//     pipeline.compile_to_...;                    // the pass reads ctx, whatever is active then
//
// The generator driver makes one context per run (generator_main.cpp); the test helpers one
// per build (tests/compiler/jit_helpers.h). A thread that never activates one schedules into
// its own default context (a host build for default_machine()), so code that only sets the
// target with set_compiling_for_spyre keeps working, each thread apart.
//
// Assumes: a context's Func-name requests name Funcs of the pipelines scheduled into it (Halide
// makes Func names unique per process, so a context shared by several pipelines is safe for
// them; tensor names are the user's, so two pipelines with a tensor of the same name and another
// shape need two contexts). Every member is safe to call from several threads.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "Halide.h"
#include "spyre/machine.h"

namespace spyre {

struct SpyreTensorInfo {
    std::string name;
    Halide::Type type;
    std::vector<int> extents;  // true extents, innermost first
    std::vector<int> padded;   // padded extents (== extents for host builds)
    bool is_output = false;
    // Device layout: order of the dimensions, outermost first (empty: host order, the default),
    // and the stick dimension (the dimension kernels vectorize when they move the tensor).
    std::vector<int> order;
    int stick_dim = 0;
    // What the algorithm's shape reads call the buffer: `<shape_name>.extent.<d>` and so on
    // (the tensor's name, except for a JIT input bound to a Buffer, whose dims Halide names apart).
    std::string shape_name;
    // The name in the program's argument table: a generator Output's own name (the AOT signature's),
    // which stays the same when Halide renames its Func (out, out$1, ...) in a process that built
    // the generator before; empty: `name`.
    std::string argument_name;
};

// What the generator driver was told: where the program files go and what the kernel is called.
struct DriverOptions {
    std::string output_dir;     // GenGen's -o
    std::string function_name;  // GenGen's -f (without namespaces), or the generator name
    std::string generator_name; // GenGen's -g
};

class ScheduleContext {
public:
    ScheduleContext(bool for_spyre, MachineDescription machine);
    static std::shared_ptr<ScheduleContext> make(bool for_spyre, const MachineDescription &machine = default_machine());

    bool for_spyre() const;
    void set_for_spyre(bool on);
    // Fixed for the context's life: planners and the lowering read it.
    const MachineDescription &machine() const { return machine_; }
    DriverOptions driver_options() const;
    void set_driver_options(const DriverOptions &options);
    // A compile of a pipeline of this context stops with a CompileError at the Spyre lowering's
    // first pass boundary after `deadline` (the Spyre autoscheduler bounds its candidates so).
    void set_deadline(std::chrono::steady_clock::time_point deadline);
    bool past_deadline() const;

    // ---- tensors (constrain_tensor, set_device_layout) ----
    // Records (or replaces) a tensor; throws Halide::CompileError when its padded shape has more
    // elements than a Halide 14 buffer can index.
    void add_tensor(const SpyreTensorInfo &info);
    std::optional<SpyreTensorInfo> tensor(const std::string &name) const;
    // Records the device order of a tensor's dimensions (outermost first); false if it is unknown.
    bool set_tensor_order(const std::string &name, const std::vector<int> &order);
    std::map<std::string, SpyreTensorInfo> tensors() const;

    // ---- what the schedule asks of the lowering, by Func name ----
    void request_double_buffering(const std::string &func_name);
    // The Func computed one iteration of its loop ahead (compute_one_iteration_ahead), in two
    // copies (as request_double_buffering) or, with second_copy false, in one.
    void request_computing_ahead(const std::string &func_name, bool second_copy);
    void request_ring_sharing(const std::string &func_name, bool in_pieces, bool gathered = false);
    std::set<std::string> double_buffered() const;
    std::set<std::string> computed_ahead() const;  // computed one iteration ahead (double_buffered: in two copies)
    std::set<std::string> ring_shared() const;
    std::set<std::string> ring_pieces() const;    // of ring_shared, forwarded in pieces
    std::set<std::string> ring_gathered() const;  // of ring_shared, loaded in shares by every core of a chain

    // ---- the context the scheduling vocabulary writes into on this thread ----
    static ScheduleContext &active();
    static std::shared_ptr<ScheduleContext> active_shared();
    // Makes `context` active on this thread until destroyed (then the previous one is again).
    class Use {
    public:
        explicit Use(std::shared_ptr<ScheduleContext> context);
        ~Use();
        Use(const Use &) = delete;
        Use &operator=(const Use &) = delete;

    private:
        std::shared_ptr<ScheduleContext> previous_;
    };

private:
    const MachineDescription machine_;
    mutable std::mutex mutex_;
    bool for_spyre_;
    DriverOptions driver_options_;
    std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
    std::map<std::string, SpyreTensorInfo> tensors_;
    std::set<std::string> double_buffered_, computed_ahead_, ring_shared_, ring_pieces_, ring_gathered_;
};

// The machine of the active context: what the planners in schedules/ plan for.
inline const MachineDescription &scheduling_machine() { return ScheduleContext::active().machine(); }

}  // namespace spyre
