// Streams and events (spyre_stream.h): one worker thread per stream draining
// an ordered queue; events are generation counters that markers complete.
//
// Handles given to the caller are ids (never reused), not addresses: every
// call looks its handle up in a registry, so a destroyed or foreign handle is
// an error code, never a dangling pointer. The shared state of a stream or an
// event lives as long as anything (the registry, a queued operation, a
// waiting thread) still refers to it.
#include "spyre/spyre_stream.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "device_state.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace spyre {
namespace {

struct EventState {
    std::mutex mutex;
    std::condition_variable changed;
    uint64_t recorded = 0;   // generation of the most recent record call
    uint64_t completed = 0;  // highest generation whose marker was reached

    void complete(uint64_t generation) {
        std::lock_guard<std::mutex> lock(mutex);
        if (generation > completed) completed = generation;
        changed.notify_all();
    }
    void wait_for(uint64_t generation) {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return completed >= generation; });
    }
};

using Operation = std::function<int()>;

struct StreamState {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<Operation> queue;
    uint64_t enqueued = 0;
    uint64_t done = 0;
    bool stopping = false;
    int first_error = 0;
    std::string first_message;
    std::thread worker;

    void run() {
        for (;;) {
            Operation op;
            {
                std::unique_lock<std::mutex> lock(mutex);
                changed.wait(lock, [&] { return stopping || !queue.empty(); });
                if (queue.empty()) return;  // stopping and drained
                op = std::move(queue.front());
                queue.pop_front();
            }
            set_last_error("");
            const int code = guarded(nullptr, "spyre stream operation", [&] { return op(); });
            op = nullptr;  // frees the kernel's arguments before the operation counts as done
            std::lock_guard<std::mutex> lock(mutex);
            if (code != 0 && first_error == 0) {
                first_error = code;
                first_message = last_error().empty() ? "a stream operation failed with code " + std::to_string(code) : last_error();
            }
            done++;
            changed.notify_all();
        }
    }

    void enqueue(Operation op) {
        std::lock_guard<std::mutex> lock(mutex);
        queue.push_back(std::move(op));
        enqueued++;
        changed.notify_all();
    }
};

// The live handles. Ids of streams and events share one counter, so one
// kind's handle passed as the other is recognised as not live.
struct HandleRegistry {
    std::mutex mutex;
    uintptr_t next_id = 1;
    std::map<uintptr_t, std::shared_ptr<StreamState>> streams;
    std::map<uintptr_t, std::shared_ptr<EventState>> events;
};

HandleRegistry &handles() {
    static HandleRegistry *r = new HandleRegistry();  // never destroyed: streams may outlive static destructors
    return *r;
}

std::shared_ptr<StreamState> live_stream(spyre_stream_t *s, const char *where) {
    HandleRegistry &r = handles();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.streams.find(reinterpret_cast<uintptr_t>(s));
    if (it == r.streams.end()) {
        throw RuntimeError(spyre_error_bad_argument,
                           std::string(where) + ": not a live stream (destroyed, never created or null)");
    }
    return it->second;
}

std::shared_ptr<EventState> live_event(spyre_event_t *e, const char *where) {
    HandleRegistry &r = handles();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.events.find(reinterpret_cast<uintptr_t>(e));
    if (it == r.events.end()) {
        throw RuntimeError(spyre_error_bad_argument,
                           std::string(where) + ": not a live event (destroyed, never created or null)");
    }
    return it->second;
}

bool on_worker_of(const StreamState &s) { return s.worker.get_id() == std::this_thread::get_id(); }

// Owns a kernel's arguments: freed when the operation is destroyed.
struct KernelCall {
    int (*kernel)(void *);
    void *args;
    void (*free_args)(void *);
    KernelCall(int (*k)(void *), void *a, void (*f)(void *)) : kernel(k), args(a), free_args(f) {}
    ~KernelCall() {
        if (free_args) free_args(args);
    }
    KernelCall(const KernelCall &) = delete;
    KernelCall &operator=(const KernelCall &) = delete;
};

}  // namespace
}  // namespace spyre

