"""colibri's rANS bridge in libtetrad, driven the way colibri's Python tools drive it.

    python3 test_bridge.py LIBTETRAD VECTORS.json

The library is copied into a temporary folder as librans_c.so and loaded from there, with the
ctypes declarations of colibri's int4-rans256-g0 reference module (repack_rans.py and
rans_verify.py share them). VECTORS.json (written by capi/tests/abi.rs with tetrad_rans)
holds records, corruptions, tables and streams with the results of tetrad's Rust API; every
call must give the same bytes and the same rans_err. Plain python3 (ctypes, unittest, json).
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

# colibri's c/rans.h rans_err, by number (written out here, not read from the library).
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
    folder = tempfile.mkdtemp(prefix="colibri-tools-")
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
