// The simulated device: a discrete-event timing simulation of every unit's
// stream, followed (in functional mode) by a parallel functional replay.
//
// Timing (always): the unit whose next instruction can start earliest goes
// next (ties: DRAM events, then core, then unit). Control instructions take
// no time; tokens, ring arrivals and barriers carry times; DMA transfers share
// the card's DRAM through sim::DramModel and finish when it says so; ring
// transfers reserve the ring's links through sim::RingModel; PT and SFU
// durations come from sim::TimingModel. Address rules (bounds, the DRAM window, whole
// sticks, reads of scratchpad bytes never written) are checked here, so timing-only
// runs enforce them too; timing never
// reads data, which is why timing-only and functional runs report the same
// cycles. In functional mode every timed instruction is recorded with its
// evaluated fields and epoch (see sim/functional_replay.h).
//
// Functional (unless timing-only): the record is replayed on all host threads,
// a chunk at a time while the timing phase goes on (kReplayChunk instructions),
// so neither phase holds state that grows with the dynamic instruction count.
// A functional failure found in a chunk is kept and reported after the timing
// phase has finished, so a timing error still wins as if the replay came after.
#include "spyre/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <queue>
#include <random>
#include <sstream>
#include <thread>

#include "dram_model.h"
#include "dram_write_tracker.h"
#include "functional_replay.h"
#include "ring_model.h"
#include "scratchpad.h"
#include "timing_model.h"
#include "unit_semantics.h"
#include "spyre/scalar_params.h"

namespace spyre {

namespace {

enum class UnitStatus { Ready, BlockedOnToken, BlockedOnBarrier, BlockedOnDram, Done };

// A unit's stream pre-decoded for the simulator: per instruction the opcode,
// the constant part of every field, and the loop strides of the few affine ones.
struct CompactStream {
    struct Entry {
        isa::Opcode op;
        uint8_t num_fields;
        uint8_t num_affine;
        uint32_t bases;   // index into `values`
        uint32_t affine;  // index into `strides`
    };
    struct AffineTerm {
        uint8_t field;
        int32_t stride[isa::kMaxLoopDepth];
    };
    std::vector<Entry> entries;
    std::vector<int64_t> values;
    std::vector<AffineTerm> strides;

    explicit CompactStream(const std::vector<isa::Instruction> &insts) {
        for (const isa::Instruction &in : insts) {
            Entry e;
            e.op = in.op;
            e.num_fields = (uint8_t)isa::opcode_spec(in.op).num_fields;
            e.bases = (uint32_t)values.size();
            e.affine = (uint32_t)strides.size();
            e.num_affine = 0;
            for (int i = 0; i < e.num_fields; i++) {
                values.push_back(in.f[i].base);
                if (!in.f[i].is_constant()) {
                    AffineTerm t;
                    t.field = (uint8_t)i;
                    for (int d = 0; d < isa::kMaxLoopDepth; d++) t.stride[d] = in.f[i].stride[d];
                    strides.push_back(t);
                    e.num_affine++;
                }
            }
            entries.push_back(e);
        }
    }

