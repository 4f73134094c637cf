//! `tetrad._tetrad`: the Rust side of the Python package `tetrad`.
//!
//! Thin glue over the `tetrad` library: every function calls the same code the CLI runs (never
//! the binary), releases the GIL for the heavy part, takes bytes-like objects or numpy arrays
//! without copying them where the layout allows, and hands results back as numpy arrays that
//! own the Rust buffer (no copy either). A refusal raises `tetrad.Refused(cls, detail)`,
//! defined in Python (`tetrad/__init__.py`) so that it pickles across processes.

use std::path::PathBuf;

use numpy::{
    PyArray1, PyArrayMethods as _, PyReadonlyArray2, PyReadonlyArrayDyn, PyUntypedArrayMethods as _,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tetrad::error::{Class, Refusal};
use tetrad::packed::pack::{Codec, PackOptions};

/// `tetrad.Refused(cls, detail)` for a refusal.
fn refused(py: Python<'_>, r: &Refusal) -> PyErr {
    let made = py
        .import("tetrad")
        .and_then(|m| m.getattr("Refused"))
        .and_then(|c| c.call1((r.class.name(), r.detail.clone())));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// Runs `f` without the GIL; a refusal becomes `tetrad.Refused`.
fn heavy<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Refusal> + Send) -> PyResult<T> {
    py.detach(f).map_err(|r| refused(py, &r))
}

/// A `serde_json` document as the Python object `json.loads` gives.
fn to_python<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (v.to_string(),))
}

/// The bytes of a bytes-like object or a C-contiguous uint8 array, borrowed.
enum Input<'py> {
    Bytes(Bound<'py, PyBytes>),
    Array(PyReadonlyArrayDyn<'py, u8>),
}

impl Input<'_> {
    fn of<'py>(data: &Bound<'py, PyAny>) -> PyResult<Input<'py>> {
        if let Ok(b) = data.cast::<PyBytes>() {
            return Ok(Input::Bytes(b.clone()));
        }
        if let Ok(a) = data.extract::<PyReadonlyArrayDyn<'py, u8>>() {
            if !a.is_c_contiguous() {
                return Err(PyValueError::new_err(
                    "the uint8 array must be C-contiguous (numpy.ascontiguousarray(a) makes it so)",
                ));
            }
            return Ok(Input::Array(a));
        }
        if let Ok(b) = data.extract::<Vec<u8>>() {
            return Ok(Input::Bytes(PyBytes::new(data.py(), &b)));
        }
        Err(PyTypeError::new_err(format!(
            "expected bytes or a uint8 numpy array, got {}",
            data.get_type().name()?
        )))
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Input::Bytes(b) => b.as_bytes(),
            Input::Array(a) => a.as_slice().expect("checked C-contiguous"),
        }
    }
}

/// The codec names `compress` / `decompress` take.
fn self_contained(codec: &str) -> PyResult<()> {
    match codec {
        "int4-rans64-t1" | "cfs1" => Ok(()),
        other => Err(PyValueError::new_err(format!(
            "unknown codec {other:?}: compress/decompress take \"int4-rans64-t1\" or \"cfs1\" \
             (int4-rans256-g0 records need a container's table: use pack)"
        ))),
    }
}

/// Compresses packed int4 bytes (or any bytes, for cfs1) into one self-contained blob,
/// checked by decoding it back: exactly the bytes `tetrad pack --codec int4-rans64-t1` (or a
/// CFS1 container) stores.
#[pyfunction]
#[pyo3(signature = (data, codec = "int4-rans64-t1"))]
fn compress<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    codec: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    self_contained(codec)?;
    let input = Input::of(data)?;
    let src = input.bytes();
    let blob = if codec == "cfs1" {
        heavy(py, || tetrad::cfse::compress_checked("data", src))?
    } else {
        heavy(py, || {
            tetrad::rans64::encode_verified("data", src, tetrad::rans::rans64::DEFAULT_CHUNK_SHIFT)
        })?
    };
    Ok(PyBytes::new(py, &blob))
}

