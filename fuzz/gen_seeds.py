#!/usr/bin/env python3
"""Writes the committed seed corpus fuzz/seeds/<target>/ from docs/vectors/vectors.json.

Run from anywhere: `python3 fuzz/gen_seeds.py`. Deterministic (fixed seeds, sorted output);
re-running rewrites the same files. Each seed is laid out the way its target reads input (see
the target's doc comment): e.g. rans_record_decode seeds are `[mode, n_streams, sb, hist[16]
u16 LE] + record`, cfs1_decode seeds are `[capacity selector] + blob`.
"""
import base64
import hashlib
import json
import os
import random
import struct
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
V = json.load(open(os.path.join(ROOT, "docs/vectors/vectors.json")))
OUT = os.path.join(ROOT, "fuzz/seeds")
rng = random.Random(20261129)
# Kept as they are: hand-committed fuzz regressions (`regression-*`, `regress-*`), inputs picked
# from a campaign's corpus (`corpus-*`, e.g. adapter_rans64's) and the hand-made seeds of the
# targets this script does not generate for (`gguf`).
HAND_MADE = ("gguf",)
KEPT = {}
if os.path.isdir(OUT):
    for t in os.listdir(OUT):
        for f in os.listdir(os.path.join(OUT, t)):
            if t in HAND_MADE or f.startswith(("regression-", "regress-", "corpus-")):
                KEPT[(t, f)] = open(os.path.join(OUT, t, f), "rb").read()
if os.path.isdir(OUT):  # start clean: the directory is this script's output plus KEPT
    import shutil
    shutil.rmtree(OUT)
for (t, f), data in sorted(KEPT.items()):
    os.makedirs(os.path.join(OUT, t), exist_ok=True)
    with open(os.path.join(OUT, t, f), "wb") as fh:
        fh.write(data)


def put(target, data, tag):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = "%s-%s" % (tag, hashlib.sha1(data).hexdigest()[:12])
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def u16s(xs):
    return b"".join(struct.pack("<H", min(x, 0xFFFF)) for x in xs)


def table_prefix(mode, n_streams, sb, freq):
    # hist = freq: quantize_freq of an exact-M histogram is the histogram itself.
    # u16 cannot hold M = 32768 for a single symbol at sb 15; such tables are not in the vectors.
    return bytes([mode, n_streams % 256, (sb - 1) % 15]) + u16s(freq)


# --- rans_record_decode: valid records with their table; refusals with a typical table.
for r in V["records"]:
    rec = bytes.fromhex(r["record_hex"])
    put("rans_record_decode", table_prefix(0, r["n_streams"], r["scale_bits"], r["freq"]) + rec, "record")
typical = V["records"][0]
for r in V["record_refusals"][:12]:
    rec = bytes.fromhex(r["record_hex"])
    put("rans_record_decode", table_prefix(0, 256, 14, typical["freq"]) + rec, "refusal-" + r["class_c"])
for k in range(6):  # structured mode: random nibbles + mutations
    put("rans_record_decode", bytes([1]) + bytes(rng.randrange(256) for _ in range(600)), "mutant")

# --- rans_roundtrip / kernels_cross_arm / resolve: arbitrary bytes.
for k in range(8):
    n = [16, 64, 300, 1200, 4000, 40, 8, 2000][k]
    put("rans_roundtrip", bytes(rng.randrange(256) for _ in range(n)), "random")
for k in range(8):
    put("kernels_cross_arm", bytes(rng.randrange(256) for _ in range(64 + 97 * k)), "random")
for k in range(4):
    put("quantize", bytes(rng.randrange(256) for _ in range(40 + 120 * k)), "random")
for k in range(8):
    put("resolve", bytes(rng.randrange(256) for _ in range(48 + 4 * k)), "random")

# --- rans_table: table JSON (byte 0 even) and the refusal vectors; arbitrary parts (odd).
for t in V["tables"]:
    put("rans_table", b"\x00" + t["json"].encode(), "table")
for t in V["table_refusals"]:
    put("rans_table", b"\x00" + t["json"].encode(), "refusal-" + t["class"])
for k in range(4):
    put("rans_table", bytes([1]) + bytes(rng.randrange(256) for _ in range(200)), "parts")

# --- cfs1_decode: blobs with capacity = rawlen (0x80), refusals with their capacity.
for c in V["cfs1"]:
    put("cfs1_decode", b"\x80" + bytes.fromhex(c["blob_hex"]), "blob")
for c in V["cfs1_rejections"][::4]:
    blob = bytes.fromhex(c["blob_hex"])
    sel = 0x80
    if c["cap"] is not None and len(blob) >= 9:
        rawlen = struct.unpack("<I", blob[5:9])[0]
        if 0 <= rawlen - c["cap"] < 0x80:
            sel = rawlen - c["cap"]
    put("cfs1_decode", bytes([sel]) + blob, "reject-" + c["reason"].split()[0][:20])

