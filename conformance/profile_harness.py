#!/usr/bin/env python3
"""Runs one torch release's Inductor C++ builder and records its command lines.

The golden data of a kbuild profile must come from running that release's own
code. This script runs `torch/_inductor/cpp_builder.py` (with its
`cpu_vec_isa.py`, `config.py` and, when given, `torch/utils/cpp_extension.py`)
for the matrix kbuild reproduces, and writes `builder_commands.json` and
`device_options.json` in the shape of tests/golden/ (machine paths replaced by
the placeholders of shared/reference/README.md).

Two ways to run it:

  stand-in (default): --inductor-dir DIR holds the release's cpp_builder.py,
      cpu_vec_isa.py and config.py (an installed wheel's torch/_inductor, or a
      source tree's). Those files are copied into a temporary stand-in `torch`
      package and imported from there; what they import from the rest of torch
      is provided by small stubs (listed in the output's "about"), config.py
      runs as written with a stub of torch.utils._config_module that resolves
      Config(...) to its default / environment value. Nothing of the release
      is copied into this repository.
  --installed: imports the torch that python3 finds (a Debian python3-torch
      in a chroot, a wheel in a venv) and runs it as it is.

In both, the host is simulated the same way: CUDA_HOME is a scratch tree with
include/ and lib64/libcudart_static.a (+ lib64/stubs), the CPU feature queries
of torch.cpu answer for the simulated host of each ISA variant, and the ISA
probe builds (VecISA.check_build) are taken as succeeding, as on the x86-64
host the 2.11 data was measured on (avx512+vnni+amx, avx512_bf16, no amx_fp16).

Usage:
  conformance/profile_harness.py --inductor-dir DIR [--cpp-extension FILE]
      [--version-py FILE] --out DIR [--check GOLDEN_DIR]
  conformance/profile_harness.py --installed --out DIR [--check GOLDEN_DIR]

--check compares the base matrix ("commands" and "results") with a golden
directory holding builder_commands.json and device_options.json and exits 1 on
any difference. Stdlib only; runs on python3 >= 3.9.
"""
import argparse
import importlib
import importlib.abc
import importlib.machinery
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import types

DEVICES_BUILT = ["cpu", "cuda", "xpu", "mps"]
DEVICES_HOOKED = ["cpu", "cuda", "xpu", "mps", "npu", "unregistered_device_xyz"]
BOOLS = [False, True]

# Simulated hosts for the ISA variants: what torch.cpu's feature queries say.
HOSTS = {
    "none": {},
    "avx2": {"avx2": True},
    "avx512": {"avx2": True, "avx512": True},
    # the host of the measured 2.11 data
    "amx": {"avx2": True, "avx512": True, "vnni": True, "amx": True,
            "bf16": True, "amx_fp16": False},
}


# --------------------------------------------------------------------------
# the stand-in torch package (child process only)


class _AnyMeta(type):
    """A class that stands for any object a stubbed module is asked for."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _any(f"{cls.__name__}.{name}")

    def __getitem__(cls, _key):
        return cls

    def __or__(cls, _other):
        return cls

    __ror__ = __or__

    def __call__(cls, *args, **kwargs):
        # a decorator applied to a function leaves the function as it was
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return super().__call__(*args, **kwargs)


def _any(name):
    def init(self, *a, **k):
        pass

    def call(self, *a, **k):
        return None

    def enter(self):
        return self

    def exit_(self, *a):
        return False

    return _AnyMeta(name.split(".")[-1], (), {
        "__init__": init, "__call__": call, "__enter__": enter,
        "__exit__": exit_, "__iter__": lambda self: iter(()),
        "__bool__": lambda self: False,
        "__getattr__": lambda self, n: _any(n) if not n.startswith("__")
        else (_ for _ in ()).throw(AttributeError(n)),
    })


class _AnyModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") or self._holds_file(name):
            raise AttributeError(name)
        value = _any(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value

    def _holds_file(self, name):
        """A submodule the stand-in holds as a file is imported, not faked."""
        for d in getattr(self, "__path__", None) or []:
            if os.path.exists(os.path.join(d, name + ".py")) or os.path.isdir(
                    os.path.join(d, name)):
                return True
        return False


STUBBED = []


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Turns a module into an _AnyModule: last on sys.meta_path for torch.*
    (what the stand-in does not hold) and modules that may be missing; first
    for setuptools and triton, which cpp_extension / cpp_builder import only
    for classes and helpers the command line does not use."""

    def __init__(self, roots):
        self.roots = roots

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        STUBBED.append(spec.name)
        mod = _AnyModule(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module):
        pass


