#include "kbuild/site.hpp"

#include <filesystem>

#include "kbuild/error.hpp"
#include "kbuild/process.hpp"
#include "util/file_util.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

std::optional<std::string> first_of(const std::string& flag, std::optional<std::string> env_value) {
  if (!flag.empty()) return flag;
  return env_value;
}

}  // namespace

Site resolve_site(const SiteSettings& s, const Environment& env) {
  Site site;
  Paths& p = site.paths;

  if (!s.cuda_home.empty()) {
    p.cuda_home = s.cuda_home;
    p.cuda_home_explicit = true;
  } else if (auto home = env.get_nonempty("CUDA_HOME")) {
    p.cuda_home = *home;
    p.cuda_home_explicit = true;
  } else if (auto path = env.get_nonempty("CUDA_PATH")) {
    p.cuda_home = *path;
  } else if (auto nvcc = find_executable("nvcc", env)) {
    // Like torch's _find_cuda_home: the prefix of the nvcc on PATH.
    p.cuda_home = fs::path(*nvcc).parent_path().parent_path().string();
  }
  if (auto rocm = env.get_nonempty("ROCM_HOME"))
    p.rocm_home = *rocm;
  else if (auto rocm_path = env.get_nonempty("ROCM_PATH"))
    p.rocm_home = *rocm_path;

  if (!s.python_include.empty()) p.python_include = s.python_include;
  if (!s.python_libdir.empty()) p.python_libdir = s.python_libdir;

  if (!s.no_torch) {
    p.torch_root = first_of(s.torch_root, env.get_nonempty("KBUILD_TORCH_ROOT"));
    // A root the user named must exist: building without it would fail later
    // with a confusing link error, or silently lose the torch flags.
    if (p.torch_root && !is_directory(*p.torch_root))
      throw Error(ErrorKind::usage,
                  std::string(s.torch_root.empty() ? "KBUILD_TORCH_ROOT" : "--torch-root") + " " +
                      *p.torch_root +
                      " is not a directory; give the torch package dir (the one holding "
                      "include/ and lib/), or --no-torch");
    bool need_python = !p.torch_root || !p.python_include || !p.python_libdir;
    if (need_python) {
      site.discovery = discover_python(s.python, env, cache_root(env));
      const Discovery& d = *site.discovery;
      if (d.info) {
        if (!p.torch_root) p.torch_root = d.info->torch_root;
        if (!p.python_include && !d.info->include.empty()) p.python_include = d.info->include;
        if (!p.python_libdir && !d.info->libdir.empty()) p.python_libdir = d.info->libdir;
      }
      if (!p.torch_root) {
        std::string why = d.info ? d.info->python + " has no 'torch' package" : d.problem;
        site.notes.push_back("torch not found (" + why +
                             "): building without torch flags; give --torch-root DIR, or "
                             "--no-torch to silence this note");
      }
    }
    if (p.torch_root && !is_directory(*p.torch_root))
      site.notes.push_back("torch root " + *p.torch_root + " (found by " + s.python +
                           ") is not a directory");
  }
  if (p.torch_root) p.torch_is_rocm = torch_is_rocm_build(*p.torch_root);

  p.torch_npu_root = first_of(s.torch_npu_root, env.get_nonempty("KBUILD_TORCH_NPU_ROOT"));
  if (!p.torch_npu_root && p.torch_root) {
    std::string beside = (fs::path(*p.torch_root).parent_path() / "torch_npu").string();
    if (is_directory(beside)) p.torch_npu_root = beside;
  }
  return site;
}

}  // namespace kbuild
