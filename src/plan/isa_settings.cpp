#include "plan/isa_settings.hpp"

#include "devices/profile_cache.hpp"
#include "kbuild/cache_root.hpp"
#include "kbuild/error.hpp"
#include "plan/base_layer.hpp"
#include "plan/torch_layer.hpp"
#include "util/digest.hpp"
#include "util/install_layout.hpp"
#include "util/parsed_file_cache.hpp"

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
  settings.command_key = [inputs = isa_probe_inputs(r, ctx.paths)](const Isa& isa) {
    return isa_probe_key(inputs, isa);
  };
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
