"""Pack a checkpoint across the workers of a Dask cluster, byte-identical to `tetrad pack`.

    python examples/dask_pack.py INDIR OUTDIR [--scheduler tcp://host:8786] [--select REGEX]

Without --scheduler a LocalCluster of processes on this machine is started. Workers must see
INDIR and OUTDIR at the same paths (a shared file system).
"""

import argparse

import distributed

import tetrad
import tetrad.dask


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("indir")
    ap.add_argument("outdir")
    ap.add_argument("--scheduler")
    ap.add_argument("--select")
    ap.add_argument("--codec", default="int4-rans256-g0", choices=tetrad.PACK_CODECS)
    args = ap.parse_args()
    if args.scheduler:
        client = distributed.Client(args.scheduler)
    else:
        client = distributed.Client(distributed.LocalCluster(processes=True))
    with client:
        tetrad.dask.pack(args.indir, args.outdir, client, select=args.select, codec=args.codec)
    print(tetrad.verify(args.outdir)["result"])


if __name__ == "__main__":
    main()
