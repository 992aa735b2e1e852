#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print the one-line summary 'N passed, N failed, N skipped' of a meson test run.

Counts TAP subtests inside each test program (every g_test case), read from
meson's testlog.json; a program that crashed counts as one failure. Before
the summary, each failed program's last lines of output are repeated: a CI
log that keeps only its tail still says which case failed and why.
"""
import json
import sys


TAIL_LINES = 25


def print_failure(result):
    """The failed program's name and the end of what it printed."""
    output = (result.get("stdout") or "") + (result.get("stderr") or "")
    lines = [line for line in output.splitlines() if line.strip()]
    print(f"--- {result.get('name')}: {result.get('result')}, last lines of its output:")
    for line in lines[-TAIL_LINES:]:
        print(f"    {line}")


def main(path):
    passed = failed = skipped = 0
    with open(path, encoding="utf-8") as log:
        for line in log:
            result = json.loads(line)
            outcome = result.get("result")
            sub_pass = sub_fail = sub_skip = 0
            for text in result.get("stdout", "").splitlines():
                text = text.strip()
                if text.startswith("ok "):
                    if "# SKIP" in text:
                        sub_skip += 1
                    else:
                        sub_pass += 1
                elif text.startswith("not ok "):
                    if "# TODO" in text:
                        sub_skip += 1
                    else:
                        sub_fail += 1
            if outcome in ("OK", "EXPECTEDFAIL") and sub_fail == 0:
                passed += max(sub_pass, 1 if sub_skip == 0 else 0)
                skipped += sub_skip
            elif outcome == "SKIP":
                skipped += max(sub_skip, 1)
            else:
                passed += sub_pass
                skipped += sub_skip
                failed += max(sub_fail, 1)
                print_failure(result)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/meson-logs/testlog.json"))
