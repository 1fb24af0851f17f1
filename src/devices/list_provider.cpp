#include "devices/list_provider.hpp"

#include <filesystem>

#include "devices/trust.hpp"
#include "kbuild/error.hpp"
#include "util/shell.hpp"

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
  std::string kind() const override { return "config"; }
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
