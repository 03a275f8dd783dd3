// The Spyre lowering pass. It runs at the end of Halide's lower() (after
// flattening, vectorization and loop partitioning; see docs/compiler.md) and
// is the sequence of passes in SpyreLoweringPass::lower(), each in its own
// file with a header saying what it expects and guarantees:
//   find_device_region             the one loop split across cores
//   collect_kernel_tensors         the arguments the region reads and writes, in program order
//   stage_computed_outputs         an output computed where it is stored: computed into a
//                                  scratchpad tile, then stored from it
//   select_core_instructions       per core: DMA / PT / SFU instructions in a loop tree,
//                                  scratchpad placement and the budget check
//   fold_loops                     single-instruction loops into instruction dimensions
//   block_sfu_rows                 multi-instruction SFU row loops into blocks of rows
//   forward_sfu_copies             SFU results written where a copy would have moved them
//   elide_zero_fills               zero fills a PT matmul overwrites whole: C = A.B instead
//   apply_double_buffering         two copies of requested buffers, unroll by two, software
//                                  pipeline (and tile-overlap reuse)
//   spread_trailing_stores         a loop around a pipelined loop: its store in pieces during the
//                                  next iteration
//   rotate_prologue_loads          a loop around a pipelined loop: the next iteration's first tile
//                                  loaded during this one
//   order_loads_by_first_reader    in a run of loads, one read before the load ahead of it (and
//                                  followed by none read later) passes it, so its reader's work
//                                  overlaps that load (a matmul tile's bias row ahead of B)
//   share_loads_over_ring          across cores: requested tiles loaded once per chain of cores
//   sink_late_loads                a load read only after a loop of loads moved past that loop,
//                                  so it does not hold up the loop's loads in the DMA queue
//   split_trailing_tile            the last matmul, epilogue and store in row pieces, so the
//                                  store overlaps the PT's last rows
//   split_leading_panel            a resident panel's load and the first matmul reading it in
//                                  row pieces, so the PT starts on the panel's first rows
//   mark_gather_riders             a gathered share's rounds: the plain loads before it issued
//                                  after the core's p-th forward, so the chain's cores read DRAM
//                                  in turn while the others forward
//   emit_core_streams              tokens between units, the DMA/PT/SFU streams
//   address_through_dram_windows   dma.window where a core reaches past max_core_span_bytes
//   validate_program               the same validator the runtime uses
//   check_static_input_reads       Halide's bounds check of each input, decided at compile time
//   dry_run_program                the program run once, timing only: address rules, reads of
//                                  unwritten scratchpad, DRAM write races, deadlocks
//   write <kernel>.spyre and <kernel>.spyre.txt
//   make_runtime_call              embed the program, replace the region by the runtime call
//   strip_spyre_argument_checks    Halide's argument checks the runtime replaces
// Before any of it, when the pass is attached: use_true_tensor_shapes, the algorithm's reads of
// a tensor's shape become the host build's values (the padding is the layout's business).
// It is handed the pipeline's ScheduleContext when it is attached and reads nothing else: when
// it runs it takes the context's tensors, requests and machine (one struct, LoweringInputs), so a
// schedule re-applied after attaching (the Spyre autoscheduler's candidates) is what compiles.
// SPYRE_DEBUG=1 prints a summary per kernel; 2 also the IR before and, after every pass, what it
// left: the device region, the kernel's tensors, core 0's program tree (program_tree_printer.h;
// SPYRE_DEBUG_CORE=N for core N) or instruction streams, the program, the host IR.
#include "spyre_lowering.h"

