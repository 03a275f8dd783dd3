// Host memory stays flat under concurrent kernel calls: many threads calling a
// small 32-core kernel many times must not grow the process without bound. The
// functional simulator's scratchpads (2 MiB per core) come from a pool that
// keeps at most a fixed number alive: a run that would pass it waits for
// another run to give its scratchpads back, instead of allocating fresh ones
// (which glibc served from fragmenting per-thread arenas: 8 threads x 12,000
// calls reached 844 MB). Runs in its own ctest entry (the peak RSS it reads is
// the process's).
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <thread>
#include <vector>

#include "HalideBuffer.h"
#include "program_builder.h"
#include "spyre/program_format.h"
#include "spyre/spyre_runtime.h"

namespace spyre::testing {
namespace {

using Halide::Runtime::Buffer;

// Y(x) = X(x) + X(x) on every core's own 32 floats: every core's scratchpad is used.
Program doubling_program() {
    ProgramBuilder b("double_every_core");
    const int cores = (int)b.p.cores.size();
    const int X = b.arg("X", ArgKind::Input, DType::F32, {32, cores});
    const int Y = b.arg("Y", ArgKind::Output, DType::F32, {32, cores});
    for (int c = 0; c < cores; c++) {
        b.load(c, X, c * 128, 0, 128);
        b.signal(c, Unit::Dma, 0);
        b.wait(c, Unit::Sfu, 0);
        b.emit(c, Unit::Sfu, Opcode::Add, {512, 0, 0, 0, 0, 0, 0, 0, 32, 1, (int)DType::F32, 0});
        b.signal(c, Unit::Sfu, 1);
        b.wait(c, Unit::Dma, 1);
        b.store(c, Y, c * 128, 512, 128);
    }
    return b.p;
}

long peak_rss_mb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024;
}

TEST(ConcurrentCalls, HostMemoryStaysFlatAcrossManyThreadsAndCalls) {
    const Program p = doubling_program();
    std::vector<uint8_t> bytes = encode_program(p);
    Buffer<uint8_t> blob(bytes.data(), (int)bytes.size());
    const int cores = (int)p.cores.size();
    const int threads = 32, calls = 300;
    std::atomic<int> failures{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++) {
        pool.emplace_back([&, t] {
            Buffer<float> x(32, cores), y(32, cores);
            x.fill((float)t);
            for (int i = 0; i < calls; i++) {
                halide_buffer_t *args[2] = {x.raw_buffer(), y.raw_buffer()};
                if (spyre_run_program(nullptr, blob.raw_buffer(), 2, args, 0, nullptr) != 0 || y(5, 1) != 2.0f * t) {
                    failures++;
                }
            }
        });
    }
    for (auto &th : pool) th.join();
    EXPECT_EQ(failures.load(), 0) << spyre_last_error();
    // 32 threads x 300 calls of a 32-core kernel; the scratchpads in use at once are bounded.
    const long peak = peak_rss_mb();
    std::printf("peak RSS after %d x %d calls: %ld MB\n", threads, calls, peak);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    // The sanitizers' shadow memory and quarantine are RSS of their own: the bound is the main build's.
#else
    EXPECT_LT(peak, 200) << "host memory grew with concurrent calls";
#endif
}

}  // namespace
}  // namespace spyre::testing
