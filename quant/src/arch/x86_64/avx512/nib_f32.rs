//! int4-row, int4-grouped and mxfp4 on the f32 path: the row kernels for 1 to 4 activation
//! rows ([`nib_row_f32`]), the de-interleaved form ([`nib_row_f32_de`]) and the tiling of a
//! batch over them ([`f32_tiled`], which also runs fp8).

use core::arch::x86_64::*;
use core::ops::Range;

use super::fp8::{fp8_row_f32, scalable_by_256};
use super::reduce::prefetch_l2;
use super::{I4_F32, MX_F32, mask16, mask64};
use crate::arch::x86_64::streams;
use crate::kernels::{Matrix, Scales};

/// 32 packed bytes → 64 nibbles (`0..=15`) in column order (low nibble = even column):
/// `vpmovzxbw`, then `(z | z ≪ 4) & 0x0F0F` per 16-bit lane.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn nib64(v: __m256i) -> __m512i {
    let z = _mm512_cvtepu8_epi16(v);
    let z4 = _mm512_slli_epi16::<4>(z);
    _mm512_ternarylogic_epi32::<0xA8>(z, z4, _mm512_set1_epi16(0x0F0F))
}

/// `table[idx & 15]` per lane (`vpermd` on the f32 bits: the same shuffle as `vpermps`,
/// written with the integer form, which Miri can execute).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn lut16(idx: __m512i, table: __m512) -> __m512 {
    _mm512_castsi512_ps(_mm512_permutexvar_epi32(idx, _mm512_castps_si512(table)))
}

/// Lane `l` = `a[idx[l] & 15]` for `l < 8`, `b[idx[l] & 15]` for `l ≥ 8` (two `vpermd`).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn pick16(a: __m512, idx: __m512i, b: __m512) -> __m512 {
    let lo = _mm512_permutexvar_epi32(idx, _mm512_castps_si512(a));
    let both = _mm512_mask_permutexvar_epi32(lo, 0xFF00, idx, _mm512_castps_si512(b));
    _mm512_castsi512_ps(both)
}

/// 16 packed bytes → 32 nibbles in column order, as two 16-byte vectors.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn nib32(v: __m128i) -> (__m128i, __m128i) {
    let m = _mm_set1_epi8(0x0F);
    let lo = _mm_and_si128(v, m);
    let hi = _mm_and_si128(_mm_srli_epi16::<4>(v), m);
    (_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi))
}

/// The fused f32 paths.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Int4,
    Mx,
    Fp8,
}

