"""kbuild as PyTorch Inductor's provider of device compile options.

    import kbuild_inductor
    kbuild_inductor.register("npu")                    # or ("npu", backend="ascendc")

From then on, when Inductor builds a kernel for that device it gets the 7
lists (definitions, include_dirs, cflags, ldflags, libraries_dirs, libraries,
passthrough_args) from `kbuild options --device D [--backend B] [--aot]
[--compile-only] --json`, i.e. from kbuild's built-in and config-registered
devices. On a torch with the device registry
(torch._inductor.cpp_builder.register_cpp_device_options) the callback is
registered there; on older torch (2.11 has none) get_cpp_torch_device_options
is wrapped, not replaced: every other device keeps its own behaviour.

Standard library only. The kbuild binary is the `kbuild` argument, else
`kbuild` on PATH. A kbuild that does not answer within `timeout` seconds
(DEFAULT_TIMEOUT_S, 120) is ended and a KbuildError raised, so Inductor never
hangs on it; what it prints must be the 7 lists (an object of arrays of
strings), anything else is a KbuildError too.
"""

import json
import os
import shutil
import signal
import subprocess

__all__ = ["DEFAULT_TIMEOUT_S", "KbuildError", "device_options", "register", "unregister"]

_KEYS = ("definitions", "include_dirs", "cflags", "ldflags", "libraries_dirs", "libraries",
         "passthrough_args")

DEFAULT_TIMEOUT_S = 120

# device type -> callback, for the wrapping fallback; kept on the wrapper.
_WRAPPER_ATTR = "_kbuild_callbacks"


class KbuildError(RuntimeError):
    """kbuild could not produce options; the message is kbuild's own."""


def _binary(kbuild):
    path = shutil.which(kbuild or "kbuild")
    if not path:
        raise KbuildError(f"{kbuild or 'kbuild'} not found or not executable; "
                          "pass kbuild=PATH to register()")
    return path


def _run(argv, timeout):
    """Runs argv in its own process group; past `timeout` seconds the whole
    group is killed (a child it left would otherwise hold the pipes open)."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as child:
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
                   extra_args=(), timeout=DEFAULT_TIMEOUT_S):
    """The device's 7 lists as Inductor's hook returns them (a tuple of lists)."""
    argv = [_binary(kbuild), "options", "--device", device_type, "--json"]
    if backend:
        argv += ["--backend", backend]
    if aot_mode:
        argv.append("--aot")
    if compile_only:
        argv.append("--compile-only")
    argv += list(extra_args)
    proc = _run(argv, timeout)
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.splitlines() if l.startswith("kbuild: error")]
        message = lines[0] if lines else proc.stderr.strip() or f"exit code {proc.returncode}"
        raise KbuildError(f"{message} (exit code {proc.returncode})")
    try:
        data = json.loads(proc.stdout)
    except ValueError as e:
        raise KbuildError(f"kbuild printed something that is not JSON: {proc.stdout[:200]!r}") from e
    return _seven_lists(data, proc.stdout)


class _Callback:
    """The upstream callback signature: (device_type, aot_mode, compile_only) -> 7 lists.
    Answers are cached per (aot_mode, compile_only): Inductor asks for every kernel."""

    def __init__(self, backend, kbuild, extra_args, cache, timeout=DEFAULT_TIMEOUT_S):
        self.key = (backend, kbuild, tuple(extra_args), timeout)
        self._backend, self._kbuild, self._extra = backend, kbuild, tuple(extra_args)
        self._timeout = timeout
        self._cache = {} if cache else None

    def __call__(self, device_type, aot_mode=False, compile_only=False):
        key = (device_type, bool(aot_mode), bool(compile_only))
        if self._cache is not None and key in self._cache:
            return tuple(list(x) for x in self._cache[key])
        result = device_options(device_type, aot_mode, compile_only, backend=self._backend,
                                kbuild=self._kbuild, extra_args=self._extra,
                                timeout=self._timeout)
        if self._cache is not None:
            self._cache[key] = result
        return tuple(list(x) for x in result)


def _install_wrapper(cpp_builder):
    """Wraps get_cpp_torch_device_options once; returns the callback table."""
    current = cpp_builder.get_cpp_torch_device_options
    table = getattr(current, _WRAPPER_ATTR, None)
    if table is not None:
        return table
    original = current
    table = {}

    def get_cpp_torch_device_options(device_type, aot_mode=False, compile_only=False):
        callback = table.get(device_type)
        if callback is None:
            return original(device_type, aot_mode, compile_only)
        return callback(device_type, aot_mode, compile_only)

    setattr(get_cpp_torch_device_options, _WRAPPER_ATTR, table)
    get_cpp_torch_device_options.__wrapped__ = original
    cpp_builder.get_cpp_torch_device_options = get_cpp_torch_device_options
    return table


def register(device_type, backend=None, *, kbuild=None, extra_args=(), cache=True,
             cpp_builder=None, timeout=DEFAULT_TIMEOUT_S):
    """Makes kbuild the provider of `device_type`'s options in Inductor.

    `timeout` (seconds) bounds each kbuild call. Registering the same device
    with the same settings again does nothing;
    with other settings it replaces the earlier registration. Returns the
    callback. `cpp_builder` is torch._inductor.cpp_builder unless given.
    """
    if cpp_builder is None:
        from torch._inductor import cpp_builder  # noqa: PLC0415
    _binary(kbuild)  # fail now, not at the first compile
    callback = _Callback(backend, kbuild, extra_args, cache, timeout)
    registered = getattr(cpp_builder, "_kbuild_registered", {})
    previous = registered.get(device_type)
    if previous is not None and previous.key == callback.key:
        return previous
    if hasattr(cpp_builder, "register_cpp_device_options"):
        cpp_builder.register_cpp_device_options(device_type, callback)
    else:
        _install_wrapper(cpp_builder)[device_type] = callback
    registered[device_type] = callback
    cpp_builder._kbuild_registered = registered
    return callback


def unregister(device_type, *, cpp_builder=None):
    """Undoes register() where torch has no registry (the wrapped hook)."""
    if cpp_builder is None:
        from torch._inductor import cpp_builder  # noqa: PLC0415
    table = getattr(cpp_builder.get_cpp_torch_device_options, _WRAPPER_ATTR, None)
    if table is not None:
        table.pop(device_type, None)
    getattr(cpp_builder, "_kbuild_registered", {}).pop(device_type, None)
