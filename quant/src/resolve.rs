//! Format inference from byte arithmetic, and stamp verification (TRUST-VERIFY-REFUSE).
//!
//! A container stores a quantized tensor as raw bytes plus a sibling scale tensor; shapes in
//! the file are not trusted for format identity. What *is* trusted is the `[O, I]` the caller
//! knows from the model config, the two byte counts, and an optional stamp (the format name a
//! writer recorded in `colibri.fmt`). [`resolve`] turns those into a [`Resolved`] format or a
//! named [`ResolveError`] carrying the numbers that explain it — never a guess.
//!
//! # Order (docs/FORMATS.md, "Format inference")
//! 0. Zero dimensions are refused ([`ResolveError::EmptyShape`]); an unknown stamp name is
//!    refused ([`ResolveError::UnknownStamp`]). **Stamp-gated dispatch:** a stamp naming a
//!    stamp-gated format (`int4-rans256-g0`, `int4-rans64-t1`) is dispatched here, before any
//!    byte arithmetic: its weight bytes are a data-dependent record or blob (parsed by
//!    `tetrad-rans`), and its scales must be exactly `O` f32s.
//!    Without that stamp nothing is ever presumed entropy-coded.
//! 1. The E8 tag: `ns == 4` and `nb == O·98·ceil(I/256)`. Collision flags `f32_blk`,
//!    `ue8m0_blk`, `i8row` (the spec's three) and `i4row` (tetrad's fourth, see below). Any
//!    flag set → only a stamp decides; no flag → `e8-iq3-lattice`.
//! 2. Row formats by weight bytes, first match wins: int8-row, int4-row, int2-row, int3-g64.
//! 3. int4-row with `ns > 4·O`: group-size detection over
//!    [`GROUP_SIZE_CANDIDATES`], stopping at the first
//!    `gs > I`; the first (finest) match makes it int4-grouped.
//! 4. int8-row vs fp8 (the landmine): see [`ResolveError::Fp8Ue8m0`].
//! 5. Scale cardinality: `ns` must be exactly the resolved format's scale bytes.
//!
//! # Stamps
//! With a stamp `S`, steps 1–5 run with `S` consulted at their ambiguous branches. If they
//! resolve to `S`, that is the answer. Otherwise (they resolved to another format, or refused)
//! `S` is still accepted when its **own** formulas reproduce `nb` and `ns` exactly: the bytes
//! are then a collision that the first-match order hides (e.g. `int3-g64 [O, 48]` has the same
//! byte counts as `int4-row [O, 48]`; `mxfp4` is never inferred at all, since resolve sees scale
//! byte counts, not the `.qs` dtype), and settling collisions is exactly what a stamp is for.
//! If `S`'s formulas do not fit, the stamp is refused: [`ResolveError::StampMismatch`] when
//! the bytes resolved to another format, else the steps' own refusal. On every branch the spec
//! spells out (E8 flags, the int8/fp8 landmine, UE8M0 scales) this rule gives the spec's
//! answer; it differs only where the spec would refuse a stamp whose bytes are consistent.
//! [`resolve_literal`] is the spec's reading to the letter (no such rule, no `i4row` flag):
//! tetrad's writers hold what they write to it, so that every reader agrees on it.
//!
//! # DECISION: the O = 1 int4-row shapes that look like the E8 tag
//! For `O = 1` an int4-row tensor has `nb = ceil(I/2)` and one f32 scale (`ns = 4`). For
//! `I ∈ {195, 196, 391, 392, 587, 588, 783, 784}` that equals `98·ceil(I/256)` (`98·k` with
//! `I ∈ {196k − 1, 196k}` inside `(256(k−1), 256k]`, which holds only for `k ≤ 4`), so the bytes
//! carry the E8 signature while none of the spec's three flags is set: read literally, step 1
//! would silently call a genuine int4-row vector `e8-iq3-lattice`, and a stamp `int4-row` could
//! never rescue it. tetrad adds a fourth flag, `i4row = (O == 1 && nb == ceil(I/2))`: such a
//! tensor is ambiguous, refused unstamped ([`ResolveError::E8Ambiguous`]), and resolved by a
//! stamp naming `int4-row` (→ int4-row) or `e8-iq3-lattice` (→ E8). Why refuse rather than
//! follow colibrì's reading: the bytes are equally valid as both, "every failure is a named
//! refusal, never a guess", and tetrad refuses E8 values anyway, so the only thing the literal
//! reading buys is a misleading format name. A container that colibrì reads correctly as int4
//! must already stamp the tensor, and then tetrad reads it too. No other format collides with
//! the tag this way (int2-row needs `ceil(I/4) = 98k`, i.e. `I ≈ 392k > 256k`; int3-g64 and
//! mxfp4 never have `ns = 4` with those weight bytes).
//!
//! # Group sizes
//! [`Resolved::group_size`] is the number of columns one scale covers along a row when scales
//! are per group: the detected `gs` of int4-grouped, 64 for int3-g64, 32 for mxfp4; `None`
//! for per-row, per-block and scale-less formats. Group-size ties resolve to the finest group
//! (for `I = 128`, gs 64 and 96 both give two groups per row; 64 wins) — a stamp cannot change
//! that, because stamps name formats, not group sizes.

