// Encoder and decoder of the binary program format (see program_format.h).
// The decoder is written for hostile input: every read is bounds-checked, every
// count is checked against the bytes that remain before anything is allocated.
#include "spyre/program_format.h"

#include <cstring>
#include <sstream>

#include "spyre/error.h"

namespace spyre {

namespace {

constexpr char kMagic[8] = {'S', 'P', 'Y', 'R', 'E', 'P', 'R', 'G'};

uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

// Names (kernel, parameters, arguments) are single tokens of the assembler's
// text form: printable ASCII other than space and ';' (which starts a comment).
bool is_name_character(char c) { return (unsigned char)c > 0x20 && (unsigned char)c <= 0x7e && c != ';'; }

class Writer {
public:
    std::vector<uint8_t> out;
    void u8(uint64_t v) { out.push_back((uint8_t)v); }
    void le(uint64_t v, int bytes) {
        for (int i = 0; i < bytes; i++) out.push_back((uint8_t)(v >> (8 * i)));
    }
    void str(const std::string &s) {
        if (s.empty() || s.size() > 255) throw Error("encode: name '" + s + "' must have 1..255 characters");
        for (char c : s) {
            if (!is_name_character(c)) {
                throw Error("encode: name '" + s + "' has a space, ';' or a non-printable character (names are single assembler tokens)");
            }
        }
        le(s.size(), 2);
        out.insert(out.end(), s.begin(), s.end());
    }
};

class Reader {
public:
    Reader(const uint8_t *d, size_t n) : data(d), size(n) {}
    const uint8_t *data;
    size_t size;
    size_t pos = 0;

