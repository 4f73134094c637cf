//! The dot steps over a run of columns (the f32 FMA dot; the exact int8 dot, generic over the
//! arm's [`Dot`] step), the L2 prefetch of the streaming loops, the 64-byte-aligned activation
//! copy and the even/odd activation split shared by the int8-path kernels.

use core::arch::x86_64::*;

use super::{Dot, mask16, mask64};

/// Activation bytes [`AlignedActs`] holds.
pub(in crate::arch::x86_64) const XA: usize = 32 << 10;

/// A 64-byte-aligned stack buffer for activation rows.
#[repr(C, align(64))]
pub(super) struct AlignedActs(pub(super) core::mem::MaybeUninit<[i8; XA]>);

/// Makes the activation rows `xp[..n]` (`ni` codes each) 64-byte aligned for the
/// int4-row loop, which loads 64 codes per 32 weight bytes: a load that splits two
/// cache lines costs a second L1 access, 5–9 % of L2-resident throughput (int4-row q8,
/// 512 × 1024, best of 3000 calls: 72.6 G w/s with the codes at 0 or 32 mod 64, 66.2
/// at 16, 68.3 at 48; with this copy 70.5–73.0 at every offset). int8-row, whose
/// weights are twice the bytes, gained nothing from it (55.8–60.1 either way). Rows not
/// aligned are copied into `buf` (each at a multiple of 64, zero-padded to one) and
/// their pointers replaced, when all `n` fit; otherwise nothing changes (correct, just
/// slower). The copy is `n · ni` bytes per call, against `O · ni / 2` weight bytes.
///
/// # Safety
/// Each `xp[k]`, `k < n`, is valid for reads of `ni` bytes; afterwards each is valid
/// for `ni` bytes while `buf` lives.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline]
pub(super) unsafe fn align_acts(xp: &mut [*const i8], n: usize, ni: usize, buf: &mut AlignedActs) {
    let stride = ni.div_ceil(64) * 64;
    if xp[..n].iter().all(|p| p.addr() % 64 == 0) || n * stride > XA {
        return;
    }
    let base = buf.0.as_mut_ptr().cast::<i8>();
    for (k, p) in xp[..n].iter_mut().enumerate() {
        // SAFETY: k · stride + stride ≤ n · stride ≤ XA bytes of `buf`; `*p` is valid
        // for ni bytes (the caller's contract) and `buf` is a separate allocation; the
        // padding up to `stride` is zeroed, so every byte a loop may load (masked or
        // not) is initialised.
        unsafe {
            let dst = base.add(k * stride);
            core::ptr::copy_nonoverlapping(*p, dst, ni);
            core::ptr::write_bytes(dst.add(ni), 0, stride - ni);
            *p = dst;
        }
    }
}

/// Prefetch distances (bytes ahead of the loads) of the weight-streaming loops.
pub(super) const PREFETCH: [usize; 3] = [4 << 10, 32 << 10, 128 << 10];

/// Hints the lines [`PREFETCH`] bytes past `p` into L2, for loops that stream weights
/// from DRAM at one 64-byte line per call. One core's hardware prefetchers alone keep
/// too few line fills in flight to reach the read bandwidth; more requests in flight,
/// at several distances, close most of the gap. Measured by the `kernels` bench (int8-row q8
/// from DRAM, 128 MiB, three processes, same-process `stream-read` beside it): none
/// 0.69–0.70 of read; into L2 at 1 or 4 KiB alone 0.71/0.75, at 16–128 KiB alone
/// 0.80–0.82, at 32 + 64 + 128 KiB 0.84–0.92, at 4 + 32 + 128 KiB 0.80–0.94; into L1
/// (`T0`) or non-temporal, slower than none. A 64-byte-aligned head (no split weight loads)
/// changed nothing measurable.
#[inline(always)]
pub(super) fn prefetch_l2(p: *const i8) {
    for d in PREFETCH {
        // SAFETY: a prefetch is a hint: it never faults and reads nothing the program
        // sees, whatever the address (formed with wrapping arithmetic); SSE (in every
        // x86-64 target) is all it needs.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(d)) };
    }
}

/// Exact `Σ w·x` of 64 signed codes `w` (`|w| ≤ 128`) and 64 activations
/// (`[−127, 127]`) added to `acc`: magnitudes times sign-moved activations.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn dot64_signed<D: Dot>(acc: __m512i, w: __m512i, x: __m512i) -> __m512i {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let neg = _mm512_movepi8_mask(w);
        let xs = _mm512_mask_sub_epi8(x, neg, _mm512_setzero_si512(), x);
        D::dpbusd(acc, _mm512_abs_epi8(w), xs)
    }
}