def _config_module_stub():
    """torch.utils._config_module: Config(...) resolves to its value."""
    mod = _AnyModule("torch.utils._config_module")

    def parse_env(raw, default):
        if isinstance(default, bool) or default is None:
            return raw == "1" or raw.lower() == "true"
        try:
            return type(default)(raw)
        except Exception:
            return raw

    class Config:
        def __init__(self, default=None, justknob=None, env_name_default=None,
                     env_name_force=None, value_type=None, alias=None, **_):
            self.default = default
            self.env_default = env_name_default
            self.env_force = env_name_force

        def resolve(self):
            for names in (self.env_force, self.env_default):
                for name in ([names] if isinstance(names, str) else names or []):
                    if name in os.environ:
                        return parse_env(os.environ[name], self.default)
            return self.default

    def resolve_all(namespace):
        for key, value in list(vars(namespace).items()):
            if isinstance(value, Config):
                setattr(namespace, key, value.resolve())
            elif isinstance(value, type) and value.__module__ == namespace_name[0]:
                resolve_all(value)

    namespace_name = [""]

    def install_config_module(module):
        namespace_name[0] = module.__name__
        resolve_all(module)

    def get_tristate_env(name, default=None):
        value = os.environ.get(name)
        if value == "1":
            return True
        if value == "0":
            return False
        return default

    def inherit_fields_from(*_a, **_k):
        return lambda cls: cls

    mod.Config = Config
    mod.install_config_module = install_config_module
    mod.get_tristate_env = get_tristate_env
    mod.inherit_fields_from = inherit_fields_from
    return mod


class _Version:
    """Enough of packaging's Version for the comparisons cpp_extension makes."""

    def __init__(self, text):
        self.text = str(text)
        parts = []
        for piece in self.text.split("+")[0].split("."):
            digits = "".join(c for c in piece if c.isdigit())
            parts.append(int(digits) if digits else 0)
        self.key = tuple(parts)

    def _other(self, other):
        return other if isinstance(other, _Version) else _Version(other)

    def __lt__(self, o):
        return self.key < self._other(o).key

    def __le__(self, o):
        return self.key <= self._other(o).key

    def __gt__(self, o):
        return self.key > self._other(o).key

    def __ge__(self, o):
        return self.key >= self._other(o).key

    def __eq__(self, o):
        return self.key == self._other(o).key

    def __hash__(self):
        return hash(self.key)

    def __str__(self):
        return self.text

    @property
    def major(self):
        return self.key[0]

    @property
    def minor(self):
        return self.key[1] if len(self.key) > 1 else 0


def _cpu_stub(host):
    """torch.cpu: feature queries answer for the simulated host."""
    mod = _AnyModule("torch.cpu")
    for name in _cpu_query_names():
        setattr(mod, name, _feature_answer(name, host))
    return mod


def _cpu_query_names():
    return ["_is_avx2_supported", "_is_avx512_supported", "_is_vnni_supported",
            "_is_amx_tile_supported", "_is_amx_fp16_supported",
            "_is_avx512_bf16_supported", "_init_amx", "_is_cpu_support_avx2",
            "_is_cpu_support_avx512", "_is_cpu_support_avx512_vnni",
            "_is_cpu_support_vnni", "_is_cpu_support_amx_tile",
            "_is_arm_sve_supported"]


def _feature_answer(name, host):
    for key in ("amx_fp16", "bf16", "vnni", "amx", "avx512", "avx2"):
        if key in name:
            return lambda: bool(host.get(key, False))
    return lambda: False


