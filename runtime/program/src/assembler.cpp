// The Spyre assembler: text (syntax in assembler.h) -> Program.
//
// Nothing here knows an opcode by hand: mnemonics, field names, field kinds
// and value ranges all come from the isa.def tables through isa.h. The parser
// works line by line; an instruction line under `.core A-B` is evaluated once
// per core of the range, with the symbol C bound to that core's index.
//
// Assumes: field values contain no whitespace (`dram=4096*C+256*L0`, not
// `dram = 4096 * C`); argument and parameter names are single tokens.
// Besides syntax and the field ranges of isa.def, the assembler checks only
// what it can point at on a line: an endloop without a loop and a loop index
// L_d used where fewer than d+1 loops are open. Rules that need the machine or
// the whole program (loops left open, trip count limits, channel counts, ...)
// are left to validate_program, which spyre-as runs on its output.
#include "spyre/assembler.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "spyre/error.h"

namespace spyre {

namespace {

// A whitespace-separated word of a source line and the 1-based column it starts at.
struct Token {
    std::string text;
    int column = 1;
};

// Where a diagnostic points: the line and the column of the offending text.
struct SourcePosition {
    const std::string *source_name;
    int line;
    int column;
};

[[noreturn]] void fail_at(const SourcePosition &at, const std::string &message) {
    throw Error(*at.source_name + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + message);
}

std::vector<Token> split_line(const std::string &line) {
    std::vector<Token> tokens;
    size_t i = 0;
    while (i < line.size()) {
        if (line[i] == ';') break;  // comment to the end of the line
        if (std::isspace((unsigned char)line[i])) {
            i++;
            continue;
        }
        Token t;
        t.column = (int)i + 1;
        while (i < line.size() && !std::isspace((unsigned char)line[i]) && line[i] != ';') t.text += line[i++];
        tokens.push_back(t);
    }
    return tokens;
}

// A value linear in the loop indices: constant + sum(loop[d] * L_d).
struct LinearValue {
    int64_t constant = 0;
    std::array<int64_t, isa::kMaxLoopDepth> loop{};

    bool depends_on_loops() const {
        for (int64_t s : loop) {
            if (s != 0) return true;
        }
        return false;
    }
};

// Recursive-descent evaluator of field expressions:
//   expr := term (('+' | '-') term)*      term := unary ('*' unary)*
//   unary := ('+' | '-') unary | primary  primary := integer | C | L0..L3 | '(' expr ')'
// Parentheses and signs nest at most kMaxNesting (64) deep.
class ExpressionParser {
public:
    ExpressionParser(const std::string &text, SourcePosition start, int64_t core_index)
        : text_(text), start_(start), core_index_(core_index) {}

    LinearValue parse() {
        if (text_.empty()) fail(0, "missing value");
        LinearValue v = expression();
        if (pos_ != text_.size()) fail(pos_, std::string("unexpected '") + text_[pos_] + "' in expression");
        return v;
    }

private:
    // Parentheses and unary signs recurse; deeper nesting than this is an
    // error, not a stack overflow.
    static constexpr int kMaxNesting = 64;

    const std::string &text_;
    SourcePosition start_;
    int64_t core_index_;
    size_t pos_ = 0;
    int nesting_ = 0;

    // Counts one level of recursion for as long as it lives.
    class Nested {
    public:
        Nested(ExpressionParser &p, size_t at) : p_(p) {
            if (++p_.nesting_ > kMaxNesting) {
                p_.fail(at, "expression nested deeper than " + std::to_string(kMaxNesting) + " levels");
            }
        }
        ~Nested() { p_.nesting_--; }

    private:
        ExpressionParser &p_;
    };

    [[noreturn]] void fail(size_t at, const std::string &message) const {
        SourcePosition p = start_;
        p.column += (int)at;
        fail_at(p, message);
    }

    int64_t sum(int64_t a, int64_t b, bool subtract, size_t at) const {
        int64_t out;
        if (subtract ? __builtin_sub_overflow(a, b, &out) : __builtin_add_overflow(a, b, &out)) {
            fail(at, "integer overflow in expression");
        }
        return out;
    }