use core::fmt;

use crate::format::{Format, GROUP_SIZE_CANDIDATES, Status};

/// What [`resolve`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resolved {
    /// The format.
    pub format: Format,
    /// Columns per scale along a row for per-group formats (see the module docs), else `None`.
    pub group_size: Option<u32>,
}

impl Resolved {
    /// `format` with its fixed group size (int3-g64: 64, mxfp4: 32), or `gs` for int4-grouped.
    const fn new(format: Format, gs: Option<u32>) -> Self {
        let group_size = match format {
            Format::Int4Grouped => gs,
            Format::Int3G64 => Some(64),
            Format::Mxfp4 => Some(32),
            _ => None,
        };
        Self { format, group_size }
    }
}

impl fmt::Display for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.group_size {
            Some(gs) if self.format == Format::Int4Grouped => write!(f, "{} gs={gs}", self.format),
            _ => write!(f, "{}", self.format),
        }
    }
}

/// The E8-tag collision flags of step 1 (which other layouts the bytes also fit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct E8Flags {
    /// `nb == O·I` with one 128×128 block: fp8 with one f32 block scale.
    pub f32_blk: bool,
    /// `nb == O·I` with four 128×128 blocks: fp8 with four UE8M0 block-scale bytes.
    pub ue8m0_blk: bool,
    /// `nb == O·I` with `O == 1`: int8-row with one f32 row scale.
    pub i8row: bool,
    /// tetrad's fourth flag: `O == 1 && nb == ceil(I/2)`: int4-row with one f32 row scale.
    pub i4row: bool,
}

impl E8Flags {
    /// Whether any flag is set (the tensor is ambiguous).
    pub const fn any(self) -> bool {
        self.f32_blk || self.ue8m0_blk || self.i8row || self.i4row
    }
}

impl fmt::Display for E8Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        for (set, name) in [
            (self.f32_blk, "fp8-e4m3-b128 with one f32 block scale [f32_blk]"),
            (self.ue8m0_blk, "fp8 with four ue8m0 block scales [ue8m0_blk]"),
            (self.i8row, "int8-row with one row [i8row]"),
            (self.i4row, "int4-row with one row [i4row]"),
        ] {
            if set {
                write!(f, "{sep}{name}")?;
                sep = ", ";
            }
        }
        if sep.is_empty() {
            f.write_str("none")?;
        }
        Ok(())
    }
}

/// A stamp name kept inline (errors are `Copy` and allocation-free): its first
/// [`ShortName::CAPACITY`] bytes, cut at a character boundary.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShortName {
    buf: [u8; ShortName::CAPACITY],
    len: u8,
    truncated: bool,
}

impl ShortName {
    /// Bytes kept.
    pub const CAPACITY: usize = 32;

    /// Keeps (a prefix of) `s`.
    pub fn new(s: &str) -> Self {
        let mut end = s.len().min(Self::CAPACITY);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut buf = [0u8; Self::CAPACITY];
        buf[..end].copy_from_slice(&s.as_bytes()[..end]);
        Self { buf, len: u8::try_from(end).unwrap_or(0), truncated: end < s.len() }
    }

    /// The kept text.
    pub fn as_str(&self) -> &str {
        // The buffer holds a prefix of a `str` cut at a char boundary, so this never fails.
        core::str::from_utf8(&self.buf[..usize::from(self.len)]).unwrap_or("")
    }

    /// Whether the original was longer than what is kept.
    pub const fn is_truncated(&self) -> bool {
        self.truncated
    }
}

impl fmt::Debug for ShortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ShortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())?;
        if self.truncated {
            f.write_str("…")?;
        }
        Ok(())
    }
}

