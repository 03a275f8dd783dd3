// Finding the loop split across cores (see device_region.h).
#include "device_region.h"

#include <vector>

#include "spyre_lowering.h"

namespace spyre {
namespace compiler {

using namespace Halide::Internal;

namespace {
class ParallelLoops : public IRVisitor {
public:
    std::vector<const For *> loops;

private:
    using IRVisitor::visit;
    void visit(const For *op) override {
        if (op->for_type == ForType::Parallel) loops.push_back(op);
        IRVisitor::visit(op);
    }
};
}  // namespace

DeviceRegion find_device_region(const Stmt &s, const MachineDescription &m) {
    ParallelLoops finder;
    s.accept(&finder);
    if (finder.loops.empty()) {
        throw CompileError("Spyre: no loop is split across the cores: the schedule must mark exactly one loop of "
                           "constant extent <= " + std::to_string(m.cores) + " as .parallel() (the static core split)");
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
    DeviceRegion r;
    r.loop = loop;
    r.cores = (int)extent->value;
    return r;
}

}  // namespace compiler
}  // namespace spyre
