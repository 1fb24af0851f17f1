"""The PyTorch bridge against stand-ins for torch._inductor.cpp_builder,
torch._dynamo.device_interface and torch_npu (no torch needed) and the real
kbuild binary. Run from the source tree (PYTHONPATH=src/python) and, by the
wheel test, from an installed wheel."""
import functools
import inspect
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import types
import unittest
import warnings
from importlib import metadata
from unittest import mock

import kbuild_inductor
from kbuild_inductor import _isa

KBUILD = os.environ["KBUILD_BIN"]
NO_TORCH = ("--no-torch",)


def old_torch():
    """A cpp_builder without a registry (torch 2.11): only the hook."""
    mod = types.ModuleType("cpp_builder")
    mod.calls = []

    def get_cpp_torch_device_options(device_type, aot_mode=False, compile_only=False):
        mod.calls.append(device_type)
        return ([" USE_CUDA"] if device_type == "cuda" else [], [], [], [], ["/torch/lib"], [], [])

    get_cpp_torch_device_options.__module__ = mod.__name__  # torch's own, not a patch
    mod.get_cpp_torch_device_options = get_cpp_torch_device_options
    return mod


def interface_torch():
    """cpp_builder and device_interface shaped like torch 2.15's DeviceInterface
    hook as it landed (PR 190614; pytorch/pytorch main,
    torch/_inductor/cpp_builder.py `get_cpp_torch_device_options` and
    test/inductor/test_cpp_builder.py `test_device_interface_cpp_options`, read
    through the code index; torch/_dynamo/device_interface.py at 0140b62d8bab
    for the registry): the hook asks
    `get_interface_for_device(device_type).get_cpp_device_options(aot_mode,
    compile_only)` (the name imported into cpp_builder) for every build; the
    method is static, without a device type; a tuple it returns replaces the
    built-in branches; NotImplementedError (no interface, or the base class's
    method) falls through to them. A registry is there too: the interface is
    preferred."""
    di = types.ModuleType("device_interface")

    class DeviceInterface:
        @staticmethod
        def get_cpp_device_options(aot_mode, compile_only):
            raise NotImplementedError

    class CudaInterface(DeviceInterface):
        pass

    class CpuInterface(DeviceInterface):
        pass

    di.DeviceInterface = DeviceInterface
    di.device_interfaces = {}
    di.initialized = False
    di.asked = []  # each device type get_cpp_torch_device_options asked for

    def register_interface_for_device(device, device_interface):
        di.device_interfaces[getattr(device, "type", device)] = device_interface

    def init_device_reg():
        register_interface_for_device("cuda", CudaInterface)
        register_interface_for_device("cpu", CpuInterface)
        di.initialized = True

    def get_interface_for_device(device):
        if not di.initialized:
            init_device_reg()
        if device in di.device_interfaces:
            return di.device_interfaces[device]
        raise NotImplementedError(f"No interface for device {device}")

    di.register_interface_for_device = register_interface_for_device
    di.get_interface_for_device = get_interface_for_device
    mod = new_torch()
    mod.get_interface_for_device = get_interface_for_device  # cpp_builder's own import
    builtin = mod.get_cpp_torch_device_options

    def get_cpp_torch_device_options(device_type, aot_mode=False, compile_only=False):
        di.asked.append(device_type)
        try:
            device_options = mod.get_interface_for_device(device_type).get_cpp_device_options(
                aot_mode, compile_only)
        except NotImplementedError:
            device_options = None
        if device_options is not None:
            return device_options
        return builtin(device_type, aot_mode, compile_only)

    get_cpp_torch_device_options.__module__ = mod.__name__
    mod.get_cpp_torch_device_options = get_cpp_torch_device_options
    return mod, di


def torch_npu_interface(di, register_now=True):
    """torch_npu's NpuInterface (torch_npu/utils/_dynamo_device.py) and its
    registration (torch_npu/utils/_dynamo.py `_dynamo_register_interface_for_device`,
    master 9e73e708ab93): the function imports `register_interface_for_device`
    when it runs and registers the class for npu and npu:0..31."""
    class NpuInterface(di.DeviceInterface):
        pass

    def register_interfaces():
        register = di.register_interface_for_device  # its import, at call time
        register("npu", NpuInterface)
        for i in range(32):
            register(f"npu:{i}", NpuInterface)

    if register_now:
        register_interfaces()
    return NpuInterface, register_interfaces


def import_torch_npu(mod, di=None):
    """What torch_npu does to Inductor on import and when its backend loader
    runs: its own hook for every device, and its own npu interface."""
    original = mod.get_cpp_torch_device_options

    def patched(device_type, aot_mode=False, compile_only=False):
        if device_type == "npu":
            return (["TORCH_NPU_OWN"], [], [], [], [], ["torch_npu"], [])
        result = original(device_type, aot_mode, compile_only)
        return (result[0] + ["TORCH_NPU_PATCHED"],) + tuple(result[1:])

    patched.__module__ = "torch_npu._inductor.cpp_builder"
    mod.get_cpp_torch_device_options = patched
    if di is not None:
        di.register_interface_for_device("npu", type("NPUInterface", (di.DeviceInterface,), {}))


def new_torch():
    """A cpp_builder with the upstream registry API."""
    mod = old_torch()
    mod.registry = {}

    def register_cpp_device_options(device_type, callback):
        if device_type in mod.registry:
            warnings.warn(f"{device_type} is already registered, overwriting")
        mod.registry[device_type] = callback

    mod.register_cpp_device_options = register_cpp_device_options
    return mod


