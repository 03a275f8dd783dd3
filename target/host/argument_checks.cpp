// Removing Halide's argument checks the Spyre runtime replaces (see argument_checks.h).
#include "host/argument_checks.h"

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

}  // namespace compiler
}  // namespace spyre
