// llm / llm-tiny: runs a decoder-only language model of the configuration
// the executable was built for (apps/llm/CMakeLists.txt) on the simulated
// Spyre device: prefill of a prompt, then greedy decode steps, with the
// weights and KV cache resident on the device. Prints, per phase, the
// simulated time, tokens/s, the per-kernel table and the targets against the
// physical bounds of the configuration; host-side costs separately.
//
//   build/bin/llm --timing-only                     # Granite-8B shape, 40 layers, timing only
//   build/bin/llm --layers 2 --check --tokens 2     # functional, 2 layers at full width, vs host chain
//   build/bin/llm-tiny --check                      # the small model end to end, vs host chain
//   mpirun -np 4 build/bin/llm --tp 4 --timing-only # tensor-parallel over 4 simulated cards
//   mpirun -np 8 build/bin/llm --model llama3-70b --tp 8 --timing-only
//
// With --tp N (one MPI rank per card) or another --model than the build's, the
// kernels of the shard are compiled on first use into the kernel cache
// (apps/common/kernel_cache.h); --tp 1 of the build's model is the linked chain.
//
// Functional runs use random weights from --seed; --check also runs the host
// build of the same kernel chain on the same weights and tokens and fails
// unless the greedy tokens match and the logits agree to rounding.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "decoder.h"
#include "cli_options.h"
#include "kernel_cache.h"
#include "kernel_plan.h"
#include "model_catalog.h"
#include "tensor_parallel.h"
#include "output_files.h"
#include "run_report.h"
#include "spyre/machine.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"
#include "HalideRuntime.h"