class BridgeTest(unittest.TestCase):
    def setUp(self):
        self.home = tempfile.TemporaryDirectory()
        self.env = dict(os.environ)
        os.environ.update(HOME=self.home.name, XDG_CONFIG_HOME=self.home.name + "/c",
                          XDG_CACHE_HOME=self.home.name + "/k", ASCEND_HOME_PATH="/opt/ascend")
        os.environ.pop("KBUILD_CONFIG_PATH", None)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env)
        self.home.cleanup()

    def test_device_options_is_the_7_tuple_in_order(self):
        opts = kbuild_inductor.device_options("npu", kbuild=KBUILD, extra_args=NO_TORCH)
        self.assertEqual(len(opts), 7)
        definitions, include_dirs, cflags, ldflags, lib_dirs, libraries, passthrough = opts
        self.assertEqual(definitions, ["USE_NPU"])
        self.assertIn("/opt/ascend/include", include_dirs)
        self.assertEqual(libraries, ["torch_npu", "runtime", "ascendcl"])
        self.assertEqual(passthrough, ["-DBUILD_LIBTORCH=ON -Wno-unused-function"])

    def test_remote_cache_is_taken_exactly_as_kbuild_takes_it_its_secret_never_shown(self):
        os.environ.update(KBUILD_CC_DIR=self.home.name + "/links")
        os.environ.pop("KBUILD_REMOTE_CACHE", None)
        mod = old_torch()

        def register(address):
            config = types.SimpleNamespace(cpp=types.SimpleNamespace(cxx=(None, "g++")))
            return kbuild_inductor.register("cpu", kbuild=KBUILD, extra_args=NO_TORCH,
                                            cpp_builder=mod, route_compiles=True,
                                            inductor_config=config, remote_cache=address,
                                            isa=False)

        # kbuild refuses rediss:// (no TLS), a mistyped scheme, a bad database:
        # so does register(), rather than every routed compile with exit 2.
        for address, shown in (("rediss://cache:6379", "'rediss://cache:6379'"),
                               ("redis:/:Pa/ss@h:1", "'redis:/***@h:1'"),
                               ("redis://:correct horse@h:1/x", "'redis://***@h:1/x'"),
                               (b"redis://:correct horse@h:1", "bytes"),
                               ("", "''")):
            with self.assertRaises(kbuild_inductor.KbuildError, msg=address) as ctx:
                register(address)
            message = str(ctx.exception)
            self.assertIn(shown, message)
            for part in ("Pa/ss", "ss@", "correct", "horse"):
                self.assertNotIn(part, message)
            self.assertIsNone(os.environ.get("KBUILD_REMOTE_CACHE"))
        # What kbuild takes, register() takes (no server needed to check it).
        address = "redis://:correct horse@127.0.0.1:1/2"
        register(address)
        self.assertEqual(os.environ.get("KBUILD_REMOTE_CACHE"), address)
        kbuild_inductor.unregister("cpu", cpp_builder=mod)
        self.assertIsNone(os.environ.get("KBUILD_REMOTE_CACHE"))

    def test_old_torch_hook_is_wrapped_not_replaced(self):
        mod = old_torch()
        kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        self.assertEqual(mod.get_cpp_torch_device_options("npu", False, False)[0], ["USE_NPU"])
        # Other devices still reach the original hook.
        self.assertEqual(mod.get_cpp_torch_device_options("cuda")[0], [" USE_CUDA"])
        self.assertEqual(mod.calls, ["cuda"])

    def test_registering_twice_is_safe(self):
        mod = old_torch()
        first = kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        hook = mod.get_cpp_torch_device_options
        again = kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        self.assertIs(first, again)
        self.assertIs(mod.get_cpp_torch_device_options, hook)  # not wrapped twice
        kbuild_inductor.register("npu", backend="ascendc", kbuild=KBUILD, extra_args=NO_TORCH,
                                 cpp_builder=mod)
        self.assertIs(mod.get_cpp_torch_device_options, hook)
        self.assertEqual(mod.get_cpp_torch_device_options("cuda")[0], [" USE_CUDA"])

    def test_new_torch_uses_the_registry(self):
        mod = new_torch()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cb = kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
            kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        self.assertEqual(caught, [])  # the same registration twice: no upstream warning
        self.assertIs(mod.registry["npu"], cb)
        self.assertEqual(mod.registry["npu"]("npu", True, True)[5], ["torch_npu", "runtime", "ascendcl"])
        self.assertFalse(hasattr(mod.get_cpp_torch_device_options, "_kbuild_callbacks"))

    def test_unregister_takes_kbuild_out_of_the_registry_and_gives_back_the_one_before(self):
        mod = new_torch()
        kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        kbuild_inductor.unregister("npu", cpp_builder=mod)
        self.assertNotIn("npu", mod.registry)  # it no longer answers for npu

        def theirs(device_type, aot_mode=False, compile_only=False):
            return (["THEIRS"], [], [], [], [], [], [])

        mod.register_cpp_device_options("npu", theirs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the stand-in's "already registered"
            kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
            kbuild_inductor.register("npu", "ascendc", kbuild=KBUILD, extra_args=NO_TORCH,
                                     cpp_builder=mod)  # replaces kbuild's own: still theirs before
        kbuild_inductor.unregister("npu", cpp_builder=mod)
        self.assertIs(mod.registry["npu"], theirs)

    def test_a_patch_made_with_functools_wraps_is_someone_elses_hook(self):
        # functools.wraps copies torch's __module__ onto the patch; __wrapped__ gives it away.
        mod = new_torch()
        original = mod.get_cpp_torch_device_options

        @functools.wraps(original)
        def patched(device_type, aot_mode=False, compile_only=False):
            if device_type == "npu":
                return (["PATCHED_NPU"], [], [], [], [], [], [])
            return original(device_type, aot_mode, compile_only)

        mod.get_cpp_torch_device_options = patched
        self.assertEqual(patched.__module__, mod.__name__)
        kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        self.assertEqual(mod.get_cpp_torch_device_options("npu")[0], ["USE_NPU"])
        self.assertEqual(mod.get_cpp_torch_device_options("cuda")[0], [" USE_CUDA"])

    def test_device_interface_is_preferred_and_attached_to_the_registered_one(self):
        mod, di = interface_torch()
        kbuild_inductor.register("cuda", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod,
                                 device_interface=di)
        cuda = di.get_interface_for_device("cuda")
        self.assertEqual(cuda.__name__, "CudaInterface")  # the device's own, not replaced
        self.assertEqual(cuda.get_cpp_device_options(False, False)[5], ["cuda"])
        self.assertEqual(mod.get_cpp_torch_device_options("cuda")[5], ["cuda"])
        self.assertEqual(mod.registry, {})  # the registry was not used
        self.assertFalse(hasattr(mod.get_cpp_torch_device_options, "_kbuild_callbacks"))
        with self.assertRaises(NotImplementedError):  # base class untouched
            di.DeviceInterface.get_cpp_device_options(False, False)
        kbuild_inductor.unregister("cuda", cpp_builder=mod, device_interface=di)
        self.assertNotIn("get_cpp_device_options", vars(cuda))
        self.assertEqual(mod.get_cpp_torch_device_options("cuda")[4:6], (["/torch/lib"], []))

    def counting_kbuild(self):
        """KBUILD behind a script that logs each `options` run to the returned file."""
        log, path = os.path.join(self.home.name, "runs.log"), os.path.join(self.home.name, "kb")
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\n[ "$1" = options ] && echo "$*" >> {log}\nexec {KBUILD} "$@"\n')
        os.chmod(path, 0o755)
        return path, log

    def test_landed_hook_asks_torch_npus_own_interface_for_kbuilds_full_answer(self):
        mod, di = interface_torch()
        npu_interface, _ = torch_npu_interface(di)
        kbuild, log = self.counting_kbuild()
        kbuild_inductor.register("npu", kbuild=kbuild, extra_args=NO_TORCH, cpp_builder=mod,
                                 device_interface=di)
        # torch_npu's class for npu and npu:0..31, with the method, not a class of kbuild's.
        for device in ["npu"] + [f"npu:{i}" for i in range(32)]:
            self.assertIs(di.get_interface_for_device(device), npu_interface)
        method = vars(npu_interface)["get_cpp_device_options"]
        self.assertIsInstance(method, staticmethod)  # called on the class, no device type
        self.assertEqual(list(inspect.signature(method.__func__).parameters),
                         ["aot_mode", "compile_only"])
        self.assertFalse(hasattr(mod.get_cpp_torch_device_options, "_kbuild_callbacks"))
        for aot in (False, True):
            for compile_only in (False, True):
                expected = kbuild_inductor.device_options("npu", aot, compile_only, kbuild=KBUILD,
                                                          extra_args=NO_TORCH)
                for _ in range(3):  # Inductor asks for every build
                    self.assertEqual(mod.get_cpp_torch_device_options("npu", aot, compile_only),
                                     expected)
        with open(log) as f:
            self.assertEqual(len(f.readlines()), 4)  # once per (aot, compile_only)
        # NotImplementedError falls through: cpu's interface has no method, xyz no interface.
        self.assertEqual(mod.get_cpp_torch_device_options("cpu")[0], [])
        self.assertEqual(mod.get_cpp_torch_device_options("xyz")[4], ["/torch/lib"])
        self.assertEqual(di.asked[-2:], ["cpu", "xyz"])

        kbuild_inductor.unregister("npu", cpp_builder=mod, device_interface=di)
        self.assertNotIn("get_cpp_device_options", vars(npu_interface))  # as it was
        self.assertIs(di.get_interface_for_device("npu"), npu_interface)
        self.assertEqual(mod.get_cpp_torch_device_options("npu")[0], [])  # the built-ins again

    def test_unregister_gives_the_class_its_own_method_back(self):
        mod, di = interface_torch()
        npu_interface, _ = torch_npu_interface(di)

        def own(aot_mode, compile_only):  # a torch_npu that answers itself
            return (["TORCH_NPU_OWN"], [], [], [], [], [], [])

        npu_interface.get_cpp_device_options = staticmethod(own)
        before = vars(npu_interface)["get_cpp_device_options"]
        for backend in (None, "mlir"):  # registering again with other settings
            kbuild_inductor.register("npu", backend, kbuild=KBUILD, extra_args=NO_TORCH,
                                     cpp_builder=mod, device_interface=di)
        self.assertEqual(mod.get_cpp_torch_device_options("npu")[0], [])  # mlir: none of its own
        kbuild_inductor.unregister("npu", cpp_builder=mod, device_interface=di)
        self.assertIs(vars(npu_interface)["get_cpp_device_options"], before)
        self.assertEqual(mod.get_cpp_torch_device_options("npu")[0], ["TORCH_NPU_OWN"])

    def test_torch_npu_registering_its_interface_after_kbuild_gets_the_method(self):
        for holds_the_function in (False, True):
            with self.subTest(torch_npu_imported_the_function_before_kbuild=holds_the_function):
                mod, di = interface_torch()
                original = di.register_interface_for_device
                npu_interface, register_interfaces = torch_npu_interface(di, register_now=False)
                if holds_the_function:  # `from ... import register_interface_for_device` earlier
                    register_interfaces = functools.partial(
                        lambda register: [register(d, npu_interface) for d in
                                          ["npu"] + [f"npu:{i}" for i in range(32)]], original)
                kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH,
                                         cpp_builder=mod, device_interface=di)
                with self.assertRaises(NotImplementedError):  # kbuild registered no class
                    di.get_interface_for_device("npu")
                expected = kbuild_inductor.device_options("npu", kbuild=KBUILD,
                                                          extra_args=NO_TORCH)
                self.assertEqual(mod.get_cpp_torch_device_options("npu"), expected)
                register_interfaces()  # torch_npu, once Dynamo is imported
                self.assertIs(di.get_interface_for_device("npu:31"), npu_interface)
                self.assertEqual(mod.get_cpp_torch_device_options("npu"), expected)
                self.assertEqual(mod.get_cpp_torch_device_options("cuda")[0], [" USE_CUDA"])
                self.assertEqual("get_cpp_device_options" in vars(npu_interface),
                                 not holds_the_function)
                if not holds_the_function:
                    self.assertEqual(npu_interface.get_cpp_device_options(False, False), expected)
                kbuild_inductor.unregister("npu", cpp_builder=mod, device_interface=di)
                self.assertNotIn("get_cpp_device_options", vars(npu_interface))
                self.assertIs(di.register_interface_for_device, original)
                self.assertEqual(mod.get_cpp_torch_device_options("npu")[0], [])

    def test_kbuild_wins_over_torch_npu_whatever_the_order(self):
        shapes = {"wrapper": lambda: (old_torch(), None), "registry": lambda: (new_torch(), None),
                  "device_interface": interface_torch}
        for shape, make in shapes.items():
            for torch_npu_first in (True, False):
                with self.subTest(shape=shape, torch_npu_first=torch_npu_first):
                    mod, di = make()
                    if torch_npu_first:
                        import_torch_npu(mod, di)
                    kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH,
                                             cpp_builder=mod, device_interface=di)
                    if not torch_npu_first:
                        import_torch_npu(mod, di)  # its import
                    import_torch_npu(mod, di)  # its backend loader, later
                    self.assertEqual(mod.get_cpp_torch_device_options("npu")[0], ["USE_NPU"])
                    # Every other device gets torch_npu's patch, as without kbuild.
                    self.assertEqual(mod.get_cpp_torch_device_options("cuda")[0],
                                     [" USE_CUDA", "TORCH_NPU_PATCHED", "TORCH_NPU_PATCHED"])
                    if di is not None:
                        npu = di.get_interface_for_device("npu")
                        self.assertEqual(npu.__name__, "NPUInterface")
                        self.assertEqual(npu.get_cpp_device_options(False, False)[0], ["USE_NPU"])

    def test_kbuild_errors_become_python_exceptions_with_its_message(self):
        os.environ.pop("ASCEND_HOME_PATH")
        mod = old_torch()
        kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            mod.get_cpp_torch_device_options("npu")
        self.assertIn("Could not find ASCEND_HOME_PATH in env. Please run set_env.sh first.",
                      str(ctx.exception))
        self.assertIn("exit code 4", str(ctx.exception))

    def test_backend_is_passed_and_validated(self):
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            kbuild_inductor.device_options("npu", backend="nope", kbuild=KBUILD, extra_args=NO_TORCH)
        self.assertIn("has no backend 'nope'", str(ctx.exception))

    def test_answers_are_cached_per_mode(self):
        mod = old_torch()
        cb = kbuild_inductor.register("npu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        first = cb("npu", False, False)
        os.environ.pop("ASCEND_HOME_PATH")  # would fail if kbuild ran again
        self.assertEqual(cb("npu", False, False), first)
        first[0].append("MUTATED")  # callers get copies
        self.assertEqual(cb("npu", False, False)[0], ["USE_NPU"])

    def test_missing_kbuild_fails_at_register(self):
        mod = old_torch()
        with self.assertRaises(kbuild_inductor.KbuildError):
            kbuild_inductor.register("npu", kbuild="/nonexistent/kbuild", cpp_builder=mod)
        self.assertEqual(mod.get_cpp_torch_device_options("npu")[0], [])  # nothing installed

    def test_a_kbuild_that_does_not_answer_version_fails_at_register(self):
        mod = old_torch()
        for kbuild in ("/bin/false", "/bin/true"):
            with self.subTest(kbuild=kbuild):
                with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
                    kbuild_inductor.register("npu", kbuild=kbuild, cpp_builder=mod)
                self.assertIn(f"{kbuild} --version", str(ctx.exception))
                self.assertEqual(mod.get_cpp_torch_device_options("npu")[0], [])  # not installed

    def test_without_torch_register_says_torch_is_not_installed(self):
        class NoTorch:  # what the import system says when no finder has torch
            @staticmethod
            def find_spec(name, path=None, target=None):
                if name.partition(".")[0] == "torch":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)

        torch_modules = [name for name in sys.modules if name.partition(".")[0] == "torch"]
        with mock.patch.dict(sys.modules), mock.patch.object(sys, "meta_path",
                                                             [NoTorch] + sys.meta_path):
            for name in torch_modules:
                del sys.modules[name]
            for call in (lambda: kbuild_inductor.register("npu", kbuild=KBUILD),
                         lambda: kbuild_inductor.unregister("npu")):
                with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
                    call()
                self.assertIn("torch is not installed", str(ctx.exception))

    def test_unregister_restores_the_original_for_that_device(self):
        mod = old_torch()
        kbuild_inductor.register("cuda", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        self.assertEqual(mod.get_cpp_torch_device_options("cuda")[5], ["cuda"])
        kbuild_inductor.unregister("cuda", cpp_builder=mod)
        self.assertEqual(mod.get_cpp_torch_device_options("cuda")[4], ["/torch/lib"])

    def fake_kbuild(self, body, version=True):
        """A stand-in kbuild: a shell script with `body`, answering --version
        as kbuild does unless `version` is False."""
        path = os.path.join(self.home.name, "fake-kbuild")
        answer = 'if [ "$1" = --version ]; then echo "kbuild 0 (fake)"; exit 0; fi\n'
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + (answer if version else "") + body)
        os.chmod(path, 0o755)
        return path

    def test_route_compiles_has_inductor_compile_through_kbuild(self):
        for name in ("KBUILD_CACHE_DIR", "KBUILD_CC_DIR"):
            os.environ.pop(name, None)
        config = types.SimpleNamespace(cpp=types.SimpleNamespace(cxx=(None, "g++")))
        kbuild_inductor.register("cpu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=old_torch(),
                                 route_compiles=True, inductor_config=config)
        link = os.path.join(self.home.name, "k", "kbuild-cc", "g++")
        self.assertEqual(config.cpp.cxx, (None, link))
        self.assertEqual(os.path.realpath(link), os.path.realpath(KBUILD))
        # Inductor checks the compiler with --version: g++'s own answer.
        version = subprocess.run([link, "--version"], capture_output=True, text=True, check=True)
        self.assertEqual(version.stdout, subprocess.run(["g++", "--version"], capture_output=True,
                                                        text=True, check=True).stdout)
        source = os.path.join(self.home.name, "k.cpp")
        with open(source, "w") as f:
            f.write('extern "C" int f() { return 1; }\n')
        compile_cmd = [link, source, "-O2", "-shared", "-fPIC", "-o", source + ".so"]
        env = dict(os.environ, KBUILD_VERBOSE="1")
        first = subprocess.run(compile_cmd, capture_output=True, text=True, env=env, check=False)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("cache: miss", first.stderr)
        second = subprocess.run(compile_cmd, capture_output=True, text=True, env=env, check=False)
        self.assertIn("cache: hit", second.stderr)
        self.assertTrue(os.path.isfile(source + ".so"))

    def test_route_compiles_refuses_a_compiler_it_cannot_stand_for_or_a_file_in_its_place(self):
        os.environ.pop("KBUILD_CC_DIR", None)
        config = types.SimpleNamespace(cpp=types.SimpleNamespace(cxx=(None, "/opt/intel/icpx")))
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            kbuild_inductor.register("cpu", kbuild=KBUILD, cpp_builder=old_torch(),
                                     route_compiles=True, inductor_config=config)
        self.assertIn("'/opt/intel/icpx' is not an executable file", str(ctx.exception))
        self.assertEqual(config.cpp.cxx, (None, "/opt/intel/icpx"))
        os.makedirs(os.path.join(self.home.name, "k", "kbuild-cc"), mode=0o700)
        with open(os.path.join(self.home.name, "k", "kbuild-cc", "c++"), "w") as f:
            f.write("not a link")
        config.cpp.cxx = "c++"
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            kbuild_inductor.register("cpu", kbuild=KBUILD, cpp_builder=old_torch(),
                                     route_compiles=True, inductor_config=config)
        self.assertIn("is not a link; remove it", str(ctx.exception))
        self.assertEqual(config.cpp.cxx, "c++")

    def wrapper_compiler(self, name, real="g++"):
        """A compiler named `name` that runs `real` with KBUILD_MARKER defined."""
        directory = os.path.join(self.home.name, "toolset", "bin")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\nexec {real} -DKBUILD_MARKER=1 "$@"\n')
        os.chmod(path, 0o755)
        return path

    def routed(self, cxx, device="cpu", cpp_builder=None):
        config = types.SimpleNamespace(cpp=types.SimpleNamespace(cxx=cxx))
        kbuild_inductor.register(device, kbuild=KBUILD, extra_args=NO_TORCH,
                                 cpp_builder=cpp_builder or old_torch(), route_compiles=True,
                                 inductor_config=config)
        return config

    def test_route_compiles_runs_the_configured_compiler_not_the_first_on_path(self):
        os.environ.pop("KBUILD_CC_DIR", None)
        os.environ["KBUILD_CC_COMPILER"] = "/earlier/value"
        links = os.path.join(self.home.name, "k", "kbuild-cc")
        wrapper = self.wrapper_compiler("x86_64-conda-linux-gnu-c++")
        mod = old_torch()
        config = self.routed((None, wrapper), cpp_builder=mod)
        self.assertEqual(config.cpp.cxx, (None, os.path.join(links, "g++")))  # gcc, for Inductor
        self.assertEqual(os.environ["KBUILD_CC_COMPILER"], wrapper)
        # The routed compile ran the wrapper: the marker is defined.
        source = os.path.join(self.home.name, "marker.cpp")
        with open(source, "w") as f:
            f.write('#ifndef KBUILD_MARKER\n#error no marker\n#endif\n'
                    'extern "C" int f() { return 1; }\n')
        run = subprocess.run([config.cpp.cxx[1], source, "-shared", "-fPIC", "-o", source + ".so"],
                             capture_output=True, text=True, check=False)
        self.assertEqual(run.returncode, 0, run.stderr)
        kbuild_inductor.unregister("cpu", cpp_builder=mod)
        self.assertEqual(config.cpp.cxx, (None, wrapper))
        self.assertEqual(os.environ["KBUILD_CC_COMPILER"], "/earlier/value")

    def test_route_compiles_resolves_a_name_on_path_and_picks_the_link_by_kind(self):
        os.environ.pop("KBUILD_CC_DIR", None)
        os.environ.pop("KBUILD_CC_COMPILER", None)
        links = os.path.join(self.home.name, "k", "kbuild-cc")
        clang = self.wrapper_compiler("clang++-17", real="clang++")
        other = self.wrapper_compiler("icpx")
        # A copy of kbuild named g++ first on PATH, and the links dir, are skipped.
        decoy = os.path.join(self.home.name, "decoy")
        os.makedirs(decoy)
        os.symlink(os.path.realpath(KBUILD), os.path.join(decoy, "g++"))
        real_gxx, real_cxx = shutil.which("g++"), shutil.which("c++")
        os.environ["PATH"] = os.pathsep.join([links, decoy, os.path.dirname(clang),
                                              os.environ["PATH"]])
        mod = old_torch()
        config = self.routed("g++", cpp_builder=mod)
        self.assertEqual(config.cpp.cxx, (None, os.path.join(links, "g++")))
        self.assertEqual(os.environ["KBUILD_CC_COMPILER"], real_gxx)
        again = self.routed(config.cpp.cxx, device="npu", cpp_builder=mod)  # already routed
        self.assertEqual(again.cpp.cxx, (None, os.path.join(links, "g++")))
        self.assertEqual(os.environ["KBUILD_CC_COMPILER"], real_gxx)
        for cxx, link, compiler in (("clang++-17", "clang++", clang), ((None, other), "c++", other),
                                    ("c++", "c++", real_cxx)):
            with self.subTest(cxx=cxx):
                config = self.routed(cxx)
                self.assertEqual(config.cpp.cxx, (None, os.path.join(links, link)))
                self.assertEqual(os.environ["KBUILD_CC_COMPILER"], compiler)
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            self.routed("no-such-g++")
        self.assertIn("'no-such-g++' not found on PATH", str(ctx.exception))

    def test_route_compiles_refuses_links_dir_under_a_directory_others_can_write(self):
        shared = os.path.join(self.home.name, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)  # anyone could rename kbuild-cc away and plant a g++
        os.environ["KBUILD_CC_DIR"] = os.path.join(shared, "kbuild-cc")
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            self.routed((None, "g++"))
        self.assertIn(f"{shared}, which", str(ctx.exception))
        os.chmod(shared, 0o1777)  # sticky, as /tmp: only the owner renames what is in it
        config = self.routed((None, "g++"))
        self.assertEqual(config.cpp.cxx, (None, os.path.join(shared, "kbuild-cc", "g++")))

    def test_route_compiles_refuses_links_dir_another_user_can_write_through_an_acl(self):
        if not shutil.which("setfacl"):
            self.skipTest("setfacl not installed (Debian package acl)")
        # An access ACL shows in the mode's group bits (its mask), which are
        # refused; a default ACL does not, and what is made in it is theirs
        # to write (a link replaced by their g++).
        links = os.path.join(self.home.name, "acl-links")
        os.mkdir(links, 0o700)
        other = str(os.geteuid() + 4242)
        subprocess.run(["setfacl", "-d", "-m", f"u:{other}:rwx", links], check=True)
        self.assertEqual(os.stat(links).st_mode & 0o777, 0o700)
        os.environ["KBUILD_CC_DIR"] = links
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            self.routed((None, "g++"))
        self.assertIn(f"{links} has an ACL that lets uid {other} (a default ACL) write it",
                      str(ctx.exception))
        # Above it, a directory with a default ACL for another user.
        subprocess.run(["setfacl", "-b", links], check=True)
        parent = os.path.join(self.home.name, "acl-parent")
        os.mkdir(parent, 0o755)
        subprocess.run(["setfacl", "-d", "-m", f"u:{other}:rwx", parent], check=True)
        os.environ["KBUILD_CC_DIR"] = os.path.join(parent, "links")
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            self.routed((None, "g++"))
        self.assertIn(f"{parent}, which has an ACL that lets uid {other}", str(ctx.exception))
        subprocess.run(["setfacl", "-b", parent], check=True)
        os.rmdir(os.path.join(parent, "links"))  # made by the refused call, with the ACL
        config = self.routed((None, "g++"))
        self.assertEqual(config.cpp.cxx, (None, os.path.join(parent, "links", "g++")))

    def recording_kbuild(self):
        """A stand-in kbuild that logs its arguments and DISABLE_AOTI_PATCH."""
        log = os.path.join(self.home.name, "calls")
        fake = self.fake_kbuild(f'echo "$* aoti=${{DISABLE_AOTI_PATCH-unset}}" >> {log}\n'
                                'echo \'{"definitions": ["X"]}\'\n')
        return fake, lambda: open(log).read().splitlines() if os.path.exists(log) else []

    def test_npu_follows_the_process_backend_and_aoti_patch_cached_per_key(self):
        fake, calls = self.recording_kbuild()
        for name in ("TORCHINDUCTOR_NPU_BACKEND", "DISABLE_AOTI_PATCH"):
            os.environ.pop(name, None)
        cb = kbuild_inductor.register("npu", kbuild=fake, cpp_builder=old_torch())
        cb("npu")
        os.environ["TORCHINDUCTOR_NPU_BACKEND"] = "mlir"
        cb("npu")
        cb("npu")  # cached
        config = types.ModuleType("torch._inductor.config")
        config.npu_backend = "dvm"  # torch_npu's option wins over the variable
        with mock.patch.dict(sys.modules, {"torch._inductor.config": config}):
            cb("npu", True, False)
        os.environ["DISABLE_AOTI_PATCH"] = "1"
        cb("npu")
        cb("cuda")  # not npu: no process backend
        self.assertEqual(calls(), [
            "options --device npu --json aoti=unset",
            "options --device npu --json --backend mlir aoti=unset",
            "options --device npu --json --backend dvm --aot aoti=unset",
            "options --device npu --json --backend mlir aoti=1",
            "options --device cuda --json aoti=1",
        ])
        explicit = kbuild_inductor.register("npu", "ascendc", kbuild=fake, cpp_builder=old_torch())
        explicit("npu")
        self.assertEqual(calls()[-1], "options --device npu --json --backend ascendc aoti=1")

    def test_a_hanging_kbuild_times_out(self):
        # It leaves a child behind that holds the output pipe: ended too.
        fake = self.fake_kbuild("sleep 60 &\nexec sleep 60\n")
        start = time.monotonic()
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            kbuild_inductor.device_options("npu", kbuild=fake, timeout=1)
        self.assertLess(time.monotonic() - start, 20)
        self.assertIn("did not answer within 1 s", str(ctx.exception))
        self.assertEqual(kbuild_inductor.DEFAULT_TIMEOUT_S, 120)
        # register() passes it on to every call.
        mod = old_torch()
        cb = kbuild_inductor.register("npu", kbuild=fake, timeout=0.5, cpp_builder=mod)
        with self.assertRaises(kbuild_inductor.KbuildError):
            cb("npu")
        # Its --version check too.
        fake = self.fake_kbuild("sleep 60 &\nexec sleep 60\n", version=False)
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            kbuild_inductor.register("npu", kbuild=fake, timeout=0.5, cpp_builder=old_torch())
        self.assertIn("did not answer within 0.5 s", str(ctx.exception))

    def test_output_of_the_wrong_shape_is_an_error_not_split_into_characters(self):
        for printed in ('{"cflags": "-O3"}', '{"cflags": [1]}', '[]', '{"cflags": [["O3"]]}',
                        '{"cflags": null}'):
            fake = self.fake_kbuild("cat <<'JSON'\n" + printed + "\nJSON\n")
            with self.subTest(printed=printed):
                with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
                    kbuild_inductor.device_options("npu", kbuild=fake)
                self.assertIn("not the 7 lists", str(ctx.exception))


