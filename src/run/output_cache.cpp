#include "kbuild/output_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/uuid/detail/sha1.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "kbuild/cache_root.hpp"
#include "kbuild/file_util.hpp"
#include "kbuild/isa.hpp"
#include "kbuild/json_text.hpp"
#include "kbuild/process_runner.hpp"
#include "kbuild/shell.hpp"
#include "util/json_locations.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

constexpr const char* kKeyVersion = "kbuild-cache-2";
constexpr std::size_t kMaxManifest = 16u << 20;

struct FileStamp {
  std::int64_t size = -1;
  std::int64_t mtime_ns = -1;
};

std::int64_t ns(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

FileStamp stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<std::int64_t>(st.st_size), ns(st.st_mtim)};
}

std::string stamp_text(const std::string& path) {
  FileStamp st = stamp(path);
  return path + ":" + std::to_string(st.size) + ":" + std::to_string(st.mtime_ns);
}

// Fields hashed length-prefixed: no ambiguity between them.
class Hasher {
 public:
  void add(const std::string& s) {
    std::uint64_t n = s.size();
    sha_.add(&n, sizeof n);
    sha_.add(s);
  }
  std::string hex() { return sha_.hex(); }

 private:
  Sha1 sha_;
};

// Files a command line names whose bytes the compiler reads but that no
// depfile lists: response files, specs files, plugins.
std::vector<std::string> named_files(const std::vector<std::string>& argv) {
  std::vector<std::string> files;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w.size() > 1 && w[0] == '@') files.push_back(w.substr(1));
    for (const char* prefix : {"-specs=", "--specs=", "-fplugin="})
      if (w.rfind(prefix, 0) == 0) files.push_back(w.substr(std::strlen(prefix)));
  }
  return files;
}

std::optional<nlohmann::json> parse_manifest(const std::string& bytes) {
  return parse_cbor(bytes);
}

std::string to_cbor(const nlohmann::json& j) {
  std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(j);
  return std::string(bytes.begin(), bytes.end());
}

// Copies `from` to `to` (both open), returning the bytes' size and SHA-1.
Result<std::pair<std::uint64_t, std::string>> copy_hashing(int from, int to) {
  Sha1 sha;
  std::uint64_t size = 0;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(from, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Failure{std::strerror(errno)};
    if (n == 0) break;
    sha.add(buffer, static_cast<std::size_t>(n));
    size += static_cast<std::uint64_t>(n);
    if (to >= 0) {
      if (Status w = write_all(to, std::string(buffer, static_cast<std::size_t>(n)), "output"); !w)
        return Failure{w.why()};
    }
  }
  return std::make_pair(size, sha.hex());
}

// File times come from the kernel's coarse clock, as does `started`: a change
// in the very tick the build started is not seen, but the compiler is not yet
// running then (the key is hashed and the compiler started after it).
bool later(const struct timespec& a, const struct timespec& b) {
  return ns(a) > ns(b);
}

std::string entry_parent(const std::string& key) {
  return "objects/" + key.substr(0, 2);
}

// The lexically normal form, without a trailing slash.
std::string normal(const std::string& path) {
  std::string p = fs::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// Paths that, if they appeared, would be found before `header`: for each
// search directory the header lies under, the same relative name in every
// directory searched before it. Which directory and name the compiler used
// is not known, so every reading counts, less those whose candidate exists
// now (it existed when the compiler searched, so that reading was not it).
std::vector<std::string> shadowing_candidates(const std::string& header,
                                              const std::vector<std::string>& search) {
  const std::string h = normal(header);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < search.size(); ++i) {
    const std::string& dir = search[i];
    if (h.size() <= dir.size() + 1 || h.compare(0, dir.size(), dir) != 0 || h[dir.size()] != '/')
      continue;
    const std::string rel = h.substr(dir.size() + 1);
    for (std::size_t j = 0; j < i; ++j) {
      std::string candidate = search[j] + "/" + rel;
      struct stat st {};
      if (::stat(candidate.c_str(), &st) != 0) out.push_back(std::move(candidate));
    }
  }
  return out;
}

}  // namespace

