#include "plan/base_layer.hpp"

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
  for (const ProfileEntry* e : profile_entries(*profile, "base.cflags", base_facts(s)))
    o.add(OptionList::cflags, e->value, Origin{Layer::base, "base", e->file, e->line});

  // Inductor always adds the joined extra flags, even when empty.
  std::string extra;
  for (const std::string& f : s.extra_flags) extra += (extra.empty() ? "" : " ") + f;
  o.add(OptionList::passthrough_args, extra, Origin{Layer::base, "base", "", 0});
  return o;
}

}  // namespace kbuild
