#!/usr/bin/env python3
"""The man page (build/src/kbuild.1, from docs/kbuild.1.in) holds what the
code has: every subcommand and option the command line defines, every exit
code, every environment variable the code reads, and no path of the machine
that built it. The exit-code tables of the README and docs/errors.md have
the code's exit codes too.

usage: man_page_test.py KBUILD SOURCE_ROOT BUILD_ROOT

What the code has is taken from the code itself: subcommands and options
from `kbuild --completion-words` (the table that parses the command line),
exit codes from src/util/error.cpp and the constants of src/cli/commands.cpp,
variables from every lookup in src/ (C++ and the Python bridge) and every
variable the shipped device files name.
"""

import os
import re
import shutil
import subprocess
import sys

from code_variables import variables

SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS",
            "ENVIRONMENT", "FILES", "SEE ALSO"]


def plain(roff):
    """The roff source as words: escapes and font changes gone."""
    text = re.sub(r"\\f[BIRP]", "", roff)
    text = text.replace("\\-", "-").replace("\\(em", "-").replace("\\&", "")
    return text


def sections(roff):
    """Section name -> its text (plain)."""
    out, name = {}, None
    for line in roff.splitlines():
        m = re.match(r'^\.SH "?([^"]+)"?$', line)
        if m:
            name = m.group(1)
            out[name] = ""
        elif name:
            out[name] += plain(line) + "\n"
    return out


def words(text):
    return set(re.findall(r"[A-Za-z0-9_+./-]+", text))


def completion_words(kbuild, *args):
    run = subprocess.run([kbuild, "--completion-words", *args], capture_output=True,
                         text=True, check=True)
    return run.stdout.split()


def exit_codes(source_root):
    codes = {0}
    error_cpp = open(os.path.join(source_root, "src/util/error.cpp")).read()
    body = error_cpp[error_cpp.index("int exit_code("):error_cpp.index("const char* stage_name(")]
    codes |= {int(n) for n in re.findall(r"return (\d+);", body)}
    commands_cpp = open(os.path.join(source_root, "src/cli/commands.cpp")).read()
    for decl in re.findall(r"constexpr int (k\w+ = \d+(?:, k\w+ = \d+)*);", commands_cpp):
        codes |= {int(n) for n in re.findall(r"= (\d+)", decl)}
    return codes


def table_codes(path):
    """The codes of the first Markdown table whose header is `| code | stage | when |`."""
    text = open(path).read()
    at = text.find("| code | stage | when |")
    if at < 0:
        return set()
    codes = set()
    for line in text[at:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        codes |= {int(n) for n in re.findall(r"\d+", line.split("|")[1])}
    return codes


def machine_paths(source_root, build_root, prefix_dirs):
    """The paths of the machine that built the page: the trees and HOME."""
    paths = {os.path.abspath(source_root), os.path.realpath(source_root),
             os.path.abspath(build_root), os.path.realpath(build_root)}
    home = os.environ.get("HOME", "")
    # HOME, unless it is / or the install prefix lies under it (then the
    # man page rightly names the prefix).
    if len(home) > 1 and not any(d.startswith(home + "/") for d in prefix_dirs):
        paths.add(home)
    return paths


def main():
    kbuild, source_root, build_root = sys.argv[1:4]
    page = os.path.join(build_root, "src", "kbuild.1")
    roff = open(page).read()
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    by_section = sections(roff)
    for name in SECTIONS:
        check(name in by_section, f"no section {name}")
    check(not re.search(r"@[A-Z_]+@", roff), "a placeholder left unfilled")
    whole = plain(roff)
    all_words = words(whole)

    top = completion_words(kbuild)
    subcommands = [w for w in top if not w.startswith("-")]
    check(len(subcommands) >= 8, f"too few subcommands from --completion-words: {subcommands}")
    commands = by_section.get("COMMANDS", "")
    for sub in subcommands:
        check(f"kbuild {sub}" in commands, f"subcommand {sub} not under COMMANDS")
        for option in completion_words(kbuild, sub):
            check(option in all_words, f"option {option} (of {sub}) not in the man page")
    for option in top:
        if option.startswith("-"):
            check(option in all_words, f"option {option} not in the man page")

    exit_status = by_section.get("EXIT STATUS", "")
    codes = exit_codes(source_root)
    check({0, 2, 13, 70, 130} <= codes, f"exit codes not read from the code: {sorted(codes)}")
    listed = {int(n) for n in re.findall(r"^\.B (\d+)$", roff, re.M)}
    for code in sorted(codes):
        check(code in listed and re.search(rf"\b{code}\b", exit_status),
              f"exit code {code} not under EXIT STATUS")
    check(listed <= codes, f"EXIT STATUS lists codes the code does not have: {sorted(listed - codes)}")
    # The README's table and docs/errors.md's "Exit codes" have the same codes.
    for doc in ("README.md", "docs/errors.md"):
        tabled = table_codes(os.path.join(source_root, doc))
        check(tabled == codes, f"{doc}'s exit-code table has {sorted(tabled)}, the code {sorted(codes)}")

    environment = words(by_section.get("ENVIRONMENT", ""))
    found = variables(source_root)
    check(len(found) >= 40, f"too few variables found in the code: {sorted(found)}")
    for var in sorted(found):
        check(var in environment, f"variable {var} not under ENVIRONMENT")

    prefix = os.path.dirname(re.search(r"^\.I (/\S+)/share/kbuild/devices$", roff, re.M).group(1)
                             if re.search(r"^\.I (/\S+)/share/kbuild/devices$", roff, re.M)
                             else "/nowhere")
    check(prefix != "/nowhere", "FILES does not name PREFIX/share/kbuild/devices")
    for path in machine_paths(source_root, build_root, [prefix]):
        check(path not in roff, f"the build machine's path {path} is in the man page")
    # Every absolute path is the install prefix's or one kbuild always uses.
    allowed = (prefix + "/", "/etc/kbuild/", "/usr/local/cuda")
    for path in re.findall(r"(?<![\w.~$:/[])/[A-Za-z][\w./*-]*", whole):
        check(path.startswith(allowed), f"an absolute path {path} is in the man page")

    if shutil.which("groff"):
        lint = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page], capture_output=True,
                              text=True, env={**os.environ, "LC_ALL": "C.UTF-8"})
        check(lint.returncode == 0 and not lint.stderr.strip(),
              f"groff warns about the man page: {lint.stderr.strip()}")

    for f in failures:
        print("FAIL:", f)
    print(f"man page: {len(failures)} problems; {len(subcommands)} subcommands, "
          f"{len(codes)} exit codes, {len(found)} variables checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