/// Exact `Σ w[k] · x[k]` for `k < n` (`x` in `[−127, 127]`, `w` any i8).
///
/// The weights are the stream (from DRAM for a large matrix): each 64-byte line is
/// prefetched into L2 ahead of its load ([`prefetch_l2`]).
///
/// # Safety
/// `w` and `x` valid for reads of `n` bytes; the arm's features available.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "intrinsics of an inlined body")]
#[inline(always)]
pub(super) unsafe fn dot_i8<D: Dot, const STREAM: bool>(
    w: *const i8,
    x: *const i8,
    n: usize,
) -> i32 {
    // SAFETY: the caller runs with `D`'s CPU features (a `Dot` entry point, into which
    // this body is always inlined), so every intrinsic call is sound; every pointer
    // access is in bounds as noted at it.
    unsafe {
        let (mut a0, mut a1) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let mut k = 0;
        while k + 128 <= n {
            if STREAM {
                prefetch_l2(w.wrapping_add(k));
                prefetch_l2(w.wrapping_add(k + 64));
            }
            // k + 128 ≤ n.
            {
                let w0 = _mm512_loadu_si512(w.add(k).cast());
                let x0 = _mm512_loadu_si512(x.add(k).cast());
                let w1 = _mm512_loadu_si512(w.add(k + 64).cast());
                let x1 = _mm512_loadu_si512(x.add(k + 64).cast());
                a0 = dot64_signed::<D>(a0, w0, x0);
                a1 = dot64_signed::<D>(a1, w1, x1);
            }
            k += 128;
        }
        while k < n {
            let mk = mask64(n - k);
            // the masked loads read only the first min(64, n − k) bytes, all valid;
            // masked-off lanes are zero and never touched.
            {
                let w0 = _mm512_maskz_loadu_epi8(mk, w.add(k));
                let x0 = _mm512_maskz_loadu_epi8(mk, x.add(k));
                a0 = dot64_signed::<D>(a0, w0, x0);
            }
            k += 64;
        }
        _mm512_reduce_add_epi32(_mm512_add_epi32(a0, a1))
    }
}

/// `Σ w[k] · x[k]` for `k < n` as 16 f32 lanes.
///
/// # Safety
/// `w` and `x` valid for reads of `n` f32 (unaligned is fine); features available.
#[expect(clippy::multiple_unsafe_ops_per_block, reason = "one bounds argument")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn dot_f32(w: *const f32, x: *const f32, n: usize) -> __m512 {
    let mut a = [_mm512_setzero_ps(); 4];
    let mut k = 0;
    while k + 64 <= n {
        for (j, aj) in a.iter_mut().enumerate() {
            // SAFETY: k + 16·j + 16 ≤ k + 64 ≤ n.
            unsafe {
                let o = k + 16 * j;
                *aj = _mm512_fmadd_ps(_mm512_loadu_ps(w.add(o)), _mm512_loadu_ps(x.add(o)), *aj);
            }
        }
        k += 64;
    }
    while k < n {
        let mk = mask16(n - k);
        // SAFETY: masked loads of the first min(16, n − k) values, all valid.
        unsafe {
            let wv = _mm512_maskz_loadu_ps(mk, w.add(k));
            let xv = _mm512_maskz_loadu_ps(mk, x.add(k));
            a[1] = _mm512_fmadd_ps(wv, xv, a[1]);
        }
        k += 16;
    }
    _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]))
}

/// The scalar reference's epilogue for a one-group row: `((0 + d·sc) · sx)`.
#[inline]
pub(super) fn epilogue_row(d: i32, sc: f32, sx: f32, ni: usize) -> f32 {
    let mut acc = 0.0f32;
    if ni > 0 {
        #[allow(clippy::cast_precision_loss)] // the spec's rounding
        let df = d as f32;
        acc += df * sc;
    }
    acc * sx
}

/// Splits 128 activation codes (`x0` = columns 0..64, `x1` = 64..128 of a block) into
/// the 64 even and the 64 odd columns, in order: the layout of the low and high
/// nibbles of the block's 64 weight bytes. `vpshufb` gathers the 8 even then the 8 odd
/// bytes of each 16-byte lane, two `vpermd` (the second merged under a mask) put the
/// qwords in column order.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn split_even_odd(x0: __m512i, x1: __m512i) -> (__m512i, __m512i) {
    #[rustfmt::skip]
                    let pat = _mm512_broadcast_i32x4(_mm_setr_epi8(
                0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
    ));
    let (a, b) = (_mm512_shuffle_epi8(x0, pat), _mm512_shuffle_epi8(x1, pat));
    // dwords of a: [E0 O0 E1 O1 E2 O2 E3 O3] in qword pairs; even = E0..E3 of a, then of b.
    let ie = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 0, 1, 4, 5, 8, 9, 12, 13);
    let io = _mm512_setr_epi32(2, 3, 6, 7, 10, 11, 14, 15, 2, 3, 6, 7, 10, 11, 14, 15);
    let xe = _mm512_mask_permutexvar_epi32(_mm512_permutexvar_epi32(ie, a), 0xFF00, ie, b);
    let xo = _mm512_mask_permutexvar_epi32(_mm512_permutexvar_epi32(io, a), 0xFF00, io, b);
    (xe, xo)
}
