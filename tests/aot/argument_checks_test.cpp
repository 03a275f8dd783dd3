// The argument checks of a Spyre AOT kernel against those of the host build of
// the same generator (gen_bmm, batch=2 m=16 n=64 k=32 float32): every misused
// buffer the host build rejects, the Spyre build rejects with the same error
// code; none gives rc 0 with a shifted or partial result (a buffer with a
// non-zero min used to run on the Spyre build as if its min were 0).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "HalideBuffer.h"
#include "aot_bmm_host.h"
#include "aot_bmm_spyre.h"
#include "spyre/spyre_runtime.h"

namespace {

using Halide::Runtime::Buffer;
constexpr int K = 32, M = 16, N = 64, BATCH = 2;

void fill(Buffer<float> &b, unsigned seed) {
    unsigned s = seed * 2654435761u + 1;
    b.for_each_value([&](float &v) {
        s = s * 1664525u + 1013904223u;
        v = (float)((s >> 8) % 2000) / 1000.0f - 1.0f;
    });
    b.set_host_dirty();
}

// Halide's error handler prints to stderr; the tests look at the codes.
void quiet(void *, const char *) {}

struct Outcome {
    int host, spyre;
};

// Calls both builds with buffers `make` prepares (fresh for each build, so one
// call cannot affect the other's inputs or outputs).
using MakeBuffers = std::function<void(Buffer<float> &a, Buffer<float> &b, Buffer<float> &c)>;
Outcome call_both(const MakeBuffers &make) {
    Outcome o{};
    {
        Buffer<float> a, b, c;
        make(a, b, c);
        o.host = aot_bmm_host(a, b, c);
    }
    {
        Buffer<float> a, b, c;
        make(a, b, c);
        o.spyre = aot_bmm_spyre(a, b, c);
    }
    return o;
}

void dense(Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
    a = Buffer<float>(K, M, BATCH);
    b = Buffer<float>(N, K, BATCH);
    c = Buffer<float>(N, M, BATCH);
    fill(a, 1);
    fill(b, 2);
}

class AotArgumentChecks : public ::testing::Test {
protected:
    void SetUp() override { halide_set_error_handler(quiet); }
};

TEST_F(AotArgumentChecks, ACorrectCallSucceedsOnBothBuilds) {
    const Outcome o = call_both(dense);
    EXPECT_EQ(o.host, 0);
    EXPECT_EQ(o.spyre, 0);
}

TEST_F(AotArgumentChecks, AnInputWithANonZeroMinFailsLikeTheHostBuild) {
    for (int d = 0; d < 3; d++) {
        SCOPED_TRACE("A min 5 in dimension " + std::to_string(d));
        const Outcome o = call_both([d](Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
            dense(a, b, c);
            a.raw_buffer()->dim[d].min = 5;
        });
        EXPECT_EQ(o.host, halide_error_code_access_out_of_bounds);
        EXPECT_EQ(o.spyre, o.host);
    }
    const Outcome o = call_both([](Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
        dense(a, b, c);
        b.raw_buffer()->dim[1].min = 1;
    });
    EXPECT_EQ(o.spyre, o.host) << "B min 1 in dimension 1";
    EXPECT_NE(o.host, 0);
}

TEST_F(AotArgumentChecks, AnOutputWithANonZeroMinFailsLikeTheHostBuild) {
    for (int d = 0; d < 3; d++) {
        SCOPED_TRACE("C min 3 in dimension " + std::to_string(d));
        const Outcome o = call_both([d](Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
            dense(a, b, c);
            c.raw_buffer()->dim[d].min = 3;
        });
        EXPECT_EQ(o.host, halide_error_code_access_out_of_bounds);
        EXPECT_EQ(o.spyre, o.host);
    }
}

TEST_F(AotArgumentChecks, AnExtentTooSmallFailsLikeTheHostBuild) {
    const Outcome a = call_both([](Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
        dense(a, b, c);
        a = Buffer<float>(K - 1, M, BATCH);
        fill(a, 1);
    });
    EXPECT_EQ(a.host, halide_error_code_access_out_of_bounds);
    EXPECT_EQ(a.spyre, a.host) << "A extent k-1";
    const Outcome c = call_both([](Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
        dense(a, b, c);
        c = Buffer<float>(N, M - 1, BATCH);
    });
    EXPECT_EQ(c.host, halide_error_code_access_out_of_bounds);
    EXPECT_EQ(c.spyre, c.host) << "C extent m-1";
}

TEST_F(AotArgumentChecks, WrongTypeOrRankFailsLikeTheHostBuild) {
    const Outcome type = call_both([](Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
        dense(a, b, c);
        a.raw_buffer()->type = halide_type_t(halide_type_int, 32);
    });
    EXPECT_NE(type.host, 0);
    EXPECT_EQ(type.spyre, type.host) << "A int32";
    const Outcome rank = call_both([](Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
        dense(a, b, c);
        a = Buffer<float>(K, M);
        fill(a, 1);
    });
    EXPECT_NE(rank.host, 0);
    EXPECT_EQ(rank.spyre, rank.host) << "A rank 2";
}

TEST_F(AotArgumentChecks, ABufferCoveringTheRegionButNotOfTheCompiledShapeFailsLikeTheHostBuild) {
    const Outcome bigger = call_both([](Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
        dense(a, b, c);
        a = Buffer<float>(K + 32, M, BATCH);
        fill(a, 1);
    });
    EXPECT_EQ(bigger.host, halide_error_code_constraint_violated);
    EXPECT_EQ(bigger.spyre, bigger.host) << "A extent k+32";
    EXPECT_NE(std::string(spyre_last_error()).find("dimension 0 has extent 64, the kernel was compiled for 32"),
              std::string::npos)
        << spyre_last_error();
    const Outcome below = call_both([](Buffer<float> &a, Buffer<float> &b, Buffer<float> &c) {
        dense(a, b, c);
        a = Buffer<float>(K + 2, M, BATCH);
        fill(a, 1);
        a.raw_buffer()->dim[0].min = -2;
    });
    EXPECT_EQ(below.host, halide_error_code_constraint_violated);
    EXPECT_EQ(below.spyre, below.host) << "A min -2 extent k+2";
}

// spyre_last_error() describes the latest kernel call: a later call refused for its type or
// rank never leaves an earlier call's message there, and a successful call clears it.
TEST_F(AotArgumentChecks, TheLastErrorIsTheLatestCallsNeverAnEarlierOne) {
    Buffer<float> a, b, c;
    dense(a, b, c);
    a.raw_buffer()->dim[1].min = 5;
    ASSERT_NE(aot_bmm_spyre(a, b, c), 0);
    const std::string first = spyre_last_error();
    ASSERT_NE(first, "");
    for (const bool wrong_type : {true, false}) {
        Buffer<float> a2, b2, c2;
        dense(a2, b2, c2);
        if (wrong_type) {
            a2.raw_buffer()->type = halide_type_t(halide_type_int, 32);
        } else {
            a2 = Buffer<float>(K, M);
            fill(a2, 1);
        }
        ASSERT_NE(aot_bmm_spyre(a2, b2, c2), 0);
        const std::string now = spyre_last_error();
        EXPECT_NE(now, first) << (wrong_type ? "A int32" : "A rank 2") << ": the earlier call's message is still there";
        EXPECT_TRUE(now.empty() || now.find("buffer 'A'") != std::string::npos) << now;
    }
    Buffer<float> a3, b3, c3;
    dense(a3, b3, c3);
    ASSERT_NE(aot_bmm_spyre(a, b, c), 0);
    ASSERT_EQ(aot_bmm_spyre(a3, b3, c3), 0);
    EXPECT_EQ(std::string(spyre_last_error()), "") << "a successful call leaves no message";
}

TEST_F(AotArgumentChecks, TheMinErrorNamesTheBufferTheDimensionAndTheRegion) {
    Buffer<float> a, b, c;
    dense(a, b, c);
    a.raw_buffer()->dim[1].min = 5;
    ASSERT_EQ(aot_bmm_spyre(a, b, c), halide_error_code_access_out_of_bounds);
    EXPECT_EQ(std::string(spyre_last_error()),
              "aot_bmm_spyre: buffer 'A' dimension 1 covers [5, 20] (min 5, extent 16); the kernel accesses [0, 15]");
}

}  // namespace
