// Reading and writing whole files (see file_bytes.h).
#include "spyre/file_bytes.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "spyre/error.h"

namespace spyre {

std::vector<uint8_t> read_file_bytes(const std::string &path, uint64_t max_bytes) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status)) throw Error("cannot open '" + path + "'");
    if (std::filesystem::is_directory(status)) throw Error("'" + path + "' is a directory, not a file");
    if (!std::filesystem::is_regular_file(status)) {
        throw Error("'" + path + "' is not a regular file (a device, FIFO or socket); only regular files are read");
    }
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) throw Error("cannot read the size of '" + path + "': " + ec.message());
    if (size > max_bytes) {
        throw Error("'" + path + "' is " + std::to_string(size) + " bytes; files read here are limited to " +
                    std::to_string(max_bytes) + " bytes");
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("cannot open '" + path + "'");
    std::vector<uint8_t> bytes(size);
    f.read(reinterpret_cast<char *>(bytes.data()), (std::streamsize)size);
    if ((uint64_t)f.gcount() != size || f.peek() != std::char_traits<char>::eof()) {
        throw Error("'" + path + "' changed size while it was read");
    }
    return bytes;
}

void write_file_bytes(const std::string &path, const std::vector<uint8_t> &bytes) {
    namespace fs = std::filesystem;
    std::error_code ec;
    // A device or FIFO is written in place; a file is written whole beside it and renamed over it,
    // so a reader sees the old file or the new one, never a part, and of two writers one whole file.
    const bool in_place = fs::exists(path, ec) && !fs::is_regular_file(path, ec);
    static std::atomic<uint64_t> counter{0};
    const std::string target = in_place ? path
                                        : path + ".tmp-" + std::to_string((long long)getpid()) + "-" +
                                              std::to_string(counter++);
    {
        errno = 0;
        std::ofstream f(target, std::ios::binary | std::ios::trunc);
        if (!f) {
            const int err = errno;
            std::string why = err ? std::strerror(err) : "cannot be opened";
            if (fs::is_directory(path, ec)) why = "it is a directory";
            throw Error("cannot write '" + path + "': " + why);
        }
        f.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
        f.close();
        if (!f) {
            if (!in_place) fs::remove(target, ec);
            throw Error("error writing '" + path + "'" + (errno ? std::string(": ") + std::strerror(errno) : std::string()));
        }
    }
    if (in_place) return;
    fs::rename(target, path, ec);
    if (ec) {
        const std::string why = ec.message();
        fs::remove(target, ec);
        throw Error("cannot write '" + path + "': " + why);
    }
}

}  // namespace spyre