    [[noreturn]] void fail(const std::string &msg, size_t at) const {
        throw Error("offset " + std::to_string(at) + ": " + msg);
    }
    void need(size_t n, const char *what) const {
        if (n > size - pos) fail(std::string("file truncated while reading ") + what, pos);
    }
    uint64_t le(int bytes, const char *what) {
        need(bytes, what);
        uint64_t v = 0;
        for (int i = 0; i < bytes; i++) v |= (uint64_t)data[pos + i] << (8 * i);
        pos += bytes;
        return v;
    }
    int64_t sle(int bytes, const char *what) {
        uint64_t v = le(bytes, what);
        if (bytes < 8) {
            uint64_t sign = 1ull << (8 * bytes - 1);
            v = (v ^ sign) - sign;
        }
        return (int64_t)v;
    }
    std::string str(const char *what) {
        size_t at = pos;
        uint64_t n = le(2, what);
        if (n == 0 || n > 255) fail(std::string(what) + ": length " + std::to_string(n) + " not in 1..255", at);
        need(n, what);
        std::string s(reinterpret_cast<const char *>(data + pos), n);
        for (char c : s) {
            if (!is_name_character(c)) {
                fail(std::string(what) + ": character " + std::to_string((unsigned char)c) +
                         " not allowed (names are printable ASCII without spaces or ';', so the text form can hold them)",
                     at);
            }
        }
        pos += n;
        return s;
    }
    size_t remaining() const { return size - pos; }
};

void encode_instruction(Writer &w, const isa::Instruction &inst) {
    const isa::OpcodeSpec &spec = isa::opcode_spec(inst.op);
    w.le((uint16_t)inst.op, 2);
    for (int i = 0; i < spec.num_fields; i++) {
        const auto &ks = isa::field_kind_spec(spec.fields[i].kind);
        const isa::Operand &o = inst.f[i];
        if (ks.encoded_bytes == 0) {
            w.le((uint64_t)o.base, 8);
            uint8_t mask = 0;
            for (int d = 0; d < isa::kMaxLoopDepth; d++) {
                if (o.stride[d] != 0) mask |= 1 << d;
            }
            w.u8(mask);
            for (int d = 0; d < isa::kMaxLoopDepth; d++) {
                if (o.stride[d] != 0) w.le((uint32_t)o.stride[d], 4);
            }
        } else {
            if (!o.is_constant()) {
                throw Error(std::string("encode: field '") + spec.fields[i].name + "' of " + spec.mnemonic +
                            " is not affine and cannot depend on loop indices");
            }
            w.le((uint64_t)o.base, ks.encoded_bytes);
        }
    }
}

isa::Instruction decode_instruction(Reader &r) {
    isa::Instruction inst;
    inst.file_offset = r.pos;
    uint64_t op = r.le(2, "opcode");
    if (op >= (uint64_t)isa::kNumOpcodes) r.fail("unknown opcode " + std::to_string(op), inst.file_offset);
    inst.op = (isa::Opcode)op;
    const isa::OpcodeSpec &spec = isa::opcode_spec(inst.op);
    for (int i = 0; i < spec.num_fields; i++) {
        const auto &ks = isa::field_kind_spec(spec.fields[i].kind);
        isa::Operand &o = inst.f[i];
        if (ks.encoded_bytes == 0) {
            o.base = r.sle(8, spec.fields[i].name);
            size_t mask_at = r.pos;
            uint64_t mask = r.le(1, spec.fields[i].name);
            if (mask >> isa::kMaxLoopDepth) {
                r.fail(std::string(spec.mnemonic) + " field '" + spec.fields[i].name + "': loop mask " +
                           std::to_string(mask) + " names a loop level >= " + std::to_string(isa::kMaxLoopDepth),
                       mask_at);
            }
            for (int d = 0; d < isa::kMaxLoopDepth; d++) {
                if (!(mask & (1u << d))) continue;
                const size_t stride_at = r.pos;
                o.stride[d] = (int32_t)r.sle(4, spec.fields[i].name);
                // The encoder sets a mask bit only for a non-zero stride: one encoding per program.
                if (o.stride[d] == 0) {
                    r.fail(std::string(spec.mnemonic) + " field '" + spec.fields[i].name + "': loop mask names L" +
                               std::to_string(d) + " with a zero stride (not a canonical encoding)",
                           stride_at);
                }
            }
        } else if (ks.min < 0) {
            o.base = r.sle(ks.encoded_bytes, spec.fields[i].name);
        } else {
            o.base = (int64_t)r.le(ks.encoded_bytes, spec.fields[i].name);
        }
    }
    return inst;
}

}  // namespace

const char *arg_kind_name(ArgKind k) {
    switch (k) {
    case ArgKind::Input: return "input";
    case ArgKind::Output: return "output";
    case ArgKind::Temp: return "temp";
    }
    return "?";
}

size_t Program::instruction_count() const {
    size_t n = 0;
    for (const auto &c : cores) {
        for (const auto &u : c.unit) n += u.size();
    }
    return n;
}

std::vector<uint8_t> encode_program(const Program &p) {
    Writer w;
    w.out.insert(w.out.end(), kMagic, kMagic + 8);
    w.le(p.format_version, 4);
    w.le(p.machine_fingerprint, 8);
    w.le(0, 4);
    w.str(p.kernel_name);
    if (p.params.size() > 65535 || p.args.size() > 65535 || p.cores.size() > 65535) throw Error("encode: table too large");
    w.le(p.params.size(), 2);
    for (const auto &s : p.params) {
        w.str(s.name);
        w.u8((uint8_t)s.dtype);
    }
    w.le(p.args.size(), 2);
    for (const auto &a : p.args) {
        const size_t rank = a.shape.extent.size();
        if (rank > 255 || a.layout.order.size() != rank || a.layout.padded.size() != rank) {
            throw Error("encode: argument '" + a.name + "' has inconsistent rank/layout");
        }
        w.str(a.name);
        w.u8((uint8_t)a.kind);
        w.u8((uint8_t)a.shape.dtype);
        w.u8(rank);
        for (int64_t e : a.shape.extent) w.le((uint64_t)e, 8);
        w.u8((uint8_t)a.layout.stick_dim);
        for (int d : a.layout.order) w.u8((uint8_t)d);
        for (int64_t e : a.layout.padded) w.le((uint64_t)e, 8);
    }
    w.le(p.cores.size(), 2);
    for (const auto &c : p.cores) {
        for (const auto &stream : c.unit) {
            w.le(stream.size(), 4);
            for (const auto &inst : stream) encode_instruction(w, inst);
        }
    }
    w.le(fnv1a(w.out.data(), w.out.size()), 8);
    return std::move(w.out);
}

Program decode_program(const uint8_t *data, size_t size) {
    Reader r(data, size);
    Program p;
    r.need(8, "magic");
    if (std::memcmp(data, kMagic, 8) != 0) r.fail("not a Spyre program (bad magic)", 0);
    r.pos = 8;
    size_t at = r.pos;
    p.format_version = (uint32_t)r.le(4, "format version");
    if (p.format_version != kProgramFormatVersion) {
        r.fail("unsupported format version " + std::to_string(p.format_version) + " (this runtime reads version " +
                   std::to_string(kProgramFormatVersion) + ")",
               at);
    }
    p.machine_fingerprint = r.le(8, "machine fingerprint");
    at = r.pos;
    if (r.le(4, "flags") != 0) r.fail("reserved flags must be 0", at);
    // Verify the checksum before interpreting the body, so corruption is reported as such.
    if (size < 8 + 4 + 8 + 4 + 8) r.fail("file truncated (shorter than the header)", size);
    uint64_t stored = 0;
    for (int i = 0; i < 8; i++) stored |= (uint64_t)data[size - 8 + i] << (8 * i);
    if (stored != fnv1a(data, size - 8)) r.fail("checksum mismatch: the file is truncated or corrupted", size - 8);
    Reader body(data, size - 8);
    body.pos = r.pos;
    p.kernel_name = body.str("kernel name");
    uint64_t np = body.le(2, "parameter count");
    for (uint64_t i = 0; i < np; i++) {
        ScalarParam s;
        s.name = body.str("parameter name");
        at = body.pos;
        uint64_t t = body.le(1, "parameter dtype");
        if (t >= (uint64_t)kNumDTypes) body.fail("parameter '" + s.name + "': unknown dtype " + std::to_string(t), at);
        s.dtype = (DType)t;
        p.params.push_back(s);
    }
    uint64_t na = body.le(2, "argument count");
    for (uint64_t i = 0; i < na; i++) {
        ProgramArgument a;
        a.name = body.str("argument name");
        at = body.pos;
        uint64_t kind = body.le(1, "argument kind");
        if (kind > 2) body.fail("argument '" + a.name + "': unknown kind " + std::to_string(kind), at);
        a.kind = (ArgKind)kind;
        at = body.pos;
        uint64_t t = body.le(1, "argument dtype");
        if (t >= (uint64_t)kNumDTypes) body.fail("argument '" + a.name + "': unknown dtype " + std::to_string(t), at);
        a.shape.dtype = (DType)t;
        at = body.pos;
        uint64_t rank = body.le(1, "argument rank");
        if (rank < 1 || rank > 8) body.fail("argument '" + a.name + "': rank " + std::to_string(rank) + " not in 1..8", at);
        for (uint64_t d = 0; d < rank; d++) a.shape.extent.push_back(body.sle(8, "argument extent"));
        a.layout.stick_dim = (int)body.le(1, "stick dimension");
        for (uint64_t d = 0; d < rank; d++) a.layout.order.push_back((int)body.le(1, "dimension order"));
        for (uint64_t d = 0; d < rank; d++) a.layout.padded.push_back(body.sle(8, "padded extent"));
        p.args.push_back(std::move(a));
    }
    at = body.pos;
    uint64_t nc = body.le(2, "core count");
    if (nc == 0 || nc > 1024) body.fail("core count " + std::to_string(nc) + " not in 1..1024", at);
    p.cores.resize(nc);
    for (uint64_t c = 0; c < nc; c++) {
        for (int u = 0; u < isa::kNumUnits; u++) {
            at = body.pos;
            uint64_t n = body.le(4, "instruction count");
            if (n > body.remaining() / 2) {
                body.fail("core " + std::to_string(c) + " " + isa::unit_name((isa::Unit)u) + ": instruction count " +
                              std::to_string(n) + " exceeds what the file can hold",
                          at);
            }
            auto &stream = p.cores[c].unit[u];
            stream.reserve(n);
            for (uint64_t i = 0; i < n; i++) stream.push_back(decode_instruction(body));
        }
    }
    if (body.pos != body.size) body.fail(std::to_string(body.size - body.pos) + " unexpected bytes after the last core", body.pos);
    return p;
}

std::vector<uint8_t> read_file_bytes(const std::string &path) { return read_file_bytes(path, kMaxProgramFileBytes); }

}  // namespace spyre
