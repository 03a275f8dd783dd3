// main() of every spyre-halide generator executable (gen_bmm, ...).
//
// Halide 14's Target cannot name a new device, and GenGen's own main rejects
// `target=spyre`. This driver rewrites the target before GenGen sees it:
//   - `-target=X`, `-target X` and `target=X` are all accepted; X may be a
//     comma-separated list of targets (Halide's multi-target form).
//   - an entry with the token `spyre` (`spyre`, `host-spyre`,
//     `x86-64-linux-spyre-no_runtime`, ...) loses the token; a bare `spyre` or
//     `host-spyre` becomes the fixed baseline `x86-64-linux` (never `host`, so
//     the host-side stub does not depend on the build machine's ISA) with the
//     other features kept. The run schedules into one ScheduleContext, for
//     Spyre or the host and the machine of SPYRE_MACHINE / SPYRE_MACHINE_SET.
//   - one process compiles a pipeline for one kind of target: mixing spyre
//     and non-spyre entries is an error, except when only a runtime is
//     generated (-r without -g), which CMake's shared runtimes do.
// -o, -f and -g are recorded in the context (spyre::driver_options()) for the lowering
// pass; every argument is then handed unchanged to
// Halide::Internal::generate_filter_main, except -o DIR, which becomes a staging directory
// whose files are published into DIR when the run succeeds (staged_outputs.h). A failing generator (a bad
// parameter, a schedule the backend refuses) prints one line
// "<program>: error: <message>" and exits with status 1.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "Halide.h"
#include "schedule_context.h"
#include "spyre_target.h"
#include "staged_outputs.h"

namespace {

const char *const kSpyreToken = "spyre";
const char *const kSpyreBaseline = "x86-64-linux";
// Publishing renames a few files; a lock held longer than this is a stopped run, reported as an error.
const double kPublishLockWaitSeconds = 120;

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> parts;
    std::stringstream stream(s);
    for (std::string part; std::getline(stream, part, sep);) parts.push_back(part);
    return parts;
}

std::string join(const std::vector<std::string> &parts, char sep) {
    std::string out;
    for (const auto &p : parts) out += (out.empty() ? "" : std::string(1, sep)) + p;
    return out;
}

bool is_arch_token(const std::string &t) {
    for (const char *arch : {"x86", "arm", "powerpc", "hexagon", "wasm", "riscv"}) {
        if (t == arch) return true;
    }
    return false;
}

// Rewrites one target entry; sets *is_spyre_entry when it named spyre.
std::string rewrite_target_entry(const std::string &entry, bool *is_spyre_entry) {
    std::vector<std::string> kept;
    *is_spyre_entry = false;
    for (const auto &token : split(entry, '-')) {
        if (token == kSpyreToken) {
            *is_spyre_entry = true;
        } else {
            kept.push_back(token);
        }
    }
    if (!*is_spyre_entry) {
        // `host` (alone or with features): the host reference target, which is the
        // detected host minus features this Halide version mis-detects (see spyre_target.h).
        if (!kept.empty() && kept.front() == "host") {
            kept.erase(kept.begin());
            std::string t = spyre::host_reference_target().to_string();
            for (const auto &k : kept) t += "-" + k;
            return t;
        }
        return entry;
    }
    if (!kept.empty() && kept.front() == "host") kept.erase(kept.begin());
    if (kept.empty() || !is_arch_token(kept.front())) kept.insert(kept.begin(), kSpyreBaseline);
    return join(kept, '-');
}

std::string strip_namespaces(const std::string &function_name) {
    const size_t pos = function_name.rfind("::");
    return pos == std::string::npos ? function_name : function_name.substr(pos + 2);
}

// The generator parameters of this run as given ("name=value"), to name the one a
// message is about.
std::vector<std::string> g_parameter_args;