def install_standin(tree, host, cuda_version, abi):
    """sys.modules gets a torch whose _inductor / utils files are the release's."""
    torch = _AnyModule("torch")
    torch.__path__ = [os.path.join(tree, "torch")]
    torch.__file__ = os.path.join(tree, "torch", "__init__.py")
    sys.modules["torch"] = torch

    version_py = os.path.join(tree, "torch", "version.py")
    if os.path.exists(version_py):
        version = importlib.import_module("torch.version")
    else:
        version = types.ModuleType("torch.version")
        version.__version__ = "0.0.0"
        version.git_version = "unknown"
        version.debug = False
        version.cuda = cuda_version
        version.hip = version.xpu = version.rocm = None
        sys.modules["torch.version"] = version
    if not getattr(version, "cuda", None):
        version.cuda = cuda_version  # a +cpu wheel's files: a CUDA build's rows
    torch.version = version
    torch.__version__ = version.__version__

    class dtype:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return f"torch.{self.name}"

    torch.dtype = dtype
    for name in ("float", "float32", "float16", "bfloat16", "int8", "uint8",
                 "int32", "int64", "float64", "bool", "half", "double", "long",
                 "float8_e4m3fn", "float8_e5m2"):
        setattr(torch, name, dtype(name))

    def package(name, with_path=True):
        mod = _AnyModule(name)
        if with_path:
            mod.__path__ = [os.path.join(tree, *name.split("."))]
        sys.modules[name] = mod
        parent, _, leaf = name.rpartition(".")
        setattr(sys.modules[parent], leaf, mod)
        return mod

    package("torch._inductor")
    # a build fact older releases put on the line (-D_GLIBCXX_USE_CXX11_ABI=)
    package("torch._C", with_path=False)._GLIBCXX_USE_CXX11_ABI = bool(abi)
    package("torch.utils")
    package("torch.backends", with_path=False)
    # a CUDA build on a host with a GPU (as measured), no XPU support
    cuda = package("torch.cuda", with_path=False)
    cuda.is_available = cuda._is_compiled = lambda: bool(version.cuda)
    xpu = package("torch.xpu", with_path=False)
    xpu.is_available = xpu._is_compiled = lambda: False
    sys.modules["torch.utils._config_module"] = _config_module_stub()
    torch.utils._config_module = sys.modules["torch.utils._config_module"]
    sys.modules["torch.cpu"] = torch.cpu = _cpu_stub(host)
    # config.py's decide_compile_threads (2.12+) asserts a CPU count at import
    package("torch._utils", with_path=False).cpu_count = lambda: os.cpu_count() or 1
    env = package("torch._environment", with_path=False)
    env.is_fbcode = lambda: False
    backends_cpu = package("torch.backends.cpu", with_path=False)
    backends_cpu.get_cpu_capability = lambda: "AVX512" if host.get("avx512") else (
        "AVX2" if host.get("avx2") else "DEFAULT")
    for name in ("torch.torch_version", "torch._vendor",
                 "torch._vendor.packaging", "torch._vendor.packaging.version"):
        package(name, with_path=False)
    for name in ("torch.torch_version", "torch._vendor.packaging.version"):
        sys.modules[name].Version = _Version
        sys.modules[name].TorchVersion = _Version
        sys.modules[name].InvalidVersion = ValueError
    torch.torch_version.__version__ = _Version(version.__version__)
    sys.meta_path.insert(0, _StubFinder({"setuptools", "pkg_resources", "triton"}))
    sys.meta_path.append(_StubFinder({"torch", "sympy", "numpy", "filelock",
                                      "packaging"}))
    return torch


def patch_installed(host, simulate_cuda):
    """A real torch: only the CPU feature queries are made to answer for the
    simulated host."""
    import torch  # noqa: F401  (the installed one)


    for name in _cpu_query_names():
        if hasattr(torch.cpu, name) or hasattr(torch._C, "_cpu_" + name):
            setattr(torch.cpu, name, _feature_answer(name, host))
    return torch


def simulate_cuda_build(torch, version):
    """A CPU-only build (Debian's) says it is a CUDA build once torch and
    Inductor are loaded, and cpp_extension recomputes CUDA_HOME from that."""
    import torch.utils.cpp_extension as cpp_extension

    torch.version.cuda = version
    torch.cuda._is_compiled = torch.cuda.is_available = lambda: True
    importlib.reload(cpp_extension)


# --------------------------------------------------------------------------
# running the release's builder (child process)


def seven(t):
    names = ["definitions", "include_dirs", "cflags", "ldflags",
             "libraries_dirs", "libraries", "passthrough_args"]
    return {n: list(v) for n, v in zip(names, t)}


def err(e):
    return f"ERR {e!r}"


