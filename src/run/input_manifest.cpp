
#include "run/input_manifest.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <limits>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "util/digest.hpp"
#include "util/file_system.hpp"
#include "util/json.hpp"

namespace fs = std::filesystem;
using namespace std::string_view_literals;

namespace kbuild {

FileStamp stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<std::int64_t>(st.st_size), ns(st.st_mtim)};
}

std::string stamp_text(const std::string& path) {
  FileStamp st = stamp(path);
  return path + ":" + std::to_string(st.size) + ":" + std::to_string(st.mtime_ns);
}

std::optional<nlohmann::json> parse_manifest(const std::string& bytes) {
  return parse_cbor(bytes);
}

std::string to_cbor(const nlohmann::json& j) {
  std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(j);
  return std::string(bytes.begin(), bytes.end());
}

// File times come from the kernel's coarse clock, as does `started`: a change
// in the very tick the build started is not seen, but the compiler is not yet
// running then (the key is hashed and the compiler started after it).
bool later(const struct timespec& a, const struct timespec& b) {
  return ns(a) > ns(b);
}

namespace {

bool under(std::string_view path, std::string_view dir) {
  return path.size() >= dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         (path.size() == dir.size() || path[dir.size()] == '/' || dir == "/");
}

// `path` made absolute from the working directory and lexically normal, for
// telling where it lies.
std::string absolute_normal(const std::string& path) {
  return normal_path(path[0] == '/' ? path : (fs::current_path() / path).string());
}

bool is_system_file(std::string_view path) {
  return under(path, "/proc") || under(path, "/dev") || under(path, "/sys");
}

// The directory `path` is in, as recorded ("." for a bare name). A hit
// asks this of every absent path: memrchr, not a loop a byte at a time.
[[gnu::always_inline]] inline std::string_view parent_of(std::string_view path) {
  const void* slash = path.empty() ? nullptr : ::memrchr(path.data(), '/', path.size());
  if (!slash) return "."sv;
  const auto at = static_cast<std::size_t>(static_cast<const char*>(slash) - path.data());
  return at == 0 ? "/"sv : std::string_view(path.data(), at);
}

// The paths a dangling link at `path` leads through (each further link of
// its chain, then the missing one it ends at, spelled as the kernel walks
// them: no ".." folded), or nothing when `path` resolves after all. Each
// stat fails, so each is an absence the build depended on.
std::optional<std::vector<std::string>> dangling_chain(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 || (errno != ENOENT && errno != ENOTDIR)) return std::nullopt;
  std::vector<std::string> chain;
  std::string hop = path;
  for (int links = 0; links < 40; ++links) {
    std::array<char, 4096> buf{};
    const ssize_t n = ::readlink(hop.c_str(), buf.data(), buf.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= buf.size()) return chain;  // missing below
    std::string target(buf.data(), static_cast<std::size_t>(n));
    if (target[0] != '/') target = std::string(parent_of(hop)) + "/" + target;
    chain.push_back(target);
    if (::lstat(target.c_str(), &st) != 0) return chain;
    hop = std::move(target);
  }
  return std::nullopt;
}

// The digest of a directory's sorted names: what a listing of it saw.
std::optional<std::string> names_digest(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    names.push_back(entry.path().filename().string());
  if (ec) return std::nullopt;
  std::sort(names.begin(), names.end());
  Digest digest;
  for (const std::string& name : names) digest.add(name.data(), name.size() + 1);
  return digest.hex();
}

// The "dirs" that stand for `absent` paths: for each, its directory or,
// when that does not exist, each missing directory up to the nearest one
// that does (kNoDirectory twice), and that one with its stamps, when they
// are older than `started` (or settled on the file system's clock, without
// one: a change within the clock's tick would not show). While that
// directory's stamps hold, nothing was added to it, so its missing child is
// still missing and every path under it absent: a hit stats a few dozen
// directories, not thousands of paths. A directory that cannot be trusted
// is left out: its paths are checked one by one.
nlohmann::json absence_dirs(const std::vector<std::string_view>& absent,
                            const struct timespec* started) {
  nlohmann::json dirs = nlohmann::json::array();
  std::unordered_set<std::string> seen;
  for (std::string_view path : absent) {
    for (std::string_view dir = parent_of(path);; dir = parent_of(dir)) {
      if (!seen.emplace(dir).second) break;  // recorded, with what lies above it
      const std::string name(dir);
      struct stat st {};
      if (::stat(name.c_str(), &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) break;
        dirs.push_back({name, kNoDirectory, kNoDirectory});
        if (dir == "/" || dir == ".") break;
        continue;
      }
      const bool steady = started ? !later(st.st_mtim, *started) && !later(st.st_ctim, *started)
                                  : file_system().settled(st);
      if (S_ISDIR(st.st_mode) && steady) dirs.push_back({name, ns(st.st_mtim), ns(st.st_ctim)});
      break;
    }
  }
  return dirs;
}

bool presentation_only(std::string_view name) {
  return std::any_of(std::begin(kPresentationVariables), std::end(kPresentationVariables),
                     [name](const char* v) { return name == v; });
}

}  // namespace