    int64_t product(int64_t a, int64_t b, size_t at) const {
        int64_t out;
        if (__builtin_mul_overflow(a, b, &out)) fail(at, "integer overflow in expression");
        return out;
    }

    LinearValue add(const LinearValue &a, const LinearValue &b, bool subtract, size_t at) const {
        LinearValue r;
        r.constant = sum(a.constant, b.constant, subtract, at);
        for (int d = 0; d < isa::kMaxLoopDepth; d++) r.loop[d] = sum(a.loop[d], b.loop[d], subtract, at);
        return r;
    }

    LinearValue scale(const LinearValue &a, int64_t factor, size_t at) const {
        LinearValue r;
        r.constant = product(a.constant, factor, at);
        for (int d = 0; d < isa::kMaxLoopDepth; d++) r.loop[d] = product(a.loop[d], factor, at);
        return r;
    }

    LinearValue expression() {
        LinearValue v = term();
        while (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) {
            size_t at = pos_;
            bool subtract = text_[pos_++] == '-';
            v = add(v, term(), subtract, at);
        }
        return v;
    }

    LinearValue term() {
        LinearValue v = unary();
        while (pos_ < text_.size() && text_[pos_] == '*') {
            size_t at = pos_++;
            LinearValue rhs = unary();
            if (v.depends_on_loops() && rhs.depends_on_loops()) {
                fail(at, "expression is not linear in the loop indices (product of two loop-dependent terms)");
            }
            v = v.depends_on_loops() ? scale(v, rhs.constant, at) : scale(rhs, v.constant, at);
        }
        return v;
    }

    LinearValue unary() {
        if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) {
            size_t at = pos_;
            bool negate = text_[pos_++] == '-';
            Nested nested(*this, at);
            LinearValue v = unary();
            return negate ? scale(v, -1, at) : v;
        }
        return primary();
    }

    LinearValue primary() {
        if (pos_ >= text_.size()) fail(pos_, "expression ends where a value was expected");
        const size_t at = pos_;
        const char c = text_[pos_];
        LinearValue v;
        if (c == '(') {
            Nested nested(*this, at);
            pos_++;
            v = expression();
            if (pos_ >= text_.size() || text_[pos_] != ')') fail(pos_, "missing ')'");
            pos_++;
            return v;
        }
        if (std::isdigit((unsigned char)c)) {
            v.constant = integer_literal();
            return v;
        }
        if (std::isalpha((unsigned char)c) || c == '_') {
            std::string word;
            while (pos_ < text_.size() && (std::isalnum((unsigned char)text_[pos_]) || text_[pos_] == '_')) {
                word += text_[pos_++];
            }
            if (word == "C") {
                v.constant = core_index_;
                return v;
            }
            if (word.size() == 2 && word[0] == 'L' && word[1] >= '0' && word[1] < '0' + isa::kMaxLoopDepth) {
                v.loop[word[1] - '0'] = 1;
                return v;
            }
            fail(at, "unknown symbol '" + word + "' (expressions may use integers, C and L0..L" +
                         std::to_string(isa::kMaxLoopDepth - 1) + ")");
        }
        fail(at, std::string("unexpected '") + c + "' in expression");
    }

