// spyre_halide.DeviceTensor (see device_tensor.h).
#include "device_tensor.h"

#include <limits>
#include <sstream>

#include "spyre/spyre_runtime.h"

namespace spyre_python {

void check_runtime(int code, const std::string &what) {
    if (code == 0) return;
    std::string message = spyre_last_error();
    if (message.empty()) message = "error code " + std::to_string(code);
    throw Error(what + ": " + message);
}

halide_type_t halide_type_of_dtype(at::ScalarType dtype, const std::string &what) {
    switch (dtype) {
    case at::kHalf: return halide_type_t(halide_type_float, 16);
    case at::kFloat: return halide_type_t(halide_type_float, 32);
    case at::kChar: return halide_type_t(halide_type_int, 8);
    case at::kInt: return halide_type_t(halide_type_int, 32);
    default:
        throw Error(what + ": dtype " + dtype_name(dtype) +
                    " is not a Spyre device type (float16, float32, int8, int32)");
    }
}

at::ScalarType dtype_of_halide_type(halide_type_t type) {
    if (type.code == halide_type_float && type.bits == 16) return at::kHalf;
    if (type.code == halide_type_float && type.bits == 32) return at::kFloat;
    if (type.code == halide_type_int && type.bits == 8) return at::kChar;
    if (type.code == halide_type_int && type.bits == 32) return at::kInt;
    throw Error("a device tensor of an unsupported Halide type");
}

namespace {

// torch sizes (outermost first) -> Halide extents (innermost first), checked to fit an int.
std::vector<int> halide_extents(const std::vector<int64_t> &shape, const std::string &what) {
    if (shape.empty()) throw Error(what + ": a device tensor needs at least one dimension (got a scalar)");
    if (shape.size() > SPYRE_MAX_DIMENSIONS) {
        throw Error(what + ": " + std::to_string(shape.size()) + " dimensions; the device takes at most " +
                    std::to_string(SPYRE_MAX_DIMENSIONS));
    }
    std::vector<int> extents;
    for (auto it = shape.rbegin(); it != shape.rend(); ++it) {
        if (*it < 1 || *it > std::numeric_limits<int>::max()) {
            std::ostringstream s;
            s << what << ": every extent must be between 1 and " << std::numeric_limits<int>::max() << " (got shape [";
            for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
            s << "])";
            throw Error(s.str());
        }
        extents.push_back((int)*it);
    }
    return extents;
}

void allocate(Halide::Runtime::Buffer<void> &buffer, const std::optional<spyre_device_layout> &layout,
              const std::string &what) {
    if (layout) {
        check_runtime(spyre_device_malloc_with_layout(nullptr, buffer.raw_buffer(), &*layout), what);
    } else {
        check_runtime(buffer.device_malloc(spyre_device_interface()), what);
    }
}

}  // namespace

DeviceTensor DeviceTensor::from_torch(const at::Tensor &tensor, const std::optional<spyre_device_layout> &layout) {
    const std::string what = "DeviceTensor.from_torch";
    if (!tensor.defined()) throw Error(what + ": the tensor is undefined");
    if (!tensor.device().is_cpu()) {
        throw Error(what + ": the tensor is on " + tensor.device().str() + "; move it to the CPU first");
    }
    const halide_type_t type = halide_type_of_dtype(tensor.scalar_type(), what);
    at::Tensor dense = tensor.contiguous();
    Halide::Runtime::Buffer<void> buffer(type, nullptr, halide_extents(dense.sizes().vec(), what));
    allocate(buffer, layout, what);
    halide_buffer_t *raw = buffer.raw_buffer();
    raw->host = static_cast<uint8_t *>(dense.data_ptr());
    raw->set_host_dirty(true);
    const int code = spyre_device_interface()->copy_to_device(nullptr, raw, spyre_device_interface());
    raw->host = nullptr;  // the tensor's memory is not ours to keep: the card holds the values now
    raw->set_host_dirty(false);
    check_runtime(code, what);
    return DeviceTensor(std::move(buffer), false);
}

DeviceTensor DeviceTensor::empty(const std::vector<int64_t> &shape, at::ScalarType dtype,
                                 const std::optional<spyre_device_layout> &layout) {
    const std::string what = "DeviceTensor.empty";
    Halide::Runtime::Buffer<void> buffer(halide_type_of_dtype(dtype, what), nullptr, halide_extents(shape, what));
    allocate(buffer, layout, what);
    return DeviceTensor(std::move(buffer), false);
}

at::Tensor DeviceTensor::to_torch() const {
    const int rank = buffer_.dimensions();
    std::vector<int64_t> sizes, strides;
    for (int d = rank - 1; d >= 0; --d) {
        sizes.push_back(buffer_.dim(d).extent());
        strides.push_back(buffer_.dim(d).stride());
    }
    // The view's own strides (a crop keeps its parent's; a transpose swaps them): the
    // runtime recognises the view by them. Then made contiguous for the caller.
    at::Tensor out = at::empty_strided(sizes, strides, at::TensorOptions().dtype(dtype()));
    halide_buffer_t copy = *buffer_.raw_buffer();
    copy.host = static_cast<uint8_t *>(out.data_ptr());
    copy.set_host_dirty(false);
    copy.set_device_dirty(true);
    {
        pybind11::gil_scoped_release release;
        check_runtime(spyre_device_interface()->copy_to_host(nullptr, &copy), "DeviceTensor.to_torch");
    }
    return out.contiguous();
}

std::vector<int64_t> DeviceTensor::shape() const {
    std::vector<int64_t> s;
    for (int d = buffer_.dimensions() - 1; d >= 0; --d) s.push_back(buffer_.dim(d).extent());
    return s;
}

at::ScalarType DeviceTensor::dtype() const { return dtype_of_halide_type(buffer_.type()); }

int64_t DeviceTensor::numel() const {
    int64_t n = 1;
    for (int d = 0; d < buffer_.dimensions(); ++d) n *= buffer_.dim(d).extent();
    return n;
}

spyre_device_layout DeviceTensor::layout() const {
    spyre_device_layout layout{};
    check_runtime(spyre_device_get_layout(buffer_.raw_buffer(), &layout, nullptr), "DeviceTensor.layout");
    return layout;
}

int DeviceTensor::halide_dim(int torch_dim, const char *what) const {
    const int rank = buffer_.dimensions();
    const int d = torch_dim < 0 ? torch_dim + rank : torch_dim;
    if (d < 0 || d >= rank) {
        throw Error(std::string(what) + ": dimension " + std::to_string(torch_dim) + " is out of range for a tensor of " +
                    std::to_string(rank) + " dimensions");
    }
    return rank - 1 - d;
}

DeviceTensor DeviceTensor::transpose(int dim0, int dim1) const {
    const int a = halide_dim(dim0, "DeviceTensor.transpose"), b = halide_dim(dim1, "DeviceTensor.transpose");
    return DeviceTensor(buffer_.transposed(a, b), true);
}

DeviceTensor DeviceTensor::narrow(int dim, int64_t start, int64_t length) const {
    const int d = halide_dim(dim, "DeviceTensor.narrow");
    const int64_t extent = buffer_.dim(d).extent();
    if (start < 0 || length < 1 || start + length > extent) {
        throw Error("DeviceTensor.narrow: elements [" + std::to_string(start) + ", " + std::to_string(start + length) +
                    ") of dimension " + std::to_string(dim) + " are outside its extent " + std::to_string(extent));
    }
    const int min = buffer_.dim(d).min();
    Halide::Runtime::Buffer<void> view = buffer_.cropped(d, min + (int)start, (int)length);
    if (view.raw_buffer()->device == 0) check_runtime(-1007, "DeviceTensor.narrow");
    return DeviceTensor(std::move(view), true);
}

DeviceTensor DeviceTensor::select(int dim, int64_t index) const {
    const int d = halide_dim(dim, "DeviceTensor.select");
    const int64_t extent = buffer_.dim(d).extent();
    if (buffer_.dimensions() == 1) throw Error("DeviceTensor.select: a 1-dimensional tensor has no lower-rank view");
    if (index < 0) index += extent;
    if (index < 0 || index >= extent) {
        throw Error("DeviceTensor.select: index " + std::to_string(index) + " is outside dimension " +
                    std::to_string(dim) + "'s extent " + std::to_string(extent));
    }
    Halide::Runtime::Buffer<void> view = buffer_.sliced(d, buffer_.dim(d).min() + (int)index);
    if (view.raw_buffer()->device == 0) check_runtime(-1007, "DeviceTensor.select");
    return DeviceTensor(std::move(view), true);
}

DeviceTensor DeviceTensor::reshape(const std::vector<int64_t> &shape) const {
    const std::string what = "DeviceTensor.reshape";
    std::vector<int64_t> resolved = shape;
    int64_t known = 1;
    int inferred = -1;
    for (size_t i = 0; i < resolved.size(); ++i) {
        if (resolved[i] == -1 && inferred < 0) {
            inferred = (int)i;
        } else {
            known *= resolved[i];
        }
    }
    if (inferred >= 0 && known > 0 && numel() % known == 0) resolved[inferred] = numel() / known;
    Halide::Runtime::Buffer<void> view(buffer_.type(), nullptr, halide_extents(resolved, what));
    check_runtime(spyre_device_reshape(nullptr, buffer_.raw_buffer(), view.raw_buffer()), what);
    return DeviceTensor(std::move(view), true);
}

DeviceTensor DeviceTensor::clone(const std::optional<spyre_device_layout> &layout) const {
    DeviceTensor out = empty(shape(), dtype(), layout);
    out.copy_from(*this);
    return out;
}

void DeviceTensor::copy_from(const DeviceTensor &src) {
    pybind11::gil_scoped_release release;
    check_runtime(spyre_device_copy(nullptr, src.raw(), raw()), "DeviceTensor.copy_");
}

std::string DeviceTensor::repr() const {
    std::ostringstream s;
    s << "spyre_halide.DeviceTensor(shape=[";
    const auto sh = shape();
    for (size_t i = 0; i < sh.size(); ++i) s << (i ? ", " : "") << sh[i];
    s << "], dtype=torch." << dtype_name(dtype()) << (is_view_ ? ", view" : "") << ")";
    return s.str();
}

}  // namespace spyre_python
