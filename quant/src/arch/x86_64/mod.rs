//! x86-64 arms: AVX2 + FMA and AVX2 + FMA + AVX-VNNI (256-bit, `Avx2<avx2::Plain>` and
//! `Avx2<avx2::Vnni>`), AVX-512 F + BW and AVX-512 F + BW + VNNI (512-bit, `Avx512<avx512::Plain>`
//! and `Avx512<avx512::Vnni>`), each an [`Arm`] run by [`matmul_f32_rows`] and [`matmul_q8_rows`].
//! Each folder holds one set of kernels for its width, the two arms differing only in the exact
//! int8 dot step (its `Dot` trait).
//!
//! All arms share one structure: each output row is processed in chunks of 256 columns; a
//! chunk is decoded once (SIMD unpacking) into a small L1-resident buffer of unscaled values
//! (f32 path) or integer codes (int8-activation path), and that buffer is then reused by every
//! activation row of the batch (weights are decoded once per row and batch tile, not once per
//! activation row). Scale groups are walked in the order of the scalar reference.
pub(crate) mod avx2;
pub(crate) mod avx512;
pub(crate) mod bands;
pub(crate) mod dispatch;

use core::arch::x86_64::{
    __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadl_epi64, _mm_loadu_si128, _mm_or_si128,
    _mm_set1_epi8, _mm_setr_epi8, _mm_srli_epi16, _mm_storeu_si128, _mm_sub_epi8,
    _mm_unpackhi_epi8, _mm_unpackhi_epi16, _mm_unpackhi_epi32, _mm_unpacklo_epi8,
    _mm_unpacklo_epi16, _mm_unpacklo_epi32,
};
use core::arch::x86_64::{
    __m256i, __m512i, _MM_HINT_T1, _mm_prefetch, _mm256_add_epi32, _mm256_add_ps,
    _mm256_cvtepi32_ps, _mm256_hadd_epi32, _mm256_loadu_ps, _mm256_mul_ps,
    _mm256_permute2x128_si256, _mm256_set1_ps, _mm256_setzero_ps, _mm256_setzero_si256,
    _mm256_storeu_ps, _mm512_castsi512_si256, _mm512_extracti64x4_epi64, _mm512_setzero_si512,
};
use core::ops::Range;

use crate::format::Format;
use crate::isa::Isa;
use crate::kernels::{Matrix, QuantizedActs, Scales};

/// An x86-64 arm as the kernel entry points see it: its [`Isa`] and its two paths' bodies. The
/// 256-bit arms implement it as [`Avx2<D>`], the 512-bit ones as [`Avx512<D>`] (`D` the arm's
/// dot step, each width's `Dot`).
pub(crate) trait Arm {
    /// The arm.
    const ISA: Isa;