/// Runs a fused f32 path in tiles of 4, 2 or 1 activation rows sharing each weight
/// decode.
///
/// # Safety
/// Features available; shapes as asserted by [`matmul_f32_rows`](crate::arch::x86_64::matmul_f32_rows).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn f32_tiled(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
    kind: Kind,
) {
    let (ni, nr) = (m.i(), rows.len());
    let ipad = ni.div_ceil(32) * 32;
    // The de-interleaved activations: every value read (the first st · ipad) is
    // written first, so the buffer starts uninitialised — zeroing its 64 KiB on every
    // call cost a 256 × 1024 matrix about 3 %. Only raw pointers into it are used.
    let mut xbuf = core::mem::MaybeUninit::<[f32; XB]>::uninit();
    let xb = xbuf.as_mut_ptr().cast::<f32>();
    let mut s0 = 0;
    while s0 < s {
        let st = if s - s0 >= 4 {
            4
        } else if s - s0 >= 2 {
            2
        } else {
            1
        };
        let xp = |k: usize| x[(s0 + k) * ni..].as_ptr();
        if kind == Kind::Fp8 && st * ipad <= XB && scalable_by_256(&x[s0 * ni..(s0 + st) * ni]) {
            for k in 0..st {
                // SAFETY: st · ipad ≤ XB, so the ipad values at k · ipad lie in the
                // buffer; `deinterleave` writes all of them before they are scaled.
                unsafe {
                    let out = xb.add(k * ipad);
                    deinterleave(&x[(s0 + k) * ni..(s0 + k + 1) * ni], out, ipad);
                    for j in 0..ipad {
                        *out.add(j) *= 256.0; // exact: |v| < 2^120 (checked above)
                    }
                }
            }
            let xd = |k: usize| xb.wrapping_add(k * ipad).cast_const();
            for (r, o) in rows.clone().enumerate() {
                // SAFETY: each pointer addresses the ipad de-interleaved, scaled values
                // of activation row s0 + k.
                let v: [f32; 4] = unsafe {
                    match st {
                        4 => fp8_row_f32::<4, true>(m, o, [xd(0), xd(1), xd(2), xd(3)]),
                        2 => pad(fp8_row_f32::<2, true>(m, o, [xd(0), xd(1)])),
                        _ => pad(fp8_row_f32::<1, true>(m, o, [xd(0)])),
                    }
                };
                for k in 0..st {
                    y[(s0 + k) * nr + r] = v[k];
                }
            }
            s0 += st;
            continue;
        }
        if kind != Kind::Fp8 && st * ipad <= XB {
            for k in 0..st {
                // SAFETY: st · ipad ≤ XB, so the ipad values at k · ipad lie in the
                // buffer.
                unsafe {
                    let out = xb.add(k * ipad);
                    deinterleave(&x[(s0 + k) * ni..(s0 + k + 1) * ni], out, ipad);
                }
            }
            let xd = |k: usize| xb.wrapping_add(k * ipad).cast_const();
            for (r, o) in rows.clone().enumerate() {
                // SAFETY: each pointer addresses the ipad de-interleaved values of
                // activation row s0 + k.
                let v: [f32; 4] = unsafe {
                    match (st, kind) {
                        (4, Kind::Mx) => {
                            nib_row_f32_de::<4, true>(m, o, [xd(0), xd(1), xd(2), xd(3)])
                        }
                        (2, Kind::Mx) => pad(nib_row_f32_de::<2, true>(m, o, [xd(0), xd(1)])),
                        (_, Kind::Mx) => pad(nib_row_f32_de::<1, true>(m, o, [xd(0)])),
                        (4, _) => nib_row_f32_de::<4, false>(m, o, [xd(0), xd(1), xd(2), xd(3)]),
                        (2, _) => pad(nib_row_f32_de::<2, false>(m, o, [xd(0), xd(1)])),
                        (_, _) => pad(nib_row_f32_de::<1, false>(m, o, [xd(0)])),
                    }
                };
                for k in 0..st {
                    y[(s0 + k) * nr + r] = v[k];
                }
            }
            s0 += st;
            continue;
        }
        for (r, o) in rows.clone().enumerate() {
            // SAFETY: each pointer addresses the I values of activation row s0 + k.
            let v: [f32; 4] = unsafe {
                match (st, kind) {
                    (4, Kind::Fp8) => fp8_row_f32::<4, false>(m, o, [xp(0), xp(1), xp(2), xp(3)]),
                    (2, Kind::Fp8) => pad(fp8_row_f32::<2, false>(m, o, [xp(0), xp(1)])),
                    (_, Kind::Fp8) => pad(fp8_row_f32::<1, false>(m, o, [xp(0)])),
                    (4, Kind::Mx) => nib_row_f32::<4, true>(m, o, [xp(0), xp(1), xp(2), xp(3)]),
                    (2, Kind::Mx) => pad(nib_row_f32::<2, true>(m, o, [xp(0), xp(1)])),
                    (_, Kind::Mx) => pad(nib_row_f32::<1, true>(m, o, [xp(0)])),
                    (4, Kind::Int4) => nib_row_f32::<4, false>(m, o, [xp(0), xp(1), xp(2), xp(3)]),
                    (2, Kind::Int4) => pad(nib_row_f32::<2, false>(m, o, [xp(0), xp(1)])),
                    (_, Kind::Int4) => pad(nib_row_f32::<1, false>(m, o, [xp(0)])),
                }
            };
            for k in 0..st {
                y[(s0 + k) * nr + r] = v[k];
            }
        }
        s0 += st;
    }
}

