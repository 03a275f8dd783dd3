// Finding the loop split across cores (see device_region.h).
#include "selection/device_region.h"

#include <algorithm>
#include <vector>

#include "diagnostics.h"

namespace spyre {
namespace compiler {

using namespace Halide::Internal;

namespace {
class ParallelLoops : public IRVisitor {
public:
    std::vector<const For *> loops;
    std::vector<std::string> outputs;
    const ProducerConsumer *output_production = nullptr;
    // The scratchpad Allocates around the output's production, outermost first, when there is no core loop.
    const IRNode *single_core_region = nullptr;
    Stmt single_core_body;

private:
    using IRVisitor::visit;
    void visit(const For *op) override {
        if (op->for_type == ForType::Parallel) loops.push_back(op);
        IRVisitor::visit(op);
    }
    void visit(const ProducerConsumer *op) override {
        if (op->is_producer && !output_production &&
            std::find(outputs.begin(), outputs.end(), op->name) != outputs.end()) {
            output_production = op;
            // Widen to the chain of VTCM Allocates directly around it (Halide hoists
            // them out of a core loop of extent 1 that it removed).
            single_core_region = op->body.get();
            single_core_body = op->body;
            for (auto it = allocates_.rbegin(); it != allocates_.rend(); ++it) {
                single_core_region = *it;
                single_core_body = Stmt(*it);
            }
        }
        std::vector<const Allocate *> saved;
        saved.swap(allocates_);
        IRVisitor::visit(op);
        allocates_.swap(saved);
    }
    void visit(const Allocate *op) override {
        if (op->memory_type == Halide::MemoryType::VTCM) allocates_.push_back(op);
        else allocates_.clear();
        IRVisitor::visit(op);
        if (!allocates_.empty() && allocates_.back() == op) allocates_.pop_back();
    }
    void visit(const Block *op) override {
        std::vector<const Allocate *> saved = allocates_;
        allocates_.clear();
        IRVisitor::visit(op);
        allocates_ = saved;
    }

    std::vector<const Allocate *> allocates_;  // VTCM Allocates enclosing the current node without other statements between
};
// The chain of scratchpad Allocates around the core loop and around the output's
// production (outermost first), to find the Allocate that encloses both.
class EnclosingAllocates : public IRVisitor {
public:
    const For *core_loop = nullptr;
    const ProducerConsumer *output_production = nullptr;
    std::vector<const Allocate *> around_loop, around_output;
    bool loop_inside_output = false;

private:
    using IRVisitor::visit;
    std::vector<const Allocate *> stack_;
    bool in_output_ = false;
    void visit(const Allocate *op) override {
        const bool vtcm = op->memory_type == Halide::MemoryType::VTCM;
        if (vtcm) stack_.push_back(op);
        IRVisitor::visit(op);
        if (vtcm) stack_.pop_back();
    }
    void visit(const For *op) override {
        if (op == core_loop) {
            around_loop = stack_;
            loop_inside_output = in_output_;
        }
        IRVisitor::visit(op);
    }
    void visit(const ProducerConsumer *op) override {
        if (op == output_production) {
            around_output = stack_;
            in_output_ = true;
            IRVisitor::visit(op);
            in_output_ = false;
            return;
        }
        IRVisitor::visit(op);
    }
};

// The Func of the first atomic() update in a statement, if any.
class FirstAtomic : public IRVisitor {
public:
    std::string producer;

private:
    using IRVisitor::visit;
    void visit(const Atomic *op) override {
        if (producer.empty()) producer = op->producer_name;
        IRVisitor::visit(op);
    }
};
}  // namespace

DeviceRegion find_device_region(const Stmt &s, const MachineDescription &m, const std::vector<std::string> &outputs) {
    ParallelLoops finder;
    finder.outputs = outputs;
    s.accept(&finder);
    if (finder.loops.empty() && finder.output_production) {
        DeviceRegion r;
        r.node = finder.single_core_region;
        r.body = finder.single_core_body;
        r.cores = 1;
        return r;
    }
    if (finder.loops.empty()) {
        // Without a core loop, the output's production is the single-core region (above); here there is
        // neither: Halide's lowering removed it (seen with softmax and layernorm tensors past about 2^29
        // elements, docs/reliability.md), or the output is not a Func the schedule computes.
        std::string names;
        for (const std::string &o : outputs) names += (names.empty() ? "'" : ", '") + o + "'";
        throw CompileError("Spyre: the lowered pipeline has no loop split across the cores and no production of its "
                           "output " + names + ": Halide's lowering removed it, so there is nothing to put on the "
                           "device (seen with softmax and layernorm tensors past about 2^29 = 536870912 elements: "
                           "use a smaller shape)");
    }
    if (finder.loops.size() > 1) {
        throw CompileError("Spyre: loops '" + finder.loops[0]->name + "' and '" + finder.loops[1]->name +
                           "' are both parallel; exactly one loop may be split across the cores");
    }
    const For *loop = finder.loops[0];
    const IntImm *extent = loop->extent.as<IntImm>();
    const IntImm *min = loop->min.as<IntImm>();
    if (!extent || !min) {
        throw CompileError("Spyre: the core loop '" + loop->name +
                           "' does not have a compile-time constant extent; split it by a constant so the outer "
                           "extent is the number of cores");
    }
    if (extent->value > m.cores || extent->value < 1) {
        throw CompileError("Spyre: the core loop '" + loop->name + "' has extent " + std::to_string(extent->value) +
                           " but the machine has " + std::to_string(m.cores) +
                           " cores; the work division is static, one iteration per core");
    }
    if (min->value != 0) {
        throw CompileError("Spyre: the core loop '" + loop->name + "' must start at 0");
    }
    // A reduction split across the cores (atomic() with a parallel RVar): every core would combine its
    // partial result into the same output.
    FirstAtomic atomic;
    loop->body.accept(&atomic);
    const std::string &atomic_func = atomic.producer;
    if (!atomic_func.empty()) {
        throw CompileError("Spyre: in Func '" + atomic_func + "': the core loop '" + loop->name +
                           "' splits its reduction across the cores with atomic(), so every core would add its "
                           "partial result into the same output, which the cores cannot share. Use rfactor "
                           "instead: compute the intermediate's wrapper at the root in the scratchpad "
                           "(compute_root().store_in(MemoryType::VTCM)) with its core dimension parallel; core 0 "
                           "then gathers the parts over the ring and combines them (docs/scheduling.md)");
    }
    DeviceRegion r;
    r.node = loop;
    r.body = loop->body;
    r.core_var = loop->name;
    r.cores = (int)extent->value;
    if (finder.output_production) {
        EnclosingAllocates around;
        around.core_loop = loop;
        around.output_production = finder.output_production;
        s.accept(&around);
        if (!around.loop_inside_output) {
            // The outermost scratchpad Allocate around both the core loop and the output's production.
            const Allocate *common = nullptr;
            for (size_t i = 0; i < around.around_loop.size() && i < around.around_output.size(); i++) {
                if (around.around_loop[i] != around.around_output[i]) break;
                common = around.around_loop[i];
            }
            if (!common) {
                throw CompileError("Spyre: the core loop '" + loop->name + "' does not produce the output '" +
                                   finder.output_production->name +
                                   "', and no scratchpad buffer is allocated around both: compute the output inside "
                                   "the core loop, or, to combine per-core results after it, compute the buffer the "
                                   "core loop produces with compute_root().store_in(MemoryType::VTCM)");
            }
            r.node = common;
            r.body = Stmt(common);
            r.distributed = true;
        }
    }
    return r;
}

}  // namespace compiler
}  // namespace spyre
