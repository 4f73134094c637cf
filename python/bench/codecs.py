"""compress/decompress from Python, to set beside `tetrad bench codecs --input FILE` on the
same bytes in the same run (docs/PYTHON.md, "Speed from Python").

    python python/bench/codecs.py FILE      # FILE: raw packed int4 bytes
"""
import json
import sys
import time

import numpy as np

import tetrad

data = np.fromfile(sys.argv[1], np.uint8)
nib = 2 * data.size
def med(f, runs=9):
    f()
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]
out = {}
for codec in ("int4-rans64-t1", "cfs1"):
    blob = tetrad.compress(data, codec)
    buf = np.empty(data.size, np.uint8)
    g = lambda t: round(nib / t / 1e9, 2)
    out[codec] = {"bytes": len(blob),
                  "compress": g(med(lambda: tetrad.compress(data, codec))),
                  "decompress": g(med(lambda: tetrad.decompress(blob, codec))),
                  "decompress_1thread": g(med(lambda: tetrad.decompress(blob, codec, threads=1))),
                  "decompress_out_1thread": g(med(lambda: tetrad.decompress(blob, codec, out=buf, threads=1))),
                  "decompress_out": g(med(lambda: tetrad.decompress(blob, codec, out=buf)))}
print(json.dumps(out))