// Halide's "Unable to parse: VALUE" (a GeneratorParam given a value its type cannot
// hold, e.g. an int of 2^31) names neither the parameter nor the type: name the
// parameters given that value (every one of them, when several share it) and the types' forms.
std::string name_the_parameter(const std::string &message) {
    const std::string marker = "Unable to parse: ";
    if (message.rfind(marker, 0) != 0) return message;
    const std::string value = message.substr(marker.size());
    std::string named;
    for (const std::string &arg : g_parameter_args) {
        const size_t eq = arg.find('=');
        if (eq != std::string::npos && arg.substr(eq + 1) == value) named += (named.empty() ? "" : ", ") + arg;
    }
    if (named.empty()) return message;
    return named + ": the value is not of the parameter's type (an integer parameter takes a whole number from "
                   "-2147483648 to 2147483647, a float a decimal number, a bool true or false)";
}

// A generator's error message on one line: Halide's "Error: " prefix and
// trailing newlines dropped, inner newlines joined with "; ", an unparsable value named.
std::string one_line(std::string message) {
    for (const char *prefix : {"Unhandled exception: ", "Error: "}) {
        if (message.rfind(prefix, 0) == 0) message.erase(0, std::string(prefix).size());
    }
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    for (size_t at; (at = message.find('\n')) != std::string::npos;) message.replace(at, 1, "; ");
    return name_the_parameter(message);
}