    // Fields of instruction `pc` at the given loop indices.
    void evaluate(size_t pc, const int64_t *index, int64_t *f) const {
        const Entry &e = entries[pc];
        const int64_t *v = values.data() + e.bases;
        for (int i = 0; i < e.num_fields; i++) f[i] = v[i];
        for (uint32_t k = e.affine; k < e.affine + e.num_affine; k++) {
            const AffineTerm &t = strides[k];
            f[t.field] += t.stride[0] * index[0] + t.stride[1] * index[1] + t.stride[2] * index[2] + t.stride[3] * index[3];
        }
    }
};

struct UnitState {
    int core = 0;
    int unit = 0;
    const std::vector<isa::Instruction> *stream = nullptr;
    const CompactStream *compact = nullptr;
    size_t pc = 0;
    int depth = 0;
    int64_t index[isa::kMaxLoopDepth] = {0, 0, 0, 0};
    int64_t trip[isa::kMaxLoopDepth] = {0, 0, 0, 0};
    size_t loop_start[isa::kMaxLoopDepth] = {0, 0, 0, 0};
    double time = 0;     // when the unit can issue its next instruction
    double landed = 0;   // when its last DMA's data has landed (access latency included)
    UnitStatus status = UnitStatus::Ready;
    int waiting_on = -1;  // channel or barrier id
};

struct BarrierState {
    int64_t participants = 0;
    int64_t arrived = 0;
    double latest = 0;
    std::vector<int> waiting;  // unit ids
};

struct PendingTransfer {
    int64_t dram_id;  // DramModel transfer id
    int unit_id;
    double start;
    double fill;     // zero-fill cycles after the DRAM part
    double latency;  // access latency: paid by whoever observes completion
    isa::Opcode op;
    std::vector<int64_t> occupancies;  // its scratchpad bytes in the core's hazard tracker
};

constexpr int kDramEvent = -1;

// A FIFO that allocates nothing until used (a card has 512 token channels).
template <typename T>
class Fifo {
public:
    bool empty() const { return head_ == items_.size(); }
    const T &front() const { return items_[head_]; }
    void push_back(const T &v) { items_.push_back(v); }
    void pop_front() {
        if (++head_ == items_.size()) {
            items_.clear();
            head_ = 0;
        }
    }

private:
    std::vector<T> items_;
    size_t head_ = 0;
};

struct QueueEntry {
    double time;
    int id;  // unit id, or kDramEvent
    bool operator>(const QueueEntry &o) const { return time != o.time ? time > o.time : id > o.id; }
};

// Functional scratchpads are reused across runs (a 32-core card is 64 MiB of
// them): a run takes what it needs and gives it back reset. At most
// kMaxAlive scratchpads exist at once (in runs and in the pool together): a
// run that would pass it waits until others give theirs back, so host memory
// stays flat however many threads call kernels (fresh 2 MiB callocs per run
// fragmented glibc's per-thread arenas: 8 threads x 12,000 calls reached
// 844 MB). A run needing more than kMaxAlive by itself waits until no other
// run holds any, then takes what it needs.
class ScratchpadPool {
public:
    std::vector<std::unique_ptr<sim::Scratchpad>> take(size_t count, int64_t bytes) {
        std::vector<std::unique_ptr<sim::Scratchpad>> out;
        size_t fresh = 0;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            returned_.wait(lock, [&] { return in_use_ == 0 || in_use_ + count <= kMaxAlive; });
            for (auto it = free_.begin(); it != free_.end() && out.size() < count;) {
                if ((*it)->size() == bytes) {
                    out.push_back(std::move(*it));
                    it = free_.erase(it);
                } else {
                    ++it;
                }
            }
            fresh = count - out.size();
            // Pooled scratchpads of another size give way to the ones this run needs.
            while (!free_.empty() && free_.size() + in_use_ + count > kMaxAlive) free_.pop_back();
            in_use_ += count;
        }
        try {
            for (size_t i = 0; i < fresh; i++) out.push_back(std::make_unique<sim::Scratchpad>(bytes, true, false));
        } catch (...) {
            give_back(out, count);
            throw;
        }
        return out;
    }
    // Returns a run's scratchpads (`taken` is what its take() counted).
    void give_back(std::vector<std::unique_ptr<sim::Scratchpad>> &sps, size_t taken) {
        for (auto &sp : sps) sp->reset();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            for (auto &sp : sps) {
                if (free_.size() + in_use_ - std::min(in_use_, taken) < kMaxAlive) free_.push_back(std::move(sp));
            }
            in_use_ -= std::min(in_use_, taken);
        }
        sps.clear();
        returned_.notify_all();
    }

private:
    static constexpr size_t kMaxAlive = 128;  // four concurrent runs of a 32-core card: 256 MiB
    std::mutex mutex_;
    std::condition_variable returned_;
    size_t in_use_ = 0;
    std::vector<std::unique_ptr<sim::Scratchpad>> free_;
};

ScratchpadPool &scratchpad_pool() {
    static ScratchpadPool *pool = new ScratchpadPool();  // lives until exit (runs from static destructors are safe)
    return *pool;
}

