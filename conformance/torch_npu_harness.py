#!/usr/bin/env python3
"""Runs one torch_npu ref's own cpp_builder.py against a torch's Inductor.

The golden data of a torch_npu release must come from running that ref's
`torch_npu/_inductor/cpp_builder.py` (Ascend/pytorch), with its loader's
rules (read from the ref's `torch_npu/_inductor/__init__.py` and given here
as options): which patches the triton backend installs, and whether
`DISABLE_AOTI_PATCH=1` skips the device-options patch. This script imports
the ref's file as `torch_npu._inductor.cpp_builder` on top of a torch's
Inductor (a release's files in profile_harness.py's stand-in package, or the
installed torch), installs the patches each state calls for, and records
CppBuilder's command and `get_cpp_torch_device_options` for the matrix of
shared/reference/torch_npu-2.11 (192 cases):

  TAG|STATE|ascend=B|libtorch_npu_path=B|DEVICE|aot=B|co=B|isa=picked|none

STATE is `triton` (the default backend: its patches), `triton-noaoti` (the
same with DISABLE_AOTI_PATCH=1) or `upstream` (a backend that patches
nothing). torch_npu's two native helpers are stand-ins, as in the measured
data: PYTORCH_NPU_INSTALL_PATH is a scratch torch_npu directory and the
error-code suffix is "". No Ascend hardware or CANN is needed: the functions
only compute lists. Nothing of torch_npu or torch is copied into this
repository.

Usage:
  conformance/torch_npu_harness.py --npu-cpp-builder FILE --tag TAG
      [--opt-patch 0|1] [--aoti-patch-honoured 0|1]
      (--inductor-dir DIR [--cpp-extension FILE] [--version-py FILE] | --installed)
      --out FILE [--check GOLDEN --check-tag TAG]

--check compares the cases with those of GOLDEN whose tag is --check-tag
(the same cases, renamed) and exits 1 on any difference. Stdlib only.
"""
import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_harness as ph  # noqa: E402  (the stand-in torch and its runner)

STATES = ["triton", "triton-noaoti", "upstream"]
BOOLS = [True, False]
LIBTORCH_NPU_PATH = "/opt/libtorch_npu/lib"


def standin_torch_npu(npu_root):
    """torch_npu's native helpers the ref's cpp_builder.py imports."""
    def module(name, **attrs):
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        sys.modules[name] = mod
        return mod

    module("torch_npu", __path__=[npu_root],
           __file__=os.path.join(npu_root, "__init__.py"))
    module("torch_npu.utils", __path__=[])
    module("torch_npu.utils.cpp_extension", PYTORCH_NPU_INSTALL_PATH=npu_root)
    module("torch_npu.utils._error_code", ErrCode=ph._any("ErrCode"),
           pta_error=lambda *a, **k: "")
    module("torch_npu._inductor", __path__=[])


