// spyre_program_argument_layout (spyre_device.h): the device layout a program
// file expects for one of its arguments, read with the program decoder.
#include <string>

#include "device_state.h"
#include "spyre/program_format.h"
#include "spyre/spyre_device.h"

extern "C" int spyre_program_argument_layout(const char *program_path, const char *arg_name,
                                             spyre_device_layout *layout) {
    using namespace spyre;
    if (!program_path || !arg_name || !layout) {
        set_last_error("spyre_program_argument_layout: null argument");
        return spyre_error_bad_argument;
    }
    Program p;
    try {
        p = decode_program(read_file_bytes(program_path));
    } catch (const std::exception &e) {
        set_last_error(std::string("spyre_program_argument_layout: ") + program_path + ": " + e.what());
        return spyre_error_bad_program;
    }
    for (const ProgramArgument &a : p.args) {
        if (a.name != arg_name) continue;
        *layout = spyre_device_layout{};
        layout->dimensions = (int32_t)a.layout.order.size();
        layout->stick_dim = a.layout.stick_dim;
        for (int d = 0; d < layout->dimensions; d++) {
            layout->order[d] = a.layout.order[d];
            layout->padded[d] = a.layout.padded[d];
        }
        return spyre_success;
    }
    set_last_error(std::string("spyre_program_argument_layout: ") + program_path + " has no argument '" + arg_name +
                   "'");
    return spyre_error_bad_argument;
}
