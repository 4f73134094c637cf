//! The small-batch f32 passes: 2 to 16 activation rows over int4-row, fp8, int4-grouped and
//! mxfp4 weights, the activations copied per column chunk into an interleaved L1 buffer.

use core::arch::x86_64::*;
use core::ops::Range;

use super::MX_LUT;
use super::fp8::{
    TWO_120, band_has_nan, fp8x32_bits, fp8x32_low, scalable_by_2_120, scalable_by_256,
};
use super::grouped::nibble_block_f32;
use super::int4_int8_f32::{int4_split_codes, split_even_odd_ps};
use super::reduce::{chains_sum, hsum_ps};
use crate::format::Format;
use crate::kernels::{Matrix, Scales};

/// Activation rows `0..n` of an int4-row or fp8 matrix in passes of 8, 4 or 2 rows, of an
/// int4-grouped (`gs` dividing 512) or mxfp4 matrix in passes of 8 or 4 (see
/// [`matmul_f32_small_batch`](super::matmul_f32_small_batch) for `n`; here, for the grouped
/// formats, up to 3 rows may be left).
///
/// # Safety
/// The arm's features available; shapes as asserted by
/// [`matmul_f32_rows`](crate::arch::x86_64::matmul_f32_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_multi_passes(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) -> usize {
    // 0: int4-row, 1: fp8, 2: int4-grouped, 3: mxfp4.
    let kind = match m.format() {
        Format::Int4Row => 0,
        Format::Fp8E4m3B128 if scalable_by_256(&x[..s * m.i()]) => 1,
        Format::Int4Grouped if m.group_len().is_multiple_of(32) && 512 % m.group_len() == 0 => 2,
        Format::Mxfp4 => 3,
        _ => return 0,
    };
    // int4-grouped and mxfp4: passes of 8 or 4 (pairs run faster on the row kernel).
    let min_t = if kind >= 2 { 4 } else { 2 };
    let mut s0 = 0;
    while s - s0 >= min_t {
        let t = match s - s0 {
            8.. => 8,
            4.. => 4,
            _ => 2,
        };
        let r = rows.clone();
        // SAFETY: same contract; activation rows s0 .. s0 + t exist; fp8: every
        // x · 2⁸ is finite where x is; int4-grouped: gs divides 512 (checked above).
        unsafe {
            match (kind, t) {
                (0, 8) => f32_int4_multi::<8>(m, x, s0, r, y),
                (0, 4) => f32_int4_multi::<4>(m, x, s0, r, y),
                (0, _) => f32_int4_multi::<2>(m, x, s0, r, y),
                (1, 8) => f32_fp8_multi::<8>(m, x, s0, r, y),
                (1, 4) => f32_fp8_multi::<4>(m, x, s0, r, y),
                (1, _) => f32_fp8_multi::<2>(m, x, s0, r, y),
                (2, 8) => f32_nib_multi::<8, false>(m, x, s0, r, y),
                (2, 4) => f32_nib_multi::<4, false>(m, x, s0, r, y),
                (2, _) => f32_nib_multi::<2, false>(m, x, s0, r, y),
                (_, 8) => f32_nib_multi::<8, true>(m, x, s0, r, y),
                (_, 4) => f32_nib_multi::<4, true>(m, x, s0, r, y),
                (_, _) => f32_nib_multi::<2, true>(m, x, s0, r, y),
            }
        }
        s0 += t;
    }
    s0
}

