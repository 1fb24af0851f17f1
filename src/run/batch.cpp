#include "kbuild/batch.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "kbuild/error.hpp"
#include "util/file_system.hpp"
#include "util/json.hpp"
#include "util/process.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// An error in a JSON file build-many reads (the build list, a baseline), at
// the value `pointer` names.
[[noreturn]] void json_error(const std::string& path, const JsonDocument& doc,
                             const std::string& pointer, const std::string& what,
                             ErrorKind kind = ErrorKind::config) {
  TextPosition p = doc.value_position(pointer);
  throw Error(kind, json_location(path, p, pointer) + ": " + what);
}

std::vector<std::string> string_array(const std::string& path, const JsonDocument& doc,
                                      const nlohmann::json& v, const std::string& pointer) {
  if (!v.is_array()) json_error(path, doc, pointer, "expected an array of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      json_error(path, doc, pointer + "/" + std::to_string(i), "expected a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// The value `args` give an option, however the command line spells it:
// "--output X", "--output=X", and with a short name "-o X" or "-oX"; ""
// when absent.
std::string option_value(const std::vector<std::string>& args, const std::string& long_name,
                         const std::string& short_name = "") {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if ((arg == long_name || (!short_name.empty() && arg == short_name)) && i + 1 < args.size())
      return args[i + 1];
    if (arg.rfind(long_name + "=", 0) == 0) return arg.substr(long_name.size() + 1);
    if (!short_name.empty() && arg.size() > short_name.size() && arg.rfind(short_name, 0) == 0)
      return arg.substr(short_name.size());
  }
  return "";
}

std::string output_of(const std::vector<std::string>& args) {
  return option_value(args, "--output", "-o");
}

// A file a build writes: its output, or its --report.
struct WrittenFile {
  std::string option;  // "output" or "--report", as messages name it
  std::string path;    // as the build spells it
};

std::vector<WrittenFile> files_written(const std::vector<std::string>& args) {
  std::vector<WrittenFile> out;
  if (std::string output = output_of(args); !output.empty()) out.push_back({"output", output});
  if (std::string report = option_value(args, "--report"); !report.empty())
    out.push_back({"--report", report});
  return out;
}

// Where a file a build writes really is: its directory's device and inode,
// and its name (a build renames the file into that directory under that
// name), so "x.so" and "here/x.so" with here -> . are one file. A path whose
// directory is missing (the build fails on it): its normal absolute form.
std::string real_location(const std::string& path) {
  const fs::path given(path);
  const fs::path name = given.filename();
  const fs::path dir = given.parent_path().empty() ? fs::path(".") : given.parent_path();
  struct stat st {};
  if (!name.empty() && name != "." && name != ".." && ::stat(dir.c_str(), &st) == 0 &&
      S_ISDIR(st.st_mode))
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + name.string();
  std::error_code ec;
  return fs::absolute(given, ec).lexically_normal().string();
}

// The build list where it really is: as named, and (through links) its file.
std::set<std::string> build_list_locations(const std::string& path) {
  std::set<std::string> out{real_location(path)};
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  if (!ec) out.insert(real_location(real.string()));
  return out;
}

// Where a job's first argument comes from: `common`, or the build itself.
std::string first_arg_pointer(const nlohmann::json& root, const std::string& build_pointer,
                              bool build_is_object) {
  if (root.contains("common") && !root["common"].empty()) return "/common/0";
  return build_pointer + (build_is_object ? "/args/0" : "/0");
}

// A build that runs build-many would run build lists within build lists (a
// build list naming itself: without end).
void refuse_nested_batch(const std::string& path, const JsonDocument& doc, const BatchJob& job,
                         const std::string& pointer) {
  if (!job.args.empty() && job.args.front() == "build-many")
    json_error(path, doc, pointer,
               "a build cannot run build-many (it would run build lists within build "
               "lists without bound); list those builds in this build list");
}

// Two builds writing one file (an output, a report) would race for it, and
// a build writing the build list would destroy it: refused before any runs.
void refuse_shared_files(const std::string& path, const JsonDocument& doc,
                         const std::vector<BatchJob>& jobs) {
  const std::set<std::string> build_list = build_list_locations(path);
  std::map<std::string, std::pair<std::size_t, std::string>> first_writer;  // build, option
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const std::string pointer = "/builds/" + std::to_string(i);
    for (const WrittenFile& file : files_written(jobs[i].args)) {
      const std::string location = real_location(file.path);
      const std::string choose = file.option == "output" ? "-o" : "--report";
      if (build_list.count(location))
        json_error(path, doc, pointer,
                   file.option + " " + file.path + " is the manifest " + path +
                       " itself; choose another " + (file.option == "output" ? "-o" : "file"),
                   ErrorKind::usage);
      auto [at, fresh] = first_writer.emplace(location, std::make_pair(i, file.option));
      if (!fresh && at->second.first != i)  // one build's own output and report: its own check
        json_error(path, doc, pointer,
                   file.option + " " + file.path + " is also the " + at->second.second +
                       " of /builds/" + std::to_string(at->second.first) +
                       "; give each build its own " + choose,
                   ErrorKind::usage);
    }
  }
}

