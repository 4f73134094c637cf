//! [`PreparedTensor`]: a container's tensor checked once and ready to multiply, for an engine
//! that calls the same weight on every token.
//!
//! [`Container::prepare`](crate::container::Container::prepare) (or
//! [`TensorView::prepare`]) does every check and conversion once: the format is decided (stamp
//! verified, or byte arithmetic), `[O, I]` is checked against the bytes, the scales are
//! widened to f32, an `int4-rans64-t1` blob's chunk checks are verified, the dense
//! [`Matrix`] is validated, and scratch for one multiply is allocated. Then:
//! - [`PreparedTensor::matmul`] multiplies with the scratch held inside: no allocation (once a
//!   batch of that size has been seen; batches up to [`RESERVED_BATCH`] rows are reserved up
//!   front) and no thread. It takes `&self`: a call that finds the held scratch in use by
//!   another thread's call makes a fresh one (allocating), so a tensor shared by threads stays
//!   correct, and one used by one thread at a time never allocates;
//! - [`PreparedTensor::matmul_rows`] (`&self`, scratch passed in: one [`Scratch`] per worker)
//!   multiplies a row band, so an engine splits rows over its own thread pool. The
//!   tensor is `Sync`: any number of threads may call it at once, each with its own scratch.
//!   Where a band can start cheaply is [`PreparedTensor::row_split`]: every row for dense
//!   formats, every chunk's first row for `int4-rans64-t1`; `int4-rans256-g0` records and
//!   CFS1 blobs are one sequential decode, so a band starting at row `r` decodes (and drops)
//!   rows `0..r` first — split those by tensor, not by rows;
//! - with the `parallel` feature, [`PreparedTensor::matmul_par`] splits rows over rayon's
//!   threads at those points.
//!
//! Every path is bit-identical to dense int4-row (or the dense format's kernel) on the decoded
//! bytes, on the same kernel arm, whatever the split; a corrupt source is refused with the
//! outputs all zeros. Refusals name the tensor and keep the decoder's or kernel's class.

use std::ops::Range;

use tetrad_fse::DecodeTable;
use tetrad_quant::Format;
use tetrad_quant::adapter::{
    Acts, AdapterError, Cfs1Matrix, Cfs1Tiles, FusedMatrix, Rans256Matrix, RecordTiles, TileSource,
};
use tetrad_quant::adapter_rans64::{Rans64Matrix, Rans64Tiles};
use tetrad_quant::isa::Isa;
use tetrad_quant::kernels::{KernelError, Matrix, Scales, matmul_q8_rows_with, matmul_rows_with};
use tetrad_rans::{Record, Table};

use crate::container::{Container, TensorView};
use crate::error::{Class, Refusal};

/// Activation rows whose output scratch [`PreparedTensor::matmul`] and [`Scratch`] reserve
/// up front; a larger batch grows the scratch once.
pub const RESERVED_BATCH: usize = 16;

/// A value held by the tensor or borrowed from the view it was prepared from.
#[derive(Debug)]
enum Held<'a, T: ?Sized> {
    Owned(Box<T>),
    Borrowed(&'a T),
}

impl<T: ?Sized> std::ops::Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Self::Owned(b) => b,
            Self::Borrowed(r) => r,
        }
    }
}

/// Dense scales as the kernel takes them.
#[derive(Debug)]
enum DenseScales<'a> {
    None,
    F32(Vec<f32>),
    Ue8m0(&'a [u8]),
}

/// What the tensor is, checked.
#[derive(Debug)]
enum Kind<'a> {
    Dense { format: Format, weights: &'a [u8], scales: DenseScales<'a>, gs: usize },
    Rans256 { record: Record<'a>, table: Held<'a, Table>, scales: Vec<f32> },
    Rans64 { source: Rans64Tiles<'a>, scales: Vec<f32> },
    Cfs1 { source: Cfs1Tiles<'a>, scales: Held<'a, [f32]> },
}

