#!/usr/bin/env bash
# Guest instructions per decoded nibble on aarch64, counted under qemu-aarch64 (user mode, no
# TCG plugins needed): `int4-rans64-t1` version 3 and version 2 on the NEON arm (and, with
# SCALAR=1, the scalar arm) against libzstd's decoder at levels 1, 3 and 19, on the same
# packed int4 bytes.
#
# Usage: benches/insn-count.sh INPUT [WORK_DIR]
#   INPUT     synth:BYTES (`tetrad::synth::int4_bytes`, the data of `tetrad bench`), a file of
#             packed int4 bytes, or a .safetensors file (its U8 tensors' bytes, concatenated
#             in file order: the int4 codes of `tetrad quantize --format int4-row`)
#   WORK_DIR  where the blobs are written (default: a new temporary directory)
#   BYTES=N   (environment) count on the first N bytes of a file INPUT only
#
# Method: the driver (benches/examples/insn_count.rs), built for aarch64, encodes the input
# (v2 blob, v3 blob, zstd frames; not counted) and decodes it. Each decode runs twice under
# `qemu-aarch64 -cpu max` with one guest instruction per translation block (`-one-insn-per-tb`,
# `-singlestep` on older qemu) and `-d exec,nochain`, which logs one line per executed guest
# instruction: once decoding and once `dry` (the same process without the decode call). The
# difference is the decode's instruction count (process start, reading the file, the arm's
# selftest and the zstd context cancel out), divided by the nibbles decoded (2 per byte).
# Instructions are counted, not cycles: nothing here models issue width, latency or memory.
#
# Needs: qemu-user, the aarch64 cross gcc (`gcc-aarch64-linux-gnu`, also for libzstd's C
# code), the Rust target aarch64-unknown-linux-gnu, python3 for .safetensors input. A run of
# 4 MiB (8 Mi nibbles) logs about 10^8 lines per codec; qemu writes about 10^6 a second.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
input=$1
work=${2:-$(mktemp -d)}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

cargo build -q --release --target aarch64-unknown-linux-gnu -p tetrad-benches --example insn_count
guest=target/aarch64-unknown-linux-gnu/release/examples/insn_count

mkdir -p "$work"
case "$input" in
*.safetensors)
    python3 - "$input" "$work/input.int4" <<'EOF'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
tensors = sorted((v["data_offsets"] for k, v in header.items()
                  if k != "__metadata__" and v["dtype"] == "U8"), key=lambda o: o[0])
with open(sys.argv[2], "wb") as out:
    for a, b in tensors:
        out.write(data[a:b])
EOF
    input=$work/input.int4
    ;;
esac
qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu "$guest" prepare "$input" "$work"
n=$(cat "$work/n")

if qemu-aarch64 -h | grep -q -- -one-insn-per-tb; then one=-one-insn-per-tb; else one=-singlestep; fi
qemu=(qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu "$one" -d exec,nochain -D /dev/stdout)

# Executed guest instructions of `insn_count decode ARGS...`.
count() {
    "${qemu[@]}" "$guest" decode "$@" | grep -c '^Trace'
}

echo "input: $1, $n bytes = $((2 * n)) nibbles; $(qemu-aarch64 --version | head -1)"
printf '%-26s %12s %14s %10s\n' codec "coded bytes" instructions "per nibble"
row() {
    local label=$1 codec=$2 file=$3
    local full dry
    full=$(count "$codec" "$file" "$n")
    dry=$(count "$codec" "$file" "$n" dry)
    awk -v l="$label" -v s="$(stat -c %s "$file")" -v i="$((full - dry))" -v n="$n" \
        'BEGIN { printf "%-26s %12d %14d %10.3f\n", l, s, i, i / (2 * n) }'
}
row "int4-rans64-t1 v3 neon" rans64:neon "$work/v3.blob"
row "int4-rans64-t1 v2 neon" rans64:neon "$work/v2.blob"
row "  of which the chunk check" check "$work/v3.blob"
if [ "${SCALAR:-0}" = 1 ]; then
    row "int4-rans64-t1 v3 scalar" rans64:scalar "$work/v3.blob"
    row "int4-rans64-t1 v2 scalar" rans64:scalar "$work/v2.blob"
fi
for level in 1 3 19; do
    row "zstd -$level" zstd "$work/zstd-$level.zst"
done
