// The collectives among simulated cards (spyre_collectives.h), run under
// mpirun with 2 and 4 ranks (ctest mpi.collectives_2_ranks / _4_ranks): every
// collective against a host reference computed the same way on every rank, at
// odd sizes (1 element, rows that are not whole sticks, extents not divisible
// by the rank count where the collective allows it), the ranks' simulated
// clocks agreeing afterwards, timing-only runs, mismatched calls refused on
// every rank, and collectives enqueued on a stream. Every rank runs every
// test; any failing rank fails the job.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mpi.h>
#include <vector>

#include "HalideBuffer.h"
#include "spyre/card_link.h"
#include "spyre/dtype.h"
#include "spyre/machine.h"
#include "spyre/spyre_collectives.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"
#include "spyre/spyre_stream.h"

namespace {

spyre_comm_t *g_comm = nullptr;
int rank_() { return spyre_comm_rank(g_comm); }
int ranks() { return spyre_comm_size(g_comm); }

using Halide::Runtime::Buffer;

// Rank r's value at element i: distinct per rank and element, exact in fp16.
float value(int r, int64_t i) { return (float)((r + 1) * 0.25 + (double)((i * 7 + r * 3) % 29) * 0.125 - 1.5); }

template<typename T>
Buffer<T> on_device(Buffer<T> host) {
    EXPECT_EQ(host.device_malloc(spyre_device_interface()), 0);
    host.set_host_dirty();
    EXPECT_EQ(host.copy_to_device(spyre_device_interface()), 0);
    return host;
}

Buffer<uint16_t> half_buffer(std::vector<int> extents, int r) {
    Buffer<uint16_t> b(halide_type_t(halide_type_float, 16), extents);
    int64_t i = 0;
    b.for_each_value([&](uint16_t &v) { v = spyre::float_to_half(value(r, i++)); });
    return b;
}

Buffer<float> float_buffer(std::vector<int> extents, int r) {
    Buffer<float> b(extents);
    int64_t i = 0;
    b.for_each_value([&](float &v) { v = value(r, i++) * 1.37f; });
    return b;
}

// After any collective every rank's clock is the same.
void expect_clocks_agree() {
    const double mine = spyre_simulated_clock_us();
    std::vector<double> all((size_t)ranks());
    MPI_Allgather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
    for (double c : all) EXPECT_NEAR(c, all[0], 1e-6 * std::max(1.0, all[0]));
}

#define EXPECT_CONTAINS_TEXT(haystack, needle) \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

class Collectives : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(Collectives, AllReduceOfFp16SumsInFp32InRankOrderAndRoundsOnce) {
    const std::vector<int> extents = GetParam();
    Buffer<uint16_t> buf = on_device(half_buffer(extents, rank_()));
    // A slow rank: rank 0 runs more before the collective.
    if (rank_() == 0) spyre_profile_record("test delay", 0, 0, 7.0, "test");
    ASSERT_EQ(spyre_all_reduce_sum(g_comm, nullptr, buf), 0) << spyre_last_error();
    expect_clocks_agree();
    buf.copy_to_host();
    int64_t i = 0;
    buf.for_each_value([&](uint16_t v) {
        float acc = 0;
        for (int r = 0; r < ranks(); r++) acc += spyre::half_to_float(spyre::float_to_half(value(r, i)));
        EXPECT_EQ(v, spyre::float_to_half(acc)) << "element " << i;
        i++;
    });
    spyre_collective_stats s{};
    ASSERT_EQ(spyre_get_last_collective_stats(&s), 0);
    EXPECT_STREQ(s.collective, "all_reduce");
    EXPECT_EQ(s.ranks, ranks());
    EXPECT_NEAR(s.link_us,
                spyre::collective_cost(spyre::default_machine(), spyre::Collective::AllReduce, ranks(), (double)s.bytes).us,
                1e-9);
    if (rank_() != 0) {
        EXPECT_GE(s.wait_us, 7.0 - 1e-9);
    }
}

TEST_P(Collectives, AllReduceOfFp32) {
    Buffer<float> buf = on_device(float_buffer(GetParam(), rank_()));
    ASSERT_EQ(spyre_all_reduce_sum(g_comm, nullptr, buf), 0) << spyre_last_error();
    buf.copy_to_host();
    int64_t i = 0;
    buf.for_each_value([&](float v) {
        double acc = 0;
        for (int r = 0; r < ranks(); r++) acc += value(r, i) * 1.37f;
        EXPECT_EQ(v, (float)acc);
        i++;
    });
}

TEST_P(Collectives, AllGatherConcatenatesInRankOrderAlongEveryDimension) {
    const std::vector<int> extents = GetParam();
    for (int dim = 0; dim < (int)extents.size(); dim++) {
        Buffer<float> send = on_device(float_buffer(extents, rank_()));
        std::vector<int> big = extents;
        big[dim] *= ranks();
        Buffer<float> recv(big);
        ASSERT_EQ(recv.device_malloc(spyre_device_interface()), 0);
        ASSERT_EQ(spyre_all_gather(g_comm, nullptr, send, recv, dim), 0) << spyre_last_error();
        EXPECT_TRUE(recv.device_dirty());
        recv.copy_to_host();
        recv.for_each_element([&](const int *x) {
            const int r = x[dim] / extents[dim];
            std::vector<int> local(x, x + extents.size());
            local[dim] -= r * extents[dim];
            int64_t i = 0, stride = 1;
            for (size_t d = 0; d < extents.size(); d++) {
                i += local[d] * stride;
                stride *= extents[d];
            }
            EXPECT_EQ(recv(x), value(r, i) * 1.37f) << "dim " << dim;
        });
        expect_clocks_agree();
    }
}

TEST_P(Collectives, ReduceScatterKeepsThisRanksBlockOfTheSum) {
    std::vector<int> extents = GetParam();
    const int dim = (int)extents.size() - 1;  // the outermost: blocks of whole rows
    std::vector<int> big = extents;
    big[dim] *= ranks();
    Buffer<float> send = on_device(float_buffer(big, rank_()));
    Buffer<float> recv(extents);
    ASSERT_EQ(recv.device_malloc(spyre_device_interface()), 0);
    ASSERT_EQ(spyre_reduce_scatter_sum(g_comm, nullptr, send, recv, dim), 0) << spyre_last_error();
    EXPECT_TRUE(recv.device_dirty());
    recv.copy_to_host();
    recv.for_each_element([&](const int *x) {
        std::vector<int> global(x, x + extents.size());
        global[dim] += rank_() * extents[dim];
        int64_t i = 0, stride = 1;
        for (size_t d = 0; d < big.size(); d++) {
            i += global[d] * stride;
            stride *= big[d];
        }
        double acc = 0;
        for (int r = 0; r < ranks(); r++) acc += value(r, i) * 1.37f;
        EXPECT_EQ(recv(x), (float)acc);
    });
}

TEST_P(Collectives, BroadcastFromTheLastRank) {
    Buffer<uint16_t> buf = on_device(half_buffer(GetParam(), rank_()));
    ASSERT_EQ(spyre_broadcast(g_comm, nullptr, buf, ranks() - 1), 0) << spyre_last_error();
    expect_clocks_agree();
    buf.copy_to_host();  // (the root's buffer is not device-dirty: nothing is copied there)
    int64_t i = 0;
    buf.for_each_value([&](uint16_t v) { EXPECT_EQ(v, spyre::float_to_half(value(ranks() - 1, i++))); });
}

TEST_P(Collectives, SendAndRecvAroundTheRing) {
    Buffer<float> mine = on_device(float_buffer(GetParam(), rank_()));
    Buffer<float> theirs(GetParam());
    ASSERT_EQ(theirs.device_malloc(spyre_device_interface()), 0);
    const int next = (rank_() + 1) % ranks(), previous = (rank_() + ranks() - 1) % ranks();
    // Even ranks send first, odd ranks receive first: no rank waits on a blocked peer.
    for (int phase = 0; phase < 2; phase++) {
        if ((rank_() % 2 == 0) == (phase == 0)) {
            ASSERT_EQ(spyre_send(g_comm, nullptr, mine, next), 0) << spyre_last_error();
        } else {
            ASSERT_EQ(spyre_recv(g_comm, nullptr, theirs, previous), 0) << spyre_last_error();
        }
    }
    theirs.copy_to_host();
    int64_t i = 0;
    theirs.for_each_value([&](float v) { EXPECT_EQ(v, value(previous, i++) * 1.37f); });
}

INSTANTIATE_TEST_SUITE_P(OddSizes, Collectives,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{67}, std::vector<int>{45, 3},
                                           std::vector<int>{5, 2, 3}));