/// Why [`resolve`] refused a tensor. Each variant is one refusal class ([`Self::class`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// A dimension is zero; every formula is degenerate there.
    #[error("shape [{o}, {i}] has a zero dimension, expected O ≥ 1 and I ≥ 1")]
    EmptyShape {
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
    },
    /// The stamp names no registered format.
    #[error("stamp names unknown format {name}, expected a registry name")]
    UnknownStamp {
        /// The stamp text (maybe truncated).
        name: ShortName,
    },
    /// The bytes carry the E8 tag but also fit another layout, and no stamp (or a stamp naming
    /// a format the flags do not allow) settles it.
    #[error(
        "[{o}, {i}] with {weight_bytes} weight bytes and a 4-byte scale carries the e8 tag but \
         also fits {flags}; stamp {} does not settle it, expected a stamp naming one of them",
        StampText(*.stamp)
    )]
    E8Ambiguous {
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
        /// Weight bytes.
        weight_bytes: u64,
        /// Which other layouts fit.
        flags: E8Flags,
        /// The stamp given, if any.
        stamp: Option<Format>,
    },
    /// The weight bytes match no known layout for `[O, I]`.
    #[error(
        "no known layout for [{o}, {i}] has {weight_bytes} weight bytes (int8-row {}, \
         int4-row {}, int2-row {}, int3-g64 {})",
        Formula(*.int8),
        Formula(*.int4),
        Formula(*.int2),
        Formula(*.int3)
    )]
    NoLayout {
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
        /// Weight bytes given.
        weight_bytes: u64,
        /// Weight bytes int8-row would have (`u64::MAX` if it overflows).
        int8: u64,
        /// Weight bytes int4-row would have (`u64::MAX` if it overflows).
        int4: u64,
        /// Weight bytes int2-row would have (`u64::MAX` if it overflows).
        int2: u64,
        /// Weight bytes int3-g64 would have (`u64::MAX` if it overflows).
        int3: u64,
    },
    /// int8-sized weights whose scales are one UE8M0 byte per 128×128 block: fp8 with UE8M0
    /// block scales, which is not supported (only a stamp `int8-row` with per-row scale bytes
    /// escapes this).
    #[error(
        "fp8 with ue8m0 scales is not supported: [{o}, {i}] has {scale_bytes} scale bytes = \
         {blocks} 128x128 blocks (stamp {})",
        StampText(*.stamp)
    )]
    Fp8Ue8m0 {
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
        /// Scale bytes given.
        scale_bytes: u64,
        /// `ceil(O/128) · ceil(I/128)`.
        blocks: u64,
        /// The stamp given, if any.
        stamp: Option<Format>,
    },
    /// The scale bytes are not what the resolved format needs.
    #[error(
        "{format} [{o}, {i}] needs {expected} scale bytes, got {got}{}",
        if *.format == Format::Int4Row && *.got > *.expected { " (no group size in 16..256 fits either)" } else { "" }
    )]
    ScaleCount {
        /// The format the weight bytes resolved to.
        format: Format,
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
        /// Scale bytes the format needs (`u64::MAX` if it overflows).
        expected: u64,
        /// Scale bytes given.
        got: u64,
    },
    /// The stamp names a format whose byte formulas do not fit, while the bytes resolve to
    /// another format.
    #[error(
        "stamp says {stamped} (needs {} weight and {} scale bytes) but [{o}, {i}] with \
         {weight_bytes} weight and {scale_bytes} scale bytes is {inferred}",
        Count(*.expected_weight),
        Count(*.expected_scale)
    )]
    StampMismatch {
        /// What the stamp says.
        stamped: Format,
        /// What the bytes resolve to.
        inferred: Format,
        /// Rows.
        o: u64,
        /// Columns.
        i: u64,
        /// Weight bytes given.
        weight_bytes: u64,
        /// Scale bytes given.
        scale_bytes: u64,
        /// Weight bytes the stamped format needs (`None`: data-dependent or overflow).
        expected_weight: Option<u64>,
        /// Scale bytes the stamped format needs (`None`: needs an undetected group size, or
        /// overflow).
        expected_scale: Option<u64>,
    },
}

