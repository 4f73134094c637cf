"""How much would each checkpoint of a folder shrink, losslessly? One line per checkpoint.

    python examples/stats_folder.py MODELS_DIR [--no-zstd]

Each sub-folder (or *.safetensors / *.gguf file) of MODELS_DIR is one checkpoint; a progress bar
on stderr (tqdm's if it is installed, else a counter) counts them.
"""

import argparse
import os
import sys

import tetrad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models")
    ap.add_argument("--no-zstd", action="store_true", help="skip zstd -19 (much faster)")
    args = ap.parse_args()
    entries = sorted(
        os.path.join(args.models, n) for n in os.listdir(args.models)
        if os.path.isdir(os.path.join(args.models, n)) or n.endswith((".safetensors", ".gguf"))
    )
    try:
        from tqdm import tqdm
        entries_iter = tqdm(entries, unit="checkpoint", file=sys.stderr)
    except ImportError:  # a plain counter on stderr instead
        def counted(items):
            for k, item in enumerate(items, 1):
                print(f"\r[{k}/{len(items)}] {os.path.basename(item)}", end="", file=sys.stderr,
                      flush=True)
                yield item
            print(file=sys.stderr)
        entries_iter = counted(entries)
    print(f"{'checkpoint':40} {'H0 bits':>8} {'rans256':>8} {'zstd-19':>8}")
    for path in entries_iter:
        try:
            doc = tetrad.stats(path, zstd=not args.no_zstd)
        except tetrad.Refused as e:
            print(f"{os.path.basename(path):40} refused: {e.cls}", file=sys.stderr)
            continue
        total = doc["total"] or {}
        ratio = lambda k: f"{total[k]:.3f}x" if total.get(k) else "-"  # noqa: E731
        print(f"{os.path.basename(path):40} {total.get('entropy_bits') or 0:8.4f} {ratio('rans256_ratio'):>8} {ratio('zstd19_ratio'):>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
