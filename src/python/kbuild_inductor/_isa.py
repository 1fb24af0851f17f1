"""Inductor's ISA check answered by kbuild (register_isa).

Inductor's cpu_vec_isa asks each candidate VecISA whether it is usable
(`bool(isa)`), which runs `VecISA.check_build(code)` one to five times: it
builds a probe library and loads it in a new Python interpreter, so a fresh
process pays tens of seconds. kbuild runs the same checks (`kbuild isa
--json`: its own probe programs, built with the line's macros and flags,
loaded by kbuild-load-check with torch's lib/ on the library path) and keeps
their answers per compiler, torch and CPU.

The hook replaces `VecISA.check_build` and nothing else: the CPU's flags
(torch.cpu), ATEN_CPU_CAPABILITY, cpp.simdlen, cpp.vec_isa_ok and AMX's
_init_amx stay Inductor's, and every object is Inductor's own. A check is
answered by kbuild only when kbuild ran that very check: the same class
(VecAVX2, VecAVX512, VecAVX512VNNI, VecAMX, named as Inductor names it), the
same probe (told by Inductor's own code strings), the same macros and flags
(build_macro(), build_arch_flags()), for the compiler Inductor compiles with
(cpp.cxx) and the running torch, with a profile of its own line. Otherwise
Inductor's own check runs, with one warning per hook: no kbuild, kbuild
failing, a torch line kbuild has no profile for, another compiler, an
unknown class or probe, a check that timed out, and ATEN_CPU_CAPABILITY set
when Inductor's handling of it picks otherwise than kbuild.

How Inductor loads a probe that built differs by line (probe_loader(), told
from Inductor's own VecISA): up to 2.12 a child Python imports torch, then
loads it; 2.13 (PR 183515) loads it in a child without importing torch, with
torch's lib/ first on LD_LIBRARY_PATH, which is kbuild-load-check's load;
with PR 189900 a probe that does not load so is loaded again after
`import torch`. kbuild loads without the import and never retries, so on a
line with the retry a check kbuild failed (a probe that built but did not
load would pass Inductor's retry when torch's import supplies what it lacks)
is Inductor's own check, with the one warning; a check kbuild passed is
kbuild's answer (Inductor's first load passes too).
"""

import ast
import json
import os
import sys
import sysconfig
import threading
import warnings

# Inductor's classes whose checks kbuild runs, and kbuild's names for them.
KNOWN_CLASSES = {"VecAVX2": "avx2", "VecAVX512": "avx512", "VecAVX512VNNI": "avx512_vnni",
                 "VecAMX": "amx"}
# Inductor's probe programs, by the class attribute holding each, with
# kbuild's names for them.
PROBES = (("_avx_code", "vectorized"), ("_avx512_bf16_code", "avx512_bf16"),
          ("_avx512_vnni_code", "avx512_vnni"), ("_amx_code", "amx"),
          ("_amx_fp16_code", "amx_fp16"))
HOOK_ATTR = "_kbuild_isa_hook"  # on cpu_vec_isa: the installed hook
DEFAULT_TIMEOUT_S = 600  # a first answer builds up to a dozen probes


class CannotAnswer(Exception):
    """kbuild cannot answer this check for sure; the message says why."""


def probe_name(vec_isa, code):
    """kbuild's name for the probe program `code` of `vec_isa`'s class."""
    for attribute, name in PROBES:
        for klass in type(vec_isa).__mro__:
            if attribute in vars(klass) and vars(klass)[attribute] == code:
                return name
    raise CannotAnswer(f"{type(vec_isa).__name__}.check_build was given a probe program kbuild "
                       "does not know")


IMPORT, PLAIN, RETRY = "import", "plain", "retry"


def _imports_torch(statements):
    return any(isinstance(s, ast.Import) and any(a.name.split(".")[0] == "torch" for a in s.names)
               or isinstance(s, ast.ImportFrom) and (s.module or "").split(".")[0] == "torch"
               for s in statements)


