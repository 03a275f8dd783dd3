// Reading program and assembly files (read_file_bytes, program_format.h): only
// regular files, and never more than a documented maximum, refused before
// anything is allocated. A directory used to be reported as a truncated
// program; /dev/zero or a huge sparse file ran the host out of memory.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "spyre/error.h"
#include "spyre/program_format.h"

namespace spyre {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::string &path, uint64_t max_bytes = kMaxProgramFileBytes) {
    try {
        read_file_bytes(path, max_bytes);
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

// A fresh directory for one test, removed afterwards.
struct ScratchDirectory {
    fs::path path;
    ScratchDirectory() {
        path = fs::temp_directory_path() / ("spyre_program_file_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(path);
    }
    ~ScratchDirectory() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

long peak_rss_kib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

TEST(ProgramFileReading, ADirectoryIsRejectedAsADirectory) {
    ScratchDirectory dir;
    EXPECT_EQ(error_of(dir.path.string()), "'" + dir.path.string() + "' is a directory, not a file");
}

TEST(ProgramFileReading, ADeviceIsRejectedWithoutReadingIt) {
    const long before = peak_rss_kib();
    const std::string msg = error_of("/dev/zero");
    EXPECT_EQ(msg, "'/dev/zero' is not a regular file (a device, FIFO or socket); only regular files are read");
    EXPECT_LT(peak_rss_kib() - before, 64 * 1024) << "peak RSS grew by more than 64 MiB";
}

TEST(ProgramFileReading, AFileOverTheMaximumIsRejectedBeforeItIsRead) {
    ScratchDirectory dir;
    const fs::path big = dir.path / "sparse.spyre";
    { std::ofstream(big.string()); }
    fs::resize_file(big, uint64_t{2} << 30);  // 2 GiB, sparse: no disk space used
    const long before = peak_rss_kib();
    const std::string msg = error_of(big.string());
    EXPECT_EQ(msg, "'" + big.string() + "' is 2147483648 bytes; files read here are limited to 268435456 bytes");
    EXPECT_LT(peak_rss_kib() - before, 64 * 1024) << "peak RSS grew by more than 64 MiB";
}

TEST(ProgramFileReading, AFileOfExactlyTheMaximumIsReadAndOneByteMoreIsNot) {
    ScratchDirectory dir;
    const fs::path file = dir.path / "p.spyre";
    { std::ofstream(file.string(), std::ios::binary) << "SPYREPRG"; }
    EXPECT_EQ(read_file_bytes(file.string(), 8), std::vector<uint8_t>({'S', 'P', 'Y', 'R', 'E', 'P', 'R', 'G'}));
    EXPECT_NE(error_of(file.string(), 7).find("is 8 bytes; files read here are limited to 7 bytes"), std::string::npos);
}

TEST(ProgramFileReading, AMissingFileCannotBeOpened) {
    EXPECT_EQ(error_of("/nonexistent/p.spyre"), "cannot open '/nonexistent/p.spyre'");
}

}  // namespace
}  // namespace spyre
