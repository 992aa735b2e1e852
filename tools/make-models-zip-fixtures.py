#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""make-models-zip-fixtures.py: the small wheels the model manager's tests serve
(tests/data/models/, read by tests/models/test-models-zip.c and
test-models-pull.c).

A "model" of two chunks is cut from a deterministic byte stream (SHA-256 in
counter mode, with runs of zeros so that deflate has something to do), and
each chunk is put in a zip laid out like a PyPI wheel: other members before
and after it, an archive comment, chunk 1 deflated and chunk 2 stored.
refs.json holds, computed here with Python's hashlib and zipfile (not by the
code under test): each member's path, size and SHA-256, each zip's size and
SHA-256, and the joined chunks' size and SHA-256.

Python 3.11 standard library only. Rerun from the repository root:
    python3 tools/make-models-zip-fixtures.py
The output is the same on every run (fixed timestamps, no randomness).
"""
import hashlib
import json
import os
import zipfile

OUT = os.path.join("tests", "data", "models")
STAMP = (2024, 1, 1, 0, 0, 0)


def stream(n, seed):
    out = bytearray()
    counter = 0
    while len(out) < n:
        block = hashlib.sha256(b"%s-%d" % (seed, counter)).digest()
        out += block if counter % 8 else bytes(96)
        counter += 1
    return bytes(out[:n])


def write_wheel(path, package, member, data, method):
    with zipfile.ZipFile(path, "w") as z:
        z.comment = b"tensafe test wheel"
        info = zipfile.ZipInfo(package + "/__init__.py", STAMP)
        z.writestr(info, b"", compress_type=zipfile.ZIP_DEFLATED)
        info = zipfile.ZipInfo(member, STAMP)
        z.writestr(info, data, compress_type=method)
        info = zipfile.ZipInfo(package + "-0.1.dist-info/RECORD", STAMP)
        z.writestr(info, b"RECORD\n", compress_type=zipfile.ZIP_DEFLATED)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def main():
    os.makedirs(OUT, exist_ok=True)
    model = stream(250000, b"tensafe-models")
    chunks = [(model[:150000], zipfile.ZIP_DEFLATED), (model[150000:], zipfile.ZIP_STORED)]
    refs = {"joined": {"bytes": len(model), "sha256": sha(model)}, "chunks": []}
    for i, (data, method) in enumerate(chunks, 1):
        package = "fixture_part%d" % i
        member = "%s/data/part%02d.bin" % (package, i)
        path = os.path.join(OUT, "part%d.whl" % i)
        write_wheel(path, package, member, data, method)
        wheel = open(path, "rb").read()
        with zipfile.ZipFile(path) as z:
            assert z.read(member) == data
        refs["chunks"].append({"wheel": "part%d.whl" % i, "wheel_bytes": len(wheel),
                               "wheel_sha256": sha(wheel), "member": member,
                               "method": "deflate" if method == zipfile.ZIP_DEFLATED else "stored",
                               "bytes": len(data), "sha256": sha(data)})
    with open(os.path.join(OUT, "refs.json"), "w") as f:
        json.dump(refs, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
