#!/usr/bin/env python3
"""Independent decoder of int4-rans64-t1, written from docs/int4-rans64-t1.md alone.

Checks docs/vectors/rans64.json: every blob decodes to its input, every refusal case is
refused with its class chunk by chunk, and with its up_front_class (where given, else its
class) when every chunk check is verified before any chunk is decoded. Pure Python, no dependencies; slow but only meant for the vectors.
Run: python3 docs/vectors/rans64_check.py [path/to/rans64.json]
"""
import json
import os
import sys

M, L = 4096, 1 << 16
M3, L3 = 256, 1 << 8


class Refused(Exception):
    pass


def u16(b, at):
    return b[at] | b[at + 1] << 8


def u32(b, at):
    return int.from_bytes(b[at:at + 4], "little")


MASK64 = (1 << 64) - 1
CHECK_P = 0x9E3779B97F4A7C15


def rotl64(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK64


def chunk_check(body):
    """Section 2.5: 32 lanes of rotl(h + w, 29) * P over the little-endian u64 words."""
    h = list(range(32))
    for k in range(0, len(body), 8):
        w = int.from_bytes(body[k:k + 8].ljust(8, b"\0"), "little")
        lane = (k // 8) % 32
        h[lane] = rotl64((h[lane] + w) & MASK64, 29) * CHECK_P & MASK64
    r = len(body)
    for lane in range(32):
        r ^= rotl64(h[lane], 2 * lane) if lane else h[lane]
    return r


def alias_layout(freq, bucket=256):
    """Section 2.1 (bucket 256) and section 7.2 (bucket 16): symbol and index of every slot."""
    rem, placed = list(freq), [False] * 16
    div, alias = [0] * 16, [0] * 16
    for _ in range(16):
        s = next(s for s in range(16) if not placed[s] and rem[s] <= bucket)
        placed[s], div[s], alias[s] = True, rem[s], s
        if rem[s] < bucket:
            g = next(g for g in range(16) if not placed[g] and rem[g] > bucket)
            alias[s] = g
            rem[g] -= bucket - rem[s]
    # index of every slot: own bucket first, then alias segments in bucket order
    sym_of, index_of = [0] * (16 * bucket), [0] * (16 * bucket)
    nxt = list(div)
    for b in range(16):
        for j in range(bucket):
            slot = bucket * b + j
            if j < div[b]:
                sym_of[slot], index_of[slot] = b, j
    for b in range(16):
        if div[b] < bucket:
            a = alias[b]
            for j in range(div[b], bucket):
                sym_of[bucket * b + j], index_of[bucket * b + j] = a, nxt[a]
                nxt[a] += 1
    assert nxt == list(freq)
    return sym_of, index_of


def decode_chunk3(body, S, R):
    """Section 7: a version-3 coded chunk (16-bit states, M = 256, byte refills)."""
    freq = list(body[:16])
    if sum(freq) != M3:
        raise Refused("E_TABLE")
    nbytes = [u32(body, 16 + 4 * w) for w in range(4)]
    if sum(nbytes) != S - 288:
        raise Refused("E_WAY_LENGTHS")
    state = [u16(body, 32 + 2 * l) for l in range(128)]
    if any(x < L3 for x in state):
        raise Refused("E_STATE_RANGE")
    streams, p = [], 288
    for w in range(4):
        streams.append(body[p:p + nbytes[w]])
        p += nbytes[w]
    pos = [0] * 4
    sym_of, index_of = alias_layout(freq, 16)
    chunk = bytearray(R)
    for r in range((R + 127) // 128):
        for w in range(4):
            lanes = [l for l in range(32 * w, 32 * w + 32) if 128 * r + l < R]
            for half in (0, 1):
                for l in lanes:
                    x = state[l]
                    s = sym_of[x & 255]
                    x = freq[s] * (x >> 8) + index_of[x & 255]
                    if x < L3:
                        if pos[w] == len(streams[w]):
                            raise Refused("E_OVERRUN")
                        x = (x << 8) | streams[w][pos[w]]
                        pos[w] += 1
                    state[l] = x
                    chunk[128 * r + l] |= s << (4 * half)
    if any(x != L3 for x in state):
        raise Refused("E_FINAL_STATE")
    if any(pos[w] != len(streams[w]) for w in range(4)):
        raise Refused("E_LEFTOVER")
    return chunk


def decode(blob, n_out, up_front=False):
    if blob[:4].ljust(4, b"\0") != b"T4R1":
        raise Refused("E_MAGIC")
    if len(blob) < 16:
        raise Refused("E_TRUNCATED")
    version = blob[4]
    if version not in (1, 2, 3):
        raise Refused("E_VERSION")
    shift = blob[5]
    if not 12 <= shift <= 26:
        raise Refused("E_CHUNK_SHIFT")
    if u16(blob, 6) != 0:
        raise Refused("E_RESERVED")
    n = int.from_bytes(blob[8:16], "little")
    if n > 1 << 48:
        raise Refused("E_TOO_LARGE")
    C = 1 << shift
    K = (n + C - 1) // C
    per_chunk = 4 if version == 1 else 12
    if len(blob) < 16 + per_chunk * K:
        raise Refused("E_TRUNCATED")
    sizes = [u32(blob, 16 + 4 * c) for c in range(K)]
    raws = [min(C, n - c * C) for c in range(K)]
    head = 288 if version == 3 else 304
    for S, R in zip(sizes, raws):
        if not (S == R or head <= S < R):
            raise Refused("E_CHUNK_SIZE")
    total = 16 + per_chunk * K + sum(sizes)
    if len(blob) < total:
        raise Refused("E_TRUNCATED")
    if len(blob) > total:
        raise Refused("E_TRAILING")
    assert n == n_out, "vector output length mismatch"
    def recorded(c):
        return int.from_bytes(blob[16 + 4 * K + 8 * c:16 + 4 * K + 8 * c + 8], "little")

    if up_front and version >= 2:
        # Section 2.5 allows verifying every check before decoding any chunk.
        at = 16 + per_chunk * K
        for c, S in enumerate(sizes):
            if chunk_check(blob[at:at + S]) != recorded(c):
                raise Refused("E_CHECKSUM")
            at += S
    out = bytearray()
    at = 16 + per_chunk * K
    for c, (S, R) in enumerate(zip(sizes, raws)):
        body = blob[at:at + S]
        at += S
        if version >= 2 and chunk_check(body) != recorded(c):
            raise Refused("E_CHECKSUM")
        if S == R:
            out += body
            continue
        if version == 3:
            out += decode_chunk3(body, S, R)
            continue
        freq = [u16(body, 2 * s) for s in range(16)]
        if sum(freq) != M or max(freq) > 4095:
            raise Refused("E_TABLE")
        words = [u32(body, 32 + 4 * w) for w in range(4)]
        if 2 * sum(words) != S - 304:
            raise Refused("E_WAY_LENGTHS")
        state = [u32(body, 48 + 4 * l) for l in range(64)]
        if any(x < L for x in state):
            raise Refused("E_STATE_RANGE")
        streams, p = [], 304
        for w in range(4):
            streams.append([u16(body, p + 2 * k) for k in range(words[w])])
            p += 2 * words[w]
        pos = [0] * 4
        sym_of, index_of = alias_layout(freq)
        chunk = bytearray(R)
        for r in range((R + 63) // 64):
            active = min(64, R - 64 * r)
            for half in (0, 1):
                for l in range(active):
                    x = state[l]
                    slot = x & 4095
                    s = sym_of[slot]
                    x = freq[s] * (x >> 12) + index_of[slot]
                    if x < L:
                        w = l // 16
                        if pos[w] == len(streams[w]):
                            raise Refused("E_OVERRUN")
                        x = (x << 16) | streams[w][pos[w]]
                        pos[w] += 1
                    state[l] = x
                    chunk[64 * r + l] |= s << (4 * half)
        if any(x != L for x in state):
            raise Refused("E_FINAL_STATE")
        if any(pos[w] != len(streams[w]) for w in range(4)):
            raise Refused("E_LEFTOVER")
        out += chunk
    return bytes(out)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "rans64.json")
    doc = json.load(open(path))
    for v in doc["blobs"]:
        got = decode(bytes.fromhex(v["blob_hex"]), len(v["input_hex"]) // 2)
        assert got == bytes.fromhex(v["input_hex"]), v["name"]
    for v in doc["refusals"]:
        for up_front in (False, True):
            want = v.get("up_front_class", v["class"]) if up_front else v["class"]
            try:
                decode(bytes.fromhex(v["blob_hex"]), v["n_bytes"], up_front)
            except Refused as e:
                assert str(e) == want, (v["name"], up_front, str(e), want)
            else:
                raise AssertionError(f"{v['name']}: accepted, expected {want}")
    print(f"rans64 vectors: {len(doc['blobs'])} blobs decoded, {len(doc['refusals'])} refusals matched")


if __name__ == "__main__":
    main()
