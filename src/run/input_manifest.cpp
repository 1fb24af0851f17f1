
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

namespace fs = std::filesystem;
using namespace std::string_view_literals;

namespace kbuild {

FileStamp stamp(const FileSystem& files, const std::string& path) {
  const std::optional<struct stat> st = files.status(path);
  if (!st) return {};
  return {static_cast<std::int64_t>(st->st_size), ns(st->st_mtim)};
}

std::string stamp_text(const FileSystem& files, const std::string& path) {
  FileStamp st = stamp(files, path);
  return path + ":" + std::to_string(st.size) + ":" + std::to_string(st.mtime_ns);
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
std::optional<std::vector<std::string>> dangling_chain(const FileSystem& files,
                                                       const std::string& path) {
  errno = 0;
  if (files.status(path) || (errno != ENOENT && errno != ENOTDIR)) return std::nullopt;
  std::vector<std::string> chain;
  std::string hop = path;
  for (int links = 0; links < 40; ++links) {
    Result<std::string> target = files.read_link(hop);
    if (!target || target->empty()) return chain;  // missing below
    if ((*target)[0] != '/') *target = std::string(parent_of(hop)) + "/" + *target;
    chain.push_back(*target);
    if (!files.link_status(*target)) return chain;
    hop = std::move(*target);
  }
  return std::nullopt;
}

// The digest of a directory's sorted names: what a listing of it saw.
Result<std::string> names_digest(const FileSystem& files, const std::string& dir) {
  Result<std::vector<std::string>> names = files.list(dir);  // sorted
  if (!names) return Failure{names.why()};
  Digest digest;
  for (const std::string& name : *names) digest.add(name.data(), name.size() + 1);
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
// `manifest`'s dirs set to those of its absent paths, sorted.
void set_absence_dirs(Manifest& manifest, const struct timespec* started, const FileSystem& files) {
  std::vector<ManifestDir> dirs;
  std::unordered_set<std::string_view> seen;
  for (std::string_view path : manifest.absent) {
    for (std::string_view dir = parent_of(path);; dir = parent_of(dir)) {
      if (!seen.emplace(dir).second) break;  // recorded, with what lies above it
      const std::string name(dir);
      errno = 0;
      const std::optional<struct stat> status = files.status(name);
      if (!status) {
        if (errno != ENOENT && errno != ENOTDIR) break;
        dirs.push_back({dir, kNoDirectory, kNoDirectory});
        if (dir == "/" || dir == ".") break;
        continue;
      }
      const struct stat& st = *status;
      const bool steady = started ? !later(st.st_mtim, *started) && !later(st.st_ctim, *started)
                                  : files.settled(st);
      if (S_ISDIR(st.st_mode) && steady) dirs.push_back({dir, ns(st.st_mtim), ns(st.st_ctim)});
      break;
    }
  }
  std::sort(dirs.begin(), dirs.end(), [](const ManifestDir& a, const ManifestDir& b) {
    return std::tie(a.path, a.mtime_ns, a.ctime_ns) < std::tie(b.path, b.mtime_ns, b.ctime_ns);
  });
  manifest.dirs = std::move(dirs);
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
  const FileSystem& files = *build.files;
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
    // Written besides the output and still there: a side output, which a
    // hit could not give back. Temporary files the build removed are not.
    if (!own.count(absolute) && !is_record(absolute) && !is_system_file(absolute) &&
        files.link_status(path))
      return refuse(Uncacheable::side_output,
                    "the compiler wrote " + path + " besides its output (a side output)");
  }
  // A file only appended to (a wrapper's log of its runs) is not an output
  // a hit must give back, nor an input.
  for (const std::string& path : observed.appended) written.insert(absolute_normal(path));
  // Its strings are views into `observed` and what `manifest` keeps: it is
  // written before they go.
  Manifest manifest;
  std::unordered_set<std::string> recorded;
  Uncacheable failed_as = Uncacheable::input_changed;  // why add_input failed
  auto add_input = [&](const std::string& path) -> Status {
    const std::string absolute = absolute_normal(path);
    if (is_private(absolute) || written.count(absolute) || !recorded.insert(absolute).second)
      return ok();
    errno = 0;
    const std::optional<struct stat> stated = files.status(path);
    if (!stated)
      return Failure{errno == ENOENT || errno == ENOTDIR || errno == 0
                         ? path + " was read by the compiler but is gone"
                         : path + " was read by the compiler but cannot be stated now (" +
                               std::strerror(errno) + ")"};
    const struct stat& before = *stated;
    if (S_ISDIR(before.st_mode)) return ok();  // a directory opened
    // A FIFO (or a device outside /dev): what came through it is gone, and
    // a hit could not check it again.
    if (!S_ISREG(before.st_mode)) {
      failed_as = Uncacheable::unobserved;
      return Failure{"the compiler read " + path + ", a " +
                     (S_ISFIFO(before.st_mode) ? "FIFO" : "device") +
                     ", whose bytes cannot be checked again"};
    }
    // Its times moved; or the thread that hashed it while the compiler ran
    // found another file there (its directory's link swapped for one to an
    // older tree: times that predate the build, yet not what was read).
    if (later(before.st_mtim, build.started) || later(before.st_ctim, build.started) ||
        (build.early && build.early->saw_other(path, before)))
      return Failure{path + " changed during the build"};
    // Hashed while the compiler ran, that same version; else now.
    const EarlyDigests::Look* early = build.early ? build.early->find(path, before) : nullptr;
    Result<std::string> digest =
        early ? early->digest : file_digest(files, path, build.cache, kRememberDigestFrom);
    if (!digest) {
      // Its reason names the path again ("PATH: Permission denied").
      const std::string& why = digest.why();
      const bool named = why.compare(0, path.size() + 2, path + ": ") == 0;
      return Failure{path + " cannot be read (" + (named ? why.substr(path.size() + 2) : why) +
                     ")"};
    }
    manifest.inputs.push_back({path, static_cast<std::int64_t>(before.st_size), ns(before.st_mtim),
                               manifest.keep(std::move(*digest)), ns(before.st_ctim)});
    return ok();
  };
  for (const std::string& program : build.key_programs) {
    const std::optional<std::string> real = files.real_path(program);
    recorded.insert(absolute_normal(real ? *real : program));  // keyed already
    recorded.insert(absolute_normal(program));
  }
  for (const std::string& path : observed.read)
    if (Status added = add_input(path); !added) return refuse(failed_as, added.why());
  for (const std::string& program : observed.executed)
    if (Status added = add_input(program); !added) return refuse(failed_as, added.why());
  // Absent paths, and the directories they would appear in, stamped when
  // their stamps predate the build (a change during it would be missed).
  std::deque<std::string> chains;  // where dangling links lead: stable storage
  for (const std::string& path : observed.absent) {
    const std::string absolute = absolute_normal(path);
    if (is_private(absolute) || written.count(absolute)) continue;
    if (files.link_status(path)) {
      // A dangling link (a GCC's library directory may hold one): the
      // lookup found nothing through it, so what it names must stay absent
      // too; the link itself stays while its directory's stamps hold.
      std::optional<std::vector<std::string>> chain = dangling_chain(files, path);
      if (!chain)
        return refuse(Uncacheable::input_changed, path + " appeared while the compiler ran");
      for (std::string& hop : *chain)
        manifest.absent.push_back(chains.emplace_back(std::move(hop)));
    }
    manifest.absent.push_back(path);
  }
  set_absence_dirs(manifest, &build.started, files);
  // A variable counts as the compiler's environment gave it; a value a
  // program of the build set for its children (COLLECT_GCC_OPTIONS) follows
  // from what was observed already.
  std::unordered_set<std::string> named;
  for (const auto& [name, value] : observed.variables) {
    if (presentation_only(name) || named.count(name)) continue;
    const std::optional<std::string> given = build.env ? build.env->get(name) : std::nullopt;
    if (given != value) continue;
    named.insert(name);
    manifest.variables.push_back(
        {name, value ? std::optional<std::string_view>(*value) : std::nullopt});
  }
  for (const std::string& dir : observed.listed) {
    if (is_private(absolute_normal(dir))) continue;
    Result<std::string> digest = names_digest(files, dir);
    if (!digest)
      return refuse(Uncacheable::input_changed,
                    "the directory " + dir + " the compiler listed cannot be read");
    manifest.listed.push_back({dir, manifest.keep(std::move(*digest))});
  }
  // In one order whatever order the programs ran in: machines that read
  // the same files store the same manifest.
  // (Rows compared part by part, as earlier kbuilds sorted them.)
  std::sort(manifest.inputs.begin(), manifest.inputs.end(),
            [](const ManifestInput& a, const ManifestInput& b) {
              return std::tie(a.path, a.size, a.mtime_ns, a.digest) <
                     std::tie(b.path, b.size, b.mtime_ns, b.digest);
            });
  std::vector<std::string_view>& absent = manifest.absent;
  std::sort(absent.begin(), absent.end());
  absent.erase(std::unique(absent.begin(), absent.end()), absent.end());  // links' ends shared
  std::sort(manifest.variables.begin(), manifest.variables.end(),
            [](const ManifestVariable& a, const ManifestVariable& b) {
              return std::tie(a.name, a.value) < std::tie(b.name, b.value);
            });
  std::sort(manifest.listed.begin(), manifest.listed.end(),
            [](const ManifestListing& a, const ManifestListing& b) {
              return std::tie(a.path, a.digest) < std::tie(b.path, b.digest);
            });
  return manifest_bytes(manifest);
}

namespace {

bool input_unchanged(const ManifestInput& input, StatSweep& sweep, const FileSystem& files) {
  if (const std::optional<struct stat> st = sweep.status(input.path);
      st && st->st_size == input.size && ns(st->st_mtim) == input.mtime_ns &&
      (input.ctime_ns == kNoCtime || ns(st->st_ctim) == input.ctime_ns))
    return true;
  // Touched, given an old mtime back, another file, or gone: only
  // identical content still counts.
  Result<std::string> bytes =
      files.read(std::string(input.path), std::numeric_limits<std::size_t>::max());
  return bytes && digest_hex(*bytes) == input.digest;
}

// The index of the first of inputs[from, to) that changed, else `to`.
std::size_t first_changed(const std::vector<ManifestInput>& inputs, std::size_t from,
                          std::size_t to, const FileSystem& files) {
  const std::unique_ptr<StatSweep> sweep = files.sweep();
  for (std::size_t i = from; i < to; ++i)
    if (!input_unchanged(inputs[i], *sweep, files)) return i;
  return to;
}

// Whether paths exist, asking about a directory before what is in it: most
// shadowing candidates lie in directories that do not exist (the source's
// directory + "bits/"...), so one stat answers for all of them.
class ExistenceCheck {
 public:
  explicit ExistenceCheck(const FileSystem& files) : files_(files) {}
  bool exists(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0 && !directory_exists(path.substr(0, slash)))
      return false;
    path_.assign(path);
    return files_.status(path_).has_value();
  }

 private:
  bool directory_exists(std::string_view dir) {
    auto known = dirs_.find(std::string(dir));
    if (known != dirs_.end()) return known->second;
    bool found = exists(dir);  // its parent first, remembered too
    dirs_.emplace(std::string(dir), found);
    return found;
  }
  const FileSystem& files_;
  std::string path_;  // reused: no allocation per path
  std::unordered_map<std::string, bool> dirs_;
};

}  // namespace

namespace {

// Whether a directory's stamps are still those recorded: nothing was added
// to it or removed from it since.
bool dir_unchanged(const FileSystem& files, const ManifestDir& dir, std::string& path) {
  path.assign(dir.path);
  errno = 0;
  const std::optional<struct stat> st = files.status(path);
  if (!st) return dir.mtime_ns == kNoDirectory && (errno == ENOENT || errno == ENOTDIR);
  return S_ISDIR(st->st_mode) && ns(st->st_mtim) == dir.mtime_ns && ns(st->st_ctim) == dir.ctime_ns;
}

bool machine_variable(std::string_view name) {
  return std::any_of(std::begin(kMachineVariables), std::end(kMachineVariables),
                     [name](const char* v) { return name == v; });
}

std::optional<StaleInput> variables_stale(const Manifest& manifest, const Environment& env,
                                          bool same_machine) {
  for (const ManifestVariable& v : manifest.variables) {
    if (!same_machine && machine_variable(v.name)) continue;
    const std::optional<std::string> now = env.get(std::string(v.name));
    if (now.has_value() != v.value.has_value() || (now && *now != *v.value))
      return StaleInput{StaleKind::variable_differs, std::string(v.name)};
  }
  return std::nullopt;
}

std::optional<StaleInput> listings_stale(const Manifest& manifest, const FileSystem& files) {
  for (const ManifestListing& l : manifest.listed) {
    Result<std::string> now = names_digest(files, std::string(l.path));
    if (!now || *now != l.digest)
      return StaleInput{StaleKind::listing_changed, std::string(l.path)};
  }
  return std::nullopt;
}

// Whether every absent path is still absent: through the directories that
// stand for it (set_absence_dirs: missing ones up to the nearest that exists,
// whose stamps must hold, one stat each), else one by one.
class AbsenceCheck {
 public:
  AbsenceCheck(const Manifest& manifest, const FileSystem& files)
      : files_(files), existence_(files) {
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
      result = dir_unchanged(files_, *known.dir, path_);
    known.covered = result ? 1 : 0;
    return result;
  }
  std::unordered_map<std::string_view, Known> known_;
  const FileSystem& files_;
  ExistenceCheck existence_;
  std::string path_;
  std::string_view last_dir_;
  bool last_covered_ = false;
};

std::optional<StaleInput> absences_stale(const Manifest& manifest, const FileSystem& files) {
  AbsenceCheck check(manifest, files);
  for (std::string_view absent : manifest.absent)
    if (!check.holds(absent))  // shadowed now
      return StaleInput{StaleKind::path_appeared, std::string(absent)};
  return std::nullopt;
}

std::optional<StaleInput> libraries_stale(const Manifest& manifest, const FileSystem& files) {
  std::string path;
  for (const ManifestLibrary& lib : manifest.libraries) {
    path.assign(lib.path);
    FileStamp now = stamp(files, path);
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
                                               unsigned sweeps, const FileSystem& files) {
  const std::size_t n = inputs.size();
  std::size_t found = n;
  if (sweeps < 2 || n < 2) {
    found = first_changed(inputs, 0, n, files);
  } else {
    // The first half on a thread of its own, the second here.
    const std::size_t half = n / 2;
    std::size_t first_half = half;
    std::exception_ptr failed;
    std::thread sweep;
    try {
      sweep = std::thread([&] {
        try {
          first_half = first_changed(inputs, 0, half, files);
        } catch (...) {
          failed = std::current_exception();
        }
      });
    } catch (const std::system_error&) {  // no thread: this one does both halves
      first_half = first_changed(inputs, 0, half, files);
    }
    std::size_t second_half = n;
    try {
      second_half = first_changed(inputs, half, n, files);
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

std::optional<StaleInput> manifest_stale(const Manifest& manifest, const Environment& env,
                                         const FileSystem& files) {
  if (auto stale = variables_stale(manifest, env, true)) return stale;
  // Two sweeps when there are many files and two CPUs (each sweep is
  // mostly waiting on the kernel's stat).
  const unsigned cores = std::thread::hardware_concurrency();
  const bool cpus = cores > 1;
  const unsigned sweeps = manifest.inputs.size() >= kTwoSweepFiles && cpus ? 2 : 1;
  // The absences on a thread of their own beside the files' sweep, when
  // both are long enough to pay for it and there are cores to spare (on
  // two loaded cores the thread waits for one: measured slower): each is
  // mostly waiting on the kernel's stat. The files' answer comes first, as
  // one sweep gives it.
  std::optional<StaleInput> absence;
  std::exception_ptr failed;
  std::thread beside;
  if (cores >= 4 && manifest.inputs.size() >= kAbsencesBeside &&
      manifest.absent.size() >= kAbsencesBeside) {
    try {
      beside = std::thread([&] {
        try {
          absence = absences_stale(manifest, files);
        } catch (...) {
          failed = std::current_exception();
        }
      });
    } catch (const std::system_error&) {  // no thread: in turn, below
    }
  }
  const bool absences_beside = beside.joinable();
  std::optional<std::size_t> changed;
  try {
    changed = first_changed_input(manifest.inputs, sweeps, files);
  } catch (...) {
    if (beside.joinable()) beside.join();
    throw;
  }
  if (beside.joinable()) beside.join();
  if (changed)
    return StaleInput{StaleKind::file_changed, std::string(manifest.inputs[*changed].path)};
  if (failed) std::rethrow_exception(failed);
  if (!absences_beside) absence = absences_stale(manifest, files);
  if (absence) return absence;
  if (auto stale = listings_stale(manifest, files)) return stale;
  return libraries_stale(manifest, files);
}

bool inputs_unchanged(const std::string& bytes, const Environment& env, const FileSystem& files) {
  Result<Manifest> manifest = read_manifest(bytes);
  return manifest && manifest_holds(*manifest, env, files);  // a foreign or damaged one: a miss
}

std::optional<StaleInput> restamp_here(Manifest& manifest, const Environment& env,
                                       const FileSystem& files) {
  // Absent paths one by one: the writer's directory stamps are its own.
  manifest.dirs.clear();
  if (auto why = variables_stale(manifest, env, false)) return why;
  if (auto why = absences_stale(manifest, files)) return why;
  if (auto why = listings_stale(manifest, files)) return why;
  if (auto why = libraries_stale(manifest, files)) return why;
  std::string path;
  for (ManifestInput& input : manifest.inputs) {
    path.assign(input.path);
    const std::optional<struct stat> before = files.status(path);
    if (!before) return StaleInput{StaleKind::file_changed, path};
    Result<std::string> content = files.read(path, static_cast<std::size_t>(before->st_size) + 1);
    if (!content || digest_hex(*content) != input.digest)
      return StaleInput{StaleKind::file_changed, path};
    // Changed while it was read: its stamp would not be that content's.
    const std::optional<struct stat> stated_after = files.status(path);
    if (!stated_after) return StaleInput{StaleKind::file_changed, path};
    const struct stat& after = *stated_after;
    if (after.st_size != before->st_size || ns(after.st_mtim) != ns(before->st_mtim) ||
        ns(after.st_ctim) != ns(before->st_ctim))
      return StaleInput{StaleKind::file_changed, path};
    input.size = static_cast<std::int64_t>(after.st_size);
    input.mtime_ns = ns(after.st_mtim);
    input.ctime_ns = ns(after.st_ctim);
  }
  // This machine's stamps of the directories (settled ones: a change within
  // the clock's tick would not show), and its own PATH.
  set_absence_dirs(manifest, nullptr, files);
  for (ManifestVariable& variable : manifest.variables)
    if (machine_variable(variable.name)) {
      std::optional<std::string> here = env.get(std::string(variable.name));
      variable.value =
          here ? std::optional<std::string_view>(manifest.keep(std::move(*here))) : std::nullopt;
    }
  return std::nullopt;
}

void make_shareable(Manifest& manifest) {
  manifest.dirs.clear();
  for (ManifestVariable& variable : manifest.variables)
    if (machine_variable(variable.name)) variable.value = kMachineValue;
}

namespace {

// `path` moved under `to` when it is `from` or lies under it.
void rebase_path(Manifest& manifest, std::string_view& path, const std::string& from,
                 const std::string& to) {
  if (path.substr(0, from.size()) == from &&
      (path.size() == from.size() || path[from.size()] == '/'))
    path = manifest.keep(to + std::string(path.substr(from.size())));
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

bool rebase_manifest(Manifest& manifest, const std::string& from, const std::string& to) {
  auto move = [&](std::string_view& path) { rebase_path(manifest, path, from, to); };
  for (ManifestInput& row : manifest.inputs) move(row.path);
  for (ManifestLibrary& row : manifest.libraries) move(row.path);
  for (ManifestDir& row : manifest.dirs) move(row.path);
  for (ManifestListing& row : manifest.listed) move(row.path);
  // A variable's value that is a path under the base (PWD).
  for (ManifestVariable& row : manifest.variables)
    if (row.value) move(*row.value);
  for (std::string_view& path : manifest.absent) move(path);
  if (manifest.depfile) {
    Result<std::string> depfile = zstd_decompress(*manifest.depfile, kMaxDepfile);
    if (!depfile) return false;
    manifest.depfile = manifest.keep(zstd_compress(rebase_depfile(*depfile, from, to)));
  }
  return true;
}

std::optional<std::string> rebase_manifest(const std::string& bytes, const std::string& from,
                                           const std::string& to) {
  Result<Manifest> manifest = read_manifest(bytes);
  if (!manifest || !rebase_manifest(*manifest, from, to)) return std::nullopt;
  return manifest_bytes(*manifest);
}

}  // namespace kbuild
