// Streams and events (spyre_stream.h, spyre_stream.hpp): ordered execution,
// ordering across streams, concurrent use from many host threads, error
// codes (never crashes) for misuse and failed operations.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "HalideBuffer.h"
#include "program_builder.h"
#include "spyre/program_format.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"
#include "spyre/spyre_stream.h"
#include "spyre/spyre_stream.hpp"

namespace spyre::testing {
namespace {

using Halide::Runtime::Buffer;
using namespace std::chrono_literals;

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)


// A kernel as generated code would expose it: int add(A, B, Out).
struct AddKernel {
    std::vector<uint8_t> bytes;
    Buffer<uint8_t> blob;
    explicit AddKernel(const std::string &name, int64_t rows = 2)
        : bytes(encode_program(add_program(name, rows).p)), blob(bytes.data(), (int)bytes.size()) {}
    int operator()(halide_buffer_t *a, halide_buffer_t *b, halide_buffer_t *out) {
        halide_buffer_t *bufs[3] = {a, b, out};
        return spyre_run_program(nullptr, blob.raw_buffer(), 3, bufs, 0, nullptr);
    }
};

Buffer<float> filled(int rows, float scale) {
    Buffer<float> b(64, rows);
    for (int y = 0; y < rows; y++) {
        for (int x = 0; x < 64; x++) b(x, y) = scale * (float)(x + 64 * y) - 1.0f;
    }
    return b;
}

float at(const Buffer<float> &b, int x, int y) { return b(x, y); }

// ---- ordered execution ----

struct Append {
    std::vector<int> *log;
    std::mutex *mutex;
    int value;
    std::chrono::milliseconds delay;
};

int append(void *p) {
    auto *a = static_cast<Append *>(p);
    std::this_thread::sleep_for(a->delay);
    std::lock_guard<std::mutex> lock(*a->mutex);
    a->log->push_back(a->value);
    return 0;
}
void delete_append(void *p) { delete static_cast<Append *>(p); }

TEST(Streams, RunOperationsInEnqueueOrder) {
    std::vector<int> log;
    std::mutex m;
    spyre_stream_t *s = spyre_stream_create();
    ASSERT_NE(s, nullptr);
    for (int i = 0; i < 8; i++) {
        // Earlier operations sleep longer: only the queue keeps them in order.
        auto *a = new Append{&log, &m, i, std::chrono::milliseconds(8 - i)};
        ASSERT_EQ(spyre_stream_enqueue_kernel(s, append, a, delete_append), spyre_success);
    }
    EXPECT_EQ(spyre_stream_synchronize(s), spyre_success);
    EXPECT_EQ(log, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(spyre_stream_destroy(s), spyre_success);
}

TEST(Streams, CopiesAndKernelsOnOneStreamKeepTheIntermediateOnTheDevice) {
    AddKernel add("stream_add");
    Buffer<float> a = filled(2, 1.0f), b = filled(2, 0.5f), c = filled(2, -2.0f), out(64, 2);
    Buffer<float> t(nullptr, 64, 2);
    ASSERT_EQ(t.device_malloc(spyre_device_interface()), 0);
    ASSERT_EQ(out.device_malloc(spyre_device_interface()), 0);
    spyre_kernel_stats down0{};
    spyre_get_kernel_stats("device->host", &down0);

    spyre::Stream stream;
    ASSERT_EQ(stream.copy_to_device(a.raw_buffer()), 0);
    ASSERT_EQ(stream.copy_to_device(b.raw_buffer()), 0);
    ASSERT_EQ(stream.enqueue([&] { return add(a.raw_buffer(), b.raw_buffer(), t.raw_buffer()); }), 0);
    ASSERT_EQ(stream.enqueue([&] { return add(t.raw_buffer(), c.raw_buffer(), out.raw_buffer()); }), 0);
    ASSERT_EQ(stream.copy_to_host(out.raw_buffer()), 0);
    ASSERT_EQ(stream.synchronize(), 0) << spyre_last_error();

    spyre_kernel_stats down{};
    spyre_get_kernel_stats("device->host", &down);
    EXPECT_EQ(down.calls - down0.calls, 1u) << "only Out came back";
    EXPECT_FALSE(out.device_dirty());
    EXPECT_TRUE(t.device_dirty());
    for (int y = 0; y < 2; y++) {
        for (int x = 0; x < 64; x++) ASSERT_EQ(at(out, x, y), (at(a, x, y) + at(b, x, y)) + at(c, x, y));
    }
    a.device_free();
    b.device_free();
    t.device_free();
    out.device_free();
}

TEST(Streams, DestroyRunsWhatIsQueuedFirst) {
    std::atomic<int> ran{0};
    {
        spyre::Stream s;
        for (int i = 0; i < 5; i++) {
            s.enqueue([&] {
                std::this_thread::sleep_for(2ms);
                ran++;
                return 0;
            });
        }
    }  // ~Stream
    EXPECT_EQ(ran.load(), 5);
}

// ---- events ----

TEST(Events, OrderWorkAcrossTwoStreams) {
    for (int trial = 0; trial < 5; trial++) {
        std::atomic<int> produced{0};
        int seen = -1;
        spyre::Stream producer, consumer;
        spyre::Event ready;
        ASSERT_EQ(producer.enqueue([&] {
            std::this_thread::sleep_for(20ms);
            produced = 1;
            return 0;
        }),
                  0);
        ASSERT_EQ(producer.record(ready), 0);
        ASSERT_EQ(consumer.wait(ready), 0);
        ASSERT_EQ(consumer.enqueue([&] {
            seen = produced.load();
            return 0;
        }),
                  0);
        ASSERT_EQ(consumer.synchronize(), 0);
        EXPECT_EQ(seen, 1) << "trial " << trial;
    }
}

TEST(Events, EventSynchronizeWaitsForTheMostRecentRecord) {
    std::atomic<bool> done{false};
    spyre::Stream s;
    spyre::Event e;
    EXPECT_EQ(e.synchronize(), 0) << "never recorded: returns at once";
    s.enqueue([&] {
        std::this_thread::sleep_for(20ms);
        done = true;
        return 0;
    });
    ASSERT_EQ(s.record(e), 0);
    ASSERT_EQ(e.synchronize(), 0);
    EXPECT_TRUE(done.load());
}

TEST(Events, KernelsOnTwoStreamsChainedByAnEvent) {
    AddKernel add("event_add");
    Buffer<float> a = filled(2, 1.0f), b = filled(2, 2.0f), c = filled(2, 3.0f), out(64, 2);
    Buffer<float> t(nullptr, 64, 2);
    ASSERT_EQ(t.device_malloc(spyre_device_interface()), 0);
    spyre::Stream first, second;
    spyre::Event t_ready;
    first.enqueue([&] {
        std::this_thread::sleep_for(10ms);
        return add(a.raw_buffer(), b.raw_buffer(), t.raw_buffer());
    });
    first.record(t_ready);
    second.wait(t_ready);
    second.enqueue([&] { return add(t.raw_buffer(), c.raw_buffer(), out.raw_buffer()); });
    ASSERT_EQ(second.synchronize(), 0) << spyre_last_error();
    ASSERT_EQ(first.synchronize(), 0);
    for (int x = 0; x < 64; x++) ASSERT_EQ(at(out, x, 1), (at(a, x, 1) + at(b, x, 1)) + at(c, x, 1));
    t.device_free();
}

// ---- many host threads ----

TEST(Streams, FourThreadsEnqueueConcurrentlyOntoOneStream) {
    AddKernel add("four_threads_add");
    constexpr int kThreads = 4, kCallsEach = 6;
    spyre_stream_t *s = spyre_stream_create();
    std::vector<Buffer<float>> as, bs, outs;
    for (int i = 0; i < kThreads * kCallsEach; i++) {
        as.push_back(filled(2, 1.0f + i));
        bs.push_back(filled(2, -0.5f * i));
        outs.emplace_back(64, 2);
    }
    std::atomic<int> enqueue_failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            for (int k = 0; k < kCallsEach; k++) {
                const int i = t * kCallsEach + k;
                struct Args {
                    AddKernel *add;
                    halide_buffer_t *a, *b, *out;
                };
                auto *args = new Args{&add, as[i].raw_buffer(), bs[i].raw_buffer(), outs[i].raw_buffer()};
                auto run = [](void *p) {
                    auto *x = static_cast<Args *>(p);
                    return (*x->add)(x->a, x->b, x->out);
                };
                if (spyre_stream_enqueue_kernel(s, run, args, [](void *p) { delete static_cast<Args *>(p); }) != 0) {
                    enqueue_failures++;
                    delete args;
                }
            }
        });
    }
    for (std::thread &t : threads) t.join();
    EXPECT_EQ(enqueue_failures.load(), 0);
    ASSERT_EQ(spyre_stream_synchronize(s), 0) << spyre_last_error();
    for (int i = 0; i < kThreads * kCallsEach; i++) {
        for (int x = 0; x < 64; x += 7) ASSERT_EQ(at(outs[i], x, 1), at(as[i], x, 1) + at(bs[i], x, 1)) << i;
    }
    spyre_stream_destroy(s);
}

