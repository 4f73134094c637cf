//! Which x86-64 kernel runs for a call: the policy for (format, activation mode, batch,
//! residency, arm) in one place. Each arm's `rows::f32_rows` and `rows::q8_rows` ask [`f32()`] and
//! [`q8`] and run what they are told; within a kernel only the tiling of the batch (how many
//! activation rows share a weight decode) remains, documented at the kernel.
//!
//! The reasons are measurements of the `kernels` bench (`cargo bench -p tetrad-benches --bench
//! kernels`: `S = 1` per format, accumulation mode and arm, on an L2-resident matrix and on one
//! streamed from DRAM; results in `docs/PERFORMANCE.md`). "Residency" is [`streams`]: whether
//! the whole matrix is larger than the caches.

use super::streams;
use crate::format::Format;
use crate::kernels::Matrix;

/// The vector width of an arm (the two arms of a width share their kernels; they differ only
/// in the int8 dot step).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Width {
    /// `avx2`, `avx-vnni`.
    Avx2,
    /// `avx512`, `avx512-vnni`.
    Avx512,
}

/// Columns up to which the int2-row and int3-g64 int8-path kernels take an activation row: it
/// is split into crumb planes on the stack (32 KiB). Longer rows take the generic path.
pub(crate) const PLANE_COLS: usize = 32 << 10;

/// Activation codes per chunk of the nibble band kernels (both widths; see their `QC`).
pub(crate) const BAND_CHUNK: usize = 16384;

const _: () = assert!(
    super::avx2::PLANES == PLANE_COLS
        && super::avx512::XA == PLANE_COLS
        && super::avx2::QC == BAND_CHUNK
        && super::avx512::QC == BAND_CHUNK
);

/// Whether the nibble band kernels take int4-grouped with group length `gs`: a multiple of 32
/// (whole 32-column subgroups) that divides [`BAND_CHUNK`] (a chunk never splits a group), i.e.
/// 32, 64, 128, …, 16384.
pub(crate) const fn g32_multiple(gs: usize) -> bool {
    gs != 0 && gs.is_multiple_of(32) && BAND_CHUNK.is_multiple_of(gs)
}

/// The int8-activation kernel of a call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Q8 {
    /// int4-row: 4 or 2 activation rows share each weight row; a single one (`S = 1`, or the
    /// last of an odd batch) runs on bands of 8 weight rows.
    Int4Row,
    /// int8-row: bands of 8 weight rows against each activation row.
    Int8Row,
    /// The 512-bit arm's int4-row / int8-row GEMV from DRAM, run by the plain 256-bit arm's
    /// 8-row band kernels (the same exact sums).
    Avx2Bands,
    /// int2-row on crumb planes of the activations (`I ≤ PLANE_COLS`).
    Int2Planes,
    /// int3-g64 on crumb planes of the activations (`I ≤ PLANE_COLS`).
    Int3Planes,
    /// mxfp4 (`mx`) or int4-grouped with whole 32-column subgroups (`wide`: `gs` a larger
    /// multiple of 32): bands of 8 (256-bit) or 16 (512-bit) rows, one output row per lane.
    /// `special`: the instance that prefetches from DRAM (and, 512-bit, copies rows lying a
    /// multiple of 4 KiB apart); `vbmi`: the 512-bit mxfp4 code lookups by `vpermb`.
    Band {
        /// mxfp4 (else int4-grouped).
        mx: bool,
        /// Groups of more than 32 columns.
        wide: bool,
        /// The prefetching / row-copying instance.
        special: bool,
        /// The VBMI lookups (512-bit mxfp4 only).
        vbmi: bool,
    },
    /// Everything else (int4-grouped with `gs` not a multiple of 32, int2 / int3 rows over
    /// [`PLANE_COLS`], 512-bit int4-grouped with over `i32::MAX` scales): a 256-column chunk
    /// decoded into an L1 buffer of codes, then exact dot products per group segment.
    Generic,
}

/// The int8-activation kernel for `m` with `s` activation rows on an arm of `width`.
pub(crate) fn q8(width: Width, m: &Matrix<'_>, s: usize) -> Q8 {
    let gs = m.group_len();
    match m.format() {
        // 512-bit int4-row and int8-row GEMV from DRAM: on Zen 4 (512-bit operations at half
        // rate) the 256-bit 8-row band kernels kept closer to a read of the same bytes than the
        // 512-bit bands, in the same runs: int4-row 0.91–0.94 of the read against 0.83–0.90,
        // int8-row 0.92–0.97 against 0.86–0.99 (three alternating runs of each build); in L2
        // the 512-bit kernels stay 1.3–1.4 × faster, so only streaming matrices go there.
        Format::Int4Row | Format::Int8Row if width == Width::Avx512 && s == 1 && streams(m) => {
            Q8::Avx2Bands
        }
        Format::Int4Row => Q8::Int4Row,
        Format::Int8Row => Q8::Int8Row,
        Format::Int2Row if m.i() <= PLANE_COLS => Q8::Int2Planes,
        Format::Int3G64 if m.i() <= PLANE_COLS => Q8::Int3Planes,
        Format::Mxfp4 => band(width, m, true, false),
        Format::Int4Grouped if gs == 32 => band(width, m, false, false),
        // 512-bit: the scales of a band come by gather, whose indices are i32.
        Format::Int4Grouped
            if g32_multiple(gs)
                && (width == Width::Avx2 || m.o() * m.groups_per_row() <= i32::MAX as usize) =>
        {
            band(width, m, false, true)
        }
        _ => Q8::Generic,
    }
}

