"""Every environment variable kbuild reads, taken from the code's own
lookups: `env.get("NAME")` / `get_nonempty` and the lists the C++ scans,
`os.environ` in the Python bridge, and the variables the shipped device
files name. man_page_test.py and environment_doc_test.py check the man
page and docs/environment.md against it."""

import glob
import os
import re


def literals(text):
    return re.findall(r'"([A-Z][A-Z0-9_]+)"', text)


def variables(source_root):
    """Every environment variable kbuild reads, from the code's own lookups."""
    found = set()
    for path in glob.glob(os.path.join(source_root, "src/**/*.[ch]pp"), recursive=True) + \
            glob.glob(os.path.join(source_root, "include/**/*.hpp"), recursive=True):
        code = open(path).read()
        found |= set(re.findall(r'\bget(?:_nonempty)?\("([A-Z][A-Z0-9_]+)"\)', code))
        found |= set(re.findall(r'\bgetenv\("([A-Z][A-Z0-9_]+)"\)', code))
        found |= set(re.findall(r'\benv_\w+\(env, "([A-Z][A-Z0-9_]+)"', code))
        found |= set(re.findall(r'constexpr const char\* k\w+ = "([A-Z][A-Z0-9_]+)";', code))
        for block in re.findall(r"for \(const char\* var :\s*\{([^}]*)\}", code):
            found |= set(literals(block))
    for path in glob.glob(os.path.join(source_root, "src/python/**/*.py"), recursive=True):
        code = open(path).read()
        found |= set(re.findall(r'environ(?:\.get\(|\[)\s*"([A-Z][A-Z0-9_]+)"', code))
        found |= set(re.findall(r'^\w+_VARIABLE = "([A-Z][A-Z0-9_]+)"', code, re.M))
    # Profiles: a flag's ${env:NAME}, a condition's env:NAME (torch 2.13's
    # TORCHINDUCTOR_CPP_MARCH).
    for path in glob.glob(os.path.join(source_root, "configs/profiles/*.json")):
        found |= set(re.findall(r"env:([A-Z][A-Z0-9_]+)", open(path).read()))
    for path in glob.glob(os.path.join(source_root, "configs/devices/*.json")):
        text = open(path).read()
        found |= set(re.findall(r"\$\{env:([A-Z][A-Z0-9_]+)", text))
        found |= set(re.findall(r'"(?:backend_env|release_env)": *"([A-Z][A-Z0-9_]+)"', text))
        for block in re.findall(r'"unless_env": *\{([^}]*)\}', text):
            found |= set(re.findall(r'"([A-Z][A-Z0-9_]+)":', block))
    return found
