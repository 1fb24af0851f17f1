
#include "site/site.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "kbuild/error.hpp"
#include "util/file_system.hpp"
#include "util/json.hpp"
#include "util/process.hpp"
#include "util/trusted_dir.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

std::optional<std::string> first_of(const std::string& flag, std::optional<std::string> env_value) {
  if (!flag.empty()) return flag;
  return env_value;
}

}  // namespace

Site resolve_site(const SiteRequest& s, const Environment& env) {
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

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// The first line drops the current directory from the search path (a
// torch/ folder there must not answer for the installed one); only then is
// anything imported. The user site is named even when absent (Python puts
// it on sys.path only once it exists): `pip install --user` makes it later.
constexpr const char* kProbe =
    R"PY(import sys; sys.path[:] = [p for p in sys.path if p not in ("", ".")]
import importlib.util, json, site, sysconfig
def user_site():
    try:
        return site.getusersitepackages()
    except Exception:
        return None
def root(name):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]
print(json.dumps({
    "torch_root": root("torch"),
    "torch_npu_root": root("torch_npu"),
    "include": sysconfig.get_path("include"),
    "libdir": sysconfig.get_config_var("LIBDIR") or "",
    "sys_path": [p for p in sys.path if p],
    "executable": sys.executable,
    "user_site": user_site(),
}))
)PY";

std::optional<std::string> opt_string(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_string()) return std::nullopt;
  return j[key].get<std::string>();
}

PythonInfo info_from_json(const nlohmann::json& j, const std::string& python) {
  PythonInfo info;
  info.python = python;
  info.torch_root = opt_string(j, "torch_root");
  info.torch_npu_root = opt_string(j, "torch_npu_root");
  info.include = opt_string(j, "include").value_or("");
  info.libdir = opt_string(j, "libdir").value_or("");
  return info;
}

// What an answer's validity rests on: every sys.path entry, the user site
// (absent ones too: stamped -1, so that making one asks again), the parent
// of each absent one, and the interpreter that answered.
nlohmann::json discovery_stamps(const nlohmann::json& answer) {
  nlohmann::json stamps = nlohmann::json::object();
  auto stamp = [&stamps](const nlohmann::json& path) {
    if (!path.is_string() || path.get<std::string>().empty()) return;
    const std::string p = path.get<std::string>();
    const std::int64_t mtime = mtime_ns(p);
    stamps[p] = mtime;
    if (mtime >= 0) return;
    const std::string parent = fs::path(p).parent_path().string();
    if (!parent.empty() && parent != p) stamps[parent] = mtime_ns(parent);
  };
  if (answer.contains("sys_path") && answer["sys_path"].is_array())
    for (const auto& p : answer["sys_path"]) stamp(p);
  if (answer.contains("user_site")) stamp(answer["user_site"]);
  // The interpreter that really answered: replaced or upgraded, ask again.
  if (answer.contains("executable")) stamp(answer["executable"]);
  return stamps;
}

// A cache entry is valid while every directory on sys.path keeps its mtime
// (installing or removing a package changes its site-packages directory).
bool still_valid(const nlohmann::json& entry) {
  if (!entry.contains("stamps") || !entry["stamps"].is_object()) return false;
  for (const auto& [dir, stamp] : entry["stamps"].items())
    if (!stamp.is_number_integer() || mtime_ns(dir) != stamp.get<long long>()) return false;
  return true;
}

}  // namespace

// What decides which interpreter `program` runs. A native program (ELF) runs
// itself: nothing more. A pyenv shim picks a version by pyenv's documented
// rules: PYENV_VERSION, else the nearest .python-version from the current
// directory up, else $PYENV_ROOT/version; those go into the key. Any other
// script picks by rules kbuild cannot see: nullopt, and its answer is not
// cached.
std::optional<std::string> interpreter_choice(const std::string& program, const Environment& env) {
  // Read once, with read(2), not a stream: a dry run asks this.
  constexpr std::size_t kLongestScript = 65536;
  auto text = read_file_up_to(program, kLongestScript + 1);
  if (text && text->rfind("\177ELF", 0) == 0) return "";
  if (!text || text->size() > kLongestScript || text->find("pyenv") == std::string::npos)
    return std::nullopt;
  std::string choice = "pyenv PYENV_VERSION=" + env.get("PYENV_VERSION").value_or("<unset>");
  std::error_code ec;
  for (fs::path dir = fs::current_path(ec); !ec; dir = dir.parent_path()) {
    const std::string file = (dir / ".python-version").string();
    if (auto version = read_whole_file(file)) {
      choice += "\n" + file + "=" + *version;
      break;
    }
    if (dir == dir.parent_path()) break;
  }
  std::string pyenv_root =
      env.get_nonempty("PYENV_ROOT").value_or(env.get("HOME").value_or("") + "/.pyenv");
  choice += "\nglobal=" + read_whole_file(pyenv_root + "/version").value_or("<none>");
  return choice;
}

