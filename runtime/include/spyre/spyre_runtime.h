/* The C API of libspyre_runtime as generated kernels and apps see it.
 *
 * Generated kernels (compiled with -target=spyre) keep Halide's standard AOT
 * signature; inside, the device region is a call to spyre_run_program() with
 * the program embedded in the object. The runtime loads and validates the
 * program once per process (cached by blob address), checks every buffer
 * against the program's argument table, moves host data into the simulated
 * device's stick layout (or uses tensors already resident on the device, see
 * spyre_device.h), runs the simulator, and copies outputs back to host buffers
 * or leaves them device-resident (the residency rule is in docs/runtime.md).
 *
 * Only HalideRuntime.h is needed to use this header; no part of libHalide. */
#ifndef SPYRE_RUNTIME_H
#define SPYRE_RUNTIME_H

#include <stdint.h>
#include <stdio.h>

#include "HalideRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes returned by the runtime (Halide pipelines return them unchanged). */
enum spyre_error_code {
    spyre_success = 0,
    spyre_error_bad_program = -1001,       /* malformed, hostile or unsupported program blob */
    spyre_error_machine_mismatch = -1002,  /* program built for another machine description */
    spyre_error_buffer_mismatch = -1003,   /* buffer type/dimensions/extents differ from the program */
    spyre_error_null_host = -1004,         /* buffer without host memory (and no device allocation) */
    spyre_error_out_of_memory = -1005,     /* simulated device memory exhausted, or the host's during a run */
    spyre_error_rule_violation = -1006,    /* the simulated device stopped the program (rule or deadlock) */
    spyre_error_bad_argument = -1007       /* wrong argument count or other misuse of the API */
};

/* Called by generated code. `program` is a 1-D uint8 buffer holding the
 * encoded program; `buffers` are the kernel's tensors in the program's
 * argument-table order (inputs and outputs; temporaries are the runtime's);
 * `params` the scalar run-time parameters in program order. On failure the
 * message goes to halide_error(user_context, ...) (or stderr when no Halide
 * runtime is linked) and to spyre_last_error(). */
int spyre_run_program(void *user_context, halide_buffer_t *program, int32_t num_buffers, halide_buffer_t **buffers,
                      int32_t num_params, const double *params);

/* Figures of one kernel run (or the sum of all runs of a kernel). */
typedef struct spyre_kernel_stats {
    char kernel[64];
    uint64_t calls;
    double cycles;
    double simulated_us;
    double roofline_bound_us;
    double pt_utilization;
    uint64_t macs;
    uint64_t dram_read_bytes;
    uint64_t dram_write_bytes;
    char bottleneck[16];
    double pt_sustained_utilization; /* MACs / (cycles x calibrated sustained MAC rate x cores); pt_utilization is against the datasheet peak */
} spyre_kernel_stats;

/* The most recent run in this process. Returns 0, or -1 if nothing ran yet. */
int spyre_get_last_run_stats(spyre_kernel_stats *out);
/* All runs of the named kernel, summed (calls counts them). Returns 0, or -1 if unknown. */
int spyre_get_kernel_stats(const char *kernel, spyre_kernel_stats *out);
/* The message of the last failure in this thread ("" if none). Every generated
 * kernel's pipeline begins by clearing it (spyre_begin_kernel_call, ahead of the
 * checks of its buffers' types, ranks and shapes), so after a kernel call that
 * reached its pipeline it describes that call: "" when the call succeeded or
 * was refused by Halide's own checks (reported through halide_error and the
 * kernel's return code). A check Halide makes before the pipeline body
 * starts (outside what the Spyre lowering sees) does not clear it. */
const char *spyre_last_error(void);
/* Called first by every generated kernel, before its argument checks: clears this
 * thread's spyre_last_error(). Returns 0. */
int spyre_begin_kernel_call(void *user_context);
/* Prints the per-kernel profile table (as SPYRE_PROFILE=1 does at exit). */
void spyre_print_profile(FILE *out);

/* The simulated device clock of this process: the sum of the simulated time
 * of everything in the profile (kernel runs, copies, collectives) so far.
 * The simulated card runs one operation at a time. */
double spyre_simulated_clock_us(void);
/* Adds `us` of simulated time (and the bytes) to the profile entry `entry`
 * (created on first use; shown by spyre_print_profile, spyre_get_kernel_stats)
 * with `bottleneck` as its reported limit: how a library built on the runtime
 * (the collectives) charges its own work. Returns 0, or
 * spyre_error_bad_argument for a null or empty name or a negative time. */
int spyre_profile_record(const char *entry, uint64_t bytes_read, uint64_t bytes_written, double us,
                         const char *bottleneck);

/* Timing-only mode (process-wide; initially on iff SPYRE_TIMING_ONLY=1 at
 * first use). While on, every kernel call runs only the simulator's timing
 * phase (as `spyre-run --timing-only`): the same simulated cycles and stats,
 * but no tensor data is read or written. Copies to and into the device
 * (copy_to_device, the uploads of kernel calls, spyre_device_copy) are
 * charged in the profile as usual but move no bytes. Every device tensor a
 * timing-only kernel writes or a timing-only copy writes into then holds no
 * values: copy_to_host of it fails with spyre_error_bad_argument, and so does
 * a functional kernel call or spyre_device_copy reading it (values never
 * come from nowhere), until it is written again in functional mode. Kernel
 * outputs must be device tensors in this mode (a host output would silently
 * keep old contents: spyre_error_bad_argument); host inputs need no host
 * memory. spyre_set_timing_only returns the previous setting (0 or 1). */
int spyre_set_timing_only(int enabled);
int spyre_timing_only(void);

#ifdef __cplusplus
}
#endif

#endif
