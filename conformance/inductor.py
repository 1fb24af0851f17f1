#!/usr/bin/env python3
"""Checks kbuild against the real PyTorch Inductor on this machine.

Needs python3 with torch (2.11) and, for the CUDA parts, a GPU. Three parts:

1. builder matrix: for cpu, cuda, mps x aot x compile-only x ISA (none, the
   one Inductor picks), kbuild's dry-run argv vs shlex.split of
   CppBuilder(...).get_command_line(), and `kbuild options --json` vs
   get_cpp_torch_device_options(...);
2. torch.compile / AOTInductor with kbuild as the compiler: every command
   Inductor runs is intercepted, the kbuild invocation for the same inputs is
   derived, its dry-run argv is compared with Inductor's, and kbuild then
   really builds the output Inductor loads; results are checked against eager;
3. a summary table, and everything as JSON (--json-out).

Usage: conformance/inductor.py --kbuild PATH [--json-out FILE] [--skip-cuda]
"""
import argparse
import faulthandler
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import first_diff, kbuild_args_for, run_kbuild  # noqa: E402

# A fresh Inductor cache, so every compile really happens (set before torch).
CACHE = tempfile.mkdtemp(prefix="kbuild-conformance-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = CACHE
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")

JSON_OUT = None
KBUILD_PATH = None
SELECTED = []
RESULTS = {"builder": [], "options": [], "intercepted": [], "runs": [], "errors": []}


def builder_matrix(kbuild, out_dir):
    from torch._inductor import cpp_builder
    from torch._inductor.cpu_vec_isa import invalid_vec_isa, pick_vec_isa

    picked = pick_vec_isa()
    # A dry run checks its source, as the build would.
    with open(f"{out_dir}/kernel.cpp", "w") as f:
        f.write('extern "C" int f() { return 1; }\n')
    for device in ("cpu", "cuda", "mps"):
        for aot in (False, True):
            for co in (False, True):
                for isa_name, isa in (("none", invalid_vec_isa), ("picked", picked)):
                    row = {"device": device, "aot": aot, "compile_only": co, "isa": isa_name}
                    try:
                        opts = cpp_builder.CppTorchDeviceOptions(
                            vec_isa=isa, device_type=device, aot_mode=aot, compile_only=co)
                        b = cpp_builder.CppBuilder(name="kernel", sources=f"{out_dir}/kernel.cpp",
                                                   BuildOption=opts, output_dir=out_dir)
                        expected = shlex.split(b.get_command_line())
                        args = ["--device", device, "--dry-run", "--isa",
                                "none" if isa_name == "none" else "auto",
                                f"{out_dir}/kernel.cpp", "-o", b.get_target_file_path()]
                        if aot:
                            args.append("--aot")
                        if co:
                            args.append("--compile-only")
                        p, secs = run_kbuild(kbuild, args)
                        got = shlex.split(p.stdout) if p.returncode == 0 else []
                        row.update(match=got == expected, exit=p.returncode, stderr=p.stderr[-2000:],
                                   seconds=secs)
                        if got != expected:
                            row["diff"] = first_diff(expected, got)
                            row["inductor"] = expected
                            row["kbuild"] = got
                    except Exception as e:  # noqa: BLE001
                        row.update(match=False, error=repr(e))
                    RESULTS["builder"].append(row)
                if True:
                    row = {"device": device, "aot": aot, "compile_only": co}
                    try:
                        hook = cpp_builder.get_cpp_torch_device_options(device, aot, co)
                        keys = ["definitions", "include_dirs", "cflags", "ldflags",
                                "libraries_dirs", "libraries", "passthrough_args"]
                        expected = dict(zip(keys, [list(x) for x in hook]))
                        args = ["options", "--device", device, "--json"]
                        if aot:
                            args.append("--aot")
                        if co:
                            args.append("--compile-only")
                        p, _ = run_kbuild(kbuild, args)
                        got = json.loads(p.stdout) if p.returncode == 0 else {}
                        row.update(match=got == expected, stderr=p.stderr[-2000:])
                        if got != expected:
                            row.update(inductor=expected, kbuild=got)
                    except Exception as e:  # noqa: BLE001
                        row.update(match=False, error=repr(e))
                    RESULTS["options"].append(row)


def install_interceptor(kbuild):
    """Makes Inductor build every C++ file through kbuild."""
    from torch._inductor import cpp_builder

    original = cpp_builder.run_compile_cmd

    def through_kbuild(cmd_line, cwd):
        argv = shlex.split(cmd_line)
        record = {"inductor": argv, "cwd": cwd}
        try:
            args = kbuild_args_for(argv)
            record["kbuild_args"] = args
            dry, _ = run_kbuild(kbuild, args + ["--dry-run"], cwd=cwd)
            got = shlex.split(dry.stdout) if dry.returncode == 0 else []
            record["match"] = got == argv
            if got != argv:
                record["kbuild"] = got
                record["diff"] = first_diff(argv, got)
                record["dry_stderr"] = dry.stderr[-2000:]
            # kbuild builds the file Inductor will load next.
            real, secs = run_kbuild(kbuild, args, cwd=cwd)
            record["kbuild_seconds"] = secs
            record["exit"] = real.returncode
            if real.returncode != 0:
                record["stderr"] = real.stderr[-4000:]
                RESULTS["intercepted"].append(record)
                original(cmd_line, cwd)  # keep the run going; the failure is recorded
                return
        except Exception as e:  # noqa: BLE001
            record["error"] = repr(e)
            RESULTS["intercepted"].append(record)
            original(cmd_line, cwd)
            return
        RESULTS["intercepted"].append(record)
        save(JSON_OUT)  # a later crash must not lose the records

    cpp_builder.run_compile_cmd = through_kbuild


SCENARIOS = ["cpu pointwise", "cpu reduction", "cpu softmax", "cpu cpp_wrapper", "aoti cpu",
             "cuda cpp_wrapper", "aoti cuda", "bridge cuda"]


def run_scenarios(kbuild, skip_cuda, intercept=True):
    """Each scenario in a child process, so a crash is recorded, not fatal.
    Without interception, only the scenarios that failed through kbuild are
    rerun: is the failure kbuild's or Inductor's own?"""
    failed = {r["name"] for r in RESULTS["runs"] if r.get("intercepted") and not r.get("ok")}
    for name in SELECTED:
        if not intercept and name not in failed:
            continue
        if skip_cuda and "cuda" in name:
            continue
        out = os.path.join(CACHE, name.replace(" ", "_") + (".json" if intercept else ".plain.json"))
        cmd = [sys.executable, os.path.abspath(__file__), "--kbuild", kbuild, "--scenario", name,
               "--json-out", out]
        if not intercept:
            cmd.append("--no-intercept")
        start = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        secs = time.perf_counter() - start
        if p.returncode == 0 and os.path.exists(out):
            with open(out) as f:
                child = json.load(f)
            RESULTS["intercepted"] += child["intercepted"]
            for row in child["runs"]:
                row["intercepted"] = intercept
                RESULTS["runs"].append(row)
        else:
            if os.path.exists(out):  # the records saved before the crash
                with open(out) as f:
                    RESULTS["intercepted"] += json.load(f)["intercepted"]
            RESULTS["runs"].append({"name": name, "ok": False, "intercepted": intercept, "seconds": secs,
                                    "error": f"child exited {p.returncode}: " + p.stderr[-1500:]})
        save(JSON_OUT)  # a time limit on the whole run must not lose finished scenarios
        r = RESULTS["runs"][-1]
        print(f"run {name} (kbuild={'yes' if intercept else 'no'}): {r.get('ok')} "
              f"{r.get('commands', '')} {r.get('provider_calls', '')} {r.get('agrees_with_inductor', '')} "
              f"{r.get('error', '')[-300:]}", flush=True)


def bridge_run(xc, yc):
    """kbuild as Inductor's options provider for cuda, through the bridge."""
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "python"))
    import kbuild_inductor
    from torch._inductor import cpp_builder

    start = time.perf_counter()
    row = {"name": "bridge cuda"}
    try:
        callback = kbuild_inductor.register("cuda", kbuild=KBUILD_PATH)
        asked = []
        original_call = callback.__class__.__call__

        def counting(self, *a, **k):
            asked.append(a)
            return original_call(self, *a, **k)

        callback.__class__.__call__ = counting
        # What Inductor's own hook says, for the record: the bridge must agree.
        hook = getattr(cpp_builder.get_cpp_torch_device_options, "__wrapped__", None)
        if hook is not None:
            row["agrees_with_inductor"] = [list(x) for x in hook("cuda", False, False)] == \
                [list(x) for x in callback("cuda", False, False)]
        fn = lambda a, b: (a * b).cos().sum(dim=-1)  # noqa: E731
        got = torch.compile(fn, options={"cpp_wrapper": True})(xc, yc)
        torch.testing.assert_close(got, fn(xc, yc))
        row.update(ok=True, provider_calls=len(asked), registry=hasattr(cpp_builder, "register_cpp_device_options"))
    except Exception as e:  # noqa: BLE001
        row.update(ok=False, error=repr(e)[-2000:])
    row["seconds"] = time.perf_counter() - start
    RESULTS["runs"].append(row)


