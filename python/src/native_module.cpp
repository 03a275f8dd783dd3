// spyre_halide._native: the Python bindings of libspyre_runtime that the
// spyre_halide package builds on (python/spyre_halide/__init__.py documents
// the user-facing API). Binds DeviceTensor (device_tensor.h), ProgramKernel
// (program_kernel.h), the simulated clock and statistics of the last run, the
// timing-only switch and the effective machine description. C++ errors
// become spyre_halide.Error (a RuntimeError) with the runtime's message.
#include <torch/extension.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "device_tensor.h"
#include "program_kernel.h"
#include "spyre/machine.h"
#include "spyre/spyre_runtime.h"

namespace py = pybind11;

// libspyre_runtime reports an error to halide_error when a Halide runtime is linked and
// prints it to stderr otherwise. Here every error reaches Python as an exception carrying
// spyre_last_error(), so the report is dropped rather than printed twice (or printed for
// an error the package handles, such as a reshape it retries as a copy).
extern "C" __attribute__((visibility("default"))) void halide_error(void *, const char *) {}
using spyre_python::DeviceTensor;
using spyre_python::Error;
using spyre_python::ProgramKernel;

namespace {

bool g_machine_in_use = false;  // set once anything here read the process's machine description

void machine_used() { g_machine_in_use = true; }

// Python dtypes arrive as torch.dtype objects; their str() is "torch.float16".
at::ScalarType dtype_from_python(const py::object &dtype) {
    const std::string text = py::str(dtype);
    if (text == "torch.float16" || text == "float16") return at::kHalf;
    if (text == "torch.float32" || text == "float32") return at::kFloat;
    if (text == "torch.int8" || text == "int8") return at::kChar;
    if (text == "torch.int32" || text == "int32") return at::kInt;
    throw Error("dtype " + text + " is not a Spyre device type (torch.float16, torch.float32, torch.int8, torch.int32)");
}

py::object torch_dtype(at::ScalarType dtype) {
    return py::module_::import("torch").attr(spyre_python::dtype_name(dtype).c_str());
}

// Layouts cross to Python as dicts in Halide's dimension order (0 innermost):
// {"stick_dim": s, "order": [outermost .. innermost], "padded": [per dim], "bytes": n}.
py::dict layout_to_dict(const spyre_device_layout &l) {
    py::dict d;
    py::list order, padded;
    for (int i = 0; i < l.dimensions; ++i) {
        order.append(l.order[i]);
        padded.append(l.padded[i]);
    }
    d["stick_dim"] = l.stick_dim;
    d["order"] = order;
    d["padded"] = padded;
    d["bytes"] = l.bytes;
    return d;
}

std::optional<spyre_device_layout> layout_from_dict(const py::object &o) {
    if (o.is_none()) return std::nullopt;
    py::dict d = o.cast<py::dict>();
    spyre_device_layout l{};
    auto order = d["order"].cast<std::vector<int32_t>>();
    auto padded = d["padded"].cast<std::vector<int64_t>>();
    if (order.size() != padded.size() || order.empty() || order.size() > SPYRE_MAX_DIMENSIONS) {
        throw Error("a layout needs 'order' and 'padded' lists of the same length (1.." +
                    std::to_string(SPYRE_MAX_DIMENSIONS) + ")");
    }
    l.dimensions = (int32_t)order.size();
    l.stick_dim = d["stick_dim"].cast<int32_t>();
    for (size_t i = 0; i < order.size(); ++i) {
        l.order[i] = order[i];
        l.padded[i] = padded[i];
    }
    return l;
}

py::object stats_to_dict(const spyre_kernel_stats &s) {
    py::dict d;
    d["kernel"] = std::string(s.kernel);
    d["calls"] = s.calls;
    d["cycles"] = s.cycles;
    d["simulated_us"] = s.simulated_us;
    d["bound_us"] = s.roofline_bound_us;
    d["of_bound"] = s.simulated_us > 0 ? s.roofline_bound_us / s.simulated_us : 0.0;
    d["bottleneck"] = std::string(s.bottleneck);
    d["macs"] = s.macs;
    d["dram_read_bytes"] = s.dram_read_bytes;
    d["dram_write_bytes"] = s.dram_write_bytes;
    d["pt_utilization"] = s.pt_utilization;
    d["pt_sustained_utilization"] = s.pt_sustained_utilization;
    return d;
}

py::dict kernel_argument_to_dict(const spyre_python::KernelArgument &a) {
    py::dict d;
    d["name"] = a.name;
    d["dtype"] = torch_dtype(a.dtype);
    d["shape"] = py::tuple(py::cast(a.shape));
    d["layout"] = layout_to_dict(a.layout);
    return d;
}

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "spyre_halide's bindings of the Spyre runtime (use the spyre_halide package)";
    py::register_exception<Error>(m, "Error", PyExc_RuntimeError);

