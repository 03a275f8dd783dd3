// NumPy .npy reading and writing (see npy.h).
//
// The format (numpy/lib/format.py): the magic "\x93NUMPY", a major and a minor
// version byte, the header length (2 bytes little-endian in version 1.0, 4 bytes
// in 2.0 and 3.0), then the header: a Python dict literal with exactly the keys
// 'descr', 'fortran_order' and 'shape', padded with spaces and ended by '\n' so
// that the data starts on a 64-byte boundary. The raw elements follow. Version
// 3.0 only differs in encoding the header as UTF-8 instead of Latin-1, which
// makes no difference to the ASCII subset this reader accepts.
//
// Reading is defensive: any file, however malformed, gives a spyre::Error that
// names the file and the problem, never a crash or an out-of-bounds read.
#include "spyre/npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "spyre/error.h"

namespace spyre {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
constexpr size_t kArrayAlign = 64;             // NumPy's ARRAY_ALIGN
constexpr size_t kGrowthAxisMaxDigits = 21;    // NumPy's GROWTH_AXIS_MAX_DIGITS
constexpr int kMaxNesting = 16;                // of tuples/lists/dicts in a header

// A value of the Python literal subset that may appear in a header.
struct PyValue {
    enum class Kind { String, Bool, Int, None, Tuple, List, Dict };
    Kind kind = Kind::None;
    std::string text;                         // String
    bool flag = false;                        // Bool
    int64_t integer = 0;                      // Int
    std::vector<PyValue> items;               // Tuple, List
    std::vector<std::pair<std::string, PyValue>> entries;  // Dict (string keys only)
};

const char *kind_name(PyValue::Kind k) {
    switch (k) {
    case PyValue::Kind::String: return "a string";
    case PyValue::Kind::Bool: return "a bool";
    case PyValue::Kind::Int: return "an integer";
    case PyValue::Kind::None: return "None";
    case PyValue::Kind::Tuple: return "a tuple";
    case PyValue::Kind::List: return "a list";
    case PyValue::Kind::Dict: return "a dict";
    }
    return "?";
}

// Recursive-descent parser for the header dict. Errors carry the byte
// position inside the header.
class HeaderParser {
public:
    explicit HeaderParser(const std::string &text) : s_(text) {}

