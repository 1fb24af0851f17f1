#!/usr/bin/env python3
"""Every relative link in the README, the top-level guides and docs/ leads
somewhere: the file (or directory) exists, and a `#fragment` names a
heading of the linked Markdown file (GitHub's anchors: lowercase, spaces as
hyphens, punctuation other than hyphens and underscores dropped).

usage: doc_links_test.py SOURCE_ROOT
"""

import glob
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path):
    """The heading anchors of a Markdown file, as GitHub makes them."""
    found, fenced = set(), False
    counts = {}
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^#{1,6} +(.*?) *#* *$", line)
        if not m:
            continue
        slug = m.group(1).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", slug).replace(" ", "-")
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(path):
    """(line number, target) of each Markdown link outside code blocks."""
    fenced = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            yield number, target


def main():
    root = sys.argv[1]
    pages = [os.path.join(root, name) for name in ("README.md", "CONTRIBUTING.md",
                                                   "ARCHITECTURE.md")]
    pages += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    failures, checked = [], 0
    for page in pages:
        if not os.path.exists(page):
            failures.append(f"{os.path.relpath(page, root)} is missing")
            continue
        for number, target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            checked += 1
            where = f"{os.path.relpath(page, root)}:{number}: {target}"
            file_part, _, fragment = target.partition("#")
            linked = page if not file_part else os.path.normpath(
                os.path.join(os.path.dirname(page), file_part))
            if not os.path.exists(linked):
                failures.append(f"{where}: no such file")
            elif fragment and linked.endswith(".md") and fragment not in anchors(linked):
                failures.append(f"{where}: no heading #{fragment} in {os.path.relpath(linked, root)}")
    for f in failures:
        print("FAIL:", f)
    print(f"doc links: {checked} relative links in {len(pages)} pages, {len(failures)} broken")
    return 1 if failures or checked < 20 else 0


if __name__ == "__main__":
    sys.exit(main())
