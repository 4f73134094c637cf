//! Threaded decode-then-matmul for compressed weights (the `std` side of
//! [`tetrad_quant::adapter`]): [`matmul`] for `int4-rans256-g0` records, [`matmul_cfs1`] for
//! CFS1 blobs of int4-row bytes.
//!
//! Neither format can be split into row bands: a record's 256 streams are interleaved across
//! every row, and a CFS1 blob is one serial stream, so every band needs all the decoder state
//! before it. Two threads therefore pipeline: one decodes tile `k + 1` (checked) while the
//! other multiplies tile `k` with the int4-row kernel, through three recycled tile buffers.
//! Each tile is multiplied by the same kernel on the same bytes as in the single-threaded path,
//! so the result is bit-identical for any thread count. With more than two threads the extra
//! ones have nothing to do: the decoder is the serial part. On any error `y` is zero-filled
//! (a seal is only known after the last tile).

use std::ops::Range;
use std::sync::mpsc;

use tetrad_fse::DecodeTable;
use tetrad_quant::adapter::{Acts, AdapterError, Cfs1Matrix, Rans256Matrix, TILE_BYTES};
use tetrad_quant::isa::Isa;
use tetrad_rans::Arm;

/// `y = acts · Wᵀ` for an `int4-rans256-g0` matrix with `threads` threads (1 = no pipeline).
/// On error `y` is zero-filled.
pub fn matmul(
    m: &Rans256Matrix<'_>,
    isa: Isa,
    arm: Arm,
    acts: Acts<'_>,
    y: &mut [f32],
    threads: usize,
) -> Result<(), AdapterError> {
    matmul_tiled(m, isa, arm, acts, y, threads, TILE_BYTES)
}

/// [`matmul`] with pipeline tiles of `tile_bytes` int4 bytes (whole rows, at least one)
/// instead of [`TILE_BYTES`]. Every row goes through the same kernel whatever tile holds it,
/// so the result is the same bits for any tile size; a matrix of one tile or less is not
/// pipelined. Small tiles let tests and fuzzing reach the pipeline with small matrices.
pub fn matmul_tiled(
    m: &Rans256Matrix<'_>,
    isa: Isa,
    arm: Arm,
    acts: Acts<'_>,
    y: &mut [f32],
    threads: usize,
    tile_bytes: usize,
) -> Result<(), AdapterError> {
    let shapes_ok = acts.s().checked_mul(m.o()) == Some(y.len()) && acts.check(m.i()).is_ok();
    let rows = m.tile_rows(tile_bytes);
    if threads <= 1 || m.o() <= rows || !shapes_ok {
        // The single-threaded path also reports shape errors.
        return m.matmul_with(isa, arm, acts, y);
    }
    let r = m.decoder(arm).and_then(|dec| {
        let geo = Geometry { o: m.o(), rows, stride: m.row_bytes() };
        pipelined(geo, RansTiles(dec), acts.s(), y, |tile, rows, ybuf, y| {
            m.multiply_tile(isa, acts, tile, rows, ybuf, y)
        })
    });
    if r.is_err() {
        y.fill(0.0);
    }
    r
}

/// `y = acts · Wᵀ` for a CFS1 int4-row matrix with `threads` threads (1 = no pipeline). On
/// error `y` is zero-filled.
pub fn matmul_cfs1(
    m: &Cfs1Matrix<'_>,
    isa: Isa,
    acts: Acts<'_>,
    y: &mut [f32],
    threads: usize,
) -> Result<(), AdapterError> {
    matmul_cfs1_tiled(m, isa, acts, y, threads, TILE_BYTES)
}

