"""colibri's rANS bridge in libtetrad, driven the way colibri's Python tools drive it.

    python3 test_bridge.py LIBTETRAD VECTORS.json

The library is copied into a temporary folder as librans_c.so and loaded from there, with the
ctypes declarations of colibri's int4-rans256-g0 reference module (repack_rans.py and
rans_verify.py share them). VECTORS.json (written by capi/tests/abi.rs with tetrad_rans)
holds records, corruptions, tables and streams with the results of tetrad's Rust API; every
call must give the same bytes and the same rans_err. Plain python3 (ctypes, unittest, json).
"""
import atexit
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

# colibri's rans_err, by number (written out here, not read from the library).
ERR_NAMES = [
    "OK", "E_TRUNCATED", "E_EMPTY", "E_COUNT_MISMATCH", "E_OVERSIZE", "E_OFFSET_FIRST",
    "E_OFFSETS_MONOTONIC", "E_STREAM_SHORT", "E_LENGTH_MISMATCH", "E_PAD_NONZERO",
    "E_UNALIGNED", "E_NSTREAMS", "E_TABLE_SCALE", "E_TABLE_FREQ_SUM", "E_TABLE_START",
    "E_TABLE_SLOT", "E_STREAM_STATE_RANGE", "E_STREAM_UNDERRUN", "E_STREAM_LEFTOVER",
    "E_STREAM_FINAL_STATE", "E_SYMBOL_UNCODABLE", "E_SCRATCH", "E_NOMEM", "E_PATH_UNAVAILABLE",
]
CODE = {n: i for i, n in enumerate(ERR_NAMES)}
N_STREAMS = 256
SLACK = 64

LIB_SRC = None
VECTORS = None
LIB = None
SEEN = set()  # rans_err names the checks below observed


def load_lib(folder):
    """colibri's _load_lib: the library next to the tools, declared exactly as they do."""
    for name in ("librans_c.dylib", "librans_c.so", "rans_c.dll"):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        lib = ctypes.CDLL(path)
        u8p = ctypes.POINTER(ctypes.c_uint8)
        u16p = ctypes.POINTER(ctypes.c_uint16)
        u32p = ctypes.POINTER(ctypes.c_uint32)
        u64p = ctypes.POINTER(ctypes.c_uint64)
        lib.rc_record_encode.argtypes = [u8p, ctypes.c_uint64, u32p, u32p, u16p,
                                         ctypes.c_uint32, ctypes.c_uint32,
                                         u8p, ctypes.c_uint64]
        lib.rc_record_encode.restype = ctypes.c_int64
        lib.rc_record_bound.argtypes = [ctypes.c_uint64, ctypes.c_uint32]
        lib.rc_record_bound.restype = ctypes.c_uint64
        lib.rc_record_parse.argtypes = [u8p, ctypes.c_uint64, ctypes.c_uint32,
                                        u64p, u64p]
        lib.rc_record_parse.restype = ctypes.c_int32
        lib.rc_record_decode.argtypes = [u8p, ctypes.c_uint64, ctypes.c_uint32,
                                         u32p, u32p, u16p, ctypes.c_uint32,
                                         ctypes.c_int32, u8p]
        lib.rc_record_decode.restype = ctypes.c_int32
        lib.rc_stream_decode_checked.argtypes = [u8p, ctypes.c_uint64,
                                                 ctypes.c_uint64, u32p, u32p,
                                                 u16p, ctypes.c_uint32, u8p]
        lib.rc_stream_decode_checked.restype = ctypes.c_int32
        lib.rc_err_name.argtypes = [ctypes.c_int32]
        lib.rc_err_name.restype = ctypes.c_char_p
        lib.rc_path_name.argtypes = []
        lib.rc_path_name.restype = ctypes.c_char_p
        return lib
    return None


def u8p(buf, offset=0):
    return ctypes.cast(ctypes.addressof(buf) + offset, ctypes.POINTER(ctypes.c_uint8))