class Device {
public:
    Device(const Program &p, const MachineDescription &m, const std::vector<ArgumentBinding> &args,
           const std::vector<double> &params, const SimulationOptions &o)
        : p_(p), m_(m), params_(params), opt_(o), timing_(m), dram_(m), ring_(m), rng_(o.seed), dram_writes_(p.args.size()) {
        bind_arguments(args);
        const int cores = (int)p.cores.size();
        for (int c = 0; c < cores; c++) address_checks_.emplace_back(m.scratchpad_bytes, false, o.check_uninitialized);
        hazards_.resize(cores);
        dram_windows_.assign(cores * p.args.size(), 0);
        tokens_.assign(cores * m.token_channels_per_core, {});
        token_waiters_.assign(cores * m.token_channels_per_core, {});
        barriers_.assign(m.barrier_ids, {});
        units_.resize(cores * isa::kNumUnits);
        compact_.reserve(cores * isa::kNumUnits);
        for (int c = 0; c < cores; c++) {
            for (int u = 0; u < isa::kNumUnits; u++) {
                UnitState &s = units_[c * isa::kNumUnits + u];
                s.core = c;
                s.unit = u;
                s.stream = &p.cores[c].unit[u];
                compact_.emplace_back(p.cores[c].unit[u]);
                s.compact = &compact_.back();
                if (s.stream->empty()) s.status = UnitStatus::Done;
            }
        }
        if (opt_.functional) record_.per_core.resize(cores);
        if (opt_.max_instructions > 0) instruction_limit_ = opt_.max_instructions;
        if (opt_.max_cycles > 0) cycle_limit_ = opt_.max_cycles;
        result_.kernel = p.kernel_name;
        for (const ProgramArgument &a : p.args) {
            uint64_t bytes = (uint64_t)dtype_bytes(a.shape.dtype);
            for (int64_t e : a.shape.extent) bytes *= (uint64_t)e;
            if (a.kind == ArgKind::Input) result_.argument_input_bytes += bytes;
            if (a.kind == ArgKind::Output) result_.argument_output_bytes += bytes;
        }
        result_.cores.resize(cores);
    }

    SimulationResult run() {
        struct ReturnScratchpads {
            std::vector<std::unique_ptr<sim::Scratchpad>> &sps;
            ~ReturnScratchpads() {
                if (!sps.empty()) scratchpad_pool().give_back(sps, sps.size());
            }
        } return_scratchpads{functional_sps_};
        if (opt_.functional) functional_sps_ = scratchpad_pool().take(p_.cores.size(), m_.scratchpad_bytes);
        simulate_time();
        if (opt_.functional) {
            replay_recorded();
            if (functional_failure_) std::rethrow_exception(functional_failure_);
        }
        return std::move(result_);
    }

    // Replayed functionally at a time: bounds the record (~130 bytes an instruction) to a few MiB.
    static constexpr size_t kReplayChunk = 1 << 16;

private:
    // ------------------------------------------------------------ timing phase
    void simulate_time() {
        for (size_t i = 0; i < units_.size(); i++) {
            if (units_[i].status == UnitStatus::Ready) queue_.push({0.0, (int)i});
        }
        while (!queue_.empty()) {
            QueueEntry e = queue_.top();
            queue_.pop();
            if (e.id == kDramEvent) {
                finish_transfers(e.time);
                continue;
            }
            UnitState &u = units_[e.id];
            if (u.status != UnitStatus::Ready || u.time != e.time) continue;  // stale entry
            step(e.id);
        }
        report_deadlock_if_any();
        double end = 0;
        const UnitState *last = &units_[0];
        for (const auto &u : units_) {
            if (std::max(u.time, u.landed) > end) last = &u;
            end = std::max({end, u.time, u.landed});
        }
        if (end > cycle_limit_) exceeded_cycles(*last, end);
        result_.cycles = end;
        result_.simulated_us = end / (m_.clock_ghz * 1000.0);
    }

    void bind_arguments(const std::vector<ArgumentBinding> &args) {
        if (args.size() != p_.args.size()) {
            throw Error("program '" + p_.kernel_name + "' takes " + std::to_string(p_.args.size()) + " arguments, " +
                        std::to_string(args.size()) + " were bound");
        }
        if (params_.size() != p_.params.size()) {
            throw Error("program '" + p_.kernel_name + "' takes " + std::to_string(p_.params.size()) +
                        " scalar parameters, " + std::to_string(params_.size()) + " were passed");
        }
        for (size_t i = 0; i < params_.size(); i++) check_scalar_param_value(p_.params[i], params_[i]);
        temps_.resize(args.size());
        for (size_t i = 0; i < args.size(); i++) {
            const ProgramArgument &a = p_.args[i];
            const int64_t need = layout_addressing(a.shape, a.layout, m_.stick_bytes).total_bytes;
            ArgumentBinding b = args[i];
            if (b.data == nullptr && opt_.functional) {
                if (a.kind != ArgKind::Temp) throw Error("argument '" + a.name + "' is not bound to device memory");
                temps_[i].assign(need, 0);
                b.data = temps_[i].data();
                b.bytes = need;
            }
            if (b.data == nullptr) b.bytes = std::max(b.bytes, need);
            if (b.bytes < need) {
                throw Error("argument '" + a.name + "' is bound to " + std::to_string(b.bytes) + " bytes, its layout needs " +
                            std::to_string(need));
            }
            bindings_.push_back(b);
        }
    }