const char* uncacheable_name(Uncacheable reason) {
  switch (reason) {
    case Uncacheable::unobserved: return "unobserved";
    case Uncacheable::side_output: return "side_output";
    case Uncacheable::input_changed: return "input_changed";
    case Uncacheable::clock: return "clock";
    case Uncacheable::unkeyed: return "unkeyed";
    case Uncacheable::not_stored: return "not_stored";
  }
  return "not_stored";
}

Result<std::string> observed_manifest(const Observation& observed, const ObservedBuild& build,
                                      Uncacheable* reason) {
  // Every failure below says why in words, and its kind in `reason`.
  auto refuse = [reason](Uncacheable kind, std::string why) -> Failure {
    if (reason) *reason = kind;
    return Failure{std::move(why)};
  };
  if (!observed.unobservable.empty()) return refuse(Uncacheable::unobserved, observed.unobservable);
  if (!observed.reported)
    return refuse(Uncacheable::unobserved,
                  "the compiler could not be observed (kbuild's observer library did not load)");
  if (!observed.unobserved.empty())
    return refuse(Uncacheable::unobserved,
                  observed.unobserved.front() +
                      " ran but could not be observed (statically linked or setuid, so the "
                      "preload is ignored)");
  const std::string work_dir = build.work_dir.empty() ? "" : absolute_normal(build.work_dir);
  std::unordered_set<std::string> own;
  for (const std::string& f : build.own_files) own.insert(absolute_normal(f));
  auto is_private = [&work_dir](const std::string& absolute) {
    return is_system_file(absolute) || (!work_dir.empty() && under(absolute, work_dir));
  };
  auto is_record = [&work_dir](const std::string& absolute) {
    return !work_dir.empty() && under(absolute, work_dir) &&
           absolute.compare(work_dir.size(), 10, "/observed.") == 0;
  };
  std::unordered_set<std::string> written;
  for (const std::string& path : observed.written) {
    const std::string absolute = absolute_normal(path);
    written.insert(absolute);
    struct stat st {};
    // Written besides the output and still there: a side output, which a
    // hit could not give back. Temporary files the build removed are not.
    if (!own.count(absolute) && !is_record(absolute) && !is_system_file(absolute) &&
        ::lstat(path.c_str(), &st) == 0)
      return refuse(Uncacheable::side_output,
                    "the compiler wrote " + path + " besides its output (a side output)");
  }
  // A file only appended to (a wrapper's log of its runs) is not an output
  // a hit must give back, nor an input.
  for (const std::string& path : observed.appended) written.insert(absolute_normal(path));
  nlohmann::json inputs = nlohmann::json::array();
  std::unordered_set<std::string> recorded;
  auto add_input = [&](const std::string& path) -> Status {
    const std::string absolute = absolute_normal(path);
    if (is_private(absolute) || written.count(absolute) || !recorded.insert(absolute).second)
      return ok();
    struct stat before {};
    if (::stat(path.c_str(), &before) != 0)
      return Failure{path + " was read by the compiler but is gone"};
    if (!S_ISREG(before.st_mode)) return ok();  // a directory opened, a terminal
    if (later(before.st_mtim, build.started) || later(before.st_ctim, build.started))
      return Failure{path + " changed during the build"};
    // Hashed while the compiler ran, that same version; else now.
    const EarlyDigests::Look* early = build.early ? build.early->find(path, before) : nullptr;
    std::optional<std::string> digest =
        early ? early->digest : file_digest(path, build.cache, kRememberDigestFrom);
    if (!digest) return Failure{path + " cannot be read"};
    inputs.push_back(
        {path, static_cast<std::int64_t>(before.st_size), ns(before.st_mtim), std::move(*digest)});
    return ok();
  };
  for (const std::string& program : build.key_programs) {
    std::error_code ec;
    const fs::path real = fs::canonical(program, ec);
    recorded.insert(absolute_normal(ec ? program : real.string()));  // keyed already
    recorded.insert(absolute_normal(program));
  }
  for (const std::string& path : observed.read)
    if (Status added = add_input(path); !added)
      return refuse(Uncacheable::input_changed, added.why());
  for (const std::string& program : observed.executed)
    if (Status added = add_input(program); !added)
      return refuse(Uncacheable::input_changed, added.why());
  // Absent paths, and the directories they would appear in, stamped when
  // their stamps predate the build (a change during it would be missed).
  nlohmann::json absent = nlohmann::json::array();
  std::vector<std::string_view> absent_paths;
  std::deque<std::string> chains;  // where dangling links lead: stable storage
  for (const std::string& path : observed.absent) {
    const std::string absolute = absolute_normal(path);
    if (is_private(absolute) || written.count(absolute)) continue;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      // A dangling link (a GCC's library directory may hold one): the
      // lookup found nothing through it, so what it names must stay absent
      // too; the link itself stays while its directory's stamps hold.
      std::optional<std::vector<std::string>> chain = dangling_chain(path);
      if (!chain)
        return refuse(Uncacheable::input_changed, path + " appeared while the compiler ran");
      for (std::string& hop : *chain) {
        absent.push_back(hop);
        absent_paths.push_back(chains.emplace_back(std::move(hop)));
      }
    }
    absent.push_back(path);
    absent_paths.push_back(path);
  }
  nlohmann::json dirs = absence_dirs(absent_paths, &build.started);
  // A variable counts as the compiler's environment gave it; a value a
  // program of the build set for its children (COLLECT_GCC_OPTIONS) follows
  // from what was observed already.
  nlohmann::json variables = nlohmann::json::array();
  std::unordered_set<std::string> named;
  for (const auto& [name, value] : observed.variables) {
    if (presentation_only(name) || named.count(name)) continue;
    const std::optional<std::string> given = build.env ? build.env->get(name) : std::nullopt;
    if (given != value) continue;
    named.insert(name);
    variables.push_back({name, value ? nlohmann::json(*value) : nlohmann::json(nullptr)});
  }
  nlohmann::json listed = nlohmann::json::array();
  for (const std::string& dir : observed.listed) {
    if (is_private(absolute_normal(dir))) continue;
    std::optional<std::string> digest = names_digest(dir);
    if (!digest)
      return refuse(Uncacheable::input_changed,
                    "the directory " + dir + " the compiler listed cannot be read");
    listed.push_back({dir, *digest});
  }
  // In one order whatever order the programs ran in: machines that read
  // the same files store the same manifest.
  for (nlohmann::json* list : {&inputs, &absent, &dirs, &variables, &listed})
    std::sort(list->begin(), list->end());
  absent.erase(std::unique(absent.begin(), absent.end()), absent.end());  // links' ends shared
  return to_cbor(nlohmann::json{{"inputs", inputs},
                                {"absent", absent},
                                {"dirs", dirs},
                                {"variables", variables},
                                {"listed", listed}});
}

