
#include "diagnose/report.hpp"

#include <sys/utsname.h>
#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include "devices/plugin.hpp"
#include "kbuild_config.h"
#include "site/site.hpp"
#include "util/file_system.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

namespace {

using ojson = nlohmann::ordered_json;

std::string tail(const std::string& s) {
  return s.size() <= kReportOutputLimit ? s : s.substr(s.size() - kReportOutputLimit);
}

ojson host() {
  struct utsname u {};
  if (uname(&u) != 0) return ojson::object();
  return ojson{
      {"system", u.sysname}, {"node", u.nodename}, {"release", u.release}, {"machine", u.machine}};
}

const char* kind_name(OutputKind kind) {
  switch (kind) {
    case OutputKind::shared_library: return "shared_library";
    case OutputKind::object: return "object";
    case OutputKind::precompiled_header: return "precompiled_header";
    case OutputKind::preprocessed: return "preprocessed";
  }
  return "";
}

ojson plugin_json(const PluginStatus& s) {
  ojson switches = ojson::object();
  for (const auto& [name, value] : s.switches) switches[name] = value ? ojson(*value) : ojson();
  ojson honoured = ojson::object();
  for (const auto& [name, on] : s.honoured) honoured[name] = on;
  return ojson{{"plugin", s.plugin},
               {"package", s.package},
               {"version", s.installed.empty() ? ojson() : ojson(s.installed)},
               {"release", s.release},
               {"release_from", s.release_from.empty() ? ojson() : ojson(s.release_from)},
               {"release_backends", s.backends},
               {"release_torch", s.torch_lines},
               {"switches_honoured", honoured},
               {"root", s.package_root.empty() ? ojson() : ojson(s.package_root)},
               {"backend", s.backend},
               {"backend_from", s.backend_from},
               {"device_options_patched", s.patches_device},
               {"toolkit", s.toolkit},
               {"toolkit_version", s.toolkit_version.empty() ? ojson() : ojson(s.toolkit_version)},
               {"switches", switches}};
}

// Each word read whole as redact_value does: an address in one word may
// hold a blank ("--remote-cache=redis://:two words@host").
ojson redacted_words(const std::vector<std::string>& words) {
  ojson out = ojson::array();
  for (const std::string& word : words) out.push_back(redact_value(word));
  return out;
}

void redact_strings(ojson& j) {
  if (j.is_string()) j = redact_urls(j.get_ref<const std::string&>());
  if (j.is_structured())  // iterating a number would give the number itself
    for (auto& child : j) redact_strings(child);
}

}  // namespace

