#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# check-symbols.sh NM EXECUTABLE FORBIDDEN REQUIRED: the installed program
# runs (--version), its static link defines no symbol matching the extended
# regular expression FORBIDDEN, and it does define REQUIRED (so the names
# looked for are real ones and nm reads the file: the check can fail).
set -eu
nm_tool=$1
exe=$2
forbidden=$3
required=$4
"$exe" --version >/dev/null
found=$("$nm_tool" "$exe" | grep -E " [TtDdBbRr] ($forbidden)" || true)
if [ -n "$found" ]; then
  echo "$(basename "$exe") links code it must not hold:"
  echo "$found"
  exit 1
fi
"$nm_tool" "$exe" | grep -q " T $required\$"
echo "$(basename "$exe"): no symbol matches $forbidden"
