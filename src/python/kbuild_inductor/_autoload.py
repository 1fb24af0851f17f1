"""Opt-in registration when torch is imported (the `torch.backends` entry
point, which torch runs at the end of `import torch` unless
TORCH_DEVICE_BACKEND_AUTOLOAD=0).

KBUILD_INDUCTOR_DEVICES=npu[:backend],... names the devices; without it,
nothing happens. KBUILD_INDUCTOR_KBUILD names the binary (default: the
wheel's, else PATH's); KBUILD_INDUCTOR_ROUTE_COMPILES=1 also routes
Inductor's compiles through `kbuild cc`. KBUILD_INDUCTOR_ISA=1 has kbuild
answer Inductor's vector ISA check (register_isa) even without a device, =0
never; unset, it does with the devices. The hook goes in when torch's
cpu_vec_isa is imported (at once if it is already): `import torch` alone
imports nothing more. A problem is a warning, never an exception: an entry
point that raises makes `import torch` fail.
"""

import os
import re
import warnings

DEVICES_VARIABLE = "KBUILD_INDUCTOR_DEVICES"
ISA_VARIABLE = "KBUILD_INDUCTOR_ISA"
_NAME = re.compile(r"[a-z0-9_]+\Z")


def parse_devices(text):
    """`npu,cuda:x` -> ([("npu", None), ("cuda", "x")], [problems])."""
    devices, problems = [], []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        device, _, backend = item.partition(":")
        if not _NAME.match(device) or (backend and not _NAME.match(backend)):
            problems.append(f"{DEVICES_VARIABLE}: '{item}' is not DEVICE or DEVICE:BACKEND "
                            "(lowercase letters, digits, _); skipped")
            continue
        devices.append((device, backend or None))
    return devices, problems


def autoload():
    import kbuild_inductor  # noqa: PLC0415

    devices, problems = parse_devices(os.environ.get(DEVICES_VARIABLE))
    for problem in problems:
        warnings.warn(f"kbuild_inductor: {problem}", RuntimeWarning, stacklevel=2)
    route = os.environ.get("KBUILD_INDUCTOR_ROUTE_COMPILES") == "1"
    kbuild = os.environ.get("KBUILD_INDUCTOR_KBUILD") or None
    registered = False
    for device, backend in devices:
        try:
            kbuild_inductor.register(device, backend, kbuild=kbuild, route_compiles=route,
                                     isa=False)
            registered = True
        except (kbuild_inductor.KbuildError, ImportError) as e:
            warnings.warn(f"kbuild_inductor: {device} not registered: {e}", RuntimeWarning,
                          stacklevel=2)
    isa = os.environ.get(ISA_VARIABLE, "")
    if isa not in ("", "0", "1"):
        warnings.warn(f"kbuild_inductor: {ISA_VARIABLE}={isa!r} is not 0 or 1; ignored",
                      RuntimeWarning, stacklevel=2)
    if isa == "1" or (isa != "0" and registered):
        from kbuild_inductor import _isa  # noqa: PLC0415

        def hook(cpu_vec_isa):
            hooked = kbuild_inductor.register_isa(kbuild=kbuild, cpu_vec_isa=cpu_vec_isa)
            hooked.by_register = registered  # the last device's unregister() removes it

        _isa.install_when_imported(hook)