    /// The f32-activation body over `rows`.
    ///
    /// # Safety
    /// The CPU has [`Arm::ISA`]'s features; shapes as asserted by [`matmul_f32_rows`].
    unsafe fn f32_rows(m: &Matrix<'_>, x: &[f32], s: usize, rows: Range<usize>, y: &mut [f32]);

    /// The int8-activation body over `rows`.
    ///
    /// # Safety
    /// The CPU has [`Arm::ISA`]'s features; shapes as asserted by [`matmul_q8_rows`].
    unsafe fn q8_rows(m: &Matrix<'_>, xq: &QuantizedActs<'_>, rows: Range<usize>, y: &mut [f32]);
}

/// The 256-bit arm with dot step `D` (`avx2::Plain`: `Isa::Avx2`, `avx2::Vnni`: `Isa::AvxVnni`).
pub(crate) struct Avx2<D>(core::marker::PhantomData<D>);

/// The 512-bit arm with dot step `D` (`avx512::Plain`: `Isa::Avx512`, `avx512::Vnni`:
/// `Isa::Avx512Vnni`).
pub(crate) struct Avx512<D>(core::marker::PhantomData<D>);

/// f32-activation kernel over `rows` (layout of `crate::scalar::matmul_f32_rows`) on arm `A`:
/// `false`, without running, if the CPU lacks its features.
pub(crate) fn matmul_f32_rows<A: Arm>(
    m: &Matrix<'_>,
    x: &[f32],
    s: usize,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    if !A::ISA.cpu_supports() {
        return false;
    }
    assert!(x.len() >= s * m.i() && y.len() >= s * rows.len() && rows.end <= m.o());
    // SAFETY: the arm's features were detected above; the shapes were asserted (every access
    // stays within `x`, `y`, the weight rows and the kernels' local buffers).
    unsafe { A::f32_rows(m, x, s, rows, y) };
    true
}

/// int8-activation kernel over `rows` (layout of `crate::scalar::matmul_q8_rows`) on arm `A`:
/// `false`, without running, if the CPU lacks its features.
pub(crate) fn matmul_q8_rows<A: Arm>(
    m: &Matrix<'_>,
    xq: &QuantizedActs<'_>,
    rows: Range<usize>,
    y: &mut [f32],
) -> bool {
    if !A::ISA.cpu_supports() {
        return false;
    }
    assert!(xq.i() == m.i() && y.len() >= xq.s() * rows.len() && rows.end <= m.o() && m.has_q8());
    // SAFETY: the arm's features were detected above; the shapes were asserted.
    unsafe { A::q8_rows(m, xq, rows, y) };
    true
}

/// Whether this CPU's FMA takes a subnormal multiplicand at full speed when the product is
/// normal: AMD's cores do (vendor `AuthenticAMD`, and Hygon's Zen-derived `HygonGenuine`;
/// measured on Zen 2), Intel's take a microcode assist per instruction with a subnormal operand (an
/// Intel Xeon ran the AVX2 fp8 kernel's f32-bits decode, in which the
/// exponent-0 codes of random weights — 5 % of them — are subnormal, at 0.42 G weights/s
/// against 13.8 on Zen 2). Unknown vendors count as slow; so does Miri (no `cpuid`).
pub(crate) fn subnormal_operands_full_speed() -> bool {
    if cfg!(miri) {
        return false;
    }
    let id = core::arch::x86_64::__cpuid(0);
    let mut vendor = [0u8; 12];
    vendor[..4].copy_from_slice(&id.ebx.to_le_bytes());
    vendor[4..8].copy_from_slice(&id.edx.to_le_bytes());
    vendor[8..].copy_from_slice(&id.ecx.to_le_bytes());
    matches!(&vendor, b"AuthenticAMD" | b"HygonGenuine")
}

/// Exact lane sums of 8 vectors: lane `r` of the result is `Σ lanes of a[r]` (i32;
/// exact while every sum fits, which the callers' bounds guarantee). Two levels of
/// `vphaddd` and one fold of the 128-bit halves.
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn sums8(a: [__m256i; 8]) -> __m256i {
    let h01 = _mm256_hadd_epi32(a[0], a[1]);
    let h23 = _mm256_hadd_epi32(a[2], a[3]);
    let h45 = _mm256_hadd_epi32(a[4], a[5]);
    let h67 = _mm256_hadd_epi32(a[6], a[7]);
    let lo = _mm256_hadd_epi32(h01, h23); // rows 0..4: low-half sums | high-half sums
    let hi = _mm256_hadd_epi32(h45, h67); // rows 4..8
    _mm256_add_epi32(
        _mm256_permute2x128_si256::<0x20>(lo, hi),
        _mm256_permute2x128_si256::<0x31>(lo, hi),
    )
}

/// An i32 accumulator vector of one width, as [`band8_sums`] uses it.
pub(crate) trait BandAcc: Copy {
    /// All lanes zero.
    ///
    /// # Safety
    /// The CPU has the width's features (AVX2; AVX-512 F and BW).
    unsafe fn zero() -> Self;