/// The skeleton of the small-batch passes ([`f32_int4_multi`], [`f32_fp8_multi`]) for
/// activation rows `s0 .. s0 + T`: the columns in blocks of `UNIT` (32 or 128) and in
/// chunks of `4096 / T` columns whose `T` activation rows are copied, times `xs` (1, `2⁸`
/// or `2¹²⁰`, exact where the caller says so), into one 16 KiB stack buffer interleaved so
/// that each 8 columns of the `T` rows are adjacent (`xb[(p·T + k)·8 ..]`: 8-column
/// piece `p` of the chunk, row `k`; zero past `I`), L1-resident while every weight row
/// passes over it. Rows go in blocks of about 1 MiB of weights (they stay in L2 across
/// the chunks), each prefetching the chunk bytes of the row two ahead.
/// `chunk(row, o, g0, g1, xb)` returns weight row `o`'s sums over blocks `g0..g1` for
/// the `T` activation rows (8 lanes each); their horizontal sums are added into `y`
/// (set by the first chunk). `EO` (int4-row: `UNIT` 32, `xs` 1): each 32 columns'
/// four pieces are those of [`split_even_odd_ps`] instead of column order.
///
/// # Safety
/// The arm's features available; `x` holds activation rows `s0 .. s0 + T` of `I` values
/// each, `y` the `S × rows.len()` outputs, `rows.end ≤ O`; `chunk` reads only its row
/// (or copies of it) and `UNIT · T` buffer values per block from `xb`; `xs · x` is
/// finite wherever `x` is.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn multi_passes<const T: usize, const UNIT: usize, const EO: bool>(
    m: &Matrix<'_>,
    x: &[f32],
    s0: usize,
    rows: Range<usize>,
    y: &mut [f32],
    xs: f32,
    chunk: impl Fn(&[u8], usize, usize, usize, *const f32) -> [__m256; T],
) {
    let (ni, nr) = (m.i(), rows.len());
    let all = ni.div_ceil(UNIT);
    let per = 4096 / T / UNIT; // blocks per chunk
    // Weight bytes per block (for the prefetch): int4 packs two columns a byte, fp8 one.
    let nibbles = matches!(m.format(), Format::Int4Row | Format::Int4Grouped | Format::Mxfp4);
    let bpb = if nibbles { UNIT / 2 } else { UNIT };
    let mut xb = [0f32; 4096];
    let rb = (1_048_576 / ni.max(1)).max(8);
    let mut r0 = 0;
    while r0 < nr {
        let r1 = (r0 + rb).min(nr);
        let mut g0 = 0;
        while g0 < all {
            let g1 = (g0 + per).min(all);
            debug_assert!(!EO || (UNIT == 32 && xs == 1.0));
            if EO {
                // Per 32 columns and activation row, the four pieces of
                // split_even_odd_ps (zero past I).
                for bb in 0..(g1 - g0) * UNIT / 32 {
                    let c = UNIT * g0 + 32 * bb;
                    for k in 0..T {
                        let src = &x[(s0 + k) * ni..(s0 + k + 1) * ni];
                        let mut t = [0f32; 32];
                        let sp = if c + 32 <= ni {
                            src[c..].as_ptr()
                        } else {
                            t[..ni - c].copy_from_slice(&src[c..]);
                            t.as_ptr()
                        };
                        // SAFETY: 32 values at sp; piece 4·bb + q of row k is inside
                        // xb (4096 / T / UNIT blocks of UNIT · T values per chunk).
                        unsafe {
                            let v = split_even_odd_ps(sp);
                            for (q, vq) in v.into_iter().enumerate() {
                                let d = xb.as_mut_ptr().add(((4 * bb + q) * T + k) * 8);
                                _mm256_storeu_ps(d, vq);
                            }
                        }
                    }
                }
            }
            for p in 0..if EO { 0 } else { (g1 - g0) * UNIT / 8 } {
                let c = UNIT * g0 + 8 * p;
                for k in 0..T {
                    let d = &mut xb[(p * T + k) * 8..][..8];
                    let src = &x[(s0 + k) * ni..(s0 + k + 1) * ni];
                    if c + 8 <= ni {
                        // SAFETY: 8 values at src[c..] and at d.
                        unsafe {
                            let v = _mm256_loadu_ps(src.as_ptr().add(c));
                            let v =
                                if xs == 1.0 { v } else { _mm256_mul_ps(v, _mm256_set1_ps(xs)) };
                            _mm256_storeu_ps(d.as_mut_ptr(), v);
                        }
                    } else {
                        d.fill(0.0);
                        for (dv, sv) in d.iter_mut().zip(&src[c.min(ni)..]) {
                            *dv = sv * xs;
                        }
                    }
                }
            }
            for r in r0..r1 {
                let (pr, pg) = if r + 2 < r1 { (r + 2, g0) } else { (r0 + r + 2 - r1, g1) };
                if pr < r1 && pg < all {
                    let pp = m.row_bytes(rows.start + pr).as_ptr().wrapping_add(bpb * pg);
                    for l in (0..bpb * per).step_by(64) {
                        // A hint: never faults, whatever the (wrapping) address.
                        _mm_prefetch::<_MM_HINT_T0>(pp.wrapping_add(l).cast());
                    }
                }
                let o = rows.start + r;
                let sums = chunk(m.row_bytes(o), o, g0, g1, xb.as_ptr());
                for (k, a) in sums.into_iter().enumerate() {
                    let v = hsum_ps(a);
                    let yk = &mut y[(s0 + k) * nr + r];
                    *yk = if g0 == 0 { v } else { *yk + v };
                }
            }
            g0 = g1;
        }
        r0 = r1;
    }
}

