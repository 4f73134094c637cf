//! Threaded decode-then-matmul for compressed weights (the `std` side of
//! [`tetrad_quant::adapter`]): [`matmul`] for `int4-rans256-g0` records, [`matmul_cfs1`] for
//! CFS1 blobs of int4-row bytes.
//!
//! Neither format can be split into row bands: a record's 256 streams are interleaved across
//! every row, and a CFS1 blob is one serial stream, so every band needs all the decoder state
//! before it. A record's streams, though, are independent of each other, and when a row is a
//! whole number of rounds (`ceil(I/2)` a multiple of `N/2` bytes: every `I` that is a
//! multiple of 256 at `N = 256`) a tile of whole rows is whole rounds. Then, at small batches,
//! two threads **split the streams** ([`tetrad_rans::StreamShare`]): each decodes its half
//! of the pairs for the tile (the calling thread the lower half), the calling thread puts the
//! two halves together and multiplies, while the other thread already decodes its half of the
//! next tile. At batch 1 the decode is about 95 % of the work, so this nearly halves the time.
//! Otherwise (larger f32 batches, other shapes, CFS1) two threads **pipeline**: one decodes
//! tile `k + 1` (checked) while the other multiplies tile `k` with the int4-row kernel, through
//! three recycled tile buffers — at batch 16 the multiply is as long as the decode, and this
//! overlaps them. Each tile is multiplied by the same kernel on the same bytes as in the
//! single-threaded path, so the result is bit-identical for any thread count and either
//! split. With more than two threads the extra ones have nothing to do. On any error `y` is
//! zero-filled (a seal is only known after the last tile).

use std::ops::Range;
use std::sync::mpsc;

use tetrad_quant::adapter::{
    Acts, AdapterError, Cfs1Matrix, FusedMatrix, Rans256Matrix, TILE_BYTES, TileDecoder, TileSource,
};
use tetrad_quant::isa::Isa;
use tetrad_rans::{Arm, StreamShare};

/// Int4 bytes per tile when two threads split a record's streams: each tile costs the two
/// threads a hand-off (a channel round trip, a thread woken), so tiles are much larger than the
/// single-threaded [`TILE_BYTES`]; the two tiles and the halves' compact buffers (1.5 MiB)
/// live in L2 and L3, never DRAM. On a Zen 5 core, 512 KiB tiles ran
/// about 1.2 × (f32) and 1.5 × (int8) as fast as 128 KiB tiles at batch 1 (`tetrad bench
/// adapter` measures the split).
pub const SPLIT_TILE_BYTES: usize = 512 * 1024;

/// The largest f32 batch at which two threads split the streams rather than pipeline: the
/// calling thread multiplies every tile, so the split pays while the multiply takes less than
/// half the decode (int8 activations: at every batch up to 16 measured).
const SPLIT_MAX_F32_BATCH: usize = 4;

/// Whether [`matmul`] on two or more threads splits the record's streams (see the module
/// docs): an even `N ≥ 4`, rows of whole rounds, and a batch small enough.
fn splits_streams(m: &Rans256Matrix<'_>, acts: &Acts<'_>) -> bool {
    let n = m.record().n_streams();
    let small = match acts {
        Acts::F32 { s, .. } => *s <= SPLIT_MAX_F32_BATCH,
        Acts::Q8(_) => true,
    };
    small && n.is_multiple_of(2) && n >= 4 && m.row_bytes().is_multiple_of(n / 2)
}

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
    let tile = if threads > 1 && splits_streams(m, &acts) { SPLIT_TILE_BYTES } else { TILE_BYTES };
    matmul_tiled(m, isa, arm, acts, y, threads, tile)
}

