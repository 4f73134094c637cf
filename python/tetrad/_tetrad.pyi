"""Type stubs of the extension module ``tetrad._tetrad`` (use the functions of ``tetrad``)."""

from os import PathLike
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

_Path = Union[str, PathLike[str]]
_Bytes = Union[bytes, npt.NDArray[np.uint8]]

__version__: str

class Container:
    """A checkpoint opened for reading: a shard file or a folder of shards."""

    def __init__(self, path: _Path) -> None: ...
    def names(self) -> list[str]:
        """Every tensor name, sorted."""
    def tensor(self, name: str, o: int, i: int) -> "Tensor":
        """The weight ``name`` as an ``[o, i]`` matrix, its format decided by its stamp
        (verified) or by byte arithmetic; ``Refused`` when it is neither."""

class Tensor:
    """One weight matrix of a container."""

    @property
    def format(self) -> str:
        """The format name: ``int4-row``, ``int4-rans256-g0``, ``int4-rans64-t1``, ..."""
    @property
    def shape(self) -> Tuple[int, int]: ...
    @property
    def name(self) -> str: ...
    def matmul(self, x: npt.NDArray[np.float32], threads: int = 1) -> npt.NDArray[np.float32]:
        """``x · Wᵀ`` for float32 ``x`` of shape ``(S, I)``: float32 ``(S, O)``, bit-identical
        to ``tetrad matmul``."""
    def decode(self) -> npt.NDArray[np.uint8]:
        """The dense bytes (the tensor decoded to its registry format)."""

def compress(data: _Bytes, codec: str = ...) -> bytes: ...
def decompress(blob: _Bytes, codec: str = ..., out: Optional[npt.NDArray[np.uint8]] = ..., threads: Optional[int] = ...) -> npt.NDArray[np.uint8]: ...
def stats_json(paths: Sequence[str], quantize: str = ..., zstd: bool = ...) -> dict[str, Any]: ...
def selected_histogram(indir: _Path, select: Optional[str] = ..., shards: Optional[Sequence[str]] = ...) -> list[int]: ...
def nibble_histogram(data: _Bytes) -> list[int]: ...
def pooled_table(counts: Sequence[int]) -> Tuple[str, str, list[int]]: ...
def pack(indir: _Path, outdir: _Path, select: Optional[str] = ..., codec: str = ..., table_json: Optional[str] = ..., shards: Optional[Sequence[str]] = ..., force: bool = ...) -> Any: ...
def write_manifest(outdir: _Path) -> str: ...
def verify(path: _Path) -> dict[str, Any]: ...
def unpack(indir: _Path, outdir: _Path, force: bool = ..., without_manifest: bool = ...) -> list[Tuple[str, str, int, int]]: ...
