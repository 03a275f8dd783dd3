// spyre::compute_one_iteration_ahead: a Func computed in the scratchpad at a
// loop is pipelined like a staged load (double_buffering.h): the writers of the
// next iteration's tile are issued before the rest of this iteration, so the PT
// computes tile t+1 while the SFU consumes tile t. Same results as program
// order, bit for bit, in every synchronization mode, and faster; the backend
// refuses a Func that is not in the scratchpad, naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "jit_helpers.h"
#include "spyre/spyre_runtime.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"

namespace spyre::testing {
namespace {

using namespace Halide;

// Attention's shape of work, small: per tile of 64 rows, S(n, m) = sum_k A(k, m) B(n, k) on the
// PT, E(n, m) = exp(S(n, m) * 0.01) * 0.5 + S(n, m) on the SFU, then out(c, m) = sum_n E(n, m)
// C(c, n) on the PT (one f32 stick of columns); `tiles` tiles on each of 4 cores. In program
// order each tile's SFU work waits for its S and holds up its second matmul; with S computed a tile
// ahead the PT computes S(t+1) while the SFU computes E(t).
struct ScoresThenSfu {
    static constexpr int N = 512, K = 32, Cols = 32, Rows = 64, Cores = 4;
    const int M;
    ImageParam A, B, C;
    Func S{"ca_scores"}, E{"ca_e"}, O{"ca_o"}, out{"ca_out"};
    Var n{"n"}, m{"m"}, c{"c"}, core{"core"}, mr{"mr"}, mo{"mo"}, mi{"mi"};
    RDom k, r;

    ScoresThenSfu(const std::string &prefix, bool ahead, int tiles = 8)
        : M(Rows * tiles * Cores), A(Float(32), 2, prefix + "_A"), B(Float(32), 2, prefix + "_B"),
          C(Float(32), 2, prefix + "_C") {
        set_compiling_for_spyre(true);
        k = RDom(0, K, "k");
        r = RDom(0, N, "r");
        S(n, m) = 0.0f;
        S(n, m) += A(k, m) * B(n, k);
        E(n, m) = exp(S(n, m) * 0.01f) * 0.5f + S(n, m);
        O(c, m) = 0.0f;
        O(c, m) += E(r, m) * C(c, r);
        out(c, m) = O(c, m);
        constrain_tensor(A, {K, M});
        constrain_tensor(B, {N, K});
        constrain_tensor(C, {Cols, N});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {Cols, M});
        out.split(m, core, mr, M / Cores).split(mr, mo, mi, Rows).parallel(core).reorder(c, mi, mo, core);
        stick_vectorize(out, c);
        accumulate_in_scratchpad(O, out, mo);
        matmul_on_pt(O, r, c, m);
        stage_in_scratchpad(E, out, mo);
        accumulate_in_scratchpad(S, out, mo);
        matmul_on_pt(S, k, n, m);
        double_buffer(A.in(), out, mo);
        stage_in_scratchpad(B.in(), out, core);
        stage_in_scratchpad(C.in(), out, core);
        if (ahead) compute_one_iteration_ahead(S);
    }