/// int4-grouped (`gs` dividing 512: 32, 64, …, 512) and mxfp4 (`MX`), f32 activations, `T` = 2, 4
/// or 8 activation rows per pass, in the form of [`f32_int4_multi`]: column chunks of `4096 / T`
/// (whole groups, since `gs` divides them) copied into the interleaved 16 KiB buffer; per weight
/// row and 32-column block one decode ([`nibble_block_f32`], shared by the `T` rows) and one FMA
/// per activation row and 8 columns into `8 / T` chains per row; at each group end `acc = fma(part,
/// scale, acc)` per activation row (mxfp4: `2^(e − 128)`, the codes being doubled). Replaces the
/// row kernel [`nibble_row_f32`](super::grouped::nibble_row_f32) (per-group bookkeeping once per 32
/// columns, every pass re-reading the activations from their rows): at `S = 4` and 16 on Zen 2 (the
/// `kernels` bench) that ran at half int4-row's speed.
///
/// # Safety
/// The arm's features available; `m` is int4-grouped with `512 % gs == 0` or mxfp4, `x` holds
/// activation rows `s0 .. s0 + T` of `I` values each, `y` the `S × rows.len()` outputs, `rows.end ≤
/// O`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_nib_multi<const T: usize, const MX: bool>(
    m: &Matrix<'_>,
    x: &[f32],
    s0: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    let ni = m.i();
    let (blocks, bpg) = (ni / 32, m.group_len() / 32);
    let tn = ni - 32 * blocks;
    let all = blocks + usize::from(tn > 0);
    let (sf, se): (&[f32], &[u8]) = match m.scales() {
        Scales::F32(v) => (v, &[]),
        Scales::Ue8m0(e) => (&[], e),
        Scales::None => (&[], &[]),
    };
    // SAFETY: MX_LUT has 16 bytes.
    let lut = unsafe { _mm_loadu_si128(MX_LUT.as_ptr().cast()) };
    // One chunk (blocks b0..b1, whole groups but for a last partial one) of weight row
    // o: the T activation rows' sums, each group's times its scale.
    let chunk = |row: &[u8], o: usize, b0: usize, b1: usize, xb: *const f32| {
        let sb = m.scale_index(o, 0);
        let mut acc = [_mm256_setzero_ps(); T];
        let mut part = [[_mm256_setzero_ps(); 4]; T];
        let mut wt = [0u8; 16];
        for b in b0..b1 {
            let w = if b < blocks {
                row.as_ptr().wrapping_add(16 * b) // 16 bytes: b < blocks
            } else {
                wt[..tn.div_ceil(2)].copy_from_slice(&row[16 * blocks..]);
                wt.as_ptr()
            };
            // SAFETY: 16 bytes at w (the row's block b, or the padded copy).
            let d = nibble_block_f32(unsafe { _mm_loadu_si128(w.cast()) }, MX, lut);
            let xp = xb.wrapping_add(32 * T * (b - b0));
            for (q, dq) in d.into_iter().enumerate() {
                for (k, pk) in part.iter_mut().enumerate() {
                    // SAFETY: the buffer's block b − b0 holds 32 · T values.
                    let xv = unsafe { _mm256_loadu_ps(xp.add((q * T + k) * 8)) };
                    let c = q % (8 / T);
                    pk[c] = _mm256_fmadd_ps(dq, xv, pk[c]);
                }
            }
            if (b + 1) % bpg == 0 || b + 1 == all {
                let g = b / bpg;
                let sc =
                    if MX { crate::arch::UE8M0_HALF[usize::from(se[sb + g])] } else { sf[sb + g] };
                let sc = _mm256_set1_ps(sc);
                for (a, pk) in acc.iter_mut().zip(part.iter_mut()) {
                    *a = _mm256_fmadd_ps(chains_sum::<T>(*pk), sc, *a);
                    *pk = [_mm256_setzero_ps(); 4];
                }
            }
        }
        acc
    };
    // SAFETY: same contract; `chunk` reads 16 bytes per block of the row (or its padded
    // copy) and 32 · T buffer values per block.
    unsafe { multi_passes::<T, 32, false>(m, x, s0, rows, y, 1.0, chunk) };
}

