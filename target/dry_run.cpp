// The compile-time dry run of an emitted program (dry_run.h).
#include "dry_run.h"

#include <string>
#include <vector>

#include "spyre/layout.h"
#include "spyre/simulator.h"
#include "spyre_lowering.h"

namespace spyre {
namespace compiler {

void dry_run_program(const Program &program, const MachineDescription &m) {
    std::vector<ArgumentBinding> bindings;
    for (const ProgramArgument &a : program.args) {
        ArgumentBinding b;
        b.bytes = layout_addressing(a.shape, a.layout, m.stick_bytes).total_bytes;  // no data: timing only
        bindings.push_back(b);
    }
    // Scalar parameters only feed SFU values, never addresses or control.
    const std::vector<double> params(program.params.size(), 0.0);
    SimulationOptions options;
    options.functional = false;
    try {
        simulate_program(program, m, bindings, params, options);
    } catch (const SimulationError &e) {
        throw CompileError("Spyre: kernel '" + program.kernel_name +
                           "': the program this schedule compiles to breaks a hardware rule when it runs: " +
                           std::string(e.what()) +
                           "; the backend should have refused this schedule (please report it with the generator's "
                           "parameters); a different tile size or core count avoids it");
    } catch (const Error &e) {
        throw CompileError("Spyre: kernel '" + program.kernel_name + "': internal error: the dry run of its program failed: " +
                           std::string(e.what()));
    }
}

}  // namespace compiler
}  // namespace spyre