impl ResolveError {
    /// Stable machine-readable class name of this refusal.
    pub const fn class(&self) -> &'static str {
        match self {
            Self::EmptyShape { .. } => "E_SHAPE_EMPTY",
            Self::UnknownStamp { .. } => "E_STAMP_UNKNOWN",
            Self::E8Ambiguous { .. } => "E_E8_AMBIGUOUS",
            Self::NoLayout { .. } => "E_NO_LAYOUT",
            Self::Fp8Ue8m0 { .. } => "E_FP8_UE8M0",
            Self::ScaleCount { .. } => "E_SCALE_COUNT",
            Self::StampMismatch { .. } => "E_STAMP_MISMATCH",
        }
    }
}

/// Displays an optional stamp as its name or `none`.
struct StampText(Option<Format>);

impl fmt::Display for StampText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(s) => write!(f, "{s}"),
            None => f.write_str("none"),
        }
    }
}

/// Displays a layout's byte formula result: the number, or `2^64 - 1 or more` at `u64::MAX`,
/// where the formula saturates when it overflows.
struct Formula(u64);

impl fmt::Display for Formula {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == u64::MAX { f.write_str("2^64 - 1 or more") } else { write!(f, "{}", self.0) }
    }
}

/// Displays an optional byte count as the number or `no fixed count`.
struct Count(Option<u64>);

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("no fixed count of"),
        }
    }
}

const fn ceil_div(a: u64, b: u64) -> u64 {
    a / b + !a.is_multiple_of(b) as u64
}

/// `Some(v) == Some(x)` helper: an overflowed formula never equals a real byte count.
fn is(formula: Option<u64>, x: u64) -> bool {
    formula == Some(x)
}

fn wb(f: Format, o: u64, i: u64) -> Option<u64> {
    f.weight_bytes(o, i).ok()
}

/// Detects an int4-grouped group size (step 3): `None` unless `ns > 4·O` and some candidate
/// `gs ≤ I` gives exactly `ns == 4·O·ceil(I/gs)`; the first (finest) such `gs` wins.
fn detect_group(o: u64, i: u64, ns: u64) -> Option<u32> {
    let per_row = o.checked_mul(4)?;
    if ns <= per_row {
        return None;
    }
    GROUP_SIZE_CANDIDATES
        .into_iter()
        .take_while(|&gs| u64::from(gs) <= i)
        .find(|&gs| is(per_row.checked_mul(ceil_div(i, u64::from(gs))), ns))
}

/// Resolves a quantized tensor's format from `[o, i]`, its weight bytes, its scale bytes and
/// an optional stamp (the format name from `colibri.fmt`). See the module docs for the order.
///
/// # Errors
/// Every refusal is a [`ResolveError`] variant carrying the numbers that explain it.
///
/// # Examples
/// ```
/// use tetrad_quant::{resolve, Format};
/// // GLM o_proj [6144, 16384]: int8-sized weights whose scale count fits both per-row and
/// // per-128-block: unstamped it is int8-row, a stamp makes it fp8.
/// let (o, i) = (6144, 16384);
/// assert_eq!(resolve(o, i, o * i, 4 * o, None)?.format, Format::Int8Row);
/// assert_eq!(resolve(o, i, o * i, 4 * o, Some("fp8-e4m3-b128"))?.format, Format::Fp8E4m3B128);
/// // int4 with one scale per 64 columns.
/// let r = resolve(4096, 4096, 4096 * 2048, 4 * 4096 * 64, None)?;
/// assert_eq!((r.format, r.group_size), (Format::Int4Grouped, Some(64)));
/// # Ok::<(), tetrad_quant::ResolveError>(())
/// ```
pub fn resolve(
    o: u64,
    i: u64,
    weight_bytes: u64,
    scale_bytes: u64,
    stamp: Option<&str>,
) -> Result<Resolved, ResolveError> {
    let stamp = step0(o, i, stamp)?;
    let (nb, ns) = (weight_bytes, scale_bytes);
    let Some(stamped) = stamp else {
        return infer(o, i, nb, ns, None);
    };
    if stamped.status() == Status::StampGated {
        // Stamp-gated dispatch, before byte arithmetic: the record (int4-rans256-g0) or blob
        // (int4-rans64-t1) is data-dependent (its framing is checked by its own parser); its
        // scales are int4-row's, O f32s.
        let expected = o.checked_mul(4);
        if !is(expected, ns) {
            return Err(ResolveError::ScaleCount {
                format: stamped,
                o,
                i,
                expected: expected.unwrap_or(u64::MAX),
                got: ns,
            });
        }
        return Ok(Resolved::new(stamped, None));
    }
    let inferred = infer(o, i, nb, ns, Some(stamped));
    if let Ok(r) = inferred
        && r.format == stamped
    {
        return Ok(r);
    }
    if let Some(r) = fits(stamped, o, i, nb, ns) {
        return Ok(r);
    }
    match inferred {
        Ok(r) => Err(mismatch(stamped, r.format, o, i, nb, ns)),
        Err(e) => Err(e),
    }
}

