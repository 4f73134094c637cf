//! x86-64 arms: AVX2 + FMA and AVX2 + FMA + AVX-VNNI (256-bit, `avx2::{plain, vnni}`),
//! AVX-512 F + BW and AVX-512 F + BW + VNNI (512-bit, `avx512::{plain, vnni}`). Each file is one
//! kernel body instantiated twice, the two instances differing only in the exact int8 dot step.
//!
//! All arms share one structure: each output row is processed in chunks of 256 columns; a
//! chunk is decoded once (SIMD unpacking) into a small L1-resident buffer of unscaled values
//! (f32 path) or integer codes (int8-activation path), and that buffer is then reused by every
//! activation row of the batch (weights are decoded once per row and batch tile, not once per
//! activation row). Scale groups are walked in the order of the scalar reference.
pub(crate) mod avx2;
pub(crate) mod avx512;

use core::ops::Range;

use crate::kernels::{Matrix, Scales};

/// Whether a kernel call over `m` streams its weights from beyond the caches (more
/// than [`STREAM_BYTES`]), so its loops prefetch (`avx512::prefetch_l2`, [`BandPrefetch`]).
/// The whole matrix counts, not `rows`: threads splitting the rows share the caches.
pub(crate) fn streams(m: &Matrix<'_>) -> bool {
    m.weights().len() > STREAM_BYTES
}

/// Weight bytes above which the int8-row / int4-row q8 loops prefetch. Below it the
/// prefetches only cost issue slots: on the dev VM (32 MiB L3), int8-row q8 in GB/s
/// without / with them: 1 MiB 72 / 45, 8 MiB 72 / 44, 16 MiB 54 / 42, 32 MiB 22 / 27,
/// 128 MiB 19 / 24 (read 26).
const STREAM_BYTES: usize = 24 << 20;

/// What the band kernels (`avx512::q8_g32_rows16`, `avx2::q8_band8`: `N` rows per band, one
/// row per lane) prefetch while streaming from DRAM: the rows and scales of the **next** band
/// — after a chunk's last band, the first band of the next chunk — one band ahead, into L2.
/// A band reads `N` short runs of weight lines (a chunk is at most 4 KiB of a row) and `N`
/// runs of scales, too short for the hardware prefetchers to ramp up: without this, mxfp4 q8
/// from DRAM ran at 21 G weights/s and int4-grouped `gs = 32` at 16, against int4-row's 45–53
/// (avx512-vnni, 18 725 × 14 336; `docs/PERFORMANCE.md`).
///
/// The pointers are only ever offset with wrapping arithmetic and handed to prefetch
/// instructions, which never fault and read nothing the program sees.
///
/// Below the threshold nothing is prefetched: both kernels run a second instance (`STREAM` in
/// AVX2, `SPECIAL` in AVX-512, which also copies rows a multiple of 4 KiB apart) only for such
/// matrices, since even a per-block check of the plan cost the cached case 2–4 %.
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