    int64_t integer_literal() {
        const size_t at = pos_;
        int base = 10;
        if (text_.compare(pos_, 2, "0x") == 0 || text_.compare(pos_, 2, "0X") == 0) {
            base = 16;
            pos_ += 2;
        }
        const size_t digits_at = pos_;
        uint64_t value = 0;
        while (pos_ < text_.size() && std::isxdigit((unsigned char)text_[pos_])) {
            char d = text_[pos_];
            int digit = std::isdigit((unsigned char)d) ? d - '0' : 10 + std::tolower((unsigned char)d) - 'a';
            if (digit >= base) break;
            if (value > (uint64_t(INT64_MAX) - digit) / base) fail(at, "integer literal too large");
            value = value * base + digit;
            pos_++;
        }
        if (pos_ == digits_at) fail(at, "malformed integer literal");
        if (pos_ < text_.size() && (std::isalnum((unsigned char)text_[pos_]) || text_[pos_] == '_' || text_[pos_] == '.')) {
            fail(at, "malformed integer literal");
        }
        return (int64_t)value;
    }
};

bool is_identifier(const std::string &s) {
    if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    for (char c : s) {
        if (!(std::isalnum((unsigned char)c) || c == '_' || c == '.')) return false;
    }
    return true;
}

// An f32 literal is written with a decimal point or an exponent (and is not hex).
bool looks_like_float_literal(const std::string &s) {
    size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (s.compare(i, 2, "0x") == 0 || s.compare(i, 2, "0X") == 0) return false;
    if (i >= s.size() || !(std::isdigit((unsigned char)s[i]) || s[i] == '.')) return false;
    return s.find_first_of(".eE") != std::string::npos;
}

class Assembler {
public:
    Assembler(const MachineDescription &m, const std::string &source_name) : machine_(m), source_name_(source_name) {
        program_.machine_fingerprint = m.structural_fingerprint();
        program_.cores.resize(m.cores);
        open_loops_.resize(m.cores);
    }

    Program run(const std::string &text) {
        std::istringstream in(text);
        std::string line;
        int line_number = 0;
        while (std::getline(in, line)) {
            line_number++;
            if (!line.empty() && line.back() == '\r') line.pop_back();
            std::vector<Token> tokens = split_line(line);
            if (tokens.empty()) continue;
            line_ = line_number;
            if (tokens[0].text[0] == '.') {
                directive(tokens);
            } else {
                instruction(tokens);
            }
        }
        if (program_.kernel_name.empty()) {
            fail_at(SourcePosition{&source_name_, line_number + 1, 1}, "missing .kernel directive");
        }
        return std::move(program_);
    }

private:
    const MachineDescription &machine_;
    const std::string &source_name_;
    Program program_;
    int line_ = 0;
    bool have_core_ = false;
    int64_t first_core_ = 0, last_core_ = 0;
    int unit_ = -1;  // index of the current unit stream, -1 before `.unit`
    std::set<std::string> names_;
    std::vector<std::array<int, isa::kNumUnits>> open_loops_;  // per core and unit: loops opened and not closed

    SourcePosition at(int column) const { return SourcePosition{&source_name_, line_, column}; }
    SourcePosition at(const Token &t) const { return at(t.column); }
    [[noreturn]] void fail(const Token &t, const std::string &message) const { fail_at(at(t), message); }

    void expect_operands(const std::vector<Token> &tokens, size_t min, size_t max, const char *usage) const {
        if (tokens.size() < min + 1) {
            fail_at(at(tokens.back().column + (int)tokens.back().text.size()), std::string("expected ") + usage);
        }
        if (tokens.size() > max + 1) fail(tokens[max + 1], std::string("unexpected text; expected ") + usage);
    }

    int64_t integer(const Token &t, const std::string &text, int column_offset, int64_t lo, int64_t hi,
                    const std::string &what) const {
        LinearValue v = ExpressionParser(text, at(t.column + column_offset), 0).parse();
        if (v.depends_on_loops()) fail(t, what + " cannot depend on loop indices");
        if (v.constant < lo || v.constant > hi) {
            fail(t, what + " " + std::to_string(v.constant) + " out of range [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "]");
        }
        return v.constant;
    }

    DType dtype(const Token &t) const {
        DType d;
        if (!parse_dtype(t.text, &d)) fail(t, "unknown dtype '" + t.text + "' (expected f32, f16, i32 or i8)");
        return d;
    }

    // Names are stored as 1..255 printable ASCII characters (program_format.h).
    void check_name(const Token &t, const char *what) const {
        if (t.text.size() > 255) fail(t, std::string(what) + " name longer than 255 characters");
        for (char c : t.text) {
            if ((unsigned char)c < 0x21 || (unsigned char)c > 0x7e) fail(t, std::string(what) + " name has a non-ASCII character");
        }
    }

    std::string new_name(const Token &t, const char *what) {
        check_name(t, what);
        if (!names_.insert(t.text).second) fail(t, "duplicate name '" + t.text + "'");
        return t.text;
    }