/// [`matmul`] with tiles of `tile_bytes` int4 bytes (whole rows, at least one) instead of
/// [`TILE_BYTES`] or [`SPLIT_TILE_BYTES`]. Every row goes through the same kernel whatever
/// tile holds it, so the result is the same bits for any tile size; a matrix of one tile or
/// less runs on the calling thread alone. Small tiles let tests and fuzzing reach both
/// two-thread paths with small matrices.
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
    let r = if splits_streams(m, &acts) {
        split_streams(m, isa, arm, acts, y, rows)
    } else {
        pipelined(m, isa, arm, acts, y, rows)
    };
    if r.is_err() {
        y.fill(0.0);
    }
    r
}

/// Two threads, each decoding half of the record's stream pairs tile by tile (`rows` rows a
/// tile, whole rounds: [`splits_streams`] holds); this thread joins the halves and multiplies
/// tile `k` while the other decodes its half of tile `k + 1`. Seals are checked after the last
/// tile, the lower half's first (the lowest faulty stream is reported, as one thread would).
fn split_streams(
    m: &Rans256Matrix<'_>,
    isa: Isa,
    arm: Arm,
    acts: Acts<'_>,
    y: &mut [f32],
    rows: usize,
) -> Result<(), AdapterError> {
    let pairs = m.record().n_streams() / 2;
    let half = pairs / 2;
    let mut own = StreamShare::new(arm, m.table(), m.record(), 0..half)?;
    let mut other = StreamShare::new(arm, m.table(), m.record(), half..pairs)?;
    let (o, stride) = (m.o(), m.row_bytes());
    let (wa, wb) = (own.width(), other.width());
    // Rounds of the tile that starts at row r0 (rows of stride bytes = stride / pairs rounds).
    let rounds = |r0: usize| ((r0 + rows).min(o) - r0) * (stride / pairs);
    let tile_rounds = rows * (stride / pairs);
    // Round by round, a share's compact bytes into its place in the tile.
    let join = |tile: &mut [u8], compact: &[u8], at: usize, w: usize| {
        for (round, part) in tile.chunks_exact_mut(pairs).zip(compact.chunks_exact(w)) {
            round[at..at + w].copy_from_slice(part);
        }
    };
    std::thread::scope(|scope| {
        let (ask_tx, ask_rx) = mpsc::sync_channel::<Vec<u8>>(1);
        let (done_tx, done_rx) = mpsc::sync_channel::<Vec<u8>>(1);
        let worker = scope.spawn(move || {
            for mut half_tile in ask_rx {
                other.decode_rounds(&mut half_tile);
                if done_tx.send(half_tile).is_err() {
                    break; // this thread gave up
                }
            }
            other.finish()
        });
        let mut tiles = [vec![0u8; rows * stride], vec![0u8; rows * stride]];
        let mut mine = vec![0u8; tile_rounds * wa];
        let mut ybuf = vec![0f32; rows * acts.s()];
        // Asks the other thread for its half of the tile at row r0, in `buf`.
        let ask = |r0: usize, mut buf: Vec<u8>| {
            buf.resize(rounds(r0) * wb, 0);
            ask_tx.send(buf).is_ok()
        };
        // Decodes this thread's half of the tile at row r0 into `tile`, then joins the other
        // half when it comes; returns the other thread's buffer for the next ask.
        let mut complete = |tile: &mut [u8], r0: usize| -> Option<Vec<u8>> {
            let k = rounds(r0);
            own.decode_rounds(&mut mine[..k * wa]);
            let tile = &mut tile[..k * pairs];
            join(tile, &mine[..k * wa], 0, wa);
            let theirs = done_rx.recv().ok()?;
            join(tile, &theirs, half, wb);
            Some(theirs)
        };
        let mut multiplied = Ok(());
        // The first tile. `spare` is None once the other thread is gone: it panicked, and the
        // join says so.
        let mut spare =
            if ask(0, vec![0u8; tile_rounds * wb]) { complete(&mut tiles[0], 0) } else { None };
        let (mut r0, mut cur) = (0, 0);
        while r0 < o {
            let Some(buf) = spare.take() else { break };
            let r1 = (r0 + rows).min(o);
            let [a, b] = &mut tiles;
            let (now, next) = if cur == 0 { (a, b) } else { (b, a) };
            // The other half of the next tile decodes while this one is multiplied.
            if r1 < o && !ask(r1, buf) {
                break;
            }
            multiplied =
                m.multiply_tile(isa, acts, &now[..(r1 - r0) * stride], r0..r1, &mut ybuf, y);
            if multiplied.is_err() {
                break;
            }
            if r1 < o {
                spare = complete(next, r1);
            } else {
                spare = Some(Vec::new());
            }
            cur ^= 1;
            r0 = r1;
        }
        drop(ask_tx);
        drop(done_rx);
        let theirs_sealed = worker.join().expect("decoder thread panicked");
        multiplied?;
        own.finish()?;
        theirs_sealed?;
        Ok(())
    })
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
        return m.matmul_with(isa, (), acts, y);
    }
    let r = pipelined(m, isa, (), acts, y, rows);
    if r.is_err() {
        y.fill(0.0);
    }
    r
}

