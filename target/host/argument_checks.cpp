// Removing Halide's argument checks the Spyre runtime replaces (see argument_checks.h).
#include "host/argument_checks.h"

#include "diagnostics.h"

namespace spyre {
namespace compiler {

using namespace Halide;
using namespace Halide::Internal;

namespace {

class StripChecks : public IRMutator {
public:
    explicit StripChecks(const std::set<std::string> &b) : buffers_(b) {}

private:
    using IRMutator::visit;
    const std::set<std::string> &buffers_;

    bool names_spyre_buffer(const Call *c) const {
        for (const Expr &a : c->args) {
            if (const StringImm *s = a.as<StringImm>()) {
                // "Input buffer A", "Output buffer C", or a constraint name "A.stride.1".
                std::string v = s->value;
                for (const std::string &b : buffers_) {
                    if (v == "Input buffer " + b || v == "Output buffer " + b || v == b ||
                        v.rfind(b + ".", 0) == 0) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    Stmt visit(const AssertStmt *op) override {
        if (const Call *c = op->message.as<Call>()) {
            static const std::set<std::string> replaced = {
                "halide_error_access_out_of_bounds", "halide_error_constraint_violated", "halide_error_host_is_null",
                "halide_error_device_dirty_with_no_device_support", "halide_error_constraints_make_required_region_smaller"};
            if (replaced.count(c->name) && names_spyre_buffer(c)) return Evaluate::make(0);
        }
        return op;
    }
};

}  // namespace

Stmt strip_spyre_argument_checks(const Stmt &s, const std::set<std::string> &buffers) {
    StripChecks m(buffers);
    return m.mutate(s);
}

namespace {

class StaticInputReads : public IRVisitor {
public:
    StaticInputReads(const std::map<std::string, std::vector<int64_t>> &padded,
                     const std::map<std::string, std::vector<int64_t>> &true_extents)
        : padded_(padded), true_extents_(true_extents) {}

private:
    using IRVisitor::visit;
    void visit(const LetStmt *op) override {
        op->value.accept(this);
        lets_.push(op->name, op->value);
        op->body.accept(this);
        lets_.pop(op->name);
    }
    void visit(const AssertStmt *op) override {
        const Call *c = op->message.as<Call>();
        if (!c || c->name != "halide_error_access_out_of_bounds" || c->args.size() < 4) return;
        const StringImm *what = c->args[0].as<StringImm>();
        const std::string prefix = "Input buffer ";
        if (!what || what->value.rfind(prefix, 0) != 0) return;
        const std::string tensor = what->value.substr(prefix.size());
        auto it = padded_.find(tensor);
        const int64_t *dim = as_const_int(c->args[1]);
        if (it == padded_.end() || !dim || *dim < 0 || *dim >= (int64_t)it->second.size()) return;
        const int64_t *lo = as_const_int(resolved(c->args[2]));
        const int64_t *hi = as_const_int(resolved(c->args[3]));
        if (!lo || !hi) return;
        const int64_t extent = it->second[*dim];
        if (*lo >= 0 && *hi < extent) return;
        const std::vector<int64_t> &true_ext = true_extents_.at(tensor);
        const int64_t declared = *dim < (int64_t)true_ext.size() ? true_ext[*dim] : extent;
        throw CompileError("Spyre: the algorithm reads the input '" + tensor + "' in dimension " + std::to_string(*dim) +
                           " from element " + std::to_string(*lo) + " to " + std::to_string(*hi) +
                           ", but its extent there is " + std::to_string(declared) +
                           (declared != extent ? " (" + std::to_string(extent) + " with the padding to whole sticks)" : "") +
                           " (constrain_tensor): the shapes of a Spyre kernel are static, so every call would read "
                           "out of bounds; declare the extent the algorithm reads, or bound its reads (a boundary "
                           "condition, an index that stays inside the tensor, or tiles that divide the extent where "
                           "TailStrategy::RoundUp would read past it)");
    }

    // The expression with the enclosing lets substituted, simplified.
    Expr resolved(Expr e) const {
        for (int round = 0; round < 16; round++) {
            bool changed = false;
            class Subst : public IRMutator {
            public:
                const Scope<Expr> &lets;
                bool &changed;
                Subst(const Scope<Expr> &l, bool &c) : lets(l), changed(c) {}
                using IRMutator::visit;
                Expr visit(const Variable *v) override {
                    if (!lets.contains(v->name)) return v;
                    changed = true;
                    return lets.get(v->name);
                }
            } subst(lets_, changed);
            e = subst.mutate(e);
            if (!changed) break;
        }
        return simplify(e);
    }

    const std::map<std::string, std::vector<int64_t>> &padded_, &true_extents_;
    Scope<Expr> lets_;
};

}  // namespace

void check_static_input_reads(const Stmt &s, const std::map<std::string, std::vector<int64_t>> &padded,
                              const std::map<std::string, std::vector<int64_t>> &true_extents) {
    StaticInputReads check(padded, true_extents);
    s.accept(&check);
}

}  // namespace compiler
}  // namespace spyre