    void directive(const std::vector<Token> &tokens) {
        const Token &d = tokens[0];
        if (d.text == ".kernel") {
            expect_operands(tokens, 1, 1, "a kernel name: .kernel NAME");
            if (!program_.kernel_name.empty()) fail(d, "duplicate .kernel directive");
            check_name(tokens[1], "kernel");
            program_.kernel_name = tokens[1].text;
        } else if (d.text == ".machine") {
            expect_operands(tokens, 1, 1, "a fingerprint: .machine 0xHEX");
            const std::string &s = tokens[1].text;
            errno = 0;
            char *end = nullptr;
            unsigned long long v = std::strtoull(s.c_str(), &end, 0);
            if (s.empty() || s[0] == '-' || s[0] == '+' || *end != '\0' || errno == ERANGE) {
                fail(tokens[1], "malformed machine fingerprint '" + s + "'");
            }
            program_.machine_fingerprint = v;
        } else if (d.text == ".param") {
            expect_operands(tokens, 2, 2, "a parameter: .param NAME DTYPE");
            ScalarParam s;
            s.name = new_name(tokens[1], "parameter");
            s.dtype = dtype(tokens[2]);
            program_.params.push_back(s);
        } else if (d.text == ".arg") {
            argument(tokens);
        } else if (d.text == ".core") {
            core(tokens);
        } else if (d.text == ".unit") {
            expect_operands(tokens, 1, 1, "a unit: .unit dma | pt | sfu");
            if (!have_core_) fail(d, ".unit before .core");
            unit_ = -1;
            for (int u = 0; u < isa::kNumUnits; u++) {
                if (tokens[1].text == isa::unit_name((isa::Unit)u)) unit_ = u;
            }
            if (unit_ < 0) fail(tokens[1], "unknown unit '" + tokens[1].text + "' (expected dma, pt or sfu)");
        } else {
            fail(d, "unknown directive '" + d.text + "'");
        }
    }

    void core(const std::vector<Token> &tokens) {
        expect_operands(tokens, 1, 1, "a core index or range: .core N or .core A-B");
        const Token &t = tokens[1];
        const int64_t max_core = machine_.cores - 1;
        const std::string range = "core index";
        size_t dash = t.text.find('-', 1);
        if (dash == std::string::npos) {
            first_core_ = last_core_ = integer(t, t.text, 0, 0, max_core, range);
        } else {
            first_core_ = integer(t, t.text.substr(0, dash), 0, 0, max_core, range);
            last_core_ = integer(t, t.text.substr(dash + 1), (int)dash + 1, 0, max_core, range);
            if (last_core_ < first_core_) fail(t, "empty core range " + t.text);
        }
        have_core_ = true;
        unit_ = -1;
    }

    // Parses "[a,b,c]" into integers.
    std::vector<int64_t> integer_list(const Token &t, const std::string &text, int column_offset, const std::string &what) const {
        if (text.size() < 2 || text.front() != '[' || text.back() != ']') fail(t, what + " must be a list like [1,2]");
        std::vector<int64_t> values;
        size_t i = 1;
        while (i < text.size() - 1) {
            size_t comma = text.find(',', i);
            if (comma == std::string::npos || comma > text.size() - 1) comma = text.size() - 1;
            values.push_back(integer(t, text.substr(i, comma - i), column_offset + (int)i, INT64_MIN, INT64_MAX, what));
            i = comma + 1;
        }
        return values;
    }

