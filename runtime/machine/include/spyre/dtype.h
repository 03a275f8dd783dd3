// Element types of Spyre tensors and scratchpad data, and the IEEE binary16
// conversions the simulator uses (round to nearest even).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace spyre {

// SPYRE_DTYPE(enum name, text name, element bytes)
#define SPYRE_DTYPES(X) \
    X(F32, "f32", 4)    \
    X(F16, "f16", 2)    \
    X(I32, "i32", 4)    \
    X(I8, "i8", 1)

enum class DType : uint8_t {
#define X(e, s, b) e,
    SPYRE_DTYPES(X)
#undef X
};
constexpr int kNumDTypes = 4;

inline int dtype_bytes(DType t) {
    switch (t) {
#define X(e, s, b) \
    case DType::e: return b;
        SPYRE_DTYPES(X)
#undef X
    }
    return 0;
}

inline const char *dtype_name(DType t) {
    switch (t) {
#define X(e, s, b) \
    case DType::e: return s;
        SPYRE_DTYPES(X)
#undef X
    }
    return "?";
}

// Returns false when the text names no dtype.
inline bool parse_dtype(const std::string &s, DType *out) {
#define X(e, str, b)         \
    if (s == str) {          \
        *out = DType::e;     \
        return true;         \
    }
    SPYRE_DTYPES(X)
#undef X
    return false;
}

inline bool dtype_is_float(DType t) { return t == DType::F32 || t == DType::F16; }

// IEEE 754 binary16 <-> binary32, round to nearest even, with NaN/Inf/subnormals.
inline float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {
            // subnormal: normalize
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while ((man & 0x400) == 0);
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t float_to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffff;
    if (absx >= 0x7f800000u) {  // Inf or NaN
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    }
    if (absx >= 0x477ff000u) {  // rounds to >= 65520: overflow to Inf
        return (uint16_t)(sign | 0x7c00);
    }
    if (absx < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
        if (absx < 0x33000000u) return (uint16_t)sign;  // < 2^-25 rounds to zero
        uint32_t e = absx >> 23;
        uint32_t m = (absx & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e;  // 14 - (e - 127) + 13 - 1 ... mantissa shift to subnormal position
        // value = m * 2^(e-150); subnormal unit = 2^-24 -> result = m * 2^(e-126)
        uint32_t r = m >> (shift - 0);
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t e = (absx >> 23) - 127 + 15;
    uint32_t m = absx & 0x7fffff;
    uint32_t r = (e << 10) | (m >> 13);
    uint32_t rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

}  // namespace spyre