    [[noreturn]] void fail(const UnitState &u, const std::string &msg, const sim::UnwrittenRead *unwritten = nullptr) {
        const isa::Instruction &inst = (*u.stream)[u.pc];
        std::ostringstream os;
        os << "core " << u.core << ", " << isa::unit_name((isa::Unit)u.unit) << " instruction " << u.pc << " ("
           << isa::opcode_spec(inst.op).mnemonic;
        if (inst.file_offset) os << " at offset " << inst.file_offset;
        os << "): " << msg;
        SimulationError e(os.str(), u.core, u.unit, (int64_t)u.pc, inst.file_offset);
        if (unwritten) {
            e.unwritten_byte = unwritten->byte;
            e.unwritten_operand_start = unwritten->operand_start;
        }
        throw e;
    }

    [[noreturn]] void exceeded(const UnitState &u, BudgetExceeded::Budget budget, const std::string &msg) {
        const size_t pc = std::min(u.pc, u.stream->size() - 1);
        const isa::Instruction &inst = (*u.stream)[pc];
        std::ostringstream os;
        os << "'" << p_.kernel_name << "' stopped at core " << u.core << ", " << isa::unit_name((isa::Unit)u.unit)
           << " instruction " << pc << " (" << isa::opcode_spec(inst.op).mnemonic << "): " << msg;
        throw BudgetExceeded(os.str(), budget, u.core, u.unit, (int64_t)pc, inst.file_offset);
    }
    [[noreturn]] __attribute__((noinline, cold)) void exceeded_cycles(const UnitState &u, double at) {
        std::ostringstream os;
        os.precision(0);
        os << std::fixed << "simulated time budget exceeded: the run reached cycle " << at << ", past the budget of "
           << cycle_limit_ << " cycles (max_cycles), after " << result_.dynamic_instructions << " dynamic instructions";
        exceeded(u, BudgetExceeded::Budget::Cycles, os.str());
    }
    [[noreturn]] __attribute__((noinline, cold)) void exceeded_instructions(const UnitState &u) {
        std::ostringstream os;
        os.precision(0);
        os << std::fixed << "instruction budget exceeded: more than " << instruction_limit_
           << " dynamic instructions executed (max_instructions) by simulated cycle " << u.time
           << ", and the program is not finished";
        exceeded(u, BudgetExceeded::Budget::Instructions, os.str());
    }

    double scaled(double cycles) {
        if (opt_.sync == SyncMode::RandomLatency) {
            std::uniform_real_distribution<double> d(1.0, 4.0);
            return cycles * d(rng_);
        }
        return cycles;
    }

    double start_time(const UnitState &u) const {
        return opt_.sync == SyncMode::ForcedSerial ? std::max(u.time, serial_free_) : u.time;
    }

    void advance(UnitState &u) {
        u.pc++;
        if (u.pc >= u.stream->size()) u.status = UnitStatus::Done;
    }

    void finish_timed(int id, double start, double end, isa::Opcode op) {
        UnitState &u = units_[id];
        if (opt_.sync == SyncMode::ForcedSerial) serial_free_ = std::max(serial_free_, end);
        result_.cores[u.core].unit[u.unit].busy_cycles += end - start;
        if (opt_.record_trace) {
            if (opt_.max_trace_events == 0 || result_.trace.size() < opt_.max_trace_events) {
                result_.trace.push_back({u.core, u.unit, op, start, end});
            } else {
                result_.trace_events_dropped++;
            }
        }
        u.time = end;
        u.status = UnitStatus::Ready;
        advance(u);
        if (u.status == UnitStatus::Ready) queue_.push({u.time, id});
    }