/// Decodes a blob of `compress` back to its bytes (every check and seal verified), as a uint8
/// array: a new one, or `out` (C-contiguous uint8, exactly the decoded length), which spares
/// the allocation and its page faults when the caller reuses one. `threads` (default: every
/// core) splits an int4-rans64-t1 blob's chunks; CFS1 decodes on one.
#[pyfunction]
#[pyo3(signature = (blob, codec = "int4-rans64-t1", out = None, threads = None))]
fn decompress<'py>(
    py: Python<'py>,
    blob: &Bound<'py, PyAny>,
    codec: &str,
    out: Option<Bound<'py, PyArray1<u8>>>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    self_contained(codec)?;
    let input = Input::of(blob)?;
    let src = input.bytes();
    let threads = threads.unwrap_or_else(tetrad::rans64::default_threads).max(1);
    let cfs1_refusal = |e: tetrad::fse::DecodeError| Refusal::of(&e, e.to_string());
    let rans64_refusal = |e: tetrad::rans::rans64::Error| Refusal::of(&e, e.to_string());
    let Some(out) = out else {
        let v = if codec == "cfs1" {
            heavy(py, || {
                tetrad::cfse::decode_growing(src).map_err(|e| match e {
                    Some(e) => cfs1_refusal(e),
                    None => Refusal::new(Class::TooLarge, "no memory for the decoded bytes"),
                })
            })?
        } else {
            heavy(py, || tetrad::rans64::decode_all(src, threads))?
        };
        return Ok(PyArray1::from_vec(py, v));
    };
    {
        let mut rw = out
            .try_readwrite()
            .map_err(|_| PyValueError::new_err("out is borrowed elsewhere or not writeable"))?;
        let dst =
            rw.as_slice_mut().map_err(|_| PyValueError::new_err("out must be C-contiguous"))?;
        if codec == "cfs1" {
            let n = heavy(py, || tetrad::fse::decode_into(src, dst).map_err(cfs1_refusal))?;
            if n != dst.len() {
                return Err(PyValueError::new_err(format!(
                    "out holds {} bytes, the blob decodes to {n}",
                    dst.len()
                )));
            }
        } else {
            let want = tetrad::rans::rans64::Blob::parse(src)
                .map_err(|e| refused(py, &rans64_refusal(e)))?
                .n_bytes();
            if dst.len() as u64 != want {
                return Err(PyValueError::new_err(format!(
                    "out holds {} bytes, the blob decodes to {want}",
                    dst.len()
                )));
            }
            heavy(py, || {
                tetrad::rans::rans64::decode_threads(src, dst, threads).map_err(rans64_refusal)
            })?;
        }
    }
    Ok(out)
}

/// `tetrad stats --json PATH…` as a dict.
#[pyfunction]
#[pyo3(signature = (paths, quantize = "int4-row", zstd = true))]
fn stats_json<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    quantize: &str,
    zstd: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let format =
        tetrad::quantize_container::QuantFormat::parse(quantize).map_err(PyValueError::new_err)?;
    let doc = heavy(py, || {
        let opts = tetrad::stats::StatsOptions { quantize: format, zstd };
        let (measured, skipped) = tetrad::stats::collect(&paths, &opts)?;
        let report = tetrad::stats::measure(measured, skipped, &opts);
        Ok(tetrad::cli::stats::report_json(&report, format))
    })?;
    to_python(py, &doc)
}

/// A checkpoint opened for reading: a shard file or a folder of shards.
#[pyclass(module = "tetrad", frozen)]
struct Container {
    inner: tetrad::container::Container,
    path: PathBuf,
}

#[pymethods]
impl Container {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let p = path.clone();
        let inner = heavy(py, move || tetrad::container::Container::open(&p))?;
        Ok(Self { inner, path })
    }

    /// Every tensor name, sorted.
    fn names(&self) -> Vec<String> {
        self.inner.names().map(str::to_owned).collect()
    }

    /// The weight `name` as an `[o, i]` matrix, its format decided by its stamp (verified) or
    /// by byte arithmetic.
    fn tensor(slf: Bound<'_, Self>, name: String, o: u64, i: u64) -> PyResult<Tensor> {
        let py = slf.py();
        let format = {
            let c = slf.get();
            let view = c.inner.tensor(&name, o, i).map_err(|r| refused(py, &r))?;
            view.format().name()
        };
        Ok(Tensor { container: slf.unbind(), name, o, i, format })
    }

    fn __repr__(&self) -> String {
        format!("tetrad.Container({:?})", self.path.display().to_string())
    }
}

/// One weight matrix of a container.
#[pyclass(module = "tetrad", frozen)]
struct Tensor {
    container: Py<Container>,
    name: String,
    o: u64,
    i: u64,
    format: &'static str,
}

