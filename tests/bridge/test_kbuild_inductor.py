"""The PyTorch bridge against stand-ins for torch._inductor.cpp_builder (no
torch needed) and the real kbuild binary."""
import os
import sys
import tempfile
import time
import types
import unittest
import warnings

import kbuild_inductor

KBUILD = os.environ["KBUILD_BIN"]
NO_TORCH = ("--no-torch",)


def old_torch():
    """A cpp_builder without a registry (torch 2.11): only the hook."""
    mod = types.ModuleType("cpp_builder")
    mod.calls = []

    def get_cpp_torch_device_options(device_type, aot_mode=False, compile_only=False):
        mod.calls.append(device_type)
        return ([" USE_CUDA"] if device_type == "cuda" else [], [], [], [], ["/torch/lib"], [], [])

    mod.get_cpp_torch_device_options = get_cpp_torch_device_options
    return mod


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

    def test_unregister_restores_the_original_for_that_device(self):
        mod = old_torch()
        kbuild_inductor.register("cuda", kbuild=KBUILD, extra_args=NO_TORCH, cpp_builder=mod)
        self.assertEqual(mod.get_cpp_torch_device_options("cuda")[5], ["cuda"])
        kbuild_inductor.unregister("cuda", cpp_builder=mod)
        self.assertEqual(mod.get_cpp_torch_device_options("cuda")[4], ["/torch/lib"])

    def fake_kbuild(self, body):
        """A stand-in kbuild: a shell script with `body`."""
        path = os.path.join(self.home.name, "fake-kbuild")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, 0o755)
        return path

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

    def test_output_of_the_wrong_shape_is_an_error_not_split_into_characters(self):
        for printed in ('{"cflags": "-O3"}', '{"cflags": [1]}', '[]', '{"cflags": [["O3"]]}',
                        '{"cflags": null}'):
            fake = self.fake_kbuild("cat <<'JSON'\n" + printed + "\nJSON\n")
            with self.subTest(printed=printed):
                with self.assertRaises(kbuild_inductor.KbuildError) as ctx:
                    kbuild_inductor.device_options("npu", kbuild=fake)
                self.assertIn("not the 7 lists", str(ctx.exception))


if __name__ == "__main__":
    unittest.main(testRunner=unittest.TextTestRunner(stream=sys.stdout, verbosity=2))
