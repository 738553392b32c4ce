// Reports on disk: written atomically (a killed run leaves the old report or the new one, never a part), read
// back within bounds.
#include "report/report.h"

#include "io/json_limits.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <limits>
#include <signal.h>
#include <stdexcept>
#include <unistd.h>

namespace permcheck::report {

using nlohmann::json;

namespace {

// Removes the temporary files `.NAME.tmp.PID.N` (write_atomically's) that a killed run left in `dir`, of any file
// written there (report.json, a failure database's entries, summary.json): those whose PID no longer runs. A file
// of a running process (this one, another writer) stays, and so does every name of another shape.
void remove_orphans(const std::filesystem::path& dir) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const std::size_t tmp = name.rfind(".tmp.");
        if (name.empty() || name[0] != '.' || tmp == std::string::npos || tmp < 2) continue;
        const std::string rest = name.substr(tmp + 5);  // "PID.N"
        const std::size_t dot = rest.find('.');
        if (dot == 0 || dot == std::string::npos || dot + 1 == rest.size() ||
            rest.find_first_not_of("0123456789.") != std::string::npos || rest.find('.', dot + 1) != std::string::npos)
            continue;
        long long pid = 0;
        try {
            pid = std::stoll(rest.substr(0, dot));
        } catch (const std::exception&) {
            continue;
        }
        if (pid <= 0 || pid == ::getpid() || pid > std::numeric_limits<pid_t>::max()) continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
            std::error_code ignored;
            std::filesystem::remove(it->path(), ignored);
        }
    }
}

}  // namespace

void write_atomically(const std::filesystem::path& file, const std::string& content) {
    static std::atomic<unsigned> counter{0};
    const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
    std::string name = ".";  // appended, not "." + ...: GCC 12 warns falsely (-Wrestrict) on that at -O3
    name += file.filename().string();
    name += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    remove_orphans(dir);
    const std::filesystem::path tmp = dir / name;
    const auto fail = [&](const std::string& what) {
        const std::string reason = std::strerror(errno);
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot write " + file.string() + ": " + what + ": " + reason);
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot write " + file.string() + ": cannot create " + tmp.string() + ": " +
                                         std::strerror(errno));
    std::size_t done = 0;
    while (done < content.size()) {
        const ssize_t w = ::write(fd, content.data() + done, content.size() - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            ::close(fd);
            fail("write failed");
        }
        done += static_cast<std::size_t>(w);
    }
    if (::fsync(fd) != 0) {
        ::close(fd);
        fail("fsync failed");
    }
    if (::close(fd) != 0) fail("close failed");
    if (std::rename(tmp.c_str(), file.c_str()) != 0) fail("rename failed");
}

void prepare_directory(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create report directory " + dir.string() + ": " + ec.message());
}

void write(const std::filesystem::path& dir, const Record& r) {
    prepare_directory(dir);
    // "schema" first, so a reader of the file (or `head`) sees what it is; the other keys in alphabetical order.
    const json j = to_json(r);
    nlohmann::ordered_json file = {{"schema", j.at("schema")}};
    for (const auto& [key, value] : j.items())
        if (key != "schema") file[key] = value;
    write_atomically(dir / "report.json", file.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    write_atomically(dir / "report.md", to_markdown(r));
    write_atomically(dir / "report.html", to_html(r));
}

Record read(const std::filesystem::path& path) {
    std::error_code ec;
    const std::filesystem::path file = std::filesystem::is_directory(path, ec) ? path / "report.json" : path;
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + file.string() + ": " + std::strerror(errno));
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw std::runtime_error("cannot read " + file.string() + ": " + std::strerror(errno));
    json j;
    try {
        json_limits::require_shallow(text, file.string());
        j = json::parse(text);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers beyond double (1e400)
        throw std::invalid_argument(file.string() + " is not valid JSON: " + e.what());
    }
    try {
        return from_json(j);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(file.string() + " is not a permcheck report: " + e.what());
    }
}

}  // namespace permcheck::report
