#!/usr/bin/env python3
"""make-quant-refs.py: reference data for the block formats Q4_0, Q4_1, Q5_0,
Q5_1, Q8_0, Q2_K and Q3_K (tests/data/quant/<type>.bin).

The references are independent of the engine's C code:
  - blocks: rows of floats quantised by gguf-py's numpy encoders (gguf.quants.
    quantize; Q4_0 .. Q8_0, whose encoders are ggml's reference ones), plus
    rows of random bytes with finite fp16 scales (every quant bit pattern; the
    only blocks for Q2_K / Q3_K, which gguf-py cannot encode);
  - their values decoded by gguf-py (gguf.quants.dequantize);
  - an activation row x, and its 8-bit blocks as ggml's x86 CPU backend makes
    them before an integer dot product (quantize_row_q8_0 / q8_1 / q8_K of
    ggml-cpu/arch/x86/quants.c), rewritten here in numpy;
  - per weight row, in float64: the f32-activation dot product sum w*x of the
    decoded weights, and the native-mode one, sum w*a with a the decoded
    8-bit activation (for Q4_1 / Q5_1 the min enters as m * s, the block's
    activation sum s, as ggml defines that product), each with sum |terms|.

Made with: gguf-py 0.19.0 from llama.cpp commit 0c1e57098bba (the vendor/
folder of the llama-cpp-python 0.3.36 sdist), numpy 2.4.6, Python 3.
Rerun (writes tests/data/quant/ under the current directory, byte-identical
for the same versions):
  GGUF_PY=/path/to/llama.cpp/gguf-py python3 tools/make-quant-refs.py

File layout, little-endian: eight u32 (magic "LMQR", version 1, ggml type,
n_cols, n_rows, n_src_rows, activation ggml type, activation bytes), then
  src   f32[n_src_rows][n_cols]   inputs of the gguf-py-encoded rows
  w     n_rows * row_bytes        blocks (rows 0 .. n_src_rows-1 encoded by gguf-py)
  deq   f32[n_rows][n_cols]       gguf-py's decoding of w
  x     f32[n_cols]
  act   activation bytes          x as 8-bit blocks (Q8_0, Q8_1 or Q8_K)
  f64[n_rows] x 4                 dot_f32, mag_f32, dot_native, mag_native
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.environ.get("GGUF_PY", "gguf-py"))
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T  # noqa: E402
from gguf import quants  # noqa: E402

N_COLS = 512
SEED = 20260501
OUT_DIR = os.path.join("tests", "data", "quant")

ACT_Q8_0, ACT_Q8_1, ACT_Q8_K = 8, 9, 15
# weight type -> (file name, activation type, encodable by gguf-py)
TYPES = {
    T.Q4_0: ("q4_0", ACT_Q8_0, True),
    T.Q4_1: ("q4_1", ACT_Q8_1, True),
    T.Q5_0: ("q5_0", ACT_Q8_0, True),
    T.Q5_1: ("q5_1", ACT_Q8_1, True),
    T.Q8_0: ("q8_0", ACT_Q8_0, True),
    T.Q2_K: ("q2_K", ACT_Q8_K, False),
    T.Q3_K: ("q3_K", ACT_Q8_K, False),
}
# byte offsets of the fp16 scales in a block: (d, m or dmin or None)
SCALE_AT = {
    T.Q4_0: (0, None), T.Q4_1: (0, 2), T.Q5_0: (0, None), T.Q5_1: (0, 2),
    T.Q8_0: (0, None), T.Q2_K: (80, 82), T.Q3_K: (108, None),
}
F32 = np.float32


def source_rows(rng):
    """Rows to encode, with the edge cases of the encoders."""
    n = N_COLS
    rows = []
    r = rng.standard_normal(n).astype(F32)
    r[37] = F32(6.0)                                       # an outlier
    rows.append(r)
    r = (rng.standard_normal(n) * 0.01).astype(F32)
    r[:32] = 0                                            # an all-zero block
    r[256:512] = 0                                        # an all-zero super-block
    rows.append(r)
    rows.append(np.clip(rng.standard_normal(n) * 1e4, -6e4, 6e4).astype(F32))  # large
    rows.append((rng.standard_normal(n) * 1e-6).astype(F32))  # fp16-subnormal scales
    r = rng.uniform(-1, 1, n).astype(F32)
    r[32:64] = F32(0.75)                                  # constant block: d = 0 with a min
    r[64:96] = F32(0.0)
    r[70], r[80] = F32(-3.0), F32(3.0)                    # equal magnitudes: the first wins
    r[96:128] = -np.abs(r[96:128])                        # all negative
    rows.append(r)
    rows.append(rng.integers(-16, 17, n).astype(F32))     # many exact halves after scaling
    rows.append((rng.uniform(-1, 1, n) * 100).astype(F32))
    rows.append(rng.laplace(0, 0.05, n).astype(F32))
    return np.stack(rows)


def random_fp16(rng, count, lo=-12, hi=0):
    """Finite fp16 values, random sign, magnitudes 2^lo .. 2^hi, some zero or subnormal."""
    mag = np.exp2(rng.uniform(lo, hi, count))
    v = (np.where(rng.random(count) < 0.5, -mag, mag)).astype(np.float16)
    v[rng.random(count) < 0.05] = np.float16(0.0)
    v[rng.random(count) < 0.05] = np.float16(3e-6)          # subnormal
    return v


def random_block_rows(rng, qtype, n_rows):
    block_size, block_bytes = GGML_QUANT_SIZES[qtype]
    n_blocks = n_rows * N_COLS // block_size
    b = rng.integers(0, 256, (n_blocks, block_bytes), dtype=np.uint8)
    for at in SCALE_AT[qtype]:
        if at is not None:
            b[:, at:at + 2] = random_fp16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return b.reshape(n_rows, -1)


# ---- activations as ggml's x86 backend quantises them ----

def act_q8_0(x, with_sum):
    out = bytearray()
    for blk in x.reshape(-1, 32):
        amax = np.max(np.abs(blk))
        d = F32(amax / F32(127))
        iscale = F32(F32(127) / amax) if amax != 0 else F32(0)
        q = np.rint(blk * iscale).astype(np.int8)         # rint: ties to even
        out += np.float16(d).tobytes()
        if with_sum:
            out += np.float16(d * F32(int(q.astype(np.int32).sum()))).tobytes()
        out += q.tobytes()
    return bytes(out)


def act_q8_K(x):
    out = bytearray()
    for blk in x.reshape(-1, 256):
        i = int(np.argmax(np.abs(blk)))                   # the first of equal magnitudes
        if blk[i] == 0:
            out += bytes(4 + 256 + 32)
            continue
        iscale = F32(F32(-127) / blk[i])
        q = np.minimum(np.rint(blk * iscale), 127).astype(np.int8)
        bsums = q.astype(np.int32).reshape(16, 16).sum(axis=1).astype(np.int16)
        out += F32(F32(1) / iscale).tobytes() + q.tobytes() + bsums.tobytes()
    return bytes(out)


def make_act(x, act_type):
    if act_type == ACT_Q8_K:
        return act_q8_K(x)
    return act_q8_0(x, act_type == ACT_Q8_1)


def decode_act(act, act_type):
    """(values in float64, per-32 activation sums s or None)."""
    if act_type == ACT_Q8_K:
        blocks = np.frombuffer(act, dtype=np.uint8).reshape(-1, 292)
        d = blocks[:, :4].copy().view(np.float32).astype(np.float64)
        q = blocks[:, 4:260].copy().view(np.int8).astype(np.float64)
        return (d * q).ravel(), None
    size = 36 if act_type == ACT_Q8_1 else 34
    blocks = np.frombuffer(act, dtype=np.uint8).reshape(-1, size)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float64)
    q = blocks[:, size - 32:].copy().view(np.int8).astype(np.float64)
    s = blocks[:, 2:4].copy().view(np.float16).astype(np.float64).ravel() if size == 36 else None
    return (d * q).ravel(), s


def native_products(qtype, w, deq, a, s):
    """Per row: the native-mode product and its sum |terms|, in float64."""
    if s is None:
        terms = deq.astype(np.float64) * a
        return terms.sum(axis=1), np.abs(terms).sum(axis=1)
    # Q4_1 / Q5_1: d*q decoded by gguf-py with the mins zeroed, plus m * s
    _, block_bytes = GGML_QUANT_SIZES[qtype]
    blocks = w.reshape(-1, block_bytes).copy()
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float64).reshape(w.shape[0], -1)
    blocks[:, 2:4] = 0
    dq = quants.dequantize(blocks.reshape(w.shape), qtype).astype(np.float64)
    terms = (dq * a).reshape(w.shape[0], -1, 32).sum(axis=2) + m * s
    mags = np.abs(dq * a).reshape(w.shape[0], -1, 32).sum(axis=2) + np.abs(m * s)
    return terms.sum(axis=1), mags.sum(axis=1)


def write_type(qtype, rng, x):
    name, act_type, encodable = TYPES[qtype]
    if encodable:
        src = source_rows(rng)
        w = np.concatenate([quants.quantize(src, qtype), random_block_rows(rng, qtype, 4)])
    else:
        src = np.zeros((0, N_COLS), dtype=F32)
        w = random_block_rows(rng, qtype, 12)
    deq = quants.dequantize(w, qtype).astype(F32)
    assert np.all(np.isfinite(deq))
    act = make_act(x, act_type)
    a, s = decode_act(act, act_type)
    terms = deq.astype(np.float64) * x.astype(np.float64)
    dot_native, mag_native = native_products(qtype, w, deq, a, s)
    header = struct.pack("<4s7I", b"LMQR", 1, int(qtype), N_COLS, w.shape[0], src.shape[0],
                         act_type, len(act))
    tail = np.concatenate([terms.sum(axis=1), np.abs(terms).sum(axis=1), dot_native, mag_native])
    with open(os.path.join(OUT_DIR, name + ".bin"), "wb") as f:
        for part in (header, src.astype("<f4").tobytes(), w.tobytes(), deq.astype("<f4").tobytes(),
                     x.astype("<f4").tobytes(), act, tail.astype("<f8").tobytes()):
            f.write(part)


def activation_row(rng):
    x = rng.standard_normal(N_COLS).astype(F32)
    x[37] = F32(6.0)
    x[64:96] = 0                                          # a zero Q8_0 / Q8_1 block
    x[96:128] = rng.integers(-8, 9, 32).astype(F32) * F32(0.5)   # ties after scaling
    x[300], x[301] = F32(-7.0), F32(7.0)                  # Q8_K: the first of equal magnitudes
    return x


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    rng = np.random.default_rng(SEED)
    x = activation_row(rng)
    for qtype in TYPES:
        write_type(qtype, rng, x)


if __name__ == "__main__":
    main()