# --- Stand-ins for torch._inductor.cpu_vec_isa: the shapes kbuild_inductor's ISA hook meets.
# Each is a small text run as a module whose globals hold `torch` and `config`
# (a stand-in file for a child Python imports them). The probe programs are
# placeholders: the hook tells them apart by the class attribute holding them.

CPU_VEC_ISA_COMMON = """
import dataclasses, functools, os, platform, warnings

own_checks = []        # (class, probe text, flags) of each check Inductor itself ran
forbid_own = set()     # classes whose own check fails the test: kbuild can answer them

class VecISA:
    _bit_width = 0
    _macro = []
    _arch_flags = ""
    _avx_code = "// stand-in: the vectorized exp probe"

    def bit_width(self):
        return self._bit_width

    def build_macro(self):
        return self._macro

    def build_arch_flags(self):
        return self._arch_flags

    def __hash__(self):
        return hash(str(self))

    def check_build(self, code):
        if type(self).__name__ in forbid_own:
            raise AssertionError(f"Inductor's own check_build ran for {self} ({code!r}) "
                                 "while kbuild could answer")
        own_checks.append((type(self).__name__, code, self.build_arch_flags()))
        return PROBE_RESULT

    def __bool__(self):
        return self._bool_impl(config.cpp.vec_isa_ok)

    @functools.lru_cache(None)
    def _bool_impl(self, vec_isa_ok):
        if vec_isa_ok is not None:
            return vec_isa_ok
        return self.check_build(VecISA._avx_code)

PROBE_RESULT = True

@dataclasses.dataclass
class VecAVX2(VecISA):
    _bit_width = 256
    _macro = ["CPU_CAPABILITY_AVX2"]
    _arch_flags = "-mavx2 -mfma -mf16c"
    def __str__(self):
        return "avx2"
    __hash__ = VecISA.__hash__

@dataclasses.dataclass
class VecNEON(VecISA):
    _bit_width = 128
    _macro = ["CPU_CAPABILITY_NEON", "AT_BUILD_ARM_VEC256_WITH_SLEEF"]
    def __str__(self):
        return "asimd"
    __hash__ = VecISA.__hash__

class InvalidVecISA(VecISA):
    _macro = [""]
    def __str__(self):
        return "INVALID_VEC_ISA"
    def __bool__(self):
        return False
    __hash__ = VecISA.__hash__

invalid_vec_isa = InvalidVecISA()

def get_isa_from_cpu_capability(capability, vec_isa_list, invalid_vec_isa):
    names = {"default": "INVALID_VEC_ISA", "zvector": "zvector", "vsx": "vsx", "avx2": "avx2",
             "avx512": "avx512"}
    if capability in names:
        if names[capability] == "INVALID_VEC_ISA":
            return invalid_vec_isa
        for vec_isa in vec_isa_list:
            if names[capability] in str(vec_isa):
                return vec_isa
    if capability:
        warnings.warn(f"ignoring invalid value for ATEN_CPU_CAPABILITY {capability}")
    return vec_isa_list[0]

@functools.lru_cache(None)
def valid_vec_isa_list():
    if platform.machine() != "x86_64":
        return []
    cpu = x86_isa_checker()
    return [isa for isa in supported_vec_isa_list
            if all(flag in cpu for flag in str(isa).split()) and isa]

def pick_vec_isa():
    valid = valid_vec_isa_list()
    if not valid:
        return invalid_vec_isa
    if config.cpp.simdlen is None:
        return get_isa_from_cpu_capability(os.getenv("ATEN_CPU_CAPABILITY"), valid,
                                           invalid_vec_isa)
    return next((isa for isa in valid if isa.bit_width() == config.cpp.simdlen), invalid_vec_isa)
"""