namespace {

// stat(2) by a file's name in its directory, the directory opened once
// (O_PATH) for the files in it: the kernel walks a directory's path once,
// not once per file (a hit stats thousands of headers in a few hundred
// directories). The same answer as stat(path): the path resolves the same
// way, its last part followed if a symlink. A manifest's files are sorted,
// so a directory's files come in a few runs and a few open directories
// serve them all.
class DirStat {
 public:
  DirStat() = default;
  DirStat(const DirStat&) = delete;
  DirStat& operator=(const DirStat&) = delete;
  ~DirStat() {
    for (Slot& slot : slots_)
      if (slot.fd >= 0) ::close(slot.fd);
  }

  int stat(std::string_view path, struct stat& st) {
    const char* slash =
        path.empty() ? nullptr : static_cast<const char*>(::memrchr(path.data(), '/', path.size()));
    const std::size_t name_at = slash ? static_cast<std::size_t>(slash - path.data()) + 1 : 0;
    const std::size_t name_size = path.size() - name_at;
    if (slash && name_size > 0 && name_size <= NAME_MAX) {
      const int dir = open_dir(name_at == 1 ? "/"sv : path.substr(0, name_at - 1));
      if (dir >= 0) {
        char name[NAME_MAX + 1];
        std::memcpy(name, path.data() + name_at, name_size);
        name[name_size] = '\0';
        return ::fstatat(dir, name, &st, 0);
      }
    }
    path_.assign(path);  // a bare name, or a directory that cannot be opened
    return ::stat(path_.c_str(), &st);
  }

 private:
  struct Slot {
    std::string dir;
    int fd = -1;
    unsigned used = 0;
  };
  // The directory's descriptor, -1 when it cannot be opened.
  int open_dir(std::string_view dir) {
    Slot* oldest = &slots_[0];
    for (Slot& slot : slots_) {
      if (slot.used && slot.dir == dir) {
        slot.used = ++clock_;
        return slot.fd;
      }
      if (slot.used < oldest->used) oldest = &slot;
    }
    if (oldest->fd >= 0) ::close(oldest->fd);
    oldest->dir.assign(dir);
    oldest->fd = ::open(oldest->dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    oldest->used = ++clock_;
    return oldest->fd;
  }
  std::array<Slot, 8> slots_;
  unsigned clock_ = 0;
  std::string path_;
};

bool input_unchanged(const ManifestInput& input, DirStat& files) {
  struct stat st {};
  if (files.stat(input.path, st) == 0 && st.st_size == input.size &&
      ns(st.st_mtim) == input.mtime_ns)
    return true;
  // Touched, or gone: only identical content still counts.
  auto bytes = read_whole_file(std::string(input.path));
  return bytes && digest_hex(*bytes) == input.digest;
}

// The index of the first of inputs[from, to) that changed, else `to`.
std::size_t first_changed(const std::vector<ManifestInput>& inputs, std::size_t from,
                          std::size_t to) {
  DirStat files;
  for (std::size_t i = from; i < to; ++i)
    if (!input_unchanged(inputs[i], files)) return i;
  return to;
}

// Whether paths exist, asking about a directory before what is in it: most
// shadowing candidates lie in directories that do not exist (the source's
// directory + "bits/"...), so one stat answers for all of them.
class ExistenceCheck {
 public:
  bool exists(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0 && !directory_exists(path.substr(0, slash)))
      return false;
    path_.assign(path);
    struct stat st {};
    return ::stat(path_.c_str(), &st) == 0;
  }