def compile_runs(only):
    import torch
    import torch._inductor.config as inductor_config

    # Compile in this process (not in worker processes) so the interceptor sees it.
    inductor_config.compile_threads = 1

    def check(name, fn, *inputs, **compile_kwargs):
        if name != only:
            return
        start = time.perf_counter()
        row = {"name": name}
        try:
            before = len(RESULTS["intercepted"])
            compiled = torch.compile(fn, **compile_kwargs)
            got = compiled(*inputs)
            torch.testing.assert_close(got, fn(*inputs))
            row.update(ok=True, commands=len(RESULTS["intercepted"]) - before)
        except Exception as e:  # noqa: BLE001
            row.update(ok=False, error=repr(e)[-2000:])
        row["seconds"] = time.perf_counter() - start
        RESULTS["runs"].append(row)

    x = torch.randn(64, 129)
    y = torch.randn(64, 129)
    check("cpu pointwise", lambda a, b: (a * 2 + b).sin(), x, y)
    check("cpu reduction", lambda a: a.sum(dim=-1) + a.amax(dim=-1), x)
    check("cpu softmax", lambda a: torch.softmax(a, dim=-1), x)
    check("cpu cpp_wrapper", lambda a, b: torch.relu(a @ b.T) + 1, x, y, options={"cpp_wrapper": True})

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(129, 32)

        def forward(self, a):
            return torch.softmax(self.lin(a).relu(), dim=-1)

    def aot(name, device):
        if name != only:
            return
        start = time.perf_counter()
        row = {"name": name}
        try:
            before = len(RESULTS["intercepted"])
            model = Model().to(device).eval()
            inp = torch.randn(8, 129, device=device)
            ep = torch.export.export(model, (inp,))
            path = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(CACHE, name.replace(" ", "_") + ".pt2"))
            loaded = torch._inductor.aoti_load_package(path)
            with torch.no_grad():
                torch.testing.assert_close(loaded(inp), model(inp))
            row.update(ok=True, commands=len(RESULTS["intercepted"]) - before)
        except Exception as e:  # noqa: BLE001
            row.update(ok=False, error=repr(e)[-2000:])
        row["seconds"] = time.perf_counter() - start
        RESULTS["runs"].append(row)

    aot("aoti cpu", "cpu")
    if only == "bridge cuda":
        bridge_run(x.cuda(), y.cuda())
    if "cuda" in only:
        xc, yc = x.cuda(), y.cuda()
        check("cuda cpp_wrapper", lambda a, b: (a * b).cos().sum(dim=-1), xc, yc, options={"cpp_wrapper": True})
        aot("aoti cuda", "cuda")


