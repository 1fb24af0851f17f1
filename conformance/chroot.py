#!/usr/bin/env python3
"""Checks kbuild's Inductor profile end to end in a Debian chroot (sid: torch 2.14.1).

Run as root on the host. It copies a static kbuild, kbuild-load-check and
configs/ into a scratch directory of the chroot, mounts /proc and a fresh
tmpfs on /dev/shm there (in a private mount namespace, unmounted again
before it exits), and runs itself inside the chroot, where:

  (a) real torch.compile runs (cpu: pointwise, reduction, a small MLP with
      softmax, cpp_wrapper, AOTInductor) record every command Inductor runs
      (torch._inductor.cpp_builder.run_compile_cmd: the exact argv and cwd);
  (b) for each command, `kbuild --dry-run` with the matching flags (the mode,
      --isa auto for kernels, the probed ISA for Inductor's ISA probes; the
      torch root and its profile found by kbuild itself) is compared with
      Inductor's argv token by token; then kbuild really builds the output
      instead of Inductor, the .so is loaded (ctypes) and Inductor goes on
      with kbuild's output; each model's result must equal eager;
  (c) a summary table; exit 1 on any mismatch, 2 when it could not run.

Debian removes Inductor's -march=native (bugs.debian.org/1102472); kbuild
reproduces upstream. The scenarios run with TORCHINDUCTOR_CPP_MARCH=native,
which puts upstream's flag back in its place, and are compared exactly; the
"debian" scenario runs Inductor as Debian ships it and compares with
kbuild's -march=native removed.

Usage (from the repository root, kbuild built static, see docs/conformance.md):
  conformance/chroot.py [--chroot /work/chroots/sid] [--kbuild build/src/kbuild]
      [--json-out FILE] [--scenarios pointwise,reduction,...] [--keep]
"""
import argparse
import ctypes
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

SCENARIOS = ["pointwise", "reduction", "mlp", "cpp_wrapper", "aoti", "debian"]
NAMESPACE_MARK = "KBUILD_CONFORMANCE_CHROOT_NS"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import first_diff, isa_spec, kbuild_args_for, run_kbuild, sources_of  # noqa: E402


# --------------------------------------------------------------------------
# host side: namespace, mounts, staging


def run_checked(argv):
    subprocess.run(argv, check=True)


def mount_for_torch(root, mounted):
    """/proc and a private /dev/shm, each added to `mounted` once mounted."""
    run_checked(["mount", "-t", "proc", "proc", os.path.join(root, "proc")])
    mounted.append(os.path.join(root, "proc"))
    shm = os.path.join(root, "dev", "shm")
    os.makedirs(shm, exist_ok=True)
    run_checked(["mount", "-t", "tmpfs", "-o", "size=512m,mode=1777", "tmpfs", shm])
    mounted.append(shm)


def unmount_all(mounted):
    for point in reversed(mounted):
        if subprocess.run(["umount", point]).returncode != 0:
            subprocess.run(["umount", "-l", point])


def stage(work, kbuild):
    """Fills the scratch directory `work` (in the chroot's /tmp) with kbuild,
    its load checker, configs/, this script and common.py."""
    os.chmod(work, 0o755)
    shutil.copy2(kbuild, os.path.join(work, "kbuild"))
    checker = os.path.join(os.path.dirname(kbuild), "kbuild-load-check")
    if os.path.exists(checker):
        shutil.copy2(checker, os.path.join(work, "kbuild-load-check"))
    shutil.copytree(os.path.join(HERE, "..", "configs"), os.path.join(work, "configs"))
    shutil.copy2(os.path.abspath(__file__), os.path.join(work, "chroot.py"))
    shutil.copy2(os.path.join(HERE, "common.py"), os.path.join(work, "common.py"))
    os.makedirs(os.path.join(work, "tmp"))


def inside_env(inner):
    return {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root", "LANG": "C.UTF-8", "TMPDIR": inner + "/tmp",
            "KBUILD_DATA_DIR": inner + "/configs", "KBUILD_CACHE_DIR": inner + "/kbuild-cache"}


