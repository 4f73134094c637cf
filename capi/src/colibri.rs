//! colibrì's `librans_c` bridge: `rc_record_encode`, `rc_record_bound`, `rc_record_parse`,
//! `rc_record_decode`, `rc_stream_decode_checked`, `rc_err_name`, `rc_path_name`.
//!
//! The signatures, conventions, error numbers and names are the reference bridge's (its
//! `rans_err` and `rans_path` enums); the work is tetrad's [`tetrad_rans`]. The conventions:
//!
//! - Every entry pins `n_streams == 256` (else `E_NSTREAMS`, and a bound of 0).
//! - `rc_record_encode` returns the record length or the negated error; the others return the
//!   error (0 is `OK`). `rc_err_name` takes `|e|`.
//! - Table arrays are validated in the reference's order (`E_TABLE_SCALE`, then each start
//!   against the running sum (`E_TABLE_START`), the sum (`E_TABLE_FREQ_SUM`), every slot
//!   (`E_TABLE_SLOT`)); `slot_to_symbol` is read only once the scale is valid (`M` entries).
//! - `rc_record_parse` refuses a blob pointer that is not 4-byte aligned (`E_UNALIGNED`), then
//!   checks the framing in the reference's order.
//! - `rc_record_decode` is the reference's fast path: it does not prove the streams genuine.
//!   tetrad decodes with the chosen arm, checking every stream's seal; a record whose streams
//!   break it is decoded again by the spec's plain decoder (what the reference's scalar path
//!   writes) and `OK` is returned, as the reference does. Verification is
//!   `rc_stream_decode_checked`'s job (colibrì's `rans_verify.py` calls it per stream).
//!   tetrad never reads past `blob_len`, so the 64-byte slack the reference asks callers for
//!   is honoured and not needed.
//! - Paths: `scalar` 0 is [`Arm::Scalar`], `scalar_bf` 1 is [`Arm::ScalarBranchFree`], `neon`
//!   2 is [`Arm::Neon`], `avx512` 3 is [`Arm::Avx512Vbmi`] where the CPU has VBMI/VBMI2/CD,
//!   else [`Arm::Avx512`] (both need AVX-512 F and BW, as the reference's arm does). tetrad's
//!   [`Arm::Avx2`] has no number in `rans_path` and is not reachable here. `path < 0` is the
//!   reference's selection: `RANS_PATH=scalar|scalar_bf|neon|avx512` forces an arm (an
//!   unavailable or unknown one gives `E_PATH_UNAVAILABLE`, and `rc_path_name` says
//!   `"invalid"`); otherwise the best of avx512, neon, scalar_bf, with the kill switches
//!   `RANS_AVX512=0` and `RANS_NEON=0`. An explicit path that this CPU cannot run, or a number
//!   above 3, gives `E_PATH_UNAVAILABLE`.
//! - Where the reference would dereference a NULL pointer, the argument's own check refuses:
//!   `nibbles` `E_SYMBOL_UNCODABLE`, `out`/`out_packed`/`out_nibbles` `E_SCRATCH`, `blob`
//!   `E_TRUNCATED`, `freq`/`start`/`slot_to_symbol` `E_TABLE_FREQ_SUM`/`E_TABLE_START`/
//!   `E_TABLE_SLOT`, `in_buf` `E_STREAM_UNDERRUN`. A panic (none is known) is reported as
//!   `E_NOMEM`, the reference's one failure class that is not about the input.

use std::ffi::c_char;

use tetrad_rans::stream::step;
use tetrad_rans::{Arm, Nibbles, ParseOrder, Record, Table, decode_record_with, encode_record};

use super::ffi::guard_value;

