
#include "run/observation.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_set>

#include "util/file_system.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// Appends `value` to `list` unless `seen` has it.
void add_once(std::vector<std::string>& list, std::unordered_set<std::string>& seen,
              std::string_view value) {
  if (seen.emplace(value).second) list.emplace_back(value);
}

// The program an exec of `path` runs: the file itself, or a script's
// interpreter (its #! line); "" when that cannot be told now.
std::string image_of(const std::string& path) {
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  if (ec) return "";
  Result<std::string> head = read_file_up_to(real.string(), 256);
  if (head && head->rfind("#!", 0) == 0) {
    std::string line = head->substr(
        2, head->find('\n') == std::string::npos ? std::string::npos : head->find('\n') - 2);
    const std::size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos) return "";
    const std::size_t end = line.find_first_of(" \t", start);
    fs::path interpreter = fs::canonical(line.substr(start, end - start), ec);
    return ec ? "" : interpreter.string();
  }
  return real.string();
}

struct Record {
  char kind = 0;
  long pid = 0;
  std::string_view payload;
};

// KIND PID ' ' PAYLOAD; false for anything else (a record cut short).
bool parse_record(std::string_view text, Record& out) {
  if (text.size() < 3) return false;
  out.kind = text[0];
  std::size_t at = 1;
  long pid = 0;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9')
    pid = pid * 10 + (text[at++] - '0');
  if (at == 1 || at >= text.size() || text[at] != ' ') return false;
  out.pid = pid;
  out.payload = text.substr(at + 1);
  return true;
}

}  // namespace

void Observation::merge(const Observation& other) {
  auto join = [](std::vector<std::string>& into, const std::vector<std::string>& from) {
    std::unordered_set<std::string> seen(into.begin(), into.end());
    for (const std::string& value : from) add_once(into, seen, value);
  };
  join(read, other.read);
  join(absent, other.absent);
  join(written, other.written);
  join(appended, other.appended);
  join(listed, other.listed);
  join(executed, other.executed);
  join(unobserved, other.unobserved);
  for (const auto& variable : other.variables)
    if (std::find(variables.begin(), variables.end(), variable) == variables.end())
      variables.push_back(variable);
  reported = reported || other.reported;
  if (unobservable.empty()) unobservable = other.unobservable;
}

void observe_into(Environment& child, const std::string& observer, const std::string& record_dir,
                  const std::string& cwd) {
  const std::optional<std::string> preload = child.get_nonempty("LD_PRELOAD");
  child.set("LD_PRELOAD", preload ? observer + ":" + *preload : observer);
  child.set("KBUILD_OBSERVE_DIR", record_dir);
  child.set("KBUILD_OBSERVE_CWD", cwd);
}

Observation read_observation(const std::string& record_dir, const std::string& top) {
  Observation obs;
  std::unordered_set<std::string> seen_read, seen_absent, seen_written, seen_appended, seen_listed,
      seen_executed;
  std::set<std::pair<std::string, std::optional<std::string>>> seen_variables;
  // Each program image that reported in, by pid; each exec that succeeded.
  std::multimap<long, std::string> images;
  std::vector<std::pair<long, std::string>> execs;
  std::vector<std::string> files;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(record_dir, ec))
    files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    Result<std::string> bytes = read_whole_file(file);
    if (!bytes) continue;
    std::string_view rest(*bytes);
    // Per pid, the execs tried and not yet known to have failed.
    std::map<long, std::vector<std::string>> pending;
    while (!rest.empty()) {
      const std::size_t end = rest.find('\0');
      if (end == std::string_view::npos) break;  // a record cut short: its writer died mid-way
      Record r;
      const bool parsed = parse_record(rest.substr(0, end), r);
      rest.remove_prefix(end + 1);
      if (!parsed) continue;
      const std::string_view p = r.payload;
      switch (r.kind) {
        case 'P':
          images.emplace(r.pid, std::string(p));
          add_once(obs.executed, seen_executed, p);
          obs.reported = true;
          break;
        case 'R': add_once(obs.read, seen_read, p); break;
        case 'A': add_once(obs.absent, seen_absent, p); break;
        case 'W': add_once(obs.written, seen_written, p); break;
        case 'Y': add_once(obs.appended, seen_appended, p); break;
        case 'L': add_once(obs.listed, seen_listed, p); break;
        case 'X': pending[r.pid].emplace_back(p); break;
        case 'F': {
          std::vector<std::string>& tried = pending[r.pid];
          auto it = std::find(tried.rbegin(), tried.rend(), p);
          if (it != tried.rend()) tried.erase(std::next(it).base());
          break;
        }
        case 'E':
        case 'N': {
          const std::size_t eq = p.find('=');
          std::pair<std::string, std::optional<std::string>> variable =
              r.kind == 'E' && eq != std::string_view::npos
                  ? std::make_pair(std::string(p.substr(0, eq)),
                                   std::optional<std::string>(p.substr(eq + 1)))
                  : std::make_pair(std::string(p), std::optional<std::string>());
          if (seen_variables.insert(variable).second) obs.variables.push_back(std::move(variable));
          break;
        }
        default: break;
      }
    }
    for (auto& [pid, tried] : pending)
      for (std::string& path : tried) execs.emplace_back(pid, std::move(path));
  }
  // Every program run must have reported in: a statically linked or setuid
  // one ignores LD_PRELOAD, and what it read is unknown.
  auto claim = [&images](long pid, const std::string& image) {
    auto range = images.equal_range(pid);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second == image) {
        images.erase(it);
        return true;
      }
    return false;
  };
  for (const auto& [pid, path] : execs) {
    const std::string image = image_of(path);
    if (image.empty() || !claim(pid, image))
      if (std::find(obs.unobserved.begin(), obs.unobserved.end(), path) == obs.unobserved.end())
        obs.unobserved.push_back(path);
  }
  const std::string top_image = image_of(top);
  bool top_reported = false;
  for (const auto& image : images) top_reported = top_reported || image.second == top_image;
  if (!top_reported &&
      std::find(obs.unobserved.begin(), obs.unobserved.end(), top) == obs.unobserved.end())
    obs.unobserved.push_back(top);
  return obs;
}

}  // namespace kbuild