/// [`matmul_cfs1`] with pipeline tiles of `tile_bytes` int4 bytes (see [`matmul_tiled`]).
pub fn matmul_cfs1_tiled(
    m: &Cfs1Matrix<'_>,
    isa: Isa,
    acts: Acts<'_>,
    y: &mut [f32],
    threads: usize,
    tile_bytes: usize,
) -> Result<(), AdapterError> {
    let shapes_ok = acts.s().checked_mul(m.o()) == Some(y.len()) && acts.check(m.i()).is_ok();
    let rows = m.tile_rows(tile_bytes);
    if threads <= 1 || m.o() <= rows || !shapes_ok {
        return m.matmul_with(isa, acts, y);
    }
    let mut table = Box::new(DecodeTable::new());
    let r = m.decoder(&mut table).and_then(|dec| {
        let geo = Geometry { o: m.o(), rows, stride: m.row_bytes() };
        pipelined(geo, Cfs1Tiles(dec), acts.s(), y, |tile, rows, ybuf, y| {
            m.multiply_tile(isa, acts, tile, rows, ybuf, y)
        })
    });
    if r.is_err() {
        y.fill(0.0);
    }
    r
}

/// A decoder that hands out the matrix a tile of rows at a time.
trait TileDecoder: Send {
    /// Decodes the next `out.len()` bytes.
    fn next(&mut self, out: &mut [u8]) -> Result<(), AdapterError>;
    /// After the last tile: every byte decoded and every seal held.
    fn finish(&self) -> Result<(), AdapterError>;
}

struct RansTiles<'t, 'r>(tetrad_rans::Decoder<'t, 'r>);

impl TileDecoder for RansTiles<'_, '_> {
    fn next(&mut self, out: &mut [u8]) -> Result<(), AdapterError> {
        Ok(self.0.decode_next(out)?)
    }
    fn finish(&self) -> Result<(), AdapterError> {
        Ok(self.0.finish()?)
    }
}

struct Cfs1Tiles<'t, 'a>(tetrad_fse::Decoder<'t, 'a>);

impl TileDecoder for Cfs1Tiles<'_, '_> {
    fn next(&mut self, out: &mut [u8]) -> Result<(), AdapterError> {
        self.0.decode_next(out)?;
        Ok(())
    }
    fn finish(&self) -> Result<(), AdapterError> {
        // The tiles cover rawlen = O · stride bytes exactly (checked by `Cfs1Matrix::new`), so
        // the last `next` produced the last byte and checked the seal.
        debug_assert!(self.0.is_finished());
        Ok(())
    }
}

/// Rows `o` of `stride` bytes, in tiles of `rows` rows.
#[derive(Clone, Copy)]
struct Geometry {
    o: usize,
    rows: usize,
    stride: usize,
}

type Tile = (Vec<u8>, Range<usize>);

/// The two-thread pipeline: a scoped producer thread decodes tiles into recycled buffers,
/// this thread multiplies them (`multiply(tile, rows, ybuf, y)`) as they arrive.
fn pipelined<D: TileDecoder>(
    geo: Geometry,
    mut dec: D,
    s: usize,
    y: &mut [f32],
    multiply: impl Fn(&[u8], Range<usize>, &mut [f32], &mut [f32]) -> Result<(), AdapterError>,
) -> Result<(), AdapterError> {
    let Geometry { o, rows: t, stride } = geo;
    let (full_tx, full_rx) = mpsc::sync_channel::<Tile>(2);
    let (empty_tx, empty_rx) = mpsc::sync_channel::<Vec<u8>>(3);
    for _ in 0..3 {
        empty_tx.send(vec![0u8; t * stride]).expect("channel open");
    }
    std::thread::scope(|scope| {
        let producer = scope.spawn(move || -> Result<(), AdapterError> {
            let mut r0 = 0;
            while r0 < o {
                let r1 = (r0 + t).min(o);
                let Ok(mut buf) = empty_rx.recv() else { return Ok(()) }; // consumer gave up
                buf.resize((r1 - r0) * stride, 0);
                dec.next(&mut buf)?;
                if full_tx.send((buf, r0..r1)).is_err() {
                    return Ok(());
                }
                r0 = r1;
            }
            dec.finish()
        });
        let mut ybuf = vec![0f32; t * s];
        let mut consumed: Result<(), AdapterError> = Ok(());
        for (buf, rows) in full_rx {
            consumed = multiply(&buf, rows, &mut ybuf, y);
            if consumed.is_err() {
                break;
            }
            let _ = empty_tx.send(buf);
        }
        drop(empty_tx);
        let produced = producer.join().expect("decoder thread panicked");
        produced.and(consumed)
    })
}
