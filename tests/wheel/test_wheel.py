"""pip install kbuild: builds the wheel from this source tree offline
(Debian's meson-python through /usr/bin/python3, no build isolation),
installs it into a fresh venv and uses it from there: kbuild on the venv's
PATH reading the wheel's device files, a real build with a load check
(kbuild-load-check beside kbuild), `import kbuild_inductor` finding the
wheel's kbuild, and the bridge tests run against the installed copy.

The wheel is compiled as the build tree is (scripts/build-wheel
--compile-like): with scripts/setup's ccache, its compiles are the cache's
hits from the build tree's; its Meson build directory is kept beside the
build tree (BUILD-wheel), so a second run only rebuilds what changed."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

SOURCE_ROOT = os.environ["KBUILD_SOURCE_ROOT"]
BUILD_ROOT = os.environ["KBUILD_BUILD_ROOT"]
SYSTEM_PYTHON = "/usr/bin/python3"  # the one Debian's python3-mesonpy belongs to
KERNEL = 'extern "C" int kbuild_wheel_kernel(int x) { return x + 1; }\n'


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, timeout=1500, check=False,
                          **kwargs)


class WheelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kbuild-wheel-")
        dist = os.path.join(cls.tmp, "dist")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KBUILD_"))}
        built = run([SYSTEM_PYTHON, os.path.join(SOURCE_ROOT, "scripts", "build-wheel"), "-o", dist,
                     "--compile-like", BUILD_ROOT], env=env)
        wheels = glob.glob(os.path.join(dist, "kbuild-*.whl"))
        if built.returncode != 0 or len(wheels) != 1:
            shutil.rmtree(cls.tmp)
            raise AssertionError(f"scripts/build-wheel failed ({built.returncode}):\n"
                                 f"{built.stdout[-4000:]}\n{built.stderr[-4000:]}")
        cls.wheel = wheels[0]
        cls.venv = os.path.join(cls.tmp, "venv")
        made = run([SYSTEM_PYTHON, "-m", "venv", cls.venv], env=env)
        installed = made.returncode == 0 and run(
            [cls.bin("python"), "-m", "pip", "install", "--no-index", "--no-deps", cls.wheel],
            env=env)
        if not installed or installed.returncode != 0:
            shutil.rmtree(cls.tmp)
            raise AssertionError(f"venv or pip install failed: {made.stderr}"
                                 f"{installed and installed.stderr}")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @classmethod
    def bin(cls, name):
        return os.path.join(cls.venv, "bin", name)

    def setUp(self):
        self.work = tempfile.mkdtemp(dir=self.tmp)
        # The venv as a user has it: its bin first on PATH, nothing of the
        # source or build tree reachable.
        self.env = {"PATH": os.path.join(self.venv, "bin") + ":/usr/bin:/bin",
                    "HOME": self.work, "XDG_CACHE_HOME": os.path.join(self.work, "cache"),
                    "XDG_CONFIG_HOME": os.path.join(self.work, "config"),
                    "ASCEND_HOME_PATH": "/opt/ascend", "LANG": "C.UTF-8"}

    def test_the_wheel_holds_both_programs_the_device_files_and_the_package(self):
        self.assertTrue(os.path.basename(self.wheel).endswith("-py3-none-linux_x86_64.whl"),
                        self.wheel)
        names = zipfile.ZipFile(self.wheel).namelist()
        data = os.path.basename(self.wheel).split("-")[0] + "-" + \
            os.path.basename(self.wheel).split("-")[1] + ".data/"
        for name in ("scripts/kbuild", "scripts/kbuild-load-check", "scripts/kbuild-http",
                     "data/share/kbuild/devices/npu.json",
                     "data/share/bash-completion/completions/kbuild"):
            self.assertIn(data + name, names)
        for name in ("__init__.py", "__main__.py", "_autoload.py", "_isa.py", "_route.py",
                     "_shapes.py"):
            self.assertIn("kbuild_inductor/" + name, names)
        entry_points = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        text = zipfile.ZipFile(self.wheel).read(entry_points[0]).decode()
        self.assertIn("[torch.backends]\nkbuild = kbuild_inductor:autoload", text)

    def test_kbuild_on_the_venv_path_reads_the_wheels_device_files(self):
        version = run(["kbuild", "--version"], env=self.env, cwd=self.work)
        self.assertEqual(version.returncode, 0, version.stderr)
        self.assertIn(os.path.join(self.venv, "share", "kbuild", "devices"), version.stdout)
        with open(os.path.join(self.work, "kernel.cpp"), "w") as f:
            f.write(KERNEL)  # a dry run checks the source, as the build would
        dry = run(["kbuild", "--device", "npu", "--no-torch", "--dry-run", "kernel.cpp", "-o",
                   "kernel.so"], env=self.env, cwd=self.work)
        self.assertEqual(dry.returncode, 0, dry.stderr)
        self.assertIn("-D USE_NPU", dry.stdout)
        self.assertIn("-I/opt/ascend/include", dry.stdout)

    def test_a_build_with_a_load_check_runs_from_the_venv(self):
        with open(os.path.join(self.work, "kernel.cpp"), "w") as f:
            f.write(KERNEL)
        built = run(["kbuild", "--no-torch", "--check-load", "kernel.cpp", "-o", "kernel.so"],
                    env=self.env, cwd=self.work)
        self.assertEqual(built.returncode, 0, built.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.work, "kernel.so")))

    def test_the_installed_bridge_finds_the_wheels_kbuild_without_path(self):
        env = dict(self.env, PATH="/usr/bin:/bin")
        found = run([self.bin("python"), "-c",
                     "import kbuild_inductor as k; print(k.__file__); print(k.find_kbuild())"],
                    env=env, cwd=self.work)
        self.assertEqual(found.returncode, 0, found.stderr)
        module, kbuild = found.stdout.splitlines()
        self.assertTrue(module.startswith(os.path.join(self.venv, "lib")), module)
        self.assertEqual(kbuild, self.bin("kbuild"))

    def test_the_bridge_tests_pass_against_the_installed_copy(self):
        env = dict(self.env, KBUILD_BIN=self.bin("kbuild"))
        tests = os.path.join(SOURCE_ROOT, "tests", "bridge", "test_kbuild_inductor.py")
        ran = run([self.bin("python"), tests], env=env, cwd=self.work)
        self.assertEqual(ran.returncode, 0, ran.stdout[-6000:] + ran.stderr[-2000:])
        self.assertIn("OK", ran.stdout.splitlines()[-1])


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    import test_counts  # noqa: E402 (beside the other tests' support, not an installed module)
    test_counts.main()