TEST(Streams, KernelsOnSeparateStreamsRunConcurrentlyAndCorrectly) {
    AddKernel add("concurrent_streams_add", 3);
    constexpr int kStreams = 3, kCalls = 8;
    std::vector<Buffer<float>> as, bs, outs;
    for (int i = 0; i < kStreams * kCalls; i++) {
        as.push_back(filled(3, 0.25f * (i + 1)));
        bs.push_back(filled(3, 2.0f - i));
        outs.emplace_back(64, 3);
    }
    std::vector<spyre::Stream> streams(kStreams);
    for (int k = 0; k < kCalls; k++) {
        for (int s = 0; s < kStreams; s++) {
            const int i = s * kCalls + k;
            streams[s].enqueue([&, i] { return add(as[i].raw_buffer(), bs[i].raw_buffer(), outs[i].raw_buffer()); });
        }
    }
    for (spyre::Stream &s : streams) ASSERT_EQ(s.synchronize(), 0) << spyre_last_error();
    for (int i = 0; i < kStreams * kCalls; i++) {
        for (int y = 0; y < 3; y++) {
            for (int x = 0; x < 64; x++) ASSERT_EQ(at(outs[i], x, y), at(as[i], x, y) + at(bs[i], x, y)) << i;
        }
    }
}