    PyValue parse_header() {
        skip_space();
        if (peek() != '{') fail("expected a dict starting with '{'");
        PyValue v = parse_value(0);
        skip_space();
        if (pos_ != s_.size()) fail("unexpected text after the dict");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string &msg) const {
        throw Error("bad header dict at byte " + std::to_string(pos_) + ": " + msg);
    }
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    void skip_space() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) pos_++;
    }
    void expect(char c) {
        skip_space();
        if (peek() != c) fail(std::string("expected '") + c + "'");
        pos_++;
    }

    PyValue parse_value(int depth) {
        if (depth > kMaxNesting) fail("nested too deeply");
        skip_space();
        const char c = peek();
        if (c == '{') return parse_dict(depth);
        if (c == '(') return parse_sequence(depth, '(', ')', PyValue::Kind::Tuple);
        if (c == '[') return parse_sequence(depth, '[', ']', PyValue::Kind::List);
        if (c == '\'' || c == '"') return parse_string();
        if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return parse_int();
        if (c_isalpha(c)) return parse_name();
        if (c == '\0') fail("unexpected end of header");
        fail(std::string("unexpected character '") + c + "'");
    }

    static bool c_isalpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

    PyValue parse_dict(int depth) {
        PyValue v;
        v.kind = PyValue::Kind::Dict;
        expect('{');
        while (true) {
            skip_space();
            if (peek() == '}') {
                pos_++;
                return v;
            }
            PyValue key = parse_value(depth + 1);
            if (key.kind != PyValue::Kind::String) fail("dict keys must be strings");
            for (const auto &e : v.entries) {
                if (e.first == key.text) fail("duplicate key '" + key.text + "'");
            }
            expect(':');
            PyValue val = parse_value(depth + 1);
            v.entries.emplace_back(key.text, std::move(val));
            skip_space();
            if (peek() == ',') {
                pos_++;
            } else if (peek() != '}') {
                fail("expected ',' or '}' in dict");
            }
        }
    }

    PyValue parse_sequence(int depth, char open, char close, PyValue::Kind kind) {
        PyValue v;
        v.kind = kind;
        expect(open);
        bool saw_comma = false;
        while (true) {
            skip_space();
            if (peek() == close) {
                pos_++;
                break;
            }
            v.items.push_back(parse_value(depth + 1));
            skip_space();
            if (peek() == ',') {
                pos_++;
                saw_comma = true;
            } else if (peek() != close) {
                fail(std::string("expected ',' or '") + close + "'");
            }
        }
        // "(5)" is a parenthesized integer in Python, not a tuple.
        if (kind == PyValue::Kind::Tuple && v.items.size() == 1 && !saw_comma) return v.items[0];
        return v;
    }

    PyValue parse_string() {
        const char quote = s_[pos_++];
        PyValue v;
        v.kind = PyValue::Kind::String;
        while (true) {
            if (pos_ >= s_.size() || s_[pos_] == '\n') fail("unterminated string");
            char c = s_[pos_++];
            if (c == quote) break;
            if (c == '\\') {
                if (pos_ >= s_.size()) fail("unterminated string");
                c = s_[pos_++];
            }
            v.text += c;
        }
        return v;
    }

    PyValue parse_int() {
        bool negative = false;
        if (peek() == '+' || peek() == '-') negative = s_[pos_++] == '-';
        if (!(peek() >= '0' && peek() <= '9')) fail("expected digits");
        int64_t value = 0;
        while (peek() >= '0' && peek() <= '9') {
            const int digit = s_[pos_++] - '0';
            if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("integer too large");
            value = value * 10 + digit;
        }
        if (peek() == 'L' || peek() == 'l') pos_++;  // Python 2 longs, as old NumPy wrote them
        if (peek() == '.' || peek() == 'e' || peek() == 'E') fail("expected an integer, got a float");
        PyValue v;
        v.kind = PyValue::Kind::Int;
        v.integer = negative ? -value : value;
        return v;
    }

    PyValue parse_name() {
        const size_t start = pos_;
        while (c_isalpha(peek()) || (peek() >= '0' && peek() <= '9')) pos_++;
        const std::string name = s_.substr(start, pos_ - start);
        PyValue v;
        if (name == "True" || name == "False") {
            v.kind = PyValue::Kind::Bool;
            v.flag = name == "True";
        } else if (name == "None") {
            v.kind = PyValue::Kind::None;
        } else {
            pos_ = start;
            fail("unknown name '" + name + "'");
        }
        return v;
    }

    const std::string &s_;
    size_t pos_ = 0;
};

// The descr strings this runtime reads; byte order must be little-endian
// ('<'), or not applicable ('|' or none) for one-byte types.
bool dtype_from_descr(const std::string &descr, DType *out) {
    static const std::map<std::string, DType> known = {
        {"<f2", DType::F16}, {"<f4", DType::F32}, {"<i4", DType::I32},
        {"|i1", DType::I8},  {"<i1", DType::I8},  {"i1", DType::I8},
    };
    auto it = known.find(descr);
    if (it == known.end()) return false;
    *out = it->second;
    return true;
}

const char *descr_of(DType t) {
    switch (t) {
    case DType::F32: return "<f4";
    case DType::F16: return "<f2";
    case DType::I32: return "<i4";
    case DType::I8: return "|i1";
    }
    return nullptr;
}

// Number of elements of a shape; throws on overflow (message without the file name).
uint64_t element_count(const std::vector<int64_t> &shape, int64_t element_bytes) {
    const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(element_bytes);
    uint64_t n = 1;
    for (int64_t e : shape) {
        if (e < 0) throw Error("shape has a negative extent " + std::to_string(e));
        if (e != 0 && n > limit / static_cast<uint64_t>(e)) throw Error("shape is too large");
        n *= static_cast<uint64_t>(e);
    }
    return n;
}

