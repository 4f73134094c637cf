//! Threaded decode-then-matmul for compressed weights (the `std` side of
//! [`tetrad_quant::adapter`]).
//!
//! A record cannot be split into row bands (every band needs all the stream state before it),
//! so two threads pipeline: one decodes tile `k + 1` (checked) while the other multiplies tile
//! `k` with the int4-row kernel. Each tile is multiplied by the same kernel on the same bytes as
//! in the single-threaded path, so the result is bit-identical for any thread count.
//! With more than two threads the extra ones have nothing to do: on this format the decoder is
//! the serial part.

use std::sync::mpsc;

use tetrad_quant::adapter::{Acts, AdapterError, Rans256Matrix, TILE_BYTES};
use tetrad_quant::isa::Isa;
use tetrad_rans::Arm;

/// `y = acts · Wᵀ` for a compressed matrix with `threads` threads (1 = no pipeline). On error
/// `y` is zero-filled.
pub fn matmul(
    m: &Rans256Matrix<'_>,
    isa: Isa,
    arm: Arm,
    acts: Acts<'_>,
    y: &mut [f32],
    threads: usize,
) -> Result<(), AdapterError> {
    if threads <= 1 || m.o() <= m.tile_rows(TILE_BYTES) {
        return m.matmul_with(isa, arm, acts, y);
    }
    let r = pipelined(m, isa, arm, acts, y);
    if r.is_err() {
        y.fill(0.0);
    }
    r
}

type Tile = (Vec<u8>, std::ops::Range<usize>);

fn pipelined(
    m: &Rans256Matrix<'_>,
    isa: Isa,
    arm: Arm,
    acts: Acts<'_>,
    y: &mut [f32],
) -> Result<(), AdapterError> {
    let s = match acts {
        Acts::F32 { s, .. } => s,
        Acts::Q8(q) => q.s(),
    };
    if y.len() != s * m.o() {
        return m.matmul_with(isa, arm, acts, y); // the single-threaded path reports the shape error
    }
    let t = m.tile_rows(TILE_BYTES);
    let stride = m.row_bytes();
    let mut dec = m.decoder(arm)?;
    let (full_tx, full_rx) = mpsc::sync_channel::<Tile>(2);
    let (empty_tx, empty_rx) = mpsc::sync_channel::<Vec<u8>>(3);
    for _ in 0..3 {
        empty_tx.send(vec![0u8; t * stride]).expect("channel open");
    }
    std::thread::scope(|scope| {
        let producer = scope.spawn(move || -> Result<(), AdapterError> {
            let mut r0 = 0;
            while r0 < m.o() {
                let r1 = (r0 + t).min(m.o());
                let Ok(mut buf) = empty_rx.recv() else { return Ok(()) }; // consumer gave up
                buf.truncate((r1 - r0) * stride);
                buf.resize((r1 - r0) * stride, 0);
                dec.decode_next(&mut buf)?;
                if full_tx.send((buf, r0..r1)).is_err() {
                    return Ok(());
                }
                r0 = r1;
            }
            dec.finish()?;
            Ok(())
        });
        let mut ybuf = vec![0f32; t * s];
        let mut consumed: Result<(), AdapterError> = Ok(());
        for (buf, rows) in full_rx {
            if consumed.is_ok() {
                consumed = m.multiply_tile(isa, acts, &buf, rows, &mut ybuf, y);
            }
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