ojson build_report(const ReportInput& in) {
  ojson r;
  r["schema"] = "kbuild-report/1";
  r["kbuild_version"] = KBUILD_VERSION;
  r["kbuild_argv"] = redacted_words(in.kbuild_argv);
  r["cwd"] = in.cwd;
  r["host"] = host();
  r["compiler"] = {{"path", in.compiler_path}, {"version", in.compiler_version}};
  if (in.request) {
    const BuildRequest& q = *in.request;
    r["request"] = {{"device", q.query.device_type}, {"backend", in.backend},
                    {"aot_mode", q.query.aot_mode},  {"compile_only", q.query.compile_only},
                    {"kind", kind_name(q.kind)},     {"sources", q.sources},
                    {"torch", in.torch_found}};
  }
  r["provider"] = {{"kind", in.provider_kind}, {"source", in.provider_source}};
  ojson plugins = ojson::array();
  for (const PluginStatus& p : in.plugins) plugins.push_back(plugin_json(p));
  r["versions"] = {{"torch", in.torch_version.empty() ? ojson() : ojson(in.torch_version)},
                   {"plugins", plugins}};
  r["profile"] = {{"line", in.profile_line.empty() ? ojson() : ojson(in.profile_line)},
                  {"description", in.profile},
                  {"evidence", in.profile_evidence.empty() ? ojson() : ojson(in.profile_evidence)}};
  ojson files = ojson::array();
  for (const std::string& f : in.device_files) {
    auto bytes = read_whole_file(f);
    files.push_back({{"path", f}, {"sha1", bytes ? sha1_hex(*bytes) : ""}});
  }
  r["config_files"] = files;  // the report's schema (docs/report.md) keeps its key
  ojson env = ojson::object();
  if (in.env)
    for (const auto& [name, value] : in.env->consulted())
      env[name] = is_secret_variable(name) ? ojson(value ? "set" : "unset")
                  : value                  ? ojson(shown_value(name, *value))
                                           : ojson(nullptr);
  r["environment"] = env;
  if (in.plan) {
    r["argv"] = redacted_words(in.plan->command.argv);
    r["output"] = in.plan->output;
    r["steps"] = in.steps;
  }
  r["notes"] = in.notes;
  if (in.outcome) r["cache"] = cache_status_name(in.outcome->cache);
  // Why a build was not stored (a program the observer could not see, a
  // launcher that compiles elsewhere, a side output) or why it missed.
  if (in.outcome)
    r["cache_why"] = in.outcome->cache_detail.empty() || in.outcome->cache_detail == "remote"
                         ? ojson(nullptr)
                         : ojson(redact_urls(in.outcome->cache_detail));
  if (in.outcome && in.outcome->remote_cache) {
    const std::string& note = in.outcome->remote_lease_note;
    r["remote_cache"] = {{"address", *in.outcome->remote_cache},
                         {"leases", note.empty()},
                         {"note", note.empty() ? ojson(nullptr) : ojson(note)}};
  }
  ojson timings = ojson::object();
  for (const StageTiming& t : in.timings) timings[t.stage] = t.seconds;
  if (in.outcome)
    for (const StageTiming& t : in.outcome->timings) timings[t.stage] = t.seconds;
  r["timings_s"] = timings;
  if (in.outcome && in.outcome->process) {
    const ProcessResult& p = *in.outcome->process;
    r["compiler_run"] = {{"status", p.describe()},
                         {"exit_code", p.exited ? ojson(p.exit_code) : ojson(nullptr)},
                         {"signal", p.exited ? ojson(nullptr) : ojson(p.signal)},
                         {"stdout", tail(p.out)},
                         {"stderr", tail(p.err)},
                         {"truncated", p.output_truncated || p.out.size() > kReportOutputLimit ||
                                           p.err.size() > kReportOutputLimit}};
  }
  if (in.outcome && in.outcome->failure) {
    const FailureAnalysis& a = *in.outcome->failure;
    r["failure_analysis"] = {{"step", a.step == FailedStep::link ? "link" : "compile"},
                             {"first_error", a.first_error},
                             {"missing_libraries", a.missing_libraries},
                             {"undefined_symbols", a.undefined_symbols}};
  }
  if (in.outcome && in.outcome->load) {
    const LoadCheckResult& l = *in.outcome->load;
    r["load_check"] = {{"ok", l.ok},
                       {"message", l.message},
                       {"undefined_symbols", l.undefined_symbols},
                       {"missing_symbols", l.missing_symbols}};
  }
  r["result"] = {{"ok", in.error == nullptr},
                 {"exit_code", in.exit_code},
                 {"stage", in.error ? ojson(stage_name(in.error->kind())) : ojson(nullptr)},
                 {"message", in.error ? ojson(in.error->what()) : ojson(nullptr)}};
  redact_strings(r);  // a password in an argv word, a message or compiler output
  return r;
}

}  // namespace kbuild

namespace kbuild {

namespace {

// The left-out notes of one device (or one device's libraries without
// torch), and how to say them in one line.
struct Group {
  std::size_t first = 0;             // index of its first note in the output
  std::size_t notes = 0;             // how many it folds
  std::vector<std::string> details;  // distinct reasons, or what each left out ("-ltorch")
  bool counted = false;              // "left out N entries: REASONS" (else "ITEMS left out")
  std::string head, tail;
};

// Compiled on first use, not at start-up (a tenth of a dry run's time).
// device 'npu': left out include_dirs entry "..." (npu.json:5): torch_npu_root is unknown (see ...)
const std::regex& device_entry_note() {
  static const std::regex re(R"(^(device '[^']*'): left out .* entry .*\): (.* is unknown.*)$)");
  return re;
}
// torch not found: -ltorch_npu left out of the npu options
const std::regex& torch_library_note() {
  static const std::regex re(R"(^(torch not found): (\S+) left out of the (.*) options$)");
  return re;
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : separator) + i;
  return out;
}

}  // namespace

