// A generator built against the installed compiler (SpyreHalide::
// spyre_generator_main): out(x) = 2 * in(x), compiled for the host. Checks
// that the installed libraries, headers and generator main link and run.
#include "Halide.h"
#include "spyre_target.h"

namespace {

class Scale : public Halide::Generator<Scale> {
public:
    Input<Buffer<float, 1>> in{"in"};
    Output<Buffer<float, 1>> out{"out"};

    void generate() {
        _halide_user_assert(!spyre::is_spyre()) << "scale is a host-only generator";
        out(x) = 2.0f * in(x);
    }

private:
    Halide::Var x{"x"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Scale, scale)