AVX512_FLAGS = "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma"

# torch 2.6: no VNNI class; VecAMX derives from VecAVX512; no bf16 or fp16 check.
CPU_VEC_ISA_2_6 = CPU_VEC_ISA_COMMON + f"""
@dataclasses.dataclass
class VecAVX512(VecISA):
    _bit_width = 512
    _macro = ["CPU_CAPABILITY_AVX512"]
    _arch_flags = "{AVX512_FLAGS}"
    def __str__(self):
        return "avx512"
    __hash__ = VecISA.__hash__

@dataclasses.dataclass
class VecAMX(VecAVX512):
    _arch_flags = VecAVX512._arch_flags + " -mamx-tile -mamx-bf16 -mamx-int8"
    _amx_code = "// stand-in: the AMX probe"
    def __str__(self):
        return super().__str__() + " amx_tile"
    __hash__ = VecISA.__hash__
    @functools.lru_cache(None)
    def __bool__(self):
        return bool(super().__bool__() and self.check_build(VecAMX._amx_code)
                    and torch.cpu._init_amx())

def x86_isa_checker():
    found = [("avx2", torch.cpu._is_avx2_supported()), ("avx512", torch.cpu._is_avx512_supported()),
             ("amx_tile", torch.cpu._is_amx_tile_supported())]
    return [name for name, supported in found if supported]

supported_vec_isa_list = [VecAMX(), VecAVX512(), VecAVX2(), VecNEON()]
"""

# torch 2.11: VecAMX(VecAVX512VNNI(VecAVX512)); bf16 and fp16 checks with
# the flag added to _arch_flags while they run.
CPU_VEC_ISA_2_11 = CPU_VEC_ISA_COMMON + f"""
@dataclasses.dataclass
class VecAVX512(VecISA):
    _bit_width = 512
    _macro = ["CPU_CAPABILITY_AVX512"]
    _arch_flags = "{AVX512_FLAGS}"
    _is_avx512_bf16_supported = False
    _avx512_bf16_code = "// stand-in: the AVX512-BF16 probe"
    def __str__(self):
        return "avx512"
    __hash__ = VecISA.__hash__
    @functools.lru_cache(None)
    def __bool__(self):
        if not super().__bool__():
            return False
        if torch.cpu._is_avx512_bf16_supported():
            base = self._arch_flags
            self._arch_flags += " -mavx512bf16"
            self._is_avx512_bf16_supported = self.check_build(self._avx512_bf16_code)
            self._arch_flags = base
        return True
    def build_arch_flags(self):
        return self._arch_flags + (" -mavx512bf16" if self._is_avx512_bf16_supported else "")

@dataclasses.dataclass
class VecAVX512VNNI(VecAVX512):
    _arch_flags = VecAVX512._arch_flags + " -mavx512vnni -mavx512vl"
    _avx512_vnni_code = "// stand-in: the AVX512-VNNI probe"
    def __str__(self):
        return super().__str__() + " avx512_vnni"
    __hash__ = VecISA.__hash__
    @functools.lru_cache(None)
    def __bool__(self):
        return bool(super().__bool__() and torch.cpu._is_vnni_supported()
                    and self.check_build(self._avx512_vnni_code))
    def build_arch_flags(self):
        return self._arch_flags

@dataclasses.dataclass
class VecAMX(VecAVX512VNNI):
    _arch_flags = VecAVX512VNNI._arch_flags + " -mamx-tile -mamx-bf16 -mamx-int8"
    _is_amx_fp16_supported = False
    _amx_code = "// stand-in: the AMX probe"
    _amx_fp16_code = "// stand-in: the AMX-FP16 probe"
    def __str__(self):
        return super().__str__() + " amx_tile"
    __hash__ = VecISA.__hash__
    @functools.lru_cache(None)
    def __bool__(self):
        if not (super().__bool__() and self.check_build(VecAMX._amx_code)
                and torch.cpu._init_amx()):
            return False
        if torch.cpu._is_amx_fp16_supported():
            base = self._arch_flags
            self._arch_flags += " -mamx-fp16"
            self._is_amx_fp16_supported = self.check_build(VecAMX._amx_fp16_code)
            self._arch_flags = base
        return True
    def build_arch_flags(self):
        return (self._arch_flags + (" -mavx512bf16" if self._is_avx512_bf16_supported else "")
                + (" -mamx-fp16" if self._is_amx_fp16_supported else ""))

def x86_isa_checker():
    avx512 = torch.cpu._is_avx512_supported()
    found = [("avx2", torch.cpu._is_avx2_supported()), ("avx512", avx512),
             ("avx512_vnni", avx512 and torch.cpu._is_vnni_supported()),
             ("amx_tile", torch.cpu._is_amx_tile_supported())]
    return [name for name, supported in found if supported]

supported_vec_isa_list = [VecAMX(), VecAVX512VNNI(), VecAVX512(), VecAVX2(), VecNEON()]
"""