#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "checks/dry_run.h"
#include "emission/core_streams.h"
#include "emission/dram_windows.h"
#include "host/argument_checks.h"
#include "host/runtime_call.h"
#include "program_tree/double_buffering.h"
#include "program_tree/load_ordering.h"
#include "program_tree/gather_riders.h"
#include "program_tree/load_sinking.h"
#include "program_tree/loop_folding.h"
#include "program_tree/program_tree_printer.h"
#include "program_tree/prologue_rotation.h"
#include "program_tree/ring_sharing.h"
#include "program_tree/sfu_copy_forwarding.h"
#include "program_tree/head_splitting.h"
#include "program_tree/tail_splitting.h"
#include "program_tree/sfu_row_blocking.h"
#include "program_tree/store_spreading.h"
#include "program_tree/zero_fill_elision.h"
#include "selection/computed_outputs.h"
#include "selection/device_region.h"
#include "selection/instruction_selection.h"
#include "selection/spyre_types.h"
#include "spyre/assembler.h"
#include "spyre/program_format.h"
#include "spyre/validator.h"
#include "spyre_target.h"
#include "tensor_constraints.h"
#include "true_tensor_shapes.h"

namespace spyre {

using namespace Halide;
using namespace Halide::Internal;

namespace {

int debug_level() {
    const char *d = std::getenv("SPYRE_DEBUG");
    return d ? std::atoi(d) : 0;
}

// The core whose program tree SPYRE_DEBUG=2 prints after each pass (SPYRE_DEBUG_CORE, default 0).
int debug_core() {
    const char *d = std::getenv("SPYRE_DEBUG_CORE");
    return d ? std::atoi(d) : 0;
}

// Everything the lowering reads besides the IR, taken from the schedule context when it runs.
struct LoweringInputs {
    SpyreLoweringOptions options;
    MachineDescription machine;
    std::map<std::string, SpyreTensorInfo> tensors;  // spyre::constrain_tensor and set_device_layout
    std::set<std::string> double_buffered;           // spyre::double_buffer
    std::set<std::string> computed_ahead;            // spyre::compute_one_iteration_ahead
    std::set<std::string> ring_shared;               // spyre::share_over_ring
    std::set<std::string> ring_pieces;               // of those, forwarded in pieces
    std::set<std::string> ring_gathered;             // of those, loaded in shares (RingForwarding::Gathered)
};

// The kernel's arguments: program order (inputs in order of first use, then outputs), the
// program's argument table and what instruction selection needs of each.
struct KernelTensors {
    std::vector<std::string> names;
    std::map<std::string, Expr> buffer_exprs;  // each argument's halide_buffer_t in host code
    std::vector<ProgramArgument> args;
    compiler::KernelInterface interface;
};

// Tensors the region reads (Load) or writes (Store) that are kernel arguments.
class TensorUses : public IRVisitor {
public:
    explicit TensorUses(const std::map<std::string, SpyreTensorInfo> &t) : tensors_(t) {}
    std::vector<std::string> order;
    std::set<std::string> stored;
    // How to name each tensor's halide_buffer_t in host code: a pipeline argument
    // (Parameter) or a Buffer embedded in the pipeline (JIT inputs bound to buffers).
    std::map<std::string, Expr> buffer_exprs;

private:
    const std::map<std::string, SpyreTensorInfo> &tensors_;
    bool known(const std::string &name) const { return tensors_.count(name) != 0; }
    using IRVisitor::visit;
    void note(const std::string &name, const Parameter &param, const Buffer<> &image = Buffer<>()) {
        if (!param.defined() && !known(name)) return;
        if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
        if (!buffer_exprs.count(name)) {
            const Type t = type_of<halide_buffer_t *>();
            if (image.defined()) buffer_exprs[name] = Variable::make(t, name + ".buffer", image);
            else if (param.defined()) buffer_exprs[name] = Variable::make(t, name + ".buffer", param);
            else buffer_exprs[name] = Variable::make(t, name + ".buffer");
        }
    }
    void visit(const Variable *op) override {
        // copy_to_host() stages name their source as `<tensor>.buffer` in halide_buffer_copy.
        const std::string suffix = ".buffer";
        if (op->name.size() > suffix.size() && op->name.compare(op->name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            const std::string tensor = op->name.substr(0, op->name.size() - suffix.size());
            if (known(tensor)) note(tensor, op->param, op->image);
        }
    }
    void visit(const Load *op) override {
        note(op->name, op->param, op->image);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        note(op->name, op->param);
        if (op->param.defined() || known(op->name)) stored.insert(op->name);
        IRVisitor::visit(op);
    }
};

class SpyreLoweringPass : public IRMutator {
public:
    SpyreLoweringPass(SpyreLoweringOptions o, std::shared_ptr<const ScheduleContext> context)
        : options_(std::move(o)), context_(std::move(context)) {}