    /// Exact lane sums of 8 vectors: lane `r` of the result is `Σ lanes of a[r]` (exact while
    /// every sum fits, which the callers' bounds guarantee).
    ///
    /// # Safety
    /// As [`BandAcc::zero`].
    unsafe fn sums8(a: [Self; 8]) -> __m256i;
}

impl BandAcc for __m256i {
    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: the caller has AVX2.
        unsafe { _mm256_setzero_si256() }
    }

    #[inline(always)]
    unsafe fn sums8(a: [Self; 8]) -> __m256i {
        // SAFETY: the caller has AVX2.
        unsafe { sums8(a) }
    }
}

impl BandAcc for __m512i {
    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: the caller has AVX-512 F.
        unsafe { _mm512_setzero_si512() }
    }

    #[inline(always)]
    unsafe fn sums8(a: [Self; 8]) -> __m256i {
        // SAFETY: the caller has AVX-512 F and BW.
        unsafe { sums8_512(a) }
    }
}

/// [`sums8`] of 512-bit vectors: each vector's 256-bit halves added, then [`sums8`].
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn sums8_512(a: [__m512i; 8]) -> __m256i {
    sums8(core::array::from_fn(|r| {
        _mm256_add_epi32(_mm512_castsi512_si256(a[r]), _mm512_extracti64x4_epi64::<1>(a[r]))
    }))
}

/// One block of [`band8_sums`]: adds `W` bytes of each of 8 rows (at `w[r]`) against `X`
/// activation codes (at `x`) into the rows' accumulators. A trait with an always-inlined method
/// rather than a closure: a closure in a body without target features is compiled without them,
/// and where LLVM keeps it out of line every intrinsic in it becomes a call.
pub(crate) trait BandStep<A> {
    /// Weight bytes of a row per block.
    const W: usize;
    /// Activation codes per block.
    const X: usize;

    /// Adds one block into `acc`.
    ///
    /// # Safety
    /// The CPU has the features of `A`'s width and of the implementation's arm; `x` and every
    /// `w[r]` are readable for the block's `X` and `W` bytes.
    unsafe fn step(&self, acc: &mut [A; 8], w: [*const u8; 8], x: *const i8);
}

/// The 8 exact sums of a band of 8 weight rows against one activation row, as one vector (lane `r`
/// = row `r`), for both widths (accumulators `A`: `__m256i` or `__m512i`): `step.step(acc, w, x)` adds
/// one block (`W` bytes of each row at `w[r]`, `X` activation codes at `x`) into the 8
/// accumulators, one per row, for each of the `blocks` full blocks and then the partial last block
/// `tail` (zero-padded copies), if any; [`BandAcc::sums8`] at the end (one reduction per 8 rows).
/// The int4-row and int8-row GEMV kernels of every x86 arm run on it.
///
/// `STREAM` (a matrix streamed from DRAM, [`streams`]): each block step also prefetches into L2 the
/// next `8 · W` bytes from `ahead`, the start of a later band (8 rows, contiguous in the matrix:
/// the next band, or for short rows the first one at least 16 KiB ahead,
/// `crate::arch::x86_64::band_ahead`), so a band is in flight while this one is summed. The
/// hardware prefetchers alone, following 8 row streams, kept too few lines in flight: AVX2, Zen 4,
/// the `kernels` bench, 9362 × 14 336, fraction of a plain read of the same bytes in the same
/// process: int4-row 0.68–0.71 → 0.87–0.96, int8-row 0.77–0.78 → 0.89–0.96 (two bands ahead: about
/// the same; one and three bands ahead together: 0.83).
///
/// # Safety
/// The features of `A`'s width available; every `rows[r]` holds at least `W · blocks` bytes, `x` at least `X
/// · blocks` codes, the tail's pointers `W` and `X`; `step` reads only the `W` and `X` bytes at its
/// pointers.
#[inline(always)]
pub(crate) unsafe fn band8_sums<A: BandAcc, S: BandStep<A>, const STREAM: bool>(
    rows: [*const u8; 8],
    x: *const i8,
    blocks: usize,
    tail: Option<([*const u8; 8], *const i8)>,
    ahead: *const u8,
    step: S,
) -> __m256i {
    let (w, xn) = (S::W, S::X);
    // SAFETY: the caller has the features of `A`'s width (it runs in an arm's entry point,
    // into which this body is always inlined).
    let mut acc = [unsafe { A::zero() }; 8];
    for b in 0..blocks {
        if STREAM {
            for l in 0..8 * w / 64 {
                // SAFETY: SSE is part of x86-64; a prefetch is a hint that never faults and
                // reads nothing the program sees, whatever the (wrapping) address.
                unsafe {
                    _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(8 * w * b + 64 * l).cast())
                };
            }
        }
        // b < blocks: X codes at X·b, W bytes at W·b of every row.
        let wb = core::array::from_fn(|r| rows[r].wrapping_add(w * b));
        // SAFETY: the caller has the width's features; b < blocks, so the X codes at X·b and
        // the W bytes at W·b of every row are readable (this function's contract).
        unsafe { step.step(&mut acc, wb, x.wrapping_add(xn * b)) };
    }
    if let Some((w, x)) = tail {
        // SAFETY: the caller has the width's features; the tail's pointers address W and X
        // readable bytes (this function's contract).
        unsafe { step.step(&mut acc, w, x) };
    }
    // SAFETY: as for `A::zero` above.
    unsafe { A::sums8(acc) }
}