uint32_t read_le(const uint8_t *p, int bytes) {
    uint32_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

std::string shape_repr(const std::vector<int64_t> &shape) {
    // Python's repr of a tuple: "()", "(5,)", "(2, 3)".
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); i++) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ",";
    return s + ")";
}

// Parses the bytes of a whole .npy file (message without the source name).
NpyArray parse_npy_bytes(const uint8_t *file, size_t file_size) {
    if (file_size < kMagicBytes || std::memcmp(file, kMagic, kMagicBytes) != 0) {
        throw Error("not a NumPy .npy file (bad magic; expected \\x93NUMPY)");
    }
    if (file_size < kMagicBytes + 2) throw Error("truncated: file ends inside the format version");
    const int major = file[6];
    const int minor = file[7];
    int length_bytes = 0;
    if (major == 1 && minor == 0) {
        length_bytes = 2;
    } else if ((major == 2 || major == 3) && minor == 0) {
        length_bytes = 4;
    } else {
        throw Error("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                    " (supported: 1.0, 2.0, 3.0)");
    }
    const size_t prefix = kMagicBytes + 2 + length_bytes;
    if (file_size < prefix) throw Error("truncated: file ends inside the header length");
    const uint64_t header_len = read_le(file + 8, length_bytes);
    if (file_size - prefix < header_len) {
        throw Error("truncated: header needs " + std::to_string(header_len) + " bytes, the file has " +
                    std::to_string(file_size - prefix) + " after the header length");
    }
    const std::string header(reinterpret_cast<const char *>(file + prefix), header_len);
    if (header.find('\0') != std::string::npos) throw Error("bad header dict: contains a NUL byte");

    const PyValue dict = HeaderParser(header).parse_header();
    const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
    for (const auto &e : dict.entries) {
        if (e.first == "descr") {
            descr = &e.second;
        } else if (e.first == "fortran_order") {
            fortran = &e.second;
        } else if (e.first == "shape") {
            shape = &e.second;
        } else {
            throw Error("bad header dict: unexpected key '" + e.first + "'");
        }
    }
    if (!descr) throw Error("bad header dict: missing key 'descr'");
    if (!fortran) throw Error("bad header dict: missing key 'fortran_order'");
    if (!shape) throw Error("bad header dict: missing key 'shape'");

    NpyArray a;
    if (descr->kind != PyValue::Kind::String) {
        throw Error(std::string("unsupported dtype: 'descr' is ") + kind_name(descr->kind) +
                    " (structured dtypes are not supported)");
    }
    if (!dtype_from_descr(descr->text, &a.dtype)) {
        throw Error("unsupported dtype '" + descr->text + "' (supported: '<f2', '<f4', '<i4', '|i1')");
    }
    if (fortran->kind != PyValue::Kind::Bool) {
        throw Error(std::string("bad header dict: 'fortran_order' must be True or False, got ") + kind_name(fortran->kind));
    }
    a.fortran_order = fortran->flag;
    if (shape->kind != PyValue::Kind::Tuple) {
        throw Error(std::string("bad header dict: 'shape' must be a tuple, got ") + kind_name(shape->kind));
    }
    for (const auto &item : shape->items) {
        if (item.kind != PyValue::Kind::Int) {
            throw Error(std::string("bad header dict: 'shape' entries must be integers, got ") + kind_name(item.kind));
        }
        if (item.integer < 0) throw Error("bad header dict: 'shape' has a negative extent " + std::to_string(item.integer));
        a.shape.push_back(item.integer);
    }

    const int64_t eb = dtype_bytes(a.dtype);
    const uint64_t expected = element_count(a.shape, eb) * static_cast<uint64_t>(eb);
    const uint64_t available = file_size - prefix - header_len;
    if (available != expected) {
        throw Error(std::string(available < expected ? "truncated: " : "data size mismatch: ") + "shape " +
                    shape_repr(a.shape) + " of " + descr->text + " needs " + std::to_string(expected) +
                    " data bytes, the file has " + std::to_string(available));
    }
    a.data.assign(file + prefix + header_len, file + file_size);
    return a;
}

}  // namespace

