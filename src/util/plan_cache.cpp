#include "kbuild/plan_cache.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "kbuild/cache_root.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/file_util.hpp"
#include "kbuild/redact.hpp"
#include "util/file_clock.hpp"
#include "util/input_record.hpp"
#include "util/parsed_file_cache.hpp"

namespace kbuild {

namespace {

constexpr std::size_t kMaxPlanBytes = 1u << 20;

// The CPU's flags are fixed for the life of a boot (the kernel reads them
// once; a hypervisor keeps a guest's CPUID across migration, since running
// programs already chose code by it), so a run that read /proc/cpuinfo is
// keyed by the boot rather than by re-reading cpuinfo on every hit.
constexpr const char* kBootId = "/proc/sys/kernel/random/boot_id";

std::string cwd() {
  char buf[4096];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : "";
}

// What a run is before anything is read: it names the entry, and an entry
// holds it whole (two runs whose header hashes alike are told apart).
std::string header(const std::vector<std::string>& argv) {
  ByteWriter w;
  w.strings(argv);
  w.str(cwd());
  w.u32(static_cast<std::uint32_t>(::geteuid()));
  // Whether a file can be read or run depends on the groups too.
  w.u32(static_cast<std::uint32_t>(::getegid()));
  std::vector<gid_t> groups(static_cast<std::size_t>(std::max(::getgroups(0, nullptr), 0)));
  const int count = ::getgroups(static_cast<int>(groups.size()), groups.data());
  groups.resize(static_cast<std::size_t>(std::max(count, 0)));
  std::sort(groups.begin(), groups.end());
  w.u32(static_cast<std::uint32_t>(groups.size()));
  for (gid_t g : groups) w.u32(static_cast<std::uint32_t>(g));
  w.flag(::isatty(STDERR_FILENO) != 0);  // colour
  struct utsname names {};
  w.str(::uname(&names) == 0 ? names.machine : "");  // linux32 changes it
  char exe[4096];  // where kbuild is installed decides its data dir
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe);
  w.str(n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "");
  return w.take();
}

std::string entry_name(const std::string& header) {
  std::uint64_t h = fnv1a(header);
  char hex[17];
  for (int i = 15; i >= 0; --i, h >>= 4) hex[i] = "0123456789abcdef"[h & 15];
  hex[16] = '\0';
  return std::string("plan-") + hex + ".bin";
}

std::optional<TrustedDir> plans_dir(const Environment& env, bool create) {
  const std::string root = cache_root(env);
  if (root.empty()) return std::nullopt;
  Result<TrustedDir> dir = open_cache_root(root, false);
  if (!dir) return std::nullopt;
  Result<TrustedDir> sub = dir->sub("plans", create);
  if (!sub) return std::nullopt;
  return std::move(*sub);
}

std::optional<std::string> small_file(const std::string& path) {
  return read_file_up_to(path, 4096);
}

void optional_str(ByteWriter& w, const std::optional<std::string>& v) {
  w.flag(v.has_value());
  w.str(v.value_or(""));
}

std::optional<std::string> optional_str(ByteReader& r) {
  bool present = r.flag();
  std::string v = r.str();
  return present ? std::optional<std::string>(std::move(v)) : std::nullopt;
}

// Each part of an entry is a count of (name, value) pairs checked against
// now; false on the first that differs.
template <typename Now>
bool pairs_hold(ByteReader& r, Now now) {
  for (std::uint32_t n = r.count(); n > 0 && r.ok(); --n) {
    std::string name = r.str();
    std::optional<std::string> then = optional_str(r);
    if (!r.ok() || now(name) != then) return false;
  }
  return r.ok();
}

std::optional<std::string> stamp_now(const std::string& path) {
  std::string id = file_identity(path);
  return id.empty() ? std::nullopt : std::optional<std::string>(id);
}

// The stamps of `paths` now; nullopt when one changed too recently to be
// trusted (a change within the file system clock's tick goes unseen).
std::optional<std::vector<std::pair<std::string, std::optional<std::string>>>> settled_stamps(
    const std::set<std::string>& paths) {
  std::vector<std::pair<std::string, std::optional<std::string>>> out;
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      out.emplace_back(path, std::nullopt);
      continue;
    }
    if (!file_clock().settled(st)) return std::nullopt;
    out.emplace_back(path, file_identity(st));
  }
  return out;
}

}  // namespace

bool may_be_cached_dry_run(const std::vector<std::string>& argv) {
  return std::find(argv.begin(), argv.end(), "--dry-run") != argv.end();
}

void start_plan_recording() {
  start_recording_inputs();
}

std::optional<PlanOutput> cached_plan(const std::vector<std::string>& argv,
                                      const Environment& env) {
  if (!may_be_cached_dry_run(argv)) return std::nullopt;
  std::optional<TrustedDir> dir = plans_dir(env, false);
  if (!dir) return std::nullopt;
  const std::string head = header(argv);
  Result<std::string> content = dir->read(entry_name(head), kMaxPlanBytes);
  if (!content) return std::nullopt;
  ByteReader r(*content);
  if (r.str() != program_identity() || r.str() != head) return std::nullopt;
  if (!pairs_hold(r, [&](const std::string& name) { return env.get(name); })) return std::nullopt;
  if (!pairs_hold(r, stamp_now) || !pairs_hold(r, attributes_now) || !pairs_hold(r, small_file))
    return std::nullopt;
  PlanOutput out;
  out.out = r.str();
  out.err = r.str();
  out.exit_code = static_cast<int>(r.u32());
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return out;
}

void remember_plan(const std::vector<std::string>& argv, const Environment& env,
                   const PlanOutput& output) {
  const InputRecord* recorded = recorded_inputs();
  if (!recorded || recorded->uncacheable || !may_be_cached_dry_run(argv)) return;
  // Secrets are never written to a file: a run that read one is not remembered.
  for (const std::string& word : argv)
    if (redact_urls(word) != word) return;
  for (const std::string& name : recorded->variables) {
    auto value = env.get(name);
    if (value && (is_secret_variable(name) || redact_urls(*value) != *value)) return;
  }
  InputRecord inputs = *recorded;  // what follows reads the cache: not an input
  // Created before the stamps are taken: creating it changes the root's.
  std::optional<TrustedDir> dir = plans_dir(env, true);
  if (!dir) return;
  if (inputs.cpu_read) inputs.contents.emplace(kBootId, small_file(kBootId));
  auto stamps = settled_stamps(inputs.paths);
  if (!stamps) return;
  ByteWriter w;
  const std::string head = header(argv);
  w.str(program_identity());
  w.str(head);
  w.u32(static_cast<std::uint32_t>(inputs.variables.size()));
  for (const std::string& name : inputs.variables) w.str(name), optional_str(w, env.get(name));
  w.u32(static_cast<std::uint32_t>(stamps->size()));
  for (const auto& [path, stamp] : *stamps) w.str(path), optional_str(w, stamp);
  w.u32(static_cast<std::uint32_t>(inputs.attributes.size()));
  for (const auto& [path, attributes] : inputs.attributes) w.str(path), optional_str(w, attributes);
  w.u32(static_cast<std::uint32_t>(inputs.contents.size()));
  for (const auto& [path, bytes] : inputs.contents) w.str(path), optional_str(w, bytes);
  w.str(output.out);
  w.str(output.err);
  w.u32(static_cast<std::uint32_t>(output.exit_code));
  (void)dir->write_atomically(entry_name(head), w.take());
}

}  // namespace kbuild
