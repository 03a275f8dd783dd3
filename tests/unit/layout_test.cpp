// Tests of the device tensor layout (runtime/program/include/spyre/layout.h): the
// stick-tiled addressing is checked against an independent transcription of
// the definition in layout.h, and host <-> device conversion round trips over
// every dtype, ragged extents, ranks 1-4, every stick dimension, several
// dimension orders, extra padding and unusual host strides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "spyre/dtype.h"
#include "spyre/error.h"
#include "spyre/layout.h"

namespace spyre {
namespace {

constexpr int64_t kStick = 128;
const DType kAllDTypes[] = {DType::F32, DType::F16, DType::I32, DType::I8};

// The layout definition from layout.h, written out directly: the device bytes
// are a row-major array over `order` (outermost first) of
// (d == s ? x[d] / lanes : x[d]) with extents (d == s ? padded[d] / lanes :
// padded[d]), each entry one stick, the lane x[s] % lanes innermost.
int64_t reference_offset(const TensorShape &shape, const DeviceLayout &l, const std::vector<int64_t> &x) {
    const int64_t eb = dtype_bytes(shape.dtype);
    const int64_t lanes = kStick / eb;
    int64_t stick_index = 0;
    for (int d : l.order) {
        const int64_t extent = d == l.stick_dim ? l.padded[d] / lanes : l.padded[d];
        const int64_t coord = d == l.stick_dim ? x[d] / lanes : x[d];
        stick_index = stick_index * extent + coord;
    }
    return stick_index * kStick + (x[l.stick_dim] % lanes) * eb;
}

int64_t reference_total_bytes(const TensorShape &shape, const DeviceLayout &l) {
    const int64_t lanes = kStick / dtype_bytes(shape.dtype);
    int64_t sticks = 1;
    for (size_t d = 0; d < l.padded.size(); d++) sticks *= (int)d == l.stick_dim ? l.padded[d] / lanes : l.padded[d];
    return sticks * kStick;
}

// Calls fn(x) for every coordinate vector inside `extent`.
template <typename Fn>
void for_each_coord(const std::vector<int64_t> &extent, Fn fn) {
    std::vector<int64_t> x(extent.size(), 0);
    while (true) {
        fn(x);
        size_t d = 0;
        for (; d < extent.size(); d++) {
            if (++x[d] < extent[d]) break;
            x[d] = 0;
        }
        if (d == extent.size()) return;
    }
}

int64_t linear_index(const std::vector<int64_t> &extent, const std::vector<int64_t> &x) {
    int64_t i = 0;
    for (size_t d = extent.size(); d-- > 0;) i = i * extent[d] + x[d];
    return i;
}

// A distinctive, never-all-zero byte pattern for element i: no byte is zero,
// and neighbouring elements differ, so a misplaced or missing copy shows.
void element_pattern(int64_t i, int64_t eb, uint8_t *out) {
    for (int64_t b = 0; b < eb; b++) out[b] = static_cast<uint8_t>(1 + (i * 37 + b * 101 + (i >> 8) * 13) % 255);
}

// How a host buffer lays out its elements.
struct HostFormat {
    std::string name;
    std::vector<int> memory_order;  // innermost first; empty = 0,1,2,... (dense, dim 0 innermost)
    int64_t row_padding = 0;        // extra elements after every run of the innermost memory dimension
    int negative_dim = -1;          // this dimension is stored with a negative stride
};

// Host storage plus a view of it in the given format.
struct HostBuffer {
    std::vector<uint8_t> storage;
    HostView view;