std::string cpu_identity() {
  CpuFeatures cpu = read_cpu_features();
  std::string id = cpu.machine;
  for (const std::string& f : cpu.flags) id += " " + f;
  return id;
}

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

Result<std::string> input_manifest(const std::vector<std::string>& paths,
                                   const struct timespec& started) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const std::string& path : paths) {
    struct stat before {};
    if (::stat(path.c_str(), &before) != 0) return Failure{path + " cannot be read"};
    // Changed once the build had started: what the compiler read may not
    // be what is hashed now.
    if (later(before.st_mtim, started) || later(before.st_ctim, started))
      return Failure{path + " changed during the build"};
    auto bytes = read_whole_file(path);
    if (!bytes) return Failure{path + " cannot be read"};
    inputs.push_back(
        {path, static_cast<std::int64_t>(before.st_size), ns(before.st_mtim), sha1_hex(*bytes)});
  }
  return to_cbor(nlohmann::json{{"inputs", inputs}});
}

namespace {

bool input_unchanged(const nlohmann::json& input) {
  const std::string& path = input.at(0).get_ref<const std::string&>();
  FileStamp now = stamp(path);
  if (now.size == input.at(1).get<std::int64_t>() &&
      now.mtime_ns == input.at(2).get<std::int64_t>())
    return true;
  // Touched, or gone: only identical content still counts.
  auto bytes = read_whole_file(path);
  return bytes && sha1_hex(*bytes) == input.at(3).get_ref<const std::string&>();
}

bool manifest_holds(const nlohmann::json& manifest) {
  for (const auto& input : manifest.at("inputs"))
    if (!input_unchanged(input)) return false;
  if (manifest.contains("absent"))
    for (const auto& path : manifest.at("absent")) {
      struct stat st {};
      if (::stat(path.get_ref<const std::string&>().c_str(), &st) == 0)
        return false;  // shadowed now
    }
  if (manifest.contains("libraries"))
    for (const auto& lib : manifest.at("libraries")) {
      FileStamp now = stamp(lib.at(0).get_ref<const std::string&>());
      if (now.size != lib.at(1).get<std::int64_t>() ||
          now.mtime_ns != lib.at(2).get<std::int64_t>())
        return false;
    }
  return true;
}

}  // namespace

bool inputs_unchanged(const std::string& manifest_bytes) {
  auto manifest = parse_manifest(manifest_bytes);
  if (!manifest) return false;
  try {
    return manifest_holds(*manifest);
  } catch (const nlohmann::json::exception&) {
    return false;  // a foreign or damaged manifest is a miss, never an error
  }
}

std::vector<std::string> include_search_dirs(const std::vector<std::string>& argv,
                                             const Environment& env, ProcessRunner& processes) {
  if (argv.empty()) return {};
  // Only the words that change the search list.
  std::vector<std::string> probe{argv[0]};
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    bool takes_value = w == "-I" || w == "-isystem" || w == "-iquote" || w == "-idirafter" ||
                       w == "-isysroot" || w == "--sysroot" || w == "-iprefix" || w == "-B";
    if (takes_value && i + 1 < argv.size()) {
      probe.push_back(w);
      probe.push_back(argv[++i]);
    } else if ((w.rfind("-I", 0) == 0 || w.rfind("-isystem", 0) == 0 ||
                w.rfind("-iquote", 0) == 0 || w.rfind("-idirafter", 0) == 0 ||
                w.rfind("--sysroot=", 0) == 0 || w.rfind("-B", 0) == 0 ||
                w.rfind("-std=", 0) == 0 || w.rfind("-stdlib=", 0) == 0 || w == "-nostdinc" ||
                w == "-nostdinc++" || w == "-m32" || w == "-m64")) {
      probe.push_back(w);
    }
  }
  for (const char* w : {"-E", "-v", "-x", "c++", "/dev/null", "-o", "/dev/null"})
    probe.emplace_back(w);
  ProcessOptions opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(30);
  opts.environment = &env;
  ProcessResult r = processes.run(probe, opts);
  if (!r.success()) return {};
  std::vector<std::string> dirs;
  std::istringstream lines(r.err);
  std::string line;
  bool in_list = false;
  while (std::getline(lines, line)) {
    if (line.rfind("#include ", 0) == 0 && line.find("search starts here") != std::string::npos) {
      in_list = true;
    } else if (line.rfind("End of search list", 0) == 0) {
      break;
    } else if (in_list && line.size() > 1 && line[0] == ' ') {
      std::string dir = line.substr(1);
      const std::string framework = " (framework directory)";
      if (dir.size() > framework.size() &&
          dir.compare(dir.size() - framework.size(), framework.size(), framework) == 0)
        dir.resize(dir.size() - framework.size());
      dirs.push_back(normal(dir));
    }
  }
  return dirs;
}

