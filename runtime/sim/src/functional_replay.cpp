// Parallel functional replay of a recorded execution (see functional_replay.h).
#include "functional_replay.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>

#include "unit_semantics.h"

namespace spyre {
namespace sim {

namespace {

struct Failure {
    uint64_t sequence = UINT64_MAX;
    std::string message;
    int core = -1, unit = -1;
    int64_t pc = -1;
    uint64_t offset = 0;
};

void execute(const RecordedInstruction &r, const MachineDescription &m, int core, std::vector<std::unique_ptr<Scratchpad>> &sps,
             const std::vector<ArgumentBinding> &bindings, const std::vector<double> &params) {
    Scratchpad &sp = *sps[core];
    switch (r.op) {
    case isa::Opcode::DmaLoad:
        execute_dma_load(r.f, m.stick_bytes, sp, bindings[r.f[isa::field::DmaLoad::arg]], true);
        break;
    case isa::Opcode::DmaStore:
        execute_dma_store(r.f, m.stick_bytes, sp, bindings[r.f[isa::field::DmaStore::arg]], true);
        break;
    case isa::Opcode::RingPut:
        execute_ring_put(r.f, m.stick_bytes, sp, *sps[r.f[isa::field::RingPut::dst_core]], true);
        break;
    case isa::Opcode::Matmul: execute_matmul(r.f, sp, true); break;
    default: execute_sfu(r.op, r.f, sp, params, true); break;
    }
}

}  // namespace

void replay_functional(const Program &p, const MachineDescription &m, const ExecutionRecord &record,
                       std::vector<std::unique_ptr<Scratchpad>> &scratchpads, const std::vector<ArgumentBinding> &bindings,
                       const std::vector<double> &params, int threads) {
    const int cores = (int)record.per_core.size();
    std::vector<size_t> cursor(cores, 0);
    Failure failure;
    std::mutex failure_mutex;

    auto run_core_epoch = [&](int core, uint32_t epoch) {
        const auto &list = record.per_core[core];
        size_t i = cursor[core];
        for (; i < list.size() && list[i].epoch == epoch; i++) {
            const RecordedInstruction &r = list[i];
            try {
                execute(r, m, core, scratchpads, bindings, params);
            } catch (const RuleViolation &e) {
                std::lock_guard<std::mutex> lock(failure_mutex);
                if (r.sequence < failure.sequence) {
                    const isa::Instruction &inst = p.cores[core].unit[r.unit][r.pc];
                    std::ostringstream os;
                    os << "core " << core << ", " << isa::unit_name((isa::Unit)r.unit) << " instruction " << r.pc << " ("
                       << isa::opcode_spec(inst.op).mnemonic;
                    if (inst.file_offset) os << " at offset " << inst.file_offset;
                    os << "): " << e.what();
                    failure = {r.sequence, os.str(), core, (int)r.unit, (int64_t)r.pc, inst.file_offset};
                }
                break;  // this core stops; others finish their epoch
            }
        }
        cursor[core] = i;
    };

    std::vector<int> active;
    for (int c = 0; c < cores; c++) {
        if (!record.per_core[c].empty()) active.push_back(c);
    }
    threads = std::max(1, std::min<int>(threads, (int)active.size()));
    for (uint32_t epoch = 0; epoch < record.epochs && failure.sequence == UINT64_MAX; epoch++) {
        if (threads == 1) {
            for (int c : active) run_core_epoch(c, epoch);
            continue;
        }
        std::atomic<size_t> next{0};
        auto worker = [&]() {
            for (size_t k = next++; k < active.size(); k = next++) run_core_epoch(active[k], epoch);
        };
        std::vector<std::thread> pool;
        for (int t = 1; t < threads; t++) {
            try {
                pool.emplace_back(worker);
            } catch (const std::system_error &) {
                break;  // the host cannot start another thread now: the threads running do the rest
            }
        }
        worker();
        for (auto &t : pool) t.join();
    }
    if (failure.sequence != UINT64_MAX) {
        throw SimulationError(failure.message, failure.core, failure.unit, failure.pc, failure.offset);
    }
}

}  // namespace sim
}  // namespace spyre
