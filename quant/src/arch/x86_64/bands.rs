//! The GEMV band drivers of int4-row and int8-row, one body for both widths: weight rows in bands
//! of 8 (a final, shorter band repeats its last row and stores only its own), each band's 8 exact
//! sums from the width's block steps ([`Bands`], over [`band8_sums`]), then the reference's
//! epilogue `((0 + (d as f32) · s) · sx)` for the 8 rows as lane-wise vector operations
//! ([`row_epilogue8`]: each lane exactly its row's operations, so bit-identical). The last,
//! partial block of each row and activation row comes from zero-padded copies, made outside the
//! block loop (a call there clobbers every vector register).

use core::arch::x86_64::{_mm256_set1_epi32, _mm256_sub_epi32};
use core::ops::Range;

use super::{BandAcc, BandStep, band_ahead, band8_sums, row_epilogue8, streams};
use crate::kernels::{Matrix, QuantizedActs, Scales};

/// The block steps of one arm's band kernels: what differs between the widths (the accumulator
/// vector and the vector code of a block, with its size: [`BandStep::W`], [`BandStep::X`]).
pub(crate) trait Bands {
    /// The accumulator vector (`__m256i`, `__m512i`).
    type Acc: BandAcc;
    /// The int4-row block: `X = 2 · W` columns, `W` weight bytes of a row.
    type Int4: BandStep<Self::Acc> + Copy;
    /// The int8-row block: `X = W` columns.
    type Int8: BandStep<Self::Acc>;

    /// The int4-row step.
    ///
    /// # Safety
    /// The CPU has the arm's features.
    unsafe fn int4_step() -> Self::Int4;

    /// The int8-row step.
    fn int8_step() -> Self::Int8;
}

/// int4-row for activation row `si` alone (`xsum` = its `Σx`), the GEMV case: `d = Σ nib · x −
/// 8 · Σx` per row through [`band8_sums`] with [`Bands::int4_step`]. `W` and `X` are that step's
/// block (`BandStep::W`, `BandStep::X`, checked at compile time), as the lengths of the tail
/// copies.
///
/// # Safety
/// The CPU has the arm's features (an entry point of the arm, into which this body is always
/// inlined); shapes as asserted by [`matmul_q8_rows`](super::matmul_q8_rows); int4-row.
#[inline(always)]
pub(crate) unsafe fn q8_int4_band8<B: Bands, const W: usize, const X: usize>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    si: usize,
    xsum: i32,
    rows: Range<usize>,
    y: &mut [f32],
) {
    const { assert!(W == <B::Int4 as BandStep<B::Acc>>::W && X == <B::Int4 as BandStep<B::Acc>>::X) };
    let (w, x) = (W, X);
    let (ni, nr) = (m.i(), rows.len());
    let blocks = ni / x;
    let (q, sx) = xq.row(si);
    let ys = &mut y[si * nr..(si + 1) * nr];
    let Scales::F32(sf) = m.scales() else { unreachable!("int4-row has f32 scales (Matrix::new)") };
    if ni == 0 {
        for v in ys.iter_mut() {
            *v = 0.0 * sx; // no groups: acc = 0, y = acc · sx
        }
        return;
    }
    // The partial last block's activation codes, zero-padded.
    let mut xt = [0i8; X];
    xt[..ni - x * blocks].copy_from_slice(&q[x * blocks..]);
    // SAFETY: the CPU has AVX2 (the caller's contract: every arm has it).
    let off = unsafe { _mm256_set1_epi32(8 * xsum) };
    let stream = streams(m);
    // SAFETY: the CPU has the arm's features (the caller's contract).
    let step = unsafe { B::int4_step() };
    // Each row's partial last block, zero-padded (every band copies the same number of bytes over
    // the same prefix, so the padding stays zero).
    let mut wt = [[0u8; W]; 8];
    let partial = ni % x != 0;
    let mut r0 = 0;
    while r0 < nr {
        let nv = (nr - r0).min(8);
        let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
        let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
        if partial {
            for (r, t) in wt.iter_mut().enumerate() {
                let row = m.row_bytes(o[r]);
                t[..row.len() - w * blocks].copy_from_slice(&row[w * blocks..]);
            }
        }
        let tail = partial.then(|| (core::array::from_fn(|r| wt[r].as_ptr()), xt.as_ptr()));
        let ahead = band_ahead(rp[0], m.row_bytes(0).len());
        let d = if stream {
            // SAFETY: the CPU has the arm's features; every row has ceil(I/2) ≥ w·blocks bytes,
            // q has I ≥ x·blocks codes; the tail copies hold W bytes and X codes.
            unsafe { band8_sums::<B::Acc, _, true>(rp, q.as_ptr(), blocks, tail, ahead, step) }
        } else {
            // SAFETY: the CPU has the arm's features; every row has ceil(I/2) ≥ w·blocks bytes,
            // q has I ≥ x·blocks codes; the tail copies hold W bytes and X codes.
            unsafe { band8_sums::<B::Acc, _, false>(rp, q.as_ptr(), blocks, tail, ahead, step) }
        };
        // SAFETY: the CPU has AVX2 (every arm has it).
        let d = unsafe { _mm256_sub_epi32(d, off) };
        // SAFETY: the CPU has AVX2 (every arm has it).
        unsafe { row_epilogue8(d, sf, &o, sx, &mut ys[r0..r0 + nv]) };
        r0 += 8;
    }
}

