#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check the Flatpak manifest: valid JSON, our app id and command, sandbox
permissions limited to what the app needs, and a meson module built from
this source tree with CUDA disabled.

Usage: check-flatpak-manifest.py MANIFEST APP_ID
Prints one line per problem and exits 1 if there is any.
"""
import json
import os
import sys

REQUIRED_ARGS = {"--share=ipc", "--socket=wayland", "--socket=fallback-x11",
                 "--device=dri", "--share=network"}
# File access goes through portals; these would expose the user's files.
FORBIDDEN_PREFIXES = ("--filesystem=home", "--filesystem=host", "--device=all")


def source_points_here(module, manifest_dir, tree_root):
    for source in module.get("sources", []):
        if source.get("type") == "dir":
            path = os.path.realpath(os.path.join(manifest_dir, source.get("path", "")))
            if path == tree_root:
                return True
    return False


def check(manifest, manifest_dir, tree_root, app_id):
    problems = []
    if manifest.get("app-id", manifest.get("id")) != app_id:
        problems.append(f"app-id is not {app_id}")
    if manifest.get("command") != "tensafe":
        problems.append("command is not tensafe")
    if not str(manifest.get("runtime", "")).startswith("org.gnome."):
        problems.append("runtime is not a GNOME runtime")
    args = manifest.get("finish-args", [])
    for missing in sorted(REQUIRED_ARGS - set(args)):
        problems.append(f"finish-args lacks {missing}")
    for arg in args:
        if arg.startswith(FORBIDDEN_PREFIXES):
            problems.append(f"finish-args grants {arg}")
    ours = [m for m in manifest.get("modules", [])
            if isinstance(m, dict) and source_points_here(m, manifest_dir, tree_root)]
    if not ours:
        problems.append("no module builds this source tree (type dir, path to the root)")
    for module in ours:
        if module.get("buildsystem") != "meson":
            problems.append(f"module {module.get('name')} is not built with meson")
        if "-Dcuda=disabled" not in module.get("config-opts", []):
            problems.append(f"module {module.get('name')} does not pass -Dcuda=disabled")
    return problems


def main(path, app_id):
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, json.JSONDecodeError) as err:
        print(f"{path}: {err}")
        return 1
    if not isinstance(manifest, dict):
        print(f"{path}: not a JSON object")
        return 1
    manifest_dir = os.path.dirname(os.path.abspath(path))
    tree_root = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    problems = check(manifest, manifest_dir, tree_root, app_id)
    for problem in problems:
        print(f"{path}: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