class Runner:
    def __init__(self, out_dir):
        from torch._inductor import cpp_builder, cpu_vec_isa

        self.cb = cpp_builder
        self.isa = cpu_vec_isa
        self.out = out_dir
        # a probe build is taken as succeeding (see the module docstring)
        cpu_vec_isa.VecISA.check_build = lambda self, code: True

    def command(self, options, name="kernel", source=None):
        source = source or os.path.join(self.out, "kernel.cpp")
        builder = self.cb.CppBuilder(name=name, sources=source,
                                     BuildOption=options, output_dir=self.out)
        # without the trailing blank the link part leaves, as in the measured data
        raw = builder.get_command_line().rstrip()
        return {"raw": raw, "argv": shlex.split(raw),
                "target": builder.get_target_file_path()}

    def guarded(self, make):
        try:
            return make()
        except Exception as e:  # the release's own refusal is data too
            return {"error": err(e)}

    def device_options(self):
        results = {}
        for dev in DEVICES_HOOKED:
            for aot in BOOLS:
                for co in BOOLS:
                    key = f"{dev} aot_mode={aot} compile_only={co}"
                    try:
                        results[key] = seven(self.cb.get_cpp_torch_device_options(
                            dev, aot_mode=aot, compile_only=co))
                    except Exception as e:
                        results[key] = err(e)
        return results

    def base_commands(self):
        commands = {}
        for dev in DEVICES_BUILT:
            for aot in BOOLS:
                for co in BOOLS:
                    for inc in BOOLS:
                        key = (f"{dev}|aot={aot}|compile_only={co}"
                               f"|include_pytorch={inc}")
                        commands[key] = self.guarded(lambda: self.command(
                            self.cb.CppTorchDeviceOptions(
                                device_type=dev, aot_mode=aot, compile_only=co,
                                include_pytorch=inc)))
        return commands

    def isa_commands(self, host_name):
        picked = self.isa.pick_vec_isa()
        out = {}
        if host_name == "amx":
            out["CppTorchOptions|isa|include_pytorch"] = self.guarded(
                lambda: self.command(self.cb.CppTorchOptions(
                    vec_isa=picked, include_pytorch=True)))
        for dev in ("cpu", "cuda"):
            for aot in BOOLS:
                for co in BOOLS:
                    key = f"isa={host_name}|{dev}|aot={aot}|compile_only={co}"
                    out[key] = self.guarded(lambda: self.command(
                        self.cb.CppTorchDeviceOptions(
                            vec_isa=picked, device_type=dev, aot_mode=aot,
                            compile_only=co)))
        out[f"isa={host_name}|picked"] = {"isa": str(picked)}
        return out

    def pch_and_wrapper_commands(self):
        header = os.path.join(self.out, "header.h")
        out = {}
        for dev in ("cpu", "cuda"):
            out[f"pch-build|{dev}"] = self.guarded(lambda: self.command(
                self.cb.CppTorchDeviceOptions(device_type=dev, precompiling=True),
                name="header.h", source=header))

            def with_pch(dev=dev, co=False):
                options = self.cb.CppTorchDeviceOptions(device_type=dev,
                                                        compile_only=co)
                options.precompiled_header = header
                return self.command(options)

            out[f"pch-use|{dev}|compile_only=False"] = self.guarded(with_pch)
            out[f"pch-use|{dev}|compile_only=True"] = self.guarded(
                lambda: with_pch(co=True))
            out[f"preprocess|{dev}"] = self.guarded(lambda: self.command(
                self.cb.CppTorchDeviceOptions(device_type=dev, preprocessing=True)))
            for co in BOOLS:
                out[f"wrapper-min-optimize|{dev}|compile_only={co}"] = self.guarded(
                    lambda: self.command(self.cb.CppTorchDeviceOptions(
                        device_type=dev, compile_only=co, min_optimize=True)))
        out["extra-flags|cpu"] = self.guarded(lambda: self.command(
            self.cb.CppTorchDeviceOptions(device_type="cpu",
                                          extra_flags=("-DX=1", "-Wextra"))))
        return out

    def compiler_commands(self, label):
        out = {}
        for aot in BOOLS:
            for co in BOOLS:
                out[f"cxx={label}|cpu|aot={aot}|compile_only={co}"] = self.guarded(
                    lambda: self.command(self.cb.CppTorchDeviceOptions(
                        device_type="cpu", aot_mode=aot, compile_only=co)))
        out[f"cxx={label}|CppOptions"] = self.guarded(
            lambda: self.command(self.cb.CppOptions()))
        return out