/// Working memory for one multiply at a time: the tile of decoded weights, the kernel's
/// outputs for a tile, and the CFS1 decode table. Make one per worker thread
/// ([`PreparedTensor::scratch`]); it fits any tensor of the same `[O, I]` (and grows for a
/// batch larger than it has seen).
#[derive(Debug)]
pub struct Scratch {
    w: Vec<u8>,
    y: Vec<f32>,
    table: Option<Box<DecodeTable>>,
}

impl Scratch {
    /// No buffers (a dense tensor needs none; others grow them on first use).
    fn empty() -> Self {
        Self { w: Vec::new(), y: Vec::new(), table: None }
    }

    /// The weight and output buffers, cut to `wlen` and `ylen` (grown if needed: a batch
    /// larger than any before), and the CFS1 table slot.
    fn parts(
        &mut self,
        wlen: usize,
        ylen: usize,
    ) -> (&mut [u8], &mut [f32], &mut Option<Box<DecodeTable>>) {
        if self.y.len() < ylen {
            self.y.resize(ylen, 0.0);
        }
        if self.w.len() < wlen {
            self.w.resize(wlen, 0);
        }
        (&mut self.w[..wlen], &mut self.y[..ylen], &mut self.table)
    }
}

/// A tensor checked once, ready to multiply without allocating or spawning (see the module
/// docs).
#[derive(Debug)]
pub struct PreparedTensor<'a> {
    name: String,
    o: usize,
    i: usize,
    isa: Isa,
    arm: tetrad_rans::Arm,
    arm64: tetrad_rans::rans64::Arm,
    kind: Kind<'a>,
    scratch: std::sync::Mutex<Scratch>,
}

// Shared by an engine's worker threads (`&self` calls); each worker owns its `Scratch`.
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<PreparedTensor<'static>>();
    shareable::<Scratch>();
};

/// The refusal for a typed error `e` of tensor `name`.
fn refuse<E: crate::error::Classified + std::fmt::Display>(name: &str, e: &E) -> Refusal {
    Refusal::of(e, format!("{name}: {e}"))
}

impl Container {
    /// The tensor `name` of a `[o, i]` weight matrix ([`Container::tensor`]), checked once for
    /// multiplying: a [`PreparedTensor`] that multiplies without allocating or spawning, and
    /// row bands on an engine's own threads. (Defined here, not in `container`, so that the
    /// container module does not depend on this one.)
    ///
    /// # Errors
    /// The refusals of [`Container::tensor`] and of [`TensorView::prepare`].
    pub fn prepare(&self, name: &str, o: u64, i: u64) -> Result<PreparedTensor<'_>, Refusal> {
        self.tensor(name, o, i)?.into_prepared(name)
    }
}