    HostBuffer(const std::vector<int64_t> &extent, int64_t eb, const HostFormat &fmt) {
        const int rank = (int)extent.size();
        std::vector<int> order = fmt.memory_order;
        if (order.empty()) {
            order.resize(rank);
            std::iota(order.begin(), order.end(), 0);
        }
        view.extent = extent;
        view.stride_elems.assign(rank, 0);
        int64_t stride = 1;
        for (int i = 0; i < rank; i++) {
            const int d = order[i];
            view.stride_elems[d] = stride;
            stride *= extent[d] + (i == 0 ? fmt.row_padding : 0);
        }
        storage.assign(static_cast<size_t>(stride * eb), 0xEE);
        int64_t base_elems = 0;
        if (fmt.negative_dim >= 0 && fmt.negative_dim < rank) {
            const int d = fmt.negative_dim;
            base_elems = (extent[d] - 1) * view.stride_elems[d];
            view.stride_elems[d] = -view.stride_elems[d];
        }
        view.base = storage.data() + base_elems * eb;
    }

    uint8_t *at(const std::vector<int64_t> &x, int64_t eb) {
        int64_t off = 0;
        for (size_t d = 0; d < x.size(); d++) off += x[d] * view.stride_elems[d];
        return static_cast<uint8_t *>(view.base) + off * eb;
    }
};

const HostFormat kDense{"dense", {}, 0, -1};

std::vector<HostFormat> host_formats(int rank) {
    std::vector<HostFormat> f = {kDense, HostFormat{"padded rows", {}, 3, -1}};
    if (rank >= 2) {
        std::vector<int> reversed(rank);
        std::iota(reversed.rbegin(), reversed.rend(), 0);
        f.push_back(HostFormat{"transposed", reversed, 0, -1});
        f.push_back(HostFormat{"transposed, padded", reversed, 5, 0});
    }
    f.push_back(HostFormat{"negative stride dim 0", {}, 0, 0});
    f.push_back(HostFormat{"negative stride outermost", {}, 1, rank - 1});
    return f;
}

std::string describe(const TensorShape &shape, const DeviceLayout &l) {
    std::string s = std::string(dtype_name(shape.dtype)) + " extent=[";
    for (size_t i = 0; i < shape.extent.size(); i++) s += (i ? "," : "") + std::to_string(shape.extent[i]);
    return s + "] " + layout_to_string(l);
}

// Packs a host buffer of format `in`, checks every element and every padding
// byte of the device image against the definition, unpacks into format `out`
// and checks every element again.
void check_round_trip(const TensorShape &shape, const DeviceLayout &l, const HostFormat &in, const HostFormat &out) {
    SCOPED_TRACE(describe(shape, l) + " host in: " + in.name + ", host out: " + out.name);
    ASSERT_NO_THROW(check_layout(shape, l, kStick, "test"));
    const int64_t eb = dtype_bytes(shape.dtype);
    const LayoutAddressing a = layout_addressing(shape, l, kStick);
    ASSERT_EQ(a.total_bytes, reference_total_bytes(shape, l));

    HostBuffer src(shape.extent, eb, in);
    for_each_coord(shape.extent, [&](const std::vector<int64_t> &x) {
        element_pattern(linear_index(shape.extent, x), eb, src.at(x, eb));
    });

    std::vector<uint8_t> device(static_cast<size_t>(a.total_bytes), 0xAB);  // garbage pack must overwrite
    pack_to_device(shape, l, kStick, src.view, device.data());

    std::vector<bool> holds_element(device.size(), false);
    int bad = 0;
    uint8_t expect[4];
    for_each_coord(shape.extent, [&](const std::vector<int64_t> &x) {
        const int64_t off = reference_offset(shape, l, x);
        if (bad < 5 && device_offset(a, l, x.data()) != off) {
            ADD_FAILURE() << "device_offset disagrees with the layout definition at linear index "
                          << linear_index(shape.extent, x);
            bad++;
        }
        element_pattern(linear_index(shape.extent, x), eb, expect);
        if (bad < 5 && (off < 0 || off + eb > a.total_bytes || std::memcmp(device.data() + off, expect, eb) != 0)) {
            ADD_FAILURE() << "pack put the wrong bytes at device offset " << off << " (linear index "
                          << linear_index(shape.extent, x) << ")";
            bad++;
            return;
        }
        for (int64_t b = 0; b < eb; b++) holds_element[off + b] = true;
    });
    ASSERT_EQ(bad, 0);
    for (size_t i = 0; i < device.size(); i++) {
        if (!holds_element[i] && device[i] != 0) {
            FAIL() << "padding byte at device offset " << i << " is " << int(device[i]) << ", not zero";
        }
    }

    HostBuffer dst(shape.extent, eb, out);
    const std::vector<uint8_t> untouched = dst.storage;
    unpack_from_device(shape, l, kStick, device.data(), dst.view);
    for_each_coord(shape.extent, [&](const std::vector<int64_t> &x) {
        element_pattern(linear_index(shape.extent, x), eb, expect);
        if (bad < 5 && std::memcmp(dst.at(x, eb), expect, eb) != 0) {
            ADD_FAILURE() << "unpack lost the element at linear index " << linear_index(shape.extent, x);
            bad++;
        }
    });
    // Host row padding is not part of the view: unpack must not write it.
    size_t written = 0;
    for (size_t i = 0; i < dst.storage.size(); i++) written += dst.storage[i] != untouched[i];
    const int64_t elements = std::accumulate(shape.extent.begin(), shape.extent.end(), int64_t(1), std::multiplies<int64_t>());
    EXPECT_LE(written, static_cast<size_t>(elements * eb));
}

// Every permutation of 0..rank-1, outermost first.
std::vector<std::vector<int>> all_orders(int rank) {
    std::vector<int> p(rank);
    std::iota(p.begin(), p.end(), 0);
    std::vector<std::vector<int>> out;
    do out.push_back(p);
    while (std::next_permutation(p.begin(), p.end()));
    return out;
}

DeviceLayout make_layout(const TensorShape &shape, int stick_dim, const std::vector<int> &order, int64_t extra_pad,
                         int64_t extra_sticks) {
    DeviceLayout l = default_layout(shape, kStick, stick_dim);
    l.order = order;
    const int64_t lanes = kStick / dtype_bytes(shape.dtype);
    for (size_t d = 0; d < l.padded.size(); d++) {
        if ((int)d == stick_dim) {
            l.padded[d] += extra_sticks * lanes;
        } else {
            l.padded[d] += extra_pad;
        }
    }
    return l;
}

TEST(LayoutDefinition, DefaultLayoutSticksDimensionZeroAndKeepsHostOrder) {
    TensorShape shape{DType::F16, {65, 3, 2}};
    DeviceLayout l = default_layout(shape, kStick);
    EXPECT_EQ(l.stick_dim, 0);
    EXPECT_EQ(l.order, (std::vector<int>{2, 1, 0}));
    EXPECT_EQ(l.padded, (std::vector<int64_t>{128, 3, 2}));  // 65 fp16 -> 2 sticks of 64

    DeviceLayout l1 = default_layout(shape, kStick, 1);
    EXPECT_EQ(l1.stick_dim, 1);
    EXPECT_EQ(l1.padded, (std::vector<int64_t>{65, 64, 2}));  // 3 fp16 -> 1 stick
}

TEST(LayoutDefinition, StickLanesPerDType) {
    // One stick of 128 bytes: 32 x fp32/int32, 64 x fp16, 128 x int8.
    const std::pair<DType, int64_t> cases[] = {{DType::F32, 32}, {DType::I32, 32}, {DType::F16, 64}, {DType::I8, 128}};
    for (auto [dt, lanes] : cases) {
        TensorShape shape{dt, {1}};
        LayoutAddressing a = layout_addressing(shape, default_layout(shape, kStick), kStick);
        EXPECT_EQ(a.lanes, lanes) << dtype_name(dt);
        EXPECT_EQ(a.element_bytes, dtype_bytes(dt));
        EXPECT_EQ(a.total_bytes, kStick) << "one element still occupies a whole stick";
    }
}

TEST(LayoutDefinition, HandComputedOffsetsOfATransposedLayout) {
    // f32 [x=40, y=3, z=2], stick along y, order z (outer), x, y (inner):
    // y has 1 stick of 32 lanes, so the device is [z=2][x=40][1 stick].
    TensorShape shape{DType::F32, {40, 3, 2}};
    DeviceLayout l{1, {2, 0, 1}, {40, 32, 2}};
    ASSERT_NO_THROW(check_layout(shape, l, kStick, "test"));
    LayoutAddressing a = layout_addressing(shape, l, kStick);
    EXPECT_EQ(a.total_bytes, 2 * 40 * 128);
    EXPECT_EQ(a.outer_extent, (std::vector<int64_t>{40, 1, 2}));
    EXPECT_EQ(a.stride_bytes, (std::vector<int64_t>{128, 128, 128 * 40}));  // x and y both step one stick
    const int64_t x0[] = {0, 0, 0};
    const int64_t x1[] = {0, 2, 0};   // lane 2 of stick 0
    const int64_t x2[] = {5, 1, 0};   // row 5
    const int64_t x3[] = {39, 2, 1};  // last element
    EXPECT_EQ(device_offset(a, l, x0), 0);
    EXPECT_EQ(device_offset(a, l, x1), 8);
    EXPECT_EQ(device_offset(a, l, x2), 5 * 128 + 4);
    EXPECT_EQ(device_offset(a, l, x3), 1 * 40 * 128 + 39 * 128 + 8);
}

TEST(LayoutDefinition, HandComputedOffsetsAcrossSticks) {
    // i8 [300, 2], stick along 0 (3 sticks of 128 lanes), order 1 (outer), 0.
    TensorShape shape{DType::I8, {300, 2}};
    DeviceLayout l = default_layout(shape, kStick);
    LayoutAddressing a = layout_addressing(shape, l, kStick);
    EXPECT_EQ(a.total_bytes, 2 * 3 * 128);
    const int64_t x[] = {257, 1};  // stick 2, lane 1, row 1
    EXPECT_EQ(device_offset(a, l, x), (1 * 3 + 2) * 128 + 1);
}

TEST(LayoutAddressing, TotalBytesIsSticksTimesStickBytes) {
    for (DType dt : kAllDTypes) {
        const int64_t lanes = kStick / dtype_bytes(dt);
        TensorShape shape{dt, {33, 5, 7, 2}};
        for (int s = 0; s < 4; s++) {
            DeviceLayout l = make_layout(shape, s, {3, 1, 0, 2}, 2, 1);
            LayoutAddressing a = layout_addressing(shape, l, kStick);
            int64_t expected = kStick;
            for (int d = 0; d < 4; d++) expected *= d == s ? l.padded[d] / lanes : l.padded[d];
            EXPECT_EQ(a.total_bytes, expected) << describe(shape, l);
            EXPECT_EQ(a.outer_extent[s], l.padded[s] / lanes);
            // The innermost dimension of the order steps by one stick.
            EXPECT_EQ(a.stride_bytes[l.order.back()], kStick);
        }
    }
}

TEST(LayoutRoundTrip, Rank1RaggedExtentsEveryDType) {
    for (DType dt : kAllDTypes) {
        for (int64_t n : {1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 300}) {
            TensorShape shape{dt, {n}};
            DeviceLayout l = default_layout(shape, kStick);
            for (const auto &fmt : host_formats(1)) check_round_trip(shape, l, fmt, kDense);
            check_round_trip(shape, make_layout(shape, 0, {0}, 0, 2), kDense, kDense);
        }
    }
}

TEST(LayoutRoundTrip, Rank2EveryStickDimAndOrder) {
    for (DType dt : kAllDTypes) {
        for (auto extent : std::vector<std::vector<int64_t>>{{33, 3}, {1, 65}, {129, 2}, {31, 127}}) {
            TensorShape shape{dt, extent};
            for (int s = 0; s < 2; s++) {
                for (const auto &order : all_orders(2)) {
                    for (const auto &fmt : host_formats(2)) {
                        check_round_trip(shape, make_layout(shape, s, order, 0, 0), fmt, kDense);
                    }
                    check_round_trip(shape, make_layout(shape, s, order, 3, 1), kDense, host_formats(2)[2]);
                }
            }
        }
    }
}

TEST(LayoutRoundTrip, Rank3EveryStickDimAndOrder) {
    for (DType dt : kAllDTypes) {
        TensorShape shape{dt, {65, 3, 2}};
        TensorShape tall{dt, {2, 129, 3}};
        for (int s = 0; s < 3; s++) {
            for (const auto &order : all_orders(3)) {
                check_round_trip(shape, make_layout(shape, s, order, 0, 0), kDense, kDense);
                check_round_trip(shape, make_layout(shape, s, order, 2, 1), host_formats(3)[2], host_formats(3)[4]);
                check_round_trip(tall, make_layout(tall, s, order, 1, 0), host_formats(3)[3], host_formats(3)[1]);
            }
        }
    }
}

TEST(LayoutRoundTrip, Rank4SeveralOrders) {
    const std::vector<std::vector<int>> orders = {{3, 2, 1, 0}, {0, 1, 2, 3}, {2, 0, 3, 1}, {1, 3, 0, 2}, {3, 0, 1, 2}};
    for (DType dt : kAllDTypes) {
        TensorShape shape{dt, {33, 2, 3, 2}};
        for (int s = 0; s < 4; s++) {
            for (const auto &order : orders) {
                for (const auto &fmt : host_formats(4)) {
                    check_round_trip(shape, make_layout(shape, s, order, 1, s == 0 ? 1 : 0), fmt, host_formats(4)[2]);
                }
            }
        }
    }
}

TEST(LayoutRoundTrip, PaddingIsZeroedEvenWhenTheDeviceBufferHeldGarbage) {
    TensorShape shape{DType::F16, {3, 2}};
    DeviceLayout l{0, {1, 0}, {64, 4}};
    LayoutAddressing a = layout_addressing(shape, l, kStick);
    ASSERT_EQ(a.total_bytes, 4 * 128);
    std::vector<uint16_t> host = {0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600};  // 1..6 in fp16
    HostView v{host.data(), {3, 2}, {1, 3}};
    std::vector<uint8_t> device(a.total_bytes, 0xFF);
    pack_to_device(shape, l, kStick, v, device.data());
    uint16_t got[3];
    std::memcpy(got, device.data(), 6);
    EXPECT_EQ(got[0], 0x3c00);
    EXPECT_EQ(got[2], 0x4200);
    std::memcpy(got, device.data() + 128, 6);
    EXPECT_EQ(got[0], 0x4400);
    EXPECT_EQ(got[2], 0x4600);
    for (int64_t i = 0; i < a.total_bytes; i++) {
        const bool element = (i < 6) || (i >= 128 && i < 134);
        if (!element) {
            ASSERT_EQ(device[i], 0) << "byte " << i;
        }
    }
}

TEST(LayoutRoundTrip, UnpackRejectsAMismatchedHostView) {
    TensorShape shape{DType::F32, {4, 2}};
    DeviceLayout l = default_layout(shape, kStick);
    std::vector<float> host(8);
    std::vector<uint8_t> device(layout_addressing(shape, l, kStick).total_bytes);
    HostView wrong_rank{host.data(), {8}, {1}};
    EXPECT_THROW(unpack_from_device(shape, l, kStick, device.data(), wrong_rank), Error);
    HostView wrong_extent{host.data(), {4, 3}, {1, 4}};
    EXPECT_THROW(pack_to_device(shape, l, kStick, wrong_extent, device.data()), Error);
    HostView null_base{nullptr, {4, 2}, {1, 4}};
    EXPECT_THROW(pack_to_device(shape, l, kStick, null_base, device.data()), Error);
}

std::string check_layout_error(const TensorShape &shape, const DeviceLayout &l) {
    try {
        check_layout(shape, l, kStick, "tensor 'A'");
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

TEST(LayoutCheck, AcceptsTheDefaultLayoutForEveryDTypeAndStickDim) {
    for (DType dt : kAllDTypes) {
        TensorShape shape{dt, {129, 3, 1, 5}};
        for (int s = 0; s < 4; s++) EXPECT_EQ(check_layout_error(shape, default_layout(shape, kStick, s)), "");
    }
}

TEST(LayoutCheck, RejectsOrderThatIsNotAPermutation) {
    TensorShape shape{DType::F32, {32, 4, 2}};
    DeviceLayout l = default_layout(shape, kStick);
    l.order = {2, 2, 0};
    std::string msg = check_layout_error(shape, l);
    EXPECT_NE(msg.find("not a permutation"), std::string::npos) << msg;
    EXPECT_NE(msg.find("tensor 'A'"), std::string::npos) << msg;
    l.order = {2, 1, 3};
    EXPECT_NE(check_layout_error(shape, l).find("not a permutation"), std::string::npos);
    l.order = {2, 1};
    EXPECT_NE(check_layout_error(shape, l).find("one entry per dimension"), std::string::npos);
}

TEST(LayoutCheck, RejectsPaddedBelowExtent) {
    TensorShape shape{DType::F32, {32, 4, 2}};
    DeviceLayout l = default_layout(shape, kStick);
    l.padded[1] = 3;
    std::string msg = check_layout_error(shape, l);
    EXPECT_NE(msg.find("padded extent of dimension 1 is below its extent"), std::string::npos) << msg;
}

TEST(LayoutCheck, RejectsStickDimensionNotWholeSticks) {
    TensorShape shape{DType::F16, {65, 4}};
    DeviceLayout l = default_layout(shape, kStick);
    l.padded[0] = 100;  // 64-lane sticks: 100 is not a multiple
    std::string msg = check_layout_error(shape, l);
    EXPECT_NE(msg.find("whole number of sticks"), std::string::npos) << msg;
    // A non-stick dimension may have any padding.
    l.padded[0] = 128;
    l.padded[1] = 7;
    EXPECT_EQ(check_layout_error(shape, l), "");
}

TEST(LayoutCheck, RejectsStickDimOutOfRangeAndBadRankAndZeroExtent) {
    TensorShape shape{DType::I8, {128, 4}};
    DeviceLayout l = default_layout(shape, kStick);
    l.stick_dim = 2;
    EXPECT_NE(check_layout_error(shape, l).find("stick dimension out of range"), std::string::npos);
    l.stick_dim = -1;
    EXPECT_NE(check_layout_error(shape, l).find("stick dimension out of range"), std::string::npos);

    TensorShape scalar{DType::I8, {}};
    EXPECT_NE(check_layout_error(scalar, DeviceLayout{0, {}, {}}).find("rank"), std::string::npos);

    TensorShape empty{DType::I8, {128, 0}};
    EXPECT_NE(check_layout_error(empty, DeviceLayout{0, {1, 0}, {128, 0}}).find("must be >= 1"), std::string::npos);
}

TEST(LayoutCheck, MessageNamesTheLayout) {
    TensorShape shape{DType::F32, {32, 4}};
    DeviceLayout l{0, {1, 0}, {32, 3}};
    std::string msg = check_layout_error(shape, l);
    EXPECT_NE(msg.find(layout_to_string(l)), std::string::npos) << msg;
    EXPECT_EQ(layout_to_string(l), "stick=0 order=[1,0] padded=[32,3]");
}

}  // namespace
}  // namespace spyre
