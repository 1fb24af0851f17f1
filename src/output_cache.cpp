#include "kbuild/output_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/uuid/detail/sha1.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "kbuild/file_util.hpp"
#include "kbuild/isa.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

constexpr const char* kKeyVersion = "kbuild-cache-1";

// Variables that change what g++ reads or writes.
constexpr const char* kCompilerVariables[] = {
    "CPATH",         "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH", "LIBRARY_PATH", "GCC_EXEC_PREFIX",
    "COMPILER_PATH", "SOURCE_DATE_EPOCH",  "LANG",           "LC_ALL"};

struct FileStamp {
  std::int64_t size = -1;
  std::int64_t mtime_ns = -1;
};

FileStamp stamp(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return {static_cast<std::int64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec};
}

class Hasher {
 public:
  void add(const std::string& s) {
    std::uint64_t n = s.size();
    sha_.process_bytes(&n, sizeof n);  // length-prefixed: no ambiguity between fields
    sha_.process_bytes(s.data(), s.size());
  }
  std::string hex() {
    boost::uuids::detail::sha1::digest_type d;
    sha_.get_digest(d);
    char out[41];
    for (int i = 0; i < 5; ++i) std::snprintf(out + 8 * i, 9, "%08x", d[i]);
    return std::string(out, 40);
  }

 private:
  boost::uuids::detail::sha1 sha_;
};

// Holds flock(LOCK_EX) on `path` while alive.
class Lock {
 public:
  explicit Lock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~Lock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_;
};

std::string random_name() {
  static std::mt19937_64 rng{std::random_device{}()};
  return std::to_string(getpid()) + "." + std::to_string(rng());
}

bool copy_file_to(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  return !ec;
}

}  // namespace

std::vector<std::string> parse_depfile(const std::string& text) {
  std::vector<std::string> paths;
  auto colon = text.find(": ");
  if (colon == std::string::npos) colon = text.find(":\n");
  if (colon == std::string::npos) return paths;
  std::string word;
  for (std::size_t i = colon + 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;  // line continuation
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      word += ' ';  // an escaped blank inside a path
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      if (!word.empty()) paths.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) paths.push_back(word);
  return paths;
}

std::optional<std::string> input_manifest(const std::string& depfile_text) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const std::string& path : parse_depfile(depfile_text)) {
    auto bytes = read_whole_file(path);
    FileStamp st = stamp(path);
    if (!bytes) return std::nullopt;
    inputs.push_back(
        {{"path", path}, {"size", st.size}, {"mtime_ns", st.mtime_ns}, {"sha1", sha1_hex(*bytes)}});
  }
  return nlohmann::json{{"inputs", inputs}}.dump();
}

bool inputs_unchanged(const std::string& manifest_text) {
  try {
    // Kept in a variable: a range-for over parse(...).at(...) would iterate a
    // destroyed temporary.
    const nlohmann::json manifest = nlohmann::json::parse(manifest_text);
    for (const auto& input : manifest.at("inputs")) {
      const std::string path = input.at("path");
      FileStamp now = stamp(path);
      if (now.size == input.at("size").get<std::int64_t>() &&
          now.mtime_ns == input.at("mtime_ns").get<std::int64_t>())
        continue;
      // Touched, or gone: only identical content still counts.
      auto bytes = read_whole_file(path);
      if (!bytes || sha1_hex(*bytes) != input.at("sha1").get<std::string>()) return false;
    }
  } catch (const nlohmann::json::exception&) {
    return false;  // a foreign or damaged manifest is a miss, never an error
  }
  return true;
}

std::optional<std::string> OutputCache::key(const BuildPlan& plan,
                                            const std::vector<std::string>& sources,
                                            const std::string& compiler_path,
                                            const Environment& env) const {
  Hasher h;
  h.add(kKeyVersion);
  for (std::size_t i = 0; i < plan.command.argv.size(); ++i)
    h.add(i == plan.command.output_index ? "<output>" : plan.command.argv[i]);
  // The output's extension can matter to the compiler; its directory cannot.
  h.add(fs::path(plan.output).extension().string());
  FileStamp cxx = stamp(compiler_path);
  h.add(compiler_path + ":" + std::to_string(cxx.size) + ":" + std::to_string(cxx.mtime_ns));
  h.add(fs::current_path().string());
  for (const char* var : kCompilerVariables)
    h.add(std::string(var) + "=" + env.get(var).value_or(""));
  for (const std::string& s : sources) {
    auto bytes = read_whole_file(s);
    if (!bytes) return std::nullopt;
    h.add(*bytes);
  }
  // -march=native / -mcpu=native compile for this CPU.
  CpuFeatures cpu = read_cpu_features();
  std::string cpu_id = cpu.machine;
  for (const std::string& f : cpu.flags) cpu_id += " " + f;
  h.add(cpu_id);
  if (links(plan.kind)) {
    std::vector<std::string> dirs = plan.options.values(OptionList::libraries_dirs);
    for (const std::string& lib : plan.options.values(OptionList::libraries)) {
      for (const std::string& d : dirs) {
        for (const char* ext : {".so", ".a"}) {
          std::string p = d + "/lib" + lib + ext;
          FileStamp st = stamp(p);
          if (st.size >= 0)
            h.add(p + ":" + std::to_string(st.size) + ":" + std::to_string(st.mtime_ns));
        }
      }
    }
  }
  return h.hex();
}

