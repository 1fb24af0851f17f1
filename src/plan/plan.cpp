
#include "plan/plan.hpp"

#include <filesystem>
#include <sstream>

#include "devices/profile.hpp"
#include "kbuild/error.hpp"
#include "site/isa_probe.hpp"
#include "util/digest.hpp"
#include "util/environment.hpp"
#include "util/parsed_file_cache.hpp"
#include "util/process.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

namespace {

BuildOptions user_layer(const BuildRequest& r) {
  const Origin origin{Layer::user, "command line", "", 0};
  BuildOptions o;
  for (const auto& d : r.definitions) o.add(OptionList::definitions, d, origin);
  for (const auto& i : r.include_dirs) o.add(OptionList::include_dirs, i, origin);
  for (const auto& l : r.libraries_dirs) o.add(OptionList::libraries_dirs, l, origin);
  for (const auto& l : r.libraries) o.add(OptionList::libraries, l, origin);
  return o;
}

// --isa auto: the best ISA whose probes build and load, as Inductor picks.
Isa auto_isa(const BuildRequest& r, const ResolveContext& ctx, std::vector<std::string>& notes) {
  IsaProbeResult probed =
      probe_isa(read_cpu_features(), ctx.env, isa_probe_settings(r, ctx, notes));
  notes.insert(notes.end(), probed.notes.begin(), probed.notes.end());
  return probed.isa;
}

}  // namespace

BuildPlan plan_build(const BuildRequest& r, const Registry& registry, const ResolveContext& ctx) {
  if (r.sources.empty())
    throw Error(ErrorKind::usage, "no source given; usage: kbuild [options] SOURCE... -o OUTPUT");
  if (r.kind == OutputKind::precompiled_header && r.sources.size() != 1)
    throw Error(ErrorKind::usage, "--precompile takes exactly one header");
  if (r.kind != OutputKind::shared_library && r.kind != OutputKind::object && r.sources.size() != 1)
    throw Error(ErrorKind::usage, "--preprocess takes exactly one source");
  if (r.kind == OutputKind::object && r.sources.size() != 1)
    throw Error(ErrorKind::usage,
                "--compile-only takes exactly one source (one object per source)");

  BuildPlan plan;
  plan.kind = r.kind;
  plan.include_pch = r.include_pch;
  plan.output = r.output.empty() ? default_output(r.sources.front(), r.kind) : r.output;

  BaseSettings base;
  base.compiler = r.compiler;
  base.do_link = links(r.kind);
  base.min_optimize = r.min_optimize;
  base.debug = r.debug;
  base.warning_all = r.warning_all;
  base.extra_flags = r.extra_flags;
  base.machine = r.machine;
  base.profile = r.profile ? r.profile : default_profile();
  base.env = &ctx.env;
  // The profile in use says which torch line Inductor's flags come from.
  ProcessPlugins plugins =
      activate_plugins(registry, PluginRequest{r.plugins, r.query.device_type, r.query.backend},
                       ResolveContext{ctx.paths, ctx.env, base.profile.get()});
  plan.notes.insert(plan.notes.end(), plugins.notes.begin(), plugins.notes.end());
  BuildOptions all = base_layer(base);
  apply_base_edits(plugins, all);

  if (r.use_torch && ctx.paths.torch_root) {
    Isa isa = r.isa ? *r.isa : auto_isa(r, ctx, plan.notes);
    OptionsResult torch = torch_layer(
        TorchSettings{r.query.aot_mode, isa, base.profile, base_facts(base)}, ctx.paths);
    all.append(torch.options);
    plan.notes.insert(plan.notes.end(), torch.notes.begin(), torch.notes.end());
  }

  // Without the torch layer nothing may refer to torch (Inductor's CppOptions).
  Paths paths = ctx.paths;
  if (!r.use_torch) paths.torch_root.reset();
  OptionsResult device = device_options_in_process(
      registry, plugins, r.query, ResolveContext{paths, ctx.env, base.profile.get()}, r.strict);
  all.append(device.options);
  plan.notes.insert(plan.notes.end(), device.notes.begin(), device.notes.end());
  all.append(user_layer(r));

  all.finalize(r.query.compile_only);
  plan.options = all;
  plan.plugins = std::move(plugins);
  AssembleInput in{r.compiler, r.sources, r.kind, plan.output, r.include_pch};
  in.link_before_output = base.profile->link_before_output;
  in.single_spaced = base.profile->single_spaced;
  plan.command = assemble(all, in);
  plan.profile = base.profile;
  return plan;
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// "dir/k.so" and 0, "src/k.cpp" -> "dir/k.so.0-k" (then ".o", ".d").
std::string derived_name(const std::string& output, std::size_t index, const std::string& source) {
  return output + "." + std::to_string(index) + "-" + fs::path(source).stem().string();
}

std::size_t index_of_output(const std::vector<std::string>& argv, const std::string& output) {
  for (std::size_t i = argv.size(); i-- > 1;)
    if (argv[i] == output && argv[i - 1] == "-o") return i;
  return argv.size() - 1;
}

// Puts the launcher before `argv`, resolving -march=native when asked.
Step launched(const Launcher& launcher, const std::vector<std::string>& argv,
              const std::vector<std::string>& native_flags) {
  Step s;
  s.argv = launcher.argv;
  s.compiler_index = s.argv.size();
  for (const std::string& word : argv) {
    if (word == "-march=native" && launcher.resolve_native && !launcher.argv.empty())
      s.argv.insert(s.argv.end(), native_flags.begin(), native_flags.end());
    else
      s.argv.push_back(word);
  }
  return s;
}

// A step run through the launcher is observed when asked, unless the
// launcher runs the compile where kbuild cannot see it.
void observe(Step& s, const StepInput& in) {
  if (!in.observe) return;
  if (s.compiler_index > 0 && !in.launcher.unobservable.empty())
    s.unobservable = in.launcher.unobservable;
  else
    s.observed = true;
}

}  // namespace

