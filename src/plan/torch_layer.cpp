#include "plan/torch_layer.hpp"

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