// A --report in `common` is every build's: each would write that one file,
// and all but the last report would be lost.
void refuse_common_report(const std::string& path, const JsonDocument& doc,
                          const std::vector<std::string>& common) {
  for (std::size_t i = 0; i < common.size(); ++i)
    if (common[i] == "--report" || common[i].rfind("--report=", 0) == 0)
      json_error(path, doc, "/common/" + std::to_string(i),
                 "--report in common: every build would write this one report, and all but "
                 "one would be lost; give each build its own --report in its arguments",
                 ErrorKind::usage);
}

// Where a failing stage comes in a build (a stage not listed: after them).
std::size_t stage_order(const std::string& stage) {
  static const std::vector<std::string> kOrder{"usage",       "config",   "provider",
                                               "compile",     "link",     "load",
                                               "interrupted", "internal", "failed"};
  return static_cast<std::size_t>(std::find(kOrder.begin(), kOrder.end(), stage) - kOrder.begin());
}

}  // namespace

std::vector<BatchJob> load_build_list(const std::string& path) {
  constexpr std::size_t kMaxBuildListBytes = 16u << 20;
  // Never a FIFO or a device node: reading one could block for ever.
  Result<std::string> text = read_regular_file_up_to(path, kMaxBuildListBytes + 1);
  if (!text) throw Error(ErrorKind::config, "manifest " + text.why());
  if (text->size() > kMaxBuildListBytes)
    throw Error(ErrorKind::config,
                path + ": build list larger than 16 MiB; is this the right file?");
  JsonDocument doc = parse_json_file_text(*text, path);
  const nlohmann::json& root = doc.root();
  if (!root.is_object()) json_error(path, doc, "", "expected an object with \"builds\"");
  for (const auto& [key, value] : root.items())
    if (key != "common" && key != "builds")
      json_error(path, doc, "/" + json_pointer_token(key),
                 "unknown key '" + key + "' (known: common, builds)");
  std::vector<std::string> common;
  if (root.contains("common")) common = string_array(path, doc, root["common"], "/common");
  refuse_common_report(path, doc, common);
  if (!root.contains("builds") || !root["builds"].is_array())
    json_error(path, doc, "", "\"builds\" must be an array");
  std::vector<BatchJob> jobs;
  const nlohmann::json& builds = root["builds"];
  for (std::size_t i = 0; i < builds.size(); ++i) {
    std::string ptr = "/builds/" + std::to_string(i);
    BatchJob job;
    const nlohmann::json& b = builds[i];
    std::vector<std::string> args;
    if (b.is_array()) {
      args = string_array(path, doc, b, ptr);
    } else if (b.is_object()) {
      for (const auto& [key, value] : b.items())
        if (key != "name" && key != "args")
          json_error(path, doc, ptr + "/" + json_pointer_token(key),
                     "unknown key '" + key + "' (known: name, args)");
      if (!b.contains("args")) json_error(path, doc, ptr, "missing \"args\"");
      args = string_array(path, doc, b["args"], ptr + "/args");
      if (b.contains("name")) {
        if (!b["name"].is_string()) json_error(path, doc, ptr + "/name", "expected a string");
        job.name = b["name"];
      }
    } else {
      json_error(path, doc, ptr, "expected an array of arguments or {\"name\", \"args\"}");
    }
    job.args = common;
    job.args.insert(job.args.end(), args.begin(), args.end());
    refuse_nested_batch(path, doc, job, first_arg_pointer(root, ptr, b.is_object()));
    if (job.name.empty()) job.name = output_of(job.args);
    if (job.name.empty()) {
      job.name = "job " + std::to_string(i + 1);
      job.positional = true;
    }
    jobs.push_back(std::move(job));
  }
  refuse_shared_files(path, doc, jobs);
  return jobs;
}