/// Fused int4-row f32-activation kernel for `T` = 2, 4 or 8 activation rows sharing each weight
/// decode (the small-batch case): the columns in chunks of `4096 / T`, whose `T` activation rows
/// are first copied into one 16 KiB stack buffer, interleaved so that each 8 columns of the `T`
/// rows are adjacent (`xb[((4·b + q)·T + k)·8 ..]`: block `b`, quarter `q`, row `k`; zero past `I`;
/// each 16 columns split into even and odd ones, as for
/// [`f32_int4_band8`](super::int4_int8_f32::f32_int4_band8)), L1-resident while every weight row
/// passes over it and addressed from one pointer. Per weight row and 16 columns: its 8 bytes
/// decoded in byte order (`vpmovzxbd`, `& 0xF` and `≫ 4`, `− 8`, exact conversion), then one FMA
/// per activation row and 8 columns into its own accumulator, the activations read from the buffer
/// by the FMA (byte order instead of `vpsrlvd` into column order, Zen 2, 512 × 1024: S = 2 6.5 →
/// 8.5, S = 4 4.4 → 4.8 G weights/s). Each chunk's `T` sums are added into `y` (set by the first
/// chunk) and `y` is multiplied by the row's scale at the end: `(Σ_chunks Σ v·x) · scale`, within
/// the f32 tolerance (module doc). The partial last block's weight bytes run on a zero-padded copy.
///
/// # Safety
/// The arm's features available; `m` is int4-row, `x` holds activation rows `s0 .. s0 + T` of `I`
/// values each, `y` the `S × rows.len()` outputs, `rows.end ≤ O`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_int4_multi<const T: usize>(
    m: &Matrix<'_>,
    x: &[f32],
    s0: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    let (ni, nr) = (m.i(), rows.len());
    let Scales::F32(sf) = m.scales() else { unreachable!("int4-row has f32 scales (Matrix::new)") };
    let blocks = ni / 32;
    let tn = ni - 32 * blocks;
    let all = blocks + usize::from(tn > 0);
    if all == 0 {
        for k in 0..T {
            y[(s0 + k) * nr..(s0 + k + 1) * nr].fill(0.0); // no columns: Σ = 0
        }
        return;
    }
    // acc[k][q % C] += (codes of the 16 bytes at w) · (row k's piece q at xp: even and
    // odd columns of 0..16, then of 16..32): C = 8 / T chains per activation row, 8
    // independent FMA chains in all.
    let step = |acc: &mut [[__m256; 4]; T], w: *const u8, xp: *const f32| {
        // SAFETY: w points at 16 bytes, xp at 4 · T · 8 activations (callers).
        let v = unsafe { int4_split_codes(w) };
        for (q, vq) in v.into_iter().enumerate() {
            for (k, a) in acc.iter_mut().enumerate() {
                // SAFETY: xp points at 4 · T · 8 activations (callers) and
                // (q·T + k)·8 + 8 ≤ 4·T·8 for q < 4, k < T.
                let xv = unsafe { _mm256_loadu_ps(xp.add((q * T + k) * 8)) };
                let c = q % (8 / T);
                a[c] = _mm256_fmadd_ps(vq, xv, a[c]);
            }
        }
    };
    // One chunk (blocks b0..b1) of one weight row: the T activation rows' sums.
    let chunk = |row: &[u8], _o: usize, b0: usize, b1: usize, xb: *const f32| {
        let mut acc = [[_mm256_setzero_ps(); 4]; T];
        for b in b0..b1.min(blocks) {
            // b < blocks: 16 bytes at 16·b of the row; the buffer's block b − b0.
            let w = row.as_ptr().wrapping_add(16 * b);
            step(&mut acc, w, xb.wrapping_add(32 * T * (b - b0)));
        }
        if b1 > blocks {
            let mut wt = [0u8; 16];
            wt[..tn.div_ceil(2)].copy_from_slice(&row[16 * blocks..]);
            step(&mut acc, wt.as_ptr(), xb.wrapping_add(32 * T * (blocks - b0)));
        }
        acc.map(|a| chains_sum::<T>(a))
    };
    // SAFETY: same contract; `chunk` reads 16 bytes per block of the row (or its
    // padded copy) and 32 · T buffer values per block.
    unsafe { multi_passes::<T, 32, true>(m, x, s0, rows.clone(), y, 1.0, chunk) };
    for (r, o) in rows.enumerate() {
        for k in 0..T {
            y[(s0 + k) * nr + r] *= sf[o];
        }
    }
}