namespace {

using namespace llm;

constexpr double kIncumbentMsPerToken = 865.0;  // torch-spyre, Granite-3.3-8B, one card (its published figure)
constexpr double kDecodeTarget = 1.3, kPrefillTarget = 1.5;

bool is_host_link(const OpRecord &r) { return r.function == "host->device" || r.function == "device->host"; }
bool is_collective(const OpRecord &r) {
    return r.function == "all_reduce" || r.function == "all_gather" || r.function == "collective wait";
}
// The collectives' time: with the waits for the slowest rank, or their own link time only.
double collective_us(const std::vector<OpRecord> &v, bool with_waits = true) {
    double us = 0;
    for (const OpRecord &r : v) {
        if (is_collective(r) && (with_waits || r.function != "collective wait")) us += r.us;
    }
    return us;
}

std::vector<OpRecord> device_only(const std::vector<OpRecord> &v) {
    std::vector<OpRecord> out;
    for (const OpRecord &r : v) {
        if (!is_host_link(r)) out.push_back(r);
    }
    return out;
}
std::vector<OpRecord> host_link_only(const std::vector<OpRecord> &v) {
    std::vector<OpRecord> out;
    for (const OpRecord &r : v) {
        if (is_host_link(r)) out.push_back(r);
    }
    return out;
}
double layer_us(const std::vector<OpRecord> &v) {
    double us = 0;
    for (const OpRecord &r : v) {
        if (r.layer >= 0) us += r.us;
    }
    return us;
}

std::vector<int> random_tokens(int n, int vocab, uint64_t seed) {
    std::vector<int> t(n);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 12345;
    for (int i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        t[i] = (int)(s % (uint64_t)vocab);
    }
    return t;
}

struct Run {
    std::vector<int> prefill_tokens;          // per sequence
    std::vector<std::vector<int>> decoded;    // per step, per sequence
    std::vector<Tensor> logits;               // per step (functional): host copies, prefill first
};

// Prefill every sequence, then `steps` decode steps. With `forced`, the
// tokens fed to each step are forced's (teacher forcing, so a check compares
// the two chains on the same inputs); otherwise the run's own greedy tokens.
Run run_model(Decoder &d, RunRecorder *rec, const ModelShape &s, int batch, int steps,
              const std::vector<std::vector<int>> &prompts, const Run *forced, bool keep_logits, bool progress) {
    Run run;
    for (int b = 0; b < batch; b++) {
        if (rec) rec->set_phase("prefill");
        if (progress) std::fprintf(stderr, "prefill of sequence %d/%d ...\n", b + 1, batch);
        run.prefill_tokens.push_back(d.prefill(b, prompts[b]));
        if (keep_logits && b == 0) run.logits.push_back(d.last_logits().copy());
    }
    std::vector<int> tokens = forced ? forced->prefill_tokens : run.prefill_tokens;
    for (int step = 0; step < steps; step++) {
        if (rec) rec->set_phase("decode " + std::to_string(step));
        if (progress) std::fprintf(stderr, "\rdecode step %d/%d", step + 1, steps);
        std::vector<int> next = d.decode_step(tokens, s.prompt + step);
        run.decoded.push_back(next);
        if (keep_logits) run.logits.push_back(d.last_logits().copy());
        tokens = forced ? forced->decoded[step] : next;
    }
    if (progress && steps) std::fprintf(stderr, "\n");
    return run;
}

struct TopTwo {
    int best = 0;
    float first = -INFINITY, second = -INFINITY;
};
TopTwo top_two(const Tensor &logits, int column) {
    TopTwo t;
    for (int v = 0; v < logits.dim(0).extent(); v++) {
        const float x = f16_at(logits, {v, column});
        if (x > t.first) {
            t.second = t.first, t.first = x, t.best = v;
        } else if (x > t.second) {
            t.second = x;
        }
    }
    return t;
}

// The functional check: device tokens and logits against the host chain's.
bool check_against_host(const Run &dev, const Run &host) {
    bool ok = true;
    double max_err = 0, sum_sq = 0;
    size_t n = 0;
    int token_mismatches = 0, compared = 0;
    for (size_t i = 0; i < host.logits.size(); i++) {
        const Tensor &h = host.logits[i], &g = dev.logits[i];
        for (int b = 0; b < h.dim(1).extent(); b++) {
            for (int v = 0; v < h.dim(0).extent(); v++) {
                const double a = f16_at(h, {v, b}), c = f16_at(g, {v, b});
                if (!std::isfinite(a) || !std::isfinite(c)) ok = false;
                max_err = std::max(max_err, std::fabs(a - c));
                sum_sq += a * a;
                n++;
            }
            const TopTwo th = top_two(h, b), tg = top_two(g, b);
            compared++;
            if (th.best != tg.best) {
                token_mismatches++;
                std::printf("  step %zu sequence %d: host picks token %d (logit %.4f, runner-up %.4f), spyre token %d (%.4f)\n",
                            i, b, th.best, th.first, th.second, tg.best, tg.first);
            }
        }
    }
    const double rms = std::sqrt(sum_sq / std::max<size_t>(n, 1));
    // fp16 between kernels, fp32 inside: each kernel rounds once and the two
    // builds sum in different orders, so logits of O(rms) agree to ~1e-2 x rms.
    const double tolerance = 0.05 * rms + 0.02;
    std::printf("check vs host chain: %d greedy tokens compared, %d differ; logits rms %.3f, max |spyre - host| %.4f "
                "(tolerance %.4f)\n",
                compared, token_mismatches, rms, max_err, tolerance);
    if (token_mismatches || max_err > tolerance || rms < 0.1) ok = false;
    if (rms < 0.1) std::printf("  the host logits are nearly zero: the check would prove nothing\n");
    return ok;
}

// Where a phase's time goes beyond its bound, from the run's own figures: the
// matmuls above their own roofline bounds, the attention, the kernels that a
// fused layer would not run at all (norms, rope, adds, the SwiGLU gate
// where it runs apart, the key transpose: their traffic is not in the phase's minimum), the device copies
// and relayouts.
void explain_time(const std::vector<OpRecord> &v, double bound_us) {
    auto kind = [](const OpRecord &r) -> int {
        if (is_collective(r)) return 4;
        if (r.function == "device->device" || r.function == "relayout") return 3;
        if (r.role == "qkv proj" || r.role == "o proj + residual" || r.role == "gate/up proj + swiglu" || r.role == "gate/up proj" ||
            r.role == "down proj + residual" || r.role == "lm head")
            return 0;
        if (r.role == "attention") return 1;
        return 2;
    };
    const char *names[] = {"matmuls", "attention", "norms, rope, SwiGLU gate, key transpose", "device copies and relayouts",
                           "collectives (card link)"};
    double us[5] = {0, 0, 0, 0, 0}, own_bound[5] = {0, 0, 0, 0, 0};
    for (const OpRecord &r : v) {
        us[kind(r)] += r.us;
        own_bound[kind(r)] += r.bound_us;
    }
    const double total = us[0] + us[1] + us[2] + us[3] + us[4];
    std::printf("  what limits it: %.1f ms against a bound of %.1f ms:\n", total / 1e3, bound_us / 1e3);
    for (int k = 0; k < 5; k++) {
        if (k == 4 && us[k] == 0) continue;
        std::printf("    %-48s %9.1f ms (%4.1f%%), at %5.1f%% of their own roofline bounds\n", names[k], us[k] / 1e3,
                    total > 0 ? 100.0 * us[k] / total : 0.0, us[k] > 0 ? 100.0 * own_bound[k] / us[k] : 0.0);
    }
    std::printf("    the matmuls alone at their own bounds would take %.1f ms; the phase's traffic bound counts only\n"
                "    weights and the KV cache, so every kernel between two matmuls costs time it does not allow for\n",
                own_bound[0] / 1e3);
}

void print_phase(const char *title, const std::vector<OpRecord> &all, int layers) {
    const std::vector<OpRecord> dev = device_only(all);
    const PhaseTotals t = totals(dev);
    std::printf("\n%s: %.1f us simulated on the device (%.1f us in the %d layers, %.1f us per layer)\n", title, t.us,
                layer_us(dev), layers, layers ? layer_us(dev) / layers : 0.0);
    print_phase_table(dev, "  ");
    const std::vector<OpRecord> link = host_link_only(all);
    if (!link.empty()) {
        std::printf("  host side (kept separate, not in the device time above):\n");
        print_phase_table(link, "    ");
    }
}

}  // namespace