std::vector<BatchResult> run_batch(const std::vector<BatchJob>& jobs,
                                   const std::vector<std::string>& kbuild, unsigned parallel,
                                   bool fail_fast,
                                   const std::function<void(const BatchProgress&)>& progress) {
  std::vector<BatchResult> results(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) results[i].name = jobs[i].name;  // skipped too
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  BatchProgress state;
  state.total = jobs.size();
  const auto start = std::chrono::steady_clock::now();
  // An interrupt is passed on to the running builds (each ends its own
  // compiler) and starts no new ones.
  InterruptWatch interrupts;

  auto worker = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      if (stop || interrupt_received()) break;
      BatchResult& r = results[i];
      r.started = true;
      std::vector<std::string> argv = kbuild;
      argv.insert(argv.end(), jobs[i].args.begin(), jobs[i].args.end());
      ProcessRequest opts;
      opts.capture_output = true;  // no interleaving: shown per job
      opts.max_capture = 1 << 20;
      opts.handle_interrupts = true;
      // Longer than a build's own grace and kill wait, so that each build
      // ends its compiler before it could be killed itself.
      opts.exit_grace = std::chrono::seconds(8);
      auto t0 = std::chrono::steady_clock::now();
      try {
        ProcessResult p = real_processes().run(argv, opts);
        r.exit_code = p.interrupted_by ? exit_code(ErrorKind::interrupted)
                      : p.exited       ? p.exit_code
                                       : 128 + p.signal;
        r.output = p.err + p.out;
      } catch (const Error& e) {
        r.exit_code = exit_code(ErrorKind::internal);
        r.output = e.what();
      }
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mutex);
      ++state.done;
      if (r.exit_code != 0) {
        ++state.failed;
        if (fail_fast) stop = true;
      }
      state.elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (progress) progress(state);
    }
  };
  // No more threads than builds, whatever -j asked for.
  const std::size_t threads =
      std::clamp<std::size_t>(parallel, 1, std::max<std::size_t>(1, jobs.size()));
  std::vector<std::thread> pool;
  try {
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  } catch (const std::system_error& e) {  // out of threads: the ones started do the work
    if (pool.empty())
      throw Error(ErrorKind::internal, std::string("cannot start a thread: ") + e.what());
  }
  for (std::thread& t : pool) t.join();
  if (int sig = interrupt_received()) {
    std::size_t not_started = std::count_if(results.begin(), results.end(),
                                            [](const BatchResult& r) { return !r.started; });
    throw Error(ErrorKind::interrupted,
                "interrupted by signal " + std::to_string(sig) +
                    "; the running builds were stopped (their outputs left as they were), " +
                    std::to_string(not_started) + " not started");
  }
  return results;
}

