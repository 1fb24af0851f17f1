#include "kbuild/build_plan.hpp"

#include "devices/profile_cache.hpp"
#include "kbuild/cache_root.hpp"
#include "kbuild/error.hpp"
#include "plan/base_layer.hpp"
#include "plan/isa_settings.hpp"
#include "plan/torch_layer.hpp"
#include "site/isa_probe.hpp"
#include "util/digest.hpp"
#include "util/install_layout.hpp"
#include "util/parsed_file_cache.hpp"

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