impl<'a> TensorView<'a> {
    /// Checks this tensor once for multiplying (see [`PreparedTensor`]), borrowing what the
    /// view holds; `name` is the tensor's name, for the refusals. Kernel arm: this machine's
    /// best ([`PreparedTensor::with_isa`] to force one).
    ///
    /// # Errors
    /// `E_SHAPE` (`[O, I]` does not fit this machine), `E_SCALE_DTYPE`, and the adapter's or
    /// kernel's refusals of the stored bytes (`E_COUNT_MISMATCH`, `E_CHECKSUM`, …).
    pub fn prepare(&self, name: &str) -> Result<PreparedTensor<'_>, Refusal> {
        let kind = match self {
            TensorView::Rans256 { record, table, .. } => {
                Kind::Rans256 { record: *record, table: Held::Borrowed(&**table), scales: vec![] }
            }
            TensorView::Cfs1Int4Row { blob, scales, .. } => {
                let source = Cfs1Tiles::parse(blob).map_err(|e| refuse(name, &e))?;
                Kind::Cfs1 { source, scales: Held::Borrowed(scales.as_slice()) }
            }
            _ => return self.prepare_common(name, None),
        };
        self.prepare_common(name, Some(kind))
    }

    /// [`prepare`](Self::prepare), taking the view: the tensor then borrows the container
    /// only.
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare).
    pub fn into_prepared(self, name: &str) -> Result<PreparedTensor<'a>, Refusal> {
        let kind = match &self {
            TensorView::Rans256 { record, table, .. } => Some(Kind::Rans256 {
                record: *record,
                table: Held::Owned(table.clone()),
                scales: vec![],
            }),
            TensorView::Cfs1Int4Row { blob, scales, .. } => {
                let source = Cfs1Tiles::parse(blob).map_err(|e| refuse(name, &e))?;
                Some(Kind::Cfs1 { source, scales: Held::Owned(scales.clone().into()) })
            }
            _ => None,
        };
        self.prepare_common(name, kind)
    }

    /// The checks every format shares; `kind` is the record's or CFS1 blob's part that may
    /// borrow the view (`None` for the others).
    fn prepare_common<'p>(
        &self,
        name: &str,
        kind: Option<Kind<'p>>,
    ) -> Result<PreparedTensor<'p>, Refusal>
    where
        'a: 'p,
    {
        let (o, i) = self.shape();
        let shape = |what| Refusal::new(Class::Shape, format!("{name}: {what}"));
        let o = usize::try_from(o).map_err(|_| shape("O does not fit this machine"))?;
        let i = usize::try_from(i).map_err(|_| shape("I does not fit this machine"))?;
        let f32_scales = |sc: &crate::container::StoredScales<'_>| {
            sc.to_f32().ok_or_else(|| {
                Refusal::new(Class::ScaleDtype, format!("{name}.qs is {}", sc.dtype))
            })
        };
        let adapter = |e: AdapterError| refuse(name, &e);
        let kind = match (self, kind) {
            (TensorView::Rans256 { scales, .. }, Some(Kind::Rans256 { record, table, .. })) => {
                let scales = f32_scales(scales)?;
                Rans256Matrix::from_source(RecordTiles::new(record, &table), &scales, o, i)
                    .map_err(adapter)?;
                Kind::Rans256 { record, table, scales }
            }
            (TensorView::Cfs1Int4Row { .. }, Some(Kind::Cfs1 { source, scales })) => {
                Cfs1Matrix::from_source(source, &scales, o, i).map_err(adapter)?;
                Kind::Cfs1 { source, scales }
            }
            (TensorView::Rans64 { blob, scales, .. }, _) => {
                let scales = f32_scales(scales)?;
                // The view checked the blob's length; its chunk checks are verified here, once.
                let source = Rans64Tiles::new(*blob).map_err(adapter)?;
                Rans64Matrix::from_source(source, &scales, o, i).map_err(adapter)?;
                Kind::Rans64 { source, scales }
            }
            (TensorView::Dense { resolved, weights, scales, .. }, _) => {
                let widened = scales.and_then(|s| s.to_f32());
                let scales = match (*scales, widened) {
                    (None, _) => DenseScales::None,
                    (Some(_), Some(f)) => DenseScales::F32(f),
                    (Some(st), None) => DenseScales::Ue8m0(st.bytes),
                };
                let gs = resolved.group_size.map_or(0, |g| g as usize);
                let kind = Kind::Dense { format: resolved.format, weights, scales, gs };
                dense_matrix(&kind, o, i).map_err(|e| refuse(name, &e))?;
                kind
            }
            _ => unreachable!("prepare passes the kind of its own view"),
        };
        let mut p = PreparedTensor {
            name: name.to_owned(),
            o,
            i,
            isa: tetrad_quant::isa::best(),
            arm: tetrad_rans::Arm::best(),
            arm64: tetrad_rans::rans64::Arm::best(),
            kind,
            scratch: std::sync::Mutex::new(Scratch::empty()),
        };
        p.scratch = std::sync::Mutex::new(p.scratch());
        Ok(p)
    }
}

