"""kbuild as PyTorch Inductor's provider of device compile options.

    import kbuild_inductor
    kbuild_inductor.register("npu")                    # or ("npu", backend="ascendc")

From then on, when Inductor builds a kernel for that device it gets the 7
lists (definitions, include_dirs, cflags, ldflags, libraries_dirs, libraries,
passthrough_args) from `kbuild options --device D [--backend B] [--aot]
[--compile-only] --json`, i.e. from kbuild's built-in devices and those
its device files register. The running torch's API decides how (_shapes.py), in this order:
an optional `DeviceInterface.get_cpp_device_options` (attached to the
device's registered interface), `register_cpp_device_options`, else
`get_cpp_torch_device_options` is wrapped, not replaced: every other device
keeps its own behaviour. A later patch of that hook (torch_npu's) is wrapped
too, so kbuild's answer wins whatever the import order.

register() (and register_isa(), for the ISA alone) also has Inductor's
vector ISA check answered by kbuild (`kbuild isa --json`, _isa.py): a fresh
process's `pick_vec_isa()` then starts no Python interpreter and builds no
probe; whatever kbuild cannot answer for sure is Inductor's own check, with
one warning.

Standard library only. The kbuild binary is the `kbuild` argument, else the
one installed with this package (the wheel's), else `kbuild` on PATH;
register() runs its `--version` once and refuses one that does not answer
as kbuild. A kbuild that does not answer within `timeout` seconds
(DEFAULT_TIMEOUT_S, 120) is ended and a KbuildError raised, so Inductor
never hangs on it; what it prints must be the 7 lists (an object of arrays
of strings), anything else is a KbuildError too. Without torch, register()
and unregister() raise a KbuildError that says so.
"""

import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig

from kbuild_inductor import _isa, _shapes

__all__ = ["DEFAULT_TIMEOUT_S", "KbuildError", "autoload", "device_options", "find_kbuild",
           "register", "register_isa", "unregister", "unregister_isa"]

_KEYS = ("definitions", "include_dirs", "cflags", "ldflags", "libraries_dirs", "libraries",
         "passthrough_args")

DEFAULT_TIMEOUT_S = 120


class KbuildError(RuntimeError):
    """kbuild could not produce options; the message is kbuild's own."""


def _installed_kbuild():
    """The kbuild the wheel put in the scripts dir of the installation scheme
    this package is in (a venv's bin, ~/.local/bin); None from a source tree."""
    here = os.path.dirname(os.path.abspath(__file__))
    for scheme in (sysconfig.get_default_scheme(), f"{os.name}_user"):
        paths = sysconfig.get_paths(scheme)
        if any(here.startswith(paths[k] + os.sep) for k in ("platlib", "purelib")):
            path = os.path.join(paths["scripts"], "kbuild")
            return path if os.access(path, os.X_OK) else None
    return None


def find_kbuild(kbuild=None):
    """The kbuild binary to run: `kbuild`, else the wheel's, else PATH's."""
    path = shutil.which(kbuild) if kbuild else (_installed_kbuild() or shutil.which("kbuild"))
    if not path:
        raise KbuildError(f"{kbuild or 'kbuild'} not found or not executable; "
                          "pass kbuild=PATH to register()")
    return path


def _check_kbuild(binary, timeout):
    """A KbuildError now when `binary --version` is not kbuild's answer: a
    wrong binary would otherwise fail inside Inductor, at the first kernel."""
    proc = _run([binary, "--version"], timeout)
    if proc.returncode != 0 or not proc.stdout.startswith("kbuild"):
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise KbuildError(f"{binary} --version did not answer as kbuild does (exit code "
                          f"{proc.returncode}{': ' + said[0] if said else ''}); "
                          "pass kbuild=PATH to register()")


