// The Spyre lowering pass, as a table of contents. It runs at the end of
// Halide's lower() (after flattening, vectorization and loop partitioning;
// see docs/compiler.md) and, in order:
//   1. find_device_region          the one loop split across cores
//   2. kernel tensors              the arguments the region reads and writes
//   3. select_core_instructions    per core: DMA / PT / SFU instructions in a loop tree,
//                                  scratchpad placement and the budget check
//   4. fold_loops                  single-instruction loops into instruction dimensions
//   4a. block_sfu_rows             multi-instruction SFU row loops into blocks of rows
//   4a'. forward_sfu_copies        SFU results written where a copy would have moved them
//   4a''. elide_zero_fills         zero fills a PT matmul overwrites whole: C = A.B instead
//   4b. apply_double_buffering     two copies of requested buffers, unroll by two, software
//                                  pipeline; the enclosing loop's stores spread into the next iteration
//   4c. share_loads_over_ring      across cores: requested tiles loaded once per chain of cores
//   5. emit_core_streams           tokens between units, the DMA/PT/SFU streams
//   5a. address_through_dram_windows  dma.window where a core reaches past max_core_span_bytes of a tensor
//   6. validate_program            the same validator the runtime uses
//   6a. dry_run_program            the program run once, timing only: address rules and deadlocks
//   7. write <kernel>.spyre and <kernel>.spyre.txt
//   8. make_runtime_call           embed the program, replace the region by the runtime call
//   9. strip_spyre_argument_checks Halide's argument checks the runtime replaces
// SPYRE_DEBUG=1 prints a summary per kernel, 2 also the IR before and the program after.
#include "spyre_lowering.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "argument_checks.h"
#include "device_region.h"
#include "double_buffering.h"
#include "dram_windows.h"
#include "dry_run.h"
#include "instruction_selection.h"
#include "loop_folding.h"
#include "ring_sharing.h"
#include "sfu_copy_forwarding.h"
#include "zero_fill_elision.h"
#include "sfu_row_blocking.h"
#include "runtime_call.h"
#include "spyre/assembler.h"
#include "spyre/program_format.h"
#include "spyre/validator.h"
#include "spyre_target.h"
#include "spyre_types.h"
#include "synchronization.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;
using namespace Halide::Internal;

namespace {

int debug_level() {
    const char *d = std::getenv("SPYRE_DEBUG");
    return d ? std::atoi(d) : 0;
}

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
    explicit SpyreLoweringPass(SpyreLoweringOptions o)
        : opt_(std::move(o)),
          tensors_(snapshot_tensor_registry()),
          double_buffered_(compiler::double_buffering_requests()),
          ring_shared_(compiler::ring_sharing_requests()) {}

