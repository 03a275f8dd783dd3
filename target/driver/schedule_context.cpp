// One pipeline's schedule context and the context active on each thread (see schedule_context.h).
#include "schedule_context.h"

#include <utility>

namespace spyre {
namespace {

// The context made active on this thread by ScheduleContext::Use (null: none).
thread_local std::shared_ptr<ScheduleContext> t_active;

// What a thread schedules into when nothing is active: its own host context.
std::shared_ptr<ScheduleContext> &thread_default() {
    thread_local std::shared_ptr<ScheduleContext> context = ScheduleContext::make(false);
    return context;
}

}  // namespace

ScheduleContext::ScheduleContext(bool for_spyre, MachineDescription machine)
    : machine_(std::move(machine)), for_spyre_(for_spyre) {}

std::shared_ptr<ScheduleContext> ScheduleContext::make(bool for_spyre, const MachineDescription &machine) {
    return std::make_shared<ScheduleContext>(for_spyre, machine);
}

bool ScheduleContext::for_spyre() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return for_spyre_;
}

void ScheduleContext::set_for_spyre(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    for_spyre_ = on;
}

DriverOptions ScheduleContext::driver_options() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return driver_options_;
}

void ScheduleContext::set_driver_options(const DriverOptions &options) {
    std::lock_guard<std::mutex> lock(mutex_);
    driver_options_ = options;
}

void ScheduleContext::set_deadline(std::chrono::steady_clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(mutex_);
    deadline_ = deadline;
}

bool ScheduleContext::past_deadline() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::chrono::steady_clock::now() > deadline_;
}

void ScheduleContext::add_tensor(const SpyreTensorInfo &info) {
    // Halide 14 buffers index with 32-bit integers. The generators check their shape parameters
    // first (generators/shape_limits.h); this catches what the padding to the plan's tiles adds.
    int64_t elements = 1;
    std::string extents, padded;
    for (size_t d = 0; d < info.padded.size(); d++) {
        if (elements <= 2147483647) elements *= info.padded[d];  // stays below 2^63
        extents += (d ? " x " : "") + std::to_string(info.extents[d]);
        padded += (d ? " x " : "") + std::to_string(info.padded[d]);
    }
    _halide_user_assert(elements <= 2147483647)
        << "tensor '" << info.name << "' (" << extents << ") is too large: padded for the Spyre layout to " << padded
        << " it would hold more than the 2147483647 (2^31 - 1) elements a Halide 14 buffer can index";
    std::lock_guard<std::mutex> lock(mutex_);
    tensors_[info.name] = info;
}

std::optional<SpyreTensorInfo> ScheduleContext::tensor(const std::string &name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return std::nullopt;
    return it->second;
}

bool ScheduleContext::set_tensor_order(const std::string &name, const std::vector<int> &order) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return false;
    it->second.order = order;
    return true;
}

std::map<std::string, SpyreTensorInfo> ScheduleContext::tensors() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return tensors_;
}

void ScheduleContext::request_double_buffering(const std::string &func_name) {
    std::lock_guard<std::mutex> lock(mutex_);
    double_buffered_.insert(func_name);
}

void ScheduleContext::request_computing_ahead(const std::string &func_name, bool second_copy) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (second_copy) double_buffered_.insert(func_name);
    computed_ahead_.insert(func_name);
}

void ScheduleContext::request_ring_sharing(const std::string &func_name, bool in_pieces, bool gathered) {
    std::lock_guard<std::mutex> lock(mutex_);
    ring_shared_.insert(func_name);
    if (in_pieces) ring_pieces_.insert(func_name);
    if (gathered) ring_gathered_.insert(func_name);
}

std::set<std::string> ScheduleContext::double_buffered() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return double_buffered_;
}

std::set<std::string> ScheduleContext::computed_ahead() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return computed_ahead_;
}

std::set<std::string> ScheduleContext::ring_shared() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ring_shared_;
}

std::set<std::string> ScheduleContext::ring_pieces() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ring_pieces_;
}

std::set<std::string> ScheduleContext::ring_gathered() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ring_gathered_;
}

ScheduleContext &ScheduleContext::active() { return *active_shared(); }

std::shared_ptr<ScheduleContext> ScheduleContext::active_shared() { return t_active ? t_active : thread_default(); }

ScheduleContext::Use::Use(std::shared_ptr<ScheduleContext> context) : previous_(std::move(t_active)) {
    t_active = std::move(context);
}

ScheduleContext::Use::~Use() { t_active = std::move(previous_); }

}  // namespace spyre