    Stmt mutate(const Stmt &s) override {
        in_.options = options_;
        in_.machine = context_->machine();
        in_.tensors = context_->tensors();
        in_.double_buffered = context_->double_buffered();
        in_.computed_ahead = context_->computed_ahead();
        in_.ring_shared = context_->ring_shared();
        in_.ring_pieces = context_->ring_pieces();
        in_.ring_gathered = context_->ring_gathered();
        try {
            return lower(s);
        } catch (const CompileError &e) {
            throw Halide::CompileError(std::string(e.what()) + "\n");
        } catch (const spyre::Error &e) {
            throw Halide::CompileError("Spyre: " + std::string(e.what()) + "\n");
        }
    }

private:
    // The passes, in order (see the top of this file): each one run_pass, with its dump
    // (SPYRE_DEBUG=2) and the deadline check after it.
    Stmt lower(const Stmt &s) {
        const MachineDescription &m = in_.machine;
        if (dbg_ >= 2) std::cerr << "spyre: IR before Spyre lowering of " << kernel() << ":\n" << s << "\n";

        std::vector<std::string> output_names;
        for (const auto &kv : in_.tensors) {
            if (kv.second.is_output) output_names.push_back(kv.first);
        }
        compiler::DeviceRegion region;
        run_pass("find_device_region", [&] { region = compiler::find_device_region(s, m, output_names); },
                 [&] {
                     std::cerr << "core loop " << region.core_var << ", " << region.cores << " cores"
                               << (region.distributed ? ", a reduction distributed across them" : "") << "; its body:\n"
                               << region.body;
                 });
        KernelTensors kernel_tensors;
        run_pass("collect_kernel_tensors", [&] { kernel_tensors = collect_kernel_tensors(region, m); },
                 [&] {
                     for (const ProgramArgument &a : kernel_tensors.args) {
                         std::cerr << "  " << (a.kind == ArgKind::Output ? "output " : "input ") << a.name << ": extents";
                         for (int64_t e : a.shape.extent) std::cerr << " " << e;
                         std::cerr << ", padded";
                         for (int64_t e : a.layout.padded) std::cerr << " " << e;
                         std::cerr << "\n";
                     }
                 });

        run_pass("stage_computed_outputs",
                 [&] {
                     std::set<std::string> outputs;
                     for (const auto &kv : kernel_tensors.interface.tensors) {
                         if (kv.second.is_output) outputs.insert(kv.first);  // the name the IR stores to
                     }
                     region.body = compiler::stage_computed_outputs(region.body, outputs, m);
                 },
                 [&] { std::cerr << region.body; });
        std::vector<compiler::CoreProgram> cores;
        run_pass("select_core_instructions",
                 [&] { cores = select_instructions_per_core(region, kernel_tensors.interface, m); },
                 [&] { dump_tree(cores); });
        per_core_pass("fold_loops", cores, [&](compiler::CoreProgram &cp) { compiler::fold_loops(cp.tree); });
        per_core_pass("block_sfu_rows", cores, [&](compiler::CoreProgram &cp) {
            cp.scratchpad_peak = compiler::block_sfu_rows(cp.tree, cp.scratchpad_peak, m);
        });
        per_core_pass("forward_sfu_copies", cores, [&](compiler::CoreProgram &cp) { compiler::forward_sfu_copies(cp.tree); });
        per_core_pass("elide_zero_fills", cores, [&](compiler::CoreProgram &cp) { compiler::elide_zero_fills(cp.tree); });
        int64_t peak = 0;  // after row blocking's temporaries; double buffering was budgeted at selection
        for (const compiler::CoreProgram &cp : cores) peak = std::max(peak, cp.scratchpad_peak);
        per_core_pass("apply_double_buffering", cores, [&](compiler::CoreProgram &cp) {
            compiler::apply_double_buffering(cp.tree, cp.pingpong, m.stick_bytes, m.sfu_max_vector_lanes);
        });
        per_core_pass("spread_trailing_stores", cores,
                      [&](compiler::CoreProgram &cp) { compiler::spread_trailing_stores(cp.tree, m.stick_bytes); });
        per_core_pass("rotate_prologue_loads", cores,
                      [&](compiler::CoreProgram &cp) { compiler::rotate_prologue_loads(cp.tree); });
        per_core_pass("order_loads_by_first_reader", cores,
                      [&](compiler::CoreProgram &cp) { compiler::order_loads_by_first_reader(cp.tree); });
        if (region.distributed) {
            run_pass("check_gathered_parts", [&] { check_gathered_parts(cores, region.core_var); }, {});
        }
        run_pass("share_loads_over_ring",
                 [&] {
                     std::vector<std::vector<compiler::ProgramNode> *> trees;
                     for (auto &cp : cores) trees.push_back(&cp.tree);
                     compiler::share_loads_over_ring(trees, in_.ring_shared, in_.ring_pieces, m, in_.ring_gathered);
                 },
                 [&] { dump_tree(cores); });
        per_core_pass("sink_late_loads", cores, [&](compiler::CoreProgram &cp) { compiler::sink_late_loads(cp.tree); });
        per_core_pass("split_trailing_tile", cores, [&](compiler::CoreProgram &cp) {
            compiler::TailSplitting options;
            options.pt_pass_rows = m.pt_pass_rows;
            options.stick_bytes = m.stick_bytes;
            options.scratchpad_bytes = m.scratchpad_bytes;
            options.min_store_piece_bytes = compiler::min_tail_store_piece_bytes(m);
            compiler::split_trailing_tile(cp.tree, options);
        });
        per_core_pass("split_leading_panel", cores, [&](compiler::CoreProgram &cp) {
            compiler::HeadSplitting options;
            options.pt_pass_rows = m.pt_pass_rows;
            options.stick_bytes = m.stick_bytes;
            options.min_piece_bytes = compiler::min_tail_store_piece_bytes(m);
            compiler::split_leading_panel(cp.tree, options);
        });
        per_core_pass("mark_gather_riders", cores, [&](compiler::CoreProgram &cp) { compiler::mark_gather_riders(cp.tree); });

        Program program;
        program.kernel_name = kernel();
        program.machine_fingerprint = m.structural_fingerprint();
        program.args = kernel_tensors.args;
        program.cores.resize(m.cores);
        program.params = scalar_params(kernel_tensors.interface);
        run_pass("emit_core_streams",
                 [&] {
                     for (int c = 0; c < region.cores; c++) program.cores[c] = compiler::emit_core_streams(cores[c].tree, m);
                 },
                 [&] { dump_streams(program); });
        run_pass("address_through_dram_windows",
                 [&] {
                     for (int c = 0; c < region.cores; c++) {
                         compiler::address_through_dram_windows(program.cores[c], program.args, m);
                     }
                 },
                 [&] { dump_streams(program); });
        run_pass("validate_program",
                 [&] {
                     try {
                         validate_program(program, m);
                     } catch (const spyre::Error &e) {
                         throw CompileError("Spyre: internal error: the generated program is invalid: " + std::string(e.what()));
                     }
                 },
                 {});
        run_pass("check_static_input_reads",
                 [&] {
                     std::map<std::string, std::vector<int64_t>> padded, true_extents;
                     for (const auto &kv : kernel_tensors.interface.tensors) padded[kv.first] = kv.second.padded;
                     for (const auto &kv : in_.tensors) {
                         true_extents[kv.first].assign(kv.second.extents.begin(), kv.second.extents.end());
                     }
                     compiler::check_static_input_reads(s, padded, true_extents);
                 },
                 {});
        run_pass("dry_run_program",
                 [&] {
                     std::vector<std::vector<compiler::ScratchpadPlacement>> placements;
                     std::vector<const std::vector<compiler::ProgramNode> *> emitted_trees;
                     for (const compiler::CoreProgram &cp : cores) {
                         placements.push_back(cp.placements);
                         emitted_trees.push_back(&cp.tree);
                     }
                     compiler::dry_run_program(program, m, placements, emitted_trees);
                 },
                 {});
        std::vector<uint8_t> bytes = encode_program(program);
        if (dbg_ >= 1) {
            std::cerr << "spyre: kernel " << program.kernel_name << ": " << region.cores << " cores, "
                      << program.instruction_count() << " instructions, " << bytes.size()
                      << " bytes, scratchpad peak " << peak << " bytes per core\n";
        }
        if (dbg_ >= 2) std::cerr << disassemble_program(program);
        write_program_files(program, bytes);

        Stmt result;
        run_pass("make_runtime_call",
                 [&] {
                     compiler::RuntimeCallArguments call;
                     call.kernel_name = program.kernel_name;
                     call.program = std::move(bytes);
                     for (const std::string &n : kernel_tensors.names) call.buffers.push_back(kernel_tensors.buffer_exprs.at(n));
                     call.has_user_context = in_.options.user_context;
                     compiler::KernelInterface &iface = kernel_tensors.interface;
                     for (const std::string &pname : iface.scalar_params) {
                         call.scalar_params.push_back(
                             Variable::make(iface.param_types[pname], pname, iface.param_objects[pname]));
                     }
                     result = compiler::replace_statement(s, region.node, compiler::make_runtime_call(call));
                 },
                 {});
        run_pass("strip_spyre_argument_checks",
                 [&] {
                     std::set<std::string> name_set(kernel_tensors.names.begin(), kernel_tensors.names.end());
                     result = compiler::begin_kernel_call(compiler::strip_spyre_argument_checks(result, name_set),
                                                          in_.options.user_context);
                 },
                 [&] { std::cerr << result; });
        return result;
    }