std::vector<std::string> library_search_dirs(const std::string& compiler,
                                             const std::vector<std::string>& libraries_dirs,
                                             const Environment& env, ProcessRunner& processes) {
  std::vector<std::string> dirs = libraries_dirs;
  auto split = [&dirs](const std::string& list) {
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t colon = list.find(':', start);
      std::string dir =
          list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!dir.empty()) dirs.push_back(dir);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  };
  split(env.get("LIBRARY_PATH").value_or(""));
  ProcessOptions opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(30);
  opts.environment = &env;
  ProcessResult r = processes.run({compiler, "-print-search-dirs"}, opts);
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("libraries: =", 0) == 0) split(line.substr(12));
  for (std::string& d : dirs) d = normal(d);
  return dirs;
}

OutputCache OutputCache::open(const CacheSettings& settings, bool create) {
  OutputCache cache;
  cache.max_bytes_ = settings.max_bytes;
  if (!settings.enabled) return cache;
  if (settings.root.empty()) {
    cache.problem_ = std::string(kNoCacheRoot) + "; building without the cache";
    return cache;
  }
  struct stat st {};
  if (!create && ::stat(settings.root.c_str(), &st) != 0) return cache;
  Result<TrustedDir> root = open_cache_root(settings.root, create);
  if (!root) {
    cache.problem_ = root.why() + "; building without the cache";
    cache.problem_is_warning_ = true;
    return cache;
  }
  cache.root_.emplace(std::move(*root));
  return cache;
}

std::optional<CacheKey> cache_key(const KeyInput& input, const Environment& env) {
  Hasher h;
  h.add(kKeyVersion);
  for (std::size_t i = 0; i < input.argv.size(); ++i)
    h.add(i == input.output_index ? "<output>" : input.argv[i]);
  // The output's extension can matter to the compiler; its directory cannot.
  h.add(fs::path(input.output).extension().string());
  for (const std::string& program : input.programs) h.add(stamp_text(program));
  h.add(fs::current_path().string());
  for (const char* var : kCompilerVariables)
    h.add(std::string(var) + "=" + env.get(var).value_or(""));
  for (const std::string& extra : input.extra) h.add(extra);
  for (const std::string& file : named_files(input.argv)) {
    auto bytes = read_whole_file(file);
    if (!bytes) return std::nullopt;
    h.add(*bytes);
  }
  CacheKey key;
  for (const std::string& s : input.sources) {
    auto bytes = read_whole_file(s);
    if (!bytes) return std::nullopt;
    h.add(*bytes);
    key.source_sha1.push_back(sha1_hex(*bytes));
  }
  h.add(cpu_identity());  // -march=native / -mcpu=native compile for this CPU
  if (input.links)
    for (const std::string& lib : input.libraries)
      for (const std::string& d : input.libraries_dirs)
        for (const char* ext : {".so", ".a"}) h.add(stamp_text(d + "/lib" + lib + ext));
  key.hex = h.hex();
  return key;
}