# --- cfs1_roundtrip: the vectors' inputs, raw (even) and int4-shaped (odd).
for c in V["cfs1"][:12]:
    src = bytes.fromhex(c["input_hex"])[:4096]
    put("cfs1_roundtrip", b"\x00" + src, "input")
    put("cfs1_roundtrip", b"\x03" + src, "int4")

# --- stamps: colibri.fmt documents.
for doc in [
    '{}',
    '{"a.weight": "int4-row"}',
    '{"model.layers.0.mlp.down_proj.weight": "int4-rans256-g0", "b": "mxfp4"}',
    '{"a\\u002eweight": "int8-row", "a.weight": "int8-row"}',
    '{"x": "int4-row", "x": "int2-row"}',
    '{"\\ud83d\\ude00": "f32", "t\\n": "\\u0069nt3-g64"}',
    ' { "a" : "b" , "c" : "d" } ',
    '{"a": [1, {"b": null}], "c": "d"}',
    '["not", "an", "object"]',
    '{"a": "\\ud800"}',
]:
    put("stamps", doc.encode(), "doc")


# --- container: safetensors shards.
def shard(meta, tensors, pad8=False):
    """tensors: list of (name, dtype, shape, data)."""
    hdr = {}
    if meta is not None:
        hdr["__metadata__"] = meta
    off = 0
    data = b""
    for name, dtype, shape, blob in tensors:
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(blob)]}
        off += len(blob)
        data += blob
    h = json.dumps(hdr, separators=(",", ":")).encode()
    if pad8:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def table_json(sb, freq):
    m = 1 << sb
    start = [sum(freq[:s]) for s in range(16)]
    slots = [s for s in range(16) for _ in range(freq[s])]
    sb_bytes = b"".join(struct.pack("<H", s) for s in slots)
    return json.dumps({
        "M": m, "freq": freq, "n_streams": 256, "scale_bits": sb,
        "slot_to_symbol_b64": base64.b64encode(sb_bytes).decode(), "start": start,
        "table_crc32": "%08x" % zlib.crc32(sb_bytes), "table_id": "g0"})