/// What a reader that follows the colibrì engine's format spec (docs/FORMATS.md) **to the letter**
/// decides: steps 1–5 with the stamp consulted only at their ambiguous branches, the spec's
/// three E8 collision flags (not tetrad's `i4row`), and a stamp accepted only when those steps
/// resolve to it — without [`resolve`]'s rule that a stamp whose own formulas reproduce the
/// byte counts settles a collision.
///
/// tetrad *reads* by [`resolve`]; its *writers* use this to write only tensors every reader
/// of the spec reads the same way. The two agree except on collision shapes, e.g. `int4-row`
/// `[O, 1]` (int8-row's bytes), `int4-row [1, 196]` (the E8 tag), `int2-row [O, 2]`,
/// `int3-g64 [O, 48]` (int4-row's bytes), `int4-grouped` at a group-size tie, and every
/// `mxfp4` tensor (which the spec's steps never produce).
///
/// # Errors
/// As [`resolve`]; a stamp the steps do not resolve to is [`ResolveError::StampMismatch`] (or
/// the steps' own refusal).
///
/// # Examples
/// ```
/// use tetrad_quant::resolve::{resolve, resolve_literal};
/// // int4-row [3, 1]: three bytes, three scales: int8-row's bytes. tetrad accepts the
/// // stamp (its formulas fit); a literal reader infers int8-row and refuses it.
/// assert!(resolve(3, 1, 3, 12, Some("int4-row")).is_ok());
/// assert!(resolve_literal(3, 1, 3, 12, Some("int4-row")).is_err());
/// assert!(resolve_literal(3, 64, 96, 12, Some("int4-row")).is_ok());
/// ```
pub fn resolve_literal(
    o: u64,
    i: u64,
    weight_bytes: u64,
    scale_bytes: u64,
    stamp: Option<&str>,
) -> Result<Resolved, ResolveError> {
    let stamp = step0(o, i, stamp)?;
    let (nb, ns) = (weight_bytes, scale_bytes);
    if let Some(stamped) = stamp
        && stamped.status() == Status::StampGated
    {
        return resolve(o, i, nb, ns, Some(stamped.name()));
    }
    let r = infer_with(o, i, nb, ns, stamp, Flags::Spec)?;
    match stamp {
        Some(stamped) if r.format != stamped => Err(mismatch(stamped, r.format, o, i, nb, ns)),
        _ => Ok(r),
    }
}

/// Which E8 collision flags step 1 computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flags {
    /// The spec's three.
    Spec,
    /// The spec's three and tetrad's `i4row`.
    Tetrad,
}

/// Step 0 shared by [`resolve`] and [`resolve_literal`]: empty shapes refused, the stamp name
/// looked up.
fn step0(o: u64, i: u64, stamp: Option<&str>) -> Result<Option<Format>, ResolveError> {
    if o == 0 || i == 0 {
        return Err(ResolveError::EmptyShape { o, i });
    }
    stamp
        .map(|s| Format::from_name(s).ok_or(ResolveError::UnknownStamp { name: ShortName::new(s) }))
        .transpose()
}

/// The refusal of a stamp the byte arithmetic resolves to another format.
fn mismatch(stamped: Format, inferred: Format, o: u64, i: u64, nb: u64, ns: u64) -> ResolveError {
    ResolveError::StampMismatch {
        stamped,
        inferred,
        o,
        i,
        weight_bytes: nb,
        scale_bytes: ns,
        expected_weight: wb(stamped, o, i),
        expected_scale: stamped.scale_bytes(o, i, None).ok(),
    }
}

/// Whether `f`'s own formulas give exactly `(nb, ns)` for `[o, i]`.
fn fits(f: Format, o: u64, i: u64, nb: u64, ns: u64) -> Option<Resolved> {
    if !is(wb(f, o, i), nb) {
        return None;
    }
    if f == Format::Int4Grouped {
        return detect_group(o, i, ns).map(|gs| Resolved::new(f, Some(gs)));
    }
    is(f.scale_bytes(o, i, None).ok(), ns).then_some(Resolved::new(f, None))
}

