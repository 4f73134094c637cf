"""tetrad: lossless entropy codecs for 4-bit quantized LLM weights, on numpy arrays.

The same code as the ``tetrad`` command line (called in-process, never spawned), as exact:

>>> import tetrad
>>> doc = tetrad.stats("model.safetensors")            # what `tetrad stats --json` prints
>>> blob = tetrad.compress(packed_int4_bytes)           # int4-rans64-t1, checked
>>> back = tetrad.decompress(blob)                      # numpy uint8, bit-exact
>>> w = tetrad.Container("packed/").tensor(name, o, i)  # any registry or entropy-coded format
>>> y = w.matmul(x)                                     # float32 (S, I) -> (S, O)

Every heavy call releases the GIL. A refusal (damaged input, a format that does not fit, a
checkpoint that is not whole) raises :class:`Refused` with the refusal class tetrad's specs
name (``E_TRUNCATED``, ``E_SHARD_MISSING``, ...); bad arguments raise ``TypeError`` or
``ValueError``. :mod:`tetrad.dask` spreads ``pack`` and ``stats`` over a Dask cluster.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional, Sequence, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]


class Refused(Exception):
    """A refusal: ``cls`` is its class (``"E_TRUNCATED"``, ...), ``detail`` says what and where."""

    def __init__(self, cls: str, detail: str) -> None:
        super().__init__(f"{cls}: {detail}")
        self.cls = cls
        self.detail = detail

    def __reduce__(self):
        return (Refused, (self.cls, self.detail))


from . import _tetrad  # noqa: E402  (Refused must exist before the extension raises it)
from ._tetrad import Container, Tensor  # noqa: E402

__version__ = _tetrad.__version__

CODECS = ("int4-rans64-t1", "cfs1")
"""The self-contained codecs of :func:`compress` / :func:`decompress`."""

PACK_CODECS = ("int4-rans256-g0", "int4-rans64-t1")
"""The codecs :func:`pack` writes."""


def _path(p: PathLike, what: str) -> str:
    if isinstance(p, (str, os.PathLike)):
        return os.fspath(p)
    raise TypeError(f"{what} must be a path (str or os.PathLike), got {type(p).__name__}")


def stats(path: Union[PathLike, Sequence[PathLike]], *, per_tensor: bool = False,
          quantize: str = "int4-row", zstd: bool = True) -> dict:
    """Entropy, bounds and codec sizes of the quantized weights under ``path``.

    ``path`` is a safetensors file, a folder of them, a GGUF file, or a list of those. The
    result is the document ``tetrad stats --json PATH`` prints, same keys and numbers: its
    ``"total"`` (and ``"total_bytes"``, ``"total_split"``) sum the whole input. With
    ``per_tensor=False`` the per-tensor list ``"tensors"`` is left out; ``per_tensor=True``
    keeps it, and the document is then the CLI's exactly. ``quantize`` is the format float
    tensors are measured in (as ``--quantize``); ``zstd=False`` skips zstd -19 (``--no-zstd``).
    """
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise ValueError("stats needs at least one path")
    doc = _tetrad.stats_json([_path(p, "path") for p in paths], quantize, bool(zstd))
    if not per_tensor:
        doc.pop("tensors", None)
    return doc


def _bytes_like(data, what: str):
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data) if not isinstance(data, bytes) else data
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise TypeError(f"{what} must be uint8, got a {data.dtype} array")
        return np.ascontiguousarray(data)
    raise TypeError(f"{what} must be bytes or a uint8 numpy array, got {type(data).__name__}")


def _codec(codec: str, allowed: Sequence[str]) -> str:
    if not isinstance(codec, str):
        raise TypeError(f"codec must be a str, got {type(codec).__name__}")
    if codec not in allowed:
        raise ValueError(f"unknown codec {codec!r}: expected one of {', '.join(allowed)}")
    return codec


def compress(data, codec: str = "int4-rans64-t1") -> bytes:
    """Compresses ``data`` (bytes or a uint8 array: packed int4 codes, two per byte, low
    nibble first) into one self-contained blob of ``codec`` (``"int4-rans64-t1"`` or
    ``"cfs1"``), checked by decoding it back. The bytes are exactly the library's."""
    return _tetrad.compress(_bytes_like(data, "data"), _codec(codec, CODECS))


def decompress(blob, codec: str = "int4-rans64-t1", *, out: Optional[np.ndarray] = None,
               threads: Optional[int] = None) -> np.ndarray:
    """Decodes a blob of :func:`compress` (every check and seal verified) to a uint8 array.

    ``out``: a C-contiguous uint8 array of exactly the decoded length to decode into (and
    return), sparing the allocation when it is reused. ``threads``: how many threads split an
    int4-rans64-t1 blob's chunks (default: every core)."""
    if out is not None and (not isinstance(out, np.ndarray) or out.dtype != np.uint8 or out.ndim != 1):
        raise TypeError("out must be a 1-D uint8 numpy array")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError("threads must be a positive int")
    return _tetrad.decompress(_bytes_like(blob, "blob"), _codec(codec, CODECS), out, threads)


class Table:
    """A pooled ``int4-rans256-g0`` frequency table, as :func:`pack` builds and stores it.

    ``json`` is the text every packed shard stores, ``crc32`` the manifest's ``table_crc32``,
    ``freq`` the 16 normalised frequencies."""

    __slots__ = ("json", "crc32", "freq")

    def __init__(self, json: str, crc32: str, freq: Sequence[int]) -> None:
        self.json = json
        self.crc32 = crc32
        self.freq = tuple(freq)

    def __eq__(self, other) -> bool:
        return isinstance(other, Table) and self.json == other.json

    def __hash__(self) -> int:
        return hash(self.json)

    def __reduce__(self):
        return (Table, (self.json, self.crc32, self.freq))

    def __repr__(self) -> str:
        return f"tetrad.Table(crc32={self.crc32!r}, freq={list(self.freq)})"


