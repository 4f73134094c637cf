"""Shared fixtures: small real checkpoints written here (int4-row experts, float weights), and
the ``tetrad`` command line to compare with (``TETRAD_BIN``, else built with cargo)."""

import json
import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def write_safetensors(path, tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)] in order."""
    header, offset, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def int4_rows(rng, o, i):
    """Packed int4-row codes of Laplace weights (two per byte, low nibble first) and scales."""
    w = rng.laplace(0, 1, size=(o, i)).astype(np.float32)
    scale = np.abs(w).max(axis=1) / 7.0
    q = np.clip(np.rint(w / scale[:, None]), -7, 7).astype(np.int8) + 8
    if i % 2:
        q = np.concatenate([q, np.full((o, 1), 8, np.int8)], axis=1)
    q = q.astype(np.uint8)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)
    return packed, scale.astype(np.float32)


def expert_checkpoint(root, shards=3, experts=2, o=48, i=320, seed=3):
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    for layer in range(shards):
        tensors = []
        for e in range(experts):
            for proj in ("gate", "up", "down"):
                name = f"model.layers.{layer}.mlp.experts.{e}.{proj}_proj.weight"
                packed, scale = int4_rows(rng, o, i)
                tensors.append((name, "U8", packed.shape, packed.tobytes()))
                tensors.append((name + ".qs", "F32", (o,), scale.tobytes()))
        norm = np.ones(16, np.float32)
        tensors.append((f"model.layers.{layer}.input_layernorm.weight", "F32", (16,), norm.tobytes()))
        write_safetensors(root / f"model-{layer + 1:05d}-of-{shards:05d}.safetensors", tensors,
                          {"format": "pt"})
    return root


@pytest.fixture(scope="session")  # process-words: allow (pytest's fixture scope)
def bin_path():
    env = os.environ.get("TETRAD_BIN")
    if env:
        return env
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "tetrad"], cwd=REPO, check=True)
    return str(REPO / "target" / "release" / "tetrad")


@pytest.fixture
def cli(bin_path):
    def run(*args, check=True):
        r = subprocess.run([bin_path, *map(str, args)], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError(f"tetrad {' '.join(map(str, args))}: {r.returncode}\n{r.stdout}{r.stderr}")
        return r
    return run


@pytest.fixture
def ckpt(tmp_path):
    return expert_checkpoint(tmp_path / "ckpt")


def tree_bytes(folder):
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir()) if p.is_file()}