// Runtime failures come back as error codes with spyre_last_error() set; the
// chain turns them into exceptions with that message. Halide's default
// handler would abort the process instead.
void keep_going_on_error(void *, const char *) {}

// The ranks of a tensor-parallel run. A run that ends well leaves them together (MPI_Finalize);
// any other end of main on any rank aborts the job (MPI_Abort), so no rank is left waiting in
// a collective for one that gave up.
struct Ranks {
    spyre_comm_t *comm = nullptr;
    int exit_code = 1;  // set to 0 on the one successful return
    ~Ranks() {
        if (!comm) return;
        if (exit_code == 0) {
            leave_ranks(comm);
        } else {
            std::fflush(stdout);
            abort_ranks(comm, exit_code);
        }
    }
};

// Bytes the shared weight layout adds to the matmul weights (gen_matmul shared_weight_layout=true:
// N padded to whole blocks of 64 fp16 columns per core; Granite-8B: 352 MB over 40 layers).
int64_t weight_padding_bytes(const ModelShape &s, int layers, const spyre::MachineDescription &m) {
    const int64_t block = 64ll * m.cores;
    auto pad = [&](int64_t n, int64_t k) { return ((n + block - 1) / block * block - n) * k * 2; };
    const int64_t layer = pad(s.qkv_features(), s.hidden) + pad(s.hidden, s.attention_width()) +
                          pad(2ll * s.ffn, s.hidden) + pad(s.hidden, s.ffn);
    return layers * layer + pad(s.vocab, s.hidden);
}

// Bytes one card holds: its shard of the weights (its LM-head slice; the embedding whole) in the
// kernels' padded layout, its KV cache.
int64_t card_bytes(const ModelShape &s, int layers, int batch) {
    const int64_t weights = s.weight_bytes_per_step(layers, 0) + 2ll * s.hidden * s.vocab_total +
                            weight_padding_bytes(s, layers, spyre::default_machine());
    const int64_t kv = 2ll * layers * s.capacity * s.head_dim * s.kvheads * batch * 2;
    return weights + kv;
}

// Bytes of host memory a functional run needs per rank: the simulated card's memory (which
// holds its values in host memory), the largest weight piece made on the host at once with its
// shard (weights are made a layer at a time and dropped once placed) and the staging copy of
// the largest tensor as it is written into the card; with --check, the host chain's whole model
// and KV cache as well.
int64_t host_bytes(const ModelShape &full, const ModelShape &s, int layers, int batch, bool check) {
    const int64_t staging = 2 * std::max<int64_t>((int64_t)full.hidden * full.vocab_total, 2ll * full.ffn * full.hidden);
    const int64_t pieces = largest_weight_piece_bytes(full) + (s.tp > 1 ? largest_weight_piece_bytes(s) : 0) + staging;
    const int64_t weights = full.weight_bytes_per_step(layers, 0) + 2ll * full.hidden * full.vocab_total;
    const int64_t kv = 2ll * layers * full.capacity * full.head_dim * full.kvheads * batch * 2;
    return card_bytes(s, layers, batch) + pieces + (check ? weights + kv : 0);
}