def child_main(args):
    host = HOSTS[args.host]
    if args.installed:
        torch = patch_installed(host, args.simulate_cuda)
    else:
        torch = install_standin(args.tree, host, args.cuda_version,
                                args.cxx11_abi)
    runner = Runner(args.out_dir)
    if args.installed and args.simulate_cuda and not torch.version.cuda:
        simulate_cuda_build(torch, args.simulate_cuda)
    result = {"torch_version": torch.__version__,
              "torch_root": os.path.dirname(torch.__file__),
              "config_cxx": None}
    from torch._inductor import config

    result["config_cxx"] = repr(getattr(config.cpp, "cxx", None))
    if args.job == "base":
        result["device_options"] = runner.device_options()
        result["commands"] = runner.base_commands()
        result["commands"]["CppOptions"] = runner.guarded(
            lambda: runner.command(runner.cb.CppOptions()))
        result["variants"] = runner.pch_and_wrapper_commands()
    elif args.job == "isa":
        result["variants"] = runner.isa_commands(args.host)
    elif args.job == "compiler":
        result["variants"] = runner.compiler_commands(args.label)
    result["stubbed_modules"] = sorted(set(STUBBED))
    # a file, not stdout: torch may print there while it loads
    with open(args.result, "w") as f:
        json.dump(result, f)


# --------------------------------------------------------------------------
# the parent: scratch trees, one child per job, placeholders, output


def make_scratch(root):
    """Fake CUDA tree and output dir; returns their real paths."""
    root = os.path.realpath(root)
    cuda = os.path.join(root, "cuda")
    os.makedirs(os.path.join(cuda, "include"))
    os.makedirs(os.path.join(cuda, "lib64", "stubs"))
    open(os.path.join(cuda, "lib64", "libcudart_static.a"), "w").close()
    out = os.path.join(root, "out")
    os.makedirs(out)
    bindir = os.path.join(root, "bin")
    os.makedirs(bindir)
    # A compiler that only answers --version (the builder runs nothing else),
    # so the clang variant needs no clang installed.
    fake = os.path.join(bindir, "clang++")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'clang version 16.0.0 (stand-in)'\n")
    os.chmod(fake, 0o755)
    return cuda, out, bindir


def make_tree(root, args):
    """The stand-in package: the release's files at their places (in /tmp)."""
    tree = os.path.join(root, "standin")
    ind = os.path.join(tree, "torch", "_inductor")
    os.makedirs(ind)
    os.makedirs(os.path.join(tree, "torch", "utils"))
    for name in ("cpp_builder.py", "cpu_vec_isa.py", "config.py"):
        shutil.copyfile(os.path.join(args.inductor_dir, name),
                        os.path.join(ind, name))
    if args.cpp_extension:
        shutil.copyfile(args.cpp_extension,
                        os.path.join(tree, "torch", "utils", "cpp_extension.py"))
    if args.version_py:
        shutil.copyfile(args.version_py, os.path.join(tree, "torch", "version.py"))
    for d in ("include", "lib"):
        os.makedirs(os.path.join(tree, "torch", d))
    return tree


def run_child(args, job, host, env, label="", tree=""):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--job", job,
           "--host", host, "--out-dir", env["KBUILD_HARNESS_OUT"],
           "--label", label, "--cuda-version", args.cuda_version,
           "--cxx11-abi", str(args.cxx11_abi)]
    if args.installed:
        cmd.append("--installed")
        if args.simulate_cuda:
            cmd += ["--simulate-cuda", args.simulate_cuda]
    else:
        cmd += ["--tree", tree]
    result = os.path.join(os.path.dirname(env["KBUILD_HARNESS_OUT"]),
                          "result.json")
    cmd += ["--result", result]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"harness: the {job}/{host}/{label} run failed")
    with open(result) as f:
        return json.load(f)


