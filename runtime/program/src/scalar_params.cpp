// Checks and strict parsing of scalar parameter values (scalar_params.h).
#include "spyre/scalar_params.h"

#include <cerrno>
#include <cfloat>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "spyre/error.h"

namespace spyre {

namespace {

struct IntegerRange {
    long long min, max;
};

IntegerRange integer_range(DType t) {
    if (t == DType::I8) return {std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max()};
    return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
}

// The largest finite magnitude of a float type.
double float_limit(DType t) { return t == DType::F16 ? 65504.0 : (double)FLT_MAX; }

// Whole numbers in full (4294967296), others to 9 significant digits.
std::string number_text(double v) {
    char buf[48];
    if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 1e18) {
        std::snprintf(buf, sizeof buf, "%.0f", v);
    } else {
        std::snprintf(buf, sizeof buf, "%.9g", v);
    }
    return buf;
}

}  // namespace

std::string describe_scalar_param(const ScalarParam &param) {
    const std::string type = dtype_name(param.dtype);
    if (dtype_is_float(param.dtype)) {
        return param.name + " is an " + type + ": a number of magnitude at most " + number_text(float_limit(param.dtype)) +
               ", inf or nan";
    }
    const IntegerRange r = integer_range(param.dtype);
    return param.name + " is an " + type + ": a whole number in [" + std::to_string(r.min) + ", " + std::to_string(r.max) +
           "]";
}

void check_scalar_param_value(const ScalarParam &param, double value) {
    const std::string what = "parameter " + param.name + " = " + number_text(value);
    if (dtype_is_float(param.dtype)) {
        if (std::isfinite(value) && std::fabs(value) > float_limit(param.dtype)) {
            throw Error(what + " is too large; " + describe_scalar_param(param));
        }
        return;
    }
    const IntegerRange r = integer_range(param.dtype);
    if (!std::isfinite(value) || std::floor(value) != value) {
        throw Error(what + " is not a whole number; " + describe_scalar_param(param));
    }
    if (value < (double)r.min || value > (double)r.max) {
        throw Error(what + " is out of range; " + describe_scalar_param(param));
    }
}

double parse_scalar_param(const ScalarParam &param, const std::string &text) {
    auto fail = [&](const std::string &problem) -> double {
        throw Error("'" + text + "' " + problem + "; " + describe_scalar_param(param));
    };
    if (text.empty()) return fail("is empty");
    if (std::isspace((unsigned char)text[0])) return fail("starts with a space");
    const char *begin = text.c_str();
    char *end = nullptr;
    errno = 0;
    if (dtype_is_float(param.dtype)) {
        const double v = std::strtod(begin, &end);
        if (end == begin) return fail("is not a number");
        if (*end != '\0') return fail("has characters after the number: '" + std::string(end) + "'");
        if ((errno == ERANGE && std::isinf(v)) || (std::isfinite(v) && std::fabs(v) > float_limit(param.dtype))) {
            return fail("is too large");
        }
        return v;
    }
    const long long v = std::strtoll(begin, &end, 10);
    if (end == begin || *end == '.' || *end == 'e' || *end == 'E') {
        return fail("is not a whole number in decimal digits (an optional sign, then digits)");
    }
    if (*end != '\0') return fail("has characters after the number: '" + std::string(end) + "'");
    const IntegerRange r = integer_range(param.dtype);
    if (errno == ERANGE || v < r.min || v > r.max) return fail("is out of range");
    return (double)v;
}

}  // namespace spyre