/// The reference's epilogue of a one-group row format (`((0 + (d as f32) · s) · sx)`)
/// for the 8 rows `o` of a band as lane-wise vector operations (lane `r`: row `o[r]`'s
/// exact `d`; each lane performs exactly its row's f32 operations, so bit-identical),
/// stored to `y` (its first `y.len() ≤ 8` lanes). Only for `I > 0` (the reference skips
/// the product when a row has no columns).
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn row_epilogue8(d: __m256i, sf: &[f32], o: &[usize; 8], sx: f32, y: &mut [f32]) {
    let sc: [f32; 8] = core::array::from_fn(|r| sf[o[r]]);
    // SAFETY: sc holds 8 f32.
    let p = _mm256_mul_ps(_mm256_cvtepi32_ps(d), unsafe { _mm256_loadu_ps(sc.as_ptr()) });
    let v = _mm256_mul_ps(_mm256_add_ps(_mm256_setzero_ps(), p), _mm256_set1_ps(sx));
    let mut out = [0f32; 8];
    // SAFETY: out holds 8 f32.
    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
    y.copy_from_slice(&out[..y.len()]);
}

/// 16 bytes of 2-bit fields (field `k` of byte `j` = column `4j + k`) → the 64 fields in
/// column order, as four 16-byte vectors: the four planes `(v ≫ 2k) & 3`, interleaved back
/// byte-wise (`k = 0, 1` and `2, 3`), then 16-bit-wise.
#[inline]
#[target_feature(enable = "sse2")]
fn crumbs64(v: __m128i) -> [__m128i; 4] {
    let three = _mm_set1_epi8(3);
    let p0 = _mm_and_si128(v, three);
    let p1 = _mm_and_si128(_mm_srli_epi16::<2>(v), three);
    let p2 = _mm_and_si128(_mm_srli_epi16::<4>(v), three);
    let p3 = _mm_and_si128(_mm_srli_epi16::<6>(v), three);
    let (a, b) = (_mm_unpacklo_epi8(p0, p1), _mm_unpacklo_epi8(p2, p3)); // columns 0..32
    let (c, d) = (_mm_unpackhi_epi8(p0, p1), _mm_unpackhi_epi8(p2, p3)); // columns 32..64
    [
        _mm_unpacklo_epi16(a, b),
        _mm_unpackhi_epi16(a, b),
        _mm_unpacklo_epi16(c, d),
        _mm_unpackhi_epi16(c, d),
    ]
}

