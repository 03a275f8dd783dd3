// Bulk half <-> float conversion (see half_convert.h).
#include "half_convert.h"

#include <cpuid.h>
#include <immintrin.h>

#include "spyre/dtype.h"

namespace spyre {
namespace sim {

namespace {

__attribute__((target("f16c,avx"))) void halves_to_floats_f16c(const uint16_t *in, float *out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i));
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) out[i] = half_to_float(in[i]);
}

__attribute__((target("f16c,avx"))) void floats_to_halves_f16c(const float *in, uint16_t *out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 f = _mm256_loadu_ps(in + i);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i), _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i++) out[i] = float_to_half(in[i]);
}

// F16C is read from CPUID leaf 1 (ECX bit 29) because clang's
// __builtin_cpu_supports does not know "f16c"; the "avx" builtin also checks
// that the OS saves the YMM registers.
bool host_has_f16c() {
    static const bool yes = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
        return (ecx & bit_F16C) != 0 && __builtin_cpu_supports("avx");
    }();
    return yes;
}

}  // namespace

void halves_to_floats(const uint16_t *in, float *out, int64_t n) {
    if (host_has_f16c()) return halves_to_floats_f16c(in, out, n);
    for (int64_t i = 0; i < n; i++) out[i] = half_to_float(in[i]);
}

void floats_to_halves(const float *in, uint16_t *out, int64_t n) {
    if (host_has_f16c()) return floats_to_halves_f16c(in, out, n);
    for (int64_t i = 0; i < n; i++) out[i] = float_to_half(in[i]);
}

}  // namespace sim
}  // namespace spyre