bool links_objects_only(const std::vector<std::string>& sources) {
  for (const std::string& s : sources) {
    std::string ext = fs::path(s).extension().string();
    if (ext != ".o" && ext != ".a" && ext != ".so") return false;
  }
  return true;
}

std::vector<Step> plan_steps(const BuildPlan& plan, const StepInput& in) {
  const Launcher& launcher = in.launcher;
  if (launcher.resolve_native && !launcher.argv.empty() && in.native_flags.empty())
    for (const std::string& w : plan.command.argv)
      if (w == "-march=native")
        throw Error(ErrorKind::compiler_missing, "cannot tell what -march=native means for " +
                                                     plan.command.argv[0] +
                                                     " (its -### output); drop --resolve-native");
  const bool objects_only = links_objects_only(in.sources);
  std::vector<Step> steps;
  if (!launcher.split || !links(plan.kind) || objects_only) {
    // One step: the command itself, behind the launcher if there is one.
    Step s = launched(launcher, plan.command.argv, in.native_flags);
    s.output_index = s.compiler_index + plan.command.output_index;
    s.work_files.push_back(s.output_index);
    if (!plan.depfile.empty())
      for (std::size_t i = s.argv.size(); i-- > s.compiler_index + 1;)
        if (s.argv[i] == plan.depfile && s.argv[i - 1] == "-MF") {
          s.depfile_index = i;
          break;
        }
    s.links = links(plan.kind);
    observe(s, in);
    steps.push_back(std::move(s));
  } else {
    BuildOptions compile_options = plan.options;
    compile_options.remove(OptionList::cflags, "shared");
    std::vector<std::string> objects;
    for (std::size_t i = 0; i < in.sources.size(); ++i) {
      const std::string base = derived_name(plan.output, i, in.sources[i]);
      objects.push_back(base + ".o");
      Command c = assemble(compile_options, AssembleInput{plan.command.argv[0],
                                                          {in.sources[i]},
                                                          OutputKind::object,
                                                          objects.back(),
                                                          plan.include_pch});
      Step s = launched(launcher, c.argv, in.native_flags);
      s.output_index = index_of_output(s.argv, objects.back());
      s.work_files.push_back(s.output_index);
      s.source = in.sources[i];
      observe(s, in);
      steps.push_back(std::move(s));
    }
    Command link = assemble(plan.options,
                            AssembleInput{plan.command.argv[0], objects, OutputKind::shared_library,
                                          plan.output, std::nullopt});
    Step s;
    s.argv = link.argv;
    s.output_index = link.output_index;
    for (std::size_t i = 1; i < s.argv.size(); ++i)
      for (const std::string& o : objects)
        if (s.argv[i] == o) s.work_files.push_back(i);
    s.work_files.push_back(s.output_index);
    s.links = true;
    observe(s, in);
    steps.push_back(std::move(s));
  }
  if (in.load_check) {
    Step check;
    check.kind = StepKind::load_check;
    check.comment = "load check: dlopen " + plan.output + " (RTLD_NOW) in kbuild-load-check";
    for (const std::string& sym : in.required_symbols) check.comment += ", needs symbol " + sym;
    steps.push_back(std::move(check));
  }
  return steps;
}