# torch 2.14: 2.11's classes; check_build builds, then loads the probe in a
# child (_probe_load); SVE takes its width as a field.
CPU_VEC_ISA_2_14 = CPU_VEC_ISA_2_11 + """
def _check_build_then_load(self, code):
    return _built(self, code) and self._probe_load("probe.so")

def _probe_load(self, path):
    return PROBE_RESULT

_built = VecISA.check_build
VecISA.check_build = _check_build_then_load
VecISA._probe_load = _probe_load

@dataclasses.dataclass
class VecSVE(VecISA):
    _bit_width: int = 256
    def __str__(self):
        return "asimd"
    __hash__ = VecISA.__hash__

supported_vec_isa_list = [VecAMX(), VecAVX512VNNI(), VecAVX512(), VecAVX2(), VecNEON(),
                          VecSVE(256)]
"""


# torch 2.13: the probe is loaded in a child without `import torch` on Linux,
# torch's lib/ first on LD_LIBRARY_PATH (PR 183515). Shaped like 2.13.0's
# torch/_inductor/cpu_vec_isa.py (ykamranali/OmniAI-Personal-Assistant @
# 3e01c59c, backend/venv/Lib/site-packages/torch/: VecISA._avx_py_load,
# _build_probe_env, _probe_load, check_build = build, then _probe_load).
# PROBE_RESULT is whether a probe builds, PLAIN_LOADS whether it loads.
CPU_VEC_ISA_2_13 = CPU_VEC_ISA_2_11 + """
PLAIN_LOADS = True
loads = []  # (how, class) of each load Inductor itself tried

VecISA._avx_py_load = '''
import sys
if sys.platform != "linux":
    import torch  # noqa: F401
from ctypes import cdll
cdll.LoadLibrary("__lib_path__")
'''

def _build_probe_env():
    return {"LD_LIBRARY_PATH": os.path.join(os.path.dirname(torch.__file__), "lib")}

def _probe_load(self, output_path):
    loads.append(("plain", type(self).__name__))
    return PLAIN_LOADS

def _check_build_then_load(self, code):
    return _built(self, code) and self._probe_load("probe.so")

_built = VecISA.check_build
VecISA.check_build = _check_build_then_load
VecISA._build_probe_env = staticmethod(_build_probe_env)
VecISA._probe_load = _probe_load
"""

# PR 189900, as issue 45 describes it (its source is in no stored release
# file): the plain load first; when it fails, again in a child that imports
# torch. IMPORT_LOADS is whether the probe loads after the import.
CPU_VEC_ISA_RETRY = CPU_VEC_ISA_2_13 + """
IMPORT_LOADS = True

VecISA._avx_py_load_after_import = '''
import torch  # noqa: F401
from ctypes import cdll
cdll.LoadLibrary("__lib_path__")
'''

def _probe_load_or_retry(self, output_path):
    if _plain_load(self, output_path):
        return True
    loads.append(("import", type(self).__name__))
    return IMPORT_LOADS

_plain_load = VecISA._probe_load
VecISA._probe_load = _probe_load_or_retry
"""


# PR 189900 as Debian's torch 2.14.1 has it (python3-torch 2.14.1+dfsg-1,
# torch/_inductor/cpu_vec_isa.py, read in the sid chroot of
# docs/conformance.md): one loader script, whose `import torch` on Linux is
# indented under the `except OSError:` of the plain load, and a _probe_load
# that runs it once. IMPORT_LOADS: whether the probe loads after the import.
CPU_VEC_ISA_RETRY_2_14_1 = CPU_VEC_ISA_2_13 + """
IMPORT_LOADS = True

VecISA._avx_py_load = '''
import sys
if sys.platform != "linux":
    import torch  # noqa: F401
from ctypes import cdll
try:
    cdll.LoadLibrary("__lib_path__")
except OSError:
    if sys.platform != "linux":
        raise
    import torch  # noqa: F401
    cdll.LoadLibrary("__lib_path__")
'''

def _probe_load_in_one_script(self, output_path):
    if _plain_load(self, output_path):
        return True
    loads.append(("import", type(self).__name__))
    return IMPORT_LOADS

_plain_load = VecISA._probe_load
VecISA._probe_load = _probe_load_in_one_script
"""


