#!/usr/bin/env python3
"""Writes gguf_codes.json: GGUF blocks with random code bits and the codes an independent
reader finds in them, for tetrad/tests/stats.rs (`gguf_codes_match_an_independent_reader`).

The oracle is gguf-py (llama.cpp's Python package, `pip install gguf numpy`): its
`gguf.quants.dequantize` turns each block into floats. Every scale field is set so that the
float *is* the code (minus the format's offset, or a table entry for the non-linear types),
and the code bits are random, so the codes are read back from gguf-py's floats alone, without
tetrad's knowledge of where the bits sit. Split types (2, 3, 5, 6 bits) are compared in weight
order; nibble types as multisets (tetrad measures their qs bytes in storage order).

Run: python3 gguf_codes.py > gguf_codes.json   (gguf 0.19.0, numpy 2)
"""
import json
import random

import numpy as np
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

rng = random.Random(20261205)
F16_ONE = b"\x00\x3c"
F16_ZERO = b"\x00\x00"


def rand(n):
    return bytes(rng.randrange(256) for _ in range(n))


def q2_k():
    return bytes([0x01] * 16) + rand(64) + F16_ONE + F16_ZERO  # sc 1, m 0, d 1, dmin 0


def q3_k():
    return rand(32) + rand(64) + bytes([0x11] * 8 + [0xAA] * 4) + F16_ONE  # every scale 33


def q5_0():
    return F16_ONE + rand(4) + rand(16)


def q5_1():
    return F16_ONE + F16_ZERO + rand(4) + rand(16)


def q5_k():
    return F16_ONE + F16_ZERO + bytes([1] * 4 + [0] * 4 + [1] * 4) + rand(32) + rand(128)


def q6_k():
    return rand(128) + rand(64) + bytes([1] * 16) + F16_ONE


def q4_0():
    return F16_ONE + rand(16)


def q4_1():
    return F16_ONE + F16_ZERO + rand(16)


def q4_k():
    return F16_ONE + F16_ZERO + bytes([1] * 4 + [0] * 4 + [1] * 4) + rand(128)


def iq4_nl():
    return F16_ONE + rand(16)


def iq4_xs():
    return F16_ONE + b"\xaa\xaa" + bytes([0x11] * 4) + rand(128)  # every scale 33


def mxfp4():
    return bytes([128]) + rand(16)  # one fixed exponent; the unit is found by fp4_scale


def nvfp4():
    return bytes([0x38] * 4) + rand(32)  # one fixed UE4M3 scale; the unit as for MXFP4


# type: (block builder, the offset subtracted from the code)
SPLIT = {
    T.Q2_K: (q2_k, 0),
    T.Q3_K: (q3_k, 4),
    T.Q5_0: (q5_0, 16),
    T.Q5_1: (q5_1, 0),
    T.Q5_K: (q5_k, 0),
    T.Q6_K: (q6_k, 32),
}
IQ4NL = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
FP4 = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12]  # doubled e2m1
# type: (block builder, the code of a dequantized value; None: a doubled e2m1 table)
NIBBLE = {
    T.Q4_0: (q4_0, lambda v: int(v) + 8),
    T.Q4_1: (q4_1, int),
    T.Q4_K: (q4_k, int),
    T.IQ4_NL: (iq4_nl, IQ4NL.index),
    T.IQ4_XS: (iq4_xs, IQ4NL.index),
    # ±0 share a value: codes 8 (−0) are folded to 0 on both sides.
    T.MXFP4: (mxfp4, None),
    T.NVFP4: (nvfp4, None),
}


def dequant(t, data):
    return quants.dequantize(np.frombuffer(data, dtype=np.uint8), t).reshape(-1)


def fp4_scale(t, make):
    """The float of code 1 (doubled e2m1 value 1) under the fixed scale, found from gguf-py."""
    for _ in range(100):
        b = make()
        v = dequant(t, b)
        nz = np.abs(v[v != 0])
        if len(nz):
            return float(nz.min())
    raise SystemExit("no nonzero value")


out = []
for t, (make, offset) in SPLIT.items():
    block_size, type_size = GGML_QUANT_SIZES[t]
    data = b"".join(make() for _ in range(3))
    assert len(data) == 3 * type_size
    vals = dequant(t, data)
    codes = [int(v) + offset for v in vals]
    assert all(float(v) == c - offset for v, c in zip(vals, codes)), t.name
    bits = {T.Q2_K: 2, T.Q3_K: 3, T.Q6_K: 6}.get(t, 5)
    assert all(0 <= c < 1 << bits for c in codes), t.name
    out.append({"type": int(t), "name": t.name, "ne0": block_size, "data": data.hex(),
                "codes": codes})
for t, (make, code_of) in NIBBLE.items():
    block_size, type_size = GGML_QUANT_SIZES[t]
    data = b"".join(make() for _ in range(3))
    vals = dequant(t, data)
    if code_of is None:
        unit = fp4_scale(t, make)
        codes = [FP4.index(int(round(v / unit))) for v in vals]
        assert all(float(v) == FP4[c] * unit for v, c in zip(vals, codes)), t.name
    else:
        codes = [code_of(v) for v in vals]
    out.append({"type": int(t), "name": t.name, "ne0": block_size, "data": data.hex(),
                "nibbles_sorted": sorted(codes)})
# One tensor a line.
lines = ",\n  ".join(json.dumps(t, separators=(",", ":")) for t in out)
print('{"generator": "gguf_codes.py with gguf-py 0.19.0",\n "tensors": [\n  ' + lines + "\n ]}")