    void signal(int core, int channel, double when) {
        const int key = core * (int)m_.token_channels_per_core + channel;
        auto &waiters = token_waiters_[key];
        if (!waiters.empty()) {
            const int id = waiters.front();
            waiters.pop_front();
            UnitState &w = units_[id];
            w.time = std::max(w.time, when);
            w.status = UnitStatus::Ready;
            advance(w);
            if (w.status == UnitStatus::Ready) queue_.push({w.time, id});
            return;
        }
        tokens_[key].push_back(when);
    }

    // Replays what is recorded so far and forgets it. Inside an epoch the cores are independent,
    // so cutting an epoch between two chunks gives the replay the same results; the record's
    // sequence numbers still order failures across chunks.
    void replay_recorded() {
        if (!functional_failure_ && recorded_ > 0) {
            const unsigned hw = std::thread::hardware_concurrency();
            try {
                sim::replay_functional(p_, m_, record_, functional_sps_, bindings_, params_, hw == 0 ? 1 : (int)hw);
            } catch (const SimulationError &) {
                functional_failure_ = std::current_exception();  // the earliest; nothing after it is replayed
            }
        }
        for (auto &list : record_.per_core) list.clear();
        record_.epochs = 1;
        recorded_ = 0;
    }

    void record(const UnitState &u, isa::Opcode op, const int64_t *f) {
        if (!opt_.functional || functional_failure_) return;
        sim::RecordedInstruction r;
        r.sequence = sequence_++;
        r.epoch = record_.epochs - 1;
        r.unit = (uint8_t)u.unit;
        r.pc = (uint32_t)u.pc;
        r.op = op;
        const int nf = u.compact->entries[u.pc].num_fields;
        std::copy(f, f + nf, r.f);
        std::fill(r.f + nf, r.f + isa::kMaxFields, 0);
        record_.per_core[u.core].push_back(r);
        if (++recorded_ >= kReplayChunk) replay_recorded();
    }
    void new_epoch() {
        dram_writes_.next_epoch();
        if (opt_.functional) record_.epochs++;
    }

    // Executes instructions of unit `id` until it issues a timed instruction, blocks or ends.
    void step(int id) {
        UnitState &u = units_[id];
        while (u.status == UnitStatus::Ready) {
            const isa::Opcode op = u.compact->entries[u.pc].op;
            int64_t f[isa::kMaxFields];  // only the op's fields are set and read
            u.compact->evaluate(u.pc, u.index, f);
            result_.cores[u.core].unit[u.unit].instructions++;
            if (++result_.dynamic_instructions > instruction_limit_ || u.time > cycle_limit_) {
                if (u.time > cycle_limit_) exceeded_cycles(u, u.time);
                exceeded_instructions(u);
            }
            switch (op) {
            case isa::Opcode::Loop:
                u.trip[u.depth] = f[0];
                u.index[u.depth] = 0;
                u.loop_start[u.depth] = u.pc + 1;
                u.depth++;
                advance(u);
                continue;
            case isa::Opcode::EndLoop: {
                const int d = u.depth - 1;
                if (++u.index[d] < u.trip[d]) {
                    u.pc = u.loop_start[d];
                } else {
                    u.index[d] = 0;
                    u.depth--;
                    advance(u);
                }
                continue;
            }
            case isa::Opcode::Signal:
                signal(u.core, (int)f[0], std::max(u.time, u.landed));
                advance(u);
                continue;
            case isa::Opcode::Wait: {
                auto &q = tokens_[u.core * m_.token_channels_per_core + f[0]];
                if (q.empty()) {
                    u.status = UnitStatus::BlockedOnToken;
                    u.waiting_on = (int)f[0];
                    token_waiters_[u.core * m_.token_channels_per_core + f[0]].push_back(id);
                    return;
                }
                u.time = std::max(u.time, q.front());
                q.pop_front();
                advance(u);
                if (u.status == UnitStatus::Ready) queue_.push({u.time, id});
                return;  // the unit's time may have moved: let the queue order it again
            }
            case isa::Opcode::Barrier: {
                BarrierState &b = barriers_[f[0]];
                if (b.arrived == 0) b.participants = f[1];
                if (b.participants != f[1]) {
                    fail(u, "barrier " + std::to_string(f[0]) + " expects " + std::to_string(f[1]) +
                                " participants, but another core arrived expecting " + std::to_string(b.participants));
                }
                b.arrived++;
                b.latest = std::max({b.latest, u.time, u.landed});
                u.status = UnitStatus::BlockedOnBarrier;
                u.waiting_on = (int)f[0];
                b.waiting.push_back(id);
                if (b.arrived == b.participants) {
                    new_epoch();  // DRAM written before the barrier is visible to every core after it
                    for (int wid : b.waiting) {
                        UnitState &w = units_[wid];
                        w.time = b.latest;
                        w.status = UnitStatus::Ready;
                        advance(w);
                        if (w.status == UnitStatus::Ready) queue_.push({w.time, wid});
                    }
                    b = BarrierState{};
                }
                return;
            }
            case isa::Opcode::DmaWindow: {
                namespace F = isa::field::DmaWindow;
                const ArgumentBinding &b = bindings_[f[F::arg]];
                if (f[F::base] < 0 || f[F::base] > b.bytes) {
                    fail(u, "window base " + std::to_string(f[F::base]) + " is outside '" + p_.args[f[F::arg]].name +
                                "' (" + std::to_string(b.bytes) + " bytes)");
                }
                dram_windows_[u.core * p_.args.size() + f[F::arg]] = f[F::base];
                advance(u);
                continue;
            }
            default: break;
            }
            execute_timed(id, op, f);
            return;
        }
    }