/// The reference's stream count for the format.
const NSTREAMS: u32 = 256;
/// Bytes before the payload with 256 streams.
const HEAD: u64 = 1056;
/// `rans_err` names, indexed by number.
const ERR_NAMES: [&std::ffi::CStr; 24] = [
    c"OK",
    c"E_TRUNCATED",
    c"E_EMPTY",
    c"E_COUNT_MISMATCH",
    c"E_OVERSIZE",
    c"E_OFFSET_FIRST",
    c"E_OFFSETS_MONOTONIC",
    c"E_STREAM_SHORT",
    c"E_LENGTH_MISMATCH",
    c"E_PAD_NONZERO",
    c"E_UNALIGNED",
    c"E_NSTREAMS",
    c"E_TABLE_SCALE",
    c"E_TABLE_FREQ_SUM",
    c"E_TABLE_START",
    c"E_TABLE_SLOT",
    c"E_STREAM_STATE_RANGE",
    c"E_STREAM_UNDERRUN",
    c"E_STREAM_LEFTOVER",
    c"E_STREAM_FINAL_STATE",
    c"E_SYMBOL_UNCODABLE",
    c"E_SCRATCH",
    c"E_NOMEM",
    c"E_PATH_UNAVAILABLE",
];

const E_TRUNCATED: i32 = 1;
const E_UNALIGNED: i32 = 10;
const E_NSTREAMS: i32 = 11;
const E_TABLE_SCALE: i32 = 12;
const E_TABLE_FREQ_SUM: i32 = 13;
const E_TABLE_START: i32 = 14;
const E_TABLE_SLOT: i32 = 15;
const E_STREAM_STATE_RANGE: i32 = 16;
const E_STREAM_UNDERRUN: i32 = 17;
const E_SYMBOL_UNCODABLE: i32 = 20;
const E_SCRATCH: i32 = 21;
const E_NOMEM: i32 = 22;
const E_PATH_UNAVAILABLE: i32 = 23;

/// The `rans_err` number of a tetrad refusal class (`E_NOMEM` for a class the reference does
/// not have; none of the calls made here returns one).
fn code(class: &str) -> i32 {
    ERR_NAMES
        .iter()
        .position(|n| n.to_bytes() == class.as_bytes())
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or(E_NOMEM)
}

/// The reference's `rans_path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Scalar,
    ScalarBf,
    Neon,
    Avx512,
}

impl Path {
    fn of(n: i32) -> Option<Path> {
        match n {
            0 => Some(Path::Scalar),
            1 => Some(Path::ScalarBf),
            2 => Some(Path::Neon),
            3 => Some(Path::Avx512),
            _ => None,
        }
    }

    fn name(self) -> &'static std::ffi::CStr {
        match self {
            Path::Scalar => c"scalar",
            Path::ScalarBf => c"scalar_bf",
            Path::Neon => c"neon",
            Path::Avx512 => c"avx512",
        }
    }

    /// tetrad's arm for this path, if this CPU can run one.
    fn arm(self) -> Option<Arm> {
        let arm = match self {
            Path::Scalar => Arm::Scalar,
            Path::ScalarBf => Arm::ScalarBranchFree,
            Path::Neon => Arm::Neon,
            Path::Avx512 if Arm::Avx512Vbmi.is_available() => Arm::Avx512Vbmi,
            Path::Avx512 => Arm::Avx512,
        };
        arm.is_available().then_some(arm)
    }

    /// The reference's `rans_path_available`: the CPU check plus the kill switch.
    fn available(self) -> bool {
        let killed =
            |var: &str| std::env::var_os(var).is_some_and(|v| atoi(v.as_encoded_bytes()) == 0);
        match self {
            Path::Scalar | Path::ScalarBf => true,
            Path::Neon => !killed("RANS_NEON") && self.arm().is_some(),
            Path::Avx512 => !killed("RANS_AVX512") && self.arm().is_some(),
        }
    }

    /// The reference's `rans_path_select`: `RANS_PATH` forces a path (None when it names an
    /// unknown or unavailable one), else the best available.
    fn select() -> Option<Path> {
        match std::env::var_os("RANS_PATH") {
            Some(v) if !v.is_empty() => {
                let p = match v.as_encoded_bytes() {
                    b"scalar" => Path::Scalar,
                    b"scalar_bf" => Path::ScalarBf,
                    b"neon" => Path::Neon,
                    b"avx512" => Path::Avx512,
                    _ => return None,
                };
                p.available().then_some(p)
            }
            _ => Some(
                [Path::Avx512, Path::Neon]
                    .into_iter()
                    .find(|p| p.available())
                    .unwrap_or(Path::ScalarBf),
            ),
        }
    }
}