TEST(CollectivesTimingOnly, NoValuesMoveButTheRanksStillSynchroniseAndCharge) {
    Buffer<float> buf = on_device(float_buffer({100, 3}, rank_()));
    const int previous = spyre_set_timing_only(1);
    ASSERT_EQ(spyre_all_reduce_sum(g_comm, nullptr, buf), 0) << spyre_last_error();
    spyre_set_timing_only(previous);
    spyre_collective_stats s{};
    ASSERT_EQ(spyre_get_last_collective_stats(&s), 0);
    EXPECT_GT(s.link_us, 0);
    expect_clocks_agree();
    // The tensor holds no values now: reading it fails (nothing came from nowhere).
    EXPECT_TRUE(buf.device_dirty());
    EXPECT_NE(buf.copy_to_host(), 0);
}

TEST(CollectivesErrors, MismatchedShapesFailOnEveryRankNamingThem) {
    if (ranks() < 2) GTEST_SKIP();
    Buffer<float> buf = on_device(float_buffer({16 + (rank_() == 1 ? 1 : 0)}, rank_()));
    EXPECT_EQ(spyre_all_reduce_sum(g_comm, nullptr, buf), spyre_error_bad_argument);
    EXPECT_NE(std::string(spyre_last_error()).find("the ranks disagree: rank 0 has f32 [16], rank 1 f32 [17]"),
              std::string::npos)
        << spyre_last_error();
    // The communicator still works.
    Buffer<float> ok = on_device(float_buffer({16}, rank_()));
    EXPECT_EQ(spyre_all_reduce_sum(g_comm, nullptr, ok), 0) << spyre_last_error();
}