def cpu_flags():
    """The running CPU's flags (torch.cpu reads the same through cpuinfo)."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.partition(":")[2].split())
    return set()


def stand_in_torch_cpu():
    flags = cpu_flags()
    has = lambda *names: lambda: all(n in flags for n in names)  # noqa: E731
    return types.SimpleNamespace(
        _is_avx2_supported=has("avx2"),
        _is_avx512_supported=has("avx512f", "avx512dq", "avx512vl", "avx512bw"),
        _is_vnni_supported=has("avx512_vnni"), _is_avx512_bf16_supported=has("avx512_bf16"),
        _is_amx_tile_supported=has("amx_tile"), _is_amx_fp16_supported=has("amx_fp16"),
        _init_amx=lambda: True)


VEC_H = """#pragma once
namespace at::vec {
template <class T> struct Vectorized {
  explicit Vectorized(T v) : v_(v) {}
  Vectorized exp() const { return *this; }
  void store(T* out) const { out[0] = v_; }
  T v_;
};
}  // namespace at::vec
"""


# ATen's vec header whose exp() needs a symbol no library gives: the probe
# builds, and does not load (as Debian's torch with a system SLEEF lacking it).
VEC_H_UNLOADABLE = VEC_H.replace(
    "Vectorized exp() const { return *this; }",
    "Vectorized exp() const { return Vectorized(kbuild_no_such_expf(v_)); }").replace(
    "namespace at::vec {", 'extern "C" float kbuild_no_such_expf(float);\nnamespace at::vec {')


def make_torch_root(root, version, vec_h=VEC_H):
    """A torch package dir kbuild's ISA probes can build and load against:
    version.py, ATen's vec headers reduced to what the probe uses (`vec_h`),
    and the libraries the probe links."""
    for sub in ("include/ATen/cpu/vec", "include/torch/csrc/api/include", "lib"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    files = {"__init__.py": "", "version.py": f"__version__ = '{version}'\n",
             "include/ATen/cpu/vec/functional.h": "#pragma once\n",
             "include/ATen/cpu/vec/vec.h": vec_h}
    for name, text in files.items():
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    for lib in ("torch", "torch_cpu", "torch_python", "c10"):
        subprocess.run(["g++", "-shared", "-fPIC", "-x", "c++", "-", "-o",
                        os.path.join(root, "lib", f"lib{lib}.so")],
                       input=f'extern "C" int kbuild_fake_{lib}() {{ return 1; }}\n', text=True,
                       check=True)
    return root


SHAPES = {"2.6": CPU_VEC_ISA_2_6, "2.11": CPU_VEC_ISA_2_11, "2.14": CPU_VEC_ISA_2_14}


def cpu_vec_isa_standin(shape, torch_root, version, cxx=(None, "g++")):
    """A cpu_vec_isa module of `shape`, its torch the stand-in at `torch_root`."""
    module = types.ModuleType("cpu_vec_isa")
    module.torch = types.SimpleNamespace(__file__=os.path.join(torch_root, "__init__.py"),
                                         __version__=version, cpu=stand_in_torch_cpu())
    module.config = types.SimpleNamespace(cpp=types.SimpleNamespace(cxx=cxx, simdlen=None,
                                                                    vec_isa_ok=None))
    exec(compile(shape, f"<cpu_vec_isa {version}>", "exec"), module.__dict__)  # noqa: S102
    return module


class IsaHookTest(unittest.TestCase):
    """kbuild answers Inductor's ISA checks (issue 24): the stand-ins' own
    check_build fails the test when it runs for a class kbuild can answer."""

    @classmethod
    def setUpClass(cls):
        cls.roots = tempfile.TemporaryDirectory()
        # One cache for the class: each line's probes are built once.
        cls.cache = os.path.join(cls.roots.name, "cache")
        cls.torch = {v: make_torch_root(os.path.join(cls.roots.name, v, "torch"), v + ".0")
                     for v in ("2.6", "2.11", "2.14", "2.10")}

    @classmethod
    def tearDownClass(cls):
        cls.roots.cleanup()

    def setUp(self):
        BridgeTest.setUp(self)
        os.environ["KBUILD_CACHE_DIR"] = self.cache
        for name in ("ATEN_CPU_CAPABILITY", "KBUILD_REMOTE_CACHE", "TORCH_INDUCTOR_INSTALL_GXX",
                     "KBUILD_CC_DIR", "KBUILD_CC_COMPILER"):
            os.environ.pop(name, None)

    tearDown = BridgeTest.tearDown

    def standin(self, line, version=None, forbid=True):
        version = version or line + ".0"
        module = cpu_vec_isa_standin(SHAPES[line], self.torch[version.rpartition(".")[0]],
                                     version)
        if forbid:
            module.forbid_own.update(_isa.KNOWN_CLASSES)
        return module

    def kbuild_isa(self, module):
        """`kbuild isa --json` for the stand-in's torch, asked directly."""
        run = subprocess.run([KBUILD, "isa", "--json", "--cxx", "g++", "--torch-root",
                              os.path.dirname(module.torch.__file__)],
                             capture_output=True, text=True, check=False)
        self.assertEqual(run.returncode, 0, run.stderr)
        return json.loads(run.stdout)

    def picked(self, module):
        """(valid list, pick) as Inductor gives them, and the warnings said."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            valid, pick = module.valid_vec_isa_list(), module.pick_vec_isa()
        return valid, pick, [str(w.message) for w in caught
                             if str(w.message).startswith("kbuild_inductor")]

    def test_each_line_is_answered_by_kbuild_and_never_by_inductors_own_check(self):
        for line in SHAPES:
            with self.subTest(line=line):
                module = self.standin(line)
                hook = kbuild_inductor.register_isa(kbuild=KBUILD, cpu_vec_isa=module)
                valid, pick, said = self.picked(module)
                answer = self.kbuild_isa(module)
                self.assertEqual(said, [])
                self.assertEqual(module.own_checks, [])
                self.assertEqual(hook.kbuild_runs, 1)
                self.assertTrue(answer["torch"]["profile_matches_line"], answer["torch"])
                self.assertEqual([str(isa) for isa in valid],
                                 [entry["inductor"] for entry in answer["valid"]])
                self.assertEqual(str(pick), answer["pick"]["inductor"] if answer["pick"]
                                 else "INVALID_VEC_ISA")
                self.assertTrue(valid, "this CPU has AVX2 at least")
                # Inductor's own objects, with the flags kbuild would build with.
                for isa in valid:
                    self.assertTrue(any(isa is own for own in module.supported_vec_isa_list))
                self.assertEqual(pick.build_arch_flags().split(),
                                 answer["pick"]["flags"].split())
                kinds = {entry["isa"] for entry in answer["valid"]}
                if line == "2.6":
                    self.assertNotIn("avx512_vnni", kinds)  # no such class in 2.6
                if "avx512_vnni" in cpu_flags() and "amx_tile" not in cpu_flags():
                    self.assertEqual(answer["pick"]["isa"],
                                     "avx512" if line == "2.6" else "avx512_vnni")

    def new_probe_standin(self, shape, root, forbid, plain_loads=True, import_loads=None):
        """A cpu_vec_isa of the 2.13 or retry shape on `root` (a 2.14.0 torch:
        kbuild has no 2.13 profile here, and the loader is the line's, not the
        profile's)."""
        module = cpu_vec_isa_standin(shape, root, "2.14.0")
        module.PLAIN_LOADS = plain_loads
        if import_loads is not None:
            module.IMPORT_LOADS = import_loads
        if forbid:
            module.forbid_own.update(_isa.KNOWN_CLASSES)
        return module

    def test_the_new_probe_every_candidate_builds_but_none_loads(self):
        root = make_torch_root(os.path.join(self.home.name, "unloadable", "torch"), "2.14.0",
                               VEC_H_UNLOADABLE)
        cases = [(CPU_VEC_ISA_2_13, None), (CPU_VEC_ISA_RETRY, False), (CPU_VEC_ISA_RETRY, True),
                 (CPU_VEC_ISA_RETRY_2_14_1, False), (CPU_VEC_ISA_RETRY_2_14_1, True)]
        for shape, import_loads in cases:
            retry = shape is not CPU_VEC_ISA_2_13
            with self.subTest(retry=retry, import_loads=import_loads,
                              debian_2_14_1=shape is CPU_VEC_ISA_RETRY_2_14_1):
                inductor = self.new_probe_standin(shape, root, False, False, import_loads)
                alone_valid, alone_pick, _ = self.picked(inductor)
                module = self.new_probe_standin(shape, root, not retry, False, import_loads)
                self.assertEqual(_isa.probe_loader(module), _isa.RETRY if retry else _isa.PLAIN)
                hook = kbuild_inductor.register_isa(kbuild=KBUILD, cpu_vec_isa=module)
                valid, pick, said = self.picked(module)
                self.assertEqual([str(isa) for isa in valid], [str(isa) for isa in alone_valid])
                self.assertEqual(str(pick), str(alone_pick))
                self.assertEqual(self.kbuild_isa(module)["valid"], [])  # kbuild loaded each one
                self.assertEqual(hook.kbuild_runs, 1)
                if not retry:  # kbuild's load is 2.13's: its answer, no own check
                    self.assertEqual((said, module.own_checks, str(pick)),
                                     ([], [], "INVALID_VEC_ISA"))
                    continue
                # Only the retry can tell: Inductor's own check, with one warning.
                self.assertEqual(len(said), 1, said)
                self.assertIn("loads a probe that did not load again after `import torch`",
                              said[0])
                self.assertIn(("import", "VecAVX2"), module.loads)
                self.assertEqual(bool(valid), import_loads)

    def test_the_new_probe_that_loads_is_kbuilds_answer_with_or_without_the_retry(self):
        for shape in (CPU_VEC_ISA_2_13, CPU_VEC_ISA_RETRY, CPU_VEC_ISA_RETRY_2_14_1):
            with self.subTest(retry=shape is not CPU_VEC_ISA_2_13):
                module = self.new_probe_standin(shape, self.torch["2.14"], True)
                kbuild_inductor.register_isa(kbuild=KBUILD, cpu_vec_isa=module)
                valid, pick, said = self.picked(module)
                answer = self.kbuild_isa(module)
                self.assertEqual((said, module.own_checks, module.loads), ([], [], []))
                self.assertEqual([str(isa) for isa in valid],
                                 [entry["inductor"] for entry in answer["valid"]])
                self.assertEqual(str(pick), answer["pick"]["inductor"])

    def test_the_loader_is_told_from_inductors_own_classes(self):
        self.assertEqual(_isa.probe_loader(self.standin("2.11", forbid=False)), _isa.IMPORT)
        self.assertEqual(_isa.probe_loader(self.standin("2.14", forbid=False)), _isa.PLAIN)

    def test_aten_cpu_capability_handled_as_inductor_is_answered_by_kbuild(self):
        for capability in ("avx2", "avx512", "default", "zvector", "nonsense"):
            with self.subTest(capability=capability):
                os.environ["ATEN_CPU_CAPABILITY"] = capability
                module = self.standin("2.11")
                kbuild_inductor.register_isa(kbuild=KBUILD, cpu_vec_isa=module)
                valid, pick, said = self.picked(module)
                answer = self.kbuild_isa(module)
                self.assertEqual(said, [])
                self.assertEqual(module.own_checks, [])
                self.assertEqual(str(pick), answer["pick"]["inductor"] if answer["pick"]
                                 else "INVALID_VEC_ISA")
                self.assertEqual(answer["aten_cpu_capability"]["value"], capability)

    def assert_falls_back(self, module, reason, **register):
        """Inductor's own check runs, and one warning says `reason`."""
        register.setdefault("kbuild", KBUILD)
        kbuild_inductor.register_isa(cpu_vec_isa=module, **register)
        valid, _, said = self.picked(module)
        self.assertTrue(module.own_checks, "Inductor's own check did not run")
        self.assertEqual(len(said), 1, said)
        self.assertIn(reason, said[0])
        self.assertEqual([str(isa) for isa in valid][-1], "avx2")  # the stand-in's own: all pass
        return said[0]

    def test_without_kbuild_inductors_own_check_runs_with_one_warning(self):
        self.assert_falls_back(self.standin("2.11", forbid=False), "/nonexistent/kbuild not found",
                               kbuild="/nonexistent/kbuild")

    def test_a_torch_line_without_a_profile_is_inductors_own_check(self):
        # 2.10: no release file was found, so no profile of its own.
        self.assert_falls_back(self.standin("2.6", version="2.10.0", forbid=False),
                               "kbuild has no profile for torch 2.10.0")

    def test_aten_cpu_capability_handled_otherwise_is_inductors_own_check(self):
        os.environ["ATEN_CPU_CAPABILITY"] = "avx2"
        module = self.standin("2.11", forbid=False)
        own = module.get_isa_from_cpu_capability

        # A torch that reads avx2 as "default": it picks no vectorization where
        # kbuild picks avx2, on every CPU (dropping avx2 to the list's first
        # would agree with kbuild on a CPU without AVX-512).
        def without_avx2(capability, vec_isa_list, invalid_vec_isa):
            return own("default" if capability == "avx2" else capability, vec_isa_list,
                       invalid_vec_isa)

        module.get_isa_from_cpu_capability = without_avx2
        self.assert_falls_back(module, "ATEN_CPU_CAPABILITY=avx2: Inductor's handling picks")

    def test_a_compiler_other_than_kbuilds_is_inductors_own_check(self):
        # A kbuild that says it probed with another g++ than Inductor's.
        fake = os.path.join(self.home.name, "other-compiler-kbuild")
        with open(fake, "w") as f:
            f.write(f'#!/bin/sh\n[ "$1" = isa ] || exec {KBUILD} "$@"\n'
                    f'{KBUILD} "$@" | sed \'s|"path": "[^"]*"|"path": "/opt/other/bin/g++"|\'\n')
        os.chmod(fake, 0o755)
        self.assert_falls_back(self.standin("2.11", forbid=False),
                               "kbuild probed with /opt/other/bin/g++, Inductor compiles with",
                               kbuild=fake)
        module = self.standin("2.11", forbid=False)
        module.config.cpp.cxx = (None, "no-such-g++")
        self.assert_falls_back(module, "Inductor's compiler (cpp.cxx = (None, 'no-such-g++')) "
                                       "was not found")

    def test_an_isa_class_kbuild_does_not_know_is_inductors_own_check_alone(self):
        module = self.standin("2.11")
        # Named avx2 so that Inductor checks it on every CPU these tests run on
        # (its list skips a class whose name the CPU's flags lack).
        exec(textwrap.dedent("""
            @dataclasses.dataclass
            class VecAVX2VNNI(VecAVX2):
                def __str__(self):
                    return "avx2"
                __hash__ = VecISA.__hash__
            supported_vec_isa_list.insert(0, VecAVX2VNNI())
            """), module.__dict__)  # noqa: S102
        said = self.assert_falls_back(module, "VecAVX2VNNI (avx2) is an ISA class kbuild does "
                                              "not know")
        self.assertEqual({name for name, _, _ in module.own_checks}, {"VecAVX2VNNI"})
        self.assertIn("Inductor's own ISA check runs", said)

    def test_a_failing_kbuild_is_inductors_own_check(self):
        fake = os.path.join(self.home.name, "failing-kbuild")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\necho "kbuild: error[usage]: no" >&2\nexit 2\n')
        os.chmod(fake, 0o755)
        self.assert_falls_back(self.standin("2.14", forbid=False), "kbuild isa failed (exit "
                                                                   "code 2: kbuild: error[usage]",
                               kbuild=fake)

    def test_another_compiler_later_is_asked_of_kbuild_again(self):
        module = self.standin("2.11")
        hook = kbuild_inductor.register_isa(kbuild=KBUILD, cpu_vec_isa=module)
        self.assertTrue(module.VecAVX2())  # a new object: its own (cached) check
        wrapper = os.path.join(self.home.name, "x86_64-linux-gnu-g++")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nexec g++ "$@"\n')
        os.chmod(wrapper, 0o755)
        module.config.cpp.cxx = (None, wrapper)
        module.VecISA._bool_impl.cache_clear()
        self.assertTrue(module.VecAVX2())
        self.assertEqual(hook.kbuild_runs, 2)
        self.assertEqual(module.own_checks, [])

    def test_unregister_isa_gives_inductor_its_own_check_back(self):
        module = self.standin("2.11", forbid=False)
        own = module.VecISA.check_build
        hook = kbuild_inductor.register_isa(kbuild=KBUILD, cpu_vec_isa=module)
        self.assertIs(kbuild_inductor.register_isa(kbuild=KBUILD, cpu_vec_isa=module), hook)
        self.assertIsNot(module.VecISA.check_build, own)
        kbuild_inductor.unregister_isa(cpu_vec_isa=module)
        self.assertIs(module.VecISA.check_build, own)
        self.assertTrue(module.VecAVX2())
        self.assertEqual(len(module.own_checks), 1)

    def test_register_installs_the_isa_hook_and_the_last_unregister_removes_it(self):
        module, mod = self.standin("2.11"), old_torch()
        own = vars(module.VecISA)["check_build"]
        for device in ("cpu", "npu"):
            kbuild_inductor.register(device, kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod,
                                     cpu_vec_isa=module)
        self.assertEqual(str(module.pick_vec_isa()), self.kbuild_isa(module)["pick"]["inductor"])
        kbuild_inductor.unregister("cpu", cpp_builder=mod, cpu_vec_isa=module)
        self.assertIsNot(vars(module.VecISA)["check_build"], own)  # npu is still registered
        kbuild_inductor.unregister("npu", cpp_builder=mod, cpu_vec_isa=module)
        self.assertIs(vars(module.VecISA)["check_build"], own)
        # A stand-in cpp_builder without a cpu_vec_isa: no ISA hook at all.
        kbuild_inductor.register("cpu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        self.assertIs(vars(module.VecISA)["check_build"], own)

STANDIN_TORCH = {
    # torch runs the torch.backends entry points at the end of its import.
    "torch/__init__.py": """
        import os
        from importlib.metadata import entry_points
        if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") != "0":
            for entry_point in entry_points(group="torch.backends"):
                entry_point.load()()
        """,
    "torch/_inductor/__init__.py": "",
    "torch/_inductor/cpp_builder.py": """
        def get_cpp_torch_device_options(device_type, aot_mode=False, compile_only=False):
            return ([], [], [], [], ["/torch/lib"], [], [])
        """,
}


class AutoloadAndDoctorTest(unittest.TestCase):
    """Through a child Python: torch's entry points run at `import torch`."""

    setUp = BridgeTest.setUp
    tearDown = BridgeTest.tearDown

    def site(self):
        site = os.path.join(self.home.name, "site")
        files = dict(STANDIN_TORCH)
        names = [e.name for e in metadata.entry_points(group="torch.backends")]
        if "kbuild" not in names:  # a source tree: the wheel's entry point, stood in
            files["kbuild_standin-0.dist-info/METADATA"] = "Name: kbuild-standin\nVersion: 0\n"
            files["kbuild_standin-0.dist-info/entry_points.txt"] = (
                "[torch.backends]\nkbuild = kbuild_inductor:autoload\n")
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(site, name)), exist_ok=True)
            with open(os.path.join(site, name), "w") as f:
                f.write(textwrap.dedent(text))
        return site

    def python(self, code, **env):
        paths = [self.site()] + [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
        full = dict(os.environ, PYTHONPATH=":".join(paths), KBUILD_INDUCTOR_KBUILD=KBUILD, **env)
        return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                              text=True, timeout=120, check=False)

    NPU_OPTIONS = ("import json, torch; from torch._inductor import cpp_builder; "
                   "print(json.dumps(cpp_builder.get_cpp_torch_device_options('npu')))")

    def test_autoload_registers_the_named_devices_when_torch_is_imported(self):
        run = self.python(self.NPU_OPTIONS, KBUILD_INDUCTOR_DEVICES="npu:triton")
        self.assertEqual(run.returncode, 0, run.stderr)
        options = json.loads(run.stdout)
        self.assertEqual(options[0], ["USE_NPU"])
        self.assertIn("/opt/ascend/include", options[1])

    def test_autoload_does_nothing_without_the_variable(self):
        os.environ.pop("KBUILD_INDUCTOR_DEVICES", None)
        run = self.python(self.NPU_OPTIONS)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)[0], [])
        self.assertEqual(run.stderr, "")

    def test_autoload_warns_about_a_bad_entry_and_registers_the_rest(self):
        run = self.python(self.NPU_OPTIONS, KBUILD_INDUCTOR_DEVICES="NPU!,npu,cuda:no-such")
        self.assertEqual(run.returncode, 0, run.stderr)  # import torch still works
        self.assertEqual(json.loads(run.stdout)[0], ["USE_NPU"])
        self.assertIn("'NPU!' is not DEVICE or DEVICE:BACKEND", run.stderr)
        self.assertIn("'cuda:no-such' is not DEVICE or DEVICE:BACKEND", run.stderr)

    ISA_PICK = textwrap.dedent("""
        import json, torch
        from torch._inductor import cpu_vec_isa
        hooked = hasattr(cpu_vec_isa, "_kbuild_isa_hook")
        if hooked:  # kbuild answers: Inductor's own check must not run
            cpu_vec_isa.forbid_own.update(["VecAVX2", "VecAVX512", "VecAVX512VNNI", "VecAMX"])
        valid = [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]
        print(json.dumps({"hooked": hooked, "valid": valid, "own": len(cpu_vec_isa.own_checks),
                          "pick": str(cpu_vec_isa.pick_vec_isa())}))
        """)

    def isa_site(self):
        """The stand-in torch, with 2.11's cpu_vec_isa and what kbuild's
        probes need (headers, libraries, version.py) in its package dir."""
        site = self.site()
        torch = os.path.join(site, "torch")
        with open(os.path.join(torch, "__init__.py")) as f:
            init = f.read()
        make_torch_root(torch, "2.11.0")
        files = {
            "__init__.py": "__version__ = '2.11.0'\n" + init,
            # This CPU's answers, as torch.cpu would give them.
            "cpu.py": "".join(f"def {name}():\n    return {answer()!r}\n"
                              for name, answer in vars(stand_in_torch_cpu()).items()),
            "_inductor/config.py": "class cpp:\n    cxx = (None, 'g++')\n    simdlen = None\n"
                                   "    vec_isa_ok = None\n",
            "_inductor/cpu_vec_isa.py": "import torch\nimport torch.cpu\n"
                                        "from torch._inductor import config\n" + CPU_VEC_ISA_2_11,
        }
        for name, text in files.items():
            with open(os.path.join(torch, name), "w") as f:
                f.write(text)
        return site

    def test_autoload_with_kbuild_inductor_isa_answers_inductors_isa_check(self):
        os.environ.pop("KBUILD_INDUCTOR_DEVICES", None)
        site = self.isa_site()
        self.site = lambda: site
        run = self.python(self.ISA_PICK, KBUILD_INDUCTOR_ISA="1")
        self.assertEqual(run.returncode, 0, run.stderr)
        answered = json.loads(run.stdout)
        self.assertEqual(answered["own"], 0)
        self.assertTrue(answered["hooked"])
        self.assertNotIn("kbuild_inductor", run.stderr)
        self.assertEqual(answered["valid"][-1], "avx2")
        # Without the variable (and no device) nothing is hooked: Inductor's own check.
        own = self.python(self.ISA_PICK)
        self.assertEqual(own.returncode, 0, own.stderr)
        inductor = json.loads(own.stdout)
        self.assertFalse(inductor["hooked"])
        self.assertGreater(inductor["own"], 0)
        self.assertEqual((inductor["valid"], inductor["pick"]),
                         (answered["valid"], answered["pick"]))  # the fake torch's probes all build

    def doctor(self, *args, **env):
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
        full = dict(os.environ, PYTHONPATH=":".join(paths), **env)
        return subprocess.run([sys.executable, "-m", "kbuild_inductor", "doctor", *args],
                              env=full, capture_output=True, text=True, timeout=120, check=False)

    def test_doctor_runs_kbuild_doctor_for_the_bridge_devices_with_this_python(self):
        direct = subprocess.run([KBUILD, "doctor", "--device", "npu", "--python", sys.executable],
                                capture_output=True, text=True, timeout=120, check=False)
        run = self.doctor("--kbuild", KBUILD, KBUILD_INDUCTOR_DEVICES="npu")
        self.assertEqual(run.returncode, direct.returncode, run.stdout + run.stderr)
        self.assertTrue(run.stdout.startswith("== kbuild doctor for npu\n"), run.stdout)
        self.assertIn(direct.stdout, run.stdout)

    def test_doctor_without_a_device_says_how_to_name_one(self):
        os.environ.pop("KBUILD_INDUCTOR_DEVICES", None)
        run = self.doctor("--kbuild", KBUILD)
        self.assertEqual(run.returncode, 2)
        self.assertIn("no device to check; name one (doctor npu) or set KBUILD_INDUCTOR_DEVICES",
                      run.stderr)