/// Activations per call that the de-interleaved nibble path keeps on the stack (64 KiB): `S`-tile ×
/// `I` rounded up to 32. 16 Ki rather than 8 Ki so that rows up to 16 384 columns (a 14 336-column
/// down projection) take that path with one activation row. `avx512-vnni`, f32, S = 1, G weights/s,
/// 8 Ki (zeroed) → 16 Ki (uninitialised), Zen 4, the `kernels` bench, alternated twice: 512 × 14
/// 336 (in L3) int4-row 21.0–21.1 → 22.7, mxfp4 17.8–17.9 → 19.6, fp8 11.8–12.5 → 16.5–17.5; 256 ×
/// 1024 int4-row 24.2–24.4 → 25.3–25.6; fp8 9362 × 14 336 (DRAM) 8.1–8.2 → 12.3–12.7 with
/// `fp8_row_f32`'s prefetch (7.6 without).
pub(super) const XB: usize = 16384;

/// Writes one activation row in the order of the de-interleaved nibble path: per
/// 32-column block, the 16 even columns then the 16 odd ones; columns past `I` are 0.
/// All of `out[..ceil(I/32) · 32]` is written.
///
/// # Safety
/// `out` is valid for writes of `len` floats.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn deinterleave(x: &[f32], out: *mut f32, len: usize) {
    let ni = x.len();
    let ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    let mut c = 0;
    while c < ni {
        let rem = ni - c;
        assert!(c + 32 <= len);
        // SAFETY: the masked loads read only columns below I; the two stores write
        // out[c..c + 32], within the `len` floats at `out` (asserted; the caller's
        // contract).
        unsafe {
            let a = _mm512_maskz_loadu_ps(mask16(rem), x.as_ptr().add(c));
            let b = _mm512_maskz_loadu_ps(
                mask16(rem.saturating_sub(16)),
                x.as_ptr().add(c + 16.min(rem)),
            );
            _mm512_storeu_ps(out.add(c), pick16(a, ie, b));
            _mm512_storeu_ps(out.add(c + 16), pick16(a, io, b));
        }
        c += 32;
    }
}