/// int8-row: every activation row against a band before the next band (the band's rows stay in
/// L1/L2, so only the first activation row prefetches the next band when streaming), `d = Σ w ·
/// x` per row through [`band8_sums`] with [`Bands::int8_step`].
/// `W` is the step's block (`BandStep::W`, checked at compile time), as the length of the tail
/// copies.
///
/// # Safety
/// As [`q8_int4_band8`]; int8-row.
#[inline(always)]
pub(crate) unsafe fn q8_int8_row<B: Bands, const W: usize>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) {
    const { assert!(W == <B::Int8 as BandStep<B::Acc>>::W && W == <B::Int8 as BandStep<B::Acc>>::X) };
    let w = W;
    let (ni, nr) = (m.i(), rows.len());
    let Scales::F32(sf) = m.scales() else { unreachable!("int8-row has f32 scales (Matrix::new)") };
    if ni == 0 {
        for si in 0..xq.s() {
            let sx = xq.row(si).1;
            for v in &mut y[si * nr..(si + 1) * nr] {
                *v = 0.0 * sx; // no groups: acc = 0, y = acc · sx
            }
        }
        return;
    }
    let blocks = ni / w;
    // The partial last block of each row and activation row, zero-padded (every copy covers the
    // same prefix, so the padding stays zero).
    let (mut wt, mut xt) = ([[0u8; W]; 8], [0i8; W]);
    let tn = ni - w * blocks;
    let stream = streams(m);
    let mut r0 = 0;
    while r0 < nr {
        let nv = (nr - r0).min(8);
        let o: [usize; 8] = core::array::from_fn(|r| rows.start + r0 + r.min(nv - 1));
        let rp: [*const u8; 8] = core::array::from_fn(|r| m.row_bytes(o[r]).as_ptr());
        if tn > 0 {
            for (r, t) in wt.iter_mut().enumerate() {
                t[..tn].copy_from_slice(&m.row_bytes(o[r])[w * blocks..]);
            }
        }
        for si in 0..xq.s() {
            let (q, sx) = xq.row(si);
            if tn > 0 {
                xt[..tn].copy_from_slice(&q[w * blocks..]);
            }
            let tail = (tn > 0).then(|| (core::array::from_fn(|r| wt[r].as_ptr()), xt.as_ptr()));
            let ahead = band_ahead(rp[0], m.row_bytes(0).len());
            let d = if stream && si == 0 {
                // SAFETY: the CPU has the arm's features; every row and q hold I ≥ w·blocks
                // bytes; the tail copies hold W.
                unsafe {
                    band8_sums::<B::Acc, _, true>(
                        rp,
                        q.as_ptr(),
                        blocks,
                        tail,
                        ahead,
                        B::int8_step(),
                    )
                }
            } else {
                // SAFETY: the CPU has the arm's features; every row and q hold I ≥ w·blocks
                // bytes; the tail copies hold W.
                unsafe {
                    band8_sums::<B::Acc, _, false>(
                        rp,
                        q.as_ptr(),
                        blocks,
                        tail,
                        ahead,
                        B::int8_step(),
                    )
                }
            };
            let ys = &mut y[si * nr + r0..si * nr + r0 + nv];
            // SAFETY: the CPU has AVX2 (every arm has it).
            unsafe { row_epilogue8(d, sf, &o, sx, ys) };
        }
        r0 += 8;
    }
}
