#include "devices/exec_provider.hpp"

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "devices/list_provider.hpp"
#include "devices/trust.hpp"
#include "kbuild/error.hpp"
#include "kbuild/process.hpp"
#include "util/json_locations.hpp"
#include "util/json_text.hpp"
#include "util/printable.hpp"

namespace kbuild {

namespace {

class ExecProvider : public Provider {
 public:
  explicit ExecProvider(DeviceFile file) : file_(std::move(file)) {}

  OptionsResult options(const DeviceQuery& query, const ResolveContext& ctx) const override {
    const ExecSpec& spec = *file_.exec;
    TemplateContext tctx{ctx.env, ctx.paths, device_file_dir(file_.path)};
    std::vector<std::string> argv;
    for (const TemplateString& part : spec.command) {
      Expansion x = part.expand(tctx);
      if (!x.missing_env.empty())
        throw_missing_env(file_, DeviceFileEntry{part, spec.line, "/exec/command"}, x);
      if (!x.value)
        throw Error(ErrorKind::provider,
                    who() + ": its command needs " + x.missing_root + ", which is unknown");
      argv.push_back(*x.value);
    }
    // A relative program path is relative to the device file.
    if (argv[0].find('/') != std::string::npos && argv[0][0] != '/')
      argv[0] = (std::filesystem::path(device_file_dir(file_.path)) / argv[0])
                    .lexically_normal()
                    .string();
    auto program = find_executable(argv[0], ctx.env);
    if (!program)
      throw Error(ErrorKind::provider,
                  who() + ": program '" + argv[0] + "' not found or not executable");
    if (file_.check_program_trust)
      if (auto trust = check_trusted_file(*program, "program"); !trust)
        throw Error(ErrorKind::config, who() + ": " + trust.why());
    argv[0] = *program;
    for (std::size_t i = 1; i < argv.size(); ++i) resolve_script(argv[i]);
    argv.push_back("--device-type=" + query.device_type);
    argv.push_back(std::string("--aot-mode=") + (query.aot_mode ? "true" : "false"));
    argv.push_back(std::string("--compile-only=") + (query.compile_only ? "true" : "false"));
    if (!query.backend.empty()) argv.push_back("--backend=" + query.backend);

    ProcessOptions opts;
    opts.capture_output = true;
    opts.max_capture = 4u << 20;
    opts.timeout = std::chrono::milliseconds(static_cast<long>(spec.timeout_s * 1000));
    opts.environment = &ctx.env;
    opts.handle_interrupts = true;  // end the provider's group on Ctrl-C, not just kbuild
    ProcessResult run;
    try {
      run = run_process(argv, opts);
    } catch (const Error& e) {
      throw Error(ErrorKind::provider, who() + ": " + e.what());
    }
    std::string stderr_tail =
        run.err.size() > 4000 ? run.err.substr(run.err.size() - 4000) : run.err;
    if (run.interrupted_by)
      throw Error(ErrorKind::interrupted,
                  who() + ": " + run.describe() + "; the provider was stopped", stderr_tail);
    if (run.timed_out)
      throw Error(ErrorKind::provider,
                  who() + ": timed out after " + format_seconds(spec.timeout_s) +
                      " (raise exec.timeout_s in " + file_.path + " if it is just slow)",
                  stderr_tail);
    if (!run.success())
      throw Error(ErrorKind::provider, who() + ": failed with " + run.describe(), stderr_tail);
    if (run.output_truncated)
      throw Error(ErrorKind::provider,
                  who() + ": printed more than 4 MiB; expected one JSON object", stderr_tail);
    OptionsResult r;
    r.options = parse_provider_output(
        run.out, who(), Origin{Layer::device, "exec " + file_.device, file_.path, spec.line});
    return r;
  }
  std::string source() const override { return file_.path; }
  std::string kind() const override { return "exec"; }
  RegistrationMode mode() const override { return file_.mode; }

 private:
  std::string who() const {
    return "device '" + file_.device + "' exec provider (" + file_.path + ":" +
           std::to_string(file_.exec->line) + ")";
  }
  // An argument naming a file (the script of ["/bin/sh", "p.sh"]) is
  // resolved from the device file, not the current directory, and trusted
  // only as the program itself would be.
  void resolve_script(std::string& arg) const {
    if (arg.empty() || arg[0] == '-') return;
    std::filesystem::path path(arg);
    if (path.is_relative()) path = std::filesystem::path(device_file_dir(file_.path)) / path;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return;
    arg = path.lexically_normal().string();
    if (file_.check_program_trust)
      if (auto trust = check_trusted_file(arg, "script"); !trust)
        throw Error(ErrorKind::config, who() + ": " + trust.why());
  }
  static std::string format_seconds(double s) {
    std::string t = std::to_string(s);
    t.erase(t.find_last_not_of('0') + 1);
    if (!t.empty() && t.back() == '.') t.pop_back();
    return t + "s";
  }
  DeviceFile file_;
};

}  // namespace

BuildOptions parse_provider_output(const std::string& text, const std::string& who,
                                   const Origin& origin) {
  nlohmann::json doc;
  try {
    doc = parse_json_text(text);
  } catch (const JsonSyntaxError& e) {  // bad syntax, too deep, numbers out of range
    throw Error(ErrorKind::provider, who +
                                         ": output is not JSON (expected an object with the 7 "
                                         "lists): " +
                                         e.what() +
                                         "; it began with: " + printable_line(text.substr(0, 200)));
  }
  if (!doc.is_object())
    throw Error(ErrorKind::provider, who + ": output is JSON but not an object");
  BuildOptions options;
  for (const auto& [key, value] : doc.items()) {
    auto list = list_from_name(key);
    if (!list) throw Error(ErrorKind::provider, who + ": output has unknown key '" + key + "'");
    if (!value.is_array())
      throw Error(ErrorKind::provider, who + ": output key '" + key + "' is not an array");
    for (const auto& item : value) {
      if (!item.is_string())
        throw Error(ErrorKind::provider, who + ": output key '" + key + "' holds a non-string: " +
                                             printable_line(dump_json(item).substr(0, 200)));
      const std::string& value = item.get_ref<const std::string&>();
      if (value.find('\0') != std::string::npos)
        throw Error(ErrorKind::provider, who + ": output key '" + key +
                                             "' holds a NUL character, which would cut the "
                                             "argument short");
      options.add(*list, value, origin);
    }
  }
  return options;
}

std::shared_ptr<const Provider> make_exec_provider(DeviceFile file) {
  return std::make_shared<ExecProvider>(std::move(file));
}

}  // namespace kbuild
