// PT unit semantics: C[m][n] (+)= sum_k A[m][k] * B[k][n] over scratchpad
// tiles. f16 and f32 inputs accumulate in f32, i8 inputs in i32. Every output
// element is accumulated in increasing k order with separately rounded
// multiply and add (no fused multiply-add), exactly as a host loop
// `c += a * b` computes it, so results are bit-exact against such a reference.
// i8: each product is exact (at most 2^14 in magnitude) and each sum is a
// two's-complement int32 add that wraps around on overflow (INT32_MAX + 1 ==
// INT32_MIN), which is what Halide's int32 arithmetic gives on the host, so an
// int8 matmul is bit-exact against its host build whatever the sums.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "spyre/dtype.h"
#include "half_convert.h"
#include "unit_semantics.h"

namespace spyre {
namespace sim {

namespace {

// Portable kernel: every c element accumulates in increasing k.
void accumulate_rows_f32_portable(float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k) {
    for (int64_t i = 0; i < m; i++) {
        float *crow = c + i * n;
        const float *arow = a + i * k;
        for (int64_t kk = 0; kk < k; kk++) {
            const float av = arow[kk];
            const float *brow = b + kk * n;
            for (int64_t j = 0; j < n; j++) crow[j] = crow[j] + av * brow[j];
        }
    }
}

// AVX2 kernel: 4 x 16 blocks of C held in registers across the whole k loop,
// separate multiply and add (no FMA), so each element sees exactly the
// portable kernel's operations in the same order.
__attribute__((target("avx2"))) void accumulate_rows_f32_avx2(float *c, const float *a, const float *b, int64_t m,
                                                                int64_t n, int64_t k) {
    const int64_t m4 = m / 4 * 4, n16 = n / 16 * 16;
    for (int64_t i = 0; i < m4; i += 4) {
        for (int64_t j = 0; j < n16; j += 16) {
            float *c0 = c + i * n + j;
            __m256 acc[4][2];
            for (int r = 0; r < 4; r++) {
                acc[r][0] = _mm256_loadu_ps(c0 + r * n);
                acc[r][1] = _mm256_loadu_ps(c0 + r * n + 8);
            }
            const float *arow = a + i * k;
            for (int64_t kk = 0; kk < k; kk++) {
                const __m256 b0 = _mm256_loadu_ps(b + kk * n + j);
                const __m256 b1 = _mm256_loadu_ps(b + kk * n + j + 8);
                for (int r = 0; r < 4; r++) {
                    const __m256 av = _mm256_broadcast_ss(arow + r * k + kk);
                    acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_mul_ps(av, b0));
                    acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_mul_ps(av, b1));
                }
            }
            for (int r = 0; r < 4; r++) {
                _mm256_storeu_ps(c0 + r * n, acc[r][0]);
                _mm256_storeu_ps(c0 + r * n + 8, acc[r][1]);
            }
        }
        // Columns past the last 16-block.
        for (int r = 0; r < 4; r++) {
            float *crow = c + (i + r) * n;
            const float *arow = a + (i + r) * k;
            for (int64_t kk = 0; kk < k; kk++) {
                const float av = arow[kk];
                for (int64_t j = n16; j < n; j++) crow[j] = crow[j] + av * b[kk * n + j];
            }
        }
    }
    // Rows past the last 4-block.
    accumulate_rows_f32_portable(c + m4 * n, a + m4 * k, b, m - m4, n, k);
}

void accumulate_rows_f32(float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k) {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) return accumulate_rows_f32_avx2(c, a, b, m, n, k);
    accumulate_rows_f32_portable(c, a, b, m, n, k);
}

// The i8 kernel is compiled twice, for AVX2 (auto-vectorised) and portable,
// and picked at run time like the f32 one. (Not with target_clones: its IFUNC
// resolver runs while the dynamic loader relocates the library, before a
// sanitizer runtime is initialised, and crashes ThreadSanitizer builds.)
inline __attribute__((always_inline)) void accumulate_rows_i8_body(int32_t *c, const int8_t *a, const int8_t *b, int64_t m,
                                                                   int64_t n, int64_t k) {
    for (int64_t i = 0; i < m; i++) {
        int32_t *crow = c + i * n;
        const int8_t *arow = a + i * k;
        for (int64_t kk = 0; kk < k; kk++) {
            const int32_t av = arow[kk];
            const int8_t *brow = b + kk * n;
            // Two's-complement wrap-around like the SFU's i32 results (a signed
            // int32 overflow would be undefined behaviour); the product itself fits.
            for (int64_t j = 0; j < n; j++) crow[j] = (int32_t)((uint32_t)crow[j] + (uint32_t)(av * (int32_t)brow[j]));
        }
    }
}

