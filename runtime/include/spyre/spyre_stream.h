/* Streams and events of the (simulated) Spyre device.
 *
 * A stream is an ordered queue of operations (host<->device copies and
 * kernel calls) executed one after another by the stream's own worker
 * thread; operations on different streams run concurrently. Events order
 * work across streams: spyre_event_record() enqueues a marker, and
 * spyre_stream_wait_event() makes a stream wait until the most recent marker
 * recorded before the call has been reached.
 *
 *   spyre_stream_t *s = spyre_stream_create();
 *   spyre_stream_enqueue_copy_to_device(s, a);          // a: halide_buffer_t *
 *   spyre_stream_enqueue_kernel(s, run_my_kernel, args, free);
 *   spyre_stream_enqueue_copy_to_host(s, out);
 *   int err = spyre_stream_synchronize(s);               // first error, or 0
 *   spyre_stream_destroy(s);
 *
 * Every operation runs, even after an earlier one failed; the stream keeps
 * the first failure (code and message) until spyre_stream_synchronize()
 * returns it, sets the caller's spyre_last_error() to its message and clears
 * it. Buffers and kernel arguments must stay valid until the operation ran.
 *
 * Thread safety: any number of host threads may enqueue onto, synchronize
 * or destroy the same stream. Stream and event handles are checked: using a
 * destroyed (or never created) handle returns spyre_error_bad_argument,
 * never crashes. Enqueueing onto a stream whose destroy began fails the
 * same way; an accepted operation always runs exactly once. A wait made from
 * inside a stream operation that could never end (it waits for work queued
 * behind it, directly or through other streams' waits) returns
 * spyre_error_bad_argument instead of deadlocking. The plain Halide kernel call stays synchronous; streams are
 * opt-in. Error codes: spyre_runtime.h and docs/runtime.md. */
#ifndef SPYRE_STREAM_H
#define SPYRE_STREAM_H

#include "HalideRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spyre_stream spyre_stream_t;
typedef struct spyre_event spyre_event_t;

/* NULL only if the host cannot start a thread. */
spyre_stream_t *spyre_stream_create(void);
/* Runs the work already enqueued, then stops the worker. Returns 0 or
 * spyre_error_bad_argument (not a live stream). */
int spyre_stream_destroy(spyre_stream_t *stream);

spyre_event_t *spyre_event_create(void);
int spyre_event_destroy(spyre_event_t *event);

/* Copy `buf` to the device (Buffer::copy_to_device with the Spyre interface:
 * allocates if needed, copies if host-dirty) / back to the host (if
 * device-dirty). */
int spyre_stream_enqueue_copy_to_device(spyre_stream_t *stream, struct halide_buffer_t *buf);
int spyre_stream_enqueue_copy_to_host(spyre_stream_t *stream, struct halide_buffer_t *buf);

/* Enqueues kernel(args) (e.g. a thunk that calls a generated kernel). Its
 * non-zero return value is the operation's error code. On success the stream
 * owns `args` and calls free_args(args) (if not NULL) after the kernel ran;
 * if enqueueing fails, the caller keeps ownership. */
int spyre_stream_enqueue_kernel(spyre_stream_t *stream, int (*kernel)(void *args), void *args, void (*free_args)(void *args));

/* Enqueues a marker: the event completes when the stream reaches it. */
int spyre_event_record(spyre_event_t *event, spyre_stream_t *stream);
/* Later work on `stream` waits until the event's most recent record (made
 * before this call) completes. An event never recorded does not wait. */
int spyre_stream_wait_event(spyre_stream_t *stream, spyre_event_t *event);

/* Blocks until every operation enqueued before the call has run; returns the
 * first error code of the stream's operations (0 if none) and clears it.
 * Called from the stream's own worker (inside an enqueued kernel) it returns
 * spyre_error_bad_argument instead of deadlocking. */
int spyre_stream_synchronize(spyre_stream_t *stream);
/* Blocks until the event's most recent record completes (0 at once if never recorded). */
int spyre_event_synchronize(spyre_event_t *event);

#ifdef __cplusplus
}
#endif

#endif
