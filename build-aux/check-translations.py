#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check that translations cover every user-visible string.

1. Every source file with marked strings (_(), N_(), C_() in C; translatable
   attributes in .ui) is listed in po/POTFILES.in, and every listed file exists.
2. Each language of po/LINGUAS translates every message of the sources
   (xgettext extracts them, msgcmp compares; untranslated counts as missing).

Usage: check-translations.py SOURCE_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile

MARKED = {
    ".c": re.compile(r'\b(?:N?_|C_)\s*\("'),
    ".ui": re.compile(r'translatable="yes"'),
}
SCANNED_DIRS = ("src", "ui")
# The same keywords as meson's i18n 'glib' preset.
XGETTEXT_ARGS = [
    "--from-code=UTF-8", "--add-comments", "--keyword=_", "--keyword=N_",
    "--keyword=C_:1c,2", "--keyword=NC_:1c,2", "--keyword=g_dcgettext:2",
    "--keyword=g_dngettext:2,3", "--keyword=g_dpgettext2:2c,3",
    "--flag=N_:1:pass-c-format", "--flag=C_:2:pass-c-format",
    "--flag=NC_:2:pass-c-format", "--flag=g_dngettext:2:pass-c-format",
    "--flag=g_strdup_printf:1:c-format", "--flag=g_string_printf:2:c-format",
    "--flag=g_string_append_printf:2:c-format", "--flag=g_error_new:3:c-format",
    "--flag=g_set_error:4:c-format", "--flag=g_markup_printf_escaped:1:c-format",
]


def listed_files(root):
    with open(os.path.join(root, "po", "POTFILES.in"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def files_with_strings(root):
    found = set()
    for top in SCANNED_DIRS:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                pattern = MARKED.get(os.path.splitext(name)[1])
                path = os.path.join(folder, name)
                if pattern is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    if pattern.search(f.read()):
                        found.add(os.path.relpath(path, root))
    return found


def check_potfiles(root, listed):
    problems = [f"POTFILES.in lists {p}, which does not exist"
                for p in listed if not os.path.exists(os.path.join(root, p))]
    problems += [f"{p} has translatable strings but is not in po/POTFILES.in"
                 for p in sorted(files_with_strings(root) - set(listed))]
    return problems


def check_languages(root, listed):
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        pot = os.path.join(tmp, "tensafe.pot")
        subprocess.run(["xgettext", "--package-name=tensafe", "-o", pot, "-D", root]
                       + XGETTEXT_ARGS + listed, check=True)
        with open(os.path.join(root, "po", "LINGUAS"), encoding="utf-8") as f:
            languages = f.read().split()
        for lang in languages:
            po = os.path.join(root, "po", lang + ".po")
            result = subprocess.run(["msgcmp", po, pot], capture_output=True, text=True)
            if result.returncode != 0:
                problems.append(f"po/{lang}.po does not translate every message "
                                "(update it with `meson compile -C build tensafe-update-po`, "
                                "then translate):\n" + result.stderr.strip())
    return problems


def main(root):
    listed = listed_files(root)
    problems = check_potfiles(root, listed)
    if not problems:
        problems = check_languages(root, listed)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
