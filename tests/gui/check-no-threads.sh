#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# check-no-threads.sh NM LIBRARY [--expect-one]: no object of the static
# LIBRARY calls a function that starts a thread (src/DESIGN.md §3: widgets
# start no threads; background work is a core library's _async function),
# whose names it lists in full, so g_thread_newer would not match. Reads the
# library's undefined symbols, so a call made through a macro counts too
# and a comment does not; it first checks that nm lists any at all.
# --expect-one turns the verdict round, for the check's own test: LIBRARY
# must start a thread, and the check must find it.
set -eu
nm_tool=$1
lib=$2
expect=${3:-}
starters='g_task_run_in_thread|g_task_run_in_thread_sync|g_thread_new|g_thread_try_new|g_thread_pool_new|g_thread_pool_new_full'
undefined=$("$nm_tool" -A -u "$lib")
echo "$undefined" | grep -q ' U g_' || { echo "nm lists no GLib call in $lib"; exit 2; }
found=$(echo "$undefined" | grep -E " U ($starters)\$" || true)
if [ "$expect" = --expect-one ]; then
  [ -n "$found" ] || { echo "the thread started in $lib was not found"; exit 1; }
  echo "found, as it should be: $found"
  exit 0
fi
if [ -n "$found" ]; then
  echo "$(basename "$lib") starts threads of its own; use a core _async function instead:"
  echo "$found"
  exit 1
fi
echo "$(basename "$lib"): no object starts a thread"
