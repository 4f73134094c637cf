"""``pack`` and ``stats`` spread over a Dask cluster (``pip install "./python[dask]"``).

``pack`` is a map-reduce: each worker counts the nibbles of its input shards, the counts are
summed into the one pooled table, each worker packs its shards with that table, and a last step
writes the manifest. The output is byte for byte what ``tetrad pack`` writes on one machine.
Workers must see ``indir`` and ``outdir`` at the same paths (a shared file system).
"""

from __future__ import annotations

import os
from typing import Iterable, List, Optional, Sequence

import tetrad


def _client(client):
    if client is not None:
        return client
    from distributed import get_client

    try:
        return get_client()
    except ValueError as e:
        raise ValueError(
            "no Dask client: pass client=, or create one first "
            "(distributed.Client() or a LocalCluster)"
        ) from e


def _input_shards(indir: str) -> List[str]:
    return sorted(
        n for n in os.listdir(indir)
        if n.endswith(".safetensors") and not n.startswith(".")
        and os.path.isfile(os.path.join(indir, n))
    )


def _count(indir: str, select: Optional[str], shard: str) -> Optional[tetrad.Histogram]:
    try:
        return tetrad.histogram(indir, select=select, shards=[shard])
    except tetrad.Refused as e:
        if e.cls == "E_NO_INPUT":  # this shard owns no selected weight: nothing to count
            return None
        raise


def pack(indir, outdir, client=None, *, select: Optional[str] = None,
         codec: str = "int4-rans256-g0", force: bool = False) -> str:
    """``tetrad pack INDIR OUTDIR`` on the workers of ``client`` (default: the current one).

    Returns the manifest text. Refusals raise :class:`tetrad.Refused` as the one-process
    :func:`tetrad.pack` would (the selection is checked once, before any worker starts).
    """
    indir, outdir = os.fspath(indir), os.fspath(outdir)
    client = _client(client)
    if not force and os.path.isdir(outdir) and any(
        n == "repack-manifest.json" or n.startswith("out-rans-") for n in os.listdir(outdir)
    ):
        raise tetrad.Refused("E_OUTPUT_EXISTS", f"{outdir} already holds a pack output; "
                                                "use force=True to replace it")
    # The whole selection, checked here: the same refusals as a one-process pack.
    tetrad.histogram(indir, select=select)
    if force and os.path.exists(os.path.join(outdir, "repack-manifest.json")):
        # The old set stops passing for whole before any of its shards is replaced.
        os.remove(os.path.join(outdir, "repack-manifest.json"))
    names = _input_shards(indir)
    counts = client.gather(client.map(_count, [indir] * len(names), [select] * len(names), names,
                                      pure=False))
    owners = [n for n, c in zip(names, counts) if c is not None]
    table = None
    if codec == "int4-rans256-g0":
        table = sum((c for c in counts if c is not None), tetrad.Histogram()).table()
    parts = client.map(
        lambda shard: tetrad.pack(indir, outdir, select=select, codec=codec, table=table,
                                  shards=[shard], force=force),
        owners, pure=False,
    )
    written = {name for names in client.gather(parts) for name in names}
    if force:
        # What the old set had beyond the new one goes before the new manifest vouches for it.
        for n in os.listdir(outdir):
            if n.startswith("out-rans-") and n.endswith(".safetensors") and n not in written:
                os.remove(os.path.join(outdir, n))
    return tetrad.write_manifest(outdir)


def stats(paths: Iterable, client=None, **kwargs) -> List[dict]:
    """:func:`tetrad.stats` of each of ``paths`` (checkpoints: files or folders), one task
    each on the workers of ``client``; the documents in the order of ``paths``. Keyword
    arguments go to :func:`tetrad.stats`."""
    client = _client(client)
    paths = [os.fspath(p) for p in paths]
    futures = client.map(lambda p: tetrad.stats(p, **kwargs), paths, pure=False)
    return client.gather(futures)


__all__ = ["pack", "stats"]
