#!/usr/bin/env python3
"""docs/environment.md names every environment variable kbuild reads (the
list code_variables.py takes from the code's own lookups: C++, the Python
bridge, the shipped device files), and no variable the code never reads.

usage: environment_doc_test.py SOURCE_ROOT
"""

import os
import re
import sys

from code_variables import variables


def documented(text):
    """The variables the page names: every `NAME` in backticks (A-Z, 0-9, _)."""
    return set(re.findall(r"`\$?([A-Z][A-Z0-9_]{2,})`", text))


def main():
    source_root = sys.argv[1]
    page = open(os.path.join(source_root, "docs/environment.md")).read()
    failures = []
    found = variables(source_root)
    if len(found) < 40:
        failures.append(f"too few variables found in the code: {sorted(found)}")
    named = documented(page)
    for var in sorted(found - named):
        failures.append(f"docs/environment.md does not name {var}, which kbuild reads")
    for var in sorted(named - found):
        failures.append(f"docs/environment.md names {var}, which kbuild never reads")
    for f in failures:
        print("FAIL:", f)
    print(f"docs/environment.md: {len(failures)} problems; {len(found)} variables checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
