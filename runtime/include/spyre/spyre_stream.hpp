// C++ RAII wrappers of the stream and event C API (spyre_stream.h).
//
//   spyre::Stream stream;
//   stream.copy_to_device(a.raw_buffer());
//   stream.enqueue([&] { return my_kernel(a, b, c); });
//   spyre::Event done;
//   stream.record(done);
//   other.wait(done);
//   if (int err = stream.synchronize()) { ... spyre_last_error() ... }
//
// Stream and Event are move-only; the destructor destroys the handle (a
// stream first runs what is queued). Methods return the C API's codes.
#pragma once

#include <functional>
#include <new>
#include <utility>

#include "spyre/spyre_runtime.h"
#include "spyre/spyre_stream.h"

namespace spyre {

class Event {
public:
    Event() : event_(spyre_event_create()) {
        if (event_ == nullptr) throw std::bad_alloc();
    }
    ~Event() { reset(); }
    Event(Event &&o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
    Event &operator=(Event &&o) noexcept {
        if (this != &o) {
            reset();
            event_ = std::exchange(o.event_, nullptr);
        }
        return *this;
    }
    Event(const Event &) = delete;
    Event &operator=(const Event &) = delete;

    int synchronize() const { return spyre_event_synchronize(event_); }
    spyre_event_t *get() const { return event_; }

private:
    void reset() {
        if (event_ != nullptr) spyre_event_destroy(event_);
        event_ = nullptr;
    }
    spyre_event_t *event_;
};

class Stream {
public:
    Stream() : stream_(spyre_stream_create()) {
        if (stream_ == nullptr) throw std::bad_alloc();
    }
    ~Stream() { reset(); }
    Stream(Stream &&o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
    Stream &operator=(Stream &&o) noexcept {
        if (this != &o) {
            reset();
            stream_ = std::exchange(o.stream_, nullptr);
        }
        return *this;
    }
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;

    int copy_to_device(halide_buffer_t *buf) { return spyre_stream_enqueue_copy_to_device(stream_, buf); }
    int copy_to_host(halide_buffer_t *buf) { return spyre_stream_enqueue_copy_to_host(stream_, buf); }

    // Enqueues any callable returning an error code (0 for success), e.g. a
    // lambda calling a generated kernel. What it captures must stay valid
    // until it ran.
    int enqueue(std::function<int()> work) {
        auto *heap = new std::function<int()>(std::move(work));
        const int code = spyre_stream_enqueue_kernel(stream_, &Stream::call, heap, &Stream::destroy);
        if (code != 0) delete heap;  // not queued: still ours
        return code;
    }

    int record(Event &event) { return spyre_event_record(event.get(), stream_); }
    int wait(const Event &event) { return spyre_stream_wait_event(stream_, event.get()); }
    int synchronize() { return spyre_stream_synchronize(stream_); }
    spyre_stream_t *get() const { return stream_; }

private:
    static int call(void *f) { return (*static_cast<std::function<int()> *>(f))(); }
    static void destroy(void *f) { delete static_cast<std::function<int()> *>(f); }
    void reset() {
        if (stream_ != nullptr) spyre_stream_destroy(stream_);
        stream_ = nullptr;
    }
    spyre_stream_t *stream_;
};

}  // namespace spyre