def _retries_with_torch(script):
    """Whether a loader script imports torch on Linux: at its top level (a
    script of its own for the retry), or in an `except` of a load that
    failed (Debian's 2.14.1: one script, the import indented under `except
    OSError:`). 2.13's import under `if sys.platform != "linux":` is neither."""
    try:
        tree = ast.parse(script)
    except SyntaxError:
        return False
    if _imports_torch(tree.body):
        return True
    return any(isinstance(node, ast.ExceptHandler) and _imports_torch(ast.walk(node))
               for node in ast.walk(tree))


def probe_loader(cpu_vec_isa):
    """How this Inductor loads a probe that built: IMPORT (a child imports
    torch, then loads it: up to 2.12), PLAIN (a child without the import,
    torch's lib/ first on LD_LIBRARY_PATH: 2.13), RETRY (PLAIN, then again
    after `import torch` when that fails: PR 189900). Told by VecISA's
    `_probe_load` (2.13 and later) and its loader scripts: one beside
    `_probe_load` that imports torch on Linux (_retries_with_torch) is the
    retry's."""
    vec = cpu_vec_isa.VecISA
    if not hasattr(vec, "_probe_load"):
        return IMPORT
    scripts = [value for name in dir(vec) if isinstance(value := getattr(vec, name, None), str)
               and "LoadLibrary" in value]
    return RETRY if any(_retries_with_torch(script) for script in scripts) else PLAIN


def _words(text):
    return sorted(set(text.split()))