/// 8 bytes of bits (bit `i` of byte `j` = column `8j + i`, in the low half of `v`) → 64
/// bytes in column order, `4` where the bit is set and `0` where not: each byte repeated
/// eight times by three rounds of unpacking, tested against its bit.
#[inline]
#[target_feature(enable = "sse2")]
fn bits64_times4(v: __m128i) -> [__m128i; 4] {
    let bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    let four = _mm_set1_epi8(4);
    let x1 = _mm_unpacklo_epi8(v, v); // b0 b0 b1 b1 … b7 b7
    let (lo, hi) = (_mm_unpacklo_epi16(x1, x1), _mm_unpackhi_epi16(x1, x1)); // b0..3, b4..7 ×4
    let spread = |b: __m128i| {
        // Where the bit is set, `b & bit == bit`: all-ones, then 4.
        _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(b, bit), bit), four)
    };
    [
        spread(_mm_unpacklo_epi32(lo, lo)),
        spread(_mm_unpackhi_epi32(lo, lo)),
        spread(_mm_unpacklo_epi32(hi, hi)),
        spread(_mm_unpackhi_epi32(hi, hi)),
    ]
}

/// The 64 integer codes (stored value minus offset) of one 64-column unit of an int2-row row
/// (16 bytes) or an int3-g64 row (one 24-byte group), in column order as four 16-byte vectors.
///
/// # Panics
/// If `unit` is shorter than 16 bytes (24 for int3).
#[inline]
#[target_feature(enable = "sse2")]
pub(crate) fn small_codes64(unit: &[u8], int3: bool) -> [__m128i; 4] {
    assert!(unit.len() >= if int3 { 24 } else { 16 });
    // SAFETY: `unit` holds at least 16 bytes (asserted).
    let low = unsafe { _mm_loadu_si128(unit.as_ptr().cast()) };
    let mut codes = crumbs64(low);
    if int3 {
        // SAFETY: bytes 16..24 of the unit (asserted).
        let high = unsafe { _mm_loadl_epi64(unit[16..].as_ptr().cast()) };
        for (c, h) in codes.iter_mut().zip(bits64_times4(high)) {
            *c = _mm_or_si128(*c, h);
        }
    }
    let off = _mm_set1_epi8(if int3 { 4 } else { 2 });
    codes.map(|c| _mm_sub_epi8(c, off))
}

/// [`crate::arch::decode_small_ints`] with SSE2 (every x86-64 CPU): columns `c0 .. c0 +
/// out.len()` of `row` of an int2-row or int3-g64 matrix as integer codes, 64 columns
/// ([`small_codes64`]) per step; a last partial 64 columns through the portable decoder.
/// `c0` is a multiple of 64. The generic (decode-then-dot) paths of the x86 arms use it.
#[target_feature(enable = "sse2")]
pub(crate) fn decode_small_ints(m: &Matrix<'_>, row: &[u8], c0: usize, out: &mut [i8]) {
    debug_assert_eq!(c0 % 64, 0);
    let (int2, int3) = (m.format() == Format::Int2Row, m.format() == Format::Int3G64);
    let full = if int2 || int3 { out.len() / 64 } else { 0 };
    let unit = if int3 { 24 } else { 16 };
    for (b, dst) in out.chunks_exact_mut(64).take(full).enumerate() {
        let codes = small_codes64(&row[unit * (c0 / 64 + b)..], int3);
        for (k, c) in codes.into_iter().enumerate() {
            // SAFETY: `dst` is 64 bytes; 16 bytes at 16k, k < 4.
            unsafe { _mm_storeu_si128(dst[16 * k..].as_mut_ptr().cast(), c) };
        }
    }
    crate::arch::decode_small_ints(m, row, c0 + 64 * full, &mut out[64 * full..]);
}

