// plan_matmul_spyre's estimate against the simulator: for each shape the
// planner's own choice and alternatives forced through the tile_m, tile_n and
// max_cores knobs are compiled by gen_matmul and simulated timing-only
// (autoscheduler/candidate_evaluation.h). Checks, per shape:
//  - the planner's choice simulates within 10% of the best candidate;
//  - its estimate is within 20% of its simulated time (a far-off estimate
//    picks for the wrong reason);
//  - of the candidate pairs whose simulated times differ by more than 5%
//    (closer pairs are ties the model may break either way), at least 90% are
//    ordered the same by the estimate.
// The estimate before it followed the simulator (peak PT rate, full-card DRAM
// rate, no latency, fill, drain or ring chain, loads assumed hidden by double
// buffering) fails all three on 512^3 on 32 cores: its choice simulates 1.61x
// the best, its estimate is 0.37x the choice's simulated time, and it orders
// 0.84 of the pairs. The current one (B shared over the ring in K-chunked plans
// and in whole-K plans of one row of tiles a core) orders >= 0.94 of the pairs
// on every shape here, with the choice's estimate 0.98-1.08x its simulated time
// and the choice within 1.03x of the best candidate. It assumes the cores' transfers spread evenly over the run;
// they bunch at tile boundaries, so the transfers run a little slower than
// estimated. The residual cases (gen_matmul residual=true) check the R tile's
// loads too.
#include <gtest/gtest.h>

#include "ranking_agreement.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "candidate_evaluation.h"
#include "bmm_schedule.h"
#include "matmul_schedule.h"
#include "spyre_target.h"