class IsaHook:
    """The answers kbuild gave this process, per compiler and
    ATEN_CPU_CAPABILITY, and what replaced check_build."""

    def __init__(self, cpu_vec_isa, kbuild, timeout, inductor_config=None, torch=None):
        self.module = cpu_vec_isa
        self.original = vars(cpu_vec_isa.VecISA)["check_build"]
        self._kbuild = kbuild
        self._timeout = timeout
        self._config = inductor_config
        self._torch = torch
        self._answers = {}  # (compiler, ATEN_CPU_CAPABILITY) -> answer, or the CannotAnswer
        self._lock = threading.Lock()
        self.kbuild_runs = 0
        self.warned = False
        # register() installed it: its last device's unregister() removes it.
        self.by_register = False

    # What Inductor calls.
    def check_build(self, vec_isa, code):
        try:
            return self.answer(vec_isa, code)
        except CannotAnswer as e:
            if not self.warned:
                self.warned = True
                warnings.warn(f"kbuild_inductor: Inductor's own ISA check runs (it builds and "
                              f"loads probes itself, in new Python processes): {e}",
                              RuntimeWarning, stacklevel=3)
            return self.original(vec_isa, code)

    def answer(self, vec_isa, code):
        """kbuild's answer to `vec_isa.check_build(code)`; CannotAnswer when
        it has none for sure."""
        class_name = type(vec_isa).__name__
        kind = KNOWN_CLASSES.get(class_name)
        if kind is None:
            raise CannotAnswer(f"{class_name} ({vec_isa}) is an ISA class kbuild does not know")
        probe = probe_name(vec_isa, code)
        answer = self.kbuild_answer()
        flags, macros = _words(vec_isa.build_arch_flags()), sorted(vec_isa.build_macro())
        for check in answer["checks"]:
            if (check["isa"], check["probe"]) == (kind, probe) and _words(check["flags"]) == flags \
                    and sorted(check["macros"]) == macros:
                if not check["certain"]:
                    raise CannotAnswer(f"kbuild's {probe} check of {kind} timed out")
                if not check["passed"] and probe_loader(self.module) == RETRY:
                    raise CannotAnswer(f"kbuild's {probe} check of {kind} failed, and this "
                                       "Inductor loads a probe that did not load again after "
                                       "`import torch` (kbuild does not)")
                return bool(check["passed"])
        raise CannotAnswer(f"kbuild ran no {probe} check of {class_name} with flags "
                           f"{' '.join(flags) or '(none)'}")

    def kbuild_answer(self):
        """kbuild's answer for Inductor's compiler now, asked once per
        compiler and ATEN_CPU_CAPABILITY (a CannotAnswer is kept too)."""
        compiler, argument = self.compiler()
        key = (compiler, os.environ.get("ATEN_CPU_CAPABILITY"))
        with self._lock:
            if key not in self._answers:
                try:
                    self._answers[key] = self._checked(self._ask(argument), compiler)
                except CannotAnswer as e:
                    self._answers[key] = e
            answer = self._answers[key]
        if isinstance(answer, CannotAnswer):
            raise answer
        return answer

    def config(self):
        return self._config if self._config is not None else self.module.config

    def torch(self):
        return self._torch if self._torch is not None else self.module.torch

    def kbuild(self):
        from kbuild_inductor import KbuildError, find_kbuild  # noqa: PLC0415

        try:
            return find_kbuild(self._kbuild)
        except KbuildError as e:
            raise CannotAnswer(str(e)) from None

    def compiler(self):
        """(the compiler Inductor compiles with, by its real path; the word
        to give kbuild for it), from cpp.cxx as Inductor searches it."""
        from kbuild_inductor import _route  # noqa: PLC0415

        cxx = self.config().cpp.cxx
        search = cxx if isinstance(cxx, (list, tuple)) else (cxx,)
        kbuild, links = self.kbuild(), _route._links_dir()
        for entry in search:
            if entry is None:
                if os.environ.get("TORCH_INDUCTOR_INSTALL_GXX"):
                    raise CannotAnswer("cpp.cxx has Inductor install its own g++ "
                                       "(TORCH_INDUCTOR_INSTALL_GXX)")
                continue
            path = _route.configured_compiler(entry, kbuild, links)
            if path:
                # A routed compile's link stands for the compiler it runs.
                routed = os.sep in entry and _route._is_kbuild(os.path.abspath(entry), kbuild)
                return os.path.realpath(path), path if routed else entry
        raise CannotAnswer(f"Inductor's compiler (cpp.cxx = {cxx!r}) was not found")

    def torch_root(self):
        return os.path.dirname(os.path.abspath(self.torch().__file__))

    def _ask(self, compiler):
        from kbuild_inductor import KbuildError, _run  # noqa: PLC0415

        # Given every path, kbuild starts no Python to find them.
        argv = [self.kbuild(), "isa", "--json", "--cxx", compiler, "--torch-root",
                self.torch_root(), "--python-include", sysconfig.get_path("include")]
        libdir = sysconfig.get_config_var("LIBDIR")
        if libdir:
            argv += ["--python-libdir", libdir]
        self.kbuild_runs += 1
        try:
            proc = _run(argv, self._timeout)
        except KbuildError as e:
            raise CannotAnswer(str(e)) from None
        if proc.returncode != 0:
            said = [l for l in proc.stderr.splitlines() if l.startswith("kbuild: error")]
            raise CannotAnswer(f"kbuild isa failed (exit code {proc.returncode}"
                               f"{': ' + said[0] if said else ''})")
        try:
            answer = json.loads(proc.stdout)
            if answer.get("format") != 1 or not isinstance(answer.get("checks"), list):
                raise ValueError("not kbuild isa's format 1")
        except (ValueError, AttributeError) as e:
            raise CannotAnswer(f"kbuild isa printed no answer it can be held to ({e})") from None
        return answer

    def _checked(self, answer, compiler):
        """`answer` when it was computed for this process: this torch, its
        line's profile, Inductor's compiler, Inductor's ATEN_CPU_CAPABILITY."""
        torch_info, probed = answer["torch"], answer["compiler"]["path"]
        if not torch_info["profile_matches_line"]:
            raise CannotAnswer(f"kbuild has no profile for torch {torch_info['version']} (its "
                               f"{torch_info['profile']} profile would stand in)")
        if os.path.realpath(torch_info["root"]) != os.path.realpath(self.torch_root()):
            raise CannotAnswer(f"kbuild probed torch in {torch_info['root']}, this process runs "
                               f"the one in {self.torch_root()}")
        version = getattr(self.torch(), "__version__", None)
        if version is not None and str(version) != torch_info["version"]:
            raise CannotAnswer(f"kbuild read torch {torch_info['version']} from version.py, this "
                               f"process runs torch {version}")
        if os.path.realpath(probed) != compiler:
            raise CannotAnswer(f"kbuild probed with {probed}, Inductor compiles with {compiler}")
        self._check_names(answer)
        self._check_capability(answer)
        return answer

    def instances(self):
        """Inductor's own candidate objects, by class name."""
        listed = getattr(self.module, "supported_vec_isa_list", [])
        return {type(isa).__name__: isa for isa in listed}

    def _check_names(self, answer):
        """kbuild's valid ISAs are classes of this torch, named as it names them."""
        instances = self.instances()
        for entry in answer["valid"]:
            isa = instances.get(entry["class"])
            if entry["probed"] and (isa is None or str(isa) != entry["inductor"]):
                raise CannotAnswer(f"kbuild's {entry['isa']} ({entry['class']}, "
                                   f"'{entry['inductor']}') is not an ISA class of this torch")

    def _check_capability(self, answer):
        """With ATEN_CPU_CAPABILITY set, Inductor's own handling of it, given
        kbuild's valid list, picks what kbuild picked."""
        capability = os.environ.get("ATEN_CPU_CAPABILITY")
        if not capability or not answer["valid"]:
            return
        choose = getattr(self.module, "get_isa_from_cpu_capability", None)
        if choose is None:
            raise CannotAnswer("ATEN_CPU_CAPABILITY is set and this torch has no "
                               "get_isa_from_cpu_capability to hold kbuild's pick to")
        instances = self.instances()
        valid = [instances.get(entry["class"]) for entry in answer["valid"]]
        if None in valid:
            raise CannotAnswer("kbuild's valid ISAs are not all classes of this torch")
        with warnings.catch_warnings():  # Inductor warns again when it picks
            warnings.simplefilter("ignore")
            chosen = choose(capability, valid, self.module.invalid_vec_isa)
        picked = answer["pick"]["class"] if answer["pick"] else "InvalidVecISA"
        if type(chosen).__name__ != picked:
            raise CannotAnswer(f"ATEN_CPU_CAPABILITY={capability}: Inductor's handling picks "
                               f"{chosen}, kbuild's {picked}")