    void execute_timed(int id, isa::Opcode op, const int64_t *f) {
        UnitState &u = units_[id];
        sim::Scratchpad &sp = address_checks_[u.core];
        const double start = start_time(u);
        sim::HazardTracker &hazards = hazards_[u.core];
        hazards.prune(start);
        // Every operand's bytes are checked against what other units still occupy, then occupied:
        // by a DMA transfer until it completes (set when it does), by a PT/SFU instruction until it
        // ends. (A ring put checks its bytes below, once its span is known.)
        const bool dma = op == isa::Opcode::DmaLoad || op == isa::Opcode::DmaStore;
        const double end = dma || op == isa::Opcode::RingPut ? start : start + scaled(timing_.compute_cycles(op, f));
        transfer_occupancies_.clear();
        const sim::HazardContext ctx{&hazards, u.unit, start, dma ? sim::HazardTracker::kUntilUnknown : end,
                                     dma ? &transfer_occupancies_ : nullptr};
        sp.set_hazard_context(&ctx);
        struct ClearContext {
            sim::Scratchpad &sp;
            ~ClearContext() { sp.set_hazard_context(nullptr); }
        } clear_context{sp};
        try {
            switch (op) {
            case isa::Opcode::DmaLoad: {
                namespace F = isa::field::DmaLoad;
                check_window(u.core, op, f, f[F::arg]);
                sim::execute_dma_load(f, m_.stick_bytes, sp, bindings_[f[F::arg]], false);
                const int64_t total = f[F::row_bytes] * f[F::rows] * f[F::planes];
                const int64_t read = f[F::valid_bytes] * std::min(f[F::valid_rows], f[F::rows]) *
                                     std::min(f[F::valid_planes], f[F::planes]);
                result_.dram_read_bytes += read;
                record(u, op, f);
                start_transfer(id, start, read, 0, total - read, op);
                return;
            }
            case isa::Opcode::DmaStore: {
                namespace F = isa::field::DmaStore;
                check_window(u.core, op, f, f[F::arg]);
                sim::execute_dma_store(f, m_.stick_bytes, sp, bindings_[f[F::arg]], false);
                // Functional runs, and timing-only ones that ask: it costs a map update per row written.
                if (opt_.functional || opt_.check_dram_write_races_timing_only) dram_writes_.store((int)f[F::arg], u.core, (int64_t)u.pc,
                                   {f[F::dram], f[F::row_bytes], f[F::rows], f[F::dram_row_stride], f[F::planes],
                                    f[F::dram_plane_stride]},
                                   p_.args[f[F::arg]].name.c_str());
                const int64_t bytes = f[F::row_bytes] * f[F::rows] * f[F::planes];
                result_.dram_write_bytes += bytes;
                record(u, op, f);
                // Like a ring put, a store that reads bytes an earlier load of its unit is still
                // landing starts once they have landed.
                const sim::ByteBox src{f[F::sp],          f[F::row_bytes], f[F::rows], f[F::sp_row_stride],
                                       f[F::planes], f[F::sp_plane_stride]};
                start_transfer(id, hazards.own_writes_end(u.unit, src, start), 0, bytes, 0, op);
                return;
            }
            case isa::Opcode::RingPut: {
                namespace F = isa::field::RingPut;
                const int dst_core = (int)f[F::dst_core];
                sim::execute_ring_put(f, m_.stick_bytes, sp, address_checks_[dst_core], false);
                result_.ring_bytes += f[F::bytes];
                record(u, op, f);
                new_epoch();  // the receiving core sees the bytes only after this transfer
                // The put may read bytes an earlier transfer of this unit is still landing: it
                // starts once they have landed, then waits for the links on its path.
                const double scale = scaled(1.0);
                const sim::RingModel::Span span =
                    ring_.reserve(std::max(start, u.landed), u.core, dst_core, f[F::bytes], scale);
                // The source is read while the bytes leave; the destination is written until they arrive.
                const sim::ByteBox src{f[F::src], f[F::bytes]}, dst{f[F::dst], f[F::bytes]};
                hazards.check(u.unit, src, false, span.begin, "ring.put source");
                hazards.occupy(u.unit, src, false, span.begin + span.busy, "ring.put");
                // One "unit" per sending core: puts from two cores into the same bytes conflict too.
                const int ring_unit = sim::kRingUnit + u.core;
                hazards_[dst_core].check(ring_unit, dst, true, span.begin, "ring.put destination (in the receiving core)");
                hazards_[dst_core].occupy(ring_unit, dst, true, span.end, "a ring.put into this core");
                signal(dst_core, (int)f[F::dst_channel], span.end);
                finish_timed(id, span.begin, span.begin + span.busy, op);
                return;
            }
            case isa::Opcode::Matmul:
                sim::execute_matmul(f, sp, false);
                result_.macs += timing_.matmul_macs(f);
                result_.pt_peak_cycles += timing_.matmul_peak_cycles(f);
                break;
            default: sim::execute_sfu(op, f, sp, params_, false); break;
            }
        } catch (const sim::UnwrittenRead &e) {
            fail(u, e.what(), &e);
        } catch (const sim::RuleViolation &e) {
            fail(u, e.what());
        }
        record(u, op, f);
        finish_timed(id, start, end, op);
    }

