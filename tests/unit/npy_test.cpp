// Tests of NumPy .npy reading and writing (runtime/sim/include/spyre/npy.h):
// round trips, byte-exact fixtures of files as NumPy writes them, and
// malformed files that must be rejected with a message naming the file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "spyre/error.h"
#include "spyre/npy.h"

namespace spyre {
namespace {

namespace fs = std::filesystem;

class NpyTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("spyre_npy_test_" + std::to_string(getpid()) + "_" + info->test_suite_name() + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string path(const std::string &name) const { return (dir_ / name).string(); }

    std::string write_bytes(const std::string &name, const std::string &bytes) const {
        const std::string p = path(name);
        std::ofstream f(p, std::ios::binary);
        f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return p;
    }

    static std::string read_bytes(const std::string &p) {
        std::ifstream f(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }

    // Expects read_npy to throw a spyre::Error whose message names the file
    // and contains `problem`.
    void expect_rejected(const std::string &name, const std::string &bytes, const std::string &problem) const {
        const std::string p = write_bytes(name, bytes);
        try {
            read_npy(p);
            ADD_FAILURE() << name << ": read_npy accepted a malformed file";
        } catch (const Error &e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(p), std::string::npos) << "message does not name the file: " << msg;
            EXPECT_NE(msg.find(problem), std::string::npos) << "message does not say '" << problem << "': " << msg;
        }
    }

    fs::path dir_;
};

// The bytes of a version-1.0 .npy file around a header dict, padded exactly as
// NumPy pads it: spaces, then '\n', so magic + version + length + header is a
// multiple of 64 bytes.
std::string npy_v1(const std::string &dict, const std::string &data) {
    std::string header = dict;
    const size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::string out = std::string("\x93NUMPY", 6) + '\x01' + '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
}

std::string npy_v2(int major, const std::string &dict, const std::string &data) {
    std::string header = dict;
    const size_t unpadded = 12 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\x00';
    for (int i = 0; i < 4; i++) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + data;
}

std::string f32_bytes(const std::vector<float> &v) {
    return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float));
}

std::vector<uint8_t> pattern(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>(i * 29 + 7);
    return v;
}

TEST_F(NpyTest, ReadsTheExactBytesNumPyWritesForArange6Reshaped2x3) {
    // np.save(f, np.arange(6, dtype='<f4').reshape(2, 3)):
    // 6-byte magic, version 1.0, header length 118 (0x76, 0x00), the dict,
    // spaces up to byte 127, '\n', then 0.0 ... 5.0 as little-endian float32.
    const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    std::string file = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict;
    file.append(127 - file.size(), ' ');
    file += '\n';
    ASSERT_EQ(file.size(), 128u);
    const unsigned char data[] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40,
                                  0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x80, 0x40, 0x00, 0x00, 0xa0, 0x40};
    file.append(reinterpret_cast<const char *>(data), sizeof data);

    const std::string p = write_bytes("arange.npy", file);
    NpyArray a = read_npy(p);
    EXPECT_EQ(a.dtype, DType::F32);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_FALSE(a.fortran_order);
    ASSERT_EQ(a.data.size(), 24u);
    float values[6];
    std::memcpy(values, a.data.data(), 24);
    for (int i = 0; i < 6; i++) EXPECT_EQ(values[i], float(i));

    // And write_npy produces the very same bytes.
    write_npy(path("rewritten.npy"), a);
    EXPECT_EQ(read_bytes(path("rewritten.npy")), file);
}

TEST_F(NpyTest, WritesHeadersLikeNumPy) {
    // Header dict, sorted keys, Python reprs; data on a 64-byte boundary; '\n' last.
    struct Case {
        DType dtype;
        std::vector<int64_t> shape;
        bool fortran;
        std::string dict;
    };
    const Case cases[] = {
        {DType::F16, {}, false, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }"},
        {DType::I8, {5}, false, "{'descr': '|i1', 'fortran_order': False, 'shape': (5,), }"},
        {DType::I32, {4, 1, 2}, true, "{'descr': '<i4', 'fortran_order': True, 'shape': (4, 1, 2), }"},
    };
    for (const auto &c : cases) {
        NpyArray a{c.dtype, c.shape, c.fortran, {}};
        int64_t n = 1;
        for (int64_t e : c.shape) n *= e;
        a.data = pattern(n * dtype_bytes(c.dtype));
        write_npy(path("h.npy"), a);
        const std::string bytes = read_bytes(path("h.npy"));
        ASSERT_GE(bytes.size(), 10u);
        EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
        const size_t hlen = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
        EXPECT_EQ((10 + hlen) % 64, 0u) << c.dict;
        ASSERT_EQ(bytes.size(), 10 + hlen + a.data.size());
        const std::string header = bytes.substr(10, hlen);
        EXPECT_EQ(header.substr(0, c.dict.size()), c.dict);
        EXPECT_EQ(header.back(), '\n');
        EXPECT_EQ(header.find_first_not_of(' ', c.dict.size()), hlen - 1) << "only spaces between dict and newline";
    }
}