def installed(cpu_vec_isa):
    """The hook installed on `cpu_vec_isa`, or None."""
    hook = vars(cpu_vec_isa).get(HOOK_ATTR)
    current = vars(cpu_vec_isa.VecISA).get("check_build")
    return hook if hook is not None and getattr(current, HOOK_ATTR, None) is hook else None


def install(cpu_vec_isa, kbuild=None, timeout=DEFAULT_TIMEOUT_S, inductor_config=None,
            torch=None):
    """Replaces cpu_vec_isa.VecISA.check_build with kbuild's answers; the
    same hook again when one is installed."""
    hook = installed(cpu_vec_isa)
    if hook is not None:
        return hook
    hook = IsaHook(cpu_vec_isa, kbuild, timeout, inductor_config, torch)

    def check_build(self, code):
        return hook.check_build(self, code)

    check_build.__wrapped__ = hook.original
    setattr(check_build, HOOK_ATTR, hook)
    setattr(cpu_vec_isa, HOOK_ATTR, hook)
    cpu_vec_isa.VecISA.check_build = check_build
    return hook


def uninstall(cpu_vec_isa):
    """Gives back Inductor's own check_build; returns the hook removed."""
    hook = installed(cpu_vec_isa)
    if hook is None:
        return None
    cpu_vec_isa.VecISA.check_build = hook.original
    delattr(cpu_vec_isa, HOOK_ATTR)
    return hook


class _ThenHook:
    """A module's loader that installs the hook once the module ran."""

    def __init__(self, loader, after):
        self._loader, self._after = loader, after

    def __getattr__(self, name):  # get_source, is_package...: the real loader's
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._after(module)


class _WhenImported:
    """A finder that has `after(module)` run when `name` is imported; it
    takes itself off sys.meta_path at once."""

    def __init__(self, name, after):
        self._name, self._after = name, after

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self._name:
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        import importlib.util  # noqa: PLC0415

        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenHook(spec.loader, self._after)
        return spec


MODULE = "torch._inductor.cpu_vec_isa"


def install_when_imported(after):
    """`after(cpu_vec_isa)` now when torch's cpu_vec_isa is imported, else
    when it is (importing it at `import torch` would cost every process)."""
    module = sys.modules.get(MODULE)
    if module is not None:
        after(module)
        return
    if not any(isinstance(f, _WhenImported) for f in sys.meta_path):
        sys.meta_path.insert(0, _WhenImported(MODULE, after))