def report():
    b = RESULTS["builder"]
    o = RESULTS["options"]
    i = RESULTS["intercepted"]
    print(f"builder matrix: {sum(r.get('match', False) for r in b)}/{len(b)} argv identical")
    for r in b:
        if not r.get("match"):
            print("  MISMATCH", {k: r.get(k) for k in ("device", "aot", "compile_only", "isa", "diff", "error", "stderr")})
    print(f"device options: {sum(r.get('match', False) for r in o)}/{len(o)} identical")
    for r in o:
        if not r.get("match"):
            print("  MISMATCH", {k: r.get(k) for k in ("device", "aot", "compile_only", "inductor", "kbuild", "error")})
    ok = sum(r.get("match", False) for r in i)
    built = sum(r.get("exit") == 0 for r in i)
    print(f"intercepted Inductor commands: {ok}/{len(i)} argv identical, {built}/{len(i)} built by kbuild")
    for r in i:
        if not r.get("match") or r.get("exit") != 0:
            print("  ", {k: r.get(k) for k in ("diff", "error", "stderr", "dry_stderr")}, shlex.join(r["inductor"])[:400])
    for r in RESULTS["runs"]:
        print(f"run {r['name']}: {'ok' if r.get('ok') else 'FAILED'} ({r.get('commands', 0)} commands, "
              f"{r['seconds']:.1f}s) {r.get('error', '')}")


def save(path):
    if path:
        with open(path, "w") as f:
            json.dump(RESULTS, f, indent=1)


def main():
    faulthandler.enable()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kbuild", required=True)
    ap.add_argument("--json-out")
    ap.add_argument("--skip-cuda", action="store_true")
    ap.add_argument("--cxx", help="the C++ compiler for Inductor and kbuild alike (sets CXX, "
                    "which both read; e.g. clang++)")
    ap.add_argument("--scenario", help=argparse.SUPPRESS)
    ap.add_argument("--no-intercept", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help="comma-separated subset of: " + ", ".join(SCENARIOS))
    args = ap.parse_args()
    if args.cxx:
        os.environ["CXX"] = args.cxx  # before torch is imported; scenarios inherit it
    kbuild = os.path.abspath(args.kbuild)
    global JSON_OUT, SELECTED, KBUILD_PATH
    JSON_OUT = args.json_out
    KBUILD_PATH = kbuild
    SELECTED = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if args.scenario:
        if not args.no_intercept:
            install_interceptor(kbuild)
        compile_runs(args.scenario)
        save(args.json_out)
        return
    import torch

    RESULTS["torch"] = torch.__version__
    RESULTS["cuda_home_env"] = os.environ.get("CUDA_HOME")
    out_dir = tempfile.mkdtemp(prefix="kbuild-matrix-")
    for name, part in (("builder matrix", lambda: builder_matrix(kbuild, out_dir)),
                       ("compile runs through kbuild", lambda: run_scenarios(kbuild, args.skip_cuda)),
                       ("compile runs, Inductor alone (for crashes)",
                        lambda: run_scenarios(kbuild, args.skip_cuda, intercept=False))):
        print(f"== {name}", flush=True)
        try:
            part()
        except Exception:  # noqa: BLE001
            RESULTS["errors"].append(traceback.format_exc())
        save(args.json_out)
    report()
    for e in RESULTS["errors"]:
        print("ERROR", e)
    save(args.json_out)


if __name__ == "__main__":
    main()