    void argument(const std::vector<Token> &tokens) {
        const char *usage = "an argument: .arg NAME input|output|temp DTYPE extent=[..] stick=S order=[..] padded=[..]";
        expect_operands(tokens, 4, 7, usage);
        ProgramArgument a;
        a.name = new_name(tokens[1], "argument");
        bool kind_known = false;
        for (ArgKind k : {ArgKind::Input, ArgKind::Output, ArgKind::Temp}) {
            if (tokens[2].text == arg_kind_name(k)) {
                a.kind = k;
                kind_known = true;
            }
        }
        if (!kind_known) fail(tokens[2], "unknown argument kind '" + tokens[2].text + "' (expected input, output or temp)");
        a.shape.dtype = dtype(tokens[3]);
        bool have_extent = false, have_stick = false, have_order = false, have_padded = false;
        std::vector<int64_t> order;
        for (size_t i = 4; i < tokens.size(); i++) {
            const Token &t = tokens[i];
            size_t eq = t.text.find('=');
            if (eq == std::string::npos) fail(t, std::string("expected key=value; ") + usage);
            const std::string key = t.text.substr(0, eq), value = t.text.substr(eq + 1);
            const int value_column = (int)eq + 1;
            auto once = [&](bool &seen) {
                if (seen) fail(t, "duplicate '" + key + "'");
                seen = true;
            };
            if (key == "extent") {
                once(have_extent);
                a.shape.extent = integer_list(t, value, value_column, "extent");
            } else if (key == "stick") {
                once(have_stick);
                a.layout.stick_dim = (int)integer(t, value, value_column, 0, 7, "stick dimension");
            } else if (key == "order") {
                once(have_order);
                order = integer_list(t, value, value_column, "order");
            } else if (key == "padded") {
                once(have_padded);
                a.layout.padded = integer_list(t, value, value_column, "padded");
            } else {
                fail(t, "unknown key '" + key + "' (expected extent, stick, order or padded)");
            }
        }
        if (!have_extent) fail(tokens[1], "argument '" + a.name + "' needs extent=[..]");
        const int rank = (int)a.shape.extent.size();
        if (rank < 1 || rank > 8) fail(tokens[1], "argument '" + a.name + "' must have rank 1..8");
        for (int64_t e : a.shape.extent) {
            if (e < 1) fail(tokens[1], "argument '" + a.name + "': extents must be >= 1");
        }
        if (a.layout.stick_dim >= rank) fail(tokens[1], "argument '" + a.name + "': stick dimension out of range");
        DeviceLayout defaults = default_layout(a.shape, machine_.stick_bytes, a.layout.stick_dim);
        if (have_order) {
            for (int64_t d : order) {
                if (d < 0 || d >= rank) fail(tokens[1], "argument '" + a.name + "': order names a dimension out of range");
                a.layout.order.push_back((int)d);
            }
        } else {
            a.layout.order = defaults.order;
        }
        if (!have_padded) a.layout.padded = defaults.padded;
        try {
            check_layout(a.shape, a.layout, machine_.stick_bytes, "argument '" + a.name + "'");
        } catch (const Error &e) {
            fail(tokens[1], e.what());
        }
        program_.args.push_back(std::move(a));
    }

    struct FieldText {
        const Token *token = nullptr;
        std::string value;
        int value_column_offset = 0;
    };

    void instruction(const std::vector<Token> &tokens) {
        const Token &mnemonic = tokens[0];
        const isa::OpcodeSpec *spec = isa::find_opcode(mnemonic.text);
        if (!spec) fail(mnemonic, "unknown mnemonic '" + mnemonic.text + "'");
        if (!have_core_) fail(mnemonic, "instruction before .core");
        if (unit_ < 0) fail(mnemonic, "instruction before .unit");
        if (spec->unit != isa::Unit::Any && (int)spec->unit != unit_) {
            fail(mnemonic, std::string(spec->mnemonic) + " belongs to the " + isa::unit_name(spec->unit) +
                               " unit, not the " + isa::unit_name((isa::Unit)unit_) + " unit");
        }
        std::vector<FieldText> fields(spec->num_fields);
        for (size_t i = 1; i < tokens.size(); i++) {
            const Token &t = tokens[i];
            size_t eq = t.text.find('=');
            if (eq == std::string::npos || eq == 0) fail(t, "expected field=value, got '" + t.text + "'");
            const std::string name = t.text.substr(0, eq);
            int index = -1;
            for (int f = 0; f < spec->num_fields; f++) {
                if (name == spec->fields[f].name) index = f;
            }
            if (index < 0) fail(t, std::string(spec->mnemonic) + " has no field '" + name + "'");
            if (fields[index].token) fail(t, "duplicate field '" + name + "'");
            fields[index] = FieldText{&t, t.text.substr(eq + 1), (int)eq + 1};
        }
        for (int f = 0; f < spec->num_fields; f++) {
            if (!fields[f].token) fail(mnemonic, std::string(spec->mnemonic) + " is missing field '" + spec->fields[f].name + "'");
        }
        for (int64_t c = first_core_; c <= last_core_; c++) {
            int &open_loops = open_loops_[c][unit_];
            isa::Instruction inst;
            inst.op = spec->opcode;
            for (int f = 0; f < spec->num_fields; f++) inst.f[f] = operand(*spec, f, fields[f], c, open_loops);
            if (inst.op == isa::Opcode::Loop) open_loops++;
            if (inst.op == isa::Opcode::EndLoop) {
                if (open_loops == 0) fail(mnemonic, "endloop without a matching loop");
                open_loops--;
            }
            program_.cores[c].unit[unit_].push_back(inst);
        }
    }