std::string OutputCache::entry_dir(const std::string& key) const {
  return s_.root + "/objects/" + key.substr(0, 2) + "/" + key;
}

bool OutputCache::fetch(const std::string& key, const std::string& dest) {
  const std::string dir = entry_dir(key);
  auto text = read_whole_file(dir + "/manifest.json");
  if (!text || !inputs_unchanged(*text)) return false;
  if (!copy_file_to(dir + "/output", dest)) return false;
  // Least recently used: a hit refreshes the entry.
  ::utimensat(AT_FDCWD, dir.c_str(), nullptr, 0);
  return true;
}

bool OutputCache::store(const std::string& key, const std::string& built,
                        const std::string& depfile, bool needs_depfile) {
  auto deps = read_whole_file(depfile);
  if (!deps && needs_depfile) return false;  // the compiler did not say what it read
  auto manifest = input_manifest(deps.value_or(""));
  if (!manifest) return false;
  std::error_code ec;
  const std::string staging = s_.root + "/tmp/" + random_name();
  fs::create_directories(staging, ec);
  if (ec) return false;
  bool ok = copy_file_to(built, staging + "/output") &&
            write_file_atomically(staging + "/manifest.json", *manifest).empty();
  const std::string dir = entry_dir(key);
  if (ok) {
    fs::create_directories(fs::path(dir).parent_path(), ec);
    // An older entry for this key (its headers changed) is replaced.
    if (fs::exists(dir, ec)) {
      std::string trash = s_.root + "/tmp/old." + random_name();
      fs::rename(dir, trash, ec);
      fs::remove_all(trash, ec);
    }
    fs::rename(staging, dir, ec);  // atomic: the whole entry or nothing
    ok = !ec;
  }
  fs::remove_all(staging, ec);
  return ok;
}

void OutputCache::count(bool hit) {
  std::error_code ec;
  fs::create_directories(s_.root, ec);
  Lock lock(s_.root + "/stats.lock");
  nlohmann::json stats = nlohmann::json::object();
  if (auto text = read_whole_file(s_.root + "/stats.json")) {
    try {
      stats = nlohmann::json::parse(*text);
    } catch (const nlohmann::json::exception&) {
      stats = nlohmann::json::object();
    }
  }
  const char* field = hit ? "hits" : "misses";
  stats[field] = stats.value(field, 0ull) + 1;
  write_file_atomically(s_.root + "/stats.json", stats.dump());
}

CacheStats OutputCache::stats() const {
  CacheStats st;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(s_.root + "/objects", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() == "output") {
      ++st.entries;
      st.bytes += fs::file_size(it->path(), ec);
    }
  }
  if (auto text = read_whole_file(s_.root + "/stats.json")) {
    try {
      auto j = nlohmann::json::parse(*text);
      st.hits = j.value("hits", 0ull);
      st.misses = j.value("misses", 0ull);
    } catch (const nlohmann::json::exception&) {
    }
  }
  return st;
}

void OutputCache::clear() {
  std::error_code ec;
  fs::remove_all(s_.root + "/objects", ec);
  fs::remove_all(s_.root + "/tmp", ec);
  fs::remove(s_.root + "/stats.json", ec);
}

void OutputCache::evict() {
  struct Item {
    fs::file_time_type used;
    std::uint64_t bytes;
    fs::path dir;
  };
  std::vector<Item> items;
  std::uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(s_.root + "/objects", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() != "output") continue;
    fs::path dir = it->path().parent_path();
    std::uint64_t bytes = fs::file_size(it->path(), ec);
    items.push_back({fs::last_write_time(dir, ec), bytes, dir});
    total += bytes;
  }
  if (total <= s_.max_bytes) return;
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.used < b.used; });
  // Down to 90% of the limit, so eviction does not run on every store.
  for (const Item& item : items) {
    if (total <= s_.max_bytes / 10 * 9) break;
    fs::remove_all(item.dir, ec);
    total -= item.bytes;
  }
}

}  // namespace kbuild
