// Streams and events (spyre_stream.h): one worker thread per stream draining
// an ordered queue. Operations are numbered per stream (1, 2, ...); an event
// remembers which operation of which stream its most recent record queued,
// and waiting for it is waiting until that stream has finished that operation.
//
// Every wait made from inside a stream operation (synchronizing a stream or an
// event, a queued event wait, destroying another stream) is entered in a
// wait-for graph first. A wait that can never end (the stream waited for is
// the caller's own, behind the calling operation, or is itself blocked in a
// chain of waits leading back to the caller) fails with
// spyre_error_bad_argument instead of blocking. Host threads are never waited
// for, so their waits need no check.
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
#include <set>
#include <string>
#include <thread>

#include "device_state.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace spyre {
namespace {

using Operation = std::function<int()>;

struct StreamState;
thread_local StreamState *stream_of_this_worker = nullptr;  // set on a stream's worker thread

struct StreamState {
    uintptr_t id = 0;  // the handle's value, for messages
    mutable std::mutex mutex;
    std::condition_variable changed;
    std::deque<Operation> queue;
    uint64_t enqueued = 0;  // operations are numbered 1, 2, ... in enqueue order
    uint64_t done = 0;      // operations 1..done have finished
    bool stopping = false;  // destroy began: nothing more is queued
    int first_error = 0;
    std::string first_message;
    std::thread worker;

    void run() {
        stream_of_this_worker = this;
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

    // Queues `op` and returns its number. Once destroy began the stream takes
    // nothing more (its worker may already have stopped): an error, so an
    // accepted operation always runs.
    uint64_t enqueue(Operation op, const char *where) {
        std::lock_guard<std::mutex> lock(mutex);
        if (stopping) {
            throw RuntimeError(spyre_error_bad_argument,
                               std::string(where) + ": stream " + std::to_string(id) +
                                   " is being destroyed (spyre_stream_destroy was called); the operation was not queued");
        }
        queue.push_back(std::move(op));
        changed.notify_all();
        return ++enqueued;
    }

    uint64_t finished() const {
        std::lock_guard<std::mutex> lock(mutex);
        return done;
    }
};

// What an event's most recent record queued: operation `operation` of `stream`.
struct EventState {
    std::mutex mutex;
    std::shared_ptr<StreamState> stream;  // null: never recorded
    uint64_t operation = 0;
};

// Which stream worker is blocked until which stream has finished which operation.
struct WaitForGraph {
    struct Wait {
        std::shared_ptr<StreamState> stream;
        uint64_t operation;
    };
    std::mutex mutex;
    std::map<const StreamState *, Wait> blocked;  // keyed by the waiting worker's stream
};

WaitForGraph &wait_for_graph() {
    static WaitForGraph *g = new WaitForGraph();  // never destroyed, like the handle registry
    return *g;
}

std::string operation_of(uint64_t operation, const StreamState &s) {
    return "operation " + std::to_string(operation) + " of stream " + std::to_string(s.id);
}

// Enters the calling worker's wait for `target` to finish `operation` in the
// wait-for graph, or throws if that wait could never end.
class RegisteredWait {
public:
    RegisteredWait(const std::shared_ptr<StreamState> &target, uint64_t operation, const char *where)
        : waiter_(stream_of_this_worker) {
        if (waiter_ == nullptr) return;  // a host thread: nobody waits for it
        WaitForGraph &g = wait_for_graph();
        std::lock_guard<std::mutex> lock(g.mutex);
        const uint64_t caller = waiter_->finished() + 1;  // the operation this worker is running
        std::string chain = std::string(where) + ": would deadlock: " + operation_of(caller, *waiter_) +
                            " would wait until " + operation_of(operation, *target) + " has finished";
        std::set<const StreamState *> visited;
        const StreamState *s = target.get();
        uint64_t needed = operation;
        for (;;) {
            if (s->finished() >= needed) break;  // the wait ends
            if (s == waiter_) {
                throw RuntimeError(spyre_error_bad_argument,
                                   chain + (needed == caller ? ", which is the calling operation itself"
                                                             : ", which is queued behind the calling operation"));
            }
            auto it = g.blocked.find(s);
            if (it == g.blocked.end()) break;  // that stream's worker is free to progress
            if (!visited.insert(s).second) {
                throw RuntimeError(spyre_error_bad_argument, chain + "; those streams wait for each other");
            }
            chain += "; stream " + std::to_string(s->id) + " is itself blocked until " +
                     operation_of(it->second.operation, *it->second.stream) + " has finished";
            needed = it->second.operation;
            s = it->second.stream.get();
        }
        g.blocked[waiter_] = WaitForGraph::Wait{target, operation};
    }
    ~RegisteredWait() {
        if (waiter_ == nullptr) return;
        WaitForGraph &g = wait_for_graph();
        std::lock_guard<std::mutex> lock(g.mutex);
        g.blocked.erase(waiter_);
    }
    RegisteredWait(const RegisteredWait &) = delete;
    RegisteredWait &operator=(const RegisteredWait &) = delete;

private:
    const StreamState *waiter_;
};

// Blocks until `target` has finished operation `operation`; throws instead if
// that can never happen.
void wait_until_finished(const std::shared_ptr<StreamState> &target, uint64_t operation, const char *where) {
    RegisteredWait registered(target, operation, where);
    std::unique_lock<std::mutex> lock(target->mutex);
    target->changed.wait(lock, [&] { return target->done >= operation; });
}

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

bool on_worker_of(const StreamState &s) { return stream_of_this_worker == &s; }

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
            // It holds the state itself: a stream destroyed from its own operation detaches the worker,
            // which still touches the state after that operation returns.
            std::lock_guard<std::mutex> lock(raw->mutex);
            raw->worker = std::thread([state] { state->run(); });
        }
        HandleRegistry &r = handles();
        std::lock_guard<std::mutex> lock(r.mutex);
        const uintptr_t id = r.next_id++;
        state->id = id;
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
        uint64_t last;
        {
            std::lock_guard<std::mutex> lock(state->mutex);
            state->stopping = true;
            state->changed.notify_all();
            worker = std::move(state->worker);
            last = state->enqueued;
        }
        if (on_worker_of(*state)) {
            worker.detach();  // destroyed from its own kernel: the worker finishes the queue and exits
            return 0;
        }
        try {
            wait_until_finished(state, last, "spyre_stream_destroy");
        } catch (const RuntimeError &) {
            worker.detach();  // the queue still runs once the caller's operation returns; the worker then exits
            throw;
        }
        worker.join();
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
        s->enqueue([buf] { return spyre_device_interface()->copy_to_device(nullptr, buf, spyre_device_interface()); },
                   "spyre_stream_enqueue_copy_to_device");
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
        }, "spyre_stream_enqueue_copy_to_host");
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
            s->enqueue(std::move(op), "spyre_stream_enqueue_kernel");
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
        // Under the event's lock, so concurrent records and waits agree on which is the most recent.
        std::lock_guard<std::mutex> lock(e->mutex);
        const uint64_t marker = s->enqueue([] { return 0; }, "spyre_event_record");
        e->stream = s;
        e->operation = marker;
        return 0;
    });
}

