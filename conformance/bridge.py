#!/usr/bin/env python3
"""The PyTorch bridge (kbuild_inductor) against the real torch on this machine.

Needs python3 with torch (2.11) and the bridge importable (the installed
wheel, or PYTHONPATH=SRC/src/python), and a kbuild binary. A GPU is used
when there is one (device cuda), else cpu. Prints, and writes as JSON
(--json-out):

1. which torch API shape the bridge chose (device_interface, registry or
   wrapper) and the torch version;
2. options: for the device x aot x compile-only, kbuild's answer through the
   hook == Inductor's own answer before registering (N/N equal);
3. torch_npu order: a stand-in patch of get_cpp_torch_device_options
   installed after registering (as torch_npu's backend loader does) does not
   take the device away from kbuild, on the real cpp_builder module;
4. compile: torch.compile(fn, options={"cpp_wrapper": True}) with kbuild as
   the options provider, in a fresh Inductor cache: result == eager, how
   often the callback was asked, and its C++ build seconds;
5. routed: the same model with register(..., route_compiles=True) in two
   child processes, each with an emptied Inductor cache dir and TMPDIR (which
   holds Inductor's precompiled headers; the same paths both times: Inductor
   writes them into its commands) and one kbuild cache, cold
   then warm: the C++ build seconds of each (CppBuilder.build, with
   compile_threads=1), their ratio (>= 10 passes) and result == eager.

Usage: conformance/bridge.py --kbuild PATH/kbuild [--json-out FILE]
(with the kbuild wheel installed, --kbuild may be left out.)
"""
import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

# A fresh Inductor cache, so every compile really happens (set before torch).
# A routed child keeps the one its parent gave it: the cold and the warm run
# must compile in the same path, which Inductor writes into its commands.
if "--routed-child" not in sys.argv[1:]:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="kbuild-bridge-")
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")


def check_options(torch, cpp_builder, device_interface, kbuild_inductor, device, kbuild):
    own = {}
    for aot, co in itertools.product((False, True), repeat=2):
        answer = cpp_builder.get_cpp_torch_device_options(device, aot, co)
        own[(aot, co)] = [list(x) for x in answer]
    callback = kbuild_inductor.register(device, kbuild=kbuild, cpp_builder=cpp_builder,
                                        device_interface=device_interface,
                                        extra_args=("--python", sys.executable))
    rows = []
    for (aot, co), expected in own.items():
        got = [list(x) for x in cpp_builder.get_cpp_torch_device_options(device, aot, co)]
        rows.append({"aot": aot, "compile_only": co, "equal": got == expected,
                     "inductor": expected, "kbuild": got})
    return callback, rows


def check_torch_npu_order(cpp_builder, device):
    """A later patch of the hook (torch_npu's) must not take `device` away."""
    kept = cpp_builder.get_cpp_torch_device_options(device, False, False)
    original = cpp_builder.get_cpp_torch_device_options

    def torch_npu_patch(device_type, aot_mode=False, compile_only=False):
        return (["TORCH_NPU_STANDIN"], [], [], [], [], [], [])

    torch_npu_patch.__module__ = "torch_npu._inductor.cpp_builder"
    cpp_builder.get_cpp_torch_device_options = torch_npu_patch
    try:
        after = cpp_builder.get_cpp_torch_device_options(device, False, False)
        other = cpp_builder.get_cpp_torch_device_options("mps", False, False)
        return {"kbuild_kept_the_device": list(after) == list(kept),
                "other_device_got_the_patch": list(other[0]) == ["TORCH_NPU_STANDIN"]}
    finally:
        cpp_builder.__dict__["get_cpp_torch_device_options"] = original


def check_compile(torch, cpp_builder, callback, device):
    calls = {"n": 0}
    real_call = type(callback).__call__

    def counting(self, *a, **k):
        calls["n"] += 1
        return real_call(self, *a, **k)

    type(callback).__call__ = counting
    build_seconds = []
    real_build = cpp_builder.CppBuilder.build

    def timed_build(self, *a, **k):
        start = time.perf_counter()
        try:
            return real_build(self, *a, **k)
        finally:
            build_seconds.append(time.perf_counter() - start)

    cpp_builder.CppBuilder.build = timed_build
    try:
        x = torch.randn(64, 129, device=device)
        y = torch.randn(64, 129, device=device)

        def fn(a, b):
            return (a * b).cos().sum(dim=-1)

        expected = fn(x, y)
        got = torch.compile(fn, options={"cpp_wrapper": True})(x, y)
        return {"equal_to_eager": bool(torch.allclose(got, expected, atol=1e-5, rtol=1e-5)),
                "callback_calls": calls["n"], "cpp_builds": len(build_seconds),
                "cpp_build_seconds": round(sum(build_seconds), 3)}
    finally:
        type(callback).__call__ = real_call
        cpp_builder.CppBuilder.build = real_build


def routed_child(kbuild):
    """One routed compile (a child process): prints its figures as JSON."""
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor import cpp_builder

    import kbuild_inductor

    inductor_config.compile_threads = 1  # every C++ build in this process, timed
    device = "cuda" if torch.cuda.is_available() else "cpu"
    callback = kbuild_inductor.register(device, kbuild=kbuild, route_compiles=True,
                                        extra_args=("--python", sys.executable))
    figures = check_compile(torch, cpp_builder, callback, device)
    figures["cxx"] = str(inductor_config.cpp.cxx)
    print("ROUTED " + json.dumps(figures), flush=True)


