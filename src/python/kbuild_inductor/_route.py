"""route_compiles=True: Inductor's own compiles go through kbuild.

Inductor runs `torch._inductor.config.cpp.cxx` (it checks it with
`--version` and tells g++ from clang by name and by that output). It is
pointed at a link named like the compiler (g++, c++ or clang++) to the
kbuild binary, in KBUILD_CC_DIR, else $XDG_CACHE_HOME/kbuild-cc (default
~/.cache/kbuild-cc; not inside kbuild's cache, which holds only its own
entries); kbuild started
through that link is in compiler mode: it runs the real compiler of that
name on PATH (skipping itself) with Inductor's words unchanged, through its
output cache and launcher (KBUILD_LAUNCHER).
"""

import os
import stat

MASQUERADE_NAMES = ("g++", "c++", "clang++")


def _links_dir():
    if os.environ.get("KBUILD_CC_DIR"):
        return os.environ["KBUILD_CC_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kbuild-cc")


def _private_dir(path):
    """`path`, made 0700 if missing; refused when it is not a directory of
    this user's that only this user can write (a link there runs compilers)."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise OSError(f"{path} is not a directory only you can write; remove it or set "
                      "KBUILD_CC_DIR")
    return path


def masquerade_link(kbuild, name):
    """<links dir>/NAME -> kbuild, replaced atomically when it points
    elsewhere; anything there that is not a link is refused."""
    from kbuild_inductor import KbuildError  # noqa: PLC0415

    if name not in MASQUERADE_NAMES:
        raise KbuildError(f"route_compiles: Inductor's compiler {name!r} is not one of "
                          f"{', '.join(MASQUERADE_NAMES)}; set torch._inductor.config.cpp.cxx")
    try:
        directory = _private_dir(_links_dir())
        link = os.path.join(directory, name)
        target = os.path.realpath(kbuild)
        if os.path.lexists(link):
            if not os.path.islink(link):
                raise KbuildError(f"route_compiles: {link} is not a link; remove it")
            if os.readlink(link) == target:
                return link
        temporary = f"{link}.{os.getpid()}.tmp"
        os.symlink(target, temporary)
        os.replace(temporary, link)
        return link
    except OSError as e:
        raise KbuildError(f"route_compiles: {e}") from e


def route_compiles(kbuild, inductor_config=None):
    """Points Inductor's compiler at kbuild's compiler mode; returns the link."""
    if inductor_config is None:
        from torch._inductor import config as inductor_config  # noqa: PLC0415
    cxx = inductor_config.cpp.cxx
    search = list(cxx) if isinstance(cxx, (tuple, list)) else [cxx]
    current = next((c for c in reversed(search) if c), "g++")
    link = masquerade_link(kbuild, os.path.basename(current))
    if current != link:
        inductor_config.cpp.cxx = (None, link)
    return link