/// The dense kind's kernel matrix (validated by the kernel).
fn dense_matrix<'m>(kind: &'m Kind<'_>, o: usize, i: usize) -> Result<Matrix<'m>, KernelError> {
    let Kind::Dense { format, weights, scales, gs } = kind else {
        unreachable!("dense kinds only")
    };
    let sc = match scales {
        DenseScales::None => Scales::None,
        DenseScales::F32(f) => Scales::F32(f),
        DenseScales::Ue8m0(b) => Scales::Ue8m0(b),
    };
    Matrix::new(*format, weights, sc, o, i, *gs)
}

impl PreparedTensor<'_> {
    /// The tensor's format (for a CFS1 blob: the format it decodes to, int4-row).
    pub fn format(&self) -> Format {
        match &self.kind {
            Kind::Dense { format, .. } => *format,
            Kind::Rans256 { .. } => Format::Int4Rans256G0,
            Kind::Rans64 { .. } => Format::Int4Rans64T1,
            Kind::Cfs1 { .. } => Format::Int4Row,
        }
    }

    /// How it is multiplied (`"int4-row"`, `"int4-rans256-g0 (fused decode + int4-row
    /// kernel)"`, …), as `tetrad matmul` prints it.
    pub fn how(&self) -> &'static str {
        match &self.kind {
            Kind::Dense { format, .. } => format.name(),
            Kind::Rans256 { .. } => "int4-rans256-g0 (fused decode + int4-row kernel)",
            Kind::Rans64 { .. } => "int4-rans64-t1 (fused decode + int4-row kernel)",
            Kind::Cfs1 { .. } => "int4-row in CFS1 (fused decode + int4-row kernel)",
        }
    }

    /// `[O, I]`.
    pub fn shape(&self) -> (usize, usize) {
        (self.o, self.i)
    }

    /// The kernel arm.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// This tensor on kernel arm `isa` (decode arms stay this machine's best).
    ///
    /// # Errors
    /// `E_PATH_UNAVAILABLE` for an arm this machine cannot run: never a silent downgrade.
    pub fn with_isa(mut self, isa: Isa) -> Result<Self, Refusal> {
        if !isa.is_available() {
            let e = KernelError::Unavailable { isa };
            return Err(refuse(&self.name, &e));
        }
        self.isa = isa;
        Ok(self)
    }

    /// This tensor on kernel arm `isa`, unchecked: an unavailable arm is refused by the
    /// kernel when multiplying (as `TensorView::matmul` always did).
    pub(crate) fn on_isa(mut self, isa: Isa) -> Self {
        self.isa = isa;
        self
    }

    /// Rows between two points where a row band starts without decoding anything before it:
    /// 1 for dense formats, a chunk's rows for `int4-rans64-t1` (a band starting elsewhere
    /// decodes and drops less than a chunk), `None` for `int4-rans256-g0` records and CFS1
    /// blobs (one sequential decode: a band starting at row `r` decodes rows `0..r` first).
    pub fn row_split(&self) -> Option<usize> {
        match &self.kind {
            Kind::Dense { .. } => Some(1),
            Kind::Rans256 { .. } | Kind::Cfs1 { .. } => None,
            Kind::Rans64 { source, scales } => self.fused(*source, scales).row_split(),
        }
    }

    /// A [`FusedMatrix`] over an already checked source (`from_source` repeats only the
    /// length and scale-count comparisons, which held when the tensor was prepared).
    fn fused<'m, S: TileSource>(&self, source: S, scales: &'m [f32]) -> FusedMatrix<'m, S> {
        FusedMatrix::from_source(source, scales, self.o, self.i)
            .expect("checked when the tensor was prepared")
    }

    /// Fresh scratch for [`matmul_rows`](Self::matmul_rows) (one per worker thread),
    /// reserving batches of up to [`RESERVED_BATCH`] rows.
    pub fn scratch(&self) -> Scratch {
        let x = [0f32; 0];
        // The tile of a batch (the largest budget) for every source.
        let batch = Acts::F32 { x: &x, s: RESERVED_BATCH };
        let (w, y) = match &self.kind {
            Kind::Dense { .. } => (0, 0),
            Kind::Rans256 { record, table, scales } => self
                .fused(RecordTiles::new(*record, table), scales)
                .scratch_lens(self.arm, &batch, 0..self.o),
            Kind::Rans64 { source, scales } => {
                self.fused(*source, scales).scratch_lens(self.arm64, &batch, 0..self.o)
            }
            Kind::Cfs1 { source, scales } => {
                self.fused(*source, scales).scratch_lens((), &batch, 0..self.o)
            }
        };
        let table = matches!(self.kind, Kind::Cfs1 { .. }).then(Box::<DecodeTable>::default);
        Scratch { w: vec![0u8; w], y: vec![0f32; y], table }
    }

    /// `y = acts · Wᵀ` (`acts` is `S × I`, `y` is `S × O`, row-major) with the scratch held
    /// inside: no allocation (for a batch no larger than any before, or than
    /// [`RESERVED_BATCH`]; and unless another thread's call holds the scratch, see the module
    /// docs), no thread. On a refusal of the weights `y` is all zeros.
    ///
    /// # Errors
    /// Shapes (`E_KERNEL_LENGTH`, …), and the decoder's refusals of the stored bytes.
    pub fn matmul(&self, acts: Acts<'_>, y: &mut [f32]) -> Result<(), Refusal> {
        use std::sync::TryLockError;
        match self.scratch.try_lock() {
            Ok(mut held) => self.matmul_rows(0..self.o, acts, y, &mut held),
            // A panic inside an earlier call left the buffers as they were: still scratch.
            Err(TryLockError::Poisoned(p)) => {
                self.matmul_rows(0..self.o, acts, y, &mut p.into_inner())
            }
            Err(TryLockError::WouldBlock) => {
                self.matmul_rows(0..self.o, acts, y, &mut self.scratch())
            }
        }
    }

    /// Rows `rows` of `y = acts · Wᵀ` into `y_band` (`S × rows.len()`, row-major by activation
    /// row: `y_band[s · n + (o − rows.start)]`), with `scratch` (one per thread; `&self` may
    /// be shared). No allocation (see [`matmul`](Self::matmul)), no thread. See
    /// [`row_split`](Self::row_split) for where bands start cheaply; the seals a band checks
    /// are those of what it decodes to the end, so bands covering `0..O` check them all. On a
    /// refusal of the weights `y_band` is all zeros.
    ///
    /// # Errors
    /// As [`matmul`](Self::matmul), and `E_BAND` (or the kernel's `E_KERNEL_ROW_RANGE`) for
    /// rows outside `0..O`.
    pub fn matmul_rows(
        &self,
        rows: Range<usize>,
        acts: Acts<'_>,
        y_band: &mut [f32],
        scratch: &mut Scratch,
    ) -> Result<(), Refusal> {
        let adapter = |e: AdapterError| refuse(&self.name, &e);
        match &self.kind {
            Kind::Dense { .. } => {
                let m =
                    dense_matrix(&self.kind, self.o, self.i).map_err(|e| refuse(&self.name, &e))?;
                match acts {
                    Acts::F32 { x, s } => matmul_rows_with(self.isa, &m, x, s, rows, y_band),
                    Acts::Q8(q) => matmul_q8_rows_with(self.isa, &m, q, rows, y_band),
                }
                .map_err(|e| refuse(&self.name, &e))
            }
            Kind::Rans256 { record, table, scales } => {
                let m = self.fused(RecordTiles::new(*record, table), scales);
                band(&m, self.isa, self.arm, acts, rows, y_band, scratch).map_err(adapter)
            }
            Kind::Rans64 { source, scales } => {
                let m = self.fused(*source, scales);
                band(&m, self.isa, self.arm64, acts, rows, y_band, scratch).map_err(adapter)
            }
            Kind::Cfs1 { source, scales } => {
                let m = self.fused(*source, scales);
                band(&m, self.isa, (), acts, rows, y_band, scratch).map_err(adapter)
            }
        }
    }

    /// Writes the dense weight bytes into `out` (exactly `O · ceil(I/2)` bytes for the
    /// compressed formats, the stored size for dense ones) on this thread: a copy for dense
    /// formats, a checked decode (every seal) for the others.
    ///
    /// # Errors
    /// `E_OUTPUT_LEN`, and the decoder's refusals.
    pub fn decode_into(&self, out: &mut [u8]) -> Result<(), Refusal> {
        let adapter = |e: AdapterError| refuse(&self.name, &e);
        let want = match &self.kind {
            Kind::Dense { weights, .. } => weights.len(),
            _ => self.o * self.i.div_ceil(2),
        };
        if out.len() != want {
            let detail =
                format!("{}: output holds {} bytes, expected {want}", self.name, out.len());
            return Err(Refusal::new(Class::OutputLen, detail));
        }
        match &self.kind {
            Kind::Dense { weights, .. } => {
                out.copy_from_slice(weights);
                Ok(())
            }
            Kind::Rans256 { record, table, .. } => {
                RecordTiles::new(*record, table).decode_into(self.arm, out).map_err(adapter)
            }
            Kind::Rans64 { source, .. } => source.decode_into(self.arm64, out).map_err(adapter),
            Kind::Cfs1 { source, .. } => source.decode_into((), out).map_err(adapter),
        }
    }

    /// `y = acts · Wᵀ` on `threads` threads of the calling process (`1`: [`matmul`]), as
    /// `tetrad matmul --threads` runs it: dense formats and `int4-rans64-t1` in row bands, an
    /// `int4-rans256-g0` record with two threads splitting its streams or pipelining decode
    /// and multiply ([`crate::adapter::matmul`]), a CFS1 blob pipelined
    /// ([`crate::adapter::matmul_cfs1`]). Spawns scoped threads and allocates per call; an
    /// engine with its own pool uses [`matmul_rows`](Self::matmul_rows) instead.
    ///
    /// # Errors
    /// As [`matmul`](Self::matmul).
    ///
    /// [`matmul`]: Self::matmul
    pub fn matmul_threads(
        &self,
        acts: Acts<'_>,
        y: &mut [f32],
        threads: usize,
    ) -> Result<(), Refusal> {
        let (o, s) = (self.o, acts.s());
        let shapes_ok = s.checked_mul(o) == Some(y.len()) && acts.check(self.i).is_ok();
        if threads <= 1 || o < 2 || !shapes_ok {
            // One thread also reports the shapes' refusals.
            return self.matmul(acts, y);
        }
        let adapter = |e: AdapterError| refuse(&self.name, &e);
        match &self.kind {
            Kind::Dense { .. } => crate::adapter::row_bands(o, s, y, threads, |rows| {
                let mut yb = vec![0f32; s * rows.len()];
                let mut scratch = Scratch::empty();
                self.matmul_rows(rows, acts, &mut yb, &mut scratch).map(|()| yb)
            }),
            Kind::Rans256 { record, table, scales } => {
                let m = self.fused(RecordTiles::new(*record, table), scales);
                crate::adapter::matmul(&m, self.isa, self.arm, acts, y, threads).map_err(adapter)
            }
            Kind::Rans64 { source, scales } => {
                let m = self.fused(*source, scales);
                crate::rans64::matmul(&m, self.isa, self.arm64, acts, y, threads).map_err(adapter)
            }
            Kind::Cfs1 { source, scales } => {
                let m = self.fused(*source, scales);
                crate::adapter::matmul_cfs1(&m, self.isa, acts, y, threads).map_err(adapter)
            }
        }
    }

    /// `y = acts · Wᵀ` with rows split over rayon's threads at [`row_split`] points (about
    /// two bands per thread; a sequential source runs as one band), each band with its own
    /// [`Scratch`] (allocated here) and outputs gathered into `y`. Bit-identical to
    /// [`matmul`](Self::matmul); on a refusal `y` is all zeros.
    ///
    /// # Errors
    /// As [`matmul_rows`](Self::matmul_rows): the first refusal in row order.
    ///
    /// [`row_split`]: Self::row_split
    #[cfg(feature = "parallel")]
    pub fn matmul_par(&self, acts: Acts<'_>, y: &mut [f32]) -> Result<(), Refusal> {
        use rayon::prelude::*;
        let (o, s) = (self.o, acts.s());
        let shapes_ok = s.checked_mul(o) == Some(y.len()) && acts.check(self.i).is_ok();
        let Some(unit) = self.row_split().filter(|_| shapes_ok && o >= 2) else {
            return self.matmul_rows(0..o, acts, y, &mut self.scratch());
        };
        let bands = 2 * rayon::current_num_threads();
        let len = o.div_ceil(bands).next_multiple_of(unit).max(1);
        let parts: Vec<_> = (0..o)
            .step_by(len)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map_init(
                || self.scratch(),
                |scratch, r0| {
                    let rows = r0..(r0 + len).min(o);
                    let mut yb = vec![0f32; s * rows.len()];
                    let r = self.matmul_rows(rows.clone(), acts, &mut yb, scratch);
                    (rows, r.map(|()| yb))
                },
            )
            .collect();
        for (rows, part) in parts {
            let part = match part {
                Ok(p) => p,
                Err(e) => {
                    y.fill(0.0);
                    return Err(e);
                }
            };
            let n = rows.len();
            for si in 0..s {
                y[si * o + rows.start..si * o + rows.end]
                    .copy_from_slice(&part[si * n..(si + 1) * n]);
            }
        }
        Ok(())
    }
}