std::vector<BatchSummaryRow> summarize_batch(const std::vector<BatchJob>& jobs,
                                             const std::vector<BatchResult>& results) {
  std::vector<BatchSummaryRow> rows;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const BatchResult& r = results[i];
    BatchSummaryRow row{r.name, "ok", "", r.exit_code, r.seconds, ""};
    if (i < jobs.size()) row.report = option_value(jobs[i].args, "--report");
    if (!r.started) {
      row.status = "skipped";
      row.exit_code = -1;
    } else if (r.exit_code != 0) {
      row.status = "failed";
      const char* stage = stage_of_exit_code(r.exit_code);
      row.stage = *stage ? stage : "failed";
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::pair<std::string, std::size_t>> failures_by_stage(
    const std::vector<BatchSummaryRow>& rows) {
  std::vector<std::pair<std::string, std::size_t>> out;
  for (const BatchSummaryRow& r : rows) {
    if (r.status != "failed") continue;
    auto at =
        std::find_if(out.begin(), out.end(), [&](const auto& s) { return s.first == r.stage; });
    if (at == out.end())
      out.emplace_back(r.stage, 1);
    else
      ++at->second;
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return stage_order(a.first) < stage_order(b.first);
  });
  return out;
}

const char* migration_name(Migration m) {
  switch (m) {
    case Migration::unchanged: return "unchanged";
    case Migration::fixed: return "fixed";
    case Migration::new_failure: return "new failure";
    case Migration::deeper: return "deeper";
    case Migration::shallower: return "shallower";
    case Migration::changed: return "changed";
    case Migration::added: return "added";
    case Migration::removed: return "removed";
    case Migration::skipped: return "skipped";
  }
  return "unchanged";
}

namespace {

// "ok", "skipped", or the failing stage.
std::string result_label(const BatchSummaryRow& row) {
  return row.status == "failed" ? row.stage : row.status;
}

// How far a build got: the options (usage, config, provider), compile,
// link, load, built; -1 for what has no place in that order.
int depth(const std::string& label) {
  static const std::map<std::string, int> kDepth{{"usage", 0},   {"config", 0}, {"provider", 0},
                                                 {"compile", 1}, {"link", 2},   {"load", 3},
                                                 {"ok", 4}};
  auto at = kDepth.find(label);
  return at == kDepth.end() ? -1 : at->second;
}

Migration migration(const std::string& before, const std::string& now) {
  // Not built this run (--fail-fast): nothing to compare. Not built in the
  // baseline's: as if it was not there.
  if (now == "skipped") return Migration::skipped;
  if (before.empty() || before == "skipped")
    return now == "ok" ? Migration::added : Migration::new_failure;
  if (now.empty()) return Migration::removed;
  if (before == now) return Migration::unchanged;
  if (now == "ok") return Migration::fixed;
  if (before == "ok") return Migration::new_failure;
  const int was = depth(before), is = depth(now);
  if (was < 0 || is < 0) return Migration::changed;
  if (is == was) return Migration::unchanged;  // usage and config: one layer
  return is > was ? Migration::deeper : Migration::shallower;
}

}  // namespace

std::vector<BatchSummaryRow> load_batch_baseline(const std::string& path) {
  constexpr std::size_t kMaxBytes = 64u << 20;
  Result<std::string> text = read_regular_file_up_to(path, kMaxBytes + 1);
  if (!text) {
    std::error_code ec;
    const bool absent = !std::filesystem::exists(std::filesystem::symlink_status(path, ec));
    throw Error(ErrorKind::usage,
                "--baseline " + text.why() +
                    (absent ? "; the first run has none: add --baseline-missing=empty to "
                              "compare with an empty baseline, and save this run's --json "
                              "summary there"
                            : ""));
  }
  if (text->size() > kMaxBytes)
    throw Error(ErrorKind::usage, path + ": baseline larger than 64 MiB; is this the right file?");
  JsonDocument doc = [&] {
    try {
      return parse_json_file_text(*text, path);
    } catch (const Error& e) {
      throw Error(ErrorKind::usage, e.what());
    }
  }();
  const nlohmann::json& root = doc.root();
  const std::string expect =
      "expected the --json summary of an earlier kbuild build-many ({\"format\": 1, "
      "\"builds\": [...]})";
  if (!root.is_object() || root.value("format", nlohmann::json()) != 1 ||
      !root.contains("builds") || !root["builds"].is_array())
    json_error(path, doc, "", expect, ErrorKind::usage);
  std::vector<BatchSummaryRow> rows;
  // Names seen so far: a set, as a baseline can hold 100,000 builds.
  std::unordered_set<std::string> names;
  for (std::size_t i = 0; i < root["builds"].size(); ++i) {
    const std::string pointer = "/builds/" + std::to_string(i);
    const nlohmann::json& b = root["builds"][i];
    auto text_field = [&](const char* key, bool required) {
      if (!b.is_object()) json_error(path, doc, pointer, expect, ErrorKind::usage);
      if (!b.contains(key)) {
        if (required)
          json_error(path, doc, pointer, std::string("no \"") + key + "\"", ErrorKind::usage);
        return std::string();
      }
      if (!b[key].is_string())
        json_error(path, doc, pointer + "/" + key, "expected a string", ErrorKind::usage);
      return b[key].get<std::string>();
    };
    BatchSummaryRow row;
    row.name = text_field("name", true);
    row.status = text_field("status", true);
    row.stage = text_field("stage", false);
    if (row.status != "ok" && row.status != "failed" && row.status != "skipped")
      json_error(path, doc, pointer + "/status", "expected ok, failed or skipped",
                 ErrorKind::usage);
    if (row.status == "failed" && row.stage.empty()) row.stage = "failed";
    if (!names.insert(row.name).second)
      json_error(path, doc, pointer + "/name",
                 "'" + row.name +
                     "' names two builds; builds are compared by name: a baseline from "
                     "a build list whose builds have distinct names",
                 ErrorKind::usage);
    rows.push_back(std::move(row));
  }
  return rows;
}

void check_comparable(const std::vector<BatchJob>& jobs) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].positional)
      throw Error(ErrorKind::usage,
                  "--baseline compares builds by name, and build " + std::to_string(i + 1) +
                      " has neither a \"name\" nor -o (its place in the list is no name); give "
                      "it one");
    if (!names.insert(jobs[i].name).second)
      throw Error(ErrorKind::usage, "--baseline compares builds by name, and '" + jobs[i].name +
                                        "' names two builds; give each a distinct \"name\"");
  }
}

