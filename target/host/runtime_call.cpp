// The runtime call that replaces the device region (see runtime_call.h).
#include "host/runtime_call.h"

#include <atomic>
#include <cstring>

namespace spyre {
namespace compiler {

using namespace Halide;
using namespace Halide::Internal;

Stmt make_runtime_call(const RuntimeCallArguments &args) {
    static std::atomic<int> counter{0};
    const std::string blob_name = "spyre_program_" + args.kernel_name + "_" + std::to_string(counter++);
    Buffer<uint8_t> blob((int)args.program.size(), blob_name);
    std::memcpy(blob.data(), args.program.data(), args.program.size());
    Expr program = Variable::make(type_of<halide_buffer_t *>(), blob_name + ".buffer", blob);

    Expr buffers = Call::make(Handle(), Call::make_struct, args.buffers, Call::Intrinsic);

    Expr params;
    if (args.scalar_params.empty()) {
        params = reinterpret(Handle(), cast<uint64_t>(0));
    } else {
        std::vector<Expr> values;
        for (const Expr &p : args.scalar_params) values.push_back(cast<double>(p));
        params = Call::make(Handle(), Call::make_struct, values, Call::Intrinsic);
    }
    // Halide defines __user_context only for targets with the user_context feature; pass it then, else null.
    Expr user_context = args.has_user_context ? Variable::make(type_of<void *>(), "__user_context")
                                              : reinterpret(type_of<void *>(), cast<uint64_t>(0));
    Expr call = Call::make(Int(32), "spyre_run_program",
                           {user_context, program, (int)args.buffers.size(), buffers, (int)args.scalar_params.size(), params},
                           Call::Extern);
    const std::string status = "spyre_status";
    Expr status_var = Variable::make(Int(32), status);
    return LetStmt::make(status, call, AssertStmt::make(status_var == 0, status_var));
}

Stmt begin_kernel_call(const Stmt &pipeline, bool has_user_context) {
    Expr user_context = has_user_context ? Variable::make(type_of<void *>(), "__user_context")
                                         : reinterpret(type_of<void *>(), cast<uint64_t>(0));
    Expr call = Call::make(Int(32), "spyre_begin_kernel_call", {user_context}, Call::Extern);
    return Block::make(Evaluate::make(call), pipeline);
}

namespace {
class ReplaceStatement : public IRMutator {
public:
    ReplaceStatement(const IRNode *r, Stmt s) : region_(r), replacement_(std::move(s)) {}

    Stmt mutate(const Stmt &s) override {
        if (s.get() == region_) return replacement_;
        return IRMutator::mutate(s);
    }

private:
    const IRNode *region_;
    Stmt replacement_;
};
}  // namespace

Stmt replace_statement(const Stmt &s, const IRNode *region, const Stmt &replacement) {
    ReplaceStatement r(region, replacement);
    return r.mutate(s);
}

}  // namespace compiler
}  // namespace spyre