    // Runs one pass, then (SPYRE_DEBUG=2) prints what it left through `dump`, and stops a
    // compile past its deadline. Every pass of lower() goes through here.
    template <typename Pass, typename Dump>
    void run_pass(const char *name, Pass pass, Dump dump) {
        pass();
        if (dbg_ >= 2) {
            std::cerr << "spyre: " << kernel() << ": after " << name << "\n";
            if constexpr (!std::is_same_v<Dump, std::nullptr_t>) dump();
        }
        stop_at_deadline(name);
    }
    template <typename Pass>
    void run_pass(const char *name, Pass pass, std::initializer_list<int>) {
        run_pass(name, pass, nullptr);
    }

    const std::string &kernel() const { return in_.options.kernel_name; }

    // Runs `pass` on every core's tree, then prints the debug core's tree (SPYRE_DEBUG=2).
    template <typename Pass>
    void per_core_pass(const char *name, std::vector<compiler::CoreProgram> &cores, Pass pass) {
        run_pass(
            name, [&] { for (compiler::CoreProgram &cp : cores) pass(cp); }, [&] { dump_tree(cores); });
    }

    // A compile whose schedule context has a deadline (the Spyre autoscheduler's candidates) stops
    // with a CompileError at the first pass boundary past it.
    void stop_at_deadline(const char *after) const {
        if (context_->past_deadline()) {
            throw CompileError("Spyre: the compile of " + kernel() + " was stopped at its deadline (after " + after + ")");
        }
    }
    // The debug core's program tree (SPYRE_DEBUG_CORE, core 0 by default).
    void dump_tree(const std::vector<compiler::CoreProgram> &cores) const {
        const int c = debug_core();
        if (c < 0 || c >= (int)cores.size()) return;
        std::cerr << "program tree of core " << c << ":\n" << compiler::print_program_tree(cores[c].tree);
    }
    // The debug core's instruction streams.
    void dump_streams(const Program &program) const {
        const int c = debug_core();
        if (c < 0 || c >= (int)program.cores.size()) return;
        Program one = program;
        for (int i = 0; i < (int)one.cores.size(); i++) {
            if (i != c) one.cores[i] = CoreStreams{};
        }
        std::cerr << "streams of core " << c << ":\n" << disassemble_program(one);
    }