def host_main(args):
    if os.geteuid() != 0:
        sys.exit("conformance/chroot.py: error: needs root (mount, chroot); run it as root")
    root = os.path.abspath(args.chroot)
    if not os.path.exists(os.path.join(root, "usr", "bin", "python3")):
        sys.exit(f"conformance/chroot.py: error: {root} has no usr/bin/python3; "
                 "create the chroot as docs/conformance.md says")
    kbuild = os.path.abspath(args.kbuild)
    if not os.path.isfile(kbuild):
        sys.exit(f"conformance/chroot.py: error: no kbuild binary at {kbuild}; build it "
                 "(ninja -C build) or give --kbuild PATH")
    if os.environ.get(NAMESPACE_MARK) != "1":
        # A private mount namespace: whatever happens, no mount outlives it.
        env = dict(os.environ, **{NAMESPACE_MARK: "1"})
        argv = ["unshare", "--mount", "--propagation", "private", sys.executable,
                os.path.abspath(__file__)] + sys.argv[1:]
        return subprocess.run(argv, env=env).returncode
    work = tempfile.mkdtemp(prefix="kbuild-conformance-", dir=os.path.join(root, "tmp"))
    inner = "/" + os.path.relpath(work, root)
    mounted = []
    try:
        stage(work, kbuild)
        mount_for_torch(root, mounted)
        cmd = ["chroot", root, "/usr/bin/python3", inner + "/chroot.py", "--inside",
               "--work", inner, "--scenarios", args.scenarios]
        p = subprocess.run(cmd, env=inside_env(inner))
        results = os.path.join(work, "results.json")
        if not os.path.exists(results):
            print(f"conformance/chroot.py: error: the run in the chroot wrote no results (exit {p.returncode})")
            return 2
        if args.json_out:
            shutil.copyfile(results, args.json_out)
        return p.returncode
    finally:
        unmount_all(mounted)
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------
# inside the chroot: mapping an Inductor command to kbuild's arguments


def probe_sources():
    """The programs Inductor's ISA probes compile (cpu_vec_isa.py)."""
    from torch._inductor import cpu_vec_isa

    texts = set()
    for cls in vars(cpu_vec_isa).values():
        if isinstance(cls, type):
            for name in dir(cls):
                value = getattr(cls, name, None)
                if name.endswith("_code") and isinstance(value, str):
                    texts.add(value)
    return texts


def is_probe(argv, probes):
    for src in sources_of(argv):
        if not src.endswith(".cpp"):
            continue  # objects and weights of a link are never a probe
        try:
            with open(src, "rb") as f:
                if f.read().decode("utf-8", "replace") in probes:
                    return True
        except OSError:
            pass
    return False


# --------------------------------------------------------------------------
# inside the chroot: one scenario in its own process


class Recorder:
    def __init__(self, kbuild, debian_march):
        self.kbuild = kbuild
        self.debian_march = debian_march
        self.records = []
        self.probes = None

    def compare(self, record, argv, args, cwd):
        dry, _ = run_kbuild(self.kbuild, args + ["--dry-run"], cwd)
        got = shlex.split(dry.stdout) if dry.returncode == 0 else []
        if self.debian_march:  # Debian's Inductor has no -march=native
            got = [t for t in got if t != "-march=native"]
        record["match"] = got == argv
        if got != argv:
            record.update(kbuild=got, diff=first_diff(argv, got), dry_stderr=dry.stderr[-2000:])

    def build(self, record, args, cwd, original, cmd_line):
        real, secs = run_kbuild(self.kbuild, args, cwd)
        record.update(exit=real.returncode, kbuild_seconds=round(secs, 2))
        if real.returncode != 0:
            record["stderr"] = real.stderr[-3000:]
            try:  # the same outcome as Inductor's own command is no mismatch
                original(cmd_line, cwd)
                record["inductor_exit"] = 0
            except Exception:  # noqa: BLE001
                record["inductor_exit"] = 1
                raise
            return
        out = args[args.index("-o") + 1]
        if out.endswith(".so"):
            try:
                ctypes.CDLL(os.path.join(cwd, out))
                record["loaded"] = True
            except OSError as e:
                record.update(loaded=False, load_error=str(e))

    def install(self):
        from torch._inductor import cpp_builder

        original = cpp_builder.run_compile_cmd
        self.probes = probe_sources()

        def through_kbuild(cmd_line, cwd):
            argv = shlex.split(cmd_line)
            probe = is_probe(argv, self.probes)
            record = {"inductor": argv, "cwd": cwd, "probe": probe}
            self.records.append(record)
            try:
                args = kbuild_args_for(argv, isa_spec(argv) if probe else "auto", device="cpu")
                record["kbuild_args"] = args
                self.compare(record, argv, args, cwd)
            except Exception as e:  # noqa: BLE001
                record.update(match=False, error=repr(e))
                return original(cmd_line, cwd)
            self.build(record, args, cwd, original, cmd_line)

        cpp_builder.run_compile_cmd = through_kbuild