    isa::Operand operand(const isa::OpcodeSpec &spec, int f, const FieldText &ft, int64_t core_index, int open_loops) const {
        const isa::FieldSpec &fs = spec.fields[f];
        const isa::FieldKindSpec &ks = isa::field_kind_spec(fs.kind);
        const Token &t = *ft.token;
        const SourcePosition value_at = at(t.column + ft.value_column_offset);
        const std::string field = std::string("field '") + fs.name + "'";
        isa::Operand o;
        if (fs.kind == isa::FieldKind::Type) {
            DType d;
            if (parse_dtype(ft.value, &d)) {
                o.base = (int64_t)d;
                return o;
            }
            if (is_identifier(ft.value)) fail_at(value_at, "unknown type '" + ft.value + "' (expected f32, f16, i32 or i8)");
        } else if (fs.kind == isa::FieldKind::Arg && is_identifier(ft.value)) {
            // An argument name; `C` names an argument called C if there is one, else the core index.
            for (size_t i = 0; i < program_.args.size(); i++) {
                if (program_.args[i].name == ft.value) {
                    o.base = (int64_t)i;
                    return o;
                }
            }
            if (ft.value != "C") fail_at(value_at, "unknown argument name '" + ft.value + "'");
        } else if (fs.kind == isa::FieldKind::Imm && looks_like_float_literal(ft.value)) {
            char *end = nullptr;
            errno = 0;
            float value = std::strtof(ft.value.c_str(), &end);
            if (*end != '\0') fail_at(value_at, "malformed float literal '" + ft.value + "'");
            if (errno == ERANGE && std::abs(value) > 1.0f) fail_at(value_at, "float literal '" + ft.value + "' overflows f32");
            uint32_t bits;
            std::memcpy(&bits, &value, 4);
            o.base = bits;
            return o;
        }
        LinearValue v = ExpressionParser(ft.value, value_at, core_index).parse();
        if (v.depends_on_loops() && !isa::is_affine(fs.kind)) {
            fail_at(value_at, field + " (" + ks.name + ") cannot depend on loop indices");
        }
        if (v.constant < ks.min || v.constant > ks.max) {
            std::string shown = fs.kind == isa::FieldKind::Type ? " (expected f32, f16, i32 or i8)" : "";
            fail_at(value_at, field + " = " + std::to_string(v.constant) + " out of range [" + std::to_string(ks.min) +
                                  ", " + std::to_string(ks.max) + "] for " + ks.name + shown);
        }
        o.base = v.constant;
        for (int d = 0; d < isa::kMaxLoopDepth; d++) {
            if (v.loop[d] < INT32_MIN || v.loop[d] > INT32_MAX) {
                fail_at(value_at, field + ": stride " + std::to_string(v.loop[d]) + " of L" + std::to_string(d) +
                                      " does not fit in 32 bits");
            }
            if (v.loop[d] != 0 && d >= open_loops) {
                fail_at(value_at, field + " uses loop index L" + std::to_string(d) + " but only " +
                                      std::to_string(open_loops) + " loop(s) are open");
            }
            o.stride[d] = (int32_t)v.loop[d];
        }
        return o;
    }
};

}  // namespace

Program assemble_program(const std::string &text, const MachineDescription &m, const std::string &source_name) {
    return Assembler(m, source_name).run(text);
}

}  // namespace spyre