def load_ref(path):
    spec = importlib.util.spec_from_file_location(
        "torch_npu._inductor.cpp_builder", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def error_text(e):
    return f"{type(e).__name__}: {e}"


def child_main(args):
    if args.installed:
        ph.patch_installed(ph.HOSTS["amx"], None)
    else:
        ph.install_standin(args.tree, ph.HOSTS["amx"], args.cuda_version,
                           args.cxx11_abi)
    runner = ph.Runner(args.out_dir)
    import torch._inductor.utils as inductor_utils

    if not args.installed:
        # the stand-in holds no utils.py: the answer of a Linux host
        inductor_utils._IS_WINDOWS = False
    from torch._inductor import cpp_builder

    standin_torch_npu(args.npu_root)
    ref = load_ref(args.npu_cpp_builder)
    # the backend loader's patches for this state (the ref's __init__.py)
    if args.state != "upstream":
        if args.opt_patch:
            ref.patch_get_optimization_cflags()
        skipped = (args.state == "triton-noaoti" and args.aoti_patch_honoured)
        if not skipped:
            ref.patch_get_cpp_torch_device_options()
    picked = runner.isa.pick_vec_isa()
    cases = {}
    for device in ("npu", "cpu"):
        for aot in BOOLS[::-1]:
            for co in BOOLS[::-1]:
                for isa in ("picked", "none"):
                    key = (f"{args.prefix}|{device}|aot={aot}|co={co}|isa={isa}")
                    try:
                        options = cpp_builder.get_cpp_torch_device_options(
                            device, aot_mode=aot, compile_only=co)
                        kwargs = dict(device_type=device, aot_mode=aot,
                                      compile_only=co)
                        if isa == "picked":
                            kwargs["vec_isa"] = picked
                        argv = runner.command(
                            cpp_builder.CppTorchDeviceOptions(**kwargs))["argv"]
                        cases[key] = {"argv": argv,
                                      "options": [list(v) for v in options]}
                    except Exception as e:  # the ref's own refusal is data too
                        cases[key] = {"error": error_text(e)}
    result = {"cases": cases, "isa_picked": str(picked),
              "torch_version": str(torch_version()),
              "torch_root": os.path.dirname(sys.modules["torch"].__file__),
              "stubbed_modules": sorted(set(ph.STUBBED))}
    with open(args.result, "w") as f:
        json.dump(result, f)


def torch_version():
    return sys.modules["torch"].__version__


def run_child(args, env, state, ascend, ltnp, dirs):
    prefix = (f"{args.tag}|{state}|ascend={ascend}|libtorch_npu_path={ltnp}")
    child_env = dict(env)
    if ascend:
        child_env["ASCEND_HOME_PATH"] = dirs["ascend"]
    if ltnp:
        child_env["LIBTORCH_NPU_PATH"] = LIBTORCH_NPU_PATH
    if state == "triton-noaoti":
        child_env["DISABLE_AOTI_PATCH"] = "1"
    result = os.path.join(dirs["root"], "result.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--child",
           "--prefix", prefix, "--state", state,
           "--npu-cpp-builder", os.path.abspath(args.npu_cpp_builder),
           "--npu-root", dirs["npu"], "--out-dir", dirs["out"],
           "--opt-patch", str(args.opt_patch),
           "--aoti-patch-honoured", str(args.aoti_patch_honoured),
           "--cuda-version", args.cuda_version, "--cxx11-abi", str(args.cxx11_abi),
           "--result", result]
    cmd += ["--installed"] if args.installed else ["--tree", dirs["tree"]]
    proc = subprocess.run(cmd, env=child_env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"torch_npu harness: the {prefix} run failed")
    with open(result) as f:
        return json.load(f)


def parent_main(args):
    with tempfile.TemporaryDirectory(prefix="kbuild-torch-npu-") as root:
        root = os.path.realpath(root)
        dirs = {"root": root, "out": os.path.join(root, "out"),
                "npu": os.path.join(root, "site-packages", "torch_npu"),
                "ascend": os.path.join(root, "ascend", "latest")}
        for d in ("out", "npu", "ascend"):
            os.makedirs(dirs[d])
        dirs["tree"] = "" if args.installed else ph.make_tree(root, args)
        env = dict(os.environ)
        for var in ("CXX", "TORCHINDUCTOR_DEBUG_COMPILE", "ATEN_CPU_CAPABILITY",
                    "TORCHINDUCTOR_VEC_ISA_OK", "ASCEND_HOME_PATH",
                    "LIBTORCH_NPU_PATH", "DISABLE_AOTI_PATCH",
                    "TORCHINDUCTOR_NPU_BACKEND", "TORCHINDUCTOR_CPP_MARCH",
                    "AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION"):
            env.pop(var, None)
        env.update({"CXX": args.cxx, "PYTHONDONTWRITEBYTECODE": "1",
                    "TORCHINDUCTOR_CACHE_DIR": os.path.join(root, "cache")})
        env.update(dict(item.split("=", 1) for item in args.env))
        cases, first = {}, None
        stubbed = set()
        for state in STATES:
            for ascend in BOOLS:
                for ltnp in BOOLS[::-1]:
                    r = run_child(args, env, state, ascend, ltnp, dirs)
                    first = first or r
                    cases.update(r["cases"])
                    stubbed |= set(r["stubbed_modules"])
        pairs = [(dirs["npu"], "${TORCH_NPU_ROOT}"),
                 (dirs["ascend"], "${ASCEND_HOME_PATH}"),
                 (os.path.realpath(first["torch_root"]), "${TORCH_ROOT}"),
                 (first["torch_root"], "${TORCH_ROOT}"),
                 (sysconfig.get_path("include"), "${PYTHON_INCLUDE}"),
                 (sysconfig.get_config_var("LIBDIR"), "${PYTHON_LIBDIR}"),
                 (dirs["out"], "${OUT_DIR}")]
        pairs = sorted(set(pairs), key=lambda p: -len(p[0]))
        cases = ph.substitute(cases, pairs, [args.cxx])

    mode = ("the installed torch" if args.installed
            else "a stand-in torch package holding that release's files "
                 "(conformance/profile_harness.py)")
    meta = {
        "tag": args.tag, "torch": first["torch_version"],
        "isa_picked": first["isa_picked"], "cxx": "${CXX}",
        "loader_rules": {"opt_patch": bool(args.opt_patch),
                         "disable_aoti_patch_honoured": bool(args.aoti_patch_honoured)},
        "about": (
            f"torch_npu's own torch_npu/_inductor/cpp_builder.py of {args.tag} "
            f"(Ascend/pytorch), executed by conformance/torch_npu_harness.py on "
            f"torch {first['torch_version']}'s Inductor, run in {mode}, with "
            "stand-ins for PYTORCH_NPU_INSTALL_PATH and pta_error; the loader's "
            "rules (read from the ref's __init__.py) as in loader_rules. argv: "
            "CppBuilder(name='kernel', sources='${OUT_DIR}/kernel.cpp', "
            "BuildOption=CppTorchDeviceOptions(device_type, aot_mode, "
            "compile_only[, vec_isa=pick_vec_isa() on the simulated avx512+vnni+"
            "amx host]), output_dir='${OUT_DIR}').get_command_line(), split; "
            "options: get_cpp_torch_device_options(device, aot_mode, "
            f"compile_only). CXX={args.cxx}; LIBTORCH_NPU_PATH={LIBTORCH_NPU_PATH} "
            "where libtorch_npu_path=True."),
    }
    if args.env:
        meta["env"] = args.env
    if not args.installed:
        meta["stubbed_modules"] = sorted(stubbed)
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(cases)} cases (torch {first['torch_version']})")
    if args.check:
        with open(args.check) as f:
            golden = json.load(f)["cases"]
        golden = {args.tag + k[len(args.check_tag):]: v for k, v in golden.items()
                  if k.startswith(args.check_tag + "|")}
        bad = ph.compare("cases", cases, golden)
        if bad:
            raise SystemExit(1)
        print("check: identical")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--npu-cpp-builder", help="the ref's torch_npu/_inductor/cpp_builder.py")
    p.add_argument("--tag", help="the ref's name, the cases' first field")
    p.add_argument("--opt-patch", type=int, choices=(0, 1), default=1,
                   help="the triton loader installs patch_get_optimization_cflags")
    p.add_argument("--aoti-patch-honoured", type=int, choices=(0, 1), default=1,
                   help="DISABLE_AOTI_PATCH=1 skips patch_get_cpp_torch_device_options")
    p.add_argument("--inductor-dir", help="the torch release's torch/_inductor")
    p.add_argument("--cpp-extension", help="the release's torch/utils/cpp_extension.py")
    p.add_argument("--version-py", help="the release's torch/version.py")
    p.add_argument("--installed", action="store_true",
                   help="run on the torch python3 imports instead of a stand-in")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set for the run (e.g. TORCHINDUCTOR_CPP_MARCH)")
    p.add_argument("--cxx", default="g++", help="the compiler name Inductor finds")
    p.add_argument("--cuda-version", default="13.0")
    p.add_argument("--cxx11-abi", type=int, choices=(0, 1), default=1)
    p.add_argument("--out", help="the JSON file to write")
    p.add_argument("--check", help="a golden file to compare with")
    p.add_argument("--check-tag", help="the tag of the golden file's cases")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for hidden in ("--prefix", "--state", "--npu-root", "--out-dir", "--tree",
                   "--result"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child_main(args)
    if not (args.out and args.tag and args.npu_cpp_builder
            and (args.installed or args.inductor_dir)):
        p.error("--npu-cpp-builder, --tag, --out and one of --inductor-dir / "
                "--installed are required")
    if args.check and not args.check_tag:
        p.error("--check needs --check-tag")
    parent_main(args)


if __name__ == "__main__":
    main()