std::vector<std::string> summarise_notes(const std::vector<std::string>& notes) {
  std::vector<std::string> out;
  std::map<std::string, Group> groups;
  for (const std::string& note : notes) {
    std::smatch m;
    std::string key, detail;
    bool counted = false;
    std::string head, tail;
    // A prefix first: most notes are no group's, and need no regex compiled.
    if (note.rfind("device '", 0) == 0 && std::regex_match(note, m, device_entry_note())) {
      key = m[1].str();
      detail = m[2].str();
      counted = true;
      head = m[1].str() + ": left out ";
    } else if (note.rfind("torch not found: ", 0) == 0 &&
               std::regex_match(note, m, torch_library_note())) {
      key = m[1].str() + "|" + m[3].str();
      detail = m[2].str();
      head = m[1].str() + ": ";
      tail = " left out of the " + m[3].str() + " options";
    } else {
      out.push_back(note);
      continue;
    }
    auto [it, fresh] = groups.try_emplace(key);
    Group& g = it->second;
    if (fresh) {
      g.first = out.size();
      g.counted = counted;
      g.head = head;
      g.tail = tail;
      out.push_back(note);
    }
    ++g.notes;
    if (std::find(g.details.begin(), g.details.end(), detail) == g.details.end())
      g.details.push_back(detail);
  }
  for (const auto& [key, g] : groups) {
    if (g.notes < 2) continue;
    out[g.first] = g.counted ? g.head + std::to_string(g.notes) +
                                   " entries: " + joined(g.details, "; ") + "; -v lists them"
                             : g.head + joined(g.details, " ") + g.tail;
  }
  return out;
}

}  // namespace kbuild

// The report of a Compilation, and where it may be written.
namespace kbuild {

namespace fs = std::filesystem;

Status report_path_problem(const std::string& report, const std::vector<std::string>& sources,
                           const std::string& output) {
  auto same_file = [&](const std::string& other) {
    std::error_code ec;
    if (fs::equivalent(report, other, ec)) return true;
    return fs::absolute(report, ec).lexically_normal() ==
           fs::absolute(other, ec).lexically_normal();
  };
  for (const std::string& source : sources)
    if (same_file(source))
      return Failure{"--report " + report + " is also a source; choose another file",
                     ErrorKind::usage};
  if (!output.empty() && same_file(output))
    return Failure{"--report " + report + " is also the output; choose another file",
                   ErrorKind::usage};
  if (Status replaceable = check_replaceable(report); !replaceable)
    return Failure{"--report " + replaceable.why(), ErrorKind::output};
  return ok();
}

namespace {

// The versions a failure report needs: torch's, and each plugin's package,
// release, backend and toolkit, also when the build failed resolving them.
void version_matrix(const Session& session, const BuildRequest& asked, ReportInput& in) {
  const Paths& paths = session.site.paths;
  if (paths.torch_root)
    in.torch_version = read_package_version(*paths.torch_root + "/version.py").value_or("");
  try {
    ProcessPlugins plugins =
        activate_plugins(session.registry,
                         PluginRequest{asked.plugins, asked.query.device_type, asked.query.backend},
                         session.context());
    for (const ActivePlugin& p : plugins.active)
      in.plugins.push_back(plugin_status(p, session.context()));
  } catch (const Error&) {
    // The build's own error says why; the report keeps what it has.
  }
}

}  // namespace

nlohmann::ordered_json report_of(const Compilation& compilation,
                                 const std::vector<std::string>& kbuild_argv,
                                 const Environment& env, const std::string& compiler_version) {
  const BuildRequest& asked = compilation.asked;
  ReportInput in;
  in.kbuild_argv = kbuild_argv;
  in.cwd = fs::current_path().string();
  in.request = compilation.request ? &*compilation.request : nullptr;
  in.plan = compilation.plan ? &*compilation.plan : nullptr;
  in.outcome = &compilation.outcome;
  in.steps = dry_run_lines(compilation, false);
  in.notes = compilation.notes;
  in.compiler_path = compilation.request ? compilation.request->compiler : asked.compiler;
  in.compiler_version = compiler_version;
  if (const Session* session = compilation.session) {
    in.device_files = session->device_files.files;
    in.timings = session->timings;
    if (session->profile.profile) {
      in.profile = describe(session->profile);
      in.profile_line = session->profile.profile->name;
      in.profile_evidence = session->profile.evidence;
    }
    if (auto d = session->listing(asked.query.device_type)) {
      in.provider_kind = d->kind;
      in.provider_source = d->source;
    }
    if (compilation.request) {
      in.backend = session->backend_of(compilation.request->query);
      in.torch_found = compilation.request->use_torch && session->site.paths.torch_root.has_value();
    }
    version_matrix(*session, asked, in);
  }
  in.env = &env;
  in.error = compilation.failure ? &*compilation.failure : nullptr;
  in.exit_code = compilation.exit_code;
  return build_report(in);
}

}  // namespace kbuild
