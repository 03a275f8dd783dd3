// Kernels compiled when an app first needs them, kept in an on-disk cache.
//
// A kernel is (generator family, parameters) compiled for Spyre for this
// process's machine description. Its cache entry is a directory named by a
// 64-bit FNV-1a hash of its key: the cache format version, the bytes of the generator
// executable and of this project's shared libraries it loads (lib/libspyre*.so:
// the schedule templates, the machine model), the parameters (sorted) and every effective
// machine parameter (built-in, SPYRE_MACHINE, SPYRE_MACHINE_SET). The entry
// holds the full key text (key.txt), which a lookup compares byte for byte,
// so a hash collision is a miss, never the wrong kernel. A miss runs
// gen_<family> -e c_header -target=spyre with the machine passed explicitly
// (SPYRE_MACHINE_SET of every parameter) into a scratch directory that is
// renamed into place; concurrent processes (MPI ranks on one host) take turns
// on a per-entry lock, so each kernel is compiled once.
//
// Where: $SPYRE_KERNEL_CACHE/cxx, else $XDG_CACHE_HOME/spyre_halide/cxx, else
// ~/.cache/spyre_halide/cxx. Generators are found beside the running
// executable (build/bin, or the install prefix's bin). The Python package
// keeps its own cache (python/spyre_halide/kernels.py: $SPYRE_KERNEL_CACHE itself,
// else ~/.cache/spyre_halide/kernels). Entries of old generators are never read
// again; deleting the directory is always safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "program_kernel.h"

namespace spyre_apps {

using KernelParams = std::map<std::string, std::string>;

class KernelCache {
public:
    // progress: say on stderr when a kernel is compiled (they take seconds each).
    explicit KernelCache(bool progress = true);

    // The kernel, compiled now if no valid entry exists; throws std::runtime_error with the
    // generator's own error line when it refuses the parameters.
    std::shared_ptr<const ProgramKernel> get(const std::string &family, const KernelParams &params);

    const std::string &directory() const { return dir_; }
    int compiled() const { return compiled_; }  // kernels this process compiled (misses)
    int hits() const { return hits_; }

    // "gen_matmul m=1 n=4096 ...": how a kernel is shown in messages.
    static std::string describe(const std::string &family, const KernelParams &params);

private:
    std::string key_text(const std::string &family, const KernelParams &params);
    std::string generator_path(const std::string &family) const;

    std::string dir_, bin_dir_;
    bool progress_;
    int compiled_ = 0, hits_ = 0;
    std::mutex mutex_;
    std::map<std::string, std::string> file_hashes_;  // generator or library path -> hash and size of its bytes
    std::map<std::string, std::shared_ptr<const ProgramKernel>> loaded_;  // by key text
};

}  // namespace spyre_apps