    // collect_kernel_tensors: the arguments the region reads (inputs, in order of first use) and
    // writes (outputs), each with its static shape and device layout.
    KernelTensors collect_kernel_tensors(const compiler::DeviceRegion &region, const MachineDescription &m) const {
        TensorUses uses(in_.tensors);
        region.body.accept(&uses);
        KernelTensors kt;
        for (const auto &n : uses.order) {
            if (!uses.stored.count(n)) kt.names.push_back(n);
        }
        for (const auto &n : uses.order) {
            if (uses.stored.count(n)) kt.names.push_back(n);
        }
        kt.buffer_exprs = uses.buffer_exprs;
        kt.interface.double_buffered = in_.double_buffered;
        kt.interface.computed_ahead = in_.computed_ahead;
        for (const std::string &n : kt.names) {
            auto found = in_.tensors.find(n);
            const SpyreTensorInfo *info = found == in_.tensors.end() ? nullptr : &found->second;
            if (!info) {
                throw CompileError("Spyre: the kernel argument '" + n +
                                   "' has no static shape; declare it with spyre::constrain_tensor(...)");
            }
            ProgramArgument a;
            a.name = info->argument_name.empty() ? n : info->argument_name;
            a.kind = uses.stored.count(n) ? ArgKind::Output : ArgKind::Input;
            if (!compiler::spyre_dtype(info->type, &a.shape.dtype)) {
                std::ostringstream type;
                type << info->type;
                throw CompileError("Spyre: the kernel argument '" + n + "' has type " + type.str() +
                                   ", which Spyre does not support (float32, float16, int32, int8): " +
                                   compiler::spyre_type_fix(info->type));
            }
            a.shape.extent.assign(info->extents.begin(), info->extents.end());
            a.layout = default_layout(a.shape, m.stick_bytes, info->stick_dim);
            a.layout.padded.assign(info->padded.begin(), info->padded.end());
            if (!info->order.empty()) a.layout.order = info->order;  // spyre::set_device_layout
            compiler::KernelTensor t;
            t.name = n;
            t.arg_index = (int)kt.args.size();
            t.type = info->type;
            t.is_output = a.kind == ArgKind::Output;
            t.padded.assign(info->padded.begin(), info->padded.end());
            t.layout = a.layout;
            kt.interface.tensors[n] = t;
            kt.args.push_back(a);
        }
        return kt;
    }