    void check_window(int core, isa::Opcode op, const int64_t *f, int64_t arg) {
        const DramWindow w{dram_windows_[core * p_.args.size() + arg], m_.max_core_span_bytes};
        sim::check_dram_window(op, f, w, p_.args[arg].name.c_str());
    }

    // DMA: the DRAM part through the shared model, then the zero fill. The
    // unit issues its next transfer right away (transfers pipeline); the
    // access latency is paid by whoever observes completion: a signal, a
    // barrier or the end of the kernel.
    void start_transfer(int id, double start, int64_t read, int64_t write, int64_t zero_fill, isa::Opcode op) {
        UnitState &u = units_[id];
        const double fill = (double)zero_fill / m_.stick_bytes;
        const double latency = (read + write) > 0 ? scaled(m_.dma_latency_cycles) : 0.0;
        if (read + write == 0) {
            finish_transfer(id, start, start + fill, 0.0, op, transfer_occupancies_);
            return;
        }
        if (opt_.sync == SyncMode::ForcedSerial) {
            // One transfer at a time: alone on the card, at its port limit, latency included.
            dram_.start(start, u.core, read, write);
            const double done = dram_.next_completion();
            dram_.complete_until(done);
            finish_transfer(id, start, done + fill + latency, 0.0, op, transfer_occupancies_);
            return;
        }
        const int64_t tid = dram_.start(start, u.core, read, write);
        pending_.push_back({tid, id, start, fill, latency, op, transfer_occupancies_});
        u.status = UnitStatus::BlockedOnDram;
        u.time = start;
        schedule_dram_event();
    }

    void finish_transfer(int id, double start, double end, double latency, isa::Opcode op,
                         const std::vector<int64_t> &occupancies) {
        UnitState &u = units_[id];
        u.landed = std::max(u.landed, end + latency);
        // A load's bytes are written until they have landed; a store's are read until they have left.
        for (int64_t h : occupancies) hazards_[u.core].set_until(h, op == isa::Opcode::DmaLoad ? end + latency : end);
        if (opt_.sync == SyncMode::ForcedSerial) serial_free_ = std::max(serial_free_, u.landed);
        finish_timed(id, start, end, op);
    }

