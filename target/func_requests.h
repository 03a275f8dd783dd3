// A process-wide, thread-safe set of Halide Func names: how a scheduling
// directive (spyre::double_buffer, spyre::share_over_ring) asks the Spyre
// lowering for a treatment of a Func. Func names are unique per process, so
// requests of other pipelines never match this one's Funcs.
#pragma once

#include <mutex>
#include <set>
#include <string>

namespace spyre {
namespace compiler {

class FuncRequests {
public:
    void add(const std::string &func_name) {
        std::lock_guard<std::mutex> lock(mutex_);
        names_.insert(func_name);
    }
    std::set<std::string> snapshot() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return names_;
    }

private:
    mutable std::mutex mutex_;
    std::set<std::string> names_;
};

}  // namespace compiler
}  // namespace spyre