def placeholder_map(first, cuda, out, debian_march):
    torch_root = os.path.realpath(first["torch_root"])
    pairs = [
        (os.path.join(cuda, "lib64"), "${CUDA_LIB}"),
        (cuda, "${CUDA_HOME}"),
        (torch_root, "${TORCH_ROOT}"),
        (first["torch_root"], "${TORCH_ROOT}"),
        (sysconfig.get_path("include"), "${PYTHON_INCLUDE}"),
        (sysconfig.get_config_var("LIBDIR"), "${PYTHON_LIBDIR}"),
        (out, "${OUT_DIR}"),
    ]
    pairs = sorted(set(pairs), key=lambda p: -len(p[0]))
    return pairs


def substitute(value, pairs, compilers):
    if isinstance(value, str):
        for cxx in compilers:
            if value.startswith(cxx + " ") or value == cxx:
                value = "${CXX}" + value[len(cxx):]
                break
        for path, name in pairs:
            value = value.replace(path, name)
        return value
    if isinstance(value, list):
        return [substitute(v, pairs, compilers) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, pairs, compilers) for k, v in value.items()}
    return value


def compare(name, mine, golden):
    bad = 0
    for key in sorted(set(mine) | set(golden)):
        if mine.get(key) != golden.get(key):
            bad += 1
            print(f"DIFF {name} {key}:\n  harness: {json.dumps(mine.get(key))}"
                  f"\n  golden:  {json.dumps(golden.get(key))}")
    print(f"{name}: {len(golden)} golden entries, {bad} differ")
    return bad