class Histogram:
    """Nibble counts (16 of them) that merge with ``+`` and pickle, so that workers can count
    parts of a checkpoint and one process pools them. :meth:`table` is the table
    :func:`pack` would build from these counts."""

    __slots__ = ("counts",)

    def __init__(self, counts: Iterable[int] = (0,) * 16) -> None:
        counts = tuple(int(c) for c in counts)
        if len(counts) != 16 or any(c < 0 for c in counts):
            raise ValueError("a nibble histogram is 16 non-negative counts")
        self.counts = counts

    def __add__(self, other: "Histogram") -> "Histogram":
        if not isinstance(other, Histogram):
            return NotImplemented
        return Histogram(a + b for a, b in zip(self.counts, other.counts))

    def __radd__(self, other):
        if other == 0:  # sum() starts from 0
            return self
        return NotImplemented

    def __eq__(self, other) -> bool:
        return isinstance(other, Histogram) and self.counts == other.counts

    def __hash__(self) -> int:
        return hash(self.counts)

    def __reduce__(self):
        return (Histogram, (self.counts,))

    def __repr__(self) -> str:
        return f"tetrad.Histogram({list(self.counts)})"

    @property
    def total(self) -> int:
        """Nibbles counted."""
        return sum(self.counts)

    def table(self) -> Table:
        """The pooled ``int4-rans256-g0`` table of these counts (``Refused`` for counts no
        table can code, e.g. none at all)."""
        return Table(*_tetrad.pooled_table(list(self.counts)))


def histogram(source, *, select: Optional[str] = None,
              shards: Optional[Sequence[str]] = None) -> Histogram:
    """The nibble histogram of ``source``:

    - a folder or safetensors file: the weights :func:`pack` selects there (``select``, default
      the routed-expert pattern; ``shards``: only those input shards, by file name) — summed
      over disjoint shard lists this is the histogram pack pools its table from;
    - a :class:`Tensor`: its decoded int4 bytes;
    - bytes or a uint8 array: its packed nibbles.
    """
    if isinstance(source, Tensor):
        return Histogram(_tetrad.nibble_histogram(source.decode()))
    if isinstance(source, (bytes, bytearray, memoryview, np.ndarray)):
        return Histogram(_tetrad.nibble_histogram(_bytes_like(source, "source")))
    path = _path(source, "source")
    names = None if shards is None else [os.path.basename(_path(s, "shard")) for s in shards]
    if os.path.isfile(path):
        if names is not None:
            raise ValueError("shards= is for a folder; a file is one shard already")
        names = [os.path.basename(path)]
        path = os.path.dirname(path) or "."
    return Histogram(_tetrad.selected_histogram(path, select, names))


def pack(indir: PathLike, outdir: PathLike, *, select: Optional[str] = None,
         codec: str = "int4-rans256-g0", table: Optional[Table] = None,
         shards: Optional[Sequence[str]] = None, force: bool = False):
    """``tetrad pack``: the int4-row weights of ``indir`` entropy-coded into ``outdir``.

    Without ``shards``: the whole pack, manifest last; returns the report ``pack --json``
    prints. With ``shards`` (input shard file names) and, for ``int4-rans256-g0``, the pooled
    ``table`` of the whole checkpoint (``sum(histogram(indir, shards=[s]) ...).table()``): packs
    only those shards, under the names and with the bytes the whole pack gives them, and returns
    the shard files written; :func:`write_manifest` completes the set. All or nothing either way.
    """
    _codec(codec, PACK_CODECS)
    if table is not None and not isinstance(table, Table):
        raise TypeError(f"table must be a tetrad.Table, got {type(table).__name__}")
    names = None if shards is None else [os.path.basename(_path(s, "shard")) for s in shards]
    if names is not None and codec == "int4-rans256-g0" and table is None:
        raise ValueError("packing some shards apart as int4-rans256-g0 needs table= "
                         "(the whole checkpoint's pooled table)")
    return _tetrad.pack(_path(indir, "indir"), _path(outdir, "outdir"), select, codec,
                        None if table is None else table.json, names, bool(force))


def write_manifest(outdir: PathLike) -> str:
    """Completes a set packed with ``pack(..., shards=...)``: checks that every part is there
    and intact, writes ``repack-manifest.json`` (the bytes a whole pack writes) and returns it."""
    return _tetrad.write_manifest(_path(outdir, "outdir"))


def verify(path: PathLike) -> dict:
    """``tetrad verify --json PATH``: a folder is proven whole, then checked shard by shard.
    ``result`` is ``"TRUST"`` or ``"REFUSE"``; refusals are listed, not raised."""
    return _tetrad.verify(_path(path, "path"))


def unpack(indir: PathLike, outdir: PathLike, *, force: bool = False,
           without_manifest: bool = False) -> list:
    """``tetrad unpack``: the packed set back to int4-row shards, byte-exact, all or nothing.
    Returns ``[(input shard, output shard, records, bytes), ...]``."""
    return _tetrad.unpack(_path(indir, "indir"), _path(outdir, "outdir"), bool(force),
                          bool(without_manifest))


__all__ = [
    "CODECS", "PACK_CODECS", "Container", "Histogram", "Refused", "Table", "Tensor",
    "compress", "decompress", "histogram", "pack", "stats", "unpack", "verify",
    "write_manifest", "__version__",
]
