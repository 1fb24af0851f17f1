#include "kbuild/batch.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "kbuild/error.hpp"
#include "kbuild/file_util.hpp"
#include "kbuild/json_locations.hpp"
#include "kbuild/process.hpp"

namespace kbuild {

namespace {

[[noreturn]] void manifest_error(const std::string& path, const JsonDocument& doc,
                                 const std::string& pointer, const std::string& what) {
  TextPosition p = doc.value_position(pointer);
  throw Error(ErrorKind::config, path + ":" + std::to_string(p.line) + ":" +
                                     std::to_string(p.column) + ": at " +
                                     (pointer.empty() ? "/" : pointer) + ": " + what);
}

std::vector<std::string> string_array(const std::string& path, const JsonDocument& doc,
                                      const nlohmann::json& v, const std::string& pointer) {
  if (!v.is_array()) manifest_error(path, doc, pointer, "expected an array of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      manifest_error(path, doc, pointer + "/" + std::to_string(i), "expected a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::string output_of(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "-o" || args[i] == "--output") return args[i + 1];
  return "";
}

}  // namespace

std::vector<BatchJob> load_batch_manifest(const std::string& path) {
  constexpr std::size_t kMaxManifestBytes = 16u << 20;
  auto text = read_file_up_to(path, kMaxManifestBytes + 1);
  if (!text) throw Error(ErrorKind::config, "cannot read manifest " + path);
  if (text->size() > kMaxManifestBytes)
    throw Error(ErrorKind::config, path + ": manifest larger than 16 MiB; is this the right file?");
  JsonDocument doc = parse_json_file_text(*text, path);
  const nlohmann::json& root = doc.root();
  if (!root.is_object()) manifest_error(path, doc, "", "expected an object with \"builds\"");
  for (const auto& [key, value] : root.items())
    if (key != "common" && key != "builds")
      manifest_error(path, doc, "/" + json_pointer_token(key),
                     "unknown key '" + key + "' (known: common, builds)");
  std::vector<std::string> common;
  if (root.contains("common")) common = string_array(path, doc, root["common"], "/common");
  if (!root.contains("builds") || !root["builds"].is_array())
    manifest_error(path, doc, "", "\"builds\" must be an array");
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
          manifest_error(path, doc, ptr + "/" + json_pointer_token(key),
                         "unknown key '" + key + "' (known: name, args)");
      if (!b.contains("args")) manifest_error(path, doc, ptr, "missing \"args\"");
      args = string_array(path, doc, b["args"], ptr + "/args");
      if (b.contains("name")) {
        if (!b["name"].is_string()) manifest_error(path, doc, ptr + "/name", "expected a string");
        job.name = b["name"];
      }
    } else {
      manifest_error(path, doc, ptr, "expected an array of arguments or {\"name\", \"args\"}");
    }
    job.args = common;
    job.args.insert(job.args.end(), args.begin(), args.end());
    if (job.name.empty()) job.name = output_of(job.args);
    if (job.name.empty()) job.name = "job " + std::to_string(i + 1);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::vector<BatchResult> run_batch(const std::vector<BatchJob>& jobs,
                                   const std::vector<std::string>& kbuild, unsigned parallel,
                                   bool fail_fast,
                                   const std::function<void(const BatchProgress&)>& progress) {
  std::vector<BatchResult> results(jobs.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  BatchProgress state;
  state.total = jobs.size();
  const auto start = std::chrono::steady_clock::now();

  auto worker = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      if (stop) break;
      BatchResult& r = results[i];
      r.name = jobs[i].name;
      r.started = true;
      std::vector<std::string> argv = kbuild;
      argv.insert(argv.end(), jobs[i].args.begin(), jobs[i].args.end());
      ProcessOptions opts;
      opts.capture_output = true;  // no interleaving: shown per job
      opts.max_capture = 1 << 20;
      auto t0 = std::chrono::steady_clock::now();
      try {
        ProcessResult p = run_process(argv, opts);
        r.exit_code = p.exited ? p.exit_code : 128 + p.signal;
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
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, parallel); ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  return results;
}

}  // namespace kbuild