TEST_F(NpyTest, RoundTripsEveryDTypeAndShape) {
    const DType dtypes[] = {DType::F32, DType::F16, DType::I32, DType::I8};
    const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {7}, {2, 3}, {3, 1, 5}, {2, 2, 2, 3}, {0}, {4, 0}};
    for (DType dt : dtypes) {
        for (const auto &shape : shapes) {
            for (bool fortran : {false, true}) {
                NpyArray a;
                a.dtype = dt;
                a.shape = shape;
                a.fortran_order = fortran;
                int64_t n = 1;
                for (int64_t e : shape) n *= e;
                a.data = pattern(n * dtype_bytes(dt));
                const std::string p = path("rt.npy");
                write_npy(p, a);
                NpyArray b = read_npy(p);
                SCOPED_TRACE(std::string(dtype_name(dt)) + " rank " + std::to_string(shape.size()));
                EXPECT_EQ(b.dtype, a.dtype);
                EXPECT_EQ(b.shape, a.shape);
                EXPECT_EQ(b.fortran_order, a.fortran_order);
                EXPECT_EQ(b.data, a.data);
            }
        }
    }
}

TEST_F(NpyTest, WritesVersion2WhenTheHeaderDoesNotFitVersion1) {
    // 25000 dimensions of extent 1 ("1, " each) make a header over 65535 bytes.
    NpyArray a;
    a.dtype = DType::I8;
    a.shape.assign(25000, 1);
    a.data = {42};
    write_npy(path("big.npy"), a);
    const std::string bytes = read_bytes(path("big.npy"));
    EXPECT_EQ(bytes[6], '\x02');
    EXPECT_EQ(bytes[7], '\x00');
    const uint32_t hlen = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8) |
                          (static_cast<uint8_t>(bytes[10]) << 16) | (static_cast<uint32_t>(static_cast<uint8_t>(bytes[11])) << 24);
    EXPECT_GT(hlen, 65535u);
    EXPECT_EQ((12 + hlen) % 64, 0u);
    NpyArray b = read_npy(path("big.npy"));
    EXPECT_EQ(b.shape.size(), 25000u);
    EXPECT_EQ(b.data, a.data);
}

TEST_F(NpyTest, ReadsVersions2And3) {
    const std::string data = f32_bytes({1.5f, -2.0f});
    for (int major : {2, 3}) {
        const std::string p =
            write_bytes("v.npy", npy_v2(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data));
        NpyArray a = read_npy(p);
        EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
        EXPECT_EQ(a.data.size(), 8u);
    }
}

TEST_F(NpyTest, AcceptsEveryInt8SpellingAndOtherKeyOrders) {
    for (const std::string descr : {"|i1", "<i1", "i1"}) {
        const std::string p =
            write_bytes("i8.npy", npy_v1("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (3,), }", "abc"));
        NpyArray a = read_npy(p);
        EXPECT_EQ(a.dtype, DType::I8) << descr;
        EXPECT_EQ(a.data, (std::vector<uint8_t>{'a', 'b', 'c'}));
    }
    // Keys in any order, double quotes, no trailing comma, Python 2 longs.
    const std::string p = write_bytes(
        "order.npy", npy_v1("{\"shape\": (2L, 1L), \"fortran_order\": True, \"descr\": \"<f2\"}", std::string(4, '\x01')));
    NpyArray a = read_npy(p);
    EXPECT_EQ(a.dtype, DType::F16);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 1}));
    EXPECT_TRUE(a.fortran_order);
}

TEST_F(NpyTest, FortranOrderDataIsReturnedAsStored) {
    // np.asfortranarray(np.arange(6, dtype='<i4').reshape(2, 3)) stores columns: 0 3 1 4 2 5.
    std::vector<int32_t> col_major = {0, 3, 1, 4, 2, 5};
    const std::string data(reinterpret_cast<const char *>(col_major.data()), 24);
    const std::string p = write_bytes("f.npy", npy_v1("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", data));
    NpyArray a = read_npy(p);
    EXPECT_TRUE(a.fortran_order);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(std::string(a.data.begin(), a.data.end()), data);
}

TEST_F(NpyTest, RejectsAMissingFile) {
    const std::string p = path("does_not_exist.npy");
    try {
        read_npy(p);
        ADD_FAILURE() << "read_npy accepted a missing file";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
    EXPECT_THROW(read_npy(dir_.string()), Error);  // a directory
}

TEST_F(NpyTest, RejectsBadMagic) {
    expect_rejected("empty.npy", "", "bad magic");
    expect_rejected("text.npy", "hello, this is not numpy data at all", "bad magic");
    expect_rejected("almost.npy", std::string("\x93NUMPX\x01\x00", 8), "bad magic");
}

TEST_F(NpyTest, RejectsTruncatedFiles) {
    const std::string good = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                    f32_bytes({0, 1, 2, 3, 4, 5}));
    expect_rejected("t1.npy", good.substr(0, 7), "truncated");
    expect_rejected("t2.npy", good.substr(0, 9), "truncated");
    expect_rejected("t3.npy", good.substr(0, 40), "truncated");
    expect_rejected("t4.npy", good.substr(0, good.size() - 1), "truncated");
    expect_rejected("t5.npy", good.substr(0, 64), "truncated");  // header only, no data
    // Every prefix is rejected without a crash.
    for (size_t n = 0; n < good.size(); n++) {
        EXPECT_THROW(read_npy(write_bytes("prefix.npy", good.substr(0, n))), Error) << n;
    }
}