    // select_core_instructions on every core of the region, each checked against the scratchpad budget.
    std::vector<compiler::CoreProgram> select_instructions_per_core(const compiler::DeviceRegion &region,
                                                                   compiler::KernelInterface &iface,
                                                                   const MachineDescription &m) const {
        std::vector<compiler::CoreProgram> cores(region.cores);
        for (int c = 0; c < region.cores; c++) {
            stop_at_deadline(c == 0 ? "find_device_region" : "select_core_instructions");
            cores[c] = compiler::select_core_instructions(region.body, region.core_var, c, m, iface, region.distributed,
                                                          region.cores);
            if (cores[c].scratchpad_peak > m.scratchpad_bytes) {
                throw CompileError("Spyre: scratchpad footprint over budget in the core loop '" + region.core_var +
                                   "': core " + std::to_string(c) + " needs " + std::to_string(cores[c].scratchpad_peak) +
                                   " bytes, the budget is " + std::to_string(m.scratchpad_bytes) +
                                   " bytes per core; live at the peak: " + cores[c].scratchpad_peak_description +
                                   ". Use smaller tiles or stage less at this loop level");
            }
        }
        return cores;
    }

    // The program's scalar parameters, in the order instruction selection met them.
    static std::vector<ScalarParam> scalar_params(compiler::KernelInterface &iface) {
        std::vector<ScalarParam> out;
        for (const std::string &pname : iface.scalar_params) {
            ScalarParam sp;
            sp.name = pname;
            if (!compiler::spyre_dtype(iface.param_types[pname], &sp.dtype)) {
                throw CompileError("Spyre: the scalar parameter '" + pname + "' has a type Spyre does not support");
            }
            out.push_back(sp);
        }
        return out;
    }

