// SFU unit semantics: elementwise operations, casts and reductions over
// rows x n elements of the core's scratchpad. Float types compute in f32 and
// round once per instruction when the destination is f16; integer types
// compute in 64-bit and wrap when stored as i32 or i8.
// Float semantics are IEEE-754 binary32 (docs/isa.md, "Non-finite values"):
// inf and NaN go through every operation as IEEE says, a NaN operand of
// min, max, rowmax or colmax gives NaN (IEEE 754-2019 minimum / maximum, so
// the result does not depend on operand order or on how a row is split), and
// the f16 rounding keeps NaN a NaN and takes overflow to +-inf.
// Source operands are vectors (mode 0), one scalar per row (mode 1), the
// instruction's immediate (mode 2: f32 bits for float types, an int32 for
// integer types) or a run-time parameter (mode 3: imm is its index).
#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "spyre/dtype.h"
#include "half_convert.h"
#include "unit_semantics.h"

namespace spyre {
namespace sim {

namespace {

// Do the bounding intervals of two boxes overlap? (Conservative: row by row checks follow.)
bool bounding_overlap(const ByteBox &a, const ByteBox &b) {
    auto lo = [](const ByteBox &x) { return x.base + std::min<int64_t>(0, (x.rows - 1) * x.row_stride); };
    auto hi = [](const ByteBox &x) { return x.base + std::max<int64_t>(0, (x.rows - 1) * x.row_stride) + x.len; };
    return lo(a) < hi(b) && lo(b) < hi(a);
}


float load_float(const uint8_t *p, DType t) {
    switch (t) {
    case DType::F32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
    }
    case DType::F16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return half_to_float(h);
    }
    case DType::I32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return (float)v;
    }
    case DType::I8: return (float)*reinterpret_cast<const int8_t *>(p);
    }
    return 0;
}

int32_t load_int(const uint8_t *p, DType t) {
    switch (t) {
    case DType::I32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return v;
    }
    case DType::I8: return *reinterpret_cast<const int8_t *>(p);
    case DType::F32:
    case DType::F16: {
        // float -> int: truncate toward zero, saturate, NaN -> 0.
        float f = load_float(p, t);
        if (std::isnan(f)) return 0;
        if (f >= 2147483647.0f) return std::numeric_limits<int32_t>::max();
        if (f <= -2147483648.0f) return std::numeric_limits<int32_t>::min();
        return (int32_t)f;
    }
    }
    return 0;
}

void store_float(uint8_t *p, DType t, float v) {
    if (t == DType::F32) {
        std::memcpy(p, &v, 4);
    } else {
        uint16_t h = float_to_half(v);
        std::memcpy(p, &h, 2);
    }
}

void store_int(uint8_t *p, DType t, int32_t v) {
    if (t == DType::I32) {
        std::memcpy(p, &v, 4);
    } else {
        *reinterpret_cast<int8_t *>(p) = (int8_t)(uint8_t)(uint32_t)v;
    }
}

struct Source {
    int64_t addr = 0, stride = 0, mode = 0;
};

struct ElementwiseFields {
    int64_t dst, dst_stride, n, rows, imm;
    DType type;
    Source src[3];
    int num_sources;
};

// Fetches one source row into `out` (n values), converting to float or int32.
template <typename V>
void fetch_row(const Source &s, int64_t row, int64_t n, DType t, const Scratchpad &sp, const uint8_t *base,
               int64_t imm, const std::vector<double> &params, bool functional, V *out, const char *what) {
    const int64_t eb = dtype_bytes(t);
    switch (s.mode) {
    case 0: {
        const int64_t a = s.addr + row * s.stride;
        sp.check_read(a, n * eb, what);
        if (!functional) return;
        if constexpr (std::is_same_v<V, float>) {
            if (t == DType::F16) {
                halves_to_floats(reinterpret_cast<const uint16_t *>(base + a), out, n);
                return;
            }
            if (t == DType::F32) {
                std::memcpy(out, base + a, n * 4);
                return;
            }
        }
        for (int64_t i = 0; i < n; i++) {
            if constexpr (std::is_same_v<V, float>) {
                out[i] = load_float(base + a + i * eb, t);
            } else {
                out[i] = load_int(base + a + i * eb, t);
            }
        }
        return;
    }
    case 1: {
        const int64_t a = s.addr + row * s.stride;
        sp.check_read(a, eb, what);
        if (!functional) return;
        V v;
        if constexpr (std::is_same_v<V, float>) {
            v = load_float(base + a, t);
        } else {
            v = load_int(base + a, t);
        }
        for (int64_t i = 0; i < n; i++) out[i] = v;
        return;
    }
    case 2: {
        if (!functional) return;
        V v;
        uint32_t bits = (uint32_t)imm;
        if constexpr (std::is_same_v<V, float>) {
            std::memcpy(&v, &bits, 4);
        } else {
            v = (int32_t)bits;  // sign-extends into the 64-bit working type
        }
        for (int64_t i = 0; i < n; i++) out[i] = v;
        return;
    }
    default: {
        if (imm < 0 || imm >= (int64_t)params.size()) {
            throw RuleViolation("operand reads run-time parameter " + std::to_string(imm) + " but only " +
                                std::to_string(params.size()) + " were passed");
        }
        if (!functional) return;
        V v = (V)params[imm];
        for (int64_t i = 0; i < n; i++) out[i] = v;
        return;
    }
    }
}

