//! The weight-format registry: one enum for every row of `docs/FORMATS.md`.
//!
//! Ordinals are never written to disk (names are); they exist for compatibility with the C
//! engine's integer format ids. A `const` table keeps ordinals and names in one place so two
//! formats can never silently share one.

/// Every weight format tetrad knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Format {
    /// Ordinal 0: raw little-endian f32.
    F32,
    /// Ordinal 1: one i8 per weight, one f32 scale per row.
    Int8Row,
    /// Ordinal 2: one nibble per weight (offset 8), one f32 scale per row.
    Int4Row,
    /// Ordinal 3: one 2-bit crumb per weight (offset 2), one f32 scale per row.
    Int2Row,
    /// Ordinal 4: int4 nibbles with one f32 scale per `gs` columns of a row.
    Int4Grouped,
    /// Ordinal 5: 3-bit values in 24-byte groups of 64, one f32 scale per group.
    Int3G64,
    /// Ordinal 6: the E8 lattice codebook format (recognised, refused by the kernels).
    E8Iq3Lattice,
    /// Ordinal 7: OCP MXFP4, e2m1 nibbles with one UE8M0 byte scale per 32 inputs.
    Mxfp4,
    /// Ordinal 8: OCP FP8 E4M3FN bytes with one f32 scale per 128×128 block.
    Fp8E4m3B128,
    /// No ordinal: the entropy-coded int4-row record (stamp-gated; `docs/int4-rans256-g0.md`).
    Int4Rans256G0,
}