    // out_dir: where the program's disassembly goes (<kernel>.spyre.txt); empty: nowhere.
    Buffer<float> run(const std::string &kernel, double *simulated_us, const std::string &out_dir = "") {
        Buffer<float> a(K, M, A.name()), b(N, K, B.name()), cm(Cols, N, C.name());
        a.for_each_element([&](int i, int j) { a(i, j) = (float)((i * 7 + j * 13) % 23) / 7.0f - 1.5f; });
        b.for_each_element([&](int i, int j) { b(i, j) = (float)((i * 5 + j * 11) % 19) / 9.0f - 1.0f; });
        cm.for_each_element([&](int i, int j) { cm(i, j) = (float)((i * 3 + j * 17) % 29) / 14.0f - 1.0f; });
        A.set(a);
        B.set(b);
        C.set(cm);
        SpyreLoweringOptions o;
        o.kernel_name = kernel;
        o.output_dir = out_dir;
        attach_spyre_lowering(out, o);
        Buffer<float> res = out.realize({Cols, M}, Target("x86-64-linux"));
        set_compiling_for_spyre(false);
        spyre_kernel_stats st;
        EXPECT_EQ(spyre_get_last_run_stats(&st), 0);
        *simulated_us = st.simulated_us;
        // Against the formula in double: the PT accumulates in f32, so to rounding.
        for (int j = 0; j < M; j += 37) {
            std::vector<double> e(N);
            for (int i = 0; i < N; i++) {
                double s = 0;
                for (int kk = 0; kk < K; kk++) s += (double)a(kk, j) * b(i, kk);
                e[i] = std::exp(s * 0.01) * 0.5 + s;
            }
            for (int col = 0; col < Cols; col++) {
                double ref = 0;
                for (int i = 0; i < N; i++) ref += e[i] * cm(col, i);
                EXPECT_NEAR(res(col, j), ref, 1e-3 * (1 + std::fabs(ref))) << col << "," << j;
            }
        }
        return res;
    }
};

TEST(ComputeAhead, TheNextTilesMatmulOverlapsThisTilesSfuWorkWithTheSameResults) {
    double plain_us = 0, ahead_us = 0;
    ScoresThenSfu plain("ca_plain", false);
    Buffer<float> a = plain.run("ca_plain", &plain_us);
    ScoresThenSfu ahead("ca_ahead", true);
    Buffer<float> b = ahead.run("ca_ahead", &ahead_us);
    for (int j = 0; j < plain.M; j++)
        for (int i = 0; i < ScoresThenSfu::Cols; i++) ASSERT_EQ(a(i, j), b(i, j)) << i << "," << j;
    EXPECT_LT(ahead_us, plain_us * 0.95) << "the scores of the next tile did not overlap this tile's SFU work: "
                                         << ahead_us << " us vs " << plain_us << " us";
}

TEST(ComputeAhead, EverySynchronizationModeGivesTheSameResult) {
    for (const char *mode : {"serial", "random"}) {
        set_sync_mode(mode, 7);
        double us = 0, normal_us = 0;
        ScoresThenSfu mode_run(std::string("ca_") + mode, true);
        Buffer<float> r = mode_run.run(std::string("ca_") + mode, &us);
        unsetenv("SPYRE_SYNC");
        unsetenv("SPYRE_SEED");
        ScoresThenSfu normal(std::string("ca_n") + mode, true);
        Buffer<float> n = normal.run(std::string("ca_n") + mode, &normal_us);
        for (int j = 0; j < normal.M; j++)
            for (int i = 0; i < ScoresThenSfu::Cols; i++) ASSERT_EQ(r(i, j), n(i, j)) << mode << " " << i << "," << j;
    }
}

// Every shape of the pipeline: 2 to 7 tiles a core (no pipelined pair, one or two inlined,
// a loop of them; odd counts end with a tile on the first copy), the same bits as program order.
TEST(ComputeAhead, EveryTripCountKeepsTheResults) {
    for (int tiles = 2; tiles <= 7; tiles++) {
        double plain_us = 0, ahead_us = 0;
        const std::string n = std::to_string(tiles);
        ScoresThenSfu plain("ca_tp" + n, false, tiles);
        Buffer<float> a = plain.run("ca_tp" + n, &plain_us);
        ScoresThenSfu ahead("ca_ta" + n, true, tiles);
        Buffer<float> b = ahead.run("ca_ta" + n, &ahead_us);
        for (int j = 0; j < plain.M; j++)
            for (int i = 0; i < ScoresThenSfu::Cols; i++) ASSERT_EQ(a(i, j), b(i, j)) << tiles << " tiles: " << i << "," << j;
        EXPECT_LE(ahead_us, plain_us * 1.01) << tiles << " tiles per core";
    }
}

// The tensors core 0's DMA loads, in its queue's order, from a kernel's disassembly.
std::vector<std::string> core0_dma_loads(const std::string &path) {
    std::ifstream f(path);
    std::vector<std::string> loads;
    bool core0 = false, dma = false;
    for (std::string line; std::getline(f, line);) {
        if (line.rfind(".core ", 0) == 0) core0 = line == ".core 0";
        if (line.rfind(".unit ", 0) == 0) dma = line == ".unit dma";
        const size_t at = line.find("dma.load arg=");
        if (core0 && dma && at != std::string::npos) loads.push_back(line.substr(at + 13, line.find(' ', at + 13) - at - 13));
    }
    return loads;
}

// The first two tiles' loads lead core 0's DMA queue, ahead of C, which only the first tile's
// second matmul reads: with S computed ahead the PT computes S of both tiles before it needs C
// (attention's next Q tile ahead of a resident V). In program order C comes before the loop.
TEST(ComputeAhead, TheSecondTilesLoadIsNotQueuedBehindWhatOnlyTheFirstTilesLaterWorkReads) {
    const std::string dir = ::testing::TempDir();
    double plain_us = 0, ahead_us = 0;
    ScoresThenSfu plain("ca_qp", false);
    plain.run("ca_qp", &plain_us, dir);
    ScoresThenSfu ahead("ca_qa", true);
    ahead.run("ca_qa", &ahead_us, dir);
    const std::vector<std::string> p = core0_dma_loads(dir + "ca_qp.spyre.txt"), a = core0_dma_loads(dir + "ca_qa.spyre.txt");
    ASSERT_GE(a.size(), 4u);
    ASSERT_GE(p.size(), 4u);
    auto first_index = [](const std::vector<std::string> &v, const std::string &arg, int nth) {
        for (size_t i = 0; i < v.size(); i++) {
            if (v[i] == arg && nth-- == 0) return (int)i;
        }
        return -1;
    };
    for (int i : {first_index(a, "ca_qa_A", 1), first_index(a, "ca_qa_C", 0), first_index(p, "ca_qp_A", 1),
                  first_index(p, "ca_qp_C", 0)}) {
        ASSERT_GE(i, 0) << "ahead: " << ::testing::PrintToString(a) << ", program order: " << ::testing::PrintToString(p);
    }
    EXPECT_LT(first_index(a, "ca_qa_A", 1), first_index(a, "ca_qa_C", 0)) << "ahead: " << ::testing::PrintToString(a);
    EXPECT_GT(first_index(p, "ca_qp_A", 1), first_index(p, "ca_qp_C", 0)) << "program order: " << ::testing::PrintToString(p);
}

TEST(ComputeAhead, AFuncOutsideTheScratchpadIsRefusedNamingIt) {
    set_compiling_for_spyre(true);
    Func f("ca_not_staged");
    Var x("x");
    f(x) = x;
    const std::string msg = error_of([&] { compute_one_iteration_ahead(f); });
    EXPECT_NE(msg.find("compute_one_iteration_ahead"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ca_not_staged"), std::string::npos) << msg;
    EXPECT_NE(msg.find("store_in(MemoryType::VTCM)"), std::string::npos) << msg;
}

}  // namespace
}  // namespace spyre::testing
