// request: what a caller asks of the Driver: a device, a build and how to run it, a session's
// settings (plain data; the Driver's methods take these).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kbuild {

struct Profile;  // an Inductor line's command shape (devices/profile.hpp)

enum class IsaKind { none, avx2, avx512, avx512_vnni, amx, neon, sve256 };

struct Isa {
  IsaKind kind = IsaKind::none;
  bool avx512_bf16 = false;  // adds -mavx512bf16 (avx512 and amx only, as Inductor)
  bool amx_fp16 = false;     // adds -mamx-fp16 (amx only)
};

struct DeviceQuery {
  std::string device_type;
  bool aot_mode = false;
  bool compile_only = false;
  std::string backend = {};  // empty: the device's default backend, if any
};

enum class OutputKind {
  shared_library,      // -o X.so
  object,              // -c -o X.o
  precompiled_header,  // -x c++-header H ... -o H.gch
  preprocessed,        // -E -P -o X.i
};

// One build, as asked: what to build (the device, sources, flags), then
// how to run it.
struct BuildRequest {
  DeviceQuery query;  // device type, aot_mode, compile_only
  // --plugin: packages loaded into the process (a device whose file has a
  // plugin section implies its own).
  std::vector<std::string> plugins;
  OutputKind kind = OutputKind::shared_library;
  std::vector<std::string> sources;
  std::string output;  // empty: default_output(sources[0], kind)
  std::string compiler = "g++";
  std::string machine = "x86_64";  // uname -m
  bool strict = false;
  bool min_optimize = false;
  bool debug = false;
  bool warning_all = true;
  bool use_torch = true;  // off: no torch layer (plain C++ kernels)
  // The vector ISA; nullopt: the running CPU's best (as --isa auto), read
  // only when the torch layer applies (a device dry run never reads the CPU).
  std::optional<Isa> isa = Isa{};
  std::vector<std::string> extra_flags;
  std::optional<std::string> include_pch;
  // The Inductor profile (base and torch layers, token order); null: 2.11.
  std::shared_ptr<const Profile> profile;
  // The user layer (-I -D -L -l), appended last.
  std::vector<std::string> include_dirs, definitions, libraries_dirs, libraries;

  // How to run it (resolve_run_settings reads these, with the environment
  // and the device file).
  bool use_cache = true;
  std::string cache_max_size;  // "": KBUILD_CACHE_MAX_SIZE, else 4G
  bool dry_run = false;        // writes nothing: makes no cache directory
  std::string launcher;        // "": the one the device file names, if any
  bool resolve_native = false;
  double timeout_s = 0;  // 0: none
  bool load_check = false;
  // --check-load=strict: loaded with this process's environment only; a
  // library that needs the link's library dirs on LD_LIBRARY_PATH fails.
  bool load_check_strict = false;
  std::vector<std::string> required_symbols;
  std::string pch;           // --pch HEADER ("": none)
  std::string remote_cache;  // --remote-cache ("": KBUILD_REMOTE_CACHE, the device file's)
  bool remote_cache_readonly = false;
  std::string compile_commands;  // --compile-commands FILE ("": none)
  bool verbose = false;          // -v: say where the remote cache setting came from
};

struct SiteRequest {
  std::string torch_root;      // --torch-root (else KBUILD_TORCH_ROOT, else discovered)
  std::string torch_npu_root;  // --torch-npu-root (else KBUILD_TORCH_NPU_ROOT, else beside torch)
  std::string python_include;  // --python-include
  std::string python_libdir;   // --python-libdir
  // --cuda-home, else CUDA_HOME, else CUDA_PATH, else the prefix of the nvcc
  // on PATH, else /usr/local/cuda (torch's _find_cuda_home order).
  std::string cuda_home;
  std::string python = "python3";
  bool no_torch = false;
  // --torch-version X.Y[.Z]: the torch whose Inductor profile to use (else
  // the found torch's version.py, else 2.11).
  std::string torch_version;
};

// What the command line says about where things are.
struct SessionRequest {
  SiteRequest site;
  std::vector<std::string> device_files;
  bool allow_untrusted_device_files = false;
  // The kbuild program build-many runs for each build; "": the installed
  // `kbuild` (never this process, which is not kbuild when a program
  // embeds it). The command line names itself.
  std::string kbuild_program;
};

}  // namespace kbuild
