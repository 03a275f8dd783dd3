// The program tree printer (see program_tree_printer.h).
#include "program_tree/program_tree_printer.h"

#include <sstream>

namespace spyre {
namespace compiler {

namespace {

void print_operand(std::ostringstream &os, const SymOperand &o) {
    os << o.base;
    for (size_t l = 0; l < o.coef.size(); l++) {
        if (o.coef[l] == 0) continue;
        os << (o.coef[l] < 0 ? " - " : " + ") << (o.coef[l] < 0 ? -o.coef[l] : o.coef[l]) << "*L" << l;
    }
    if (o.temporary) os << " (temp)";
}

const char *role_name(RingShare::Role r) {
    switch (r) {
    case RingShare::Role::First: return "first";
    case RingShare::Role::Middle: return "middle";
    case RingShare::Role::Last: return "last";
    case RingShare::Role::Gathered: return "gathered";
    case RingShare::Role::None: break;
    }
    return "none";
}

void print_nodes(std::ostringstream &os, const std::vector<ProgramNode> &nodes, int depth) {
    const std::string indent(2 * depth + 2, ' ');
    for (const ProgramNode &n : nodes) {
        if (n.kind == ProgramNode::Kind::Loop) {
            os << indent << "loop L" << depth << " '" << n.loop_name << "' x " << n.trip;
            if (n.pipelined) os << " (pipelined)";
            os << " {\n";
            print_nodes(os, n.body, depth + 1);
            os << indent << "}\n";
            continue;
        }
        const isa::OpcodeSpec &spec = isa::opcode_spec(n.inst.op);
        os << indent << spec.mnemonic;
        if (spec.unit == isa::Unit::Any) os << " [" << isa::unit_name(n.inst.unit()) << "]";
        for (int i = 0; i < spec.num_fields; i++) {
            os << " " << spec.fields[i].name << "=";
            print_operand(os, n.inst.f[i]);
        }
        if (!n.inst.func.empty()) os << "  # " << n.inst.func;
        if (n.prologue_load) os << " (prologue load)";
        if (n.inst.ring.role != RingShare::Role::None) {
            os << " (ring " << role_name(n.inst.ring.role) << ", up " << n.inst.ring.upstream << ", down "
               << n.inst.ring.downstream;
            if (n.inst.ring.role == RingShare::Role::Gathered) {
                os << ", share " << n.inst.ring.position << " of " << n.inst.ring.chain_cores;
                if (n.inst.ring.riders > 0) os << ", " << n.inst.ring.riders << " loads before it ride its rounds";
            }
            os << ")";
        }
        os << "\n";
    }
}

}  // namespace

std::string print_program_tree(const std::vector<ProgramNode> &tree) {
    std::ostringstream os;
    print_nodes(os, tree, 0);
    return os.str();
}

}  // namespace compiler
}  // namespace spyre