std::vector<std::string> step_lines(const std::vector<Step>& steps) {
  std::vector<std::string> lines;
  lines.reserve(steps.size());
  for (const Step& s : steps)
    lines.push_back(s.kind == StepKind::command ? shell_join(s.argv) : "# " + s.comment);
  return lines;
}

}  // namespace kbuild

namespace kbuild {

ProfileFacts base_facts(const BaseSettings& s) {
  ProfileFacts f;
  f.link = s.do_link;
  f.debug = s.debug;
  f.min_optimize = s.min_optimize;
  f.warning_all = s.warning_all;
  f.compiler = s.compiler;
  f.machine = s.machine;
  f.env = s.env;
  return f;
}

BuildOptions base_layer(const BaseSettings& s) {
  std::shared_ptr<const Profile> profile = s.profile ? s.profile : default_profile();
  BuildOptions o;
  const ProfileFacts facts = base_facts(s);
  for (const ProfileEntry* e : profile_entries(*profile, "base.cflags", facts))
    o.add(OptionList::cflags, profile_value(*e, facts),
          Origin{Layer::base, "base", e->file, e->line});

  // Inductor always adds the joined extra flags, even when empty.
  std::string extra;
  for (const std::string& f : s.extra_flags) extra += (extra.empty() ? "" : " ") + f;
  o.add(OptionList::passthrough_args, extra, Origin{Layer::base, "base", "", 0});
  return o;
}

}  // namespace kbuild