def run_scenario(name, recorder):
    import torch
    import torch._inductor.config as inductor_config

    inductor_config.compile_threads = 1  # every compile in this process
    recorder.install()
    torch.manual_seed(0)
    x, y = torch.randn(64, 129), torch.randn(64, 129)

    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(129, 32)

        def forward(self, a):
            return torch.softmax(self.lin(a).relu(), dim=-1)

    def compiled(fn, *inputs, **kwargs):
        with torch.no_grad():
            torch.testing.assert_close(torch.compile(fn, **kwargs)(*inputs), fn(*inputs))

    if name in ("pointwise", "debian"):
        compiled(lambda a, b: (a * 2 + b).sin(), x, y)
    elif name == "reduction":
        compiled(lambda a: a.sum(dim=-1) + a.amax(dim=-1), x)
    elif name == "mlp":
        compiled(Mlp().eval(), x)
    elif name == "cpp_wrapper":
        compiled(lambda a, b: torch.relu(a @ b.T) + 1, x, y, options={"cpp_wrapper": True})
    elif name == "aoti":
        model = Mlp().eval()
        ep = torch.export.export(model, (x,))
        path = torch._inductor.aoti_compile_and_package(
            ep, package_path=os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "mlp.pt2"))
        with torch.no_grad():
            torch.testing.assert_close(torch._inductor.aoti_load_package(path)(x), model(x))


def scenario_main(args):
    recorder = Recorder(os.path.join(args.work, "kbuild"), args.scenario == "debian")
    row = {"name": args.scenario}
    start = time.perf_counter()
    try:
        run_scenario(args.scenario, recorder)
        row["ok"] = True
    except Exception as e:  # noqa: BLE001
        row.update(ok=False, error=repr(e)[-2000:], traceback=traceback.format_exc()[-6000:])
    row["seconds"] = round(time.perf_counter() - start, 1)
    with open(args.json_out, "w") as f:
        json.dump({"run": row, "commands": recorder.records}, f, indent=1)


# --------------------------------------------------------------------------
# inside the chroot: all scenarios, the summary