int spyre_stream_wait_event(spyre_stream_t *stream, spyre_event_t *event) {
    return guarded(nullptr, "spyre_stream_wait_event", [&] {
        std::shared_ptr<StreamState> s = live_stream(stream, "spyre_stream_wait_event");
        std::shared_ptr<EventState> e = live_event(event, "spyre_stream_wait_event");
        std::shared_ptr<StreamState> recorded_on;
        uint64_t marker;
        {
            std::lock_guard<std::mutex> lock(e->mutex);
            recorded_on = e->stream;
            marker = e->operation;
        }
        if (!recorded_on) return 0;  // never recorded: nothing to wait for
        s->enqueue(
            [recorded_on, marker] {
                wait_until_finished(recorded_on, marker, "spyre_stream_wait_event");
                return 0;
            },
            "spyre_stream_wait_event");
        return 0;
    });
}

int spyre_stream_synchronize(spyre_stream_t *stream) {
    std::string message;
    const int code = guarded(nullptr, "spyre_stream_synchronize", [&] {
        std::shared_ptr<StreamState> s = live_stream(stream, "spyre_stream_synchronize");
        if (on_worker_of(*s)) {
            throw RuntimeError(spyre_error_bad_argument,
                               "spyre_stream_synchronize: called from the stream's own operation (it would wait for itself)");
        }
        uint64_t last;
        {
            std::lock_guard<std::mutex> lock(s->mutex);
            last = s->enqueued;
        }
        wait_until_finished(s, last, "spyre_stream_synchronize");
        std::lock_guard<std::mutex> lock(s->mutex);
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
        std::shared_ptr<StreamState> recorded_on;
        uint64_t marker;
        {
            std::lock_guard<std::mutex> lock(e->mutex);
            recorded_on = e->stream;
            marker = e->operation;
        }
        if (recorded_on) wait_until_finished(recorded_on, marker, "spyre_event_synchronize");
        return 0;
    });
}

}  // extern "C"