# torch_npu that patches lazily (Ascend/pytorch master 9e73e708ab93 and branch
# v2.12.0: torch_npu/utils/_dynamo.py `_install_dynamo_post_import_trigger`,
# `_DynamoPostImportFinder`, `_lazy_dynamo_setup`,
# `_dynamo_register_interface_for_device`; the C++-builder patch comes with the
# backend loader, `_NpuBackendScope.__enter__` -> `_lazy_inductor_setup`, at
# the first compile), with torch 2.15's landed hook (see interface_torch).
LAZY_TORCH_NPU = {
    "torch/_dynamo/__init__.py": "",
    "torch/_dynamo/device_interface.py": """
        class DeviceInterface:
            @staticmethod
            def get_cpp_device_options(aot_mode, compile_only):
                raise NotImplementedError
        class CpuInterface(DeviceInterface):
            pass
        device_interfaces = {}
        def register_interface_for_device(device, device_interface):
            device_interfaces[device] = device_interface
        def get_interface_for_device(device):
            if not device_interfaces:
                register_interface_for_device("cpu", CpuInterface)
            if device in device_interfaces:
                return device_interfaces[device]
            raise NotImplementedError(f"No interface for device {device}")
        """,
    "torch/_inductor/cpp_builder.py": """
        from torch._dynamo.device_interface import get_interface_for_device
        def get_cpp_torch_device_options(device_type, aot_mode=False, compile_only=False):
            try:
                options = get_interface_for_device(device_type).get_cpp_device_options(
                    aot_mode, compile_only)
            except NotImplementedError:
                options = None
            if options is not None:
                return options
            return ([" USE_CUDA"] if device_type == "cuda" else [], [], [], [], ["/torch/lib"],
                    [], [])
        """,
    "torch_npu/__init__.py": """
        import importlib.util, sys
        import torch
        events = []
        def _lazy_dynamo_setup():
            from torch._dynamo.device_interface import (DeviceInterface,
                                                        register_interface_for_device)
            global NpuInterface
            class NpuInterface(DeviceInterface):
                pass
            register_interface_for_device("npu", NpuInterface)
            for i in range(32):
                register_interface_for_device(f"npu:{i}", NpuInterface)
            events.append("dynamo setup")
        class _Loader:
            def __init__(self, loader):
                self._loader = loader
            def create_module(self, spec):
                return self._loader.create_module(spec)
            def exec_module(self, module):
                self._loader.exec_module(module)
                _lazy_dynamo_setup()
        class _Finder:
            def find_spec(self, fullname, path=None, target=None):
                if fullname != "torch._dynamo":
                    return None
                sys.meta_path.remove(self)
                spec = importlib.util.find_spec(fullname)
                spec.loader = _Loader(spec.loader)
                return spec
        if "torch._dynamo" in sys.modules:
            _lazy_dynamo_setup()
        else:
            sys.meta_path.insert(0, _Finder())
        def first_compile():
            # The triton loader's patch: its own options for every device.
            from torch._inductor import cpp_builder
            original = cpp_builder.get_cpp_torch_device_options
            def patched(device_type, aot_mode=False, compile_only=False):
                if device_type == "npu":
                    return (["TORCH_NPU_OWN"], [], [], [], [], ["torch_npu"], [])
                result = original(device_type, aot_mode, compile_only)
                return (result[0] + ["TORCH_NPU_PATCHED"],) + tuple(result[1:])
            patched.__module__ = "torch_npu._inductor.cpp_builder"
            cpp_builder.get_cpp_torch_device_options = patched
            events.append("compile")
        """,
}