/// Steps 1–5 of the spec, with `stamp` consulted only at the ambiguous branches.
fn infer(
    o: u64,
    i: u64,
    nb: u64,
    ns: u64,
    stamp: Option<Format>,
) -> Result<Resolved, ResolveError> {
    infer_with(o, i, nb, ns, stamp, Flags::Tetrad)
}

/// [`infer`] with a choice of step 1's collision flags.
fn infer_with(
    o: u64,
    i: u64,
    nb: u64,
    ns: u64,
    stamp: Option<Format>,
    flag_set: Flags,
) -> Result<Resolved, ResolveError> {
    let oi = o.checked_mul(i);
    let blocks = ceil_div(o, 128).checked_mul(ceil_div(i, 128));

    // Step 1: the E8 tag.
    if ns == 4 && is(wb(Format::E8Iq3Lattice, o, i), nb) {
        let int8_sized = is(oi, nb);
        let flags = E8Flags {
            f32_blk: int8_sized && blocks == Some(1),
            ue8m0_blk: int8_sized && blocks == Some(4),
            i8row: int8_sized && o == 1,
            i4row: flag_set == Flags::Tetrad && o == 1 && is(wb(Format::Int4Row, o, i), nb),
        };
        if !flags.any() {
            return Ok(Resolved::new(Format::E8Iq3Lattice, None));
        }
        let chosen = match stamp {
            Some(Format::E8Iq3Lattice) => Some(Format::E8Iq3Lattice),
            Some(Format::Fp8E4m3B128) if flags.f32_blk => Some(Format::Fp8E4m3B128),
            Some(Format::Int8Row) if flags.i8row => Some(Format::Int8Row),
            Some(Format::Int4Row) if flags.i4row => Some(Format::Int4Row),
            _ => None,
        };
        return match chosen {
            // Every flag's format needs exactly 4 scale bytes here, so step 5 holds.
            Some(f) => Ok(Resolved::new(f, None)),
            None => Err(ResolveError::E8Ambiguous { o, i, weight_bytes: nb, flags, stamp }),
        };
    }

    // Step 2: row formats by weight bytes, first match wins.
    let mut format = if is(oi, nb) {
        Format::Int8Row
    } else if is(wb(Format::Int4Row, o, i), nb) {
        Format::Int4Row
    } else if is(wb(Format::Int2Row, o, i), nb) {
        Format::Int2Row
    } else if is(wb(Format::Int3G64, o, i), nb) {
        Format::Int3G64
    } else {
        return Err(ResolveError::NoLayout {
            o,
            i,
            weight_bytes: nb,
            int8: oi.unwrap_or(u64::MAX),
            int4: wb(Format::Int4Row, o, i).unwrap_or(u64::MAX),
            int2: wb(Format::Int2Row, o, i).unwrap_or(u64::MAX),
            int3: wb(Format::Int3G64, o, i).unwrap_or(u64::MAX),
        });
    };

    // Step 3: group-size detection.
    let mut gs = None;
    if format == Format::Int4Row
        && let Some(g) = detect_group(o, i, ns)
    {
        format = Format::Int4Grouped;
        gs = Some(g);
    }

    // Step 4: the int8-row vs fp8 landmine.
    if format == Format::Int8Row {
        let ns_row = o.checked_mul(4);
        let ns_blk = blocks.and_then(|b| b.checked_mul(4));
        if is(ns_row, ns) && is(ns_blk, ns) {
            format = match stamp {
                None | Some(Format::Int8Row) => Format::Int8Row,
                Some(Format::Fp8E4m3B128) => Format::Fp8E4m3B128,
                Some(other) => {
                    return Err(mismatch(other, Format::Int8Row, o, i, nb, ns));
                }
            };
        } else if is(blocks, ns) {
            if !(stamp == Some(Format::Int8Row) && is(ns_row, ns)) {
                return Err(ResolveError::Fp8Ue8m0 {
                    o,
                    i,
                    scale_bytes: ns,
                    blocks: blocks.unwrap_or(u64::MAX),
                    stamp,
                });
            }
        } else if is(ns_blk, ns) {
            format = Format::Fp8E4m3B128;
        }
    }

    // Step 5: scale cardinality.
    let expected = format.scale_bytes(o, i, gs).ok();
    if !is(expected, ns) {
        return Err(ResolveError::ScaleCount {
            format,
            o,
            i,
            expected: expected.unwrap_or(u64::MAX),
            got: ns,
        });
    }
    Ok(Resolved::new(format, gs))
}