type Tile = (Vec<u8>, Range<usize>);

/// The two-thread pipeline for a sequential source: a scoped producer thread decodes tiles of
/// `rows` rows (checked, seals after the last) into three recycled buffers, this thread
/// multiplies them as they arrive.
fn pipelined<S: TileSource + Sync>(
    m: &FusedMatrix<'_, S>,
    isa: Isa,
    arm: S::Arm,
    acts: Acts<'_>,
    y: &mut [f32],
    rows: usize,
) -> Result<(), AdapterError> {
    let (o, t, stride) = (m.o(), rows, m.row_bytes());
    // The CFS1 decode table (16 KiB) on the heap, not the producer's stack.
    let mut work = Box::<S::Work>::default();
    let mut dec = m.source().open(arm, &mut work, 0)?;
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
                dec.decode(&mut buf)?;
                if full_tx.send((buf, r0..r1)).is_err() {
                    return Ok(());
                }
                r0 = r1;
            }
            dec.finish()
        });
        let mut ybuf = vec![0f32; t * acts.s()];
        let mut consumed: Result<(), AdapterError> = Ok(());
        for (buf, rows) in full_rx {
            consumed = m.multiply_tile(isa, acts, &buf, rows, &mut ybuf, y);
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

/// One thread's row band and its outputs (`S × band` floats), or its error.
type Band<E> = (Range<usize>, Result<Vec<f32>, E>);

/// Splits `O ≥ 2` rows into `threads ≥ 2` bands, one scoped thread each: `band(rows)` returns
/// that band's `S × band` outputs, gathered into `y` (`S × O`, row-major). The first error in
/// row order is returned (`y` then holds whatever bands came before it); a band's panic is
/// resumed here. Used by the dense bands of `crate::multiply` and `crate::rans64::matmul`.
pub(crate) fn row_bands<E: Send>(
    o: usize,
    s: usize,
    y: &mut [f32],
    threads: usize,
    band: impl Fn(Range<usize>) -> Result<Vec<f32>, E> + Sync,
) -> Result<(), E> {
    debug_assert!(o >= 2 && threads >= 2);
    let len = o.div_ceil(threads.min(o));
    let band = &band;
    let parts: Vec<Band<E>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..o)
            .step_by(len)
            .map(|r0| {
                let rows = r0..(r0 + len).min(o);
                (rows.clone(), scope.spawn(move || band(rows)))
            })
            .collect();
        handles
            .into_iter()
            .map(|(r, h)| (r, h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))))
            .collect()
    });
    for (rows, part) in parts {
        let part = part?;
        let n = rows.len();
        for si in 0..s {
            y[si * o + rows.start..si * o + rows.end].copy_from_slice(&part[si * n..(si + 1) * n]);
        }
    }
    Ok(())
}