LAZY_CHECK = """
import json, os, sys
{before}
import kbuild_inductor
import torch._dynamo
from torch._inductor import cpp_builder
from torch._dynamo import device_interface
torch_npu.first_compile()
npu = device_interface.get_interface_for_device("npu")
print(json.dumps({{
    "events": torch_npu.events,
    "npu": cpp_builder.get_cpp_torch_device_options("npu", False, True),
    "cuda": cpp_builder.get_cpp_torch_device_options("cuda"),
    "class": npu.__name__, "same": all(device_interface.get_interface_for_device(f"npu:{{i}}")
                                        is npu for i in range(32)),
    "method": "get_cpp_device_options" in vars(npu),
    "direct": kbuild_inductor.device_options("npu", False, True, extra_args={extra},
                                             kbuild=os.environ["KBUILD_INDUCTOR_KBUILD"])}}))
"""


class LazyTorchNpuTest(unittest.TestCase):
    """register() and autoload with a torch_npu that sets itself up only once
    Dynamo is imported, and patches Inductor's C++ builds at the first compile."""

    setUp = BridgeTest.setUp
    tearDown = BridgeTest.tearDown
    python = AutoloadAndDoctorTest.python

    def site(self):
        site = AutoloadAndDoctorTest.site(self)
        for name, text in LAZY_TORCH_NPU.items():
            os.makedirs(os.path.dirname(os.path.join(site, name)), exist_ok=True)
            with open(os.path.join(site, name), "w") as f:
                f.write(textwrap.dedent(text))
        return site

    def check(self, run):
        self.assertEqual(run.returncode, 0, run.stderr)
        said = json.loads(run.stdout)
        self.assertEqual(said["events"], ["dynamo setup", "compile"])
        self.assertEqual(said["npu"], said["direct"])  # kbuild's answer, whole
        self.assertEqual(said["npu"][0], ["USE_NPU"])
        self.assertEqual(said["cuda"][0], [" USE_CUDA", "TORCH_NPU_PATCHED"])  # as without kbuild
        self.assertEqual((said["class"], said["same"], said["method"]),
                         ("NpuInterface", True, True))
        self.assertNotIn("kbuild_inductor", run.stderr)

    def test_register_after_torch_npu_that_patches_once_dynamo_is_imported(self):
        os.environ.pop("KBUILD_INDUCTOR_DEVICES", None)
        before = ("import torch, torch_npu, kbuild_inductor\n"
                  "assert 'torch._dynamo' not in sys.modules\n"
                  f"kbuild_inductor.register('npu', kbuild={KBUILD!r}, extra_args={NO_TORCH!r}, isa=False)")
        self.check(self.python(LAZY_CHECK.format(before=before, extra=NO_TORCH)))

    def test_autoload_with_torch_npu_imported_before_or_after_torch(self):
        for before in ("import torch_npu, torch", "import torch, torch_npu"):
            with self.subTest(before=before):
                self.check(self.python(LAZY_CHECK.format(before=before, extra=()),
                                       KBUILD_INDUCTOR_DEVICES="npu"))


def record_daemon(pid, what):
    """As tests/support's record_daemon: PID.STARTTIME in
    $KBUILD_TEST_DAEMONS_DIR, so that scripts/check-daemons blames it if the
    suite leaves it running."""
    directory = os.environ.get("KBUILD_TEST_DAEMONS_DIR")
    if not directory:
        return
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    start = stat[stat.rindex(")") + 1:].split()[19]
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{pid}.{start}"), "w") as f:
        f.write(what + "\n")


# One "machine": a fresh process with its own HOME (its own kbuild cache),
# Inductor's routed compile of SOURCE through a stand-in cpp_builder and
# config, as Inductor runs it: cxx, source, flags, -o OUTPUT.
MACHINE = r"""
import os, subprocess, sys, types
sys.path.insert(0, os.environ["BRIDGE_TESTS"])
import kbuild_inductor, test_kbuild_inductor as t
config = types.SimpleNamespace(cpp=types.SimpleNamespace(cxx=(None, os.environ["COUNTING_GXX"])))
kbuild_inductor.register("cpu", kbuild=t.KBUILD, extra_args=t.NO_TORCH, cpp_builder=t.old_torch(),
                         route_compiles=True, inductor_config=config,
                         remote_cache=os.environ["FLEET_REDIS"], isa=False)
source, output = sys.argv[1], sys.argv[2]
r = subprocess.run([config.cpp.cxx[1], source, "-O2", "-shared", "-fPIC", "-o", output],
                   capture_output=True, text=True)
sys.stderr.write(r.stderr)
sys.exit(r.returncode)
"""


class FleetTest(unittest.TestCase):
    """Routed compiles on one real Redis: what machine A compiled, a fresh
    machine B gets from it; eight machines compiling one new kernel at once
    compile it once (the lease)."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.env = dict(os.environ)
        # A unix socket, no TCP port: a free port found here could be bound
        # by another test's server first, and that one would answer.
        sock = os.path.join(self.dir.name, "redis.sock")
        self.redis = subprocess.Popen(
            ["/usr/bin/redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm",
             "700", "--save", "", "--appendonly", "no", "--dir", self.dir.name],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        record_daemon(self.redis.pid, "redis-server (bridge FleetTest)")
        for _ in range(200):
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(sock)
                break
            except OSError:
                time.sleep(0.05)
        self.url = "unix://" + sock
        self.count = os.path.join(self.dir.name, "compiler-runs")
        self.gxx = os.path.join(self.dir.name, "bin", "g++")
        os.makedirs(os.path.dirname(self.gxx))
        with open(self.gxx, "w") as f:  # counts the compiles (not kbuild's questions to g++)
            f.write('#!/bin/sh\ncase "$*" in *-print-search-dirs*|*"-E -v -x c++ /dev/null"*) ;;'
                    f' *--version*) ;; *) echo run >> "{self.count}";; esac\nexec g++ "$@"\n')
        os.chmod(self.gxx, 0o755)

    def tearDown(self):
        self.redis.terminate()
        self.redis.wait()
        os.environ.clear()
        os.environ.update(self.env)
        self.dir.cleanup()

    def runs(self):
        if not os.path.exists(self.count):
            return 0
        with open(self.count) as f:
            return len(f.read().splitlines())

    def machine(self, name, source, output):
        home = os.path.join(self.dir.name, name)
        os.makedirs(home, exist_ok=True)
        env = dict(os.environ, HOME=home, XDG_CACHE_HOME=home + "/k", XDG_CONFIG_HOME=home + "/c",
                   KBUILD_CC_DIR=home + "/links", COUNTING_GXX=self.gxx, FLEET_REDIS=self.url,
                   BRIDGE_TESTS=os.path.dirname(os.path.abspath(__file__)))
        for variable in ("KBUILD_CACHE_DIR", "KBUILD_REMOTE_CACHE", "KBUILD_CONFIG_PATH"):
            env.pop(variable, None)
        return subprocess.Popen([sys.executable, "-c", MACHINE, source, output], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def kernel(self, name, value):
        source = os.path.join(self.dir.name, "inductor", name + ".cpp")  # one path on every machine
        os.makedirs(os.path.dirname(source), exist_ok=True)
        with open(source, "w") as f:
            f.write(f'extern "C" int f() {{ return {value}; }}\n')
        return source

    def value(self, library):
        import ctypes  # noqa: PLC0415
        return ctypes.CDLL(library).f()

    def test_a_fresh_machine_gets_what_another_compiled_from_the_shared_redis(self):
        source = self.kernel("k", 41)
        outputs = []
        for name in ("a", "b"):
            output = os.path.join(self.dir.name, name + ".so")
            done = self.machine(name, source, output)
            _, err = done.communicate(timeout=120)
            self.assertEqual(done.returncode, 0, err)
            outputs.append(output)
        self.assertEqual(self.runs(), 1)  # B compiled nothing
        with open(outputs[0], "rb") as a, open(outputs[1], "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual(self.value(outputs[1]), 41)

    def test_eight_machines_compiling_one_kernel_at_once_compile_it_once(self):
        source = self.kernel("k8", 8)
        outputs = [os.path.join(self.dir.name, f"m{i}.so") for i in range(8)]
        machines = [self.machine(f"m{i}", source, out) for i, out in enumerate(outputs)]
        for m in machines:
            _, err = m.communicate(timeout=240)
            self.assertEqual(m.returncode, 0, err)
        self.assertEqual(self.runs(), 1)
        for out in outputs:
            self.assertEqual(self.value(out), 8)

    def test_remote_cache_needs_routed_compiles_and_a_redis_address(self):
        home = os.path.join(self.dir.name, "h")
        os.environ.update(HOME=home, XDG_CACHE_HOME=home + "/k", KBUILD_CC_DIR=home + "/links")
        os.environ.pop("KBUILD_REMOTE_CACHE", None)
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            kbuild_inductor.register("cpu", kbuild=KBUILD, extra_args=NO_TORCH,
                                     cpp_builder=old_torch(), remote_cache=self.url)
        self.assertIn("pass route_compiles=True", str(ctx.exception))
        with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
            kbuild_inductor.register("cpu", kbuild=KBUILD, extra_args=NO_TORCH,
                                     cpp_builder=old_torch(), route_compiles=True,
                                     remote_cache="http://:hunter2@cache:80")
        self.assertIn("is not a Redis address", str(ctx.exception))
        self.assertNotIn("hunter2", str(ctx.exception))
        config = types.SimpleNamespace(cpp=types.SimpleNamespace(cxx=(None, "g++")))
        mod = old_torch()
        kbuild_inductor.register("cpu", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod,
                                 route_compiles=True, inductor_config=config,
                                 remote_cache=self.url, isa=False)
        self.assertEqual(os.environ.get("KBUILD_REMOTE_CACHE"), self.url)
        kbuild_inductor.unregister("cpu", cpp_builder=mod)
        self.assertIsNone(os.environ.get("KBUILD_REMOTE_CACHE"))
        self.assertEqual(config.cpp.cxx, (None, "g++"))

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    import test_counts  # noqa: E402 (beside the other tests' support, not an installed module)
    test_counts.main()