TEST(Streams, TwoThreadsEnqueueAndSynchronizeOneStream) {
    spyre_stream_t *s = spyre_stream_create();
    std::atomic<int> ran{0};
    auto worker = [&] {
        for (int round = 0; round < 20; round++) {
            for (int k = 0; k < 3; k++) {
                auto *counter = &ran;
                spyre_stream_enqueue_kernel(
                    s,
                    [](void *p) {
                        (*static_cast<std::atomic<int> *>(p))++;
                        return 0;
                    },
                    counter, nullptr);
            }
            EXPECT_EQ(spyre_stream_synchronize(s), 0);
        }
    };
    std::thread t1(worker), t2(worker);
    t1.join();
    t2.join();
    EXPECT_EQ(spyre_stream_synchronize(s), 0);
    EXPECT_EQ(ran.load(), 2 * 20 * 3);
    spyre_stream_destroy(s);
}

TEST(Streams, DestroyWhileAnotherThreadEnqueuesIsAnErrorCodeNotACrash) {
    for (int trial = 0; trial < 10; trial++) {
        spyre_stream_t *s = spyre_stream_create();
        std::atomic<bool> stop{false};
        std::atomic<int> ok{0}, rejected{0}, other{0};
        std::thread producer([&] {
            while (!stop) {
                const int r = spyre_stream_enqueue_kernel(s, [](void *) { return 0; }, nullptr, nullptr);
                if (r == 0) ok++;
                else if (r == spyre_error_bad_argument) rejected++;
                else other++;
                if (r != 0) break;
            }
        });
        std::this_thread::sleep_for(1ms);
        ::testing::internal::CaptureStderr();
        EXPECT_EQ(spyre_stream_destroy(s), 0);
        stop = true;
        producer.join();
        ::testing::internal::GetCapturedStderr();
        EXPECT_EQ(other.load(), 0);
    }
}

// ---- errors ----

