"""The Python package against the command line and the library's own bytes."""

import importlib.machinery
import json
import os
import pickle

import numpy as np
import pytest

import tetrad
from conftest import expert_checkpoint, int4_rows, tree_bytes, write_safetensors

W = "model.layers.1.mlp.experts.0.up_proj.weight"


def test_the_extension_is_the_compiled_one():
    path = tetrad._tetrad.__file__
    assert any(path.endswith(s) for s in importlib.machinery.EXTENSION_SUFFIXES), path
    assert tetrad.__version__


@pytest.mark.parametrize("codec", tetrad.CODECS)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 4096, 65537, 300_001])
def test_compress_round_trips_bytes_and_arrays(codec, n):
    rng = np.random.default_rng(n)
    data = rng.integers(0, 256, size=n, dtype=np.uint8) & 0x77 | 0x88
    blob = tetrad.compress(data, codec)
    assert isinstance(blob, bytes)
    assert tetrad.compress(data.tobytes(), codec) == blob
    back = tetrad.decompress(blob, codec)
    assert back.dtype == np.uint8 and back.ndim == 1
    np.testing.assert_array_equal(back, data)
    np.testing.assert_array_equal(tetrad.decompress(np.frombuffer(blob, np.uint8), codec), data)
    out = np.empty(n, np.uint8)
    assert tetrad.decompress(blob, codec, out=out, threads=1) is out
    np.testing.assert_array_equal(out, data)
    with pytest.raises(ValueError):
        tetrad.decompress(blob, codec, out=np.empty(n + 1, np.uint8))


def test_compress_gives_the_bytes_pack_stores(tmp_path, ckpt, cli):
    out = tmp_path / "p64"
    cli("pack", "-q", "--codec", "int4-rans64-t1", "--indir", ckpt, "--outdir", out)
    packed = tetrad.Container(out)
    original = tetrad.Container(ckpt).tensor(W, 48, 320).decode()
    blob = tetrad.compress(original)
    # The stored blob is the tensor's bytes in the packed shard.
    shard = out / "out-rans-00001.safetensors"
    raw = shard.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    a, b = header[W]["data_offsets"]
    assert raw[8 + n + a:8 + n + b] == blob
    assert packed.tensor(W, 48, 320).format == "int4-rans64-t1"