/// As [`nib_row_f32`], on activations de-interleaved by [`deinterleave`]: the 16 bytes
/// of a 32-column block widen to 16 dwords once (`vpmovzxbd`); `vpermps` reads the low
/// nibble (even columns) directly and, after a shift by 4, the high nibble (odd
/// columns). No unpacking in the weight stream.
///
/// # Safety
/// Features available; every `xd[k]` points at `ceil(I/32)·32` de-interleaved values.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn nib_row_f32_de<const T: usize, const MX: bool>(
    m: &Matrix<'_>,
    o: usize,
    xd: [*const f32; T],
) -> [f32; T] {
    let (ni, gl) = (m.i(), m.group_len());
    let stream = streams(m);
    let rp = m.row_bytes(o).as_ptr();
    let tp = if MX { MX_F32.as_ptr() } else { I4_F32.as_ptr() };
    // SAFETY: both tables hold 16 f32.
    let table = unsafe { _mm512_loadu_ps(tp) };
    let mut acc = [_mm512_setzero_ps(); T];
    // 32-column groups (mxfp4, int4-grouped gs = 32): two whole groups per 64-column
    // step, each group's partial sum scaled into an accumulator of its own (even and
    // odd groups: two FMA chains, see [`two_groups_f32`]; no per-group loop, no masked
    // load, the row's scales read directly).
    let mut acc2 = [_mm512_setzero_ps(); T];
    let mut sbuf = [0f32; 16];
    let mut g0 = 0;
    if gl == 32 {
        // Pairs of groups, eight pairs per refill of the 16 scales.
        let pairs = ni / 64;
        let mut p0 = 0;
        while p0 < pairs {
            row_scales16(m, o, 2 * p0, &mut sbuf);
            let p1 = (p0 + 8).min(pairs);
            for (j, pair) in (p0..p1).enumerate() {
                let col = 64 * pair;
                if stream && pair % 2 == 0 {
                    prefetch_l2(rp.wrapping_add(col / 2).cast());
                }
                let (s0, s1) = (sbuf[(2 * j) & 15], sbuf[(2 * j + 1) & 15]);
                // SAFETY: col + 64 ≤ I: 32 bytes at col/2 are within the row.
                let w = unsafe { nib64_f32_de(rp.add(col / 2), table) };
                // SAFETY: col + 64 ≤ ipad values of every xd[k].
                unsafe { two_groups_f32(&mut acc, &mut acc2, w, xd, col, s0, s1) };
            }
            p0 = p1;
        }
        g0 = 2 * pairs;
        for k in 0..T {
            acc[k] = _mm512_add_ps(acc[k], acc2[k]);
        }
    }
    for g in g0..m.groups_per_row() {
        let (c0, c1) = (g * gl, ((g + 1) * gl).min(ni));
        let mut p = [[_mm512_setzero_ps(); 4]; T];
        let mut col = c0;
        while col + 64 <= c1 {
            if stream && col % 128 == 0 {
                prefetch_l2(rp.wrapping_add(col / 2).cast());
            }
            // SAFETY: col + 64 ≤ I: 32 bytes at col/2 are within the row.
            let w = unsafe { nib64_f32_de(rp.add(col / 2), table) };
            for k in 0..T {
                for j in 0..4 {
                    // SAFETY: col + 64 ≤ ipad values of xd[k].
                    let xv = unsafe { _mm512_loadu_ps(xd[k].add(col + 16 * j)) };
                    p[k][j] = _mm512_fmadd_ps(w[j], xv, p[k][j]);
                }
            }
            col += 64;
        }
        while col < c1 {
            // One 32-column block (or the last, partial one: its bytes are loaded with a
            // mask, and the activations past I are zero in the buffer).
            let nb = (c1 - col).div_ceil(2).min(16);
            // SAFETY: the masked load reads the nb bytes of columns col..min(col+32, c1),
            // within the row.
            let z = unsafe {
                _mm512_cvtepu8_epi32(_mm512_castsi512_si128(_mm512_maskz_loadu_epi8(
                    mask64(nb),
                    rp.add(col / 2).cast(),
                )))
            };
            let we = lut16(z, table);
            let wo = lut16(_mm512_srli_epi32::<4>(z), table);
            for k in 0..T {
                // SAFETY: col + 32 ≤ ipad values of xd[k].
                unsafe {
                    p[k][0] = _mm512_fmadd_ps(we, _mm512_loadu_ps(xd[k].add(col)), p[k][0]);
                    p[k][1] = _mm512_fmadd_ps(wo, _mm512_loadu_ps(xd[k].add(col + 16)), p[k][1]);
                }
            }
            col += 32;
        }
        let sc = _mm512_set1_ps(row_scale(m, o, g));
        for k in 0..T {
            let part =
                _mm512_add_ps(_mm512_add_ps(p[k][0], p[k][1]), _mm512_add_ps(p[k][2], p[k][3]));
            acc[k] = _mm512_fmadd_ps(part, sc, acc[k]);
        }
    }
    let mut out = [0f32; T];
    for k in 0..T {
        out[k] = _mm512_reduce_add_ps(acc[k]);
    }
    out
}