bool OutputCache::fetch(const std::string& key, int dest) {
  if (!root_) return false;
  Result<TrustedDir> entry = root_->sub(entry_parent(key) + "/" + key, false);
  if (!entry) return false;
  Result<std::string> manifest_bytes = entry->read("manifest", kMaxManifest);
  if (!manifest_bytes) return false;
  auto manifest = parse_manifest(*manifest_bytes);
  try {
    if (!manifest || !manifest_holds(*manifest)) return false;
    Result<UniqueFd> output = entry->open_file("output");
    bool whole = false;
    if (output) {
      auto copied = copy_hashing(output->get(), dest);
      whole = copied && copied->first == manifest->at("size").get<std::uint64_t>() &&
              copied->second == manifest->at("sha1").get_ref<const std::string&>();
    }
    if (!whole) {
      // Truncated, emptied or replaced: never served, and rebuilt.
      Result<TrustedDir> parent = root_->sub(entry_parent(key), false);
      if (parent) (void)parent->remove_tree(key);
      return false;
    }
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  // Least recently used: a hit refreshes the entry.
  if (Result<TrustedDir> parent = root_->sub(entry_parent(key), false)) parent->touch(key);
  return true;
}

Status OutputCache::store(const CacheKey& key, int built, const KeyInput& input,
                          const BuildInputs& inputs) {
  if (!root_) return Failure{"no cache"};
  // A source edited while the compiler ran: the output may not match the key.
  for (std::size_t i = 0; i < input.sources.size() && i < key.source_sha1.size(); ++i) {
    auto bytes = read_whole_file(input.sources[i]);
    if (!bytes || sha1_hex(*bytes) != key.source_sha1[i])
      return Failure{input.sources[i] + " changed during the build"};
  }
  std::vector<std::string> headers = parse_depfile(inputs.depfile_text);
  Result<std::string> listed = input_manifest(headers, inputs.started);
  if (!listed) return Failure{listed.why()};
  nlohmann::json manifest = nlohmann::json::from_cbor(*listed);
  nlohmann::json absent = nlohmann::json::array();
  std::vector<std::string> search = inputs.include_search;
  // A quoted include is looked for beside the source first.
  for (const std::string& s : input.sources)
    search.insert(search.begin(), normal(fs::absolute(s).parent_path().string()));
  for (const std::string& header : headers)
    for (const std::string& candidate : shadowing_candidates(fs::absolute(header).string(), search))
      absent.push_back(candidate);
  manifest["absent"] = absent;
  nlohmann::json libraries = nlohmann::json::array();
  for (const std::string& lib : input.libraries)
    for (const std::string& d : inputs.library_search)
      for (const char* ext : {".so", ".a"}) {
        std::string path = d + "/lib" + lib + ext;
        FileStamp st = stamp(path);
        libraries.push_back({path, st.size, st.mtime_ns});
      }
  manifest["libraries"] = libraries;
  if (::lseek(built, 0, SEEK_SET) != 0) return Failure{"cannot read the output"};

  Result<TrustedDir> tmp = root_->sub("tmp", true);
  if (!tmp) return Failure{tmp.why()};
  const std::string staging = unique_suffix();
  if (::mkdirat(tmp->fd(), staging.c_str(), 0700) != 0)
    return Failure{"cannot create a cache entry"};
  Result<TrustedDir> stage = tmp->sub(staging, false);
  Status done = stage ? ok() : Failure{stage.why()};
  if (done) {
    Result<UniqueFd> out = stage->create_file("output", 0644);
    auto copied = out ? copy_hashing(built, out->get())
                      : Result<std::pair<std::uint64_t, std::string>>(Failure{out.why()});
    if (!copied) done = Failure{copied.why()};
    if (done) {
      manifest["size"] = copied->first;
      manifest["sha1"] = copied->second;
      done = stage->write_atomically("manifest", to_cbor(manifest));
    }
  }
  Result<TrustedDir> parent =
      done ? root_->sub(entry_parent(key.hex), true) : Result<TrustedDir>(Failure{done.why()});
  if (done && !parent) done = Failure{parent.why()};
  if (done) {
    // An older entry for this key (its headers changed) is replaced.
    if (parent->exists(key.hex)) {
      const std::string old = "old." + unique_suffix();
      if (parent->rename(key.hex, *tmp, old)) (void)tmp->remove_tree(old);
    }
    done = tmp->rename(staging, *parent, key.hex);  // atomic: the whole entry or nothing
  }
  (void)tmp->remove_tree(staging);
  return done;
}

void OutputCache::count(bool hit) {
  if (!root_) return;
  DirLock lock(*root_, "stats.lock");
  if (!lock.held()) return;
  nlohmann::json stats = nlohmann::json::object();
  if (Result<std::string> text = root_->read("stats.json", 1 << 16)) {
    try {
      stats = parse_json_text(*text);
      if (!stats.is_object()) stats = nlohmann::json::object();
    } catch (const JsonSyntaxError&) {  // damaged: counting starts again
      stats = nlohmann::json::object();
    }
  }
  const char* field = hit ? "hits" : "misses";
  std::uint64_t before = stats.contains(field) && stats[field].is_number_unsigned()
                             ? stats[field].get<std::uint64_t>()
                             : 0;
  stats[field] = before + 1;
  (void)root_->write_atomically("stats.json", stats.dump());
}

namespace {

struct EntryInfo {
  std::string parent, key;
  std::int64_t used_ns = 0;
  std::uint64_t bytes = 0;
};

std::vector<EntryInfo> list_entries(const TrustedDir& root) {
  std::vector<EntryInfo> entries;
  Result<TrustedDir> objects = root.sub("objects", false);
  if (!objects) return entries;
  for (const std::string& prefix : objects->list()) {
    Result<TrustedDir> parent = objects->sub(prefix, false);
    if (!parent) continue;
    for (const std::string& key : parent->list()) {
      auto dir_st = parent->status(key);
      if (!dir_st || !S_ISDIR(dir_st->st_mode)) continue;
      Result<TrustedDir> entry = parent->sub(key, false);
      if (!entry) continue;
      auto out = entry->status("output");
      if (!out || !S_ISREG(out->st_mode)) continue;
      entries.push_back({"objects/" + prefix, key, ns(dir_st->st_mtim),
                         static_cast<std::uint64_t>(out->st_size)});
    }
  }
  return entries;
}

}  // namespace

CacheStats OutputCache::stats() const {
  CacheStats st;
  if (!root_) return st;
  for (const EntryInfo& e : list_entries(*root_)) {
    ++st.entries;
    st.bytes += e.bytes;
  }
  if (Result<std::string> text = root_->read("stats.json", 1 << 16)) {
    try {
      auto j = parse_json_text(*text);
      if (j.is_object()) {
        if (j.contains("hits") && j["hits"].is_number_unsigned())
          st.hits = j["hits"].get<std::uint64_t>();
        if (j.contains("misses") && j["misses"].is_number_unsigned())
          st.misses = j["misses"].get<std::uint64_t>();
      }
    } catch (const JsonSyntaxError&) {  // damaged: no counts
    }
  }
  return st;
}

void OutputCache::evict() {
  if (!root_) return;
  std::vector<EntryInfo> items = list_entries(*root_);
  std::uint64_t total = 0;
  for (const EntryInfo& e : items) total += e.bytes;
  if (total <= max_bytes_) return;
  std::sort(items.begin(), items.end(),
            [](const EntryInfo& a, const EntryInfo& b) { return a.used_ns < b.used_ns; });
  // Down to 90% of the limit, so eviction does not run on every store.
  for (const EntryInfo& item : items) {
    if (total <= max_bytes_ / 10 * 9) break;
    Result<TrustedDir> parent = root_->sub(item.parent, false);
    if (parent) (void)parent->remove_tree(item.key);
    total -= item.bytes;
  }
}

}  // namespace kbuild
