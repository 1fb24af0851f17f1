#include "diagnose/report.hpp"

#include <sys/utsname.h>

#include "kbuild_config.h"
#include "util/file_util.hpp"
#include "util/redact.hpp"

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
  r["kbuild_argv"] = in.kbuild_argv;
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
                  {"description", in.profile}};
  ojson files = ojson::array();
  for (const std::string& f : in.config_files) {
    auto bytes = read_whole_file(f);
    files.push_back({{"path", f}, {"sha1", bytes ? sha1_hex(*bytes) : ""}});
  }
  r["config_files"] = files;
  ojson env = ojson::object();
  if (in.env)
    for (const auto& [name, value] : in.env->consulted())
      env[name] = is_secret_variable(name) ? ojson(value ? "set" : "unset")
                  : value                  ? ojson(*value)
                                           : ojson(nullptr);
  r["environment"] = env;
  if (in.plan) {
    r["argv"] = in.plan->command.argv;
    r["output"] = in.plan->output;
    r["steps"] = in.steps;
  }
  r["notes"] = in.notes;
  if (in.outcome) r["cache"] = cache_status_name(in.outcome->cache);
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