namespace kbuild {

namespace {

const ProfileIsa* isa_entry(const Profile& profile, const Isa& isa) {
  if (isa.kind == IsaKind::none) return nullptr;
  auto it = profile.isa.find(std::string(isa_name(isa.kind)));
  return it == profile.isa.end() ? nullptr : &it->second;
}

bool avx512_family(IsaKind kind) {
  return kind == IsaKind::avx512 || kind == IsaKind::avx512_vnni || kind == IsaKind::amx;
}

// "${TORCH_ROOT}/include" -> the path; nullopt when the variable is unknown.
std::optional<std::string> expand(const std::string& value, const Paths& paths) {
  auto replace = [&](const std::string& var,
                     const std::optional<std::string>& with) -> std::optional<std::string> {
    if (value.rfind(var, 0) != 0) return value;
    if (!with) return std::nullopt;
    return *with + value.substr(var.size());
  };
  if (value.rfind("${TORCH_ROOT}", 0) == 0) return replace("${TORCH_ROOT}", paths.torch_root);
  if (value.rfind("${PYTHON_INCLUDE}", 0) == 0)
    return replace("${PYTHON_INCLUDE}", paths.python_include);
  if (value.rfind("${PYTHON_LIBDIR}", 0) == 0)
    return replace("${PYTHON_LIBDIR}", paths.python_libdir);
  return value;
}

std::string unknown_note(const std::string& value) {
  if (value.rfind("${PYTHON_INCLUDE}", 0) == 0)
    return "Python include dir unknown: -I for Python.h left out (use --python-include)";
  if (value.rfind("${PYTHON_LIBDIR}", 0) == 0)
    return "Python LIBDIR unknown: its -L left out (use --python-libdir)";
  return "unknown path in profile entry " + value + ": left out";
}

}  // namespace

std::vector<std::string> profile_isa_macros(const Profile& profile, const Isa& isa) {
  const ProfileIsa* entry = isa_entry(profile, isa);
  return entry ? entry->macros : std::vector<std::string>{};
}

std::optional<std::string> profile_isa_flags(const Profile& profile, const Isa& isa) {
  const ProfileIsa* entry = isa_entry(profile, isa);
  if (!entry) return std::nullopt;
  std::string flags = entry->flags;
  auto extra = [&](const std::optional<ProfileEntry>& e) {
    if (e && !e->value.empty()) flags += (flags.empty() ? "" : " ") + e->value;
  };
  if (isa.avx512_bf16 && avx512_family(isa.kind)) extra(profile.isa_bf16);
  if (isa.amx_fp16 && isa.kind == IsaKind::amx) extra(profile.isa_fp16);
  return flags;
}

OptionsResult torch_layer(const TorchSettings& s, const Paths& paths) {
  std::shared_ptr<const Profile> profile = s.profile ? s.profile : default_profile();
  ProfileFacts facts = s.facts;
  facts.aot = s.aot_mode;
  facts.torch = true;
  OptionsResult r;
  BuildOptions& o = r.options;

  auto add_list = [&](const std::string& name, OptionList list) {
    for (const ProfileEntry* e : profile_entries(*profile, "torch." + name, facts)) {
      const Origin origin{Layer::torch, "torch", e->file, e->line};
      if (e->value == "${ISA_MACROS}") {
        for (const std::string& m : profile_isa_macros(*profile, s.isa)) o.add(list, m, origin);
      } else if (e->value == "${ISA_FLAGS}") {
        if (auto flags = profile_isa_flags(*profile, s.isa)) o.add(list, *flags, origin);
      } else if (auto value = expand(e->value, paths)) {
        o.add(list, *value, origin);
      } else {
        r.notes.push_back(unknown_note(e->value));
      }
    }
  };
  add_list("definitions", OptionList::definitions);
  add_list("include_dirs", OptionList::include_dirs);
  add_list("cflags", OptionList::cflags);
  add_list("libraries_dirs", OptionList::libraries_dirs);
  add_list("libraries", OptionList::libraries);
  add_list("passthrough_args", OptionList::passthrough_args);
  if (s.isa.kind != IsaKind::none && !isa_entry(*profile, s.isa))
    r.notes.push_back("the " + profile->name + " line has no " + std::string(isa_name(s.isa.kind)) +
                      " ISA (its cpu_vec_isa.py has no such class): no ISA macros or flags");
  return r;
}

}  // namespace kbuild

namespace kbuild {

IsaLine isa_line(const Profile& profile) {
  IsaLine line;
  line.kinds.clear();
  for (IsaKind kind : {IsaKind::avx2, IsaKind::avx512, IsaKind::avx512_vnni, IsaKind::amx,
                       IsaKind::neon, IsaKind::sve256})
    if (profile.isa.count(std::string(isa_name(kind)))) line.kinds.insert(kind);
  line.bf16_check = profile.isa_bf16 && !profile.isa_bf16->value.empty();
  line.fp16_check = profile.isa_fp16 && !profile.isa_fp16->value.empty();
  line.amx_extends_vnni = line.kinds.count(IsaKind::avx512_vnni) > 0;
  return line;
}

// isa_probe_command reads these and nothing else (no file, no variable): a
// new field in one of them must join the key (the sizes stop the build).
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(Paths) == 240, "add the new field to isa_probe_inputs");
static_assert(sizeof(Isa) == 8, "add the new field to isa_probe_key");
#endif

std::string isa_probe_inputs(const BuildRequest& r, const Paths& paths) {
  auto optional = [](const std::optional<std::string>& s) { return s ? "=" + *s : "-"; };
  const Profile& profile = r.profile ? *r.profile : *default_profile();
  return program_identity() + "\n" + r.compiler + "\n" + r.machine + "\n" +
         digest_hex(encode_profile(profile)) + "\n" + optional(paths.torch_root) + "\n" +
         optional(paths.torch_npu_root) + "\n" + optional(paths.python_include) + "\n" +
         optional(paths.python_libdir) + "\n" + (paths.torch_is_rocm ? "rocm" : "-") + "\n" +
         paths.cuda_home + "\n" + (paths.cuda_home_explicit ? "explicit" : "-") + "\n" +
         paths.rocm_home + "\n";
}