def _run(argv, timeout, env=None):
    """Runs argv in its own process group; past `timeout` seconds the whole
    group is killed (a child it left would otherwise hold the pipes open)."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, env=env) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as e:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise KbuildError(f"{argv[0]} did not answer within {timeout:g} s and was ended "
                              "(raise timeout= in kbuild_inductor.register)") from e
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


def _seven_lists(data, printed):
    """`data` (kbuild's JSON) as the 7-tuple, or a KbuildError when it is not
    an object whose values are arrays of strings."""
    def wrong(why):
        return KbuildError(f"kbuild printed JSON that is not the 7 lists ({why}): {printed[:200]!r}")

    if not isinstance(data, dict):
        raise wrong(f"a {type(data).__name__}, not an object")
    lists = []
    for key in _KEYS:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise wrong(f"'{key}' is not an array of strings")
        lists.append(list(value))
    return tuple(lists)


def device_options(device_type, aot_mode=False, compile_only=False, *, backend=None, kbuild=None,
                   extra_args=(), timeout=DEFAULT_TIMEOUT_S, env=None):
    """The device's 7 lists as Inductor's hook returns them (a tuple of lists)."""
    argv = [find_kbuild(kbuild), "options", "--device", device_type, "--json"]
    if backend:
        argv += ["--backend", backend]
    if aot_mode:
        argv.append("--aot")
    if compile_only:
        argv.append("--compile-only")
    argv += list(extra_args)
    proc = _run(argv, timeout, env)
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.splitlines() if l.startswith("kbuild: error")]
        message = lines[0] if lines else proc.stderr.strip() or f"exit code {proc.returncode}"
        raise KbuildError(f"{message} (exit code {proc.returncode})")
    try:
        data = json.loads(proc.stdout)
    except ValueError as e:
        raise KbuildError(f"kbuild printed something that is not JSON: {proc.stdout[:200]!r}") from e
    return _seven_lists(data, proc.stdout)


def process_npu_backend():
    """torch_npu's backend in this process, as torch_npu picks it (its
    `npu_backend` option in torch._inductor.config, else
    TORCHINDUCTOR_NPU_BACKEND); None: kbuild's default. torch is not
    imported for this."""
    config = sys.modules.get("torch._inductor.config")
    backend = getattr(config, "npu_backend", None) if config is not None else None
    return backend or os.environ.get("TORCHINDUCTOR_NPU_BACKEND") or None


class _Callback:
    """The upstream callback signature: (device_type, aot_mode, compile_only) -> 7 lists.
    Answers are cached per (device, backend, aot_mode, compile_only,
    DISABLE_AOTI_PATCH): Inductor asks for every kernel. Without an explicit
    backend, an npu device follows the process's backend, read at each call."""

    def __init__(self, backend, kbuild, extra_args, cache, timeout=DEFAULT_TIMEOUT_S):
        self.key = (backend, kbuild, tuple(extra_args), timeout)
        self.route = None  # what route_compiles changed, to give back at unregister()
        self._backend, self._kbuild, self._extra = backend, kbuild, tuple(extra_args)
        self._timeout = timeout
        self._cache = {} if cache else None

    def backend_for(self, device_type):
        if self._backend or device_type != "npu":
            return self._backend
        return process_npu_backend()

    def __call__(self, device_type, aot_mode=False, compile_only=False):
        backend = self.backend_for(device_type)
        aoti_patch = os.environ.get("DISABLE_AOTI_PATCH")
        key = (device_type, backend, bool(aot_mode), bool(compile_only), aoti_patch)
        if self._cache is not None and key in self._cache:
            return tuple(list(x) for x in self._cache[key])
        env = dict(os.environ)  # kbuild sees the process's DISABLE_AOTI_PATCH
        result = device_options(device_type, aot_mode, compile_only, backend=backend,
                                kbuild=self._kbuild, extra_args=self._extra,
                                timeout=self._timeout, env=env)
        if self._cache is not None:
            self._cache[key] = result
        return tuple(list(x) for x in result)


