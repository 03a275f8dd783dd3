// A generator run's outputs staged in a private directory and published together.
//
// GenGen writes its outputs (NAME.a, NAME.h, NAME.spyre, ...) one file at a time
// into its -o directory. A run that fails halfway, or two runs writing the same
// -o DIR -f NAME at once (a misconfigured parallel build), would otherwise leave
// a mixed or partial set. Instead the run writes into DIR/.NAME.staging-XXXXXX
// (same filesystem, so renames are atomic) and, only when it succeeds, publishes:
// under an exclusive flock on DIR/.NAME.spyre-lock it renames every staged file
// into DIR. So every file a reader opens is complete, a published set is all of
// one run, and a failed run leaves DIR as it was. (A reader that does not take the
// lock can, during the milliseconds of the renames, see some files of the new set
// beside some of the old; a run killed mid-compile leaves its hidden staging
// directory behind, which a later run does not read.) The lock is held for the renames only
// (milliseconds); a lock not obtained within lock_wait_seconds is an error
// naming the lock file, never a hang.
//
// Assumes: GenGen's outputs depend on the -o directory only through their path
// (no output embeds the directory), which holds for every Halide 14 output kind.
#pragma once

#include <string>

namespace spyre {

class StagedOutputs {
public:
    // Creates DIR/.NAME.staging-XXXXXX; "" on success, else why it cannot.
    std::string stage(const std::string &output_dir, const std::string &function_name);
    // The directory GenGen and the Spyre lowering write into.
    const std::string &staging_dir() const { return staging_dir_; }
    // Moves every staged file into the output directory under the lock; "" on success.
    std::string publish(double lock_wait_seconds);
    // Removes the staging directory and whatever is left in it.
    ~StagedOutputs();

    StagedOutputs() = default;
    StagedOutputs(const StagedOutputs &) = delete;
    StagedOutputs &operator=(const StagedOutputs &) = delete;

private:
    std::string output_dir_, function_name_, staging_dir_;
};

}  // namespace spyre