std::string isa_probe_key(const std::string& inputs, const Isa& isa) {
  return inputs + std::string(isa_name(isa.kind)) + (isa.avx512_bf16 ? " bf16" : "") +
         (isa.amx_fp16 ? " fp16" : "") + "\n";
}

// CppTorchOptions(vec_isa, warning_all=False), linked as CppBuilder does.
std::vector<std::string> isa_probe_command(const BuildRequest& r, const Paths& paths,
                                           const Isa& isa, const std::string& source,
                                           const std::string& output) {
  BaseSettings base;
  base.compiler = r.compiler;
  base.warning_all = false;
  base.machine = r.machine;
  base.profile = r.profile ? r.profile : default_profile();
  BuildOptions options = base_layer(base);
  options.append(
      torch_layer(TorchSettings{false, isa, base.profile, base_facts(base)}, paths).options);
  options.finalize(false);
  return assemble(
             options,
             AssembleInput{r.compiler, {source}, OutputKind::shared_library, output, std::nullopt})
      .argv;
}

IsaProbeSettings isa_probe_settings(const BuildRequest& r, const ResolveContext& ctx,
                                    std::vector<std::string>& notes) {
  IsaProbeSettings settings;
  settings.compiler = r.compiler;
  settings.torch_root = ctx.paths.torch_root.value_or("");
  settings.cache_dir = cache_root(ctx.env);
  // The paths are copied: the settings may outlive the caller's context.
  settings.command = [r, paths = ctx.paths](const Isa& isa, const std::string& source,
                                            const std::string& output) {
    return isa_probe_command(r, paths, isa, source, output);
  };
  // The inputs name the file of answers; within it, the ISA names each.
  settings.command_inputs = isa_probe_inputs(r, ctx.paths);
  settings.command_key = [](const Isa& isa) { return isa_probe_key("", isa); };
  // Inductor loads each probe it built; without the helper, building decides.
  try {
    settings.loader = {load_check_helper()};
  } catch (const Error&) {
    notes.push_back(
        "--isa auto: kbuild-load-check is missing, so the ISA probes are built "
        "but not loaded (Inductor also loads them); reinstall kbuild");
  }
  const Profile& profile = r.profile ? *r.profile : *default_profile();
  settings.line = isa_line(profile);
  return settings;
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {

std::string Launcher::name() const {
  return argv.empty() ? "" : fs::path(argv[0]).filename().string();
}

Launcher parse_launcher(const std::string& text) {
  Launcher l;
  auto words = shell_split(text);
  if (!words) throw Error(ErrorKind::usage, "--launcher '" + text + "' has an unbalanced quote");
  l.argv = *words;
  const std::string name = l.name();
  l.distributes = name == "distcc" || name == "icecc" || name == "pump";
  l.split = l.distributes || name == "ccache" || name == "sccache";
  if (l.distributes)
    l.unobservable = name + " hands the compile to another machine, where kbuild cannot observe it";
  if (name == "sccache")
    l.unobservable = "sccache hands the compile to its server, where kbuild cannot observe it";
  return l;
}

std::vector<std::string> resolve_native_flags(const std::string& compiler, const Environment& env,
                                              ProcessRunner& processes) {
  ProcessRequest opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(30);
  opts.environment = &env;
  ProcessResult r =
      processes.run({compiler, "-###", "-march=native", "-E", "-x", "c++", "/dev/null"}, opts);
  std::istringstream lines(r.err);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("cc1") == std::string::npos) continue;
    auto words = shell_split(line);
    if (!words) break;
    std::vector<std::string> flags;
    bool after_march = false;
    for (const std::string& w : *words) {
      if (w.rfind("-march=", 0) == 0) after_march = true;
      if (after_march && (w.rfind("-m", 0) == 0 || w.rfind("--param=", 0) == 0)) flags.push_back(w);
    }
    return flags;
  }
  return {};
}

}  // namespace kbuild
