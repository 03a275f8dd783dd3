// Operand rewrites across loop iterations (see loop_rewrites.h).
#include "program_tree/loop_rewrites.h"

namespace spyre {
namespace compiler {

void substitute_level(ProgramNode &n, size_t level, int64_t value) {
    if (n.kind == ProgramNode::Kind::Loop) {
        for (ProgramNode &c : n.body) substitute_level(c, level, value);
        return;
    }
    for (int f = 0; f < isa::opcode_spec(n.inst.op).num_fields; f++) {
        SymOperand &o = n.inst.f[f];
        o.base += o.coef_at(level) * value;
        if (o.coef.size() > level) o.coef.erase(o.coef.begin() + (std::ptrdiff_t)level);
    }
}

void shift_iteration(ProgramNode &n, size_t level, int64_t iterations) {
    if (n.kind == ProgramNode::Kind::Loop) {
        for (ProgramNode &c : n.body) shift_iteration(c, level, iterations);
        return;
    }
    for (int f = 0; f < isa::opcode_spec(n.inst.op).num_fields; f++) {
        n.inst.f[f].base += n.inst.f[f].coef_at(level) * iterations;
    }
}

}  // namespace compiler
}  // namespace spyre