__attribute__((target("avx2"))) void accumulate_rows_i8_avx2(int32_t *c, const int8_t *a, const int8_t *b, int64_t m,
                                                               int64_t n, int64_t k) {
    accumulate_rows_i8_body(c, a, b, m, n, k);
}

void accumulate_rows_i8_portable(int32_t *c, const int8_t *a, const int8_t *b, int64_t m, int64_t n, int64_t k) {
    accumulate_rows_i8_body(c, a, b, m, n, k);
}

void accumulate_rows_i8(int32_t *c, const int8_t *a, const int8_t *b, int64_t m, int64_t n, int64_t k) {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) return accumulate_rows_i8_avx2(c, a, b, m, n, k);
    accumulate_rows_i8_portable(c, a, b, m, n, k);
}

void gather_as_float(const uint8_t *base, int64_t stride, int64_t rows, int64_t cols, DType t, float *out) {
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *row = base + r * stride;
        float *o = out + r * cols;
        if (t == DType::F32) {
            std::memcpy(o, row, cols * 4);
        } else {
            halves_to_floats(reinterpret_cast<const uint16_t *>(row), o, cols);
        }
    }
}

}  // namespace

void execute_matmul(const int64_t *f, Scratchpad &sp, bool functional) {
    namespace F = isa::field::Matmul;
    const int64_t m = f[F::m], n = f[F::n], k = f[F::k];
    const DType t = (DType)f[F::in_type];
    const int64_t eb = dtype_bytes(t);
    const bool accumulate = f[F::accumulate] != 0;
    sp.check_box(f[F::a], k * eb, m, f[F::lda], 1, 0, "pt.matmul operand A");
    sp.check_box(f[F::b], n * eb, k, f[F::ldb], 1, 0, "pt.matmul operand B");
    if (accumulate) sp.require_written(ByteBox{f[F::c], n * 4, m, f[F::ldc]}, "pt.matmul accumulator C");
    sp.check_box(f[F::c], n * 4, m, f[F::ldc], 1, 0, "pt.matmul result C", Access::Write);
    if (!functional) return;
    for (int64_t i = 0; i < m; i++) sp.check_read(f[F::a] + i * f[F::lda], k * eb, "pt.matmul operand A");
    for (int64_t kk = 0; kk < k; kk++) sp.check_read(f[F::b] + kk * f[F::ldb], n * eb, "pt.matmul operand B");
    for (int64_t i = 0; i < m; i++) {
        if (accumulate) sp.check_read(f[F::c] + i * f[F::ldc], n * 4, "pt.matmul accumulator C");
        sp.check_write(f[F::c] + i * f[F::ldc], n * 4, "pt.matmul result C");
    }

    uint8_t *base = sp.data();
    if (t == DType::I8) {
        std::vector<int8_t> a(m * k), b(k * n);
        std::vector<int32_t> c(m * n, 0);
        for (int64_t i = 0; i < m; i++) std::memcpy(&a[i * k], base + f[F::a] + i * f[F::lda], k);
        for (int64_t kk = 0; kk < k; kk++) std::memcpy(&b[kk * n], base + f[F::b] + kk * f[F::ldb], n);
        if (accumulate) {
            for (int64_t i = 0; i < m; i++) std::memcpy(&c[i * n], base + f[F::c] + i * f[F::ldc], n * 4);
        }
        accumulate_rows_i8(c.data(), a.data(), b.data(), m, n, k);
        for (int64_t i = 0; i < m; i++) std::memcpy(base + f[F::c] + i * f[F::ldc], &c[i * n], n * 4);
        return;
    }
    std::vector<float> a(m * k), b(k * n), c(m * n, 0.0f);
    gather_as_float(base + f[F::a], f[F::lda], m, k, t, a.data());
    gather_as_float(base + f[F::b], f[F::ldb], k, n, t, b.data());
    if (accumulate) gather_as_float(base + f[F::c], f[F::ldc], m, n, DType::F32, c.data());
    accumulate_rows_f32(c.data(), a.data(), b.data(), m, n, k);
    for (int64_t i = 0; i < m; i++) std::memcpy(base + f[F::c] + i * f[F::ldc], &c[i * n], n * 4);
}

}  // namespace sim
}  // namespace spyre