def _import_torch(name):
    """torch's module `name`; without torch, a KbuildError that says so (an
    import error inside an installed torch stays what it is)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != "torch":
            raise
        raise KbuildError(f"torch is not installed for {sys.executable}: kbuild_inductor "
                          "gives Inductor its options; install torch in this Python") from None


def _torch_modules(cpp_builder, device_interface):
    """torch's cpp_builder and device_interface modules unless given (stand-ins
    in tests). device_interface is None when torch has none."""
    if cpp_builder is None:
        cpp_builder = _import_torch("torch._inductor.cpp_builder")
        if device_interface is None:
            try:
                from torch._dynamo import device_interface  # noqa: PLC0415
            except ImportError:
                device_interface = None
    return cpp_builder, device_interface


def _cpu_vec_isa(cpu_vec_isa):
    return cpu_vec_isa if cpu_vec_isa is not None else _import_torch(_isa.MODULE)


def _devices_isa_module(cpu_vec_isa, standin_cpp_builder):
    """The cpu_vec_isa register() hooks: the one given, else torch's unless
    cpp_builder is a stand-in (then none)."""
    if cpu_vec_isa is not None or not standin_cpp_builder:
        return _cpu_vec_isa(cpu_vec_isa)
    return None


def register_isa(*, kbuild=None, timeout=_isa.DEFAULT_TIMEOUT_S, cpu_vec_isa=None,
                 inductor_config=None, torch=None):
    """Has kbuild answer Inductor's vector ISA check: `VecISA.check_build` of
    `cpu_vec_isa` (torch._inductor.cpu_vec_isa unless given) is replaced by
    kbuild's answers (_isa.py says when it gives them and when Inductor's
    own check runs). kbuild is `kbuild` (else the wheel's, else PATH's),
    found at the first check; `inductor_config` and `torch` are the
    module's own unless given. Returns the hook; registering again returns
    the one installed."""
    return _isa.install(_cpu_vec_isa(cpu_vec_isa), kbuild, timeout, inductor_config, torch)


def unregister_isa(*, cpu_vec_isa=None):
    """Gives Inductor its own ISA check back."""
    _isa.uninstall(_cpu_vec_isa(cpu_vec_isa))


def register(device_type, backend=None, *, kbuild=None, extra_args=(), cache=True,
             cpp_builder=None, device_interface=None, timeout=DEFAULT_TIMEOUT_S,
             route_compiles=False, inductor_config=None, isa=True, cpu_vec_isa=None,
             remote_cache=None):
    """Makes kbuild the provider of `device_type`'s options in Inductor.

    `timeout` (seconds) bounds each kbuild call. Registering the same device
    with the same settings again does nothing; with other settings it
    replaces the earlier registration. Returns the callback. `cpp_builder`
    is torch._inductor.cpp_builder and `device_interface`
    torch._dynamo.device_interface unless given. `route_compiles=True` also
    has Inductor run its compiles through kbuild (`kbuild cc`: its cache and
    launcher, the command unchanged): `inductor_config.cpp.cxx`
    (torch._inductor.config unless given) is pointed at a link named like
    the compiler to kbuild, and KBUILD_CC_COMPILER at the configured
    compiler's absolute path, which that link runs (_route.py).
    `remote_cache="redis://HOST:PORT"` (with route_compiles) sets
    KBUILD_REMOTE_CACHE for the routed compiles, so that machines sharing
    that Redis compile each kernel once; without it they use
    KBUILD_REMOTE_CACHE as the environment has it. kbuild checks the
    address now (`kbuild cache check`): one it refuses raises KbuildError.
    `isa=True` also installs register_isa()'s hook on `cpu_vec_isa`
    (torch's when `cpp_builder` is torch's; with a stand-in cpp_builder only
    when given), which unregister() of the last device removes.
    """
    standin = cpp_builder is not None
    if remote_cache is not None:
        from kbuild_inductor import _route  # noqa: PLC0415
        if not route_compiles:  # a setting never silently ignored
            raise KbuildError("remote_cache= is for routed compiles: pass route_compiles=True "
                              "too (the options kbuild gives Inductor use no cache)")
    cpp_builder, device_interface = _torch_modules(cpp_builder, device_interface)
    binary = find_kbuild(kbuild)  # fail now, not at the first compile
    _check_kbuild(binary, timeout)
    if remote_cache is not None:  # kbuild's own rule, now rather than at every compile
        _route.check_remote_cache(remote_cache, binary,
                                  lambda argv, env: _run(argv, timeout, env))
    callback = _Callback(backend, kbuild, extra_args, cache, timeout)
    table = _shapes.callback_table(cpp_builder)
    if route_compiles:
        from kbuild_inductor import _route  # noqa: PLC0415
        if inductor_config is None:
            inductor_config = _import_torch("torch._inductor.config")
        change = _route.route_compiles(binary, inductor_config, remote_cache)
        # Routed already: the first routing holds what to give back.
        callback.route = next((c.route for c in table.values() if c.route), change)
    isa_module = _devices_isa_module(cpu_vec_isa, standin) if isa else None
    if isa_module is not None:
        _install_isa_for_devices(isa_module, kbuild, timeout, inductor_config)
    previous = table.get(device_type)
    if previous is not None and previous.key == callback.key:
        previous.route = previous.route or callback.route
        return previous
    table[device_type] = callback
    _shapes.install(device_type, callback, cpp_builder, device_interface)
    return callback


def _install_isa_for_devices(cpu_vec_isa, kbuild, timeout, inductor_config):
    hook = _isa.installed(cpu_vec_isa)
    if hook is None:
        hook = _isa.install(cpu_vec_isa, kbuild, max(timeout, _isa.DEFAULT_TIMEOUT_S),
                            inductor_config)
        hook.by_register = True


def unregister(device_type, *, cpp_builder=None, device_interface=None, cpu_vec_isa=None):
    """Undoes register() for one device; the last routed device gives back
    Inductor's compiler and KBUILD_CC_COMPILER as they were, and the last
    device the ISA hook register() installed (on `cpu_vec_isa`, as register)."""
    standin = cpp_builder is not None
    cpp_builder, device_interface = _torch_modules(cpp_builder, device_interface)
    callback = _shapes.uninstall(device_type, cpp_builder, device_interface)
    table = _shapes.callback_table(cpp_builder)
    if callback is not None and callback.route and not any(c.route for c in table.values()):
        from kbuild_inductor import _route  # noqa: PLC0415
        _route.unroute(callback.route)
    module = _devices_isa_module(cpu_vec_isa, standin) if not table else None
    hook = _isa.installed(module) if module is not None else None
    if hook is not None and hook.by_register:
        _isa.uninstall(module)


def autoload():
    """The `torch.backends` entry point: registers the devices named by
    KBUILD_INDUCTOR_DEVICES (`npu[:backend],...`); without it, nothing."""
    from kbuild_inductor import _autoload  # noqa: PLC0415
    _autoload.autoload()