    void schedule_dram_event() {
        const double t = dram_.next_completion();
        if (std::isfinite(t) && t != dram_event_time_) {
            dram_event_time_ = t;
            queue_.push({t, kDramEvent});
        }
    }

    void finish_transfers(double now) {
        if (now != dram_event_time_) return;  // superseded
        dram_event_time_ = -1;
        for (int64_t tid : dram_.complete_until(now)) {
            auto it = std::find_if(pending_.begin(), pending_.end(), [tid](const PendingTransfer &p) { return p.dram_id == tid; });
            const PendingTransfer t = std::move(*it);
            *it = std::move(pending_.back());
            pending_.pop_back();
            finish_transfer(t.unit_id, t.start, now + t.fill, t.latency, t.op, t.occupancies);
        }
        schedule_dram_event();
    }

    void report_deadlock_if_any() {
        std::ostringstream os;
        int blocked = 0;
        const UnitState *first = nullptr;
        for (const auto &u : units_) {
            if (u.status == UnitStatus::Done) continue;
            if (!first) first = &u;
            if (blocked < 8) {
                os << "\n  core " << u.core << ", " << isa::unit_name((isa::Unit)u.unit) << " instruction " << u.pc << ": ";
                if (u.status == UnitStatus::BlockedOnToken) {
                    os << "wait on token channel " << u.waiting_on << " that no unit signals any more";
                } else if (u.status == UnitStatus::BlockedOnBarrier) {
                    const BarrierState &b = barriers_[u.waiting_on];
                    os << "barrier " << u.waiting_on << " with " << b.arrived << " of " << b.participants
                       << " participants arrived";
                } else {
                    os << "unfinished (internal: state " << (int)u.status << ")";
                }
            }
            blocked++;
        }
        if (blocked == 0) return;
        std::ostringstream head;
        head << "deadlock in '" << p_.kernel_name << "': " << blocked << " unit(s) wait forever"
             << (blocked > 8 ? " (first 8 shown)" : "") << ":" << os.str();
        throw SimulationError(head.str(), first->core, first->unit, (int64_t)first->pc,
                              (*first->stream)[first->pc].file_offset);
    }

    const Program &p_;
    const MachineDescription &m_;
    const std::vector<double> &params_;
    SimulationOptions opt_;
    sim::TimingModel timing_;
    sim::DramModel dram_;
    sim::RingModel ring_;
    std::mt19937_64 rng_;
    sim::DramWriteTracker dram_writes_;  // functional runs: cross-core DRAM write races in the current epoch
    std::vector<ArgumentBinding> bindings_;
    std::vector<int64_t> dram_windows_;  // per core and argument: the base of its DRAM window (dma.window)
    std::vector<std::vector<uint8_t>> temps_;
    std::vector<sim::Scratchpad> address_checks_;  // no data: bounds, hazards and written bytes (poison)
    std::vector<sim::HazardTracker> hazards_;      // per core: bytes still occupied by a unit (hazard_tracker.h)
    std::vector<int64_t> transfer_occupancies_;    // of the transfer being started
    std::vector<Fifo<double>> tokens_;
    std::vector<Fifo<int>> token_waiters_;
    std::vector<BarrierState> barriers_;
    std::vector<CompactStream> compact_;  // one per unit, same order as units_
    std::vector<UnitState> units_;
    std::vector<PendingTransfer> pending_;  // in flight: at most one per DMA unit, so a short list
    std::priority_queue<QueueEntry, std::vector<QueueEntry>, std::greater<QueueEntry>> queue_;
    uint64_t instruction_limit_ = UINT64_MAX;  // SimulationOptions budgets, or no limit
    double cycle_limit_ = std::numeric_limits<double>::infinity();
    double serial_free_ = 0;
    double dram_event_time_ = -1;
    uint64_t sequence_ = 0;
    sim::ExecutionRecord record_;                 // functional: what is not replayed yet
    size_t recorded_ = 0;                         // instructions in record_
    std::vector<std::unique_ptr<sim::Scratchpad>> functional_sps_;
    std::exception_ptr functional_failure_;       // the replay's first violation, reported after the timing phase
    SimulationResult result_;
};

}  // namespace

SimulationResult simulate_program(const Program &p, const MachineDescription &m, const std::vector<ArgumentBinding> &args,
                                  const std::vector<double> &params, const SimulationOptions &options) {
    Device device(p, m, args, params, options);
    return device.run();
}

}  // namespace spyre