    Stmt mutate(const Stmt &s) override {
        try {
            return lower(s);
        } catch (const CompileError &e) {
            throw Halide::CompileError(std::string(e.what()) + "\n");
        } catch (const spyre::Error &e) {
            throw Halide::CompileError("Spyre: " + std::string(e.what()) + "\n");
        }
    }

private:
    Stmt lower(const Stmt &s) {
        const MachineDescription &m = default_machine();
        const int dbg = debug_level();
        if (dbg >= 2) std::cerr << "spyre: IR before Spyre lowering of " << opt_.kernel_name << ":\n" << s << "\n";

        std::vector<std::string> output_names;
        for (const auto &kv : tensors_) {
            if (kv.second.is_output) output_names.push_back(kv.first);
        }
        compiler::DeviceRegion region = compiler::find_device_region(s, m, output_names);

        // Kernel tensors: inputs in order of first use, then outputs.
        TensorUses uses(tensors_);
        region.body.accept(&uses);
        std::vector<std::string> names;
        for (const auto &n : uses.order) {
            if (!uses.stored.count(n)) names.push_back(n);
        }
        for (const auto &n : uses.order) {
            if (uses.stored.count(n)) names.push_back(n);
        }
        compiler::KernelInterface iface;
        iface.double_buffered = double_buffered_;
        Program program;
        program.kernel_name = opt_.kernel_name;
        program.machine_fingerprint = m.structural_fingerprint();
        for (const std::string &n : names) {
            auto found = tensors_.find(n);
            const SpyreTensorInfo *info = found == tensors_.end() ? nullptr : &found->second;
            if (!info) {
                throw CompileError("Spyre: the kernel argument '" + n +
                                   "' has no static shape; declare it with spyre::constrain_tensor(...)");
            }
            ProgramArgument a;
            a.name = n;
            a.kind = uses.stored.count(n) ? ArgKind::Output : ArgKind::Input;
            if (!compiler::spyre_dtype(info->type, &a.shape.dtype)) {
                throw CompileError("Spyre: the kernel argument '" + n + "' has a type Spyre does not support");
            }
            a.shape.extent.assign(info->extents.begin(), info->extents.end());
            a.layout = default_layout(a.shape, m.stick_bytes, info->stick_dim);
            a.layout.padded.assign(info->padded.begin(), info->padded.end());
            if (!info->order.empty()) a.layout.order = info->order;  // spyre::set_device_layout
            compiler::KernelTensor t;
            t.name = n;
            t.arg_index = (int)program.args.size();
            t.type = info->type;
            t.is_output = a.kind == ArgKind::Output;
            t.padded.assign(info->padded.begin(), info->padded.end());
            t.layout = a.layout;
            iface.tensors[n] = t;
            program.args.push_back(a);
        }

        // Per core: instruction selection, folding, double buffering; then ring sharing
        // across the cores; then synchronization per core.
        program.cores.resize(m.cores);
        int64_t peak = 0;
        std::vector<compiler::CoreProgram> core_programs(region.cores);
        for (int c = 0; c < region.cores; c++) {
            compiler::CoreProgram cp =
                compiler::select_core_instructions(region.body, region.core_var, c, m, iface, region.distributed,
                                                   region.cores);
            if (cp.scratchpad_peak > m.scratchpad_bytes) {
                throw CompileError("Spyre: scratchpad footprint over budget in the core loop '" + region.core_var +
                                   "': core " + std::to_string(c) + " needs " + std::to_string(cp.scratchpad_peak) +
                                   " bytes, the budget is " + std::to_string(m.scratchpad_bytes) +
                                   " bytes per core; live at the peak: " + cp.scratchpad_peak_description +
                                   ". Use smaller tiles or stage less at this loop level");
            }
            compiler::fold_loops(cp.tree);
            cp.scratchpad_peak = compiler::block_sfu_rows(cp.tree, cp.scratchpad_peak, m);
            compiler::forward_sfu_copies(cp.tree);
            compiler::elide_zero_fills(cp.tree);
            peak = std::max(peak, cp.scratchpad_peak);
            compiler::apply_double_buffering(cp.tree, cp.pingpong, m.stick_bytes);
            core_programs[c] = std::move(cp);
        }
        if (region.distributed) check_gathered_parts(core_programs, region.core_var);
        std::vector<std::vector<compiler::ProgramNode> *> trees;
        for (auto &cp : core_programs) trees.push_back(&cp.tree);
        compiler::share_loads_over_ring(trees, ring_shared_, m);
        for (int c = 0; c < region.cores; c++) {
            program.cores[c] = compiler::emit_core_streams(core_programs[c].tree, m);
            compiler::address_through_dram_windows(program.cores[c], program.args, m);
        }
        for (const std::string &pname : iface.scalar_params) {
            ScalarParam sp;
            sp.name = pname;
            if (!compiler::spyre_dtype(iface.param_types[pname], &sp.dtype)) {
                throw CompileError("Spyre: the scalar parameter '" + pname + "' has a type Spyre does not support");
            }
            program.params.push_back(sp);
        }
        try {
            validate_program(program, m);
        } catch (const spyre::Error &e) {
            throw CompileError("Spyre: internal error: the generated program is invalid: " + std::string(e.what()));
        }
        compiler::dry_run_program(program, m);
        std::vector<uint8_t> bytes = encode_program(program);
        if (dbg >= 1) {
            std::cerr << "spyre: kernel " << program.kernel_name << ": " << region.cores << " cores, "
                      << program.instruction_count() << " instructions, " << bytes.size()
                      << " bytes, scratchpad peak " << peak << " bytes per core\n";
        }
        if (dbg >= 2) std::cerr << disassemble_program(program);
        if (!opt_.output_dir.empty()) {
            const std::string base = opt_.output_dir + "/" + opt_.kernel_name;
            try {
                write_file_bytes(base + ".spyre", bytes);
            } catch (const spyre::Error &e) {
                throw CompileError("Spyre: " + std::string(e.what()) + " (does the output directory exist?)");
            }
            std::ofstream txt(base + ".spyre.txt");
            txt << disassemble_program(program);
            if (!txt) throw CompileError("Spyre: cannot write " + base + ".spyre.txt");
        }

        compiler::RuntimeCallArguments call;
        call.kernel_name = program.kernel_name;
        call.program = std::move(bytes);
        for (const std::string &n : names) call.buffers.push_back(uses.buffer_exprs.at(n));
        call.has_user_context = opt_.user_context;
        for (const std::string &pname : iface.scalar_params) {
            call.scalar_params.push_back(
                Variable::make(iface.param_types[pname], pname, iface.param_objects[pname]));
        }
        Stmt result = compiler::replace_statement(s, region.node, compiler::make_runtime_call(call));
        std::set<std::string> name_set(names.begin(), names.end());
        return compiler::strip_spyre_argument_checks(result, name_set);
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

    SpyreLoweringOptions opt_;
    std::map<std::string, SpyreTensorInfo> tensors_;
    std::set<std::string> double_buffered_;
    std::set<std::string> ring_shared_;
};

}  // namespace

SpyreLoweringOptions lowering_options_from_driver(const std::string &default_kernel_name) {
    SpyreLoweringOptions o;
    const DriverOptions &d = driver_options();
    o.kernel_name = d.function_name.empty() ? default_kernel_name : d.function_name;
    o.output_dir = d.output_dir;
    return o;
}

void attach_spyre_lowering(Pipeline p, const SpyreLoweringOptions &options) {
    p.add_custom_lowering_pass(new SpyreLoweringPass(options));
}

void attach_spyre_lowering(Func &output, const SpyreLoweringOptions &options) {
    output.add_custom_lowering_pass(new SpyreLoweringPass(options));
}

void reattach_spyre_lowering(Pipeline p, const SpyreLoweringOptions &options) {
    p.clear_custom_lowering_passes();
    attach_spyre_lowering(p, options);
}

}  // namespace spyre
