
#include "devices/device_file_load.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "devices/device_file.hpp"
#include "devices/pkg_config.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"
#include "util/json.hpp"
#include "util/process.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace fs = std::filesystem;

namespace kbuild {

std::vector<DeviceFileSource> device_file_sources(const std::string& data_dir,
                                                  const Environment& env,
                                                  const std::vector<std::string>& device_files) {
  std::vector<DeviceFileSource> sources;
  if (!data_dir.empty()) sources.push_back({data_dir + "/devices", true, false});
  sources.push_back({"/etc/kbuild/devices.d", true, false});
  if (auto xdg = env.get_nonempty("XDG_CONFIG_HOME"))
    sources.push_back({*xdg + "/kbuild/devices.d", true, false});
  else if (auto home = env.get_nonempty("HOME"))
    sources.push_back({*home + "/.config/kbuild/devices.d", true, false});
  if (auto extra = env.get_nonempty("KBUILD_CONFIG_PATH")) {
    std::istringstream parts(*extra);
    std::string dir;
    while (std::getline(parts, dir, ':'))
      if (!dir.empty()) sources.push_back({dir, true, true});
  }
  for (const std::string& file : device_files) sources.push_back({file, false, true});
  return sources;
}

LoadedDeviceFiles register_device_files(const std::vector<DeviceFileSource>& sources,
                                        Registry& registry, bool allow_untrusted,
                                        const std::string& cache_root, const FileSystem& files) {
  LoadedDeviceFiles loaded;
  auto require_trusted = [&](const Status& trust) {
    if (!trust && !allow_untrusted) throw Error(ErrorKind::config, trust.why());
  };
  auto load = [&](const std::string& path) {
    DeviceFile file = load_device_file(path, !allow_untrusted, cache_root, files);
    file.check_program_trust = !allow_untrusted;
    for (std::string& warning : device_file_warnings(file))
      loaded.warnings.push_back(std::move(warning));
    std::string device = file.device;
    registry.register_device(device, make_provider(std::move(file)));
    loaded.files.push_back(path);
  };
  for (const DeviceFileSource& source : sources) {
    std::error_code ec;
    // A symlink loop or a permission problem is an error, never "missing".
    fs::file_status status = fs::status(source.path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw Error(ErrorKind::config,
                  "cannot use " +
                      std::string(source.is_directory ? "config directory " : "--device-file ") +
                      source.path + ": " + ec.message());
    if (!source.is_directory) {
      if (!fs::exists(status))
        throw Error(ErrorKind::config, "--device-file " + source.path + ": no such file");
      if (fs::is_directory(status))
        throw Error(ErrorKind::config,
                    "--device-file " + source.path +
                        ": a directory, and --device-file takes one file: name a .json file in "
                        "it, or add the directory to KBUILD_CONFIG_PATH to read all its *.json");
      if (!fs::is_regular_file(status))
        throw Error(ErrorKind::config, "--device-file " + source.path + ": not a regular file");
      load(source.path);
      continue;
    }
    if (!fs::exists(status)) {
      if (source.must_exist)
        loaded.warnings.push_back("KBUILD_CONFIG_PATH entry " + source.path + " does not exist");
      continue;
    }
    if (!fs::is_directory(status))
      throw Error(ErrorKind::config, "config directory " + source.path + " is not a directory");
    require_trusted(check_trusted(source.path, "config directory"));
    std::vector<std::string> files;
    fs::directory_iterator it(source.path, ec);
    if (ec)
      throw Error(ErrorKind::config,
                  "cannot read config directory " + source.path + ": " + ec.message());
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->path().extension() == ".json") files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      if (!fs::is_regular_file(f, ec))
        throw Error(ErrorKind::config, "device file " + f + " is not a regular file");
      try {
        load(f);
      } catch (const Error& e) {
        // Every build reads the directory: one bad file stops them all.
        if (e.kind() != ErrorKind::config) throw;
        throw Error(e.kind(),
                    std::string(e.what()) + " (every build reads " + source.path +
                        ": fix the file, or rename it without .json to skip it)",
                    e.detail());
      }
    }
  }
  return loaded;
}

}  // namespace kbuild

