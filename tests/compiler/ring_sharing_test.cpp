// spyre::share_over_ring: a staged tile that every core loads identically is
// read from DRAM once and passed along the chain of cores over the ring. The
// results equal those of the unshared schedule in every synchronization mode,
// the kernel reads fewer DRAM bytes, and misuse is a compile error naming the
// Func and the rule. A gathered tile (RingForwarding::Gathered: each core of a
// chain loads a share) gives the same results and DRAM reads as a whole one.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <cstdlib>

#include "jit_helpers.h"
#include "spyre/spyre_runtime.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"
#include "program_tree/ring_sharing.h"

namespace spyre::testing {
namespace {

using namespace Halide;

// out(x, y) = in(x, y) * w(x, j) summed over j = 0..J-1 (J = 4 unless given):
// rows of 256 f32 split over 32 cores in 2-row tiles; the weight tile w
// (256 x J) is the same on every core and every tile, so it can be shared.
struct Pipeline {
    ImageParam in, w;
    Func in_staged, w_staged, compute{"ring_compute"}, out{"ring_out"};
    Var x{"x"}, y{"y"}, core{"core"}, yr{"yr"}, yo{"yo"}, yi{"yi"};
    static constexpr int W = 256, H = 512;
    const int J;

    enum class Share { None, Weight, Input };

    Pipeline(const std::string &name, Share share, bool double_buffered = true, int j = 4,
             RingForwarding forwarding = RingForwarding::WholeTiles)
        : in(Float(32), 2, name + "_in"), w(Float(32), 2, name + "_w"), J(j) {
        set_compiling_for_spyre(true);
        in_staged = in.in();
        w_staged = w.in();
        Expr weights = w_staged(x, 0);
        for (int k = 1; k < J; k++) weights += w_staged(x, k);
        compute(x, y) = in_staged(x, y) * weights;
        out(x, y) = compute(x, y);
        constrain_tensor(in, {W, H});
        constrain_tensor(w, {W, J});
        OutputImageParam ob = out.output_buffer();
        constrain_tensor(ob, {W, H});
        out.split(y, core, yr, H / 32).split(yr, yo, yi, 2).parallel(core).vectorize(x, 32);
        stage_in_scratchpad(in_staged, out, yo, double_buffered);
        stage_in_scratchpad(w_staged, out, yo, double_buffered);
        compute.compute_at(out, yo).store_in(MemoryType::VTCM).vectorize(x, 32);
        if (share == Share::Weight) share_over_ring(w_staged, forwarding);
        if (share == Share::Input) share_over_ring(in_staged, forwarding);
    }