    py::class_<DeviceTensor>(m, "DeviceTensor",
                             "A tensor whose data stays in the simulated Spyre card's memory between kernel calls.")
        .def_static(
            "from_torch",
            [](const at::Tensor &t, const py::object &layout) {
                machine_used();
                return DeviceTensor::from_torch(t, layout_from_dict(layout));
            },
            py::arg("tensor"), py::arg("layout") = py::none(),
            "Copies a CPU tensor to the card (charged as host->device).")
        .def_static(
            "empty",
            [](const std::vector<int64_t> &shape, const py::object &dtype, const py::object &layout) {
                machine_used();
                return DeviceTensor::empty(shape, dtype_from_python(dtype), layout_from_dict(layout));
            },
            py::arg("shape"), py::arg("dtype"), py::arg("layout") = py::none(),
            "An uninitialized tensor on the card.")
        .def("to_torch", &DeviceTensor::to_torch, "Copies the values back to a new CPU tensor (charged as device->host).")
        .def_property_readonly("shape", [](const DeviceTensor &t) { return py::tuple(py::cast(t.shape())); })
        .def_property_readonly("dtype", [](const DeviceTensor &t) { return torch_dtype(t.dtype()); })
        .def("dim", &DeviceTensor::dim)
        .def("numel", &DeviceTensor::numel)
        .def("size", [](const DeviceTensor &t) { return py::tuple(py::cast(t.shape())); })
        .def_property_readonly("is_view", &DeviceTensor::is_view)
        .def("layout", [](const DeviceTensor &t) { return layout_to_dict(t.layout()); },
             "The allocation's device layout, in Halide dimension order (0 innermost).")
        .def("transpose", &DeviceTensor::transpose, py::arg("dim0"), py::arg("dim1"))
        .def("narrow", &DeviceTensor::narrow, py::arg("dim"), py::arg("start"), py::arg("length"))
        .def("select", &DeviceTensor::select, py::arg("dim"), py::arg("index"))
        .def("reshape", &DeviceTensor::reshape, py::arg("shape"))
        .def("view", &DeviceTensor::reshape, py::arg("shape"))
        .def(
            "clone", [](const DeviceTensor &t, const py::object &layout) { return t.clone(layout_from_dict(layout)); },
            py::arg("layout") = py::none(), "A copy on the card (a device-to-device DMA).")
        .def(
            "copy_",
            [](DeviceTensor &t, const DeviceTensor &src) {
                t.copy_from(src);
                return t;
            },
            py::arg("src"), "Copies src's values into this tensor on the card.")
        .def("__repr__", &DeviceTensor::repr);

    py::class_<ProgramKernel>(m, "Program", "A compiled Spyre program (a .spyre file) that runs on the simulated card.")
        .def(py::init([](const std::string &path) {
                 machine_used();
                 return ProgramKernel(path);
             }),
             py::arg("path"))
        .def_property_readonly("name", &ProgramKernel::name)
        .def_property_readonly("path", &ProgramKernel::path)
        .def_property_readonly("inputs",
                               [](const ProgramKernel &k) {
                                   py::list l;
                                   for (const auto &a : k.inputs()) l.append(kernel_argument_to_dict(a));
                                   return l;
                               })
        .def_property_readonly("outputs",
                               [](const ProgramKernel &k) {
                                   py::list l;
                                   for (const auto &a : k.outputs()) l.append(kernel_argument_to_dict(a));
                                   return l;
                               })
        .def_property_readonly("params", &ProgramKernel::params)
        .def("run", &ProgramKernel::run, py::arg("inputs"), py::arg("params") = std::vector<double>{},
             py::arg("outputs") = std::nullopt, "Runs the program on DeviceTensors; returns the outputs.");

    m.def(
        "last_run",
        []() -> py::object {
            spyre_kernel_stats s{};
            if (spyre_get_last_run_stats(&s) != 0) return py::none();
            return stats_to_dict(s);
        },
        "Figures of the most recent kernel run in this process, or None.");
    m.def(
        "kernel_stats",
        [](const std::string &kernel) -> py::object {
            spyre_kernel_stats s{};
            if (spyre_get_kernel_stats(kernel.c_str(), &s) != 0) return py::none();
            return stats_to_dict(s);
        },
        py::arg("kernel"), "Every run of the named kernel (or 'host->device', 'device->host', ...), summed.");
    m.def(
        "profile",
        []() {
            char *text = nullptr;
            size_t size = 0;
            FILE *f = open_memstream(&text, &size);
            if (!f) throw Error("profile: cannot open a memory stream");
            spyre_print_profile(f);
            fclose(f);
            std::string out(text ? text : "", size);
            free(text);
            return out;
        },
        "The per-kernel profile table, as SPYRE_PROFILE=1 prints it at exit.");
    m.def("set_timing_only", [](bool on) { return spyre_set_timing_only(on ? 1 : 0) != 0; }, py::arg("enabled"));
    m.def("timing_only", []() { return spyre_timing_only() != 0; });
    m.def("machine_in_use", []() { return g_machine_in_use; },
          "Whether this process has used its machine description (it is then fixed).");
    m.def(
        "machine_parameters",
        []() {
            machine_used();
            py::dict d;
            for (const spyre::MachineParameterInfo &p : spyre::default_machine().parameters) {
                py::dict e;
                e["value"] = p.value;
                e["unit"] = p.unit;
                e["provenance"] = p.provenance;
                e["source"] = p.source;
                d[p.name.c_str()] = e;
            }
            return d;
        },
        "The effective machine description of this process (built-in, SPYRE_MACHINE, SPYRE_MACHINE_SET).");
}