/// C's `atoi`: leading white space, an optional sign, decimal digits; 0 when there are none.
fn atoi(s: &[u8]) -> i64 {
    let mut it = s
        .iter()
        .copied()
        .skip_while(|c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .peekable();
    let neg = match it.peek() {
        Some(b'-') => {
            it.next();
            true
        }
        Some(b'+') => {
            it.next();
            false
        }
        _ => false,
    };
    let mut v: i64 = 0;
    for c in it.take_while(u8::is_ascii_digit) {
        v = v.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    if neg { -v } else { v }
}

/// The caller's table arrays as a validated tetrad table, or the `rans_err` number.
///
/// # Safety
/// Each pointer must be NULL or point to its array: 16 `freq`, 16 `start`, and `2^scale_bits`
/// `slot_to_symbol` entries when `scale_bits` is in 1..=15.
unsafe fn table(
    freq: *const u32,
    start: *const u32,
    slot_to_symbol: *const u16,
    scale_bits: u32,
) -> Result<Box<Table>, i32> {
    if !(1..=15).contains(&scale_bits) {
        return Err(E_TABLE_SCALE);
    }
    if start.is_null() {
        return Err(E_TABLE_START);
    }
    if freq.is_null() {
        return Err(E_TABLE_FREQ_SUM);
    }
    if slot_to_symbol.is_null() {
        return Err(E_TABLE_SLOT);
    }
    // SAFETY: non-null, and by the contract 16 readable u32s.
    let freq: [u32; 16] = unsafe { freq.cast::<[u32; 16]>().read_unaligned() };
    // SAFETY: non-null, and by the contract 16 readable u32s.
    let start: [u32; 16] = unsafe { start.cast::<[u32; 16]>().read_unaligned() };
    let m = 1usize << scale_bits;
    // SAFETY: non-null, and by the contract `M = 2^scale_bits` readable u16s (the scale was
    // checked above); the table only reads them during this call.
    let slots = unsafe { std::slice::from_raw_parts(slot_to_symbol, m) };
    let mut t = Box::new(Table::new());
    t.rebuild_from_parts(scale_bits, &freq, &start, slots).map_err(|e| code(e.class()))?;
    Ok(t)
}

/// The caller's record blob, or the `rans_err` number of its pointer check.
///
/// # Safety
/// `blob` must be NULL or point to `blob_len` readable bytes.
unsafe fn blob<'a>(blob: *const u8, blob_len: u64) -> Result<&'a [u8], i32> {
    if blob as usize & 3 != 0 {
        return Err(E_UNALIGNED);
    }
    let Ok(len) = usize::try_from(blob_len) else {
        return Err(E_TRUNCATED);
    };
    if blob.is_null() || len == 0 {
        return Ok(&[]);
    }
    // SAFETY: non-null, and by the contract `blob_len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(blob, len) })
}

/// Encodes `n` nibbles (one per byte, each ≤ 15 and coded by the table) as one
/// `int4-rans256-g0` record into `out` (`out_cap` bytes; `rc_record_bound(n, 256)` is always
/// enough). Returns the record length, or the negated `rans_err`.
///
/// # Safety
/// `nibbles` must point to `n` readable bytes, `out` to `out_cap` writable bytes; the table
/// pointers as for `rc_record_decode`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the reference's signature
pub unsafe extern "C" fn rc_record_encode(
    nibbles: *const u8,
    n: u64,
    freq: *const u32,
    start: *const u32,
    slot_to_symbol: *const u16,
    scale_bits: u32,
    n_streams: u32,
    out: *mut u8,
    out_cap: u64,
) -> i64 {
    guard_value(-i64::from(E_NOMEM), || {
        if n_streams != NSTREAMS {
            return -i64::from(E_NSTREAMS);
        }
        // SAFETY: the table pointers follow the caller contract.
        let t = match unsafe { table(freq, start, slot_to_symbol, scale_bits) } {
            Ok(t) => t,
            Err(e) => return -i64::from(e),
        };
        if n == 0 {
            return -i64::from(code("E_EMPTY"));
        }
        let Ok(n) = usize::try_from(n) else {
            return -i64::from(E_SYMBOL_UNCODABLE);
        };
        if nibbles.is_null() {
            return -i64::from(E_SYMBOL_UNCODABLE);
        }
        // SAFETY: non-null, and by the contract `n` readable bytes.
        let nib = unsafe { std::slice::from_raw_parts(nibbles, n) };
        let cap = usize::try_from(out_cap).unwrap_or(usize::MAX);
        let out: &mut [u8] = if out.is_null() || cap == 0 {
            &mut []
        } else {
            // SAFETY: non-null, and by the contract `out_cap` writable bytes, disjoint from the
            // inputs.
            unsafe { std::slice::from_raw_parts_mut(out, cap) }
        };
        match encode_record(&t, Nibbles::Unpacked(nib), NSTREAMS as usize, out) {
            Ok(len) => i64::try_from(len).unwrap_or(-i64::from(E_SCRATCH)),
            Err(e) => -i64::from(code(e.class())),
        }
    })
}

/// The reference's worst-case record length for `n_symbols` nibbles:
/// `1056 + round16(256 · (ceil((n/256 + 1)·15/8) + 68))` (64-bit wrapping arithmetic, as in
/// C); 0 when `n_streams != 256`.
#[unsafe(no_mangle)]
pub extern "C" fn rc_record_bound(n_symbols: u64, n_streams: u32) -> u64 {
    if n_streams != NSTREAMS {
        return 0;
    }
    let round16 = |v: u64| v.wrapping_add(15) & !15;
    let per = (n_symbols / u64::from(NSTREAMS)).wrapping_add(1);
    let per_bytes = per.wrapping_mul(15).wrapping_add(7) / 8 + 4 + 64;
    HEAD.wrapping_add(round16(per_bytes.wrapping_mul(u64::from(NSTREAMS))))
}

/// Parses and validates a record blob (`blob_len` bytes, 4-byte aligned); on success stores
/// its symbol and packed byte counts through the pointers that are not NULL. Returns a
/// `rans_err`.
///
/// # Safety
/// `blob` must point to `blob_len` readable bytes; `n_symbols` and `packed_bytes` must each be
/// NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rc_record_parse(
    blob_ptr: *const u8,
    blob_len: u64,
    n_streams: u32,
    n_symbols: *mut u64,
    packed_bytes: *mut u64,
) -> i32 {
    guard_value(E_NOMEM, || {
        if n_streams != NSTREAMS {
            return E_NSTREAMS;
        }
        // SAFETY: `blob_ptr` points to `blob_len` readable bytes (caller contract).
        let b = match unsafe { blob(blob_ptr, blob_len) } {
            Ok(b) => b,
            Err(e) => return e,
        };
        match Record::parse_streams_in_order(b, NSTREAMS as usize, ParseOrder::Codec) {
            Ok(r) => {
                // SAFETY: each is NULL or valid for one write (caller contract).
                unsafe {
                    super::ffi::write_opt(n_symbols, r.n_symbols());
                }
                // SAFETY: as above.
                unsafe {
                    super::ffi::write_opt(packed_bytes, r.packed_bytes());
                }
                0
            }
            Err(e) => code(e.class()),
        }
    })
}

/// Parses a record and decodes it to packed bytes (`out_packed` holds the record's
/// `packed_bytes`; an odd symbol count leaves the last byte's high nibble 0) with `path`
/// (`< 0`: the selected best arm; 0 scalar, 1 scalar_bf, 2 neon, 3 avx512). Does not prove
/// the streams genuine (see the module docs). Returns a `rans_err`.
///
/// # Safety
/// `blob` must point to `blob_len` readable bytes; the table pointers to 16 `freq`, 16 `start`
/// and `2^scale_bits` `slot_to_symbol` entries; `out_packed` to the record's `packed_bytes`
/// writable bytes, not overlapping the inputs.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the reference's signature
pub unsafe extern "C" fn rc_record_decode(
    blob_ptr: *const u8,
    blob_len: u64,
    n_streams: u32,
    freq: *const u32,
    start: *const u32,
    slot_to_symbol: *const u16,
    scale_bits: u32,
    path: i32,
    out_packed: *mut u8,
) -> i32 {
    guard_value(E_NOMEM, || {
        if n_streams != NSTREAMS {
            return E_NSTREAMS;
        }
        // SAFETY: `blob_ptr` points to `blob_len` readable bytes (caller contract).
        let b = match unsafe { blob(blob_ptr, blob_len) } {
            Ok(b) => b,
            Err(e) => return e,
        };
        let record = match Record::parse_streams_in_order(b, NSTREAMS as usize, ParseOrder::Codec) {
            Ok(r) => r,
            Err(e) => return code(e.class()),
        };
        // SAFETY: the table pointers follow the caller contract.
        let t = match unsafe { table(freq, start, slot_to_symbol, scale_bits) } {
            Ok(t) => t,
            Err(e) => return e,
        };
        let p = if path < 0 { Path::select() } else { Path::of(path) };
        let Some(arm) = p.and_then(Path::arm) else {
            return E_PATH_UNAVAILABLE;
        };
        let Ok(len) = usize::try_from(record.packed_bytes()) else {
            return E_SCRATCH;
        };
        if out_packed.is_null() {
            return E_SCRATCH;
        }
        // SAFETY: non-null, and by the contract `packed_bytes` writable bytes, disjoint from
        // the inputs.
        let out = unsafe { std::slice::from_raw_parts_mut(out_packed, len) };
        match decode_record_with(arm, &t, &record, out) {
            Ok(()) => 0,
            Err(tetrad_rans::DecodeError::Stream { .. }) => {
                plain_decode(&t, &record, out);
                0
            }
            Err(e) => code(e.class()),
        }
    })
}

/// The spec's plain decoder over every stream, packed (the bytes the reference's scalar path
/// writes for a record whatever its streams hold).
fn plain_decode(t: &Table, record: &Record<'_>, out: &mut [u8]) {
    out.fill(0);
    let (blob, payload) = (record.blob(), record.payload());
    let n = record.n_symbols();
    let n_streams = NSTREAMS as usize;
    let off = |i: usize| {
        let b = &blob[16 + 4 * i..20 + 4 * i];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
    };
    for i in 0..n_streams {
        let (a, end) = (off(i), off(i + 1));
        let w = &payload[a..a + 4];
        let mut x = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
        let mut pos = a + 4;
        let mut j = i as u64;
        while j < n {
            let s = step(t, &mut x, payload, &mut pos, end);
            #[allow(clippy::cast_possible_truncation)] // j < n ≤ 2 · out.len(), a usize.
            let k = (j / 2) as usize;
            out[k] |= s << ((j & 1) * 4);
            j += NSTREAMS as u64;
        }
    }
}

/// Checked decode of one stream (`in_size` bytes) to `n` nibbles, one per byte: the state
/// range, exact consumption and the final state are checked. Returns a `rans_err`.
///
/// # Safety
/// `in_buf` must point to `in_size` readable bytes, `out_nibbles` to `n` writable bytes; the
/// table pointers as for `rc_record_decode`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the reference's signature
pub unsafe extern "C" fn rc_stream_decode_checked(
    in_buf: *const u8,
    in_size: u64,
    n: u64,
    freq: *const u32,
    start: *const u32,
    slot_to_symbol: *const u16,
    scale_bits: u32,
    out_nibbles: *mut u8,
) -> i32 {
    guard_value(E_NOMEM, || {
        if in_size < 4 || in_buf.is_null() {
            return E_STREAM_UNDERRUN;
        }
        let Ok(size) = usize::try_from(in_size) else {
            return E_STREAM_UNDERRUN;
        };
        // SAFETY: non-null, and by the contract `in_size` readable bytes.
        let stream = unsafe { std::slice::from_raw_parts(in_buf, size) };
        if u32::from_be_bytes([stream[0], stream[1], stream[2], stream[3]]) < tetrad_rans::RANS_L {
            return E_STREAM_STATE_RANGE;
        }
        // SAFETY: the table pointers follow the caller contract.
        let t = match unsafe { table(freq, start, slot_to_symbol, scale_bits) } {
            Ok(t) => t,
            Err(e) => return e,
        };
        let Ok(n) = usize::try_from(n) else {
            return E_SCRATCH;
        };
        let out: &mut [u8] = if n == 0 {
            &mut []
        } else if out_nibbles.is_null() {
            return E_SCRATCH;
        } else {
            // SAFETY: non-null, and by the contract `n` writable bytes, disjoint from the
            // inputs.
            unsafe { std::slice::from_raw_parts_mut(out_nibbles, n) }
        };
        match tetrad_rans::decode_stream_checked(&t, stream, out) {
            Ok(()) => 0,
            Err(e) => code(e.class()),
        }
    })
}

/// The name of `rans_err` `|e|` (`"OK"`, `"E_TRUNCATED"`, …; `"E_UNKNOWN"` outside 0..=23),
/// static.
#[unsafe(no_mangle)]
pub extern "C" fn rc_err_name(e: i32) -> *const c_char {
    let i = e.unsigned_abs() as usize;
    ERR_NAMES.get(i).map_or(c"E_UNKNOWN".as_ptr(), |n| n.as_ptr())
}

/// The name of the path `path < 0` selects now (`"scalar"`, `"scalar_bf"`, `"neon"`,
/// `"avx512"`, or `"invalid"` when `RANS_PATH` forces an unknown or unavailable one), static.
#[unsafe(no_mangle)]
pub extern "C" fn rc_path_name() -> *const c_char {
    guard_value(c"invalid".as_ptr(), || {
        Path::select().map_or(c"invalid".as_ptr(), |p| p.name().as_ptr())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoi_is_c_atoi() {
        assert_eq!(atoi(b"0"), 0);
        assert_eq!(atoi(b"  12x"), 12);
        assert_eq!(atoi(b"-3"), -3);
        assert_eq!(atoi(b"no"), 0);
        assert_eq!(atoi(b""), 0);
    }

    #[test]
    fn names_are_the_reference_numbers() {
        assert_eq!(code("E_TRUNCATED"), 1);
        assert_eq!(code("E_NSTREAMS"), 11);
        assert_eq!(code("E_PATH_UNAVAILABLE"), 23);
        assert_eq!(code("E_SOMETHING_ELSE"), E_NOMEM);
    }

    #[test]
    fn bound_is_the_reference_formula() {
        assert_eq!(rc_record_bound(1, 256), 1056 + 256 * 70);
        assert_eq!(rc_record_bound(1, 255), 0);
        // It covers tetrad's own bound.
        for n in [1usize, 255, 256, 257, 10_000, 1 << 20] {
            assert!(rc_record_bound(n as u64, 256) >= tetrad_rans::max_record_len(n, 256) as u64);
        }
    }
}
