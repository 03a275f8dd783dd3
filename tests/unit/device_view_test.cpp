// spyre_device_view: the same device tensor seen with extent-1 dimensions
// added or dropped, without moving data (so kernels of different ranks chain
// on the device), and its refusals.
#include <gtest/gtest.h>

#include <string>

#include "HalideBuffer.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace {

using Halide::Runtime::Buffer;

Buffer<float> ramp(int w, int h) {
    Buffer<float> b(w, h);
    b.for_each_element([&](int x, int y) { b(x, y) = (float)(x * 3 + y * 7 % 5) - 4.0f; });
    return b;
}

TEST(DeviceView, AddsAUnitDimensionWithoutMovingData) {
    Buffer<float> t2 = ramp(40, 6);
    ASSERT_EQ(t2.copy_to_device(spyre_device_interface()), 0);
    spyre_kernel_stats before{}, after{};
    spyre_get_kernel_stats("host->device", &before);
    Buffer<float> t3(40, 6, 1);
    ASSERT_EQ(spyre_device_view(nullptr, t2.raw_buffer(), t3.raw_buffer()), 0);
    spyre_get_kernel_stats("host->device", &after);
    EXPECT_EQ(after.calls, before.calls) << "a view must not upload anything";
    ASSERT_EQ(t3.copy_to_host(), 0);
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 40; x++) ASSERT_EQ(t3(x, y, 0), t2(x, y)) << x << "," << y;
    spyre_device_layout l2, l3;
    ASSERT_EQ(spyre_device_get_layout(t2.raw_buffer(), &l2, nullptr), 0);
    ASSERT_EQ(spyre_device_get_layout(t3.raw_buffer(), &l3, nullptr), 0);
    EXPECT_EQ(l3.dimensions, 3);
    EXPECT_EQ(l3.bytes, l2.bytes);
    EXPECT_EQ(l3.padded[0], l2.padded[0]);
    t3.device_free();
}

TEST(DeviceView, DropsAUnitDimension) {
    Buffer<float> t3(33, 1, 5);
    t3.for_each_element([&](int x, int, int z) { t3(x, 0, z) = (float)(x - z); });
    ASSERT_EQ(t3.copy_to_device(spyre_device_interface()), 0);
    Buffer<float> t2(33, 5);
    ASSERT_EQ(spyre_device_view(nullptr, t3.raw_buffer(), t2.raw_buffer()), 0);
    ASSERT_EQ(t2.copy_to_host(), 0);
    for (int z = 0; z < 5; z++)
        for (int x = 0; x < 33; x++) ASSERT_EQ(t2(x, z), (float)(x - z));
    t2.device_free();
}

TEST(DeviceView, RefusesOtherShapesAndPaddedUnitDimensions) {
    Buffer<float> src = ramp(40, 6);
    ASSERT_EQ(src.copy_to_device(spyre_device_interface()), 0);
    Buffer<float> other(40, 3, 2);
    EXPECT_EQ(spyre_device_view(nullptr, src.raw_buffer(), other.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_NE(std::string(spyre_last_error()).find("other than by dimensions of extent 1"), std::string::npos)
        << spyre_last_error();

    // A unit dimension padded in the device layout is not the same bytes.
    Buffer<float> padded(64, 1);
    spyre_device_layout l{};
    l.dimensions = 2;
    l.stick_dim = 0;
    l.order[0] = 1;
    l.order[1] = 0;
    l.padded[0] = 64;
    l.padded[1] = 8;
    ASSERT_EQ(spyre_device_malloc_with_layout(nullptr, padded.raw_buffer(), &l), 0);
    Buffer<float> flat(64);
    EXPECT_EQ(spyre_device_view(nullptr, padded.raw_buffer(), flat.raw_buffer()), spyre_error_buffer_mismatch);
    EXPECT_NE(std::string(spyre_last_error()).find("padded"), std::string::npos) << spyre_last_error();
    padded.device_free();
}

}  // namespace