 private:
  bool directory_exists(std::string_view dir) {
    auto known = dirs_.find(std::string(dir));
    if (known != dirs_.end()) return known->second;
    bool found = exists(dir);  // its parent first, remembered too
    dirs_.emplace(std::string(dir), found);
    return found;
  }
  std::string path_;  // reused: no allocation per path
  std::unordered_map<std::string, bool> dirs_;
};

}  // namespace

namespace {

// Whether a directory's stamps are still those recorded: nothing was added
// to it or removed from it since.
bool dir_unchanged(const ManifestDir& dir, std::string& path) {
  path.assign(dir.path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return dir.mtime_ns == kNoDirectory && (errno == ENOENT || errno == ENOTDIR);
  return S_ISDIR(st.st_mode) && ns(st.st_mtim) == dir.mtime_ns && ns(st.st_ctim) == dir.ctime_ns;
}

bool machine_variable(std::string_view name) {
  return std::any_of(std::begin(kMachineVariables), std::end(kMachineVariables),
                     [name](const char* v) { return name == v; });
}

std::optional<StaleInput> variables_stale(const ManifestView& manifest, const Environment& env,
                                          bool same_machine) {
  for (const ManifestVariable& v : manifest.variables) {
    if (!same_machine && machine_variable(v.name)) continue;
    const std::optional<std::string> now = env.get(std::string(v.name));
    if (now.has_value() != v.value.has_value() || (now && *now != *v.value))
      return StaleInput{StaleKind::variable_differs, std::string(v.name)};
  }
  return std::nullopt;
}

std::optional<StaleInput> listings_stale(const ManifestView& manifest) {
  for (const ManifestListing& l : manifest.listed) {
    std::optional<std::string> now = names_digest(std::string(l.path));
    if (!now || *now != l.digest)
      return StaleInput{StaleKind::listing_changed, std::string(l.path)};
  }
  return std::nullopt;
}

// Whether every absent path is still absent: through the directories that
// stand for it (absence_dirs: missing ones up to the nearest that exists,
// whose stamps must hold, one stat each), else one by one.
class AbsenceCheck {
 public:
  explicit AbsenceCheck(const ManifestView& manifest) {
    known_.reserve(manifest.dirs.size() * 2);
    for (const ManifestDir& dir : manifest.dirs) {
      const ManifestDir*& recorded = known_[dir.path].dir;
      if (!recorded || dir.mtime_ns == kNoDirectory) recorded = &dir;  // missing, if said twice
    }
  }
  bool holds(std::string_view absent) {
    const std::string_view dir = parent_of(absent);
    // The list is sorted: a path's directory is mostly the last one's.
    if (dir != last_dir_) {
      last_covered_ = covered(dir);
      last_dir_ = dir;
    }
    return last_covered_ || !existence_.exists(absent);
  }

 private:
  struct Known {
    const ManifestDir* dir = nullptr;  // as recorded, if it is
    signed char covered = -1;          // not known yet
  };
  // Whether nothing can have appeared in `dir`: it is recorded missing and
  // so is everything up to an ancestor recorded with its stamps, which
  // still hold; or it is recorded with its stamps, which hold. Each
  // directory is asked once.
  bool covered(std::string_view dir) {
    Known& known = known_[dir];  // elements stay where they are as the map grows
    if (known.covered >= 0) return known.covered != 0;
    bool result = false;
    if (known.dir && known.dir->mtime_ns == kNoDirectory)
      result = dir != "/"sv && dir != "."sv && covered(parent_of(dir));
    else if (known.dir)
      result = dir_unchanged(*known.dir, path_);
    known.covered = result ? 1 : 0;
    return result;
  }
  std::unordered_map<std::string_view, Known> known_;
  ExistenceCheck existence_;
  std::string path_;
  std::string_view last_dir_;
  bool last_covered_ = false;
};

std::optional<StaleInput> absences_stale(const ManifestView& manifest) {
  AbsenceCheck check(manifest);
  for (std::string_view absent : manifest.absent)
    if (!check.holds(absent))  // shadowed now
      return StaleInput{StaleKind::path_appeared, std::string(absent)};
  return std::nullopt;
}

std::optional<StaleInput> libraries_stale(const ManifestView& manifest) {
  std::string path;
  for (const ManifestLibrary& lib : manifest.libraries) {
    path.assign(lib.path);
    FileStamp now = stamp(path);
    if (now.size != lib.size || now.mtime_ns != lib.mtime_ns)
      return StaleInput{StaleKind::library_changed, path};
  }
  return std::nullopt;
}

}  // namespace

const char* stale_kind_name(StaleKind kind) {
  switch (kind) {
    case StaleKind::file_changed: return "file_changed";
    case StaleKind::path_appeared: return "path_appeared";
    case StaleKind::variable_differs: return "variable_differs";
    case StaleKind::listing_changed: return "listing_changed";
    case StaleKind::library_changed: return "library_changed";
    case StaleKind::damaged: return "damaged";
  }
  return "damaged";
}

std::string describe(const StaleInput& stale) {
  switch (stale.kind) {
    case StaleKind::file_changed: return stale.what + " changed";
    case StaleKind::path_appeared: return stale.what + " appeared";
    case StaleKind::variable_differs: return "the variable " + stale.what + " differs";
    case StaleKind::listing_changed: return "the listing of " + stale.what + " changed";
    case StaleKind::library_changed: return "the library " + stale.what + " changed";
    case StaleKind::damaged: return "its manifest is damaged";
  }
  return "its manifest is damaged";
}

std::optional<std::size_t> first_changed_input(const std::vector<ManifestInput>& inputs,
                                               unsigned sweeps) {
  const std::size_t n = inputs.size();
  std::size_t found = n;
  if (sweeps < 2 || n < 2) {
    found = first_changed(inputs, 0, n);
  } else {
    // The first half on a thread of its own, the second here.
    const std::size_t half = n / 2;
    std::size_t first_half = half;
    std::exception_ptr failed;
    std::thread sweep;
    try {
      sweep = std::thread([&] {
        try {
          first_half = first_changed(inputs, 0, half);
        } catch (...) {
          failed = std::current_exception();
        }
      });
    } catch (const std::system_error&) {  // no thread: this one does both halves
      first_half = first_changed(inputs, 0, half);
    }
    std::size_t second_half = n;
    try {
      second_half = first_changed(inputs, half, n);
    } catch (...) {
      if (sweep.joinable()) sweep.join();
      throw;
    }
    if (sweep.joinable()) sweep.join();
    if (failed) std::rethrow_exception(failed);
    found = first_half < half ? first_half : second_half;
  }
  return found < n ? std::optional<std::size_t>(found) : std::nullopt;
}

std::optional<StaleInput> manifest_stale(const ManifestView& manifest, const Environment& env) {
  if (auto stale = variables_stale(manifest, env, true)) return stale;
  // Two sweeps when there are many files and two CPUs (each sweep is
  // mostly waiting on the kernel's stat).
  const unsigned sweeps =
      manifest.inputs.size() >= kTwoSweepFiles && std::thread::hardware_concurrency() > 1 ? 2 : 1;
  if (std::optional<std::size_t> changed = first_changed_input(manifest.inputs, sweeps))
    return StaleInput{StaleKind::file_changed, std::string(manifest.inputs[*changed].path)};
  if (auto stale = absences_stale(manifest)) return stale;
  if (auto stale = listings_stale(manifest)) return stale;
  return libraries_stale(manifest);
}

bool inputs_unchanged(const std::string& manifest_bytes, const Environment& env) {
  std::optional<ManifestView> manifest = read_manifest(manifest_bytes);
  return manifest && manifest_holds(*manifest, env);  // a foreign or damaged one: a miss
}

std::optional<std::string> restamped_here(const std::string& bytes, const Environment& env,
                                          std::optional<StaleInput>* stale) {
  auto differs = [stale](StaleInput why) -> std::optional<std::string> {
    if (stale) *stale = std::move(why);
    return std::nullopt;
  };
  std::optional<ManifestView> view = read_manifest(bytes);
  std::optional<nlohmann::json> manifest = parse_manifest(bytes);
  if (!view || !manifest || !manifest->contains("inputs")) return differs({});
  ManifestView rest = *view;  // absent paths one by one: the writer's directory stamps are its own
  rest.inputs.clear();
  rest.dirs.clear();
  if (auto why = variables_stale(rest, env, false)) return differs(*why);
  if (auto why = absences_stale(rest)) return differs(*why);
  if (auto why = listings_stale(rest)) return differs(*why);
  if (auto why = libraries_stale(rest)) return differs(*why);
  for (nlohmann::json& record : (*manifest)["inputs"]) {
    if (!record.is_array() || record.size() < 4 || !record[0].is_string() || !record[3].is_string())
      return differs({});
    const std::string path = record[0].get<std::string>();
    struct stat before {
    }, after{};
    if (::stat(path.c_str(), &before) != 0) return differs({StaleKind::file_changed, path});
    auto content = read_whole_file(path);
    if (!content || digest_hex(*content) != record[3].get<std::string>())
      return differs({StaleKind::file_changed, path});
    // Changed while it was read: its stamp would not be that content's.
    if (::stat(path.c_str(), &after) != 0 || after.st_size != before.st_size ||
        ns(after.st_mtim) != ns(before.st_mtim) || ns(after.st_ctim) != ns(before.st_ctim))
      return differs({StaleKind::file_changed, path});
    record[1] = static_cast<std::int64_t>(after.st_size);
    record[2] = ns(after.st_mtim);
  }
  // This machine's stamps of the directories (settled ones: a change within
  // the clock's tick would not show), and its own PATH.
  nlohmann::json dirs = absence_dirs(view->absent, nullptr);
  std::sort(dirs.begin(), dirs.end());
  (*manifest)["dirs"] = dirs;
  if (manifest->contains("variables") && (*manifest)["variables"].is_array())
    for (nlohmann::json& variable : (*manifest)["variables"])
      if (variable.is_array() && variable.size() == 2 && variable[0].is_string() &&
          machine_variable(variable[0].get<std::string>())) {
        std::optional<std::string> here = env.get(variable[0].get<std::string>());
        variable[1] = here ? nlohmann::json(*here) : nlohmann::json(nullptr);
      }
  return to_cbor(*manifest);
}

std::optional<std::string> shareable_manifest(const std::string& bytes) {
  std::optional<nlohmann::json> manifest = parse_manifest(bytes);
  if (!manifest || !manifest->is_object()) return std::nullopt;
  manifest->erase("dirs");
  if (manifest->contains("variables") && (*manifest)["variables"].is_array())
    for (nlohmann::json& variable : (*manifest)["variables"])
      if (variable.is_array() && variable.size() == 2 && variable[0].is_string() &&
          machine_variable(variable[0].get<std::string>()))
        variable[1] = kMachineValue;
  return to_cbor(*manifest);
}

namespace {

void rebase_path(nlohmann::json& path, const std::string& from, const std::string& to) {
  if (!path.is_string()) return;
  const std::string& p = path.get_ref<const std::string&>();
  if (p.rfind(from, 0) == 0 && (p.size() == from.size() || p[from.size()] == '/'))
    path = to + p.substr(from.size());
}

// A path as make reads it in a dependency file (as g++ writes it).
std::string make_quoted(const std::string& path) {
  std::string quoted;
  for (char c : path) {
    if (c == ' ' || c == '\t' || c == '#') quoted += '\\';
    if (c == '$') quoted += '$';
    quoted += c;
  }
  return quoted;
}

}  // namespace

std::string rebase_depfile(const std::string& depfile, const std::string& from,
                           const std::string& to) {
  const std::string old = make_quoted(from), now = make_quoted(to);
  std::string out;
  for (std::size_t at = 0; at < depfile.size();) {
    const bool starts_word =
        at == 0 || depfile[at - 1] == ' ' || depfile[at - 1] == '\n' || depfile[at - 1] == '\t';
    const std::size_t end = at + old.size();
    if (starts_word && depfile.compare(at, old.size(), old) == 0 &&
        (end == depfile.size() || std::strchr("/ \n\t:", depfile[end]))) {
      out += now;
      at = end;
    } else {
      out += depfile[at++];
    }
  }
  return out;
}

std::optional<std::string> rebase_manifest(const std::string& bytes, const std::string& from,
                                           const std::string& to) {
  std::optional<nlohmann::json> manifest = parse_manifest(bytes);
  if (!manifest || !manifest->is_object()) return std::nullopt;
  for (const char* list : {"inputs", "libraries", "dirs", "listed"})
    if (manifest->contains(list) && (*manifest)[list].is_array())
      for (nlohmann::json& record : (*manifest)[list])
        if (record.is_array() && !record.empty()) rebase_path(record[0], from, to);
  // A variable's value that is a path under the base (PWD).
  if (manifest->contains("variables") && (*manifest)["variables"].is_array())
    for (nlohmann::json& record : (*manifest)["variables"])
      if (record.is_array() && record.size() == 2) rebase_path(record[1], from, to);
  if (manifest->contains("absent") && (*manifest)["absent"].is_array())
    for (nlohmann::json& path : (*manifest)["absent"]) rebase_path(path, from, to);
  if (manifest->contains("depfile")) {
    nlohmann::json& stored = (*manifest)["depfile"];
    if (!stored.is_binary()) return std::nullopt;
    const auto& frame = stored.get_binary();
    Result<std::string> depfile = zstd_decompress(
        std::string_view(reinterpret_cast<const char*>(frame.data()), frame.size()), kMaxDepfile);
    if (!depfile) return std::nullopt;
    const std::string moved = zstd_compress(rebase_depfile(*depfile, from, to));
    stored = nlohmann::json::binary({moved.begin(), moved.end()});
  }
  return to_cbor(*manifest);
}

}  // namespace kbuild