/// One 128-column fp8 block of one weight row (bytes at `w`) against `T` interleaved activation
/// rows at `xp` ([`f32_fp8_multi`]'s buffer): the `T` partial sums, in `8 / T` FMA chains per
/// activation row. `decode(p)` turns the 32 bytes at `p` into four 8-column vectors:
/// [`fp8x32_low`] (`e4m3 · 2⁻⁸`, buffer `x · 2⁸`) or four
/// [`fp8x8_bits`](super::fp8::fp8x8_bits) (`e4m3 · 2⁻¹²⁰`, buffer `x · 2¹²⁰`), the same products
/// either way, added in the same order (bit-identical sums); the caller picks the decode with or
/// without the NaN mapping.
///
/// # Safety
/// The arm's features available; `w` points at 128 bytes, `xp` at `128 · T` values; `decode` reads
/// 32 bytes at its argument.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn fp8_multi_block<const T: usize>(
    w: *const u8,
    xp: *const f32,
    decode: impl Fn(*const u8) -> [__m256; 4],
) -> [__m256; T] {
    let mut acc = [[_mm256_setzero_ps(); 4]; T];
    for j in 0..4 {
        // 32 bytes at w + 32·j (caller: w points at 128 bytes).
        let d = decode(w.wrapping_add(32 * j));
        for (p, dp) in d.into_iter().enumerate() {
            for (k, a) in acc.iter_mut().enumerate() {
                // SAFETY: xp points at 16 · T · 8 activations (callers: one 128-column
                // block of T rows) and ((4j + p)·T + k)·8 + 8 ≤ 16·T·8 for j, p < 4, k < T.
                let xv = unsafe { _mm256_loadu_ps(xp.add(((4 * j + p) * T + k) * 8)) };
                let c = p % (8 / T);
                a[c] = _mm256_fmadd_ps(dp, xv, a[c]);
            }
        }
    }
    acc.map(|a| chains_sum::<T>(a))
}