def scenario_env(work, name):
    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"inductor-{name}-", dir=work)
    env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    env["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
    if name == "debian":
        env.pop("TORCHINDUCTOR_CPP_MARCH", None)
    else:
        env["TORCHINDUCTOR_CPP_MARCH"] = "native"  # upstream's flag, undoing Debian's patch
    return env


def facts(work):
    import platform

    kbuild = os.path.join(work, "kbuild")
    version = subprocess.run([kbuild, "--version"], capture_output=True, text=True).stdout
    profile = next((line for line in version.splitlines() if line.startswith("Inductor profile")), "")
    gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    import torch

    return {"torch": torch.__version__, "gxx": gxx, "python": platform.python_version(),
            "profile": profile, "date": time.strftime("%Y-%m-%d")}


def counts(results):
    rows = []
    for run in results["runs"]:
        cmds = [c for c in results["commands"] if c["scenario"] == run["name"]]
        same = sum(bool(c.get("match")) for c in cmds)
        built = sum(c.get("exit") == 0 for c in cmds)
        both_failed = sum(c.get("exit", 0) != 0 and c.get("inductor_exit") == 1 for c in cmds)
        kernels = [c for c in cmds if "loaded" in c and not c["probe"]]
        probes = [c for c in cmds if c["probe"]]
        rows.append({"name": run["name"], "commands": len(cmds), "same": same, "built": built,
                     "both_failed": both_failed, "loaded": sum(c["loaded"] for c in kernels),
                     "so": len(kernels), "probes": len(probes),
                     "probes_loaded": sum(bool(c.get("loaded")) for c in probes),
                     "ok": run.get("ok"), "seconds": run.get("seconds")})
    return rows


def summary(results):
    f = results["facts"]
    print(f"\n{f['date']}: torch {f['torch']}, {f['gxx']}, Python {f['python']}")
    print(f"kbuild: {f['profile']}")
    # A probe that kbuild built but that does not load is Inductor's answer
    # too (the same argv): it makes the kernels' ISA, which the argv shows.
    print(f"{'scenario':12} {'commands':>8} {'argv same':>9} {'built':>5} {'both fail':>9} "
          f"{'loaded':>6} {'probes loaded':>13} {'= eager':>7} {'seconds':>7}")
    failed = not f["profile"].startswith("Inductor profile 2.14")
    for r in counts(results):
        print(f"{r['name']:12} {r['commands']:8} {r['same']:9} {r['built']:5} {r['both_failed']:9} "
              f"{str(r['loaded']) + '/' + str(r['so']):>6} "
              f"{str(r['probes_loaded']) + '/' + str(r['probes']):>13} {'yes' if r['ok'] else 'NO':>7} "
              f"{r['seconds']:7}")
        failed |= (not r["ok"] or r["same"] != r["commands"] or r["commands"] == 0
                   or r["built"] + r["both_failed"] != r["commands"] or r["loaded"] != r["so"])
    for c in results["commands"]:
        unloadable = c.get("loaded") is False and not c["probe"]
        if not c.get("match") or (c.get("exit") != 0 and c.get("inductor_exit") != 1) or unloadable:
            print(f"  {c['scenario']}:", {k: c.get(k) for k in ("diff", "error", "dry_stderr", "stderr", "load_error")},
                  shlex.join(c["inductor"])[:300])
    for r in results["runs"]:
        if not r.get("ok"):
            print(f"  {r['name']} failed: {r.get('error', '')[-600:]}")
    total = len(results["commands"])
    same = sum(bool(c.get("match")) for c in results["commands"])
    print(f"argv identical: {same}/{total}, different: {total - same}; "
          f"{'PASSED' if not failed else 'FAILED'}")
    return 1 if failed else 0


def inside_main(args):
    results = {"facts": facts(args.work), "runs": [], "commands": []}
    for name in [s.strip() for s in args.scenarios.split(",") if s.strip()]:
        out = os.path.join(args.work, f"scenario-{name}.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--inside", "--work", args.work,
               "--scenario", name, "--json-out", out]
        start = time.perf_counter()
        p = subprocess.run(cmd, env=scenario_env(args.work, name), capture_output=True, text=True)
        if os.path.exists(out):
            with open(out) as f:
                child = json.load(f)
        else:
            child = {"run": {"name": name, "ok": False, "seconds": round(time.perf_counter() - start, 1),
                             "error": f"exited {p.returncode}: {p.stderr[-1500:]}"}, "commands": []}
        for c in child["commands"]:
            c["scenario"] = name
        results["runs"].append(child["run"])
        results["commands"] += child["commands"]
        print(f"{name}: {len(child['commands'])} commands, ok={child['run'].get('ok')}", flush=True)
        with open(os.path.join(args.work, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    return summary(results)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chroot", default="/work/chroots/sid")
    ap.add_argument("--kbuild", default=os.path.join(HERE, "..", "build", "src", "kbuild"))
    ap.add_argument("--json-out")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help="comma-separated subset of: " + ", ".join(SCENARIOS))
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory in the chroot")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--scenario", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scenario:
        return scenario_main(args)
    if args.inside:
        return inside_main(args)
    return host_main(args)


if __name__ == "__main__":
    sys.exit(main())
