// The Spyre disassembler: Program -> text in the syntax of assembler.h, such
// that assembling the text gives back the identical program.
//
// Driven entirely by the isa.def tables: every field of an instruction is
// printed as name=value in table order; affine operands as `base+stride*Ld`
// (zero strides omitted, the base always printed); Type fields as dtype names
// and Arg fields as argument names when that is unambiguous, integers
// otherwise. Instructions are indented two spaces per open hardware loop;
// decoded instructions carry a `; offset N` comment (the assembler ignores it).
//
// Works on any decoded program, valid or not (spyre-objdump --no-validate):
// values that have no name are printed as integers, and cores whose three
// streams are empty are omitted (the assembler creates them empty).
#include <cctype>
#include <sstream>

#include "spyre/assembler.h"

namespace spyre {

namespace {

// Names that the assembler reads back as a single token naming this entry.
bool is_plain_name(const std::string &s) {
    if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    for (char c : s) {
        if (!(std::isalnum((unsigned char)c) || c == '_' || c == '.')) return false;
    }
    return true;  // (an argument called C is read back as that argument, not as the core index)
}

std::string integer_list(const std::vector<int64_t> &values) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < values.size(); i++) os << (i ? "," : "") << values[i];
    os << "]";
    return os.str();
}

void print_affine(std::ostream &os, const isa::Operand &o) {
    os << o.base;
    for (int d = 0; d < isa::kMaxLoopDepth; d++) {
        if (o.stride[d] == 0) continue;
        os << (o.stride[d] < 0 ? "-" : "+") << (o.stride[d] < 0 ? -(int64_t)o.stride[d] : (int64_t)o.stride[d]) << "*L"
           << d;
    }
}

class Disassembler {
public:
    explicit Disassembler(const Program &p) : program_(p) {
        for (size_t i = 0; i < p.args.size(); i++) {
            size_t same = 0;
            for (const auto &a : p.args) same += a.name == p.args[i].name;
            arg_has_unique_name_.push_back(same == 1 && is_plain_name(p.args[i].name));
        }
    }

    std::string run() {
        os_ << ".kernel " << program_.kernel_name << "\n";
        os_ << ".machine 0x" << std::hex << program_.machine_fingerprint << std::dec << "\n";
        for (const auto &s : program_.params) os_ << ".param " << s.name << " " << dtype_name(s.dtype) << "\n";
        for (const auto &a : program_.args) {
            std::vector<int64_t> order(a.layout.order.begin(), a.layout.order.end());
            os_ << ".arg " << a.name << " " << arg_kind_name(a.kind) << " " << dtype_name(a.shape.dtype)
                << " extent=" << integer_list(a.shape.extent) << " stick=" << a.layout.stick_dim
                << " order=" << integer_list(order) << " padded=" << integer_list(a.layout.padded) << "\n";
        }
        for (size_t c = 0; c < program_.cores.size(); c++) {
            const CoreStreams &core = program_.cores[c];
            bool empty = true;
            for (const auto &stream : core.unit) empty = empty && stream.empty();
            if (empty) continue;
            os_ << "\n.core " << c << "\n";
            for (int u = 0; u < isa::kNumUnits; u++) {
                if (core.unit[u].empty()) continue;
                os_ << ".unit " << isa::unit_name((isa::Unit)u) << "\n";
                stream(core.unit[u]);
            }
        }
        return os_.str();
    }

private:
    const Program &program_;
    std::vector<bool> arg_has_unique_name_;
    std::ostringstream os_;

    void stream(const std::vector<isa::Instruction> &instructions) {
        int depth = 0;
        for (const isa::Instruction &inst : instructions) {
            if (inst.op == isa::Opcode::EndLoop && depth > 0) depth--;
            os_ << std::string(2 * depth, ' ');
            instruction(inst);
            os_ << "\n";
            if (inst.op == isa::Opcode::Loop) depth++;
        }
    }

    void instruction(const isa::Instruction &inst) {
        const isa::OpcodeSpec &spec = isa::opcode_spec(inst.op);
        os_ << spec.mnemonic;
        for (int f = 0; f < spec.num_fields; f++) {
            const isa::FieldSpec &fs = spec.fields[f];
            const isa::Operand &o = inst.f[f];
            os_ << " " << fs.name << "=";
            if (isa::is_affine(fs.kind) || !o.is_constant()) {
                print_affine(os_, o);
            } else if (fs.kind == isa::FieldKind::Type && o.base >= 0 && o.base < kNumDTypes) {
                os_ << dtype_name((DType)o.base);
            } else if (fs.kind == isa::FieldKind::Arg && o.base >= 0 && o.base < (int64_t)program_.args.size() &&
                       arg_has_unique_name_[o.base]) {
                os_ << program_.args[o.base].name;
            } else {
                os_ << o.base;
            }
        }
        if (inst.file_offset != 0) os_ << "  ; offset " << inst.file_offset;
    }
};

}  // namespace

std::string disassemble_program(const Program &p) { return Disassembler(p).run(); }

}  // namespace spyre
