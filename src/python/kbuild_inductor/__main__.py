"""python -m kbuild_inductor doctor [--kbuild PATH] [DEVICE[:BACKEND] ...]

Runs `kbuild doctor` for each device the bridge would register (the
arguments, else KBUILD_INDUCTOR_DEVICES) with this interpreter as kbuild's
Python, so it checks the environment that will compile. Exit code: 0 when
every doctor passed, else the first non-zero one; 2 for bad usage.
"""

import argparse
import os
import subprocess
import sys

from kbuild_inductor import KbuildError, find_kbuild
from kbuild_inductor._autoload import DEVICES_VARIABLE, parse_devices


def doctor(devices, kbuild):
    code = 0
    for device, backend in devices:
        argv = [kbuild, "doctor", "--device", device, "--python", sys.executable]
        if backend:
            argv += ["--backend", backend]
        print(f"== kbuild doctor for {device}" + (f" ({backend})" if backend else ""), flush=True)
        result = subprocess.run(argv, check=False)
        code = code or result.returncode
    return code


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kbuild_inductor")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("doctor", help="run kbuild doctor for the bridge's devices")
    check.add_argument("devices", nargs="*", metavar="DEVICE[:BACKEND]")
    check.add_argument("--kbuild", help="the kbuild binary (default: the wheel's, else PATH's)")
    args = parser.parse_args(argv)
    text = ",".join(args.devices) if args.devices else os.environ.get(DEVICES_VARIABLE, "")
    devices, problems = parse_devices(text)
    for problem in problems:
        print(f"kbuild_inductor: error: {problem}", file=sys.stderr)
    if problems or not devices:
        if not devices and not problems:
            print(f"kbuild_inductor: error: no device to check; name one (doctor npu) or set "
                  f"{DEVICES_VARIABLE}", file=sys.stderr)
        return 2
    try:
        kbuild = find_kbuild(args.kbuild)
    except KbuildError as e:
        print(f"kbuild_inductor: error: {e}", file=sys.stderr)
        return 2
    return doctor(devices, kbuild)


if __name__ == "__main__":
    sys.exit(main())