def parent_main(args):
    with tempfile.TemporaryDirectory(prefix="kbuild-profile-") as root:
        cuda, out, bindir = make_scratch(root)
        tree = "" if args.installed else make_tree(root, args)
        env = dict(os.environ)
        for var in ("CXX", "TORCHINDUCTOR_DEBUG_COMPILE", "ATEN_CPU_CAPABILITY",
                    "TORCHINDUCTOR_VEC_ISA_OK", "CUDA_PATH", "ROCM_HOME",
                    "AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION"):
            env.pop(var, None)
        env.update({"CUDA_HOME": cuda, "KBUILD_HARNESS_OUT": out,
                    "TORCHINDUCTOR_CACHE_DIR": os.path.join(root, "cache"),
                    "PATH": env.get("PATH", "/usr/bin:/bin") + ":" + bindir,
                    "CXX": args.cxx, "PYTHONDONTWRITEBYTECODE": "1"})
        env.update(dict(item.split("=", 1) for item in args.env))
        base = run_child(args, "base", "none", env, tree=tree)
        variants = dict(base["variants"])
        commands = dict(base["commands"])
        stubbed = set(base["stubbed_modules"])
        for host in ("avx2", "avx512", "amx"):
            r = run_child(args, "isa", host, env, tree=tree)
            v = r["variants"]
            golden_key = "CppTorchOptions|isa|include_pytorch"
            if golden_key in v:
                commands[golden_key] = v.pop(golden_key)
            variants.update(v)
            stubbed |= set(r["stubbed_modules"])
        clang_env = dict(env, CXX="clang++")
        variants.update(run_child(args, "compiler", "none", clang_env,
                                  label="clang++", tree=tree)["variants"])
        clang_env["AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION"] = "0"
        variants.update(run_child(
            args, "compiler", "none", clang_env,
            label="clang++,AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION=0",
            tree=tree)["variants"])

        pairs = placeholder_map(base, cuda, out, False)
        compilers = [args.cxx, "clang++"]
        # the golden file's order: devices in matrix order, then the two extras
        ordered = {k: commands[k] for k in commands if "|" in k and "isa" not in k}
        for k in ("CppTorchOptions|isa|include_pytorch", "CppOptions"):
            ordered[k] = commands[k]
        commands = substitute(ordered, pairs, compilers)
        variants = substitute(variants, pairs, compilers)
        results = substitute(base["device_options"], pairs, compilers)

    mode = ("the installed torch (" + base["torch_version"] + ")" if args.installed
            else "a stand-in torch package holding that release's files")
    about = (
        f"Produced by conformance/profile_harness.py from torch "
        f"{base['torch_version']}'s torch/_inductor/cpp_builder.py, run in {mode}, "
        f"with CXX={args.cxx} on x86-64 Linux (python {sys.version.split()[0]}). "
        "CppBuilder(name='kernel', sources='${OUT_DIR}/kernel.cpp', "
        "BuildOption=CppTorchDeviceOptions(device_type=..., aot_mode=..., "
        "compile_only=..., include_pytorch=...), output_dir='${OUT_DIR}')"
        ".get_command_line(). 'raw' keeps Inductor's exact spacing; 'argv' is "
        "shlex.split(raw). Unless the key names an ISA, vec_isa was "
        "invalid_vec_isa. 'variants': ISA picked by pick_vec_isa() on a "
        "simulated host (isa=avx2|avx512|amx; amx = avx512+vnni+amx_tile+"
        "avx512_bf16, the measured 2.11 host; probe builds taken as succeeding), "
        "PCH build (precompiling=True) and use (precompiled_header), "
        "preprocessing, the C++ wrapper's min_optimize, extra_flags, and clang++ "
        "(an --version-only stand-in binary) with and without "
        "AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION=0. An 'error' is the "
        "release's own exception for that call.")
    if args.env:
        about += " Environment set for the run: " + ", ".join(args.env) + "."
    if args.simulate_cuda:
        about += (f" The installed torch is CPU-only; torch.version.cuda was set "
                  f"to {args.simulate_cuda}, torch.cuda._is_compiled() and is_available() to True "
                  "once torch was loaded, and torch.utils.cpp_extension was "
                  "reloaded (CUDA_HOME from the environment), so the cuda rows run.")
    if not args.installed:
        about += (f" Stand-in: torch._C._GLIBCXX_USE_CXX11_ABI={args.cxx11_abi}, "
                  "torch.cuda compiled and available, torch.xpu not.")
        about += (" Modules stubbed by the stand-in: "
                  + ", ".join(sorted(stubbed)) + ".")
    builder = {"about": about, "commands": commands, "variants": variants}
    options = {"about": ("get_cpp_torch_device_options(device_type, aot_mode, "
                         f"compile_only) as returned by torch "
                         f"{base['torch_version']}, run by "
                         f"conformance/profile_harness.py in {mode}. Paths "
                         "replaced by placeholders."),
               "results": results}
    os.makedirs(args.out, exist_ok=True)
    for name, data in (("builder_commands.json", builder),
                       ("device_options.json", options)):
        with open(os.path.join(args.out, name), "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
    print(f"wrote {args.out}/builder_commands.json and device_options.json "
          f"(torch {base['torch_version']})")
    if args.check:
        with open(os.path.join(args.check, "builder_commands.json")) as f:
            golden_b = json.load(f)["commands"]
        with open(os.path.join(args.check, "device_options.json")) as f:
            golden_d = json.load(f)["results"]
        bad = compare("builder_commands", commands, golden_b)
        bad += compare("device_options", results, golden_d)
        if bad:
            raise SystemExit(1)
        print("check: identical")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inductor-dir", help="the release's torch/_inductor")
    p.add_argument("--cpp-extension", help="the release's torch/utils/cpp_extension.py")
    p.add_argument("--version-py", help="the release's torch/version.py")
    p.add_argument("--installed", action="store_true",
                   help="run the torch python3 imports instead of a stand-in")
    p.add_argument("--simulate-cuda", metavar="VERSION",
                   help="with --installed: a CPU-only torch says it is a CUDA build")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set for the release's code (e.g. TORCHINDUCTOR_CPP_MARCH)")
    p.add_argument("--cxx", default="g++", help="the compiler name Inductor finds")
    p.add_argument("--cuda-version", default="13.0",
                   help="torch.version.cuda of the stand-in when no version.py")
    p.add_argument("--cxx11-abi", type=int, choices=(0, 1), default=1,
                   help="torch._C._GLIBCXX_USE_CXX11_ABI of the stand-in")
    p.add_argument("--out", help="directory for the two JSON files")
    p.add_argument("--check", help="golden directory to compare against")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--job", help=argparse.SUPPRESS)
    p.add_argument("--host", default="none", help=argparse.SUPPRESS)
    p.add_argument("--label", default="", help=argparse.SUPPRESS)
    p.add_argument("--tree", help=argparse.SUPPRESS)
    p.add_argument("--out-dir", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child_main(args)
    if not args.out or not (args.installed or args.inductor_dir):
        p.error("--out and one of --inductor-dir / --installed are required")
    parent_main(args)


if __name__ == "__main__":
    main()