/// One band of a fused matrix through the adapter's tile loop, with the scratch's buffers
/// cut to the allocating path's tile sizes for `acts` (so the tiles are those of
/// `FusedMatrix::matmul_with`).
fn band<S: TileSource<Work = W>, W: AsWork>(
    m: &FusedMatrix<'_, S>,
    isa: Isa,
    arm: S::Arm,
    acts: Acts<'_>,
    rows: Range<usize>,
    y_band: &mut [f32],
    scratch: &mut Scratch,
) -> Result<(), AdapterError> {
    // Shapes first: the scratch is sized by `S`, which must fit the outputs.
    let n = rows.len();
    let fits = rows.start <= rows.end
        && rows.end <= m.o()
        && acts.check(m.i()).is_ok()
        && acts.s().checked_mul(n) == Some(y_band.len());
    let (wlen, ylen) = if fits { m.scratch_lens(arm, &acts, rows.clone()) } else { (0, 0) };
    let (w, yb, table) = scratch.parts(wlen, ylen);
    W::with(table, |work| m.matmul_band_work(isa, arm, acts, rows, y_band, w, yb, work))
}

/// A source's working memory, from a [`Scratch`]'s table slot.
trait AsWork {
    /// Runs `f` with the working memory.
    fn with<R>(table: &mut Option<Box<DecodeTable>>, f: impl FnOnce(&mut Self) -> R) -> R;
}

impl AsWork for () {
    fn with<R>(_: &mut Option<Box<DecodeTable>>, f: impl FnOnce(&mut Self) -> R) -> R {
        f(&mut ())
    }
}

impl AsWork for DecodeTable {
    fn with<R>(table: &mut Option<Box<DecodeTable>>, f: impl FnOnce(&mut Self) -> R) -> R {
        // Made by `PreparedTensor::scratch` for CFS1 tensors; a scratch made for another
        // tensor gets one here, once.
        f(table.get_or_insert_with(Box::default))
    }
}