TEST(StreamErrors, DestroyedOrNullHandlesGiveErrorCodes) {
    spyre_stream_t *s = spyre_stream_create();
    spyre_event_t *e = spyre_event_create();
    ASSERT_EQ(spyre_stream_destroy(s), 0);
    ASSERT_EQ(spyre_event_destroy(e), 0);
    Buffer<float> a(64, 1);
    int freed = 0;
    auto count_free = [](void *p) { (*static_cast<int *>(p))++; };
    EXPECT_EQ(spyre_stream_enqueue_kernel(s, [](void *) { return 0; }, &freed, count_free), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "spyre_stream_enqueue_kernel: not a live stream");
    EXPECT_EQ(freed, 0) << "a rejected enqueue leaves the arguments to the caller";
    EXPECT_EQ(spyre_stream_enqueue_copy_to_device(s, a.raw_buffer()), spyre_error_bad_argument);
    EXPECT_EQ(spyre_stream_enqueue_copy_to_host(s, a.raw_buffer()), spyre_error_bad_argument);
    EXPECT_EQ(spyre_stream_synchronize(s), spyre_error_bad_argument);
    EXPECT_EQ(spyre_stream_destroy(s), spyre_error_bad_argument);
    EXPECT_EQ(spyre_event_synchronize(e), spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "spyre_event_synchronize: not a live event");
    EXPECT_EQ(spyre_event_destroy(e), spyre_error_bad_argument);
    EXPECT_EQ(spyre_stream_synchronize(nullptr), spyre_error_bad_argument);

    spyre::Stream live;
    EXPECT_EQ(spyre_stream_wait_event(live.get(), e), spyre_error_bad_argument) << "waiting on a destroyed event";
    EXPECT_EQ(spyre_event_record(e, live.get()), spyre_error_bad_argument);
    // One kind's handle is not the other's.
    EXPECT_EQ(spyre_event_synchronize(reinterpret_cast<spyre_event_t *>(live.get())), spyre_error_bad_argument);
    EXPECT_EQ(live.synchronize(), 0);
}

TEST(StreamErrors, SynchronizeReturnsTheFirstErrorOnceAndEveryOperationRuns) {
    spyre::Stream s;
    std::atomic<int> ran{0};
    s.enqueue([&] { ran++; return 0; });
    s.enqueue([&] { ran++; return -5; });
    s.enqueue([&] { ran++; return -6; });
    s.enqueue([&] { ran++; return 0; });
    EXPECT_EQ(s.synchronize(), -5);
    EXPECT_EQ(ran.load(), 4);
    EXPECT_EQ(s.synchronize(), 0) << "the error was cleared";
}

TEST(StreamErrors, AFailedKernelCallReportsItsCodeAndMessage) {
    AddKernel add("stream_bad_shape");
    Buffer<float> a = filled(2, 1.0f), wrong(64, 3), out(64, 2);
    spyre::Stream s;
    ::testing::internal::CaptureStderr();
    s.enqueue([&] { return add(a.raw_buffer(), wrong.raw_buffer(), out.raw_buffer()); });
    const int code = s.synchronize();
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, halide_error_code_constraint_violated);
    EXPECT_EQ(std::string(spyre_last_error()),
              "stream_bad_shape: buffer 'B' dimension 1 has extent 3, the kernel was compiled for 2");
}

TEST(StreamErrors, ACopyOfAFreedBufferFailsInTheStream) {
    Buffer<float> a = filled(1, 1.0f);
    ASSERT_EQ(a.copy_to_device(spyre_device_interface()), 0);
    halide_buffer_t stale = *a.raw_buffer();
    a.device_free();
    stale.flags = halide_buffer_flag_device_dirty;
    spyre::Stream s;
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(s.copy_to_host(&stale), 0);
    const int code = s.synchronize();
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, spyre_error_bad_argument);
    EXPECT_CONTAINS(spyre_last_error(), "was freed (device_free)");
}

TEST(StreamErrors, SynchronizingAStreamFromItsOwnOperationDoesNotDeadlock) {
    spyre::Stream s;
    int inner = 1;
    spyre_stream_t *raw = s.get();
    s.enqueue([&] {
        inner = spyre_stream_synchronize(raw);
        return 0;
    });
    EXPECT_EQ(s.synchronize(), 0);
    EXPECT_EQ(inner, spyre_error_bad_argument);
}

TEST(StreamErrors, KernelArgumentsAreFreedExactlyOnceEvenWhenTheKernelFails) {
    std::atomic<int> frees{0};
    struct Args {
        std::atomic<int> *frees;
    };
    spyre_stream_t *s = spyre_stream_create();
    for (int i = 0; i < 4; i++) {
        spyre_stream_enqueue_kernel(
            s, [](void *) { return -3; }, new Args{&frees},
            [](void *p) {
                auto *a = static_cast<Args *>(p);
                (*a->frees)++;
                delete a;
            });
    }
    EXPECT_EQ(spyre_stream_synchronize(s), -3);
    EXPECT_EQ(frees.load(), 4);
    spyre_stream_destroy(s);
}

}  // namespace
}  // namespace spyre::testing