/// The 64 weights of the 32 nibble bytes at `p`, in column order, through the 16-entry
/// f32 `table` (`vpermps`): four vectors of 16.
///
/// # Safety
/// Features available; `p` valid for reads of 32 bytes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn nib64_f32(p: *const u8, table: __m512) -> [__m512; 4] {
    let (v0, v1) =
        // SAFETY: 32 bytes at p (the caller's contract).
        unsafe { (_mm_loadu_si128(p.cast()), _mm_loadu_si128(p.add(16).cast())) };
    let (a, b) = nib32(v0);
    let (c, d) = nib32(v1);
    [
        lut16(_mm512_cvtepu8_epi32(a), table),
        lut16(_mm512_cvtepu8_epi32(b), table),
        lut16(_mm512_cvtepu8_epi32(c), table),
        lut16(_mm512_cvtepu8_epi32(d), table),
    ]
}

/// [`nib64_f32`] in the de-interleaved order of [`nib_row_f32_de`]: per 32 columns the
/// 16 even (low nibbles) then the 16 odd (high nibbles), no unpacking.
///
/// # Safety
/// Features available; `p` valid for reads of 32 bytes.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn nib64_f32_de(p: *const u8, table: __m512) -> [__m512; 4] {
    // SAFETY: 32 bytes at p (the caller's contract).
    let (z0, z1) = unsafe {
        (
            _mm512_cvtepu8_epi32(_mm_loadu_si128(p.cast())),
            _mm512_cvtepu8_epi32(_mm_loadu_si128(p.add(16).cast())),
        )
    };
    [
        lut16(z0, table),
        lut16(_mm512_srli_epi32::<4>(z0), table),
        lut16(z1, table),
        lut16(_mm512_srli_epi32::<4>(z1), table),
    ]
}

/// The f32-path scale of group `g` of row `o`, as `scalar::group_scale`, read
/// directly (the call costs a third of the time of a 32-column group).
#[inline]
pub(super) fn row_scale(m: &Matrix<'_>, o: usize, g: usize) -> f32 {
    let at = o * m.groups_per_row() + g;
    match m.scales() {
        // 2^(e−127) as f32 bits (e = 0: +0.0; 255 is refused by Matrix::new).
        Scales::Ue8m0(e) => f32::from_bits(u32::from(e[at]) << 23),
        Scales::F32(sv) => sv[at],
        Scales::None => 1.0,
    }
}

/// The f32-path scales of groups `g .. g + 16` of row `o` (as [`row_scale`]; those
/// past the row's last group are 0 or left as they were) into `buf`: UE8M0 bytes widened and
/// shifted 16 at a time. The 2-group loops read their scales from `buf`, so that each
/// becomes the broadcast memory operand of its FMA: a scale broadcast from a register
/// takes a slot on the shuffle port, which the weight decode (`vpmovzxbd`,
/// `vpermps`) already fills (mxfp4 f32, `avx512-vnni`, Zen 5, 256 × 1024: 29.5 →
/// 36–37 G weights/s).
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn row_scales16(m: &Matrix<'_>, o: usize, g: usize, buf: &mut [f32; 16]) {
    let ng = m.groups_per_row();
    let (at, n) = (o * ng + g, (ng - g).min(16));
    match m.scales() {
        Scales::Ue8m0(e) => {
            let e = &e[at..at + n];
            // SAFETY: the masked load reads the n ≤ 16 bytes of `e` only; the store
            // writes the 16 f32 of `buf` (zeros past n). Not a masked store: loads
            // from a masked store's bytes are not forwarded from it, and the loop's
            // first scale loads follow it closely.
            unsafe {
                let b =
                    _mm512_castsi512_si128(_mm512_maskz_loadu_epi8(mask64(n), e.as_ptr().cast()));
                let v = _mm512_slli_epi32::<23>(_mm512_cvtepu8_epi32(b));
                _mm512_storeu_ps(buf.as_mut_ptr(), _mm512_castsi512_ps(v));
            }
        }
        Scales::F32(sv) => buf[..n].copy_from_slice(&sv[at..at + n]),
        Scales::None => buf[..n].fill(1.0),
    }
}