extern "C" {

using namespace spyre;

spyre_stream_t *spyre_stream_create(void) {
    try {
        auto state = std::make_shared<StreamState>();
        StreamState *raw = state.get();
        {
            // The worker is started under the state's lock, so it never runs before `worker` is set.
            std::lock_guard<std::mutex> lock(raw->mutex);
            raw->worker = std::thread([raw] { raw->run(); });
        }
        HandleRegistry &r = handles();
        std::lock_guard<std::mutex> lock(r.mutex);
        const uintptr_t id = r.next_id++;
        r.streams[id] = state;
        return reinterpret_cast<spyre_stream_t *>(id);
    } catch (const std::exception &e) {
        report_failure(nullptr, spyre_error_out_of_memory, std::string("spyre_stream_create: ") + e.what());
        return nullptr;
    }
}

int spyre_stream_destroy(spyre_stream_t *stream) {
    return guarded(nullptr, "spyre_stream_destroy", [&] {
        std::shared_ptr<StreamState> state;
        {
            HandleRegistry &r = handles();
            std::lock_guard<std::mutex> lock(r.mutex);
            auto it = r.streams.find(reinterpret_cast<uintptr_t>(stream));
            if (it == r.streams.end()) {
                throw RuntimeError(spyre_error_bad_argument,
                                   "spyre_stream_destroy: not a live stream (destroyed, never created or null)");
            }
            state = std::move(it->second);
            r.streams.erase(it);  // from now on the handle is not live: no new work
        }
        std::thread worker;
        {
            std::lock_guard<std::mutex> lock(state->mutex);
            state->stopping = true;
            state->changed.notify_all();
            worker = std::move(state->worker);
        }
        if (worker.get_id() == std::this_thread::get_id()) {
            worker.detach();  // destroyed from its own kernel: the worker finishes the queue and exits
        } else {
            worker.join();
        }
        return 0;
    });
}

spyre_event_t *spyre_event_create(void) {
    try {
        auto state = std::make_shared<EventState>();
        HandleRegistry &r = handles();
        std::lock_guard<std::mutex> lock(r.mutex);
        const uintptr_t id = r.next_id++;
        r.events[id] = state;
        return reinterpret_cast<spyre_event_t *>(id);
    } catch (const std::exception &e) {
        report_failure(nullptr, spyre_error_out_of_memory, std::string("spyre_event_create: ") + e.what());
        return nullptr;
    }
}

int spyre_event_destroy(spyre_event_t *event) {
    return guarded(nullptr, "spyre_event_destroy", [&] {
        HandleRegistry &r = handles();
        std::lock_guard<std::mutex> lock(r.mutex);
        if (r.events.erase(reinterpret_cast<uintptr_t>(event)) == 0) {
            throw RuntimeError(spyre_error_bad_argument,
                               "spyre_event_destroy: not a live event (destroyed, never created or null)");
        }
        return 0;  // queued markers and waits keep the state alive
    });
}

int spyre_stream_enqueue_copy_to_device(spyre_stream_t *stream, halide_buffer_t *buf) {
    return guarded(nullptr, "spyre_stream_enqueue_copy_to_device", [&] {
        std::shared_ptr<StreamState> s = live_stream(stream, "spyre_stream_enqueue_copy_to_device");
        if (buf == nullptr) throw RuntimeError(spyre_error_bad_argument, "spyre_stream_enqueue_copy_to_device: null buffer");
        s->enqueue([buf] { return spyre_device_interface()->copy_to_device(nullptr, buf, spyre_device_interface()); });
        return 0;
    });
}

int spyre_stream_enqueue_copy_to_host(spyre_stream_t *stream, halide_buffer_t *buf) {
    return guarded(nullptr, "spyre_stream_enqueue_copy_to_host", [&] {
        std::shared_ptr<StreamState> s = live_stream(stream, "spyre_stream_enqueue_copy_to_host");
        if (buf == nullptr) throw RuntimeError(spyre_error_bad_argument, "spyre_stream_enqueue_copy_to_host: null buffer");
        s->enqueue([buf] {
            if (!buf->device_dirty()) return 0;
            if (buf->device_interface == nullptr) {
                throw RuntimeError(spyre_error_bad_argument, "spyre stream copy_to_host: device-dirty buffer without a device interface");
            }
            return buf->device_interface->copy_to_host(nullptr, buf);
        });
        return 0;
    });
}

int spyre_stream_enqueue_kernel(spyre_stream_t *stream, int (*kernel)(void *), void *args, void (*free_args)(void *)) {
    return guarded(nullptr, "spyre_stream_enqueue_kernel", [&] {
        std::shared_ptr<StreamState> s = live_stream(stream, "spyre_stream_enqueue_kernel");
        if (kernel == nullptr) throw RuntimeError(spyre_error_bad_argument, "spyre_stream_enqueue_kernel: null kernel");
        // Ownership of args passes to the operation only once it is queued.
        auto call = std::make_shared<KernelCall>(kernel, args, nullptr);
        Operation op = [call] { return call->kernel(call->args); };
        call->free_args = free_args;
        try {
            s->enqueue(std::move(op));
        } catch (...) {
            call->free_args = nullptr;  // not queued: the caller keeps ownership
            throw;
        }
        return 0;
    });
}

int spyre_event_record(spyre_event_t *event, spyre_stream_t *stream) {
    return guarded(nullptr, "spyre_event_record", [&] {
        std::shared_ptr<EventState> e = live_event(event, "spyre_event_record");
        std::shared_ptr<StreamState> s = live_stream(stream, "spyre_event_record");
        // Both locks, so records and waits see generations in enqueue order.
        std::lock_guard<std::mutex> lock(e->mutex);
        const uint64_t generation = ++e->recorded;
        s->enqueue([e, generation] {
            e->complete(generation);
            return 0;
        });
        return 0;
    });
}

int spyre_stream_wait_event(spyre_stream_t *stream, spyre_event_t *event) {
    return guarded(nullptr, "spyre_stream_wait_event", [&] {
        std::shared_ptr<StreamState> s = live_stream(stream, "spyre_stream_wait_event");
        std::shared_ptr<EventState> e = live_event(event, "spyre_stream_wait_event");
        uint64_t generation;
        {
            std::lock_guard<std::mutex> lock(e->mutex);
            generation = e->recorded;
        }
        if (generation == 0) return 0;  // never recorded: nothing to wait for
        s->enqueue([e, generation] {
            e->wait_for(generation);
            return 0;
        });
        return 0;
    });
}

int spyre_stream_synchronize(spyre_stream_t *stream) {
    std::string message;
    const int code = guarded(nullptr, "spyre_stream_synchronize", [&] {
        std::shared_ptr<StreamState> s = live_stream(stream, "spyre_stream_synchronize");
        std::unique_lock<std::mutex> lock(s->mutex);
        if (on_worker_of(*s)) {
            throw RuntimeError(spyre_error_bad_argument,
                               "spyre_stream_synchronize: called from the stream's own operation (it would wait for itself)");
        }
        const uint64_t target = s->enqueued;
        s->changed.wait(lock, [&] { return s->done >= target; });
        const int first = s->first_error;
        message = s->first_message;
        s->first_error = 0;
        s->first_message.clear();
        return first;
    });
    // A stream operation's failure was reported when it happened; here its
    // message only becomes this thread's spyre_last_error().
    if (code != 0 && !message.empty()) set_last_error(message);
    return code;
}

int spyre_event_synchronize(spyre_event_t *event) {
    return guarded(nullptr, "spyre_event_synchronize", [&] {
        std::shared_ptr<EventState> e = live_event(event, "spyre_event_synchronize");
        uint64_t generation;
        {
            std::lock_guard<std::mutex> lock(e->mutex);
            generation = e->recorded;
        }
        e->wait_for(generation);
        return 0;
    });
}

}  // extern "C"