TEST(CollectivesErrors, ABadArgumentOnOneRankFailsEveryRankInsteadOfLeavingThemWaiting) {
    if (ranks() < 2) GTEST_SKIP();
    // Rank 1 alone gives a recv of the wrong size; rank 0 alone a tensor that holds no values.
    Buffer<float> send = on_device(float_buffer({8}, rank_()));
    Buffer<float> recv(8 * ranks() + (rank_() == 1 ? 1 : 0));
    ASSERT_EQ(recv.device_malloc(spyre_device_interface()), 0);
    EXPECT_NE(spyre_all_gather(g_comm, nullptr, send, recv, 0), 0);
    if (rank_() != 1) {
        EXPECT_CONTAINS_TEXT(spyre_last_error(), "rank 1 refused its own arguments");
    }
    Buffer<float> empty(8);
    ASSERT_EQ(empty.device_malloc(spyre_device_interface()), 0);
    if (rank_() == 0) {  // written in timing-only mode: it holds no values
        const int previous = spyre_set_timing_only(1);
        empty.set_host_dirty();
        empty.copy_to_device(spyre_device_interface());
        spyre_set_timing_only(previous);
    }
    Buffer<float> &mine = rank_() == 0 ? empty : send;
    EXPECT_NE(spyre_all_reduce_sum(g_comm, nullptr, mine), 0);
    if (rank_() != 0) {
        EXPECT_CONTAINS_TEXT(spyre_last_error(), "another rank could not read its tensor");
    }
    // Every rank is still in step.
    Buffer<float> ok = on_device(float_buffer({8}, rank_()));
    EXPECT_EQ(spyre_all_reduce_sum(g_comm, nullptr, ok), 0) << spyre_last_error();
}

TEST(CollectivesErrors, BadArgumentsAreRefusedBeforeAnythingMoves) {
    Buffer<float> host_only = float_buffer({8}, rank_());
    EXPECT_EQ(spyre_all_reduce_sum(g_comm, nullptr, host_only), spyre_error_bad_argument);
    EXPECT_NE(std::string(spyre_last_error()).find("not a live Spyre device buffer"), std::string::npos);
    Buffer<float> buf = on_device(float_buffer({8}, rank_()));
    EXPECT_EQ(spyre_broadcast(g_comm, nullptr, buf, ranks()), spyre_error_bad_argument);
    EXPECT_EQ(spyre_all_reduce_sum(nullptr, nullptr, buf), spyre_error_bad_argument);
    Buffer<float> wrong(8 * ranks() + 1);
    ASSERT_EQ(wrong.device_malloc(spyre_device_interface()), 0);
    EXPECT_EQ(spyre_all_gather(g_comm, nullptr, buf, wrong, 0), spyre_error_buffer_mismatch);
}

TEST(CollectivesOnStreams, AnAllReduceOrdersWithTheStreamsWork) {
    Buffer<float> buf = on_device(float_buffer({33, 2}, rank_()));
    spyre_stream_t *stream = spyre_stream_create();
    ASSERT_NE(stream, nullptr);
    ASSERT_EQ(spyre_all_reduce_sum(g_comm, stream, buf), 0);
    ASSERT_EQ(spyre_all_reduce_sum(g_comm, stream, buf), 0);  // twice: the sum of sums
    ASSERT_EQ(spyre_stream_synchronize(stream), 0) << spyre_last_error();
    spyre_stream_destroy(stream);
    buf.copy_to_host();
    int64_t i = 0;
    buf.for_each_value([&](float v) {
        double once = 0;
        for (int r = 0; r < ranks(); r++) once += value(r, i) * 1.37f;
        double twice = 0;
        for (int r = 0; r < ranks(); r++) twice += (float)once;
        EXPECT_EQ(v, (float)twice);
        i++;
    });
}

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    g_comm = spyre_comm_world(&argc, &argv);
    if (!g_comm) {
        std::fprintf(stderr, "collectives_test: %s\n", spyre_last_error());
        return 2;
    }
    const int result = RUN_ALL_TESTS();
    int worst = result;
    MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    spyre_comm_finalize(g_comm);
    return worst;
}