/// Two whole 32-column groups at `col` (`w`: their 64 decoded weights, in the order
/// of `xs`) into each activation row's two accumulators:
/// `even[k] += (w₀·x₀ + w₁·x₁) · s0`, `odd[k] += (w₂·x₂ + w₃·x₃) · s1`.
///
/// Two accumulators, not one: with both FMAs on one register the loop-carried chain
/// was two FMA latencies per 64 weights, the bound of the one-activation-row loop
/// (mxfp4 f32, `avx512-vnni`, Zen 5, 256 × 1024: 29.3 G weights/s against int4-row's
/// 40.6, whose chains are one FMA long).
///
/// # Safety
/// Features available; every `xs[k]` valid for reads of `col + 64` f32.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn two_groups_f32<const T: usize>(
    even: &mut [__m512; T],
    odd: &mut [__m512; T],
    w: [__m512; 4],
    xs: [*const f32; T],
    col: usize,
    s0: f32,
    s1: f32,
) {
    let (v0, v1) = (_mm512_set1_ps(s0), _mm512_set1_ps(s1));
    for ((a, b), x) in even.iter_mut().zip(odd.iter_mut()).zip(xs) {
        // SAFETY: col + 64 values at x (the caller's contract).
        let xv = |j: usize| unsafe { _mm512_loadu_ps(x.add(col + 16 * j)) };
        let t0 = _mm512_fmadd_ps(w[1], xv(1), _mm512_mul_ps(w[0], xv(0)));
        let t1 = _mm512_fmadd_ps(w[3], xv(3), _mm512_mul_ps(w[2], xv(2)));
        *a = _mm512_fmadd_ps(t0, v0, *a);
        *b = _mm512_fmadd_ps(t1, v1, *b);
    }
}

pub(super) fn pad<const T: usize>(v: [f32; T]) -> [f32; 4] {
    let mut out = [0f32; 4];
    out[..T].copy_from_slice(&v);
    out
}