std::vector<BatchComparison> compare_to_baseline(const std::vector<BatchSummaryRow>& now,
                                                 const std::vector<BatchSummaryRow>& before) {
  std::map<std::string, std::string> was;
  for (const BatchSummaryRow& row : before) was.emplace(row.name, result_label(row));
  std::vector<BatchComparison> out;
  std::set<std::string> seen;
  for (const BatchSummaryRow& row : now) {
    auto at = was.find(row.name);
    const std::string old = at == was.end() ? "" : at->second;
    out.push_back({row.name, old, result_label(row), migration(old, result_label(row))});
    seen.insert(row.name);
  }
  for (const BatchSummaryRow& row : before)
    if (seen.insert(row.name).second)
      out.push_back({row.name, result_label(row), "", Migration::removed});
  return out;
}

bool regressed(const std::vector<BatchComparison>& comparisons) {
  return std::any_of(comparisons.begin(), comparisons.end(), [](const BatchComparison& c) {
    return c.migration == Migration::new_failure || c.migration == Migration::shallower;
  });
}

nlohmann::ordered_json batch_summary_json(const std::vector<BatchSummaryRow>& rows,
                                          unsigned parallel,
                                          const std::vector<BatchComparison>* comparisons) {
  nlohmann::ordered_json builds = nlohmann::ordered_json::array();
  std::size_t failed = 0, skipped = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const BatchSummaryRow& r = rows[i];
    failed += r.status == "failed";
    skipped += r.status == "skipped";
    nlohmann::ordered_json b{{"name", r.name},       {"status", r.status},
                             {"stage", r.stage},     {"exit_code", r.exit_code},
                             {"seconds", r.seconds}, {"report", r.report}};
    if (comparisons && i < comparisons->size()) {
      b["before"] = (*comparisons)[i].before;
      b["migration"] = migration_name((*comparisons)[i].migration);
    }
    builds.push_back(std::move(b));
  }
  nlohmann::ordered_json out{{"format", 1}, {"builds", std::move(builds)}};
  if (comparisons) {
    nlohmann::ordered_json removed = nlohmann::ordered_json::array();
    for (std::size_t i = rows.size(); i < comparisons->size(); ++i)
      removed.push_back({{"name", (*comparisons)[i].name}, {"before", (*comparisons)[i].before}});
    out["removed"] = std::move(removed);
  }
  out["built"] = rows.size() - failed - skipped;
  out["failed"] = failed;
  out["skipped"] = skipped;
  out["jobs"] = parallel;
  nlohmann::ordered_json stages = nlohmann::ordered_json::object();
  for (const auto& [stage, count] : failures_by_stage(rows)) stages[stage] = count;
  out["failed_by_stage"] = std::move(stages);
  if (comparisons) {
    nlohmann::ordered_json moves = nlohmann::ordered_json::object();
    for (Migration m : kAllMigrations)
      moves[migration_name(m)] =
          std::count_if(comparisons->begin(), comparisons->end(),
                        [&](const BatchComparison& c) { return c.migration == m; });
    out["migrations"] = std::move(moves);
  }
  return out;
}

}  // namespace kbuild
