// The algorithm's reads of a constrained tensor's shape become the host build's constants
// (see true_tensor_shapes.h).
#include "true_tensor_shapes.h"

#include <set>

namespace spyre {
namespace compiler {

using namespace Halide;
using namespace Halide::Internal;

namespace {

// `<tensor>.extent.<d>`, `<tensor>.min.<d>`, `<tensor>.stride.<d>` -> the host build's value.
std::map<std::string, Expr> host_shape_values(const std::map<std::string, SpyreTensorInfo> &tensors) {
    std::map<std::string, Expr> values;
    for (const auto &[tensor, info] : tensors) {
        const std::string &name = info.shape_name.empty() ? tensor : info.shape_name;
        int64_t stride = 1;
        for (size_t d = 0; d < info.extents.size(); d++) {
            const std::string dim = "." + std::to_string(d);
            values[name + ".extent" + dim] = Expr(info.extents[d]);
            values[name + ".min" + dim] = Expr(0);
            values[name + ".stride" + dim] = Expr((int)stride);
            stride *= info.extents[d];
        }
    }
    return values;
}

class ReplaceShapeReads : public IRMutator {
public:
    explicit ReplaceShapeReads(const std::map<std::string, Expr> &values) : values_(values) {}
    int replaced = 0;

private:
    const std::map<std::string, Expr> &values_;
    using IRMutator::visit;
    Expr visit(const Variable *op) override {
        // Only the buffer's own shape variables (a Parameter or a bound Buffer behind them, or
        // none after Halide's rewrites); a loop or let variable of the same name cannot exist,
        // since Halide names those after Funcs and Vars, never with `.extent.`.
        auto it = values_.find(op->name);
        if (it == values_.end() || op->reduction_domain.defined()) return op;
        replaced++;
        return cast(op->type, it->second);
    }
};

// The reduction domains the definitions refer to, each once.
class CollectReductionDomains : public IRGraphVisitor {
public:
    std::vector<ReductionDomain> domains;

private:
    std::set<const void *> seen_;
    using IRGraphVisitor::visit;
    void visit(const Variable *op) override {
        if (op->reduction_domain.defined() && seen_.insert(op->reduction_domain.domain().data()).second) {
            domains.push_back(op->reduction_domain);
        }
    }
};

}  // namespace

int use_true_tensor_shapes(const std::vector<Function> &outputs, const std::map<std::string, SpyreTensorInfo> &tensors) {
    const std::map<std::string, Expr> values = host_shape_values(tensors);
    std::map<std::string, Function> env;
    for (const Function &f : outputs) {
        env[f.name()] = f;
        for (const auto &kv : find_transitive_calls(f)) env.insert(kv);
    }
    ReplaceShapeReads replace(values);
    CollectReductionDomains rdoms;
    for (auto &[name, f] : env) {
        std::vector<Definition *> defs;
        if (f.has_pure_definition()) defs.push_back(&f.definition());
        for (int i = 0; i < (int)f.updates().size(); i++) defs.push_back(&f.update(i));
        for (Definition *def : defs) {
            def->accept(&rdoms);
            def->mutate(&replace);
        }
    }
    for (ReductionDomain &rdom : rdoms.domains) rdom.mutate(&replace);
    return replace.replaced;
}

}  // namespace compiler
}  // namespace spyre