namespace kbuild {

std::shared_ptr<const Provider> make_provider(DeviceFile file) {
  if (file.exec) return make_exec_provider(std::move(file));
  return make_list_provider(std::move(file));
}

}  // namespace kbuild

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
    std::error_code ec;
    if (!program && argv[0].find('/') != std::string::npos &&
        std::filesystem::is_regular_file(argv[0], ec))
      throw Error(ErrorKind::provider,
                  who() + ": program '" + argv[0] + "' is not executable; run chmod +x " + argv[0]);
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

    ProcessRequest opts;
    opts.capture_output = true;
    opts.max_capture = 4u << 20;
    opts.timeout = std::chrono::milliseconds(static_cast<long>(spec.timeout_s * 1000));
    opts.environment = &ctx.env;
    opts.handle_interrupts = true;  // end the provider's group on Ctrl-C, not just kbuild
    ProcessResult run;
    try {
      run = (ctx.processes ? *ctx.processes : real_processes()).run(argv, opts);
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

namespace kbuild {

namespace {

std::string flag_for(const std::string& root) {
  if (root == "torch_npu_root") return "torch-npu-root";
  if (root == "python_include") return "python-include";
  if (root == "python_libdir") return "python-libdir";
  return "torch-root";
}

class ListProvider : public Provider {
 public:
  explicit ListProvider(DeviceFile file) : file_(std::move(file)) {}

  OptionsResult options(const DeviceQuery& query, const ResolveContext& ctx) const override {
    OptionsResult r;
    TemplateContext tctx{ctx.env, ctx.paths, device_file_dir(file_.path)};
    const std::string origin = "config " + file_.device;
    add_block(file_.lists, tctx, origin, r);
    for (const PkgConfigPackage& package : file_.pkg_config)
      add_pkg_config_package(package, {file_.device, file_.path, origin, file_.check_program_trust},
                             ctx.env, ctx.processes ? *ctx.processes : real_processes(), r.options);
    for (const ListBlock& block : file_.when)
      if (block.applies(query)) add_block(block, tctx, origin, r);

    // Then the backend's chain: its layers, parents first, then the backend.
    std::string backend = query.backend.empty() ? file_.default_backend : query.backend;
    if (file_.backends.empty()) {
      if (!backend.empty())
        throw Error(ErrorKind::usage, "device '" + file_.device + "' (" + file_.path +
                                          ") defines no backends; drop --backend " + backend);
      return r;
    }
    if (backend.empty()) {
      r.notes.push_back("device '" + file_.device + "' has backends (" + backend_names() +
                        ") but none was chosen and the file names no default_backend: "
                        "device-level options only (use --backend)");
      return r;
    }
    if (!file_.backends.count(backend))
      throw Error(ErrorKind::usage, "device '" + file_.device + "' has no backend '" + backend +
                                        "' (backends: " + backend_names() + ", in " + file_.path +
                                        ")");
    for (const LayerDef* layer : backend_chain(file_, backend)) {
      bool is_backend = layer == &file_.backends.at(backend);
      add_block(layer->lists, tctx, origin + (is_backend ? " backend " : " layer ") + layer->name,
                r);
    }
    return r;
  }
  std::vector<BackendInfo> backends() const override {
    std::vector<BackendInfo> out;
    for (const auto& [name, def] : file_.backends) {
      BackendInfo info{name, def.description, {}, name == file_.default_backend};
      for (const LayerDef* layer : backend_chain(file_, name)) info.chain.push_back(layer->name);
      out.push_back(std::move(info));
    }
    return out;
  }
  std::string source() const override { return file_.path; }
  std::string kind() const override { return "device file"; }
  std::string launcher() const override {
    auto words = shell_split(file_.launcher);
    if (!words || words->empty()) return file_.launcher;  // parse_launcher says what is wrong
    std::string& program = words->front();
    // A relative path is relative to the device file, as exec programs are.
    if (program.find('/') != std::string::npos && program[0] != '/')
      program = (std::filesystem::path(device_file_dir(file_.path)) / program)
                    .lexically_normal()
                    .string();
    if (file_.check_program_trust && program.find('/') != std::string::npos)
      if (auto trust = check_trusted_file(program, "program"); !trust)
        throw Error(ErrorKind::config,
                    "device '" + file_.device + "' launcher (" + file_.path + "): " + trust.why());
    return shell_join(*words);
  }
  RegistrationMode mode() const override { return file_.mode; }
  const DeviceFile* device_file() const override { return &file_; }

 private:
  std::string backend_names() const {
    std::string names;
    for (const auto& [name, def] : file_.backends) names += (names.empty() ? "" : ", ") + name;
    return names;
  }

  void add_block(const ListBlock& block, const TemplateContext& tctx, const std::string& origin,
                 OptionsResult& r) const {
    add_device_file_block(file_, block, tctx, origin, r);
  }

  DeviceFile file_;
};

// A relative include or library dir is relative to the device file, as
// exec and launcher programs are, never to where kbuild happens to run.
std::string relative_to_file(OptionList list, const std::string& value,
                             const std::string& file_dir) {
  const bool is_dir = list == OptionList::include_dirs || list == OptionList::libraries_dirs;
  // An entry with a flag already gets a warning that names it as written.
  if (!is_dir || value.empty() || value[0] == '/' || value[0] == '-') return value;
  return (std::filesystem::path(file_dir) / value).lexically_normal().string();
}

}  // namespace

[[noreturn]] void throw_missing_env(const DeviceFile& file, const DeviceFileEntry& entry,
                                    const Expansion& expansion) {
  const std::string& name = expansion.missing_env;
  std::string where = file.path + ":" + std::to_string(entry.line);
  auto help = file.env_help.find(name);
  if (help != file.env_help.end())
    throw Error(ErrorKind::provider, "device '" + file.device + "' (" + where +
                                         "): " + help->second +
                                         (expansion.env_empty ? " (" + name + " is empty)" : ""));
  const std::string how =
      expansion.env_empty ? " is set but empty; set it to a value" : " is not set; set it";
  throw Error(ErrorKind::provider,
              "device '" + file.device + "' (" + where + "): environment variable " + name + how +
                  ", or give a default as ${env:" + name + ":-VALUE} in " + file.path);
}

void add_device_file_block(const DeviceFile& file, const ListBlock& block,
                           const TemplateContext& tctx, const std::string& origin,
                           OptionsResult& r) {
  for (OptionList list : kAllOptionLists) {
    for (const DeviceFileEntry& entry : block.lists[static_cast<std::size_t>(list)]) {
      Expansion x = entry.value.expand(tctx);
      if (!x.missing_env.empty()) throw_missing_env(file, entry, x);
      if (!x.value) {
        r.notes.push_back("device '" + file.device + "': left out " + std::string(list_name(list)) +
                          " entry \"" + entry.value.text() + "\" (" + file.path + ":" +
                          std::to_string(entry.line) + "): " + x.missing_root +
                          " is unknown (see --" + flag_for(x.missing_root) + ")");
        continue;
      }
      r.options.add(list, relative_to_file(list, *x.value, tctx.config_dir),
                    Origin{Layer::device, origin, file.path, entry.line});
    }
  }
}

std::string device_file_dir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::absolute(path, ec).parent_path().string();
}

std::shared_ptr<const Provider> make_list_provider(DeviceFile file) {
  return std::make_shared<ListProvider>(std::move(file));
}

}  // namespace kbuild