NpyArray read_npy(const std::string &path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw Error("npy file '" + path + "': is a directory");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("npy file '" + path + "': cannot open for reading");
    std::vector<uint8_t> bytes;
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    if (size < 0) throw Error("npy file '" + path + "': cannot determine its size (not a regular file?)");
    f.seekg(0, std::ios::beg);
    bytes.resize(static_cast<size_t>(size));
    if (size > 0 && !f.read(reinterpret_cast<char *>(bytes.data()), size)) {
        throw Error("npy file '" + path + "': read error");
    }
    return parse_npy(bytes.data(), bytes.size(), path);
}

NpyArray parse_npy(const uint8_t *data, size_t size, const std::string &source) {
    try {
        return parse_npy_bytes(data, size);
    } catch (const Error &e) {
        throw Error("npy file '" + source + "': " + e.what());
    }
}

std::vector<uint8_t> encode_npy(const NpyArray &a, const std::string &path) {
    const char *descr = descr_of(a.dtype);
    if (!descr) throw Error("npy file '" + path + "': cannot write dtype " + std::to_string(static_cast<int>(a.dtype)));
    const int64_t eb = dtype_bytes(a.dtype);
    uint64_t expected = 0;
    try {
        expected = element_count(a.shape, eb) * static_cast<uint64_t>(eb);
    } catch (const Error &e) {
        throw Error("npy file '" + path + "': cannot write: " + e.what());
    }
    if (expected != a.data.size()) {
        throw Error("npy file '" + path + "': cannot write: shape " + shape_repr(a.shape) + " of " + dtype_name(a.dtype) +
                    " needs " + std::to_string(expected) + " data bytes, the array has " + std::to_string(a.data.size()));
    }

    // The header exactly as NumPy's _write_array_header builds it: sorted keys,
    // Python reprs, spare spaces so the growth axis can be rewritten in place,
    // then padding so that the data starts on a 64-byte boundary.
    std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': " + (a.fortran_order ? "True" : "False") +
                         ", 'shape': " + shape_repr(a.shape) + ", }";
    if (!a.shape.empty()) {
        const int64_t growth = a.fortran_order ? a.shape.back() : a.shape.front();
        const size_t digits = std::to_string(growth).size();
        if (digits < kGrowthAxisMaxDigits) header.append(kGrowthAxisMaxDigits - digits, ' ');
    }
    const size_t hlen = header.size() + 1;  // with the final '\n'
    int major = 1;
    size_t length_bytes = 2;
    size_t pad = kArrayAlign - (kMagicBytes + 2 + length_bytes + hlen) % kArrayAlign;
    if (hlen + pad > 0xffff) {
        major = 2;
        length_bytes = 4;
        pad = kArrayAlign - (kMagicBytes + 2 + length_bytes + hlen) % kArrayAlign;
    }
    header.append(pad, ' ');
    header += '\n';

    std::string prefix(kMagic, kMagicBytes);
    prefix += static_cast<char>(major);
    prefix += static_cast<char>(0);
    const uint64_t total_header = header.size();
    for (size_t i = 0; i < length_bytes; i++) prefix += static_cast<char>((total_header >> (8 * i)) & 0xff);

    std::vector<uint8_t> out;
    out.reserve(prefix.size() + header.size() + a.data.size());
    out.insert(out.end(), prefix.begin(), prefix.end());
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), a.data.begin(), a.data.end());
    return out;
}

void write_npy(const std::string &path, const NpyArray &a) {
    const std::vector<uint8_t> bytes = encode_npy(a, path);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("npy file '" + path + "': cannot open for writing");
    f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) throw Error("npy file '" + path + "': write error");
}

}  // namespace spyre