// GenGen's error output with each "Unhandled exception: ..." turned into
// "<program>: error: ..."; anything else (usage text) is kept as it is.
std::string as_driver_error(const std::string &program, const std::string &gengen_output) {
    const std::string marker = "Unhandled exception: ";
    const size_t at = gengen_output.find(marker);
    if (at == std::string::npos) return gengen_output;
    return gengen_output.substr(0, at) + program + ": error: " + one_line(gengen_output.substr(at)) + "\n";
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> args;
    args.push_back(argv[0]);
    spyre::DriverOptions options;
    std::string target_value;
    bool has_target = false, has_generator = false, has_timeout = false, for_spyre = false;
    int output_dir_arg = -1;  // where -o's value is in args

    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a.rfind("-target=", 0) == 0 || a.rfind("target=", 0) == 0) {
            target_value = a.substr(a.find('=') + 1);
            has_target = true;
            continue;  // re-added below, rewritten
        }
        if (a == "-target" && i + 1 < argc) {
            target_value = argv[++i];
            has_target = true;
            continue;
        }
        if (a.size() == 2 && a[0] == '-' && i + 1 < argc) {
            // GenGen flags all take one value: -g gen, -o dir, -e list, -f name, ...
            const std::string value = argv[i + 1];
            if (a == "-o") {
                options.output_dir = value;
                output_dir_arg = (int)args.size() + 1;  // the index value gets below
            }
            if (a == "-f") options.function_name = strip_namespaces(value);
            if (a == "-t") has_timeout = true;
            if (a == "-g") {
                options.generator_name = value;
                has_generator = true;
            }
            args.push_back(a);
            args.push_back(value);
            i++;
            continue;
        }
        if (a.find('=') != std::string::npos) g_parameter_args.push_back(a);
        args.push_back(a);
    }

    // GenGen's watchdog (-t, 900 s by default) can miss the notice that the generator finished
    // (Halide 14 notifies without its mutex): a run that fails fast then waits out the whole
    // timeout. Without -t the watchdog is off; a user's -t is passed on as given.
    if (!has_timeout) {
        args.push_back("-t");
        args.push_back("0");
    }

    if (has_target) {
        std::vector<std::string> entries;
        int spyre_entries = 0, host_entries = 0;
        for (const auto &entry : split(target_value, ',')) {
            bool spyre_entry = false;
            entries.push_back(rewrite_target_entry(entry, &spyre_entry));
            (spyre_entry ? spyre_entries : host_entries)++;
        }
        if (spyre_entries > 0 && host_entries > 0 && has_generator) {
            std::cerr << argv[0] << ": error: target=" << target_value
                      << " mixes spyre and non-spyre targets; one generator run compiles for one kind of target\n";
            return 1;
        }
        for_spyre = spyre_entries > 0 && host_entries == 0;
        args.push_back("target=" + join(entries, ','));
    }

    if (options.function_name.empty()) options.function_name = options.generator_name;
    if (!options.output_dir.empty() && !std::filesystem::is_directory(options.output_dir)) {
        std::error_code ec;
        const bool exists = std::filesystem::exists(options.output_dir, ec);
        // A missing path under a regular file cannot be created: say which file is in the way.
        std::filesystem::path up = std::filesystem::path(options.output_dir).parent_path();
        while (!up.empty() && !std::filesystem::exists(up, ec)) up = up.parent_path();
        const bool under_a_file = !exists && !up.empty() && !std::filesystem::is_directory(up, ec);
        std::cerr << argv[0] << ": error: the output directory '-o " << options.output_dir
                  << (exists         ? "' is not a directory\n"
                      : under_a_file ? "' cannot be created: '" + up.string() + "' is a file, not a directory\n"
                                     : std::string("' does not exist (create it first)\n"));
        return 1;
    }
    if (!options.output_dir.empty() && access(options.output_dir.c_str(), W_OK) != 0) {
        std::cerr << argv[0] << ": error: the output directory '-o " << options.output_dir
                  << "' is not writable: " << std::strerror(errno) << "\n";
        return 1;
    }
    // This run's schedule context: the target kind and the machine (SPYRE_MACHINE, SPYRE_MACHINE_SET).
    std::shared_ptr<spyre::ScheduleContext> context;
    try {
        context = spyre::ScheduleContext::make(for_spyre, spyre::default_machine());
    } catch (const std::exception &e) {
        std::cerr << argv[0] << ": error: " << one_line(e.what()) << "\n";
        return 1;
    }
    spyre::ScheduleContext::Use use_context(context);
    spyre::set_driver_options(options);
    // Every output is written into a private staging directory beside the outputs and published
    // (renamed into -o DIR) only when the run succeeds: a failed run leaves DIR as it was, and two
    // runs writing the same -o DIR -f NAME (a misconfigured parallel build) each publish a whole set.
    spyre::StagedOutputs staged;
    if (output_dir_arg >= 0 && !options.function_name.empty()) {
        const std::string error = staged.stage(options.output_dir, options.function_name);
        if (!error.empty()) {
            std::cerr << argv[0] << ": error: " << error << "\n";
            return 1;
        }
        args[output_dir_arg] = staged.staging_dir();
        spyre::DriverOptions staged_options = options;
        staged_options.output_dir = staged.staging_dir();
        spyre::set_driver_options(staged_options);
    }

    std::vector<char *> cargs;
    for (auto &a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    // GenGen catches a generator's exception itself, prints "Unhandled
    // exception: Error: <message>" and returns -1 (exit status 255); its
    // messages are collected here and a failure becomes one clear line, exit 1.
    std::ostringstream gengen_errors;
    int status;
    try {
        status = Halide::Internal::generate_filter_main((int)args.size(), cargs.data(), gengen_errors);
    } catch (const std::exception &e) {
        // Halide::CompileError, spyre::CompileError, ...: one clear line, exit 1.
        std::cerr << gengen_errors.str() << argv[0] << ": error: " << one_line(e.what()) << "\n";
        return 1;
    }
    if (status == 0) {
        std::cerr << gengen_errors.str();
        if (!staged.staging_dir().empty()) {
            const std::string error = staged.publish(kPublishLockWaitSeconds);
            if (!error.empty()) {
                std::cerr << argv[0] << ": error: " << error << "\n";
                return 1;
            }
        }
        return 0;
    }
    std::cerr << as_driver_error(argv[0], gengen_errors.str());
    return 1;
}
