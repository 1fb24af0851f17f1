"""route_compiles=True: Inductor's own compiles go through kbuild.

Inductor runs `torch._inductor.config.cpp.cxx` (it checks it with
`--version` and tells g++ from clang by its name and by that output). It is
pointed at a link to the kbuild binary named by the configured compiler's
kind as Inductor reads the name (clang++ for a clang, g++ for a gcc, else
c++), in KBUILD_CC_DIR, else $XDG_CACHE_HOME/kbuild-cc (default
~/.cache/kbuild-cc; not inside kbuild's cache, which holds only its own
entries). kbuild started through that link is in compiler mode: it runs
KBUILD_CC_COMPILER, set here to the configured compiler's absolute path (a
path as given; a bare name found on PATH now, the links dir and kbuild
skipped), with Inductor's words unchanged, through its output cache and
launcher (KBUILD_LAUNCHER). Compile workers started later inherit it.

The link runs compilers, so its directory must be this user's alone and
every directory above it owned by this user or root and not writable by
others, unless sticky (/tmp): otherwise someone could rename it away and
put their own g++ in its place. A POSIX ACL that lets another user or group
write counts as writable by others (the mode bits then show only its mask),
as in kbuild's own rule.
"""

import errno
import os
import re
import stat
import struct

MASQUERADE_NAMES = ("g++", "c++", "clang++")
COMPILER_VARIABLE = "KBUILD_CC_COMPILER"


def _error(message):
    from kbuild_inductor import KbuildError  # noqa: PLC0415

    return KbuildError(f"route_compiles: {message}")


def _links_dir():
    if os.environ.get("KBUILD_CC_DIR"):
        return os.environ["KBUILD_CC_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kbuild-cc")


_ACL_USER, _ACL_GROUP, _ACL_MASK, _ACL_OTHER, _ACL_WRITE = 0x02, 0x08, 0x10, 0x20, 0x02


def _acl_writer(path):
    """Who other than the owner, root and this user an ACL of `path` lets
    write ("uid N", "group N", "everyone"), or None. The kernel's format:
    version 2, then (u16 tag, u16 perm, u32 id) entries, little-endian; a
    named entry is limited by the mask, and a directory's default ACL is
    given to what is created in it."""
    st = os.stat(path)
    names = ["system.posix_acl_access"]
    if stat.S_ISDIR(st.st_mode):
        names.append("system.posix_acl_default")
    for name in names:
        try:
            data = os.getxattr(path, name)
        except OSError as e:
            if e.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
                continue
            raise
        if len(data) < 4 or (len(data) - 4) % 8 or struct.unpack_from("<I", data)[0] != 2:
            return "an ACL kbuild cannot read"
        entries = [struct.unpack_from("<HHI", data, at) for at in range(4, len(data), 8)]
        mask = next((perm for tag, perm, _ in entries if tag == _ACL_MASK), 0o7)
        default = name.endswith("default")
        for tag, perm, ident in entries:
            if tag == _ACL_USER and perm & mask & _ACL_WRITE and \
                    ident not in (st.st_uid, 0, os.geteuid()):
                return f"uid {ident}" + (" (a default ACL)" if default else "")
            if tag == _ACL_GROUP and perm & mask & _ACL_WRITE:
                return f"group {ident}" + (" (a default ACL)" if default else "")
            if default and tag == _ACL_OTHER and perm & _ACL_WRITE:
                return "everyone (a default ACL)"
    return None


def _check_parents(path):
    """Every directory above `path` (as written and as resolved) is owned by
    this user or root and only they can write it, or it is sticky."""
    parents = set()
    for start in (os.path.abspath(path), os.path.realpath(path)):
        up = os.path.dirname(start)
        while True:
            parents.add(up)
            if up == os.path.dirname(up):
                break
            up = os.path.dirname(up)
    for parent in sorted(parents):
        st = os.stat(parent)
        if st.st_uid not in (os.geteuid(), 0):
            problem = f"is owned by uid {st.st_uid}"
        elif st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            problem = f"others can write (mode {stat.S_IMODE(st.st_mode):04o}, no sticky bit)"
        elif not st.st_mode & stat.S_ISVTX and (writer := _acl_writer(parent)):
            problem = f"has an ACL that lets {writer} write it (setfacl -b removes it)"
        else:
            continue
        raise _error(f"{path} is in {parent}, which {problem}: anyone who can write it can "
                     "replace the compiler links; set KBUILD_CC_DIR to a directory under ones "
                     "only you (or root) can write")