#[pymethods]
impl Tensor {
    /// The format name (`int4-row`, `int4-rans256-g0`, …).
    #[getter]
    fn format(&self) -> &'static str {
        self.format
    }

    /// `(O, I)`.
    #[getter]
    fn shape(&self) -> (u64, u64) {
        (self.o, self.i)
    }

    /// The tensor name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// `y = x · Wᵀ` for float32 activations `x` of shape `(S, I)`: float32 `(S, O)`,
    /// bit-identical to `tetrad matmul`.
    #[pyo3(signature = (x, threads = 1))]
    fn matmul<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        threads: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let shape = x.shape();
        let (s, i) = (shape[0], shape[1]);
        if u64::try_from(i).ok() != Some(self.i) {
            return Err(PyValueError::new_err(format!(
                "x has {i} columns, the tensor {} takes I = {}",
                self.name, self.i
            )));
        }
        let xs = x.as_slice().map_err(|_| {
            PyValueError::new_err("x must be C-contiguous (numpy.ascontiguousarray(x) makes it so)")
        })?;
        let o = usize::try_from(self.o).map_err(|_| PyValueError::new_err("O too large"))?;
        let c = self.container.get();
        let y = heavy(py, || {
            let view = c.inner.tensor(&self.name, self.o, self.i)?;
            let mut y = vec![
                0f32;
                s.checked_mul(o)
                    .ok_or_else(|| Refusal::new(Class::Shape, "S x O overflows"))?
            ];
            view.matmul(&self.name, tetrad::quant::isa::best(), xs, s, &mut y, threads.max(1))?;
            Ok(y)
        })?;
        Ok(PyArray1::from_vec(py, y).reshape([s, o])?.into_any())
    }

    /// The dense bytes (the tensor decoded to its registry format, e.g. int4-row), as uint8.
    fn decode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let c = self.container.get();
        let out = heavy(py, || {
            let view = c.inner.tensor(&self.name, self.o, self.i)?;
            let n = usize::try_from(view.decoded_len())
                .map_err(|_| Refusal::new(Class::Oversize, "too large for this machine"))?;
            let mut out = tetrad::io::try_zeroed(n).ok_or_else(|| {
                Refusal::new(Class::Oversize, format!("{n} bytes cannot be allocated"))
            })?;
            view.decode_into(&mut out)?;
            Ok(out)
        })?;
        Ok(PyArray1::from_vec(py, out))
    }

    fn __repr__(&self) -> String {
        format!(
            "tetrad.Tensor({:?}, format={:?}, shape=({}, {}))",
            self.name, self.format, self.o, self.i
        )
    }
}

fn pack_options(
    indir: PathBuf,
    outdir: PathBuf,
    select: Option<String>,
    force: bool,
) -> PackOptions {
    PackOptions { indir, outdir, layers: None, select, force, threads: None, quiet: true }
}

fn codec_of(name: &str) -> PyResult<Codec> {
    Codec::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown codec {name:?}: pack writes \"int4-rans256-g0\" or \"int4-rans64-t1\""
        ))
    })
}

/// The nibble counts `pack` pools its table from: the weights it selects in `indir` (in the
/// input shards named in `shards`, if given).
#[pyfunction]
#[pyo3(signature = (indir, select = None, shards = None))]
fn selected_histogram(
    py: Python<'_>,
    indir: PathBuf,
    select: Option<String>,
    shards: Option<Vec<String>>,
) -> PyResult<Vec<u64>> {
    let opts = pack_options(indir, PathBuf::new(), select, false);
    let h = heavy(py, || tetrad::packed::pack::histogram(&opts, shards.as_deref()))?;
    Ok(h.to_vec())
}

/// The nibble counts of raw packed-int4 bytes.
#[pyfunction]
fn nibble_histogram(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    let input = Input::of(data)?;
    let src = input.bytes();
    Ok(py.detach(|| tetrad::synth::nibble_histogram(src)).to_vec())
}

/// The pooled table of nibble counts: (table JSON as pack stores it, CRC-32 hex, freq).
#[pyfunction]
fn pooled_table(py: Python<'_>, counts: Vec<u64>) -> PyResult<(String, String, Vec<u32>)> {
    let hist: [u64; 16] =
        counts.try_into().map_err(|_| PyValueError::new_err("a nibble histogram has 16 counts"))?;
    let (table, json, crc) = heavy(py, || tetrad::packed::pack::pooled_table(&hist))?;
    Ok((json, crc, table.freq().to_vec()))
}