TEST_F(NpyTest, RejectsUnsupportedVersion) {
    std::string file = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f32_bytes({1}));
    file[6] = '\x04';
    expect_rejected("v4.npy", file, "unsupported .npy format version 4.0");
    file[6] = '\x01';
    file[7] = '\x01';
    expect_rejected("v11.npy", file, "version 1.1");
}

TEST_F(NpyTest, RejectsBadHeaderDicts) {
    const std::string four = f32_bytes({1, 2, 3, 4});
    expect_rejected("notdict.npy", npy_v1("['descr', '<f4']", four), "bad header dict");
    expect_rejected("unclosed.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), ", four),
                    "bad header dict");
    expect_rejected("nostring.npy", npy_v1("{'descr: '<f4', 'fortran_order': False, 'shape': (4,)}", four),
                    "bad header dict");
    expect_rejected("missing.npy", npy_v1("{'descr': '<f4', 'shape': (4,), }", four), "missing key 'fortran_order'");
    expect_rejected("extra.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1, }", four),
                    "unexpected key 'x'");
    expect_rejected("dup.npy", npy_v1("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", four),
                    "duplicate key");
    expect_rejected("fortran.npy", npy_v1("{'descr': '<f4', 'fortran_order': 0, 'shape': (4,), }", four),
                    "'fortran_order' must be True or False");
    expect_rejected("shapeint.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': 4, }", four),
                    "'shape' must be a tuple");
    expect_rejected("shapeparen.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4), }", four),
                    "'shape' must be a tuple");
    expect_rejected("shapefloat.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4.0,), }", four),
                    "bad header dict");
    expect_rejected("shapeneg.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", four),
                    "negative");
    expect_rejected("shapehuge.npy",
                    npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", four),
                    "too large");
    expect_rejected("shapeoverflow.npy",
                    npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", four),
                    "too large");
    expect_rejected("trailing.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), } x", four),
                    "after the dict");
    expect_rejected("deep.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(500, '(') + "}",
                                       four),
                    "nested too deeply");
    std::string nul = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four);
    nul[70] = '\0';
    expect_rejected("nul.npy", nul, "NUL");
}

TEST_F(NpyTest, RejectsUnsupportedDTypes) {
    const std::string eight(8, '\0');
    expect_rejected("f8.npy", npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", eight),
                    "unsupported dtype '<f8'");
    expect_rejected("bige.npy", npy_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", eight),
                    "unsupported dtype '>f4'");
    expect_rejected("u1.npy", npy_v1("{'descr': '|u1', 'fortran_order': False, 'shape': (8,), }", eight),
                    "unsupported dtype '|u1'");
    expect_rejected("struct.npy",
                    npy_v1("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (1,), }", eight),
                    "unsupported dtype");
}

TEST_F(NpyTest, RejectsDataSizeMismatch) {
    const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }";
    expect_rejected("short.npy", npy_v1(dict, std::string(12, '\x01')), "needs 16 data bytes, the file has 12");
    expect_rejected("long.npy", npy_v1(dict, std::string(20, '\x01')), "data size mismatch");
}

TEST_F(NpyTest, WriteRejectsDataOfTheWrongSize) {
    NpyArray a;
    a.dtype = DType::F32;
    a.shape = {2, 3};
    a.data.resize(23);
    EXPECT_THROW(write_npy(path("bad.npy"), a), Error);
    a.data.resize(24);
    EXPECT_THROW(write_npy(path("no_such_dir/x.npy"), a), Error);
    a.shape = {-1};
    EXPECT_THROW(write_npy(path("neg.npy"), a), Error);
}

// parse_npy and encode_npy are read_npy and write_npy without the file: same
// bytes, same errors, naming the given source instead of a path.
TEST_F(NpyTest, InMemoryParseAndEncodeMatchTheFileFunctions) {
    NpyArray a;
    a.dtype = DType::I32;
    a.shape = {2, 3};
    a.data.resize(24, 7);
    const std::string p = path("a.npy");
    write_npy(p, a);
    const std::vector<uint8_t> bytes = encode_npy(a, "memory");
    const std::string file = read_bytes(p);
    EXPECT_EQ(std::string(bytes.begin(), bytes.end()), file);
    NpyArray b = parse_npy(bytes.data(), bytes.size(), "memory");
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
    try {
        parse_npy(bytes.data(), 9, "the buffer");
        ADD_FAILURE() << "parse_npy accepted a truncated buffer";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("npy file 'the buffer': truncated"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parse_npy(nullptr, 0, "empty"), Error);
}

}  // namespace
}  // namespace spyre