    // out_dir: where the program's disassembly goes (<kernel>.spyre.txt); empty: nowhere.
    Buffer<float> run(const std::string &kernel, spyre_kernel_stats *stats, const std::string &out_dir = "") {
        Buffer<float> input(W, H, in.name()), weight(W, J, w.name());
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) input(i, j) = (float)((i * 37 + j * 11) % 97) / 24.0f - 2.0f;
        for (int j = 0; j < J; j++)
            for (int i = 0; i < W; i++) weight(i, j) = (float)((i * 13 + j * 7) % 31) / 8.0f - 1.5f;
        in.set(input);
        w.set(weight);
        SpyreLoweringOptions o;
        o.kernel_name = kernel;
        o.output_dir = out_dir;
        attach_spyre_lowering(out, o);
        Buffer<float> r = out.realize({W, H}, Target("x86-64-linux"));
        set_compiling_for_spyre(false);
        EXPECT_EQ(spyre_get_last_run_stats(stats), 0);
        return r;
    }
};

// The ring.put instructions of `bytes` bytes in a kernel's disassembly (<dir><kernel>.spyre.txt).
int ring_puts(const std::string &dir, const std::string &kernel, const std::string &bytes) {
    std::ifstream f(dir + kernel + ".spyre.txt");
    int n = 0;
    for (std::string line; std::getline(f, line);) {
        n += line.find("ring.put") != std::string::npos && line.find(" bytes=" + bytes + " ") != std::string::npos;
    }
    return n;
}

TEST(RingSharing, SharedWeightGivesTheSameResultsWithFewerDramReads) {
    spyre_kernel_stats own{}, shared{};
    Pipeline a("ring_own", Pipeline::Share::None);
    const Buffer<float> ra = a.run("ring_own", &own);
    Pipeline b("ring_shared", Pipeline::Share::Weight);
    const Buffer<float> rb = b.run("ring_shared", &shared);
    expect_equal_and_varied(ra, rb);
    // Each core loads the 4 KiB weight tile per 2-row tile (8 per core): 32 x 8 loads unshared, 8 shared.
    const uint64_t weight_tile = Pipeline::W * b.J * 4;
    EXPECT_EQ(own.dram_read_bytes - shared.dram_read_bytes, 31u * 8u * weight_tile);
}

// In pieces (RingForwarding::Pieces) a 16 KiB weight tile travels as pieces of
// kRingPieceSticks sticks: the same results and DRAM reads as whole tiles, and
// 16 KiB / piece puts of a piece's bytes in the program for each whole-tile put
// (the shorter chain fill is measured on gen_conv2d in docs/scheduling.md, not
// asserted here).
// The weight of J rows unshared, shared whole and shared with `forwarding` (kernels
// ring_own<J>, ring_whole<J>, ring_<name><J>, disassembled into `dir`): the three give
// the same results; both shared ones read DRAM alike, less than the unshared one.
// Returns the unshared results.
Buffer<float> expect_forwarding_matches_whole_tiles(int j, RingForwarding forwarding, const std::string &name,
                                                    const std::string &dir) {
    spyre_kernel_stats own{}, whole{}, other{};
    const std::string J = std::to_string(j);
    Pipeline a("ring_own" + J, Pipeline::Share::None, true, j);
    const Buffer<float> ra = a.run("ring_own" + J, &own);
    Pipeline b("ring_whole" + J, Pipeline::Share::Weight, true, j);
    const Buffer<float> rb = b.run("ring_whole" + J, &whole, dir);
    Pipeline c("ring_" + name + J, Pipeline::Share::Weight, true, j, forwarding);
    const Buffer<float> rc = c.run("ring_" + name + J, &other, dir);
    expect_equal_and_varied(ra, rb);
    expect_equal_and_varied(ra, rc);
    EXPECT_EQ(other.dram_read_bytes, whole.dram_read_bytes);
    EXPECT_LT(other.dram_read_bytes, own.dram_read_bytes);
    return ra;
}

TEST(RingSharing, ATileForwardedInPiecesGivesTheSameResultsInAPutPerPiece) {
    const std::string dir = ::testing::TempDir();
    expect_forwarding_matches_whole_tiles(16, RingForwarding::Pieces, "pieces", dir);
    // The data puts in the programs: 16 KiB each whole, one per piece in pieces; the credits (0 bytes) alike.
    const int64_t piece = compiler::kRingPieceSticks * default_machine().stick_bytes;
    ASSERT_EQ(16384 % piece, 0);
    ASSERT_LT(piece, 16384);
    auto puts = [&](const std::string &kernel, const std::string &bytes) { return ring_puts(dir, kernel, bytes); };
    const int whole_puts = puts("ring_whole16", "16384");
    EXPECT_GT(whole_puts, 0);
    EXPECT_EQ(puts("ring_whole16", std::to_string(piece)), 0);
    EXPECT_EQ(puts("ring_pieces16", std::to_string(piece)), (16384 / piece) * whole_puts);
    EXPECT_EQ(puts("ring_pieces16", "16384"), 0);
    EXPECT_EQ(puts("ring_pieces16", "0"), puts("ring_whole16", "0"));
}

TEST(RingSharing, SingleBufferedSharedWeightGivesTheSameResults) {
    spyre_kernel_stats own{}, shared{};
    Pipeline a("ring_own1", Pipeline::Share::None, false);
    const Buffer<float> ra = a.run("ring_own1", &own);
    Pipeline b("ring_shared1", Pipeline::Share::Weight, false);
    const Buffer<float> rb = b.run("ring_shared1", &shared);
    expect_equal_and_varied(ra, rb);
    EXPECT_LT(shared.dram_read_bytes, own.dram_read_bytes);
}

TEST(RingSharing, ResultsDoNotDependOnSynchronizationTiming) {
    spyre_kernel_stats st{};
    Pipeline ref("ring_ref", Pipeline::Share::Weight);
    const Buffer<float> expected = ref.run("ring_ref", &st);
    for (const char *mode : {"serial", "random"}) {
        setenv("SPYRE_SYNC", mode, 1);
        Pipeline p(std::string("ring_sync_") + mode, Pipeline::Share::Weight);
        const Buffer<float> got = p.run(std::string("ring_sync_") + mode, &st);
        unsetenv("SPYRE_SYNC");
        expect_equal_and_varied(expected, got);
    }
}

TEST(RingSharing, ATileThatDiffersOnEveryCoreIsACompileErrorNamingTheFunc) {
    Pipeline p("ring_bad", Pipeline::Share::Input);
    const std::string msg = spyre_compile_error(p.out, "ring_bad");
    ASSERT_FALSE(msg.empty()) << "expected a compile error";
    EXPECT_NE(msg.find("share_over_ring(Func '" + p.in_staged.name() + "')"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no two cores load the same tile"), std::string::npos) << msg;
}

TEST(RingSharing, AFuncThatIsNotStagedIsRefusedByTheDirective) {
    set_compiling_for_spyre(true);
    ImageParam in(Float(32), 2, "ring_unstaged_in");
    Func f("ring_unstaged");
    Var x, y;
    f(x, y) = in(x, y);
    try {
        share_over_ring(f);
        ADD_FAILURE() << "expected a schedule error";
    } catch (const Halide::CompileError &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("share_over_ring(Func 'ring_unstaged')"), std::string::npos) << msg;
        EXPECT_NE(msg.find("not staged in the scratchpad"), std::string::npos) << msg;
    }
    set_compiling_for_spyre(false);
}

// Two chains that interleave on the ring (the share_loads_over_ring pass on its own): the even
// cores load one weight tile, the odd cores another, so each chain goes two cores a hop. Run the
// same way round, both would load every clockwise link twice; forwarded in pieces, the pass runs
// the second one the other way (31, 29, ..., 1), so each direction carries one chain. Forwarded
// whole, both keep core order.
TEST(RingSharing, InterleavedChainsRunOppositeWaysRound) {
    namespace L = isa::field::DmaLoad;
    constexpr int kCores = 32;
    std::vector<std::vector<compiler::ProgramNode>> programs(kCores);
    std::vector<std::vector<compiler::ProgramNode> *> trees;
    for (int c = 0; c < kCores; c++) {
        compiler::SymInstruction in;
        in.op = isa::Opcode::DmaLoad;
        in.func = "w_tile";
        in.f[L::dram].base = (c % 2) * 4096;  // the even cores' tile, the odd cores' tile
        in.f[L::sp].base = 0;
        in.f[L::row_bytes].base = in.f[L::valid_bytes].base = 4096;
        in.f[L::rows].base = in.f[L::valid_rows].base = 1;
        in.f[L::planes].base = in.f[L::valid_planes].base = 1;
        programs[c].push_back(compiler::ProgramNode::instruction(in));
    }
    const std::vector<std::vector<compiler::ProgramNode>> unshared = programs;
    for (auto &p : programs) trees.push_back(&p);
    compiler::share_loads_over_ring(trees, {"w_tile"}, {"w_tile"}, default_machine());
    using Role = compiler::RingShare::Role;
    auto ring = [&](int c) { return programs[c][0].inst.ring; };
    EXPECT_EQ(ring(0).role, Role::First);
    EXPECT_EQ(ring(0).downstream, 2);
    EXPECT_EQ(ring(30).role, Role::Last);
    EXPECT_EQ(ring(31).role, Role::First) << "the odd chain starts at the other end";
    EXPECT_EQ(ring(31).downstream, 29);
    EXPECT_EQ(ring(1).role, Role::Last);
    EXPECT_EQ(ring(1).upstream, 3);

    for (int c = 0; c < kCores; c++) programs[c] = unshared[c];  // the same vectors trees points to
    compiler::share_loads_over_ring(trees, {"w_tile"}, {}, default_machine());
    EXPECT_EQ(ring(1).role, Role::First);
    EXPECT_EQ(ring(31).role, Role::Last);
}

// Gathered (RingForwarding::Gathered): every core of the chain (all 32 here) loads a
// share of the 64 KiB weight tile and forwards the others' round the closed chain. The
// results are those of the unshared and the whole-tile schedules in every
// synchronization mode, and DRAM is read as often as with whole tiles (each share once
// per chain); the program loads shares of 2 KiB and puts 31 of them per core and tile,
// where the whole tile's chain puts one tile per core but the last.
TEST(RingSharing, AGatheredTileGivesTheSameResultsAndDramReadsAsAWholeOne) {
    const std::string dir = ::testing::TempDir();
    const Buffer<float> ra = expect_forwarding_matches_whole_tiles(64, RingForwarding::Gathered, "gathered", dir);
    spyre_kernel_stats gathered{};
    auto puts = [&](const std::string &kernel, int bytes) { return ring_puts(dir, kernel, std::to_string(bytes)); };
    const int tile = Pipeline::W * 64 * 4, share = tile / 32;
    const int whole_puts = puts("ring_whole64", tile);  // per tile: 31, one per core but the last
    ASSERT_GT(whole_puts, 0);
    ASSERT_EQ(whole_puts % 31, 0);
    EXPECT_EQ(puts("ring_gathered64", share), 32 * whole_puts);  // per tile: 31 per core
    EXPECT_EQ(puts("ring_gathered64", tile), 0);
    for (const char *mode : {"serial", "random"}) {
        setenv("SPYRE_SYNC", mode, 1);
        Pipeline p(std::string("ring_gathered_sync_") + mode, Pipeline::Share::Weight, true, 64,
                   RingForwarding::Gathered);
        const Buffer<float> got = p.run(std::string("ring_gathered_sync_") + mode, &gathered);
        unsetenv("SPYRE_SYNC");
        expect_equal_and_varied(ra, got);
    }
}

// A gathered tile is cut into a share of whole rows (or sticks) per core: a tile with
// fewer than the chain has cores is refused, naming the Func and the way out.
TEST(RingSharing, AGatheredTileSmallerThanItsChainIsACompileErrorNamingTheFunc) {
    Pipeline p("ring_gathered_small", Pipeline::Share::Weight, true, 2, RingForwarding::Gathered);  // 2 KiB: 16 sticks
    const std::string msg = spyre_compile_error(p.out, "ring_gathered_small");
    ASSERT_FALSE(msg.empty()) << "expected a compile error";
    EXPECT_NE(msg.find("share_over_ring(Func '" + p.w_staged.name() + "')"), std::string::npos) << msg;
    EXPECT_NE(msg.find("for a chain of 32 cores"), std::string::npos) << msg;
    EXPECT_NE(msg.find("RingForwarding::WholeTiles"), std::string::npos) << msg;
}

// Share cuts: along the planes of a tile that has several, else its rows, else the sticks
// of its one row; as evenly as whole units allow, covering the tile once.
TEST(RingSharing, GatheredSharesCutWholeUnitsCoveringTheTileOnce) {
    namespace L = isa::field::DmaLoad;
    EXPECT_STREQ(compiler::gather_cut(4, 8, 256, 128).unit_name, "planes");
    EXPECT_STREQ(compiler::gather_cut(1, 8, 256, 128).unit_name, "rows");
    const compiler::GatherCut sticks = compiler::gather_cut(1, 1, 1280, 128);
    EXPECT_STREQ(sticks.unit_name, "sticks");
    EXPECT_EQ(sticks.units, 10);
    int64_t next = 0;
    for (int s = 0; s < 3; s++) {
        const compiler::GatheredShare g = compiler::gathered_share(10, s, 3);
        EXPECT_EQ(g.first, next);
        EXPECT_GE(g.count, 3);
        next = g.first + g.count;
    }
    EXPECT_EQ(next, 10);
    // The shares' loads of a 10-row tile whose last 2 rows are padding: rows 3..5 and 6..9.
    isa::Instruction load;
    load.op = isa::Opcode::DmaLoad;
    load.f[L::dram].base = 1000, load.f[L::sp].base = 64;
    load.f[L::row_bytes].base = load.f[L::valid_bytes].base = 256;
    load.f[L::rows].base = 10, load.f[L::valid_rows].base = 8;
    load.f[L::dram_row_stride].base = 4096, load.f[L::sp_row_stride].base = 256;
    load.f[L::planes].base = load.f[L::valid_planes].base = 1;
    const isa::Instruction mid = compiler::gathered_share_load(load, 1, 3, 128);
    const isa::Instruction last = compiler::gathered_share_load(load, 2, 3, 128);
    EXPECT_EQ(mid.f[L::rows].base, 3);
    EXPECT_EQ(mid.f[L::dram].base, 1000 + 3 * 4096);
    EXPECT_EQ(mid.f[L::sp].base, 64 + 3 * 256);
    EXPECT_EQ(mid.f[L::valid_rows].base, 3);
    EXPECT_EQ(last.f[L::rows].base, 4);
    EXPECT_EQ(last.f[L::valid_rows].base, 2);
    // One row cut in sticks: share 1 of 3 of a 1280-byte row (10 sticks) with 5 valid sticks.
    isa::Instruction row = load;
    row.f[L::rows].base = row.f[L::valid_rows].base = 1;
    row.f[L::row_bytes].base = 1280, row.f[L::valid_bytes].base = 640;
    const isa::Instruction s1 = compiler::gathered_share_load(row, 1, 3, 128);
    EXPECT_EQ(s1.f[L::row_bytes].base, 3 * 128);  // sticks 3..5
    EXPECT_EQ(s1.f[L::dram].base, 1000 + 3 * 128);
    EXPECT_EQ(s1.f[L::valid_bytes].base, 2 * 128);  // sticks 3 and 4
}

}  // namespace
}  // namespace spyre::testing