def _private_dir(path):
    """`path`, made 0700 if missing; refused when it is not a directory of
    this user's that only this user can write (a link there runs compilers),
    or when a directory above it is not trusted (_check_parents)."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise OSError(f"{path} is not a directory only you can write; remove it or set "
                      "KBUILD_CC_DIR")
    _check_parents(path)
    writer = _acl_writer(path)
    if writer:
        raise OSError(f"{path} has an ACL that lets {writer} write it; run setfacl -b {path} "
                      "or set KBUILD_CC_DIR")
    return path


def masquerade_link(kbuild, name):
    """<links dir>/NAME -> kbuild, replaced atomically when it points
    elsewhere; anything there that is not a link is refused."""
    if name not in MASQUERADE_NAMES:
        raise _error(f"{name!r} is not one of {', '.join(MASQUERADE_NAMES)}")
    try:
        directory = _private_dir(_links_dir())
        link = os.path.join(directory, name)
        target = os.path.realpath(kbuild)
        if os.path.lexists(link):
            if not os.path.islink(link):
                raise _error(f"{link} is not a link; remove it")
            if os.readlink(link) == target:
                return link
        temporary = f"{link}.{os.getpid()}.tmp"
        os.symlink(target, temporary)
        os.replace(temporary, link)
        return link
    except OSError as e:
        raise _error(e) from e


def _is_kbuild(path, kbuild):
    try:
        return os.path.samefile(path, kbuild)
    except OSError:
        return False


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _on_path(name, kbuild, links):
    """`name` on PATH as execvp finds it, skipping the links dir and any
    kbuild (a copy of it named g++ would run itself)."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        directory = os.path.abspath(directory or ".")
        if os.path.isdir(links) and os.path.isdir(directory) and os.path.samefile(directory, links):
            continue
        path = os.path.join(directory, name)
        if _executable(path) and not _is_kbuild(path, kbuild):
            return path
    return None


def configured_compiler(configured, kbuild, links):
    """The absolute path of the compiler `configured` (an entry of cpp.cxx)
    names, or None when there is none."""
    if os.sep not in configured:
        return _on_path(configured, kbuild, links)
    path = os.path.abspath(configured)
    if not _is_kbuild(path, kbuild):
        return path if _executable(path) else None
    # A kbuild link (routed before): the compiler it runs now, else its name's.
    current = os.environ.get(COMPILER_VARIABLE, "")
    if os.path.isabs(current) and _executable(current) and not _is_kbuild(current, kbuild):
        return current
    return _on_path(os.path.basename(path), kbuild, links)


def _not_found(configured, links):
    if os.sep in configured:
        return f"Inductor's compiler {configured!r} is not an executable file"
    return f"Inductor's compiler {configured!r} not found on PATH ({links} and kbuild skipped)"


def link_name(configured):
    """The link name that Inductor reads as the same kind of compiler as
    `configured` (it matches the path it runs against these patterns)."""
    if "clang" in configured:
        return "clang++"
    if re.search(r"gcc|g\+\+|gnu-c\+\+", configured):
        return "g++"
    return "c++"  # neither gcc nor clang to Inductor, as the name it replaces


REMOTE_VARIABLE = "KBUILD_REMOTE_CACHE"


def check_remote_cache(url, kbuild, run):
    """`url` when kbuild takes it as the routed compiles will (`kbuild cache
    check`, with it in KBUILD_REMOTE_CACHE: never in an argv, which `ps`
    shows to every user); an error otherwise, in kbuild's words, which show
    the address with its userinfo hidden (every routed compile would fail on
    it). `run(argv, env)` runs kbuild."""
    if not isinstance(url, str):
        raise _error(f"remote_cache= must be a str, not {type(url).__name__}: give "
                     "redis://HOST:PORT or unix:///PATH")
    if not url:
        raise _error("remote_cache='' is not a Redis address: give redis://HOST:PORT "
                     "(redis://:PASSWORD@HOST:PORT with a password) or unix:///PATH")
    proc = run([kbuild, "cache", "check"], dict(os.environ, **{REMOTE_VARIABLE: url}))
    if proc.returncode != 0:
        said = [line for line in proc.stderr.splitlines() if line.strip()]
        why = said[0] if said else f"kbuild cache check exited {proc.returncode}"
        why = re.sub(r"^kbuild: error\[\w+\]: ", "", why)
        raise _error(f"remote_cache is not a Redis address kbuild takes: {why}")
    return url


def route_compiles(kbuild, inductor_config, remote_cache=None):
    """Points Inductor's compiler at kbuild's compiler mode and, with
    `remote_cache` (a Redis URL), the routed compiles at that remote cache
    (KBUILD_REMOTE_CACHE, which compile workers inherit). Returns what it
    changed, for unroute(): (config, cxx before, KBUILD_CC_COMPILER before,
    link, compiler, KBUILD_REMOTE_CACHE before, remote_cache)."""
    cxx = inductor_config.cpp.cxx
    search = [c for c in (cxx if isinstance(cxx, (tuple, list)) else [cxx]) if c] or ["g++"]
    links = _links_dir()
    for configured in search:  # Inductor runs the first entry that works
        compiler = configured_compiler(configured, kbuild, links)
        if compiler:
            break
    else:
        raise _error("; ".join(_not_found(c, links) for c in search))
    link = masquerade_link(kbuild, link_name(configured))
    change = (inductor_config, cxx, os.environ.get(COMPILER_VARIABLE), link, compiler,
              os.environ.get(REMOTE_VARIABLE), remote_cache)
    os.environ[COMPILER_VARIABLE] = compiler  # compile workers inherit it
    if remote_cache is not None:
        os.environ[REMOTE_VARIABLE] = remote_cache
    if cxx != (None, link):
        inductor_config.cpp.cxx = (None, link)
    return change


def unroute(change):
    """Gives back what route_compiles changed, where no one changed it since."""
    inductor_config, cxx, variable, link, compiler, remote_before, remote_cache = change
    if inductor_config.cpp.cxx == (None, link):
        inductor_config.cpp.cxx = cxx
    for name, before, ours in ((COMPILER_VARIABLE, variable, compiler),
                               (REMOTE_VARIABLE, remote_before, remote_cache)):
        if ours is None or os.environ.get(name) != ours:
            continue  # not set by us, or changed since
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before