def single_symbol_record(n):
    """A genuine 256-stream record of n nibbles for a one-symbol table: every stream is the
    4-byte state L (decoding consumes nothing)."""
    head = 16 + 4 * 257
    head += -head % 16
    b = struct.pack("<QQ", n, (n + 1) // 2) + b"".join(struct.pack("<I", 4 * i) for i in range(257))
    b += b"\x00" * (head - len(b))
    b += b"\x00\x80\x00\x00" * 256
    return b


STAMP = "colibri.fmt"
TABLE = "colibri.int4-rans256-g0.table"
# 1. one-symbol table at 4 scale bits (small), a genuine record, its scales.
f1 = [0] * 16
f1[8] = 16
for n in (512, 4096):
    put("container", shard(
        {STAMP: json.dumps({"w": "int4-rans256-g0"}), TABLE: table_json(4, f1)},
        [("w", "U8", [len(single_symbol_record(n))], single_symbol_record(n)),
         ("w.qs", "F32", [1], b"\x00\x00\x80\x3f")]), "rans256-onesym")
# 2. a vector record with its own (14-bit) table.
r = V["records"][0]
rec = bytes.fromhex(r["record_hex"])
vector_shard = shard(
    {STAMP: json.dumps({"w": "int4-rans256-g0"}), TABLE: table_json(r["scale_bits"], r["freq"])},
    [("w", "U8", [len(rec)], rec), ("w.qs", "F32", [2], b"\x00\x00\x80\x3f" * 2)])
put("container", vector_shard, "rans256-vector")


def reheader(b, edit):
    n = struct.unpack("<Q", b[:8])[0]
    h = edit(b[8:8 + n].decode()).encode()
    return struct.pack("<Q", len(h)) + h + b[8 + n:]


# 2b. the same shard with a key twice: the tensor stamped two ways inside colibri.fmt
# (E_STAMP_CONFLICT), and a second "w" entry in the header itself (E_SHARD_MALFORMED).
stamp = json.dumps(json.dumps({"w": "int4-rans256-g0"}))[1:-1]
put("container", reheader(vector_shard, lambda h: h.replace(
    stamp, stamp.replace("{", '{\\"w\\": \\"int8-row\\", ', 1))), "rans256-stamp-twice")
put("container", reheader(vector_shard, lambda h: h.replace(
    "{", '{"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, ', 1)), "rans256-key-twice")
# 3. a CFS1 container of vector blobs.
ts = []
for k, c in enumerate(V["cfs1"][:6]):
    blob = bytes.fromhex(c["blob_hex"])
    raw = len(bytes.fromhex(c["input_hex"]))
    ts.append(("t%d" % k, "U8", [raw], blob))
put("container", shard({"cfse": "1"}, ts, pad8=True), "cfse")
# 4. a plain int4-row shard with a stamp.
put("container", shard({STAMP: json.dumps({"q": "int4-row"})},
                       [("q", "U8", [4, 8], bytes(rng.randrange(256) for _ in range(32))),
                        ("q.qs", "F32", [4], b"\x00\x00\x80\x3f" * 4)]), "int4row")
put("container", shard(None, []), "empty")

# int4-rans64-t1 (docs/vectors/rans64.json): rans64_decode seeds are `[mode, piece] + blob`
# (mode 0: the bytes are the blob); rans64_roundtrip seeds are `[shift sel, shape, skew] + input`.
R64 = json.load(open(os.path.join(ROOT, "docs/vectors/rans64.json")))
for k, b in enumerate(R64["blobs"]):
    put("rans64_decode", bytes([0, k % 8]) + bytes.fromhex(b["blob_hex"]), "blob")
    put("rans64_roundtrip", bytes([0, 7 + 16 * k, k % 2]) + bytes.fromhex(b["input_hex"]), "input")
for k, b in enumerate(R64["refusals"]):
    put("rans64_decode", bytes([0, k % 8]) + bytes.fromhex(b["blob_hex"]), "refusal")
# container: stamped int4-rans64-t1 tensors with their scales; the target asks for them at the
# [O, I] the scales and the blob's byte count give (here O = 4, I = 2 * n_bytes / 4).
for b in R64["blobs"][2:4]:
    blob = bytes.fromhex(b["blob_hex"])
    assert struct.unpack("<Q", blob[8:16])[0] % 4 == 0
    put("container", shard({STAMP: json.dumps({"w": "int4-rans64-t1"})},
                           [("w", "U8", [len(blob)], blob),
                            ("w.qs", "F32", [4], b"\x00\x00\x80\x3f" * 4)]), "rans64-vector")

# adapter: arbitrary bytes (the target derives shape, table, codes, mutations and activations
# from them); its own generator, so the seeds above do not move.
rng_adapter = random.Random(20261130)
for k in range(6):
    n = 96 + 211 * k
    put("adapter", bytes(rng_adapter.randrange(256) for _ in range(n)), "random")

# adapter_pipeline: the same kind of seeds, long enough that the byte mutations and nibbles
# are not empty from the start (the fixed fields alone take 43 bytes).
rng_pipeline = random.Random(20261204)
for k in range(6):
    n = 80 + 97 * k
    put("adapter_pipeline", bytes(rng_pipeline.randrange(256) for _ in range(n)), "random")

# capi: the C ABI's byte entry points; byte 0 picks the mode (see fuzz_targets/capi.rs), its
# own generator, so the seeds above do not move. Records (decoded with the target's fixed
# table), a table + nibbles + flips, streams, table parts, and the cfs1_decode and
# rans64_decode seeds above behind their mode bytes.
rng_capi = random.Random(0xCA91)
for r in V["records"][:8]:
    put("capi", b"\x00" + bytes.fromhex(r["record_hex"]), "record")
for r in V["record_refusals"][:12]:
    put("capi", b"\x00" + bytes.fromhex(r["record_hex"]), "refusal-" + r["class_c"])
for k in range(4):
    n = 300 + 1500 * k
    body = bytes(rng_capi.randrange(256) for _ in range(64 + 3 * k))
    put("capi", bytes([1, 13]) + u16s(typical["freq"]) + struct.pack("<H", n) + body, "encode")
for r in V["records"][:4]:
    rec = bytes.fromhex(r["record_hex"])
    ns = r["n_streams"]
    a, e = struct.unpack_from("<II", rec, 16)
    head = (16 + 4 * (ns + 1) + 15) & ~15
    n0 = (struct.unpack_from("<Q", rec, 0)[0] + ns - 1) // ns
    put("capi", bytes([2, (r["scale_bits"] - 1) % 15]) + u16s(r["freq"]) + struct.pack("<H", n0)
        + rec[head + a:head + e], "stream")
for k in range(4):
    put("capi", bytes([3, 10 + k, k]) + bytes(rng_capi.randrange(256) for _ in range(64 + 40 * k)), "table")
for t, mode in (("cfs1_decode", 4), ("rans64_decode", 5)):
    for f in sorted(os.listdir(os.path.join(OUT, t)))[:10]:
        data = open(os.path.join(OUT, t, f), "rb").read()
        if t == "rans64_decode":
            if data[0] % 2:
                continue
            data = data[1:]
        put("capi", bytes([mode]) + data, t.split("_")[0])

total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(OUT) for f in fs)
print("seeds:", {t: len(os.listdir(os.path.join(OUT, t))) for t in sorted(os.listdir(OUT))}, "bytes:", total)