/// [`Q8::Band`] for `m` on `width`: the special instance only where needed, since even a
/// per-block check of the plan cost the cached 512 × 1024 case 2–4 %.
fn band(width: Width, m: &Matrix<'_>, mx: bool, wide: bool) -> Q8 {
    match width {
        Width::Avx2 => Q8::Band { mx, wide, special: streams(m), vbmi: false },
        Width::Avx512 => Q8::Band {
            mx,
            wide,
            // Rows a multiple of 4 KiB apart put the band's 16 loads of a block into one L1
            // set (8 ways): the special instance copies them first (avx512-vnni, mxfp4 q8, 64
            // × 8192: 33 → 45 G weights/s; int4-grouped `gs = 32` 33 → 49).
            special: m.o() > 0 && (streams(m) || super::avx512::restrides(m)),
            vbmi: mx && crate::isa::vbmi_lookups(),
        },
    }
}

/// The f32-activation kernel of a call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum F32 {
    /// 256-bit int4-row, int4-grouped (`gs` a multiple of 32), mxfp4, int2-row and int3-g64:
    /// the weights decoded in registers (`avx2::grouped::f32_fused`: the small-batch passes
    /// for 2 to 16 activation rows where they apply, bands of 8 weight rows for one, row
    /// kernels of 4, 2 or 1 activation rows otherwise).
    Fused,
    /// 256-bit fp8: bands of 8 weight rows for one activation row, the small-batch passes for
    /// 2 to 16, the row kernel otherwise.
    Fp8,
    /// 256-bit int8-row: bands of 8 weight rows against each activation row.
    Int8Bands,
    /// 512-bit int4-row, int4-grouped (`gs` a multiple of 32), mxfp4 (`mx`) and fp8 (`fp8`):
    /// tiles of 4, 2 or 1 activation rows (`avx512::nib_f32::f32_tiled`), after, where
    /// `avx2_batch`, the 256-bit small-batch passes of 8, 4 or 2 rows.
    Tiled {
        /// mxfp4 (e2m1 values).
        mx: bool,
        /// fp8 e4m3.
        fp8: bool,
        /// The 256-bit small-batch passes first.
        avx2_batch: bool,
    },
    /// The 512-bit arm's int8-row, int2-row, int3-g64 and f32 weights: the 256-bit plain
    /// arm's f32 path.
    Avx2,
    /// Everything else: a 256-column chunk decoded into an L1 buffer of values, then FMA dot
    /// products per group segment.
    Generic,
}

/// The f32-activation kernel for `m` with `s` activation rows on an arm of `width`.
pub(crate) fn f32(width: Width, m: &Matrix<'_>, s: usize) -> F32 {
    let whole_subgroups = m.group_len().is_multiple_of(32);
    match (width, m.format()) {
        (Width::Avx2, Format::Int4Row | Format::Mxfp4 | Format::Int2Row | Format::Int3G64) => {
            F32::Fused
        }
        (Width::Avx2, Format::Int4Grouped) if whole_subgroups => F32::Fused,
        (Width::Avx2, Format::Fp8E4m3B128) => F32::Fp8,
        (Width::Avx2, Format::Int8Row) => F32::Int8Bands,
        // 512-bit int4-row and fp8 at S ≥ 2: the 256-bit small-batch passes (8, 4 or 2
        // activation rows per pass over L1-resident activation chunks; `docs/kernels.md`). On
        // Zen 4 a 512-bit FMA has the throughput of two 256-bit ones, and these passes measured
        // 1.2 × (int4-row) and 1.6 × (fp8) faster than the 512-bit 4-row tiles at S = 16; the
        // last single row, if any, stays on the tiles.
        (Width::Avx512, Format::Int4Row) => {
            F32::Tiled { mx: false, fp8: false, avx2_batch: s >= 2 }
        }
        (Width::Avx512, Format::Fp8E4m3B128) => {
            F32::Tiled { mx: false, fp8: true, avx2_batch: s >= 2 }
        }
        (Width::Avx512, Format::Int4Grouped) if whole_subgroups => {
            F32::Tiled { mx: false, fp8: false, avx2_batch: false }
        }
        (Width::Avx512, Format::Mxfp4) => F32::Tiled { mx: true, fp8: false, avx2_batch: false },
        // The 256-bit fused kernels: int8-row on 8-row bands (per 8 weights one `vpmovsxbd`, one
        // conversion, one FMA; from DRAM the next band prefetched), int2-row / int3-g64 decoded
        // 64 columns at a time in registers. The 512-bit chunked path (codes widened into an L1
        // buffer, then a dot) was slower for all three (Zen 4, S = 1, G weights/s, L2 / DRAM):
        // int8-row 8 / 5 against 28 / 22, int2-row 5.1 / 5.9 against 13.0 / 12.3, int3-g64 3.6 /
        // 3.3 against 5.6 / 6.7. f32 weights: the 256-bit dot was faster on every core measured
        // (512 × 1024, S = 1: Zen 4 11.1 against 8.6, Intel Xeon 7.5 against 6.3, Zen 5 13.4
        // against 10.4; from DRAM within noise of each other).
        (Width::Avx512, Format::Int8Row | Format::Int2Row | Format::Int3G64 | Format::F32) => {
            F32::Avx2
        }
        _ => F32::Generic,
    }
}