// IEEE 754-2019 minimum and maximum for floats: NaN if either operand is NaN.
template <typename V>
V max_of(V a, V b) {
    if constexpr (std::is_same_v<V, float>) {
        if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a < b ? b : a;
}

template <typename V>
V min_of(V a, V b) {
    if constexpr (std::is_same_v<V, float>) {
        if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return b < a ? b : a;
}

template <typename V>
V apply(isa::Opcode op, V a, V b, V c) {
    using isa::Opcode;
    if constexpr (std::is_same_v<V, float>) {
        // IEEE abs and negate only clear or flip the sign: abs(-0) = 0, -(0) = -0.
        if (op == Opcode::Abs) return std::fabs(a);
        if (op == Opcode::Neg) return -a;
    }
    switch (op) {
    case Opcode::Copy: return a;
    case Opcode::Abs: return a < 0 ? (V)(0 - a) : a;
    case Opcode::Neg: return (V)(0 - a);
    case Opcode::Add: return (V)(a + b);
    case Opcode::Sub: return (V)(a - b);
    case Opcode::Mul: return (V)(a * b);
    case Opcode::Min: return min_of(a, b);
    case Opcode::Max: return max_of(a, b);
    case Opcode::CmpLt: return a < b ? V(1) : V(0);
    case Opcode::CmpLe: return a <= b ? V(1) : V(0);
    case Opcode::CmpEq: return a == b ? V(1) : V(0);
    case Opcode::Fma: return (V)(a * b + c);
    case Opcode::Select: return a != V(0) ? b : c;
    default: break;
    }
    if constexpr (std::is_same_v<V, float>) {
        switch (op) {
        case Opcode::Exp: return std::exp(a);
        case Opcode::Log: return std::log(a);
        case Opcode::Tanh: return std::tanh(a);
        case Opcode::Erf: return std::erf(a);
        case Opcode::Sqrt: return std::sqrt(a);
        case Opcode::Rsqrt: return 1.0f / std::sqrt(a);
        case Opcode::Recip: return 1.0f / a;
        case Opcode::Div: return a / b;
        default: break;
        }
    }
    throw RuleViolation(std::string(isa::opcode_spec(op).mnemonic) + " is not defined for this type");
}

// One row of an elementwise op; the common ops get their own loops (vectorized
// by the compiler), the rest go element by element through apply().
template <typename V>
void apply_row(isa::Opcode op, const ElementwiseFields &e, const std::vector<V> *in, V *out) {
    const int64_t n = e.n;
    const V *a = in[0].data();
    const V *b = e.num_sources > 1 ? in[1].data() : nullptr;
    const V *c = e.num_sources > 2 ? in[2].data() : nullptr;
    switch (op) {
    case isa::Opcode::Copy: std::copy(a, a + n, out); return;
    case isa::Opcode::Add: for (int64_t i = 0; i < n; i++) out[i] = (V)(a[i] + b[i]); return;
    case isa::Opcode::Sub: for (int64_t i = 0; i < n; i++) out[i] = (V)(a[i] - b[i]); return;
    case isa::Opcode::Mul: for (int64_t i = 0; i < n; i++) out[i] = (V)(a[i] * b[i]); return;
    case isa::Opcode::Fma: for (int64_t i = 0; i < n; i++) out[i] = (V)(a[i] * b[i] + c[i]); return;
    default: break;
    }
    const V zero = V(0);
    for (int64_t i = 0; i < n; i++) out[i] = apply<V>(op, a[i], b ? b[i] : zero, c ? c[i] : zero);
}

template <typename V>
void run_elementwise(isa::Opcode op, const ElementwiseFields &e, Scratchpad &sp, const std::vector<double> &params,
                     bool functional) {
    const int64_t eb = dtype_bytes(e.type);
    if (!functional) {
        // Timing phase: exact O(1) bounds of every operand over all rows. The unit computes row
        // by row, so when a source overlaps the destination a row may read what an earlier row
        // wrote: then the poison check goes row by row too.
        static const char *what[3] = {"SFU operand a", "SFU operand b", "SFU operand c"};
        const ByteBox dst{e.dst, e.n * eb, e.rows, e.dst_stride};
        ByteBox boxes[3];
        bool row_by_row = false;
        for (int s = 0; s < e.num_sources; s++) {
            const Source &src = e.src[s];
            if (src.mode == 0 || src.mode == 1) {
                boxes[s] = ByteBox{src.addr, src.mode == 0 ? e.n * eb : eb, e.rows, src.stride};
                row_by_row = row_by_row || (e.rows > 1 && bounding_overlap(boxes[s], dst));
            }
            if (src.mode == 3 && (e.imm < 0 || e.imm >= (int64_t)params.size())) {
                throw RuleViolation("operand reads run-time parameter " + std::to_string(e.imm) + " but only " +
                                    std::to_string(params.size()) + " were passed");
            }
        }
        const Poison poison = row_by_row ? Poison::Skip : Poison::Check;
        for (int s = 0; s < e.num_sources; s++) {
            if (e.src[s].mode > 1) continue;
            sp.check_box(boxes[s].base, boxes[s].len, e.rows, boxes[s].row_stride, 1, 0, what[s], Access::Read, poison);
        }
        sp.check_box(e.dst, e.n * eb, e.rows, e.dst_stride, 1, 0, "SFU destination", Access::Write, poison);
        if (!row_by_row) return;
        for (int64_t r = 0; r < e.rows; r++) {
            for (int s = 0; s < e.num_sources; s++) {
                if (e.src[s].mode > 1) continue;
                sp.require_written(ByteBox{boxes[s].base + r * boxes[s].row_stride, boxes[s].len}, what[s]);
            }
            sp.mark_written(ByteBox{e.dst + r * e.dst_stride, e.n * eb});
        }
        return;
    }
    std::vector<V> in[3];
    for (int s = 0; s < e.num_sources; s++) in[s].resize(functional ? e.n : 0);
    std::vector<V> out(functional ? e.n : 0);
    static const char *names[3] = {"SFU operand a", "SFU operand b", "SFU operand c"};
    uint8_t *base = sp.data();
    for (int64_t r = 0; r < e.rows; r++) {
        for (int s = 0; s < e.num_sources; s++) {
            fetch_row<V>(e.src[s], r, e.n, e.type, sp, base, e.imm, params, functional, in[s].data(), names[s]);
        }
        const int64_t d = e.dst + r * e.dst_stride;
        sp.check_write(d, e.n * eb, "SFU destination");
        if (!functional) continue;
        apply_row<V>(op, e, in, out.data());
        if constexpr (std::is_same_v<V, float>) {
            if (e.type == DType::F16) {
                floats_to_halves(out.data(), reinterpret_cast<uint16_t *>(base + d), e.n);
                continue;
            }
            if (e.type == DType::F32) {
                std::memcpy(base + d, out.data(), e.n * 4);
                continue;
            }
        }
        for (int64_t i = 0; i < e.n; i++) {
            if constexpr (std::is_same_v<V, float>) {
                store_float(base + d + i * eb, e.type, out[i]);
            } else {
                store_int(base + d + i * eb, e.type, out[i]);
            }
        }
    }
}

#define SPYRE_READ_COMMON(NS)                      \
    e.dst = f[isa::field::NS::dst];                \
    e.dst_stride = f[isa::field::NS::dst_stride];  \
    e.n = f[isa::field::NS::n];                    \
    e.rows = f[isa::field::NS::rows];              \
    e.imm = f[isa::field::NS::imm];                \
    e.type = (DType)f[isa::field::NS::type];       \
    e.src[0] = {f[isa::field::NS::a], f[isa::field::NS::a_stride], f[isa::field::NS::a_mode]};

ElementwiseFields unary_fields(const int64_t *f) {
    ElementwiseFields e{};
    SPYRE_READ_COMMON(Copy)
    e.num_sources = 1;
    return e;
}

ElementwiseFields binary_fields(const int64_t *f) {
    ElementwiseFields e{};
    SPYRE_READ_COMMON(Add)
    e.src[1] = {f[isa::field::Add::b], f[isa::field::Add::b_stride], f[isa::field::Add::b_mode]};
    e.num_sources = 2;
    return e;
}

ElementwiseFields ternary_fields(const int64_t *f) {
    ElementwiseFields e{};
    SPYRE_READ_COMMON(Fma)
    e.src[1] = {f[isa::field::Fma::b], f[isa::field::Fma::b_stride], f[isa::field::Fma::b_mode]};
    e.src[2] = {f[isa::field::Fma::c], f[isa::field::Fma::c_stride], f[isa::field::Fma::c_mode]};
    e.num_sources = 3;
    return e;
}
#undef SPYRE_READ_COMMON

void run_cast(const int64_t *f, Scratchpad &sp, bool functional) {
    namespace F = isa::field::Cast;
    const DType st = (DType)f[F::type], dt = (DType)f[F::dst_type];
    const int64_t n = f[F::n], seb = dtype_bytes(st), deb = dtype_bytes(dt);
    if (!functional) {
        // Row by row when the source overlaps the destination, as for element-wise ops.
        const ByteBox src{f[F::a], n * seb, f[F::rows], f[F::a_stride]}, dst{f[F::dst], n * deb, f[F::rows], f[F::dst_stride]};
        const bool row_by_row = f[F::rows] > 1 && bounding_overlap(src, dst);
        const Poison poison = row_by_row ? Poison::Skip : Poison::Check;
        sp.check_box(f[F::a], n * seb, f[F::rows], f[F::a_stride], 1, 0, "sfu.cast source", Access::Read, poison);
        sp.check_box(f[F::dst], n * deb, f[F::rows], f[F::dst_stride], 1, 0, "sfu.cast destination", Access::Write, poison);
        if (!row_by_row) return;
        for (int64_t r = 0; r < f[F::rows]; r++) {
            sp.require_written(ByteBox{f[F::a] + r * f[F::a_stride], n * seb}, "sfu.cast source");
            sp.mark_written(ByteBox{f[F::dst] + r * f[F::dst_stride], n * deb});
        }
        return;
    }
    uint8_t *base = sp.data();
    for (int64_t r = 0; r < f[F::rows]; r++) {
        const int64_t a = f[F::a] + r * f[F::a_stride];
        const int64_t d = f[F::dst] + r * f[F::dst_stride];
        sp.check_read(a, n * seb, "sfu.cast source");
        sp.check_write(d, n * deb, "sfu.cast destination");
        if (!functional) continue;
        if (st == DType::F32 && dt == DType::F16) {
            std::vector<float> src(n);
            std::memcpy(src.data(), base + a, n * 4);
            floats_to_halves(src.data(), reinterpret_cast<uint16_t *>(base + d), n);
            continue;
        }
        if (st == DType::F16 && dt == DType::F32) {
            std::vector<float> dst(n);
            halves_to_floats(reinterpret_cast<const uint16_t *>(base + a), dst.data(), n);
            std::memcpy(base + d, dst.data(), n * 4);
            continue;
        }
        // Cast row through a temporary so overlapping source/destination rows behave as a copy.
        std::vector<uint8_t> tmp(n * deb);
        for (int64_t i = 0; i < n; i++) {
            if (dtype_is_float(dt)) {
                store_float(&tmp[i * deb], dt, load_float(base + a + i * seb, st));
            } else {
                store_int(&tmp[i * deb], dt, load_int(base + a + i * seb, st));
            }
        }
        std::memcpy(base + d, tmp.data(), tmp.size());
    }
}

template <typename V>
void run_reduce(isa::Opcode op, const int64_t *f, Scratchpad &sp, bool functional) {
    namespace F = isa::field::RowSum;
    const DType t = (DType)f[F::type];
    const int64_t n = f[F::n], rows = f[F::rows], eb = dtype_bytes(t);
    const bool acc = f[F::accumulate] != 0;
    const bool is_max = op == isa::Opcode::RowMax || op == isa::Opcode::ColMax;
    const bool by_row = op == isa::Opcode::RowSum || op == isa::Opcode::RowMax;
    // The identities: -inf for a float max (IEEE maximum(-inf, x) == x), the lowest value for an integer max.
    V identity = V(0);
    if (is_max) {
        if constexpr (std::is_same_v<V, float>) {
            identity = -std::numeric_limits<float>::infinity();
        } else {
            identity = std::numeric_limits<V>::lowest();
        }
    }
    uint8_t *base = sp.data();
    auto load = [&](int64_t addr) -> V {
        if constexpr (std::is_same_v<V, float>) {
            return load_float(base + addr, t);
        } else {
            return load_int(base + addr, t);
        }
    };
    auto store = [&](int64_t addr, V v) {
        if constexpr (std::is_same_v<V, float>) {
            store_float(base + addr, t, v);
        } else {
            store_int(base + addr, t, v);
        }
    };
    auto combine = [&](V s, V x) -> V {
        if (is_max) return max_of(s, x);
        return (V)(s + x);
    };
    if (!functional) {
        sp.check_box(f[F::a], n * eb, rows, f[F::a_stride], 1, 0, "SFU reduction source");
        if (acc) {
            sp.require_written(by_row ? ByteBox{f[F::dst], eb, rows, f[F::dst_stride]} : ByteBox{f[F::dst], n * eb},
                               "SFU reduction accumulator");
        }
        if (by_row) sp.check_box(f[F::dst], eb, rows, f[F::dst_stride], 1, 0, "SFU reduction destination", Access::Write);
        else sp.check_box(f[F::dst], n * eb, 1, 0, 1, 0, "SFU reduction destination", Access::Write);
        return;
    }
    for (int64_t r = 0; r < rows; r++) sp.check_read(f[F::a] + r * f[F::a_stride], n * eb, "SFU reduction source");
    if (by_row) {
        for (int64_t r = 0; r < rows; r++) {
            const int64_t d = f[F::dst] + r * f[F::dst_stride];
            if (acc) sp.check_read(d, eb, "SFU reduction accumulator");
            sp.check_write(d, eb, "SFU reduction destination");
            if (!functional) continue;
            V s = acc ? load(d) : identity;
            const int64_t a = f[F::a] + r * f[F::a_stride];
            for (int64_t i = 0; i < n; i++) s = combine(s, load(a + i * eb));
            store(d, s);
        }
    } else {
        const int64_t d = f[F::dst];
        if (acc) sp.check_read(d, n * eb, "SFU reduction accumulator");
        sp.check_write(d, n * eb, "SFU reduction destination");
        if (!functional) return;
        std::vector<V> s(n, identity);
        if (acc) {
            for (int64_t i = 0; i < n; i++) s[i] = load(d + i * eb);
        }
        for (int64_t r = 0; r < rows; r++) {
            const int64_t a = f[F::a] + r * f[F::a_stride];
            for (int64_t i = 0; i < n; i++) s[i] = combine(s[i], load(a + i * eb));
        }
        for (int64_t i = 0; i < n; i++) store(d + i * eb, s[i]);
    }
}

}  // namespace

void execute_sfu(isa::Opcode op, const int64_t *f, Scratchpad &sp, const std::vector<double> &params, bool functional) {
    using isa::Opcode;
    const isa::OpcodeSpec &spec = isa::opcode_spec(op);
    switch (op) {
    case Opcode::Cast: run_cast(f, sp, functional); return;
    case Opcode::RowSum:
    case Opcode::RowMax:
    case Opcode::ColSum:
    case Opcode::ColMax:
        if (dtype_is_float((DType)f[isa::field::RowSum::type])) {
            run_reduce<float>(op, f, sp, functional);
        } else {
            run_reduce<int64_t>(op, f, sp, functional);
        }
        return;
    default: break;
    }
    ElementwiseFields e;
    if (spec.num_fields == isa::field::Copy::kNumFields) {
        e = unary_fields(f);
    } else if (spec.num_fields == isa::field::Add::kNumFields) {
        e = binary_fields(f);
    } else {
        e = ternary_fields(f);
    }
    if (dtype_is_float(e.type)) {
        run_elementwise<float>(op, e, sp, params, functional);
    } else {
        run_elementwise<int64_t>(op, e, sp, params, functional);
    }
}

}  // namespace sim
}  // namespace spyre