// What this process may allocate: the memory the kernel says is available, and the address-space limit.
int64_t host_bytes_available() {
    int64_t available = INT64_MAX;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string key; meminfo >> key;) {
        int64_t kb = 0;
        meminfo >> kb;
        if (key == "MemAvailable:") available = kb * 1024;
        meminfo.ignore(256, '\n');
    }
    struct rlimit limit {};
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        available = std::min<int64_t>(available, (int64_t)limit.rlim_cur);
    }
    return available;
}

int main(int argc, char **argv) {
    check_stdout_at_exit("llm");
    halide_set_error_handler(keep_going_on_error);
    const ModelShape &built = compiled_shape();
    CLI::App app{"Runs a decoder-only language model (configuration '" + built.name +
                 "' or --model) on the simulated Spyre device: prefill, then greedy decode, KV cache on the device; "
                 "--tp N over N cards, one MPI rank each"};
    std::string model = built.name;
    int tp = 1;
    int layers = -1, steps = 4, batch = 1;
    uint64_t seed = 1;
    bool timing_only = false, check = false;
    std::string trace_path, json_path;
    std::string models;
    for (const std::string &n : model_names()) models += (models.empty() ? "" : ", ") + n;
    app.add_option("--model", model, "the model shape: " + models + " (default: " + built.name + ", linked)");
    app.add_option("--tp", tp, "tensor-parallel degree: cards, one MPI rank each (mpirun -np N ... --tp N)")
        ->check(CLI::Range(1, 64));
    app.add_option("--layers", layers, "decoder layers to run (default: all of the model's)")->check(CLI::Range(1, 1000));
    app.add_option("--tokens", steps, "decode steps after the prompt")->check(CLI::Range(0, 100000));
    app.add_option("--batch", batch, "sequences decoded together (1, 4 or 8 for Granite-8B; 1 or 2 for tiny)");
    app.add_option("--seed", seed, "seed of the random weights and prompts")->check(spyre_cli::unsigned_64());
    app.add_flag("--timing-only", timing_only,
                 "simulate time only: no values anywhere, weights allocated on the device but never written "
                 "(the full model runs in a few MB of host memory)");
    app.add_flag("--check", check, "also run the host build of the same chain and compare tokens and logits");
    app.add_option("--trace", trace_path, "write a Chrome trace (chrome://tracing, ui.perfetto.dev) of the last decode step");
    app.add_option("--json", json_path, "also write the figures printed below as JSON (benchmarks/llm/llm_report.py reads it)");
    std::string logits_path;
    app.add_option("--logits-out", logits_path,
                   "functional runs: write the greedy tokens and the logits of every step as JSON (rank 0), to compare "
                   "two runs (tests/mpi/compare_llm_runs.py)");
    CLI11_PARSE(app, argc, argv);
    ModelShape full;
    try {
        full = model_shape(model);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "llm: --model: %s\n", e.what());
        return 2;
    }
    if (layers < 0) layers = full.layers;
    // One rank per card: mpirun's rank count and --tp must agree, checked before anything starts.
    if (started_by_mpirun() && ranks_in_job() != tp) {
        std::fprintf(stderr, "llm: mpirun started %d ranks but --tp is %d: pass --tp %d (one rank per card)\n",
                     ranks_in_job(), tp, ranks_in_job());
        return 2;
    }
    Ranks ranks;
    int rank = 0;
    ModelShape s;
    try {
        s = tensor_parallel_shard(full, tp, 0);  // every rank's shape but rank 0's residual is the same
        if (tp > 1) {
            ranks.comm = join_ranks(&argc, &argv);
            if (spyre_comm_size(ranks.comm) != tp) {
                throw std::runtime_error("--tp " + std::to_string(tp) + " needs " + std::to_string(tp) +
                                         " ranks (mpirun -np " + std::to_string(tp) + "), this job has " +
                                         std::to_string(spyre_comm_size(ranks.comm)));
            }
            rank = spyre_comm_rank(ranks.comm);
            s = tensor_parallel_shard(full, tp, rank);
            // The same model, options and machine on every rank, or none starts.
            std::string what = model + " layers=" + std::to_string(layers) + " tokens=" + std::to_string(steps) +
                               " batch=" + std::to_string(batch) + " seed=" + std::to_string(seed) +
                               " timing_only=" + std::to_string(timing_only || spyre_timing_only());
            for (const spyre::MachineParameterInfo &p : spyre::default_machine().parameters) {
                what += " " + p.name + "=" + std::to_string(p.value);
            }
            check_ranks_agree(ranks.comm, what);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "llm: %s\n", e.what());
        return 2;
    }
    // Rank 0 speaks for the job; the others print only their errors.
    if (rank != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;
    const bool linked = model == built.name && tp == 1;
    if (std::find(s.batches.begin(), s.batches.end(), batch) == s.batches.end()) {
        std::string list;
        for (int b : s.batches) list += (list.empty() ? "" : ", ") + std::to_string(b);
        std::fprintf(stderr, "llm: --batch %d: configuration %s decodes batches %s\n", batch, s.name.c_str(), list.c_str());
        return 2;
    }
    // SPYRE_TIMING_ONLY=1 in the environment makes every kernel timing-only: the run is one.
    if (spyre_timing_only()) timing_only = true;
    if (timing_only && check) {
        std::fprintf(stderr, "llm: --check compares values, which a --timing-only run does not compute\n");
        return 2;
    }
    if (check && !linked) {
        std::fprintf(stderr, "llm: --check runs the linked host chain of the build's model at --tp 1; compare a "
                     "tensor-parallel run with a --tp 1 run instead (--logits-out, tests/mpi/compare_llm_runs.py)\n");
        return 2;
    }
    if (!timing_only && model != built.name) {
        std::fprintf(stderr, "llm: --model %s runs --timing-only (its random weights would not fit this host)\n",
                     model.c_str());
        return 2;
    }
    if (layers > full.layers) {
        std::fprintf(stderr, "llm: --layers %d: the model has %d\n", layers, full.layers);
        return 2;
    }
    if (s.prompt + steps > s.capacity) {
        std::fprintf(stderr, "llm: %d prompt tokens + %d decode steps do not fit the KV cache of %d positions "
                     "(configuration %s; CAPACITY in apps/llm/CMakeLists.txt)\n", s.prompt, steps, s.capacity, s.name.c_str());
        return 2;
    }
    if (!trace_path.empty() && steps == 0) {
        std::fprintf(stderr, "llm: --trace writes the last decode step, and --tokens 0 runs none\n");
        return 2;
    }
    for (const std::string *path : {&trace_path, &json_path, &logits_path}) {
        if (path->empty()) continue;
        const std::string why = output_path_problem(*path);
        if (!why.empty()) {
            std::fprintf(stderr, "llm: cannot write %s: %s\n", path->c_str(), why.c_str());
            return 2;
        }
    }
    if (std::find(s.batches.begin(), s.batches.end(), 1) == s.batches.end()) {
        std::fprintf(stderr, "llm: configuration %s has no batch-1 kernels, which the prefill's LM head uses\n", s.name.c_str());
        return 2;
    }

    // A model that does not fit is refused before any work, with what it needs.
    const spyre::MachineDescription &machine = spyre::default_machine();
    const int64_t needed = card_bytes(s, layers, batch);
    if (needed > machine.dram_usable_bytes) {
        std::fprintf(stderr, "llm: %s at --tp %d needs %.1f GB per card (%.1f GB of weights, the embedding whole, and "
                     "the KV cache of %d positions at batch %d); a card holds %.1f GB: use more cards (--tp)\n",
                     full.name.c_str(), tp, needed / 1e9, (needed - 2.0 * layers * s.capacity * s.head_dim * s.kvheads * batch * 2) / 1e9,
                     s.capacity, batch, machine.dram_usable_bytes / 1e9);
        return 2;
    }

    // A functional run that cannot fit this host is refused at once, with both numbers and what fits.
    if (!timing_only) {
        const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");  // ranks sharing this host
        const int64_t ranks_here = local ? std::max(1, std::atoi(local)) : 1;
        const int64_t available = host_bytes_available();
        const int64_t host_needed = ranks_here * host_bytes(full, s, layers, batch, check);
        if (host_needed > available) {
            int fits = 0;
            for (int l = layers - 1; l >= 1 && !fits; l--) {
                if (ranks_here * host_bytes(full, s, l, batch, check) <= available) fits = l;
            }
            std::fprintf(stderr, "llm: a functional run of %d layers needs %.1f GB of host memory (%sthe simulated "
                         "card's memory and one layer's weights as they are made%s); this host can give %.1f GB (available "
                         "memory and the address-space limit): use --timing-only%s\n",
                         layers, host_needed / 1e9, ranks_here > 1 ? "every rank on this host holds " : "",
                         check ? ", and the host chain's whole model and KV cache" : "", available / 1e9,
                         fits ? (" or --layers " + std::to_string(fits) + " or fewer").c_str() : "");
            return 2;
        }
    }

    std::printf("llm: configuration %s: hidden %d, %d layers (of %d), %d query / %d KV heads of %d, SwiGLU %d, "
                "vocabulary %d, fp16\n",
                full.name.c_str(), full.hidden, layers, full.layers, full.qheads, full.kvheads, full.head_dim, full.ffn,
                full.vocab);
    if (tp > 1) {
        std::printf("     tensor parallel over %d cards (MPI ranks): per card %d query / %d KV heads%s, SwiGLU %d, "
                    "vocabulary slice %d; %.1f GB of device memory per card\n",
                    tp, s.qheads, s.kvheads, full.kvheads < tp ? " (KV heads replicated)" : "", s.ffn, s.vocab,
                    needed / 1e9);
    }
    std::printf("     prompt %d tokens, %d decode steps at batch %d, KV cache %d positions, %s\n", s.prompt, steps, batch,
                s.capacity, timing_only ? "timing only" : "functional");
    try {
        if (timing_only) spyre_set_timing_only(1);
        std::vector<std::vector<int>> prompts;
        for (int b = 0; b < batch; b++) prompts.push_back(random_tokens(s.prompt, s.vocab_total, seed * 31 + b));

        // The weights are made a layer at a time as they are placed; only the host
        // reference chain (--check) holds the whole model on the host.
        const RandomWeights random(full, seed);
        ModelWeights held;
        Run host_run;
        if (check) {
            std::fprintf(stderr, "host reference chain ...\n");
            held = hold_weights(random, layers);
            Realization host(false, false);
            Decoder h(host, s, layers, batch, nullptr);
            const HeldWeights host_weights(held);
            h.load_weights(&host_weights);
            host_run = run_model(h, nullptr, s, batch, steps, prompts, nullptr, true, false);
        }
        const HeldWeights held_source(held);
        const WeightSource &model_weights = check ? static_cast<const WeightSource &>(held_source) : random;
        const ShardedWeights shard(model_weights, full, s);

        // The build's model at --tp 1 runs its linked kernels (checked against the plan the cache
        // would compile, so the two stay one list); a shard's come from the kernel cache.
        check_plan_matches_build(kernel_plan(built, built.batches), compiled_kernels());
        std::vector<KernelEntry> kernels = compiled_kernels();
        if (!linked) {
            spyre_apps::KernelCache cache(rank == 0);
            kernels = cached_kernels(kernel_plan(s, {batch}), cache);
            if (cache.compiled() && rank == 0) {
                std::fprintf(stderr, "kernel cache: %d kernels compiled, %d found in %s\n", cache.compiled(), cache.hits(),
                             cache.directory().c_str());
            }
        }
        Realization device(true, timing_only);
        RunRecorder rec;
        Decoder d(device, s, layers, batch, &rec, kernels, ranks.comm);
        const auto load0 = std::chrono::steady_clock::now();
        d.load_weights(timing_only ? nullptr : &shard);
        if (!timing_only && rank == 0) {
            std::fprintf(stderr, "weights made and placed on the device: %.1f s\n",
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - load0).count());
        }
        if (d.second_copy_bytes()) {
            std::printf("     weights placed twice (a prefill kernel was compiled with another layout of them than "
                        "the decode kernels): %.1f MB more device memory\n", d.second_copy_bytes() / 1e6);
        }
        const auto wall0 = std::chrono::steady_clock::now();
        const Run dev_run = run_model(d, &rec, s, batch, steps, prompts, check ? &host_run : nullptr,
                                      check || !logits_path.empty(), rank == 0);
        const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

        const spyre::MachineDescription &m = spyre::default_machine();
        nlohmann::json out{{"config", full.name}, {"layers", layers}, {"model_layers", s.layers}, {"batch", batch},
                           {"prompt", s.prompt}, {"steps", steps}, {"timing_only", timing_only}, {"tp", tp},
                           {"card_link_latency_us", m.card_link_latency_us}, {"card_bytes", needed},
                           {"wall_s", wall_s}};
        auto table_json = [](const std::vector<OpRecord> &v) {
            nlohmann::json rows = nlohmann::json::array();
            std::vector<std::string> order;
            std::map<std::string, nlohmann::json> by_role;
            for (const OpRecord &r : v) {
                if (!by_role.count(r.role)) {
                    order.push_back(r.role);
                    by_role[r.role] = {{"kernel", r.role}, {"calls", 0}, {"us", 0.0}, {"bound_us", 0.0}, {"bytes", 0},
                                       {"bottleneck", r.bottleneck}};
                }
                nlohmann::json &j = by_role[r.role];
                j["calls"] = j["calls"].get<int>() + 1;
                j["us"] = j["us"].get<double>() + r.us;
                j["bound_us"] = j["bound_us"].get<double>() + r.bound_us;
                j["bytes"] = j["bytes"].get<uint64_t>() + r.read_bytes + r.write_bytes;
            }
            for (const std::string &role : order) rows.push_back(by_role[role]);
            return rows;
        };
        // ---- prefill ----
        const std::vector<OpRecord> prefill = rec.of_phase("prefill");
        print_phase(("prefill (" + std::to_string(batch) + " x " + std::to_string(s.prompt) + " tokens)").c_str(),
                    prefill, layers);
        const PhaseTotals pt = totals(device_only(prefill));
        const double peak_macs_per_us = m.cores * m.pt_peak_macs_per_cycle_fp16 * m.clock_ghz * 1e3;
        const double compute_us = pt.macs / peak_macs_per_us;
        const int64_t weight_bytes = s.weight_bytes_per_step(layers, 1) - 2ll * s.hidden;  // one embedding row less
        const int64_t kv_bytes = 2ll * layers * s.prompt * s.kvheads * s.head_dim * 2 * batch;
        const double traffic_us = m.dram_bound_ns((double)weight_bytes * batch, (double)kv_bytes) / 1e3;
        const double prefill_bound = std::max(compute_us, traffic_us);
        const double prefill_ratio = pt.us / prefill_bound;
        std::printf("  bounds: compute %.1f us (%.3g MACs at the datasheet peak), weight + KV traffic %.1f us; "
                    "%.2fx the larger -> target <= %.1fx: %s\n",
                    compute_us, (double)pt.macs, traffic_us, prefill_ratio, kPrefillTarget,
                    prefill_ratio <= kPrefillTarget ? "met" : "MISSED");
        std::printf("  %.0f tokens/s (%d tokens in %.2f ms)\n", batch * s.prompt / (pt.us / 1e6), batch * s.prompt,
                    pt.us / 1e3);
        const double prefill_collectives = collective_us(device_only(prefill));
        if (tp > 1) {
            std::printf("  collectives: %.1f us (%.1f%% of the phase) on the card link (latency %.1f us per message)\n",
                        prefill_collectives, 100.0 * prefill_collectives / pt.us, m.card_link_latency_us);
        }
        if (prefill_ratio > kPrefillTarget) explain_time(device_only(prefill), prefill_bound);
        out["prefill"] = {{"us", pt.us},
                          {"layer_us", layer_us(device_only(prefill))},
                          {"compute_bound_us", compute_us},
                          {"traffic_bound_us", traffic_us},
                          {"ratio", prefill_ratio},
                          {"target", kPrefillTarget},
                          {"tokens_per_s", batch * s.prompt / (pt.us / 1e6)},
                          {"collectives_us", prefill_collectives},
                          {"kernels", table_json(device_only(prefill))}};

        // ---- decode ----
        if (steps > 0) {
            std::vector<OpRecord> decode;
            for (int i = 0; i < steps; i++) {
                const std::vector<OpRecord> v = rec.of_phase("decode " + std::to_string(i));
                decode.insert(decode.end(), v.begin(), v.end());
            }
            print_phase(("decode (" + std::to_string(steps) + " steps at batch " + std::to_string(batch) +
                         ", all steps)").c_str(),
                        decode, layers * steps);
            const PhaseTotals dt = totals(device_only(decode));
            const double step_us = dt.us / steps;
            const double floor_us = m.dram_bound_ns((double)s.weight_bytes_per_step(layers, batch), 0) / 1e3;
            const double ratio = step_us / floor_us;
            std::printf("  per step: %.3f ms simulated = %.3f ms per token at batch %d, %.1f tokens/s\n", step_us / 1e3,
                        step_us / 1e3 / batch, batch, batch / (step_us / 1e6));
            std::printf("  weight-traffic floor%s: %.1f MB of weights per step at %.1f GB/s = %.3f ms; ours %.2fx -> "
                        "target <= %.1fx: %s\n",
                        tp > 1 ? " per card" : "", s.weight_bytes_per_step(layers, batch) / 1e6, m.dram_bandwidth_gbps,
                        floor_us / 1e3, ratio, kDecodeTarget, ratio <= kDecodeTarget ? "met" : "MISSED");
            const double step_collectives = collective_us(device_only(decode)) / steps;
            const double step_links = collective_us(device_only(decode), false) / steps;
            if (tp > 1) {
                const double with_link = floor_us + step_links;
                std::printf("  collectives: %.1f us per step (%.1f%% of it; %d all-reduces per layer and the logits' "
                            "all-gather); the card's floor plus the collectives' own time: %.3f ms, ours %.2fx of it\n",
                            step_collectives, 100.0 * step_collectives / step_us, 2, with_link / 1e3, step_us / with_link);
            }
            out["decode"] = {{"step_us", step_us},
                             {"layer_us", layer_us(device_only(decode)) / steps},
                             {"floor_us", floor_us},
                             {"ratio", ratio},
                             {"target", kDecodeTarget},
                             {"tokens_per_s", batch / (step_us / 1e6)},
                             {"weight_bytes_per_step", s.weight_bytes_per_step(layers, batch)},
                             {"collectives_us", step_collectives},
                             {"collective_link_us", step_links},
                             {"kernels", table_json(device_only(decode))}};
            if (linked && layers == s.layers && batch == 1) {
                std::printf("  the incumbent's published figure for this model: ~%.0f ms per token at batch 1; ours "
                            "%.1f ms (%.1fx faster)\n",
                            kIncumbentMsPerToken, step_us / 1e3 / batch, kIncumbentMsPerToken / (step_us / 1e3 / batch));
            }
            if (timing_only) {
                std::printf("  not simulated (timing only): the logits' copy to the host, %.1f KB per step = %.2f us at "
                            "the host link's %.0f GB/s, and the host argmax\n",
                            2.0 * s.vocab * batch / 1e3, 2.0 * s.vocab * batch / (m.host_link_gbps * 1e3), m.host_link_gbps);
            }
            if (!trace_path.empty()) {
                const std::vector<OpRecord> last = rec.of_phase("decode " + std::to_string(steps - 1));
                write_text_file(trace_path, chrome_trace(last, "llm " + s.name + " decode step " + std::to_string(steps - 1)));
                std::printf("  Chrome trace of the last decode step: %s (%zu events)\n", trace_path.c_str(), last.size());
            }
        }
        if (!timing_only) {
            std::printf("\nhost-side argmax: %.1f us of host CPU (measured, not simulated)\n", d.host_argmax_us());
            std::printf("greedy tokens: after the prompt %d", dev_run.prefill_tokens[0]);
            for (const auto &step : dev_run.decoded) std::printf(" %d", step[0]);
            std::printf(" (sequence 0)\n");
        }
        std::printf("host wall time of the simulation: %.1f s\n", wall_s);
        ranks.exit_code = 0;  // every rank got here: leave the job together
        if (!json_path.empty() && rank == 0) write_text_file(json_path, out.dump(1) + "\n");
        if (!logits_path.empty() && rank == 0 && !timing_only) {
            // Every step's greedy tokens and the logits of sequence 0 over the whole vocabulary.
            nlohmann::json runs{{"tp", tp}, {"prefill_tokens", dev_run.prefill_tokens}, {"decoded", dev_run.decoded}};
            nlohmann::json all = nlohmann::json::array();
            for (const Tensor &l : dev_run.logits) {
                std::vector<float> v(s.vocab_total);
                for (int i = 0; i < s.vocab_total; i++) v[i] = f16_at(l, {i, 0});
                all.push_back(v);
            }
            runs["logits"] = all;
            write_text_file(logits_path, runs.dump() + "\n");
        }
        if (check) {
            const bool ok = check_against_host(dev_run, host_run);
            std::printf("llm: %s\n", ok ? "PASS" : "FAIL");
            return ok ? 0 : 1;
        }
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "llm: %s\n", e.what());
        return 1;
    }
}