/// The exact `Σx` of each 64-column group of activation row `q` into `gsum` (the int3-g64
/// kernels' offset correction `4·Σx` per group).
#[inline]
pub(crate) fn group_sums64(q: &[i8], gsum: &mut [i32]) {
    for (g, c) in q.chunks(64).enumerate() {
        gsum[g] = c.iter().map(|&v| i32::from(v)).sum();
    }
}

/// The reference's int3-g64 int8-path epilogue of `n ≤ N` consecutive groups, in order: for
/// each group's exact `Σ u·x` in `d` (unsigned codes `u = code + 4`), `acc = acc + ((d −
/// 4·Σx) as f32) · s`, with that group's `Σx` from `gsum` and scale from `scales`. Always
/// inlined, `N` known: it runs once per step of the kernels' inner loops.
#[inline(always)]
pub(crate) fn int3_epilogue<const N: usize>(
    acc: &mut f32,
    d: [i32; N],
    n: usize,
    gsum: &[i32],
    scales: &[f32],
) {
    for k in 0..N {
        if k < n {
            #[allow(clippy::cast_precision_loss)] // the spec's rounding
            let df = (d[k] - 4 * gsum[k]) as f32;
            *acc += df * scales[k];
        }
    }
}

/// Whether a kernel call over `m` streams its weights from beyond the caches (more
/// than [`STREAM_BYTES`]), so its loops prefetch (`avx512::reduce::prefetch_l2`, [`BandPrefetch`]).
/// The whole matrix counts, not `rows`: threads splitting the rows share the caches.
pub(crate) fn streams(m: &Matrix<'_>) -> bool {
    m.weights().len() > STREAM_BYTES
}

/// Weight bytes above which the int8-row / int4-row q8 loops prefetch. Below it the
/// prefetches only cost issue slots: on Zen 4 (32 MiB L3, the `kernels` bench), int8-row q8 in GB/s
/// without / with them: 1 MiB 72 / 45, 8 MiB 72 / 44, 16 MiB 54 / 42, 32 MiB 22 / 27,
/// 128 MiB 19 / 24 (read 26).
const STREAM_BYTES: usize = 24 << 20;

/// Where an 8-row band kernel streaming from DRAM ([`band8_sums`] and the 256-bit f32 int8-row
/// twin) prefetches while it sums the band whose
/// first row starts at `first` (rows of `row_bytes`, contiguous): the first later band at least
/// [`BAND_AHEAD_BYTES`] ahead — the next one for rows of 2 KiB and more.
pub(crate) fn band_ahead(first: *const u8, row_bytes: usize) -> *const u8 {
    let band = 8 * row_bytes;
    let bands = BAND_AHEAD_BYTES.div_ceil(band.max(1)).max(1);
    first.wrapping_add(bands * band)
}

/// See [`band_ahead`]. One band ahead was too close for short rows: int4-row q8 (`avx2`,
/// 128 MiB, `I = 1024`, 4 KiB bands) ran at 24.6–25.1 G weights/s one band ahead and 28.1–31.4
/// at 8, 16, 32 or 64 KiB ahead (a second distance on top: within 2 %), against a read of the
/// same bytes at 39.7–40.4; int8-row `I = 1024` 13.6 → 13.8–14.2; `I` ≥ 4096 unchanged
/// (Zen 4, the `kernels` bench, every distance alternated in one process, medians of 12).
const BAND_AHEAD_BYTES: usize = 16 << 10;