Discovery discover_python(const std::string& python, const Environment& env,
                          const std::string& cache_dir) {
  Discovery d;
  auto exe = find_executable(python, env);
  if (!exe) {
    d.problem = "'" + python + "' not found on PATH";
    return d;
  }
  // Everything that changes which packages the interpreter sees: the
  // interpreter that really runs (a venv's python is a link to it).
  std::error_code ec;
  const std::string real = fs::canonical(*exe, ec).string();
  std::optional<std::string> choice = interpreter_choice(real, env);
  std::string key =
      *exe + "\n" + real + "\n" + std::to_string(mtime_ns(real)) + "\n" + choice.value_or("");
  // The probe's own text too: an answer of an older probe lacks what this
  // one stamps.
  key += "\n" + fnv1a_name("probe-", kProbe, "");
  // The variables that change which packages it sees (PYTHONNOUSERSITE
  // hides the user site; PYTHONPLATLIBDIR moves the standard library).
  for (const char* var : {"PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE",
                          "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "VIRTUAL_ENV", "HOME"})
    key += std::string("\n") + var + "=" + env.get(var).value_or("<unset>");
  std::string cache_file;
  std::optional<TrustedDir> cache;
  if (!cache_dir.empty() && choice) {
    Result<TrustedDir> dir = open_discovery_dir(cache_dir, true);
    if (dir) cache.emplace(std::move(*dir));
  }
  if (cache) {
    // CBOR, not JSON text: it is read on every run, and decodes faster.
    cache_file = fnv1a_name("python-", key, ".cbor");
    Result<std::string> bytes = cache->read(cache_file, 1u << 20);
    if (bytes) {
      try {
        // A torn, foreign or absurdly nested file is no answer.
        nlohmann::json entry = parse_cbor(*bytes).value_or(nlohmann::json());
        if (entry.is_object() && entry.value("key", "") == key && still_valid(entry)) {
          d.info = info_from_json(entry["answer"], *exe);
          d.from_cache = true;
          return d;
        }
      } catch (const nlohmann::json::exception&) {
        // A torn or foreign file: ignore it and ask Python again.
      }
    }
  }

  ProcessRequest opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(30);
  Environment child = env;
  child.set("PYTHONSAFEPATH", "1");  // Python 3.11+: no script or current directory on the path
  opts.environment = &child;
  ProcessResult run;
  try {
    run = real_processes().run({*exe, "-c", kProbe}, opts);
  } catch (const Error& e) {
    d.problem = e.what();
    return d;
  }
  if (!run.success()) {
    d.problem = "'" + *exe + "' failed to report its paths (" + run.describe() + ")";
    return d;
  }
  nlohmann::json answer;
  try {
    answer = nlohmann::json::parse(run.out);
  } catch (const nlohmann::json::exception&) {
    d.problem = "'" + *exe + "' printed something that is not JSON";
    return d;
  }
  d.info = info_from_json(answer, *exe);
  if (cache) {
    nlohmann::json entry{{"key", key}, {"answer", answer}, {"stamps", discovery_stamps(answer)}};
    std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(entry);
    // Failing only costs speed.
    (void)cache->write_atomically(cache_file, std::string(cbor.begin(), cbor.end()));
  }
  return d;
}

namespace {

// The first lines of a version.py: a few lines, read with read(2) (a dry run
// reads it; a stream's set-up costs more than the file); a huge file is
// not one.
std::vector<std::string> version_file_lines(const std::string& path) {
  std::vector<std::string> lines;
  const std::string text = read_file_up_to(path, 65536).value_or("");
  for (std::size_t start = 0; start < text.size() && lines.size() < 200;) {
    std::size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

bool torch_is_rocm_build(const std::string& torch_root) {
  for (const std::string& line : version_file_lines(torch_root + "/version.py")) {
    if (line.rfind("hip", 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    return value.find('\'') != std::string::npos || value.find('"') != std::string::npos;
  }
  return false;
}

}  // namespace kbuild

namespace kbuild {

CompilerVersion compiler_version(const std::string& compiler, const Environment& env,
                                 ProcessRunner& processes) {
  CompilerVersion v;
  v.path = find_executable(compiler, env);
  if (!v.path) return v;
  ProcessRequest opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(20);
  try {
    ProcessResult r = processes.run({*v.path, "--version"}, opts);
    if (r.success())
      v.first_line = r.out.substr(0, r.out.find('\n'));
    else
      v.failure = r.describe();
  } catch (const Error& e) {
    v.failure = e.what();
  }
  return v;
}

}  // namespace kbuild

namespace kbuild {

std::optional<std::string> read_package_version(const std::string& version_file) {
  for (const std::string& line : version_file_lines(version_file)) {
    if (line.rfind("__version__", 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto open = line.find_first_of("'\"", eq);
    if (open == std::string::npos) continue;
    auto close = line.find(line[open], open + 1);
    if (close == std::string::npos || close == open + 1) continue;
    return line.substr(open + 1, close - open - 1);
  }
  return std::nullopt;
}

}  // namespace kbuild