    // <kernel>.spyre and its disassembly, when the options name an output directory.
    void write_program_files(const Program &program, const std::vector<uint8_t> &bytes) const {
        if (in_.options.output_dir.empty()) return;
        const std::string base = in_.options.output_dir + "/" + kernel();
        try {
            write_file_bytes(base + ".spyre", bytes);
        } catch (const spyre::Error &e) {
            throw CompileError("Spyre: " + std::string(e.what()) + " (does the output directory exist?)");
        }
        const std::string text = disassemble_program(program);
        try {
            write_file_bytes(base + ".spyre.txt", std::vector<uint8_t>(text.begin(), text.end()));
        } catch (const spyre::Error &e) {
            throw CompileError("Spyre: " + std::string(e.what()));
        }
    }

    // A distributed region: every core gathers the same buffers to core 0, each a part of its own.
    static void check_gathered_parts(const std::vector<compiler::CoreProgram> &cores, const std::string &core_loop) {
        const auto &first = cores[0].gathered;
        for (size_t c = 1; c < cores.size(); c++) {
            const auto &mine = cores[c].gathered;
            bool same = mine.size() == first.size();
            for (size_t i = 0; same && i < mine.size(); i++) same = mine[i].buffer == first[i].buffer;
            if (!same) {
                throw CompileError("Spyre: in the core loop '" + core_loop + "': core " + std::to_string(c) +
                                   " and core 0 write different scratchpad buffers allocated outside the loop; every "
                                   "core must produce its part of the same buffers");
            }
            for (size_t d = 0; d < c; d++) {
                for (size_t i = 0; i < mine.size(); i++) {
                    const auto &a = mine[i], &b = cores[d].gathered[i];
                    if (a.lo < b.hi && b.lo < a.hi) {
                        throw CompileError("Spyre: in the core loop '" + core_loop + "': cores " + std::to_string(d) +
                                           " and " + std::to_string(c) + " both write bytes of the scratchpad buffer '" +
                                           a.buffer + "' allocated outside the loop; each core must produce its own "
                                           "part (index the buffer by the core loop) to be gathered into core 0");
                    }
                }
            }
        }
    }

    const SpyreLoweringOptions options_;
    const std::shared_ptr<const ScheduleContext> context_;
    LoweringInputs in_;
    const int dbg_ = debug_level();
};

}  // namespace

SpyreLoweringOptions lowering_options_from_driver(const std::string &default_kernel_name) {
    SpyreLoweringOptions o;
    const DriverOptions d = driver_options();
    o.kernel_name = d.function_name.empty() ? default_kernel_name : d.function_name;
    o.output_dir = d.output_dir;
    return o;
}

// The algorithm sees the host build's shapes, not the padded ones (true_tensor_shapes.h); this
// runs before Halide lowers anything, so bounds inference already works with the true values.
static void use_host_shapes_in_algorithm(const std::vector<Func> &outputs, const ScheduleContext &context) {
    std::vector<Function> functions;
    for (const Func &f : outputs) functions.push_back(f.function());
    const int replaced = compiler::use_true_tensor_shapes(functions, context.tensors());
    if (debug_level() >= 1 && replaced > 0) {
        std::cerr << "spyre: " << replaced << " read(s) of a tensor's extent, min or stride in the algorithm use the "
                  << "true shape (the host build's), not the padded one\n";
    }
}

void attach_spyre_lowering(Pipeline p, const SpyreLoweringOptions &options, std::shared_ptr<const ScheduleContext> context) {
    use_host_shapes_in_algorithm(p.outputs(), *context);
    p.add_custom_lowering_pass(new SpyreLoweringPass(options, std::move(context)));
}

void attach_spyre_lowering(Func &output, const SpyreLoweringOptions &options, std::shared_ptr<const ScheduleContext> context) {
    use_host_shapes_in_algorithm({output}, *context);
    output.add_custom_lowering_pass(new SpyreLoweringPass(options, std::move(context)));
}

void attach_spyre_lowering(Pipeline p, const SpyreLoweringOptions &options) {
    attach_spyre_lowering(p, options, ScheduleContext::active_shared());
}

void attach_spyre_lowering(Func &output, const SpyreLoweringOptions &options) {
    attach_spyre_lowering(output, options, ScheduleContext::active_shared());
}

}  // namespace spyre