/// What the band kernels (`avx512::grouped::band_body`, `avx2::grouped::q8_band8`: `N` rows per
/// band, one row per lane) prefetch while streaming from DRAM: the rows and scales of the **next**
/// band — after a chunk's last band, the first band of the next chunk — one band ahead, into L2. A
/// band reads `N` short runs of weight lines (a chunk is at most 8 KiB of a row) and `N` runs of
/// scales, too short for the hardware prefetchers to ramp up: without this, mxfp4 q8 from DRAM ran
/// at 21 G weights/s and int4-grouped `gs = 32` at 16, against int4-row's 45–53 (avx512-vnni, 18
/// 725 × 14 336; `docs/PERFORMANCE.md`).
///
/// The pointers are only ever offset with wrapping arithmetic and handed to prefetch instructions,
/// which never fault and read nothing the program sees.
///
/// Below the threshold nothing is prefetched: both kernels run a second instance (`STREAM` in AVX2,
/// `SPECIAL` in AVX-512, which also copies rows a multiple of 4 KiB apart) only for such matrices,
/// since even a per-block check of the plan cost the cached case 2–4 %.
///
/// One band ahead is far enough: two bands ahead measured the same.
pub(crate) struct BandPrefetch<const N: usize> {
    /// Each row's weight byte at the first column of the band's chunk: the current band's
    /// block at column offset `dc` (from its chunk's start) prefetches `dc / 2` bytes past it.
    pub(crate) w: [*const u8; N],
    /// Each row's scale byte of the group at that column.
    pub(crate) s: [*const u8; N],
    /// Columns per 64 bytes of one row's scales (mxfp4: 64 one-byte scales of 32 columns;
    /// int4-grouped: 16 four-byte scales of `gs` columns): at column offset `dc`, a multiple
    /// of it, the current band prefetches 64 bytes at `64 · dc / line_cols` past `s`.
    pub(crate) line_cols: usize,
}

impl<const N: usize> BandPrefetch<N> {
    /// The plan for the band after the one at `r0` (within `rows`) in the chunk of columns
    /// `c0 .. c0 + cn`; `None` after the last band of the last chunk (or without scales).
    pub(crate) fn next(
        m: &Matrix<'_>,
        rows: &Range<usize>,
        r0: usize,
        c0: usize,
        cn: usize,
    ) -> Option<Self> {
        let nr = rows.len();
        let (n0, nc) = if r0 + N < nr { (r0 + N, c0) } else { (0, c0 + cn) };
        if nc >= m.i() || nr == 0 {
            return None;
        }
        let last = (nr - n0).min(N) - 1;
        let row = |r: usize| rows.start + n0 + r.min(last);
        // nc < I: the column's weight byte and group are within the row.
        let (g, ngs) = (nc / m.group_len(), m.groups_per_row());
        let (s, line_cols) = match m.scales() {
            Scales::Ue8m0(e) => (core::array::from_fn(|r| e[row(r) * ngs + g..].as_ptr()), 64 * 32),
            Scales::F32(sf) => (
                core::array::from_fn(|r| sf[row(r) * ngs + g..].as_ptr().cast()),
                16 * m.group_len(),
            ),
            Scales::None => return None,
        };
        Some(Self {
            w: core::array::from_fn(|r| m.row_bytes(row(r))[nc / 2..].as_ptr()),
            s,
            line_cols,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SSE2 decoder equals the portable one on every chunk position the arms use (256-column
    /// chunks, so `c0` a multiple of 256, and lengths with and without a partial 64-column
    /// tail), for int2-row and int3-g64 rows of pseudo-random bytes that include all-zero and
    /// all-one bytes (codes −2/1 and −4/3).
    #[test]
    fn sse2_small_int_decode_matches_the_portable_one() {
        for (format, i, w, sc) in crate::arch::small_int_tests::matrices() {
            let m = Matrix::new(format, &w, Scales::F32(&sc), 2, i, 0).unwrap();
            for o in 0..2 {
                let row = m.row_bytes(o);
                for (c0, n) in crate::arch::small_int_tests::chunk_ranges(i) {
                    let (mut a, mut b) = ([0i8; 256], [0i8; 256]);
                    // SAFETY: SSE2 is part of x86-64.
                    unsafe { decode_small_ints(&m, row, c0, &mut a[..n]) };
                    crate::arch::decode_small_ints(&m, row, c0, &mut b[..n]);
                    assert_eq!(a[..n], b[..n], "{format:?} row {o} c0 {c0} n {n}");
                }
            }
        }
    }
}