def aligned(data, extra=SLACK):
    """The bytes in a 4-byte aligned buffer with `extra` zero bytes after them (colibri's tools
    copy each record into a slack-padded buffer)."""
    words = (ctypes.c_uint32 * ((len(data) + extra + 3) // 4 + 1))()
    ctypes.memmove(words, data, len(data))
    return words


def table_args(t):
    freq = (ctypes.c_uint32 * 16)(*t["freq"])
    start = (ctypes.c_uint32 * 16)(*t["start"])
    slots = (ctypes.c_uint16 * max(1, len(t["slots"])))(*t["slots"])
    return freq, start, slots, t["scale_bits"]


def err_name(code):
    return LIB.rc_err_name(code).decode("ascii")


def record_bound(n):
    """colibri's rans_record_bound, in Python integers taken mod 2^64."""
    per = n // N_STREAMS + 1
    per_bytes = (per * 15 + 7) // 8 + 4 + 64
    head = (16 + (N_STREAMS + 1) * 4 + 15) & ~15
    return (head + ((per_bytes * N_STREAMS + 15) & ~15)) % (1 << 64)


def decode(blob, table, path, n_streams=N_STREAMS, out_len=None):
    buf = aligned(blob)
    freq, start, slots, sb = table_args(table)
    if out_len is None:
        n = int.from_bytes(blob[8:16], "little") if len(blob) >= 16 else 0
        out_len = n
    out = (ctypes.c_uint8 * max(1, out_len))()
    rc = LIB.rc_record_decode(u8p(buf), len(blob), n_streams, freq, start, slots, sb, path, out)
    return rc, bytes(out)[:out_len]


# ---- an independent reference of the format, for the random differential test ------------
# Written from the format's description (docs/int4-rans256-g0.md and colibri's codec header
# comments): record framing and its refusal order, the table checks, the encoder, the plain
# decoder (what rc_record_decode writes) and the checked stream decode.
RANS_L = 1 << 23
HEAD = (16 + (N_STREAMS + 1) * 4 + 15) & ~15


def ref_table(sb, freq, start, slots):
    if not 1 <= sb <= 15:
        return "E_TABLE_SCALE"
    acc = 0
    for s in range(16):
        if start[s] != acc:
            return "E_TABLE_START"
        acc += freq[s]
    if acc != 1 << sb:
        return "E_TABLE_FREQ_SUM"
    for i in range(1 << sb):
        v = slots[i]
        if v > 15 or not start[v] <= i < start[v] + freq[v]:
            return "E_TABLE_SLOT"
    return "OK"


def ref_parse(blob):
    """(class, n_symbols, packed_bytes) in colibri's order, for a 4-byte aligned blob."""
    if len(blob) < HEAD:
        return ("E_TRUNCATED", 0, 0)
    n = int.from_bytes(blob[0:8], "little")
    pb = int.from_bytes(blob[8:16], "little")
    if n == 0:
        return ("E_EMPTY", 0, 0)
    if pb != n // 2 + (n & 1):
        return ("E_COUNT_MISMATCH", 0, 0)
    off = [int.from_bytes(blob[16 + 4 * i:20 + 4 * i], "little") for i in range(N_STREAMS + 1)]
    if off[0] != 0:
        return ("E_OFFSET_FIRST", 0, 0)
    for i in range(N_STREAMS):
        if off[i + 1] < off[i]:
            return ("E_OFFSETS_MONOTONIC", 0, 0)
        if off[i + 1] - off[i] < 4:
            return ("E_STREAM_SHORT", 0, 0)
    plen = off[N_STREAMS]
    if HEAD + plen > len(blob):
        return ("E_TRUNCATED", 0, 0)
    if len(blob) != HEAD + ((plen + 15) & ~15):
        return ("E_LENGTH_MISMATCH", 0, 0)
    if n > plen * 8 * (1 << 15):
        return ("E_OVERSIZE", 0, 0)
    if any(blob[16 + (N_STREAMS + 1) * 4:HEAD]) or any(blob[HEAD + plen:]):
        return ("E_PAD_NONZERO", 0, 0)
    return ("OK", n, pb)


def ref_encode_stream(syms, freq, start, sb):
    out = bytearray()
    x = RANS_L
    for s in reversed(syms):
        f = freq[s]
        x_max = ((RANS_L >> sb) << 8) * f
        while x >= x_max:
            out.append(x & 0xFF)
            x >>= 8
        x = ((x // f) << sb) + (x % f) + start[s]
    for _ in range(4):
        out.append(x & 0xFF)
        x >>= 8
    return bytes(out[::-1])


def ref_encode(nib, freq, start, sb):
    if len(nib) == 0:
        return "E_EMPTY"
    if any(v > 15 or freq[v] == 0 for v in nib):
        return "E_SYMBOL_UNCODABLE"
    streams = [ref_encode_stream(nib[i::N_STREAMS], freq, start, sb) for i in range(N_STREAMS)]
    n = len(nib)
    head = n.to_bytes(8, "little") + (n // 2 + (n & 1)).to_bytes(8, "little")
    acc = 0
    for st in streams:
        head += acc.to_bytes(4, "little")
        acc += len(st)
    head += acc.to_bytes(4, "little")
    head += bytes(HEAD - len(head))
    payload = b"".join(streams)
    return head + payload + bytes(((len(payload) + 15) & ~15) - len(payload))


def ref_step(x, buf, pos, end, freq, start, slots, sb):
    slot = x & ((1 << sb) - 1)
    s = slots[slot]
    x = (freq[s] * (x >> sb) + slot - start[s]) & 0xFFFFFFFF
    while x < RANS_L and pos < end:
        x = ((x << 8) | buf[pos]) & 0xFFFFFFFF
        pos += 1
    return s, x, pos


def ref_decode_plain(blob, freq, start, slots, sb):
    n = int.from_bytes(blob[0:8], "little")
    off = [int.from_bytes(blob[16 + 4 * i:20 + 4 * i], "little") for i in range(N_STREAMS + 1)]
    nib = bytearray(n + 1)
    for i in range(N_STREAMS):
        pos, end = HEAD + off[i], HEAD + off[i + 1]
        x = int.from_bytes(blob[pos:pos + 4], "big")
        pos += 4
        for j in range(i, n, N_STREAMS):
            nib[j], x, pos = ref_step(x, blob, pos, end, freq, start, slots, sb)
    return bytes(nib[2 * k] | (nib[2 * k + 1] << 4) for k in range((n + 1) // 2))


def ref_stream_checked(buf, n, freq, start, slots, sb):
    if len(buf) < 4:
        return "E_STREAM_UNDERRUN", None
    x = int.from_bytes(buf[:4], "big")
    if x < RANS_L:
        return "E_STREAM_STATE_RANGE", None
    pos, out = 4, bytearray(n)
    for i in range(n):
        out[i], x, pos = ref_step(x, buf, pos, len(buf), freq, start, slots, sb)
    if pos != len(buf):
        return "E_STREAM_LEFTOVER", None
    if x != RANS_L:
        return "E_STREAM_FINAL_STATE", None
    return "OK", bytes(out)


def random_table(rng):
    sb = rng.randrange(5, 16)
    m = 1 << sb
    present = [s for s in range(16) if rng.random() < 0.8] or [8]
    weights = {s: rng.choice([1, 1, 2, 5, 20, 100, 1000]) for s in present}
    total = sum(weights.values())
    freq = [0] * 16
    for s in present:
        freq[s] = max(1, weights[s] * m // total)
    top = max(present, key=lambda s: freq[s])
    freq[top] += m - sum(freq)
    if freq[top] < 1:
        return random_table(rng)
    start, acc = [], 0
    for f in freq:
        start.append(acc)
        acc += f
    slots = [s for s in range(16) for _ in range(freq[s])]
    return {"scale_bits": sb, "freq": freq, "start": start, "slots": slots}


class Bridge(unittest.TestCase):
    def test_loaded_as_librans_c(self):
        self.assertIsNotNone(LIB)
        self.assertTrue(os.path.basename(LIB._name) == "librans_c.so")

    def test_err_names(self):
        for e, name in enumerate(ERR_NAMES):
            self.assertEqual(err_name(e), name)
            self.assertEqual(err_name(-e), name)
        self.assertEqual(err_name(24), "E_UNKNOWN")
        self.assertEqual(err_name(-(2 ** 31)), "E_UNKNOWN")

    def test_bound(self):
        for n in [0, 1, 255, 256, 257, 5001, 1 << 20, 1 << 40, (1 << 64) - 1]:
            self.assertEqual(LIB.rc_record_bound(n, N_STREAMS), record_bound(n), n)
        for ns in [0, 1, 255, 257, 1 << 31]:
            self.assertEqual(LIB.rc_record_bound(1000, ns), 0)
        for v in VECTORS["encodes"]:
            self.assertLessEqual(len(bytes.fromhex(v["record"])), record_bound(v["n_symbols"]))

    def test_encode(self):
        parities = set()
        for v in VECTORS["encodes"]:
            nib = bytes.fromhex(v["nibbles"])
            want = bytes.fromhex(v["record"])
            parities.add(len(nib) % 2)
            freq, start, slots, sb = table_args(v["table"])
            src = (ctypes.c_uint8 * len(nib)).from_buffer_copy(nib)
            for cap in [LIB.rc_record_bound(len(nib), N_STREAMS) + SLACK, len(want)]:
                out = (ctypes.c_uint8 * cap)()
                rc = LIB.rc_record_encode(src, len(nib), freq, start, slots, sb, N_STREAMS, out, cap)
                self.assertEqual(rc, len(want), (len(nib), err_name(rc) if rc < 0 else rc))
                self.assertEqual(bytes(out)[:rc], want, len(nib))
            out = (ctypes.c_uint8 * len(want))()
            rc = LIB.rc_record_encode(src, len(nib), freq, start, slots, sb, N_STREAMS, out,
                                      len(want) - 1)
            self.assertEqual(err_name(rc), "E_SCRATCH")
            SEEN.add("E_SCRATCH")
            rc = LIB.rc_record_encode(src, len(nib), freq, start, slots, sb, 255, out, len(want))
            self.assertEqual(rc, -CODE["E_NSTREAMS"])
            SEEN.add("E_NSTREAMS")
            SEEN.add("OK")
        self.assertEqual(parities, {0, 1}, "odd and even lengths")

    def test_encode_refusals(self):
        for v in VECTORS["encode_refusals"]:
            nib = bytes.fromhex(v["nibbles"])
            freq, start, slots, sb = table_args(v["table"])
            src = (ctypes.c_uint8 * max(1, len(nib))).from_buffer_copy(nib or b"\0")
            out = (ctypes.c_uint8 * v["cap"])()
            rc = LIB.rc_record_encode(src, len(nib), freq, start, slots, sb, N_STREAMS, out, v["cap"])
            self.assertLess(rc, 0, v["what"])
            self.assertEqual(err_name(rc), v["rc"], v["what"])
            SEEN.add(v["rc"])
        for v in VECTORS["tables"]:
            nib = bytes([8] * 100)
            freq, start, slots, sb = table_args(v["table"])
            src = (ctypes.c_uint8 * 100).from_buffer_copy(nib)
            out = (ctypes.c_uint8 * 40000)()
            rc = LIB.rc_record_encode(src, 100, freq, start, slots, sb, N_STREAMS, out, 40000)
            self.assertEqual(err_name(rc), v["rc"], v["what"])
            SEEN.add(v["rc"])

    def test_parse(self):
        for v in VECTORS["parses"]:
            blob = bytes.fromhex(v["record"])
            buf = aligned(blob)
            ns, pb = ctypes.c_uint64(7), ctypes.c_uint64(7)
            rc = LIB.rc_record_parse(u8p(buf), len(blob), N_STREAMS, ctypes.byref(ns), ctypes.byref(pb))
            self.assertEqual(err_name(rc), v["rc"], v["what"])
            SEEN.add(v["rc"])
            if v["rc"] == "OK":
                self.assertEqual((ns.value, pb.value), (v["n_symbols"], v["packed_bytes"]))
                self.assertEqual(LIB.rc_record_parse(u8p(buf), len(blob), N_STREAMS, None, None), 0)
                rc = LIB.rc_record_parse(u8p(buf, 1), len(blob), N_STREAMS, None, None)
                self.assertEqual(err_name(rc), "E_UNALIGNED")
                SEEN.add("E_UNALIGNED")
                rc = LIB.rc_record_parse(u8p(buf), len(blob), 128, None, None)
                self.assertEqual(err_name(rc), "E_NSTREAMS")
            else:
                self.assertEqual((ns.value, pb.value), (7, 7), "nothing written on a refusal")
        for v in VECTORS["encodes"]:
            blob = bytes.fromhex(v["record"])
            buf = aligned(blob)
            ns, pb = ctypes.c_uint64(), ctypes.c_uint64()
            self.assertEqual(LIB.rc_record_parse(u8p(buf), len(blob), N_STREAMS, ctypes.byref(ns),
                                                 ctypes.byref(pb)), 0)
            self.assertEqual((ns.value, pb.value), (v["n_symbols"], v["packed_bytes"]))

    def test_decode_every_arm(self):
        paths = VECTORS["paths"]
        self.assertEqual([p["name"] for p in paths], ["scalar", "scalar_bf", "neon", "avx512"])
        parities = set()
        for v in VECTORS["decodes"]:
            blob = bytes.fromhex(v["record"])
            want = bytes.fromhex(v["packed"])
            parities.add(int.from_bytes(blob[:8], "little") % 2)
            for path in [-1, 0, 1, 2, 3]:
                rc, got = decode(blob, v["table"], path, out_len=len(want))
                if path < 0 or paths[path]["available"]:
                    self.assertEqual(err_name(rc), v["rc"], (v.get("what"), path))
                    self.assertEqual(got, want, (v.get("what"), path))
                else:
                    self.assertEqual(err_name(rc), "E_PATH_UNAVAILABLE", path)
                    SEEN.add("E_PATH_UNAVAILABLE")
            for path in [4, 100]:
                rc, _ = decode(blob, v["table"], path, out_len=len(want))
                self.assertEqual(err_name(rc), "E_PATH_UNAVAILABLE")
            rc, _ = decode(blob, v["table"], -1, n_streams=0, out_len=len(want))
            self.assertEqual(err_name(rc), "E_NSTREAMS")
        self.assertEqual(parities, {0, 1}, "odd and even symbol counts")
        base = VECTORS["decodes"][0]
        for v in VECTORS["tables"]:
            rc, _ = decode(bytes.fromhex(base["record"]), v["table"], -1)
            self.assertEqual(err_name(rc), v["rc"], v["what"])
        for v in VECTORS["parses"]:
            if v["rc"] != "OK":
                rc, _ = decode(bytes.fromhex(v["record"]), base["table"], -1, out_len=1)
                self.assertEqual(err_name(rc), v["rc"], v["what"])

    def test_stream_checked(self):
        table = VECTORS["decodes"][0]["table"]
        freq, start, slots, sb = table_args(table)
        for v in VECTORS["streams"]:
            s = bytes.fromhex(v["stream"])
            src = (ctypes.c_uint8 * max(1, len(s))).from_buffer_copy(s or b"\0")
            out = (ctypes.c_uint8 * max(1, v["n"]))()
            rc = LIB.rc_stream_decode_checked(src, len(s), v["n"], freq, start, slots, sb, out)
            self.assertEqual(err_name(rc), v["rc"], v["what"])
            SEEN.add(v["rc"])
            if v["rc"] == "OK":
                self.assertEqual(bytes(out)[:v["n"]].hex(), v["nibbles"], v["what"])

    def test_path_selection_from_the_environment(self):
        paths = {p["name"]: p["available"] for p in VECTORS["paths"]}
        best = "avx512" if paths["avx512"] else "neon" if paths["neon"] else "scalar_bf"
        no_avx = "neon" if paths["neon"] else "scalar_bf"
        cases = [
            ({}, best),
            ({"RANS_PATH": ""}, best),
            ({"RANS_PATH": "scalar"}, "scalar"),
            ({"RANS_PATH": "scalar_bf"}, "scalar_bf"),
            ({"RANS_PATH": "neon"}, "neon" if paths["neon"] else "invalid"),
            ({"RANS_PATH": "avx512"}, "avx512" if paths["avx512"] else "invalid"),
            ({"RANS_PATH": "avx2"}, "invalid"),
            ({"RANS_AVX512": "0"}, no_avx),
            ({"RANS_AVX512": "off"}, no_avx),
            ({"RANS_AVX512": "1"}, best),
            ({"RANS_PATH": "avx512", "RANS_AVX512": "0"}, "invalid"),
            ({"RANS_NEON": "0", "RANS_AVX512": "0"}, "scalar_bf"),
        ]
        for env, want in cases:
            full = {k: v for k, v in os.environ.items() if not k.startswith("RANS_")}
            full.update(env)
            out = subprocess.run([sys.executable, __file__, "--select", LIB_SRC, VECTORS_PATH],
                                 env=full, capture_output=True, text=True, check=True).stdout.split()
            self.assertEqual(out[0], want, env)
            # path < 0 decodes on the selected path, or refuses when it is invalid
            self.assertEqual(out[1], "E_PATH_UNAVAILABLE" if want == "invalid" else "OK", env)

    def test_random_against_the_reference(self):
        """Random tables, nibbles and damage: the bridge and the reference above agree on every
        encode (bytes), parse (class and counts), decode on every available path (bytes) and
        checked stream decode (class and nibbles)."""
        import random
        rng = random.Random(0x7E7)
        paths = [p["path"] for p in VECTORS["paths"] if p["available"]]
        counts = {"refused": 0, "decoded": 0, "damaged decoded": 0}
        for it in range(120):
            t = random_table(rng)
            freq, start, slots, sb = table_args(t)
            self.assertEqual(ref_table(sb, t["freq"], t["start"], t["slots"]), "OK")
            codable = [s for s in range(16) if t["freq"][s]]
            n = rng.choice([1, 2, 3, rng.randrange(1, 700), rng.randrange(700, 3000)])
            skew = rng.choice(codable)
            nib = bytes(skew if rng.random() < 0.7 else rng.choice(codable) for _ in range(n))
            want = ref_encode(nib, t["freq"], t["start"], sb)
            cap = LIB.rc_record_bound(n, N_STREAMS)
            out = (ctypes.c_uint8 * cap)()
            src = (ctypes.c_uint8 * n).from_buffer_copy(nib)
            rc = LIB.rc_record_encode(src, n, freq, start, slots, sb, N_STREAMS, out, cap)
            self.assertEqual(bytes(out)[:rc], want, it)
            blob = bytearray(want)
            for _ in range(rng.choice([0, 0, 1, 1, 2, 4])):
                kind = rng.randrange(6)
                if kind == 0 and len(blob) > HEAD:  # a payload byte
                    k = rng.randrange(HEAD, len(blob))
                    blob[k] ^= 1 << rng.randrange(8)
                elif kind == 1 and len(blob) >= HEAD:  # an offset
                    k = 16 + 4 * rng.randrange(N_STREAMS + 1)
                    v = (int.from_bytes(blob[k:k + 4], "little") + rng.choice([-5, -1, 1, 3, 16])) % (1 << 32)
                    blob[k:k + 4] = v.to_bytes(4, "little")
                elif kind == 2 and len(blob) >= 16:  # the counts
                    k = rng.choice([0, 8])
                    v = (int.from_bytes(blob[k:k + 8], "little") + rng.choice([-1, 1, 1 << 40])) % (1 << 64)
                    blob[k:k + 8] = v.to_bytes(8, "little")
                elif kind == 3 and blob:  # length
                    blob = blob[:rng.randrange(len(blob))] if rng.random() < 0.5 else blob + bytes(rng.choice([1, 16]))
                elif kind == 4:  # an initial state
                    i = rng.randrange(N_STREAMS)
                    k = HEAD + int.from_bytes(want[16 + 4 * i:20 + 4 * i], "little")
                    if k < len(blob):
                        blob[k] = 0
                elif kind == 5:  # a pad byte
                    k = rng.choice([HEAD - 1, len(blob) - 1])
                    if 0 <= k < len(blob):
                        blob[k] ^= 0x80
            blob = bytes(blob)
            cls, rn, rpb = ref_parse(blob)
            buf = aligned(blob)
            ns, pb = ctypes.c_uint64(), ctypes.c_uint64()
            rc = LIB.rc_record_parse(u8p(buf), len(blob), N_STREAMS, ctypes.byref(ns), ctypes.byref(pb))
            self.assertEqual(err_name(rc), cls, it)
            SEEN.add(cls)
            if cls != "OK":
                counts["refused"] += 1
                continue
            self.assertEqual((ns.value, pb.value), (rn, rpb))
            if rpb > 1 << 16:
                continue
            plain = ref_decode_plain(blob, t["freq"], t["start"], t["slots"], sb)
            counts["decoded"] += 1
            counts["damaged decoded"] += blob != want
            for path in [-1] + paths:
                rc, got = decode(blob, t, path, out_len=rpb)
                self.assertEqual((err_name(rc), got), ("OK", plain), (it, path))
            # The checked decode of stream i with its symbol count, and of damaged copies.
            i = rng.randrange(N_STREAMS)
            a = HEAD + int.from_bytes(blob[16 + 4 * i:20 + 4 * i], "little")
            e = HEAD + int.from_bytes(blob[20 + 4 * i:24 + 4 * i], "little")
            count = len(range(i, rn, N_STREAMS))
            for sbuf, k in [(blob[a:e], count), (blob[a:e], count + 1), (blob[a:e + 1], count),
                            (blob[a:a + 3], count)]:
                rcls, rnib = ref_stream_checked(sbuf, k, t["freq"], t["start"], t["slots"], sb)
                sb_in = (ctypes.c_uint8 * max(1, len(sbuf))).from_buffer_copy(sbuf or b"\0")
                o = (ctypes.c_uint8 * max(1, k))()
                rc = LIB.rc_stream_decode_checked(sb_in, len(sbuf), k, freq, start, slots, sb, o)
                self.assertEqual(err_name(rc), rcls, (it, i, len(sbuf), k))
                SEEN.add(rcls)
                if rcls == "OK":
                    self.assertEqual(bytes(o)[:k], rnib)
        print("random differential:", counts, file=sys.stderr)
        self.assertGreaterEqual(min(counts.values()), 10, counts)

    def test_z_every_class_seen(self):
        expected = set(ERR_NAMES) - {"E_NOMEM"}  # the reference's malloc failure
        self.assertEqual(expected - SEEN, set(), "rans_err classes no check produced")


def select_mode():
    """Child of test_path_selection_from_the_environment: prints rc_path_name() and the
    class of a path -1 decode."""
    global LIB
    LIB = load_lib(copy_as_librans_c(LIB_SRC))
    v = VECTORS["decodes"][0]
    rc, got = decode(bytes.fromhex(v["record"]), v["table"], -1)
    ok = rc != 0 or got == bytes.fromhex(v["packed"])
    print(LIB.rc_path_name().decode("ascii"), err_name(rc) if ok else "WRONG_BYTES")


def copy_as_librans_c(src):
    """A temporary folder holding the library as colibri's tools name it, removed when this
    process exits (the loaded library stays mapped, so removing the file is safe)."""
    folder = tempfile.mkdtemp(prefix="colibri-tools-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    shutil.copy(src, os.path.join(folder, "librans_c.so"))
    return folder


if __name__ == "__main__":
    args = sys.argv[1:]
    select = args[:1] == ["--select"]
    if select:
        args = args[1:]
    if len(args) != 2:
        sys.exit("usage: test_bridge.py [--select] LIBTETRAD VECTORS.json")
    LIB_SRC, VECTORS_PATH = args
    with open(VECTORS_PATH) as f:
        VECTORS = json.load(f)
    if select:
        select_mode()
        sys.exit(0)
    LIB = load_lib(copy_as_librans_c(LIB_SRC))
    unittest.main(argv=[sys.argv[0], "-v"])