namespace kbuild {

namespace {

enum Major : std::uint8_t {
  kUnsigned = 0,
  kNegative = 1,
  kBytes = 2,
  kText = 3,
  kArray = 4,
  kMap = 5
};

// A definite-length CBOR reader over `in`: every read checks what is left,
// so a truncated or altered manifest fails, never reads past its end. Its
// steps run for every field of a manifest of thousands of paths: inlined,
// even in a build for size.
class Cursor {
 public:
  explicit Cursor(std::string_view in) : in_(in) {}
  bool done() const { return at_ == in_.size(); }
  std::size_t at() const { return at_; }

  // An item's major type and argument (indefinite lengths are refused).
  [[gnu::always_inline]] inline bool head(std::uint8_t& major, std::uint64_t& arg) {
    if (at_ >= in_.size()) return false;
    const auto first = static_cast<std::uint8_t>(in_[at_++]);
    major = first >> 5;
    const std::uint8_t info = first & 0x1f;
    if (info < 24) {
      arg = info;
      return true;
    }
    if (info > 27) return false;
    const std::size_t width = std::size_t(1) << (info - 24);
    if (in_.size() - at_ < width) return false;
    const auto* p = reinterpret_cast<const unsigned char*>(in_.data() + at_);
    auto byte = [p](int i) { return static_cast<std::uint64_t>(p[i]); };
    switch (width) {  // big-endian
      case 1: arg = byte(0); break;
      case 2: arg = byte(0) << 8 | byte(1); break;
      case 4: arg = byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3); break;
      default:
        arg = byte(0) << 56 | byte(1) << 48 | byte(2) << 40 | byte(3) << 32 | byte(4) << 24 |
              byte(5) << 16 | byte(6) << 8 | byte(7);
    }
    at_ += width;
    return true;
  }
  [[gnu::always_inline]] inline bool text(std::string_view& out) {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    if (!head(major, n) || major != kText || n > in_.size() - at_) return false;
    out = std::string_view(in_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool bytes(std::string_view& out) {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    if (!head(major, n) || major != kBytes || n > in_.size() - at_) return false;
    out = in_.substr(at_, n);
    at_ += n;
    return true;
  }
  [[gnu::always_inline]] inline bool integer(std::int64_t& out) {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (!head(major, n) || (major != kUnsigned && major != kNegative) || n > kMax) return false;
    out = major == kUnsigned ? static_cast<std::int64_t>(n) : -1 - static_cast<std::int64_t>(n);
    return true;
  }
  // A text, or null (CBOR's simple value 22).
  bool text_or_null(std::optional<std::string_view>& out) {
    if (at_ < in_.size() && static_cast<std::uint8_t>(in_[at_]) == 0xf6) {
      ++at_;
      out.reset();
      return true;
    }
    std::string_view text_value;
    if (!text(text_value)) return false;
    out = text_value;
    return true;
  }
  bool unsigned_integer(std::uint64_t& out) {
    std::uint8_t major = 0;
    return head(major, out) && major == kUnsigned;
  }
  // An array's length; each element takes a byte at least, so a length
  // beyond what is left is damage (and never sizes an allocation).
  bool array(std::uint64_t& n) { return container(kArray, n); }
  bool map(std::uint64_t& n) { return container(kMap, n); }
  // Any one item (with what it holds), at most kMaxJsonDepth deep. Not
  // recursive: a hit skips lists of thousands of paths.
  bool skip() {
    std::uint64_t left[kMaxJsonDepth + 1];  // items still to skip at each depth
    std::size_t depth = 0;
    left[0] = 1;
    for (;;) {
      while (left[depth] == 0) {
        if (depth == 0) return true;
        --depth;
      }
      --left[depth];
      std::uint8_t major = 0;
      std::uint64_t n = 0;
      if (!head(major, n)) return false;
      switch (major) {
        case kBytes:
        case kText:
          if (n > in_.size() - at_) return false;
          at_ += n;
          break;
        case kArray:
        case kMap:
          if (n > in_.size() - at_ || depth == kMaxJsonDepth) return false;
          left[++depth] = major == kMap ? 2 * n : n;
          break;
        case 6:  // a tag (its number in n): the item it tags follows, one deeper
          if (depth == kMaxJsonDepth) return false;
          left[++depth] = 1;
          break;
        default:  // numbers and simple values: the head was all of it
          break;
      }
    }
  }

 private:
  [[gnu::always_inline]] inline bool container(std::uint8_t want, std::uint64_t& n) {
    std::uint8_t major = 0;
    return head(major, n) && major == want && n <= in_.size() - at_;
  }
  std::string_view in_;
  std::size_t at_ = 0;
};

// [path, size, mtime, ...]: `fields` of them read, the rest skipped.
template <typename Entry>
bool read_stamped(Cursor& c, Entry& e, std::string_view* digest) {
  std::uint64_t n = 0;
  if (!c.array(n) || n < (digest ? 4u : 3u)) return false;
  if (!c.text(e.path) || !c.integer(e.size) || !c.integer(e.mtime_ns)) return false;
  if (digest && !c.text(*digest)) return false;
  for (std::uint64_t i = digest ? 4 : 3; i < n; ++i)
    if (!c.skip()) return false;
  return true;
}

bool read_inputs(Cursor& c, std::vector<ManifestInput>& out) {
  std::uint64_t n = 0;
  if (!c.array(n)) return false;
  out.resize(n);
  for (ManifestInput& e : out)
    if (!read_stamped(c, e, &e.digest)) return false;
  return true;
}

bool read_libraries(Cursor& c, std::vector<ManifestLibrary>& out) {
  std::uint64_t n = 0;
  if (!c.array(n)) return false;
  out.resize(n);
  for (ManifestLibrary& e : out)
    if (!read_stamped(c, e, nullptr)) return false;
  return true;
}

bool read_paths(Cursor& c, std::vector<std::string_view>& out) {
  std::uint64_t n = 0;
  if (!c.array(n)) return false;
  out.resize(n);
  for (std::string_view& p : out)
    if (!c.text(p)) return false;
  return true;
}

// [[path, mtime, ctime], ...]
bool read_dirs(Cursor& c, std::vector<ManifestDir>& out) {
  std::uint64_t n = 0;
  if (!c.array(n)) return false;
  out.resize(n);
  for (ManifestDir& d : out) {
    std::uint64_t fields = 0;
    if (!c.array(fields) || fields != 3 || !c.text(d.path) || !c.integer(d.mtime_ns) ||
        !c.integer(d.ctime_ns))
      return false;
  }
  return true;
}

// [[name, value or null], ...]
bool read_variables(Cursor& c, std::vector<ManifestVariable>& out) {
  std::uint64_t n = 0;
  if (!c.array(n)) return false;
  out.resize(n);
  for (ManifestVariable& v : out) {
    std::uint64_t fields = 0;
    if (!c.array(fields) || fields != 2 || !c.text(v.name) || !c.text_or_null(v.value))
      return false;
  }
  return true;
}

// [[path, digest], ...]
bool read_listed(Cursor& c, std::vector<ManifestListing>& out) {
  std::uint64_t n = 0;
  if (!c.array(n)) return false;
  out.resize(n);
  for (ManifestListing& l : out) {
    std::uint64_t fields = 0;
    if (!c.array(fields) || fields != 2 || !c.text(l.path) || !c.text(l.digest)) return false;
  }
  return true;
}

bool is_list(std::string_view name) {
  return name == "inputs" || name == "absent" || name == "dirs" || name == "variables" ||
         name == "listed" || name == "libraries";
}

bool read_field(Cursor& c, std::string_view name, ManifestView& m, bool& has_inputs, bool lists) {
  if (!lists && is_list(name)) {
    if (name == "inputs") has_inputs = true;
    return c.skip();
  }
  if (name == "inputs") return has_inputs = read_inputs(c, m.inputs);
  if (name == "absent") return read_paths(c, m.absent);
  if (name == "dirs") return read_dirs(c, m.dirs);
  if (name == "variables") return read_variables(c, m.variables);
  if (name == "listed") return read_listed(c, m.listed);
  if (name == "libraries") return read_libraries(c, m.libraries);
  if (name == "size") {
    std::uint64_t size = 0;
    if (!c.unsigned_integer(size)) return false;
    m.size = size;
    return true;
  }
  if (name == "digest") {
    std::string_view digest;
    if (!c.text(digest)) return false;
    m.digest = digest;
    return true;
  }
  if (name == "diagnostics" || name == "depfile") {
    std::string_view stored;
    if (!c.bytes(stored)) return false;
    (name == "depfile" ? m.depfile : m.diagnostics) = stored;
    return true;
  }
  if (name == "compression") {
    std::string_view compression;
    if (!c.text(compression) || compression != "zstd") return false;
    m.compressed = true;
    return true;
  }
  return c.skip();
}

}  // namespace

std::optional<ManifestView> read_manifest(std::string_view cbor, bool lists) {
  Cursor c(cbor);
  std::uint64_t fields = 0;
  if (!c.map(fields)) return std::nullopt;
  ManifestView m;
  bool has_inputs = false;
  for (std::uint64_t i = 0; i < fields; ++i) {
    std::string_view name;
    if (!c.text(name) || !read_field(c, name, m, has_inputs, lists)) return std::nullopt;
  }
  if (!has_inputs || !c.done()) return std::nullopt;
  return m;
}

namespace {

// A CBOR head of `major` with argument `n`, in its shortest form.
std::string cbor_head(std::uint8_t major, std::uint64_t n) {
  std::string head;
  const auto first = static_cast<char>(major << 5);
  if (n < 24) return std::string(1, static_cast<char>(first | static_cast<char>(n)));
  const int width = n <= 0xff ? 1 : n <= 0xffff ? 2 : n <= 0xffffffffu ? 4 : 8;
  head.push_back(static_cast<char>(first | static_cast<char>(width == 1   ? 24
                                                             : width == 2 ? 25
                                                             : width == 4 ? 26
                                                                          : 27)));
  for (int i = width - 1; i >= 0; --i) head.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return head;
}

}  // namespace

std::optional<std::string> with_fields(std::string_view manifest, const nlohmann::json& fields) {
  if (!fields.is_object()) return std::nullopt;
  Cursor c(manifest);
  std::uint64_t n = 0;
  if (!c.map(n)) return std::nullopt;
  const std::size_t body = c.at();
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string_view name;
    if (!c.text(name) || fields.contains(std::string(name)) || !c.skip()) return std::nullopt;
  }
  if (!c.done()) return std::nullopt;
  std::string out = cbor_head(kMap, n + fields.size());
  out.append(manifest.substr(body));
  for (const auto& [name, value] : fields.items()) {
    out += to_cbor(nlohmann::json(name));
    out += to_cbor(value);
  }
  return out;
}

}  // namespace kbuild