/// fp8-e4m3-b128, f32 activations, `T` = 2, 4 or 8 activation rows per pass (the small-batch case),
/// in the form of [`f32_int4_multi`]: column chunks of `4096 / T` (whole 128-column blocks) whose
/// `T` activation rows are copied once per chunk into a 16 KiB interleaved stack buffer, multiplied
/// by `2⁸` there (exact: the caller has checked that every `x · 2⁸` is finite; zero past `I`); per
/// weight row and block one NaN probe, 32 bytes at a time decoded by
/// [`fp8x32_low`] (`e4m3 · 2⁻⁸`), one FMA per activation row and 8 columns
/// into `8 / T` chains per row, then `acc = fma(part, scale, acc)` per activation row at each block
/// end. A partial last block runs on a zero-padded copy of the row's bytes. Row blocks of about 1
/// MiB of weights; the bytes two rows ahead prefetched.
///
/// # Safety
/// The arm's features available; `m` is fp8-e4m3-b128, `x` holds activation rows `s0 .. s0 + T` of
/// `I` values each, `y` the `S × rows.len()` outputs, `rows.end ≤ O`.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f32_fp8_multi<const T: usize>(
    m: &Matrix<'_>,
    x: &[f32],
    s0: usize,
    rows: Range<usize>,
    y: &mut [f32],
) {
    let (ni, full) = (m.i(), m.i() / 128);
    let Scales::F32(sf) = m.scales() else {
        unreachable!("fp8-e4m3-b128 has f32 scales (Matrix::new)")
    };
    // With two activation rows the buffer holds x · 2¹²⁰ (decode: fp8x8_bits) where
    // that is finite, else x · 2⁸ (fp8x32_low); the products, and so the sums, are the
    // same. With 4 or 8 the FMAs outweigh the shared decode and fp8x32_low's fewer
    // uops win (Zen 2, the `kernels` bench, 512 × 1024, G weights/s: S = 2 6.2 → 6.5 with bits,
    // S = 4 4.8 → 4.5).
    let bits =
        T == 2 && crate::isa::fp8_bits_decode() && scalable_by_2_120(&x[s0 * ni..(s0 + T) * ni]);
    let probe = !m.fp8_nan_free(); // with_nan_codes_checked found none: no probes
    // One chunk (blocks g0..g1) of weight row o: the T activation rows' sums, each
    // block's times its scale.
    let chunk = |row: &[u8], o: usize, g0: usize, g1: usize, xb: *const f32| {
        let mut acc = [_mm256_setzero_ps(); T];
        for g in g0..g1 {
            let xp = xb.wrapping_add(128 * T * (g - g0));
            // SAFETY: g < full: 128 bytes at 128·g of the row, else the 128-byte copy;
            // the buffer's block g − g0 holds 128 · T values.
            let mut wt = [0u8; 128];
            let (w, nan) = if g < full {
                // SAFETY: g < full, so 128·g + 128 ≤ the row's length.
                let w = unsafe { row.as_ptr().add(128 * g) };
                // SAFETY: 128 bytes at w.
                (w, probe && unsafe { band_has_nan([w]) })
            } else {
                wt[..ni - 128 * full].copy_from_slice(&row[128 * full..]);
                (wt.as_ptr(), true)
            };
            // SAFETY: w points at 128 readable bytes (the row's block g, or the copy wt)
            // and xp at the buffer's block g − g0 of 128 · T values; each decode reads the
            // 32 bytes at its p.
            let part = unsafe {
                match (bits, nan) {
                    (true, true) => fp8_multi_block::<T>(w, xp, |p| fp8x32_bits::<true>(p)),
                    (true, false) => fp8_multi_block::<T>(w, xp, |p| fp8x32_bits::<false>(p)),
                    (false, true) => fp8_multi_block::<T>(w, xp, |p| {
                        fp8x32_low::<true>(_mm256_loadu_si256(p.cast()))
                    }),
                    (false, false) => fp8_multi_block::<T>(w, xp, |p| {
                        fp8x32_low::<false>(_mm256_loadu_si256(p.cast()))
                    }),
                }
            };
            let sc = _mm256_set1_ps(sf[m.scale_index(o, g)]);
            for (a, p) in acc.iter_mut().zip(part) {
                *a = _mm256_fmadd_ps(p, sc, *a);
            }
        }
        acc
    };
    let scale = if bits { TWO_120 } else { 256.0 };
    // SAFETY: same contract; every x · scale is finite where x is (the caller checked
    // x · 2⁸, `bits` x · 2¹²⁰); `chunk` reads 128 bytes per block of the row (or its
    // padded copy), 128 · T buffer values.
    unsafe { multi_passes::<T, 128, false>(m, x, s0, rows, y, scale, chunk) };
}