def test_damaged_blobs_are_refused_by_class():
    data = np.full(10_000, 0x78, np.uint8)
    for codec in tetrad.CODECS:
        blob = bytearray(tetrad.compress(data, codec))
        for cut in (0, 3, len(blob) // 2):
            with pytest.raises(tetrad.Refused) as e:
                tetrad.decompress(bytes(blob[:cut]), codec)
            assert e.value.cls.startswith("E_"), e.value
            assert str(e.value).startswith(e.value.cls + ": ")
    e = tetrad.Refused("E_TRUNCATED", "x")
    assert pickle.loads(pickle.dumps(e)).cls == "E_TRUNCATED"


def test_bad_arguments_are_type_and_value_errors():
    with pytest.raises(TypeError):
        tetrad.compress("text")
    with pytest.raises(TypeError):
        tetrad.compress(np.zeros(4, np.int16))
    with pytest.raises(ValueError):
        tetrad.compress(b"\x88", codec="zstd")
    with pytest.raises(ValueError):
        tetrad.decompress(b"\x88", codec="int4-rans256-g0")
    with pytest.raises(TypeError):
        tetrad.stats(42)
    with pytest.raises(ValueError):
        tetrad.Histogram([1, 2, 3])


def test_stats_is_the_cli_document(ckpt, cli):
    want = json.loads(cli("stats", "--json", ckpt).stdout)
    got = tetrad.stats(ckpt, per_tensor=True)
    assert got == want
    short = tetrad.stats(str(ckpt))
    assert "tensors" not in short
    assert short["total"] == want["total"]
    with pytest.raises(tetrad.Refused) as e:
        tetrad.stats(ckpt / "nowhere")
    assert e.value.cls == "E_IO"


def test_container_matmul_and_decode_match_the_cli(tmp_path, ckpt, cli):
    packed = tmp_path / "packed"
    cli("pack", "-q", "--indir", ckpt, "--outdir", packed)
    x = np.random.default_rng(1).standard_normal((3, 320)).astype(np.float32)
    xf = tmp_path / "x.f32"
    x.tofile(xf)
    for folder, fmt in ((ckpt, "int4-row"), (packed, "int4-rans256-g0")):
        c = tetrad.Container(folder)
        assert W in c.names()
        t = c.tensor(W, 48, 320)
        assert t.format == fmt and t.shape == (48, 320)
        y = t.matmul(x)
        assert y.dtype == np.float32 and y.shape == (3, 48)
        out = tmp_path / f"y-{fmt}.f32"
        cli("matmul", folder, W, "--o", 48, "--i", 320, "--x", xf, "--out", out)
        assert y.tobytes() == out.read_bytes()
    dense = tetrad.Container(ckpt).tensor(W, 48, 320).decode()
    assert np.array_equal(tetrad.Container(packed).tensor(W, 48, 320).decode(), dense)
    with pytest.raises(tetrad.Refused):
        tetrad.Container(ckpt).tensor("no.such.weight", 48, 320)
    with pytest.raises(ValueError):
        tetrad.Container(ckpt).tensor(W, 48, 320).matmul(np.zeros((2, 7), np.float32))


def test_histograms_merge_pickle_and_pool_the_packs_table(tmp_path, ckpt, cli):
    shards = sorted(p.name for p in ckpt.iterdir())
    parts = [tetrad.histogram(ckpt, shards=[s]) for s in shards]
    whole = tetrad.histogram(ckpt)
    assert sum(parts) == whole == parts[0] + parts[1] + parts[2]
    assert pickle.loads(pickle.dumps(whole)) == whole
    assert tetrad.histogram(ckpt / shards[0]) == parts[0]
    t = whole.table()
    assert pickle.loads(pickle.dumps(t)) == t
    out = tmp_path / "packed"
    cli("pack", "-q", "--indir", ckpt, "--outdir", out)
    assert json.loads((out / "repack-manifest.json").read_text())["table_crc32"] == t.crc32
    dense = tetrad.Container(ckpt).tensor(W, 48, 320).decode()
    assert tetrad.histogram(dense).total == 2 * dense.size
    assert tetrad.histogram(tetrad.Container(ckpt).tensor(W, 48, 320)) == tetrad.histogram(dense)
    with pytest.raises(tetrad.Refused) as e:
        tetrad.Histogram().table()
    assert e.value.cls.startswith("E_")


@pytest.mark.parametrize("codec", tetrad.PACK_CODECS)
def test_pack_whole_and_in_parts_equals_the_cli(tmp_path, ckpt, cli, codec):
    want = tmp_path / "cli"
    cli("pack", "-q", "--codec", codec, "--indir", ckpt, "--outdir", want)
    whole = tmp_path / "whole"
    report = tetrad.pack(ckpt, whole, codec=codec)
    assert report["codec"] == codec and len(report["shards"]) == 3
    assert tree_bytes(whole) == tree_bytes(want)
    parts = tmp_path / "parts"
    names = sorted(p.name for p in ckpt.iterdir())
    table = sum(tetrad.histogram(ckpt, shards=[n]) for n in names).table() if codec == "int4-rans256-g0" else None
    for n in reversed(names):  # any order
        assert tetrad.pack(ckpt, parts, codec=codec, table=table, shards=[n])
        assert tetrad.verify(parts)["result"] == "REFUSE"  # not whole until the manifest
    text = tetrad.write_manifest(parts)
    assert text == (want / "repack-manifest.json").read_text()
    assert tree_bytes(parts) == tree_bytes(want)
    v = tetrad.verify(parts)
    assert v["result"] == "TRUST", v
    restored = tmp_path / "restored"
    rows = tetrad.unpack(parts, restored)
    assert len(rows) == 3
    for n in names:
        assert (restored / n).exists()


def test_refusals_raise_refused_with_the_cli_class(tmp_path, ckpt):
    out = tmp_path / "p"
    with pytest.raises(tetrad.Refused) as e:
        tetrad.pack(ckpt, out, select="^nothing$")
    assert e.value.cls == "E_SELECTION_EMPTY"
    tetrad.pack(ckpt, out)
    with pytest.raises(tetrad.Refused) as e:
        tetrad.pack(ckpt, out)
    assert e.value.cls == "E_OUTPUT_EXISTS"
    os.remove(out / "out-rans-00001.safetensors")
    assert tetrad.verify(out)["shards"][0]["refusals"][0]["class"] == "E_SHARD_MISSING"
    with pytest.raises(tetrad.Refused) as e:
        tetrad.unpack(out, tmp_path / "r")
    assert e.value.cls == "E_SHARD_MISSING"
    parts = tmp_path / "parts"
    table = tetrad.histogram(ckpt).table()
    tetrad.pack(ckpt, parts, table=table, shards=["model-00001-of-00003.safetensors"])
    with pytest.raises(tetrad.Refused) as e:
        tetrad.write_manifest(parts)
    assert e.value.cls == "E_SHARD_MISSING"
    with pytest.raises(tetrad.Refused) as e:
        tetrad.pack(ckpt, parts, table=table, shards=["nope.safetensors"])
    assert e.value.cls == "E_NO_INPUT"
    with pytest.raises(ValueError):
        tetrad.pack(ckpt, parts, shards=["model-00002-of-00003.safetensors"])


def test_dask_pack_on_processes_is_byte_identical(tmp_path, cli):
    import distributed
    import tetrad.dask

    ckpt = expert_checkpoint(tmp_path / "ckpt", shards=4, experts=2, seed=9)
    want = tmp_path / "cli"
    cli("pack", "-q", "--indir", ckpt, "--outdir", want)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        out = tmp_path / "dask"
        manifest = tetrad.dask.pack(ckpt, out, client)
        assert manifest == (want / "repack-manifest.json").read_text()
        assert tree_bytes(out) == tree_bytes(want)
        docs = tetrad.dask.stats([ckpt, want], client)
        assert docs[0] == tetrad.stats(ckpt)
        assert docs[1]["total"] == tetrad.stats(want)["total"]