namespace spyre::testing {
namespace {

struct RankingCase {
    int m, n, k, cores;
    std::vector<int> tile_ms, tile_ns, core_counts;  // the forced alternatives (their product)
    bool residual = false;  // gen_matmul residual=true: the R tile's loads and footprint
};

struct Measured {
    int tile_m, tile_n, cores;
    double estimated_us, simulated_us;
};

std::string case_name(const ::testing::TestParamInfo<RankingCase> &info) {
    const RankingCase &c = info.param;
    return "m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k) + "_c" +
           std::to_string(c.cores) + (c.residual ? "_residual" : "");
}

class MatmulPlannerRanking : public ::testing::TestWithParam<RankingCase> {};

TEST_P(MatmulPlannerRanking, EstimateOrdersCandidatesAsTheSimulatorDoes) {
    const RankingCase c = GetParam();
    const std::string work = ::testing::TempDir() + "matmul_ranking_" + case_name({c, 0});
    mkdir(work.c_str(), 0755);
    autoscheduler::CandidateCompiler compiler;
    compiler.generator_exe = SPYRE_GEN_MATMUL;
    compiler.generator = "matmul";
    compiler.work_dir = work;  // per case: ctest runs the cases concurrently
    compiler.fixed = {{"m", std::to_string(c.m)}, {"n", std::to_string(c.n)}, {"k", std::to_string(c.k)}, {"dtype", "float16"}};
    if (c.residual) compiler.fixed["residual"] = "true";

    std::vector<Measured> runs;
    auto measure = [&](int tm, int tn, int cores) {
        MatmulSpyreOptions o;
        o.tile_m = tm, o.tile_n = tn, o.max_cores = cores;
        set_compiling_for_spyre(true);
        double est = -1;
        try {
            est = plan_matmul_spyre(MatmulShape{c.m, c.n, c.k, Halide::Float(16), Activation::None, c.residual}, o).estimated_us;
        } catch (const Halide::CompileError &) {
        }
        set_compiling_for_spyre(false);
        if (est < 0) return;  // no K chunk of the forced tile fits: not a candidate
        const autoscheduler::CandidateResult r = autoscheduler::evaluate_candidate(
            compiler,
            {{"tile_m", std::to_string(tm)}, {"tile_n", std::to_string(tn)}, {"max_cores", std::to_string(cores)}},
            (int)runs.size());
        ASSERT_TRUE(r.error.empty()) << "tile_m=" << tm << " tile_n=" << tn << " max_cores=" << cores << ": " << r.error;
        runs.push_back({tm, tn, cores, est, r.simulated_us});
    };
    measure(0, 0, c.cores);  // the planner's choice
    for (int tm : c.tile_ms)
        for (int tn : c.tile_ns)
            for (int cores : c.core_counts) measure(tm, tn, cores);
    ASSERT_GE(runs.size(), 6u) << "too few candidates to rank";

    double best = runs[0].simulated_us;
    const Measured *best_run = &runs[0];
    for (const Measured &r : runs) {
        if (r.simulated_us < best) best = r.simulated_us, best_run = &r;
    }
    EXPECT_LE(runs[0].simulated_us, 1.10 * best)
        << "the planner's choice simulates " << runs[0].simulated_us << " us; tile_m=" << best_run->tile_m
        << " tile_n=" << best_run->tile_n << " max_cores=" << best_run->cores << " simulates " << best << " us";

    // The choice is made on its estimate: a far-off estimate picks it for the wrong reason.
    EXPECT_NEAR(runs[0].estimated_us / runs[0].simulated_us, 1.0, 0.20)
        << "the planner's choice: estimated " << runs[0].estimated_us << " us, simulated " << runs[0].simulated_us << " us";
    double worst_ratio = 1.0;  // the estimate / simulated ratio farthest from 1, for the log
    for (const Measured &r : runs) {
        const double q = r.estimated_us / r.simulated_us;
        if (std::fabs(std::log(q)) > std::fabs(std::log(worst_ratio))) worst_ratio = q;
    }

    const PairAgreement ordered = ordered_pairs(runs);
    const int agree = ordered.agree, pairs = ordered.pairs;
    ASSERT_GT(pairs, 0) << "every candidate simulates the same: nothing to rank";
    std::printf("%s: %zu candidates, the planner's choice %.2f us (best %.2f us, %.3fx), %d of %d pairs ordered as simulated (%.2f), estimate/simulated %.2f for the choice, %.2f at worst\n",
                case_name({c, 0}).c_str(), runs.size(), runs[0].simulated_us, best, runs[0].simulated_us / best, agree, pairs,
                (double)agree / pairs, runs[0].estimated_us / runs[0].simulated_us, worst_ratio);
    EXPECT_GE((double)agree / pairs, 0.90) << agree << " of " << pairs << " distinct pairs ordered as the simulator does";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulPlannerRanking,
    ::testing::Values(RankingCase{512, 512, 512, 32, {64, 128, 256, 512}, {64, 128, 256}, {32, 8}},
                      RankingCase{1, 4096, 4096, 32, {8}, {64, 128, 256, 512}, {32, 8}},        // decode
                      RankingCase{8, 2048, 4096, 32, {8}, {64, 256, 512}, {32, 16}},            // decode, 8 rows
                      RankingCase{2048, 2048, 2048, 32, {64, 128, 256}, {64, 128, 256}, {32}},  // large
                      RankingCase{300, 520, 2000, 32, {64, 128}, {64, 128, 256}, {32}},        // ragged, K chunked
                      RankingCase{100, 1000, 700, 32, {32, 64}, {64, 128}, {32, 8}},           // ragged
                      // Small K: whole-K tiles, B along chains over the row ranges (store-bound).
                      RankingCase{512, 512, 64, 32, {32, 64, 128, 512}, {64, 128}, {32, 8}},
                      // The fused residual: an R tile loaded per output tile.
                      RankingCase{512, 512, 512, 32, {64, 128, 256, 512}, {64, 128, 256}, {32, 8}, true},
                      RankingCase{1, 4096, 4096, 32, {8}, {64, 128, 256, 512}, {32, 8}, true},   // decode
                      RankingCase{512, 4096, 4096, 32, {64, 128, 256}, {128, 256, 512}, {32}, true},
                      RankingCase{300, 520, 2000, 32, {64, 128}, {64, 128, 256}, {32}, true}),  // ragged, K chunked
    case_name);

// Each value of a string knob of gen_matmul (fp16, the shared weight layout) for one shape:
// the planner's plan for it and its kernel compiled by gen_matmul and simulated timing-only.
struct KnobValueRuns {
    std::map<std::string, MatmulSpyrePlan> plans;
    std::map<std::string, double> simulated;
    std::string error;  // the first compile or simulation error, if any
};

// `fixed_knobs`: other knobs set alike in every run.
KnobValueRuns run_knob_values(const std::string &work_name, const MatmulShape &shape, int max_cores, const std::string &knob,
                              const std::vector<std::string> &values, const spyre::KnobValues &fixed_knobs = {}) {
    const std::string work = ::testing::TempDir() + work_name + "_m" + std::to_string(shape.m) + "_n" +
                             std::to_string(shape.n) + "_k" + std::to_string(shape.k);
    mkdir(work.c_str(), 0755);
    autoscheduler::CandidateCompiler compiler;
    compiler.generator_exe = SPYRE_GEN_MATMUL;
    compiler.generator = "matmul";
    compiler.work_dir = work;
    compiler.fixed = {{"m", std::to_string(shape.m)}, {"n", std::to_string(shape.n)}, {"k", std::to_string(shape.k)},
                      {"dtype", "float16"}, {"shared_weight_layout", "true"}};
    if (shape.activation == Activation::Swiglu) compiler.fixed["activation"] = "swiglu";
    if (shape.residual) compiler.fixed["residual"] = "true";
    if (max_cores) compiler.fixed["max_cores"] = std::to_string(max_cores);
    for (const auto &[name, value] : fixed_knobs) compiler.fixed[name] = value;
    KnobValueRuns runs;
    int index = 0;
    for (const std::string &v : values) {
        spyre::KnobValues knobs = spyre::knob_values(MatmulSpyreOptions{});
        for (const auto &[name, value] : fixed_knobs) knobs[name] = value;
        knobs[knob] = v;
        knobs["max_cores"] = std::to_string(max_cores);
        set_compiling_for_spyre(true);
        runs.plans[v] = plan_matmul_spyre(shape, spyre::options_of<MatmulSpyreOptions>(knobs));
        set_compiling_for_spyre(false);
        const autoscheduler::CandidateResult r = autoscheduler::evaluate_candidate(compiler, {{knob, v}}, index++);
        if (!r.error.empty() && runs.error.empty()) runs.error = knob + "=" + v + ": " + r.error;
        runs.simulated[v] = r.simulated_us;
    }
    return runs;
}

// gen_bmm (fp16) compiled and simulated timing-only by the autoscheduler's candidate compiler, in
// its own work directory, with `params` (the algorithm's GeneratorParams) fixed for every run.
autoscheduler::CandidateCompiler gen_bmm_compiler(const std::string &work_name, const spyre::KnobValues &params) {
    const std::string work = ::testing::TempDir() + work_name;
    mkdir(work.c_str(), 0755);
    autoscheduler::CandidateCompiler compiler;
    compiler.generator_exe = std::string(SPYRE_GENERATOR_DIR) + "/gen_bmm";
    compiler.generator = "bmm";
    compiler.work_dir = work;
    compiler.fixed = params;
    compiler.fixed["dtype"] = "float16";
    return compiler;
}

// How B chains forward (b_forwarding): for each shape the plan under auto, whole
// and gathered is compiled and simulated timing-only. Checks that auto takes
// the forwarding that simulates faster, within 5% (the planner's estimate
// decides it: closer plans are ties it may break either way), and that the
// cost ordered the two as the simulator does where they differ by more. The
// Granite-8B prefill's gate/up projection is the case gathering is for (B
// chains of 4 cores whose first core's loads set the pace: gathered 1841 us,
// whole 2211 us when written). At m=512 n=k=2048 auto takes the gathered plan
// (108.1 us, estimated 114.2; whole tiles 115.1, estimated 114.5): it kept whole
// tiles, 6% slower, while the estimate charged a gathered share's access latency
// in every step of the double-buffered K loop (pt_pipeline_cost.cpp).
struct ForwardingCase {
    int m, n, k;
    bool swiglu;
    int max_cores = 0;     // 0: the machine's
    bool offered = true;   // false: no gathered chain is offered (planning::gathered_chain_offered)
};

class MatmulBForwarding : public ::testing::TestWithParam<ForwardingCase> {};

TEST_P(MatmulBForwarding, AutoTakesTheFasterForwarding) {
    const ForwardingCase c = GetParam();
    const std::string name = "m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k);
    const MatmulShape shape{c.m, c.n, c.k, Halide::Float(16), c.swiglu ? Activation::Swiglu : Activation::None, false, true};
    KnobValueRuns runs = run_knob_values("matmul_forwarding", shape, c.max_cores, "b_forwarding", {"auto", "whole", "gathered"});
    ASSERT_TRUE(runs.error.empty()) << runs.error;
    std::map<std::string, MatmulSpyrePlan> &plans = runs.plans;
    std::map<std::string, double> &simulated = runs.simulated;
    if (!c.offered) {
        // Chains that do not fill the ring, or longer than the model holds for: never gathered.
        EXPECT_FALSE(plans["gathered"].b_gathered);
        EXPECT_FALSE(plans["auto"].b_gathered);
        EXPECT_LE(simulated["auto"], 1.001 * simulated["whole"]);
        std::printf("%s: no gathered chain offered; auto %.1f us, whole %.1f us\n", name.c_str(), simulated["auto"],
                    simulated["whole"]);
        return;
    }
    ASSERT_TRUE(plans["gathered"].b_gathered) << "the case needs a gathered plan to compare";
    EXPECT_FALSE(plans["whole"].b_gathered);
    const double faster = std::min(simulated["whole"], simulated["gathered"]);
    std::printf("%s: whole %.1f us (estimated %.1f), gathered %.1f us (estimated %.1f), auto %.1f us (%s)\n", name.c_str(),
                simulated["whole"], plans["whole"].estimated_us, simulated["gathered"], plans["gathered"].estimated_us,
                simulated["auto"], plans["auto"].b_gathered ? "gathered" : "whole");
    EXPECT_LE(simulated["auto"], 1.05 * faster);
    const double sim_ratio = simulated["gathered"] / simulated["whole"];
    const double est_ratio = plans["gathered"].estimated_us / plans["whole"].estimated_us;
    if (std::fabs(std::log(sim_ratio)) > std::log(1.05)) {
        EXPECT_EQ(sim_ratio < 1, est_ratio < 1) << "simulated gathered/whole " << sim_ratio << ", estimated " << est_ratio;
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulBForwarding,
                         ::testing::Values(ForwardingCase{512, 12800, 4096, true},  // Granite-8B prefill gate/up + SwiGLU
                                           ForwardingCase{512, 4096, 4096, false},  // its output projection's shape
                                           ForwardingCase{512, 2048, 2048, false},  // the incumbent table's worst matmul
                                           // 28 cores: chains of 7 would close over idle cores (without
                                           // the shared layout, gathered 1574.9 us against 1065.6 before
                                           // the rule); a shape whose longer chains lost (6749.5 us with 32
                                           // cores, 6986.1 with 16, against 6584.5).
                                           ForwardingCase{512, 4096, 12800, false, 28, false},
                                           ForwardingCase{2048, 25600, 4096, false}),
                         [](const ::testing::TestParamInfo<ForwardingCase> &info) {
                             const ForwardingCase &c = info.param;
                             return "m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k) +
                                    (c.swiglu ? "_swiglu" : "") +
                                    (c.max_cores ? "_c" + std::to_string(c.max_cores) : "");
                         });

// Whole-K tiles along a B chain (small K, one row of tiles a core): at m=512 n=512 k=64 on
// 32 cores auto shares B with whole-K tiles and simulates at least 10% faster than with B
// not shared (6.0 us against 7.2 when written; before such chains were offered auto took an
// 8-core plan without them, 7.5 us, which this fails).
TEST(MatmulWholeKChains, SmallKSharesBWithWholeKTiles) {
    const MatmulShape shape{512, 512, 64, Halide::Float(16), Activation::None, false, true};
    KnobValueRuns runs = run_knob_values("matmul_whole_k_chains", shape, 32, "share_b", {"true", "false"});
    ASSERT_TRUE(runs.error.empty()) << runs.error;
    const MatmulSpyrePlan &shared = runs.plans["true"];
    std::printf("m512_n512_k64: B shared %.2f us (tk %d of %d, %d x %d cores), not shared %.2f us\n",
                runs.simulated["true"], shared.tk, shared.kp, shared.cm, shared.cn, runs.simulated["false"]);
    EXPECT_TRUE(shared.b_shared);
    EXPECT_EQ(shared.tk, shared.kp) << "K is one chunk: the chain carries whole-K tiles";
    EXPECT_FALSE(runs.plans["false"].b_shared);
    EXPECT_LE(runs.simulated["true"], 0.90 * runs.simulated["false"]);
}

// A long whole-K B chain's head (half the cores or more) loads the next B tile and stores its
// own tile at its share of the card, beside every other core's store (pt_pipeline_cost.cpp).
// At m=2048 n=2048 k=64 on 32 cores the 128-row plans are such chains (16 cores); charged their
// store at one core's rate, 128 x 64 tiles were estimated at 63.1 us and chosen by auto, and
// simulated 65.7; auto must now take a plan that simulates faster than every 128-row plan
// (64.3 us against 65.9 when written).
TEST(MatmulWholeKChains, LongChainHeadsStoreAtTheirShareOfTheCard) {
    const MatmulShape shape{2048, 2048, 64, Halide::Float(16), Activation::None, false, true};
    KnobValueRuns runs = run_knob_values("matmul_long_whole_k_chains", shape, 32, "tile_m", {"0", "128"});
    ASSERT_TRUE(runs.error.empty()) << runs.error;
    const MatmulSpyrePlan &rows128 = runs.plans["128"];
    std::printf("m2048_n2048_k64: auto %.2f us (%d x %d tiles), 128-row tiles %.2f us (%d x %d, %d-core B chains)\n",
                runs.simulated["0"], runs.plans["0"].tm, runs.plans["0"].tn, runs.simulated["128"], rows128.tm, rows128.tn,
                rows128.cm);
    ASSERT_TRUE(rows128.b_shared && rows128.tk == rows128.kp && 2 * rows128.cm >= 32)
        << "the case needs the 128-row plan to be a long whole-K B chain";
    EXPECT_LT(runs.simulated["0"], runs.simulated["128"]);
}

// A whole-K tile's accumulator is initialized from the bias row on the SFU; the bias row loads
// ahead of B (load_ordering.h, checked on hand-built trees in load_ordering_test.cpp), so the
// initialization overlaps B's load, which the pipeline model now charges. This checks the
// model's side: at m=2048 n=2048 k=64 on 32 cores, charged the initialization after the loads,
// auto took 64-column tiles (256 x 64, 64.3 us); it must now take a whole-K plan that simulates
// faster (256 x 512 tiles with a 512 KB accumulator, 63.4 us when written).
TEST(MatmulWholeKChains, OneLargeTileACoreInitializesItsAccumulatorDuringTheLoads) {
    const MatmulShape shape{2048, 2048, 64, Halide::Float(16), Activation::None, false, true};
    KnobValueRuns runs = run_knob_values("matmul_whole_k_init_overlap", shape, 32, "tile_n", {"0", "64"});
    ASSERT_TRUE(runs.error.empty()) << runs.error;
    const MatmulSpyrePlan &autop = runs.plans["0"];
    std::printf("m2048_n2048_k64: auto %.2f us (%d x %d tiles, estimated %.2f), 64-column tiles %.2f us (estimated %.2f)\n",
                runs.simulated["0"], autop.tm, autop.tn, autop.estimated_us, runs.simulated["64"],
                runs.plans["64"].estimated_us);
    EXPECT_FALSE(autop.k_chunked());
    EXPECT_LT(runs.simulated["0"], runs.simulated["64"]);
}

// B gathered round all 32 cores (gather_riders.h): at m=2048 n=512 k=4096, 64 x 512 tiles,
// every core loads its A chunk and a share of B's, and forwards the others' 31 shares; its A
// load rides the rounds after its own position's forward, so the cores read DRAM in turn while
// the others forward. auto takes the 32-core chain and simulates at least 8% faster than B
// forwarded whole along its chains (166.3 us against 189.1 when written).
TEST(MatmulGatheredChains, AFullRingChainWhoseLoadsRideItsRounds) {
    const MatmulShape shape{2048, 512, 4096, Halide::Float(16), Activation::None, false, true};
    KnobValueRuns runs = run_knob_values("matmul_full_ring_gather", shape, 32, "b_forwarding", {"auto", "whole"});
    ASSERT_TRUE(runs.error.empty()) << runs.error;
    const MatmulSpyrePlan &autop = runs.plans["auto"];
    std::printf("m2048_n512_k4096: auto %.2f us (%d x %d tiles, %d-core B chains%s, estimated %.2f), B whole %.2f us (estimated %.2f)\n",
                runs.simulated["auto"], autop.tm, autop.tn, autop.cm, autop.b_gathered ? " gathered" : "",
                autop.estimated_us, runs.simulated["whole"], runs.plans["whole"].estimated_us);
    EXPECT_TRUE(autop.b_gathered);
    EXPECT_EQ(autop.cm, 32);
    EXPECT_LE(runs.simulated["auto"], 0.92 * runs.simulated["whole"]);
}

// A weight broadcast over two batches is the matmul of their rows (gen_bmm plans it as one):
// gen_bmm batch=2 m=512 n=1024 k=2048 broadcast_b=true takes gen_matmul m=1024's plan, 32 x 1024
// tiles along B gathered round all 32 cores (32-row tiles: one row of tiles a core), and runs
// within 2% of it (88.5 us against 89.0 when written; without 32-row tiles gen_bmm had no plan
// with a B chain round every core).
TEST(MatmulGatheredChains, ABroadcastWeightOverTwoBatchesRunsAsTheMatmul) {
    const MatmulShape shape{1024, 1024, 2048, Halide::Float(16), Activation::None, false, true};
    KnobValueRuns runs = run_knob_values("matmul_two_batches", shape, 32, "b_forwarding", {"auto"});
    ASSERT_TRUE(runs.error.empty()) << runs.error;

    const autoscheduler::CandidateCompiler bmm = gen_bmm_compiler(
        "bmm_broadcast_two_batches", {{"batch", "2"}, {"m", "512"}, {"n", "1024"}, {"k", "2048"}, {"broadcast_b", "true"}});
    const autoscheduler::CandidateResult r = autoscheduler::evaluate_candidate(bmm, {}, 0);
    ASSERT_TRUE(r.error.empty()) << r.error;
    set_compiling_for_spyre(true);
    const BmmSpyrePlan plan = plan_bmm_spyre(BmmShape{2, 512, 1024, 2048, Halide::Float(16), true}, BmmSpyreOptions{});
    set_compiling_for_spyre(false);
    std::printf("two batches of 512 x 1024 x 2048, B broadcast: gen_bmm %.2f us (%d x %d tiles, cores %d x %d x %d%s), "
                "gen_matmul m=1024 %.2f us (%d x %d tiles, %d-core B chains%s)\n",
                r.simulated_us, plan.tm, plan.tn, plan.cb, plan.cm, plan.cn, plan.b_gathered ? ", B gathered" : "",
                runs.simulated["auto"], runs.plans["auto"].tm, runs.plans["auto"].tn, runs.plans["auto"].cm,
                runs.plans["auto"].b_gathered ? " gathered" : "");
    EXPECT_TRUE(plan.b_gathered);
    EXPECT_EQ(plan.cb * plan.cm, 32) << "a B chain round every core";
    EXPECT_LE(r.simulated_us, 1.02 * runs.simulated["auto"]);
}

// Where the card's DRAM paces a gathered chain's steps, deeper K chunks shorten the PT's pass
// fill without slowing the rounds: at m=512 n=k=2048 (128 x 256 tiles, 4-core B chains
// gathered, A along 8-core chains) 64-, 128- and 256-deep chunks simulated 106.6, 104.7 and
// 103.8 us when written, and the pipeline model once charged the deeper ones each round's
// shares of all 8 chains (estimated 113.8, 127.5 and 143.1 us), keeping the 64-deep ones.
// gen_bmm at batch 1 is that matmul and ranks its plans as gen_matmul does (whole-K tiles along
// a B chain by kMatmulWholeKChainMargin: without it gen_bmm took 64 x 64 x 2048 tiles, 106.9
// us, 2.1% behind gen_matmul). Checked: both planners take the same plan, K-chunked at least
// 128 deep, and gen_bmm's auto simulates at least 1% faster than its tile_k=64.
TEST(MatmulGatheredChains, ADramPacedChainTakesDeeperChunksInBothGenerators) {
    set_compiling_for_spyre(true);
    const MatmulSpyrePlan mm = plan_matmul_spyre(MatmulShape{512, 2048, 2048, Halide::Float(16)}, MatmulSpyreOptions{});
    const BmmSpyrePlan bmm = plan_bmm_spyre(BmmShape{1, 512, 2048, 2048, Halide::Float(16)}, BmmSpyreOptions{});
    set_compiling_for_spyre(false);
    std::printf("m512_n2048_k2048: gen_matmul %d x %d x %d tiles, cores %d x %d%s; gen_bmm batch=1 %d x %d x %d, cores %d x %d x %d%s\n",
                mm.tm, mm.tn, mm.tk, mm.cm, mm.cn, mm.b_gathered ? ", B gathered" : "", bmm.tm, bmm.tn, bmm.tk, bmm.cb,
                bmm.cm, bmm.cn, bmm.b_gathered ? ", B gathered" : "");
    EXPECT_TRUE(mm.b_gathered);
    EXPECT_GE(mm.tk, 128);
    EXPECT_LT(mm.tk, mm.kp) << "K in chunks";
    EXPECT_EQ(std::vector<int>({bmm.tm, bmm.tn, bmm.tk, bmm.cb * bmm.cm, bmm.cn}), std::vector<int>({mm.tm, mm.tn, mm.tk, mm.cm, mm.cn}));
    EXPECT_EQ(bmm.b_gathered, mm.b_gathered);

    const autoscheduler::CandidateCompiler gen =
        gen_bmm_compiler("bmm_deeper_gathered_chunks", {{"batch", "1"}, {"m", "512"}, {"n", "2048"}, {"k", "2048"}});
    const autoscheduler::CandidateResult deeper = autoscheduler::evaluate_candidate(gen, {}, 0);
    const autoscheduler::CandidateResult k64 = autoscheduler::evaluate_candidate(gen, {{"tile_k", "64"}}, 1);
    ASSERT_TRUE(deeper.error.empty()) << deeper.error;
    ASSERT_TRUE(k64.error.empty()) << k64.error;
    std::printf("gen_bmm batch=1 m=512 n=k=2048: auto %.2f us, tile_k=64 %.2f us\n", deeper.simulated_us, k64.simulated_us);
    EXPECT_LE(deeper.simulated_us, 0.99 * k64.simulated_us);
}

// Two accumulators (the accumulator knob): with whole-K tiles, several a core, the next
// tile's matmul runs during this tile's epilogue and store. At m=1024 n=1024 k=256 on 8
// cores (128 x 128 tiles along one 8-core B chain, 8 tiles a core) auto takes them and
// simulates at least 3% faster than one accumulator (39.4 us against 42.1 when written).
TEST(MatmulAccumulator, AutoTakesTwoAccumulatorsWhereTheyPay) {
    const MatmulShape shape{1024, 1024, 256, Halide::Float(16), Activation::None, false, true};
    KnobValueRuns runs = run_knob_values("matmul_accumulator", shape, 8, "accumulator", {"auto", "single", "double"});
    ASSERT_TRUE(runs.error.empty()) << runs.error;
    std::printf("m1024_n1024_k256_c8: one accumulator %.2f us (estimated %.2f), two %.2f us (estimated %.2f), auto %.2f us\n",
                runs.simulated["single"], runs.plans["single"].estimated_us, runs.simulated["double"],
                runs.plans["double"].estimated_us, runs.simulated["auto"]);
    EXPECT_FALSE(runs.plans["single"].acc_ahead);
    ASSERT_TRUE(runs.plans["double"].acc_ahead);
    EXPECT_FALSE(runs.plans["double"].k_chunked());
    EXPECT_TRUE(runs.plans["auto"].acc_ahead);
    EXPECT_LE(runs.simulated["double"], 0.97 * runs.simulated["single"]);
    EXPECT_LE(runs.simulated["auto"], 1.01 * std::min(runs.simulated["single"], runs.simulated["double"]));
}

// The result tile in one copy or two (the result knob). Two let the next tile's epilogue run
// before this tile's store ends, but leave the store whole in the core's DMA queue, ahead of
// the next tile's chunk loads; in one copy it is spread over them (store_spreading.h). At
// m=1024 n=4096 k=2048 on 16 cores with 64 x 1024 tiles (4 N tiles a core, 16-core B chains)
// the second copy fits, and auto keeps one: 128-deep chunks, 543.0 us when written (estimated
// 556.2), where two copies ran 625.5 (64-deep chunks, the best of them, estimated 607.6).
// Before the planner offered one copy where two fit, auto took two. With result=single the
// one-copy plans rank by their estimates alone (kMatmulResultSingleMargin is auto's).
TEST(MatmulResult, AutoSpreadsTheStoreWhereTheSecondCopyWouldLeaveItWhole) {
    const MatmulShape shape{1024, 4096, 2048, Halide::Float(16), Activation::None, false, true};
    KnobValueRuns runs = run_knob_values("matmul_result", shape, 16, "result", {"auto", "single", "double"},
                                         {{"tile_m", "64"}, {"tile_n", "1024"}});
    ASSERT_TRUE(runs.error.empty()) << runs.error;
    std::printf("m1024_n4096_k2048_c16, 64 x 1024 tiles: one result tile %.2f us (estimated %.2f, %d-deep chunks), two %.2f us "
                "(estimated %.2f, %d-deep), auto %.2f us\n",
                runs.simulated["single"], runs.plans["single"].estimated_us, runs.plans["single"].tk, runs.simulated["double"],
                runs.plans["double"].estimated_us, runs.plans["double"].tk, runs.simulated["auto"]);
    EXPECT_FALSE(runs.plans["single"].double_buffer_result);
    ASSERT_TRUE(runs.plans["double"].double_buffer_result);
    EXPECT_FALSE(runs.plans["auto"].double_buffer_result);
    EXPECT_LE(runs.simulated["auto"], 0.92 * runs.simulated["double"]);
    EXPECT_LE(runs.simulated["auto"], 1.01 * runs.simulated["single"]);
}

// B resident (b_staging): at m=4096 n=128 k=2048 on 32 cores one B chain spans every core.
// Forwarded whole per K chunk, its head loads B for all as well as its own A; with each core's
// whole-K B slice resident, loaded once in shares and gathered, every core streams only its A:
// at least 3% faster (128.1 us against 134.4 when written). B gathered per K chunk round the
// 32 cores, each core's A load riding the rounds (gather_riders.h), is as fast again (126.0 us
// when written, estimated 128.1 against the slice's 126.3): auto takes either, within 2% of the
// faster.
TEST(MatmulBStaging, TheBSliceBeatsWholeChunksAndAutoIsWithinTwoPercentOfTheBest) {
    const MatmulShape shape{4096, 128, 2048, Halide::Float(16), Activation::None, false, true};
    KnobValueRuns runs = run_knob_values("matmul_b_staging", shape, 32, "b_staging", {"auto", "chunks", "resident"});
    ASSERT_TRUE(runs.error.empty()) << runs.error;
    KnobValueRuns whole = run_knob_values("matmul_b_staging_whole", shape, 32, "b_staging", {"chunks"}, {{"b_forwarding", "whole"}});
    ASSERT_TRUE(whole.error.empty()) << whole.error;
    std::printf("m4096_n128_k2048_c32: B in chunks forwarded whole %.2f us (estimated %.2f), gathered %.2f us (estimated %.2f), "
                "resident %.2f us (estimated %.2f), auto %.2f us\n",
                whole.simulated["chunks"], whole.plans["chunks"].estimated_us, runs.simulated["chunks"],
                runs.plans["chunks"].estimated_us, runs.simulated["resident"], runs.plans["resident"].estimated_us,
                runs.simulated["auto"]);
    EXPECT_FALSE(runs.plans["chunks"].b_resident);
    EXPECT_FALSE(whole.plans["chunks"].b_gathered);
    ASSERT_TRUE(runs.plans["resident"].b_resident);
    EXPECT_LE(runs.simulated["resident"], 0.97 * whole.simulated["chunks"]);
    EXPECT_LE(runs.simulated["auto"], 1.02 * std::min(runs.simulated["chunks"], runs.simulated["resident"]));
}

// A resident (a_staging): the planner's choice between staging A per K chunk of every
// tile and keeping a row of tiles' whole-K panel for all its N tiles, against the
// simulator. The Granite prefill's gate/up + SwiGLU (5 N tiles a core: the panel saves
// 4 of 5 A reads, 1709.6 us against 1841.4), its down projection (a 128 x 12800
// panel leaves only small K chunks and a long fill: 953.4 us against 931.6), and
// Llama-3-70B's gate/up shard over two cards (a panel estimated 1.1% ahead simulates
// 1.9% behind, 3871.6 us against 3799.1: the case of kMatmulResidentPanelMargin).
struct AStagingCase {
    int m, n, k;
    bool swiglu, residual;
};

class MatmulAStaging : public ::testing::TestWithParam<AStagingCase> {};

TEST_P(MatmulAStaging, AutoTakesTheFasterStaging) {
    const AStagingCase c = GetParam();
    const std::string name = "m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k);
    const MatmulShape shape{c.m, c.n, c.k, Halide::Float(16), c.swiglu ? Activation::Swiglu : Activation::None, c.residual, true};
    KnobValueRuns runs = run_knob_values("matmul_a_staging", shape, 0, "a_staging", {"auto", "chunks", "resident"});
    ASSERT_TRUE(runs.error.empty()) << runs.error;
    std::map<std::string, MatmulSpyrePlan> &plans = runs.plans;
    std::map<std::string, double> &simulated = runs.simulated;
    ASSERT_TRUE(plans["resident"].a_resident);
    EXPECT_FALSE(plans["chunks"].a_resident);
    std::printf("%s: chunks %.1f us (estimated %.1f), resident %.1f us (estimated %.1f), auto %.1f us (%s)\n", name.c_str(),
                simulated["chunks"], plans["chunks"].estimated_us, simulated["resident"], plans["resident"].estimated_us,
                simulated["auto"], plans["auto"].a_resident ? "resident" : "chunks");
    EXPECT_LE(simulated["auto"], 1.01 * std::min(simulated["chunks"], simulated["resident"]));
    const double sim_ratio = simulated["resident"] / simulated["chunks"];
    // The planner's call: the panel only where estimated kMatmulResidentPanelMargin ahead.
    const double est_ratio = plans["resident"].estimated_us / plans["chunks"].estimated_us;
    if (std::fabs(std::log(sim_ratio)) > std::log(1.03)) {
        EXPECT_EQ(sim_ratio < 1, est_ratio * (1 + kMatmulResidentPanelMargin) < 1)
            << "simulated resident/chunks " << sim_ratio << ", estimated " << est_ratio;
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulAStaging,
                         ::testing::Values(AStagingCase{512, 12800, 4096, true, false},   // Granite-8B prefill gate/up + SwiGLU
                                           AStagingCase{512, 4096, 12800, false, true},   // its down projection + residual
                                           AStagingCase{512, 14336, 8192, true, false}),  // Llama-3-70B's gate/up + SwiGLU at TP 2
                         [](const ::testing::TestParamInfo<AStagingCase> &info) {
                             const AStagingCase &c = info.param;
                             return "m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k) +
                                    (c.swiglu ? "_swiglu" : "") + (c.residual ? "_residual" : "");
                         });

}  // namespace
}  // namespace spyre::testing
