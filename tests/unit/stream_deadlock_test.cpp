// Stream misuse that used to lose work or hang (docs/reliability.md, "Attempts
// and what they give"): destroying a stream while other threads enqueue onto
// it, and operations that wait, from inside a stream, for work that can only
// run after them. Every accepted operation must run exactly once; every wait
// that can never end must return an error instead of blocking forever.
//
// A test that would hang on a regression stops the whole binary after a
// deadline (a blocked stream worker cannot be cancelled), so ctest reports a
// failure instead of a timeout.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "spyre/spyre_runtime.h"
#include "spyre/spyre_stream.h"

namespace spyre::testing {
namespace {

using namespace std::chrono_literals;

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// Runs `body` on its own thread; if it has not returned after `deadline` the
// process exits with a message (the body is blocked for good).
void finishes_within(std::chrono::seconds deadline, const char *what, const std::function<void()> &body) {
    std::packaged_task<void()> task(body);
    std::future<void> done = task.get_future();
    std::thread runner(std::move(task));
    if (done.wait_for(deadline) != std::future_status::ready) {
        std::printf("FAILED: %s did not return within %lld s (it hangs)\n", what, (long long)deadline.count());
        std::fflush(stdout);
        std::_Exit(1);
    }
    runner.join();
    done.get();
}

struct CountingArgs {
    std::atomic<int> *ran;
    std::atomic<int> *freed;
};
int count_run(void *p) {
    (*static_cast<CountingArgs *>(p)->ran)++;
    return 0;
}
void count_free(void *p) {
    auto *a = static_cast<CountingArgs *>(p);
    (*a->freed)++;
    delete a;
}

TEST(StreamDestroyRace, EveryAcceptedOperationRunsExactlyOnce) {
    constexpr int rounds = 500, threads = 8, per_thread = 200;
    int lossy_rounds = 0;
    for (int round = 0; round < rounds; round++) {
        spyre_stream_t *s = spyre_stream_create();
        ASSERT_NE(s, nullptr);
        std::atomic<int> accepted{0}, rejected{0}, unexpected{0}, ran{0}, freed{0};
        std::atomic<int> started{0};
        std::vector<std::thread> producers;
        for (int t = 0; t < threads; t++) {
            producers.emplace_back([&] {
                started++;
                for (int i = 0; i < per_thread; i++) {
                    auto *args = new CountingArgs{&ran, &freed};
                    const int r = spyre_stream_enqueue_kernel(s, count_run, args, count_free);
                    if (r == 0) {
                        accepted++;
                    } else {
                        delete args;  // a rejected enqueue leaves the arguments to the caller
                        (r == spyre_error_bad_argument ? rejected : unexpected)++;
                    }
                }
            });
        }
        while (started < threads) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::microseconds(50 + 10 * (round % 20)));
        ::testing::internal::CaptureStderr();
        EXPECT_EQ(spyre_stream_destroy(s), 0);
        for (std::thread &p : producers) p.join();
        ::testing::internal::GetCapturedStderr();
        EXPECT_EQ(unexpected.load(), 0);
        EXPECT_EQ(accepted + rejected, threads * per_thread);
        EXPECT_EQ(freed.load(), accepted.load()) << "round " << round << ": free_args runs once per accepted operation";
        if (ran.load() != accepted.load()) lossy_rounds++;
    }
    EXPECT_EQ(lossy_rounds, 0) << "rounds in which an accepted operation (enqueue returned 0) never ran";
}

TEST(StreamDestroyRace, AnEnqueueAfterDestroyBeganSaysTheStreamIsGone) {
    spyre_stream_t *s = spyre_stream_create();
    static spyre_stream_t *self;
    static std::atomic<int> late{1};
    self = s;
    // The operation destroys its own stream, then tries to enqueue onto it.
    ASSERT_EQ(spyre_stream_enqueue_kernel(
                  s,
                  [](void *) {
                      spyre_stream_destroy(self);
                      late = spyre_stream_enqueue_kernel(self, [](void *) { return 0; }, nullptr, nullptr);
                      return 0;
                  },
                  nullptr, nullptr),
              0);
    finishes_within(10s, "waiting for the self-destroying stream", [] {
        while (late == 1) std::this_thread::sleep_for(1ms);
    });
    EXPECT_EQ(late.load(), spyre_error_bad_argument);
}

spyre_event_t *behind_event;
int sleep_a_little(void *) {
    std::this_thread::sleep_for(50ms);
    return 0;
}
struct WaitResult {
    int code = 1;
    std::string message;
};
int synchronize_behind_event(void *p) {
    auto *result = static_cast<WaitResult *>(p);
    result->code = spyre_event_synchronize(behind_event);
    result->message = spyre_last_error();
    return 0;
}

TEST(StreamDeadlocks, AnOperationWaitingForAnEventRecordedBehindItOnItsOwnStreamGetsAnError) {
    spyre_stream_t *s = spyre_stream_create();
    behind_event = spyre_event_create();
    WaitResult inner;
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(spyre_stream_enqueue_kernel(s, sleep_a_little, nullptr, nullptr), 0);  // keeps the worker busy
    ASSERT_EQ(spyre_stream_enqueue_kernel(s, synchronize_behind_event, &inner, nullptr), 0);
    ASSERT_EQ(spyre_event_record(behind_event, s), 0);  // queued behind the waiting operation
    finishes_within(10s, "spyre_stream_synchronize", [&] { EXPECT_EQ(spyre_stream_synchronize(s), 0); });
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(inner.code, spyre_error_bad_argument);
    EXPECT_CONTAINS(inner.message, "spyre_event_synchronize: would deadlock");
    EXPECT_CONTAINS(inner.message, "queued behind");
    EXPECT_EQ(spyre_event_synchronize(behind_event), 0) << "the record ran after the failed wait";
    spyre_event_destroy(behind_event);
    spyre_stream_destroy(s);
}

struct SyncOther {
    spyre_stream_t *other;
    std::atomic<int> *result;
};
int synchronize_other(void *p) {
    auto *a = static_cast<SyncOther *>(p);
    std::this_thread::sleep_for(20ms);
    *a->result = spyre_stream_synchronize(a->other);
    return 0;
}

TEST(StreamDeadlocks, TwoStreamsSynchronizingEachOtherFromTheirOperationsGetAnErrorOnOneSide) {
    spyre_stream_t *a = spyre_stream_create(), *b = spyre_stream_create();
    std::atomic<int> a_result{1}, b_result{1};
    SyncOther a_args{b, &a_result}, b_args{a, &b_result};
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(spyre_stream_enqueue_kernel(a, sleep_a_little, nullptr, nullptr), 0);
    ASSERT_EQ(spyre_stream_enqueue_kernel(a, synchronize_other, &a_args, nullptr), 0);
    ASSERT_EQ(spyre_stream_enqueue_kernel(b, sleep_a_little, nullptr, nullptr), 0);
    ASSERT_EQ(spyre_stream_enqueue_kernel(b, synchronize_other, &b_args, nullptr), 0);
    finishes_within(10s, "spyre_stream_synchronize of two streams waiting for each other", [&] {
        EXPECT_EQ(spyre_stream_synchronize(a), 0);
        EXPECT_EQ(spyre_stream_synchronize(b), 0);
    });
    ::testing::internal::GetCapturedStderr();
    // The wait that would close the cycle fails; the other then completes.
    const int failed = (a_result == spyre_error_bad_argument) + (b_result == spyre_error_bad_argument);
    const int succeeded = (a_result == 0) + (b_result == 0);
    EXPECT_EQ(failed, 1) << "a=" << a_result << " b=" << b_result;
    EXPECT_EQ(succeeded, 1) << "a=" << a_result << " b=" << b_result;
    spyre_stream_destroy(a);
    spyre_stream_destroy(b);
}

TEST(StreamDeadlocks, WaitingForAnotherStreamThatIsNotWaitingIsNoDeadlock) {
    spyre_stream_t *a = spyre_stream_create(), *b = spyre_stream_create();
    std::atomic<int> a_result{1};
    SyncOther a_args{b, &a_result};
    ASSERT_EQ(spyre_stream_enqueue_kernel(b, sleep_a_little, nullptr, nullptr), 0);
    ASSERT_EQ(spyre_stream_enqueue_kernel(a, synchronize_other, &a_args, nullptr), 0);
    finishes_within(10s, "spyre_stream_synchronize", [&] { EXPECT_EQ(spyre_stream_synchronize(a), 0); });
    EXPECT_EQ(a_result.load(), 0);
    spyre_stream_destroy(a);
    spyre_stream_destroy(b);
}

TEST(StreamDeadlocks, AnOperationWaitingForAnEventRecordedEarlierOnItsOwnStreamIsNoDeadlock) {
    spyre_stream_t *s = spyre_stream_create();
    behind_event = spyre_event_create();
    WaitResult inner;
    ASSERT_EQ(spyre_event_record(behind_event, s), 0);
    ASSERT_EQ(spyre_stream_enqueue_kernel(s, synchronize_behind_event, &inner, nullptr), 0);
    finishes_within(10s, "spyre_stream_synchronize", [&] { EXPECT_EQ(spyre_stream_synchronize(s), 0); });
    EXPECT_EQ(inner.code, 0);
    spyre_event_destroy(behind_event);
    spyre_stream_destroy(s);
}

}  // namespace
}  // namespace spyre::testing
