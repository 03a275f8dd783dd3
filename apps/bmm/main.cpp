// bmm: runs the Spyre build of gen_bmm (on the simulated device) and its host
// build on the same random inputs and compares them.
//   C(n, m, b) = sum_k A(k, m, b) * B(n, k, b), float16, fp32 accumulation.
// Shapes are static (compiled into both kernels by apps/bmm/CMakeLists.txt).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include "output_files.h"
#include "HalideBuffer.h"
#include "bmm_host.h"
#include "bmm_spyre.h"
#include "spyre/spyre_runtime.h"

namespace {

// Must match the generator params of apps/bmm/CMakeLists.txt (the defaults).
constexpr int kBatch = 8, kM = 512, kN = 512, kK = 512;

using Halide::Runtime::Buffer;

// IEEE binary16 <-> binary32, round to nearest even.
uint16_t float_to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));  // inf/nan
    if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                                       // overflow
    if (abs < 0x38800000u) {                                                                         // subnormal/zero
        const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const int shift = 113 - (int)(abs >> 23) + 13;
        if (shift > 24) return (uint16_t)sign;
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((abs >> 13) - (112u << 10));
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

float half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {  // subnormal: normalise
            int e = -1;
            uint32_t m = mant;
            do {
                e++;
                m <<= 1;
            } while (!(m & 0x400u));
            x = sign | ((uint32_t)(112 - e) << 23) | ((m & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

const halide_type_t kF16{halide_type_float, 16, 1};

uint16_t *f16_data(Buffer<void> &b) {
    return static_cast<uint16_t *>(b.data());
}

// Dense float16 tensor with values in [-1, 1] (already rounded to fp16).
Buffer<void> random_f16(std::mt19937 &rng, int d0, int d1, int d2) {
    Buffer<void> b(kF16, d0, d1, d2);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    uint16_t *p = f16_data(b);
    for (size_t i = 0; i < b.number_of_elements(); i++) p[i] = float_to_half(dist(rng));
    return b;
}

// Halide's default error handler aborts the process; the demo prints the message and
// reports the failing call's code instead.
void print_halide_error(void *, const char *message) { std::fprintf(stderr, "%s", message); }

}  // namespace

int main() {
    check_stdout_at_exit("bmm");
    halide_set_error_handler(print_halide_error);
    if (spyre_timing_only()) {
        std::fprintf(stderr, "bmm: this demo checks the Spyre kernel's values against the host build, and a "
                             "timing-only run (SPYRE_TIMING_ONLY=1) computes none; run it without SPYRE_TIMING_ONLY, "
                             "or time the program alone with build/bin/spyre-run --timing-only on its .spyre file\n");
        return 1;
    }
    std::printf("bmm: C(n,m,b) = sum_k A(k,m,b) * B(n,k,b), float16, batch=%d m=%d n=%d k=%d\n", kBatch, kM, kN, kK);
    std::mt19937 rng(20240607);
    Buffer<void> A = random_f16(rng, kK, kM, kBatch);
    Buffer<void> B = random_f16(rng, kN, kK, kBatch);
    Buffer<void> C_host(kF16, kN, kM, kBatch), C_spyre(kF16, kN, kM, kBatch);

    int rc = bmm_host(A, B, C_host);
    if (rc != 0) {
        std::printf("bmm_host failed: %d\nbmm: FAIL\n", rc);
        return 1;
    }
    rc = bmm_spyre(A, B, C_spyre);
    if (rc != 0) {
        std::printf("bmm_spyre failed: %d (%s)\nbmm: FAIL\n", rc, spyre_last_error());
        return 1;
    }

    const uint16_t *a = f16_data(A), *bb = f16_data(B), *ch = f16_data(C_host), *cs = f16_data(C_spyre);
    bool ok = true;

    // The host reference against a double-precision sample, and not trivial.
    std::uniform_int_distribution<int> pick_n(0, kN - 1), pick_m(0, kM - 1), pick_b(0, kBatch - 1);
    double ref_abs_sum = 0, sample_err = 0;
    const size_t c_mstride = kN, c_bstride = (size_t)kN * kM;
    for (int s = 0; s < 256; s++) {
        const int n = pick_n(rng), m = pick_m(rng), b = pick_b(rng);
        double exact = 0;
        for (int k = 0; k < kK; k++) {
            exact += (double)half_to_float(a[k + (size_t)kK * (m + (size_t)kM * b)]) *
                     (double)half_to_float(bb[n + (size_t)kN * (k + (size_t)kK * b)]);
        }
        const double got = half_to_float(ch[n + c_mstride * m + c_bstride * b]);
        sample_err = std::fmax(sample_err, std::fabs(got - exact) / (std::fabs(exact) + 0.05));
        ref_abs_sum += std::fabs(exact);
    }
    size_t distinct_nonzero = 0;
    float first = half_to_float(ch[0]);
    for (size_t i = 0; i < C_host.number_of_elements(); i++) {
        const float v = half_to_float(ch[i]);
        if (v != 0.0f && v != first) distinct_nonzero++;
    }
    if (ref_abs_sum / 256 < 0.5 || distinct_nonzero < C_host.number_of_elements() / 2) {
        std::printf("reference is trivial (mean |C| %.3g, %zu varying values)\n", ref_abs_sum / 256, distinct_nonzero);
        ok = false;
    }
    if (sample_err > 1e-2) {
        std::printf("host reference disagrees with a double-precision sample: rel err %.3g\n", sample_err);
        ok = false;
    }

    // Spyre against host: fp16 output, fp32 accumulation in both; the
    // tolerance grows with the reduction length.
    const double rtol = 1e-2, atol = 1e-3 * std::sqrt((double)kK);
    double max_abs = 0, max_rel = 0;
    size_t bad = 0;
    for (size_t i = 0; i < C_host.number_of_elements(); i++) {
        const double r = half_to_float(ch[i]), s = half_to_float(cs[i]);
        const double d = std::fabs(r - s);
        if (!(d <= atol + rtol * std::fabs(r))) {
            if (bad < 5) {
                const size_t n = i % kN, m = (i / kN) % kM, b = i / c_bstride;
                std::printf("mismatch at n=%zu m=%zu b=%zu: host %g spyre %g\n", n, m, b, r, s);
            }
            bad++;
        }
        max_abs = std::fmax(max_abs, d);
        max_rel = std::fmax(max_rel, d / std::fmax(std::fabs(r), atol));
    }
    std::printf("spyre vs host: max abs err %.3g, max rel err %.3g (atol %.3g, rtol %.3g), %zu mismatches\n", max_abs,
                max_rel, atol, rtol, bad);
    if (bad) ok = false;

    spyre_kernel_stats st;
    if (spyre_get_last_run_stats(&st) == 0) {
        std::printf("spyre: kernel %s: %.0f cycles, %.2f us simulated (roofline bound %.2f us), PT utilization %.1f%% "
                    "of the datasheet peak (%.1f%% of the sustained rate), "
                    "%llu MACs, DRAM read %llu B write %llu B, bottleneck %s\n",
                    st.kernel, st.cycles, st.simulated_us, st.roofline_bound_us, 100.0 * st.pt_utilization,
                    100.0 * st.pt_sustained_utilization,
                    (unsigned long long)st.macs, (unsigned long long)st.dram_read_bytes,
                    (unsigned long long)st.dram_write_bytes, st.bottleneck);
    } else {
        std::printf("spyre: no run statistics available\n");
    }

    std::printf("bmm: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