def check_routed(kbuild):
    inductor_cache = os.path.join(tempfile.gettempdir(), "kbuild-bridge-routed-inductor")
    # Inductor keeps its precompiled headers under the temporary directory
    # (TMPDIR/torchinductor_USER), not in its cache dir: emptied too, so the
    # warm run rebuilds nothing from an earlier run but through kbuild.
    inductor_tmp = os.path.join(tempfile.gettempdir(), "kbuild-bridge-routed-tmp")
    kbuild_cache = tempfile.mkdtemp(prefix="kbuild-bridge-routed-kbuild-")
    runs = []
    for _ in ("cold", "warm"):
        shutil.rmtree(inductor_cache, ignore_errors=True)
        shutil.rmtree(inductor_tmp, ignore_errors=True)
        os.makedirs(inductor_tmp, mode=0o700)
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=inductor_cache, TMPDIR=inductor_tmp,
                   KBUILD_CACHE_DIR=kbuild_cache,
                   TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0")
        argv = [sys.executable, os.path.abspath(__file__), "--routed-child"]
        if kbuild:
            argv += ["--kbuild", kbuild]
        child = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800,
                               check=False)
        lines = [l for l in child.stdout.splitlines() if l.startswith("ROUTED ")]
        if child.returncode != 0 or not lines:
            raise RuntimeError(f"routed child failed ({child.returncode}):\n{child.stdout[-3000:]}"
                               f"\n{child.stderr[-3000:]}")
        figures = json.loads(lines[-1][len("ROUTED "):])
        import kbuild_inductor  # noqa: PLC0415 - after the children: they import it themselves
        stats = subprocess.run([kbuild_inductor.find_kbuild(kbuild), "cache", "stats"], env=env,
                               capture_output=True, text=True, check=False)
        figures["kbuild_cache_stats"] = stats.stdout.strip()  # counted over both runs
        runs.append(figures)
    cold, warm = runs
    ratio = cold["cpp_build_seconds"] / max(warm["cpp_build_seconds"], 1e-6)
    return {"cold": cold, "warm": warm, "speedup": round(ratio, 1),
            "passed": ratio >= 10 and cold["equal_to_eager"] and warm["equal_to_eager"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kbuild", help="the kbuild binary (default: the wheel's, else PATH's)")
    parser.add_argument("--json-out")
    parser.add_argument("--routed-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--skip-routed", action="store_true")
    args = parser.parse_args()
    if args.routed_child:
        routed_child(args.kbuild)
        return 0
    result = {"errors": []}
    try:
        import torch
        from torch._inductor import cpp_builder
        try:
            from torch._dynamo import device_interface
        except ImportError:
            device_interface = None
        import kbuild_inductor
        from kbuild_inductor import _shapes

        device = "cuda" if torch.cuda.is_available() else "cpu"
        result.update(torch=torch.__version__, device=device,
                      bridge=os.path.dirname(kbuild_inductor.__file__),
                      kbuild=kbuild_inductor.find_kbuild(args.kbuild),
                      shape=_shapes.shape_of(cpp_builder, device_interface))
        callback, rows = check_options(torch, cpp_builder, device_interface, kbuild_inductor,
                                       device, args.kbuild)
        result["options"] = rows
        result["torch_npu_order"] = check_torch_npu_order(cpp_builder, device)
        result["compile"] = check_compile(torch, cpp_builder, callback, device)
    except Exception:  # noqa: BLE001 - a report, not a library
        result["errors"].append(traceback.format_exc())
    if not args.skip_routed:
        try:
            result["routed"] = check_routed(args.kbuild)
        except Exception:  # noqa: BLE001
            result["errors"].append(traceback.format_exc())
    print(f"torch {result.get('torch')}, device {result.get('device')}, "
          f"API shape: {result.get('shape')}")
    print(f"bridge {result.get('bridge')}, kbuild {result.get('kbuild')}")
    rows = result.get("options", [])
    print(f"options equal to Inductor's own: {sum(r['equal'] for r in rows)}/{len(rows)}")
    for r in rows:
        if not r["equal"]:
            print(f"  aot={r['aot']} compile_only={r['compile_only']}: inductor {r['inductor']} "
                  f"kbuild {r['kbuild']}")
    print(f"torch_npu order: {result.get('torch_npu_order')}")
    print(f"cpp_wrapper compile: {result.get('compile')}")
    routed = result.get("routed")
    if routed:
        print(f"routed through kbuild cc: cold {routed['cold']['cpp_build_seconds']} s, warm "
              f"{routed['warm']['cpp_build_seconds']} s of C++ builds, "
              f"{routed['speedup']}x; kbuild "
              f"cache after both: {routed['warm']['kbuild_cache_stats']!r}; equal to eager: "
              f"{routed['cold']['equal_to_eager']}/{routed['warm']['equal_to_eager']}")
    for error in result["errors"]:
        print(error, file=sys.stderr)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(result, f, indent=2)
    ok = (not result["errors"] and rows and all(r["equal"] for r in rows)
          and all(result["torch_npu_order"].values()) and result["compile"]["equal_to_eager"]
          and (args.skip_routed or result["routed"]["passed"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