/// Fused f32-activation kernel for one nibble row (int4-row, int4-grouped with
/// `gs % 32 == 0`, mxfp4 when `MX`) and `T` activation rows: 32 columns per step
/// decoded with one `vpermps` per 16 weights, four accumulators per activation row.
///
/// # Safety
/// Features available; every `xs[k]` points at `I` values.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn nib_row_f32<const T: usize, const MX: bool>(
    m: &Matrix<'_>,
    o: usize,
    xs: [*const f32; T],
) -> [f32; T] {
    let (ni, gl) = (m.i(), m.group_len());
    let stream = streams(m);
    let row = m.row_bytes(o);
    let rp = row.as_ptr();
    let tp = if MX { MX_F32.as_ptr() } else { I4_F32.as_ptr() };
    // SAFETY: both tables hold 16 f32.
    let table = unsafe { _mm512_loadu_ps(tp) };
    let mut acc = [_mm512_setzero_ps(); T];
    let ng = m.groups_per_row();
    // 32-column groups: two whole groups per 64-column step (`nib_row_f32_de`).
    let mut acc2 = [_mm512_setzero_ps(); T];
    let mut sbuf = [0f32; 16];
    let mut g0 = 0;
    if gl == 32 {
        // Pairs of groups, eight pairs per refill of the 16 scales.
        let pairs = ni / 64;
        let mut p0 = 0;
        while p0 < pairs {
            row_scales16(m, o, 2 * p0, &mut sbuf);
            let p1 = (p0 + 8).min(pairs);
            for (j, pair) in (p0..p1).enumerate() {
                let col = 64 * pair;
                if stream && pair % 2 == 0 {
                    prefetch_l2(rp.wrapping_add(col / 2).cast());
                }
                // SAFETY: col + 64 ≤ I, so 32 bytes at col/2 are within the row.
                let w = unsafe { nib64_f32(rp.add(col / 2), table) };
                let (s0, s1) = (sbuf[(2 * j) & 15], sbuf[(2 * j + 1) & 15]);
                // SAFETY: col + 64 ≤ I values of every xs[k].
                unsafe { two_groups_f32(&mut acc, &mut acc2, w, xs, col, s0, s1) };
            }
            p0 = p1;
        }
        g0 = 2 * pairs;
        for k in 0..T {
            acc[k] = _mm512_add_ps(acc[k], acc2[k]);
        }
    }
    for g in g0..ng {
        let (c0, c1) = (g * gl, ((g + 1) * gl).min(ni));
        let mut p = [[_mm512_setzero_ps(); 4]; T];
        let mut col = c0;
        while col + 64 <= c1 {
            if stream && col % 128 == 0 {
                prefetch_l2(rp.wrapping_add(col / 2).cast());
            }
            // SAFETY: col + 64 ≤ I, so 32 bytes at col/2 are within the row.
            let w = unsafe { nib64_f32(rp.add(col / 2), table) };
            for k in 0..T {
                for j in 0..4 {
                    // SAFETY: col + 64 ≤ I values of xs[k].
                    let xv = unsafe { _mm512_loadu_ps(xs[k].add(col + 16 * j)) };
                    p[k][j] = _mm512_fmadd_ps(w[j], xv, p[k][j]);
                }
            }
            col += 64;
        }
        if col + 32 <= c1 {
            // SAFETY: col + 32 ≤ I, so 16 bytes at col/2 are within the row.
            let (a, b) = nib32(unsafe { _mm_loadu_si128(rp.add(col / 2).cast()) });
            let w0 = lut16(_mm512_cvtepu8_epi32(a), table);
            let w1 = lut16(_mm512_cvtepu8_epi32(b), table);
            for k in 0..T {
                // SAFETY: col + 32 ≤ I values of xs[k].
                unsafe {
                    p[k][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xs[k].add(col)), p[k][0]);
                    p[k][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xs[k].add(col + 16)), p[k][1]);
                }
            }
            col += 32;
        }
        while col < c1 {
            // 1..=63 columns left (col even: c0 is a multiple of 32 or 0).
            let rem = c1 - col;
            let nb = rem.div_ceil(2);
            // SAFETY: the masked load reads only the ceil(rem/2) bytes holding columns
            // col..c1, all within the row.
            let v = unsafe { _mm512_maskz_loadu_epi8(mask64(nb.min(32)), rp.add(col / 2).cast()) };
            let (a, b) = nib32(_mm512_castsi512_si128(v));
            let (c, d) = nib32(_mm512_extracti32x4_epi32::<1>(v));
            let w = [
                lut16(_mm512_cvtepu8_epi32(a), table),
                lut16(_mm512_cvtepu8_epi32(b), table),
                lut16(_mm512_cvtepu8_epi32(c), table),
                lut16(_mm512_cvtepu8_epi32(d), table),
            ];
            for k in 0..T {
                for j in 0..4 {
                    let mk = mask16(rem.saturating_sub(16 * j));
                    // SAFETY: masked load of the columns below c1 only (the padding
                    // nibble of an odd I is multiplied by a zero lane).
                    let xv = unsafe { _mm512_maskz_loadu_ps(mk, xs[k].add(col + 16 * j)) };
                    p[k][j] = _mm512_fmadd_ps(w[j], xv, p[k][j]);
                }
            }
            col += 64;
        }
        let sc = _mm512_set1_ps(row_scale(m, o, g));
        for k in 0..T {
            let part =
                _mm512_add_ps(_mm512_add_ps(p[k][0], p[k][1]), _mm512_add_ps(p[k][2], p[k][3]));
            acc[k] = _mm512_fmadd_ps(part, sc, acc[k]);
        }
    }
    let mut out = [0f32; T];
    for k in 0..T {
        out[k] = _mm512_reduce_add_ps(acc[k]);
    }
    out
}
