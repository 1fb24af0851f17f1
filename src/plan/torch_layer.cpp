#include "plan/torch_layer.hpp"

namespace kbuild {

OptionsResult torch_layer(const TorchSettings& s, const Paths& paths) {
  const Origin origin{Layer::torch, "torch", "", 0};
  const std::string& root = *paths.torch_root;
  OptionsResult r;
  BuildOptions& o = r.options;

  o.add(OptionList::definitions, "TORCH_INDUCTOR_CPP_WRAPPER", origin);
  o.add(OptionList::definitions, "STANDALONE_TORCH_HEADER", origin);
  // The leading space is Inductor's; it keeps `options --json` identical.
  o.add(OptionList::definitions, " C10_USING_CUSTOM_GENERATED_MACROS", origin);
  for (const std::string& m : isa_macros(s.isa)) o.add(OptionList::definitions, m, origin);

  if (paths.python_include)
    o.add(OptionList::include_dirs, *paths.python_include, origin);
  else
    r.notes.push_back(
        "Python include dir unknown: -I for Python.h left out (use --python-include)");
  o.add(OptionList::include_dirs, root + "/include", origin);
  o.add(OptionList::include_dirs, root + "/include/torch/csrc/api/include", origin);

  o.add(OptionList::cflags, "fopenmp", origin);

  if (paths.python_libdir)
    o.add(OptionList::libraries_dirs, *paths.python_libdir, origin);
  else
    r.notes.push_back("Python LIBDIR unknown: its -L left out (use --python-libdir)");
  o.add(OptionList::libraries_dirs, root + "/lib", origin);

  o.add(OptionList::libraries, "torch", origin);
  o.add(OptionList::libraries, "torch_cpu", origin);
  if (!s.aot_mode) o.add(OptionList::libraries, "torch_python", origin);
  o.add(OptionList::libraries, "gomp", origin);

  if (auto flags = isa_flags(s.isa)) o.add(OptionList::passthrough_args, *flags, origin);
  return r;
}

}  // namespace kbuild
