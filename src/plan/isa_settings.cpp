#include "plan/isa_settings.hpp"

#include "kbuild/cache_root.hpp"
#include "kbuild/error.hpp"
#include "kbuild/install_layout.hpp"

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