/// `tetrad pack` into `outdir`, or with `shards` only those input shards (and `table_json` for
/// int4-rans256-g0), leaving the manifest to `write_manifest`. Returns the pack report (whole
/// pack) or the shard files written (part).
#[pyfunction]
#[pyo3(signature = (indir, outdir, select = None, codec = "int4-rans256-g0", table_json = None, shards = None, force = false))]
#[allow(clippy::too_many_arguments)] // the Python keyword arguments
fn pack<'py>(
    py: Python<'py>,
    indir: PathBuf,
    outdir: PathBuf,
    select: Option<String>,
    codec: &str,
    table_json: Option<String>,
    shards: Option<Vec<String>>,
    force: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let codec = codec_of(codec)?;
    let opts = pack_options(indir, outdir, select, force);
    match shards {
        Some(shards) => {
            let written = heavy(py, || {
                tetrad::packed::pack::pack_part(&opts, codec, table_json.as_deref(), &shards)
            })?;
            Ok(written.into_pyobject(py)?.into_any())
        }
        None => {
            if table_json.is_some() {
                return Err(PyValueError::new_err(
                    "table is for packing some shards apart: give shards= too",
                ));
            }
            let r = heavy(py, || tetrad::packed::pack::pack_with(&opts, codec))?;
            let doc = serde_json::json!({
                "shards": r.shards.iter().map(|(file, source, w, bytes)| serde_json::json!({"file": file, "source": source, "weight_tensors": w, "bytes": bytes})).collect::<Vec<_>>(),
                "records": r.records,
                "original_bytes": r.original_bytes,
                "record_bytes": r.record_bytes,
                "ratio": r.ratio(),
                "codec": r.codec.name(),
                "table_crc32": (r.codec == Codec::Rans256G0).then_some(&r.table_crc32),
                "removed": r.removed,
                "input_tensors": r.input_tensors,
                "left_out": r.left_out.iter().map(|l| serde_json::json!({"tensor": l.tensor, "shard": l.shard, "dtype": l.dtype, "reason": l.reason.as_str()})).collect::<Vec<_>>(),
                "dropped_metadata": r.dropped_metadata,
            });
            to_python(py, &doc)
        }
    }
}

/// Completes a set packed in parts: writes the manifest (the bytes a whole pack writes).
#[pyfunction]
fn write_manifest(py: Python<'_>, outdir: PathBuf) -> PyResult<String> {
    let m = heavy(py, || tetrad::packed::pack::write_manifest(&outdir))?;
    Ok(m.to_json())
}

/// `tetrad verify --json PATH`.
#[pyfunction]
fn verify<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
    let doc = py.detach(|| {
        let v = tetrad::cli::verify::verify_paths(&[path], None, true);
        tetrad::cli::verify::verdicts_json(&v)
    });
    to_python(py, &doc)
}

/// `tetrad unpack`: (input shard, output shard, records, bytes) per shard.
#[pyfunction]
#[pyo3(signature = (indir, outdir, force = false, without_manifest = false))]
fn unpack(
    py: Python<'_>,
    indir: PathBuf,
    outdir: PathBuf,
    force: bool,
    without_manifest: bool,
) -> PyResult<Vec<(String, String, u64, u64)>> {
    let opts = tetrad::packed::unpack::UnpackOptions { force, without_manifest, quiet: true };
    heavy(py, || tetrad::packed::unpack::unpack(&indir, &outdir, &opts))
}

/// The module `tetrad._tetrad`.
#[pymodule]
fn _tetrad(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compress, m)?)?;
    m.add_function(wrap_pyfunction!(decompress, m)?)?;
    m.add_function(wrap_pyfunction!(stats_json, m)?)?;
    m.add_function(wrap_pyfunction!(selected_histogram, m)?)?;
    m.add_function(wrap_pyfunction!(nibble_histogram, m)?)?;
    m.add_function(wrap_pyfunction!(pooled_table, m)?)?;
    m.add_function(wrap_pyfunction!(pack, m)?)?;
    m.add_function(wrap_pyfunction!(write_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(unpack, m)?)?;
    m.add_class::<Container>()?;
    m.add_class::<Tensor>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