namespace kbuild {

namespace {

// cflags and ldflags entries that start with '-': Inductor adds one itself.
void check_dash(const DeviceFile& file, OptionList list, const DeviceFileEntry& entry,
                std::vector<std::string>& out) {
  const std::string& text = entry.value.text();
  if (text.empty() || text[0] != '-') return;
  const std::string name(list_name(list));
  const std::string bare = text.substr(std::min(text.find_first_not_of('-'), text.size()));
  std::ostringstream warning;
  warning << file.path << ":" << entry.line << ": " << name << " entry \"" << text
          << "\" starts with '-', and Inductor adds a '-' to each " << name
          << " entry, so the compiler gets \"-" << text << "\"; write \"" << bare
          << "\" (or put the whole flag in passthrough_args)";
  out.push_back(warning.str());
}

// The flag Inductor writes before each entry of `list`, or "" for none.
std::string prefix_of(OptionList list) {
  switch (list) {
    case OptionList::libraries: return "-l";
    case OptionList::include_dirs: return "-I";
    case OptionList::libraries_dirs: return "-L";
    default: return "";
  }
}

// libraries, include_dirs and libraries_dirs entries that carry the flag
// Inductor adds itself ("-lfoo" would reach the compiler as "-l-lfoo").
void check_prefix(const DeviceFile& file, OptionList list, const DeviceFileEntry& entry,
                  std::vector<std::string>& out) {
  const std::string prefix = prefix_of(list);
  const std::string& text = entry.value.text();
  if (prefix.empty() || text.rfind(prefix, 0) != 0) return;
  const std::string name(list_name(list));
  std::ostringstream warning;
  warning << file.path << ":" << entry.line << ": " << name << " entry \"" << text
          << "\" starts with " << prefix << ", and Inductor puts " << prefix << " before each "
          << name << " entry, so the compiler gets \"" << prefix << text << "\"; write \""
          << text.substr(prefix.size()) << "\"";
  out.push_back(warning.str());
}

void check_block(const DeviceFile& file, const ListBlock& block, std::vector<std::string>& out) {
  for (OptionList list : kAllOptionLists) {
    for (const DeviceFileEntry& entry : block.lists[static_cast<std::size_t>(list)]) {
      if (list == OptionList::cflags || list == OptionList::ldflags)
        check_dash(file, list, entry, out);
      else
        check_prefix(file, list, entry, out);
    }
  }
}

// "mode": "extend" appends to a built-in device's options; another device
// has none, so the word changes nothing a reader would expect.
std::optional<std::string> extend_warning(const DeviceFile& file) {
  if (file.mode != RegistrationMode::extend) return std::nullopt;
  std::string builtins;
  for (const auto& [name, provider] : builtin_providers()) {
    if (name == file.device) return std::nullopt;
    builtins += (builtins.empty() ? "" : ", ") + name;
  }
  return file.path + ":" + std::to_string(file.mode_line) + ": \"mode\": \"extend\" on device '" +
         file.device + "', which is not built in: there are no built-in options to extend, " +
         "only the default ones every device gets; drop \"mode\", or extend a built-in device (" +
         builtins + ")";
}

}  // namespace

std::vector<std::string> device_file_warnings(const DeviceFile& file) {
  std::vector<std::string> out;
  check_block(file, file.lists, out);
  for (const ListBlock& block : file.when) check_block(file, block, out);
  for (const auto& [name, layer] : file.layers) check_block(file, layer.lists, out);
  for (const auto& [name, backend] : file.backends) check_block(file, backend.lists, out);
  if (auto warning = extend_warning(file)) out.push_back(*warning);
  return out;
}

}  // namespace kbuild
