//! Helpers shared by the fuzz targets: tables and records built from fuzzer bytes, and the
//! cross-arm decode oracle of `tetrad-rans`.
//!
//! Every helper turns *any* input into something valid (a table the codec accepts, nibbles the
//! table can code), so the targets spend their executions on the property under test instead
//! of on inputs the first check refuses.

use tetrad_rans::rans64;
use tetrad_rans::{
    Arm, DecodeError, Decoder, Record, SYMBOLS, Table, decode_record_threads, decode_record_with,
};

/// Decoded output larger than this is checked chunk by chunk in lock step across arms,
/// without [`Decoder::finish`] (a 4 KiB record can legally claim ~2^29 output bytes; decoding
/// all of it would make one execution take seconds).
pub const FULL_DECODE_LIMIT: u64 = 1 << 20;

/// Chunk of the lock-step decode of oversized records.
const CHUNK: usize = 1 << 16;

/// Scale bits `1..=15` from any byte.
pub fn scale_bits(b: u8) -> u32 {
    1 + u32::from(b) % 15
}

/// A valid table at `sb` scale bits from any histogram: symbols beyond the first `M` present
/// ones are dropped (so `E_TABLE_SYMBOLS` cannot happen), and an empty histogram codes only 8.
pub fn table_from_hist(sb: u32, hist: &[u16; SYMBOLS]) -> Table {
    let m = 1u64 << sb;
    let mut h = [0u64; SYMBOLS];
    let mut present = 0u64;
    for (d, &c) in h.iter_mut().zip(hist) {
        if c != 0 && present < m {
            *d = u64::from(c);
            present += 1;
        }
    }
    if present == 0 {
        h[8] = 1;
    }
    Table::from_histogram(sb, &h).expect("a histogram with 1..=M present symbols builds")
}

/// The codable symbols of `t`, in order.
pub fn codable(t: &Table) -> Vec<u8> {
    (0..16u8).filter(|&s| t.codable(s)).collect()
}

/// Maps arbitrary bytes to symbols `t` can code (`b mod count`-th codable symbol).
pub fn to_codable(t: &Table, bytes: &[u8]) -> Vec<u8> {
    let c = codable(t);
    bytes.iter().map(|&b| c[usize::from(b) % c.len()]).collect()
}

/// Decodes `rec` with every available arm, the resumable decoder in uneven chunks and the
/// threaded decoder (2 and 3 threads), and asserts that they agree byte for byte and error
/// for error; returns the scalar result (`Some(output)` on success, `None` when the record was
/// too large to decode fully, see [`FULL_DECODE_LIMIT`]).
pub fn decode_all_arms(t: &Table, rec: &Record<'_>) -> Result<Option<Vec<u8>>, DecodeError> {
    let packed = rec.packed_bytes();
    if packed > FULL_DECODE_LIMIT {
        lockstep_prefix(t, rec);
        return Ok(None);
    }
    #[allow(clippy::cast_possible_truncation)] // ≤ FULL_DECODE_LIMIT
    let packed = packed as usize;
    let mut want = vec![0u8; packed];
    let scalar = decode_record_with(Arm::Scalar, t, rec, &mut want);
    for &arm in Arm::ALL {
        if arm == Arm::Scalar {
            continue;
        }
        let mut got = vec![0xA5u8; packed];
        let r = decode_record_with(arm, t, rec, &mut got);
        if !arm.is_available() {
            assert_eq!(r, Err(DecodeError::Unavailable { arm }), "unavailable arm {arm} ran");
            continue;
        }
        assert_eq!(r, scalar, "arm {arm} result differs from scalar");
        // Arms run in lock step even on corrupt records (a stream with a bad initial state is
        // parked at L), so the bytes agree on refusals too.
        assert!(got == want, "arm {arm} output differs from scalar ({scalar:?})");
    }
    // The incremental decoder in uneven chunks must give the same bytes and verdict.
    let mut d = Decoder::new(Arm::best(), t, *rec).expect("best arm is available");
    let mut inc = vec![0u8; packed];
    let mut at = 0;
    let mut step = 1;
    while at < packed {
        let n = step.min(packed - at);
        d.decode_next(&mut inc[at..at + n]).expect("chunk within remaining");
        at += n;
        step = step * 3 + 1;
    }
    let fin = d.finish();
    assert_eq!(fin, scalar, "chunked decode verdict differs");
    if scalar.is_ok() {
        assert!(inc == want, "chunked decode output differs");
    }
    // Asking for more than remains is refused without decoding.
    assert!(matches!(d.decode_next(&mut [0u8; 1]), Err(DecodeError::OutputLen { .. })));
    // Several threads (streams split in pairs): the same verdict, the lowest faulty stream's
    // error, and on success the same bytes.
    for threads in [2, 3] {
        let mut par = vec![0x5Au8; packed];
        let r = decode_record_threads(Arm::best(), t, rec, &mut par, threads);
        assert_eq!(r, scalar, "decode_record_threads({threads}) verdict differs");
        if scalar.is_ok() {
            assert!(par == want, "decode_record_threads({threads}) output differs");
        }
    }
    scalar.map(|()| Some(want))
}

/// Oversized records: decode the first chunks with every arm in lock step and compare.
fn lockstep_prefix(t: &Table, rec: &Record<'_>) {
    let mut ds: Vec<Decoder<'_, '_>> = Arm::ALL
        .iter()
        .filter(|a| a.is_available())
        .map(|&a| Decoder::new(a, t, *rec).expect("available"))
        .collect();
    let mut bufs = vec![vec![0u8; CHUNK]; ds.len()];
    for _ in 0..2 {
        for (d, b) in ds.iter_mut().zip(bufs.iter_mut()) {
            d.decode_next(b).expect("chunk within remaining");
        }
        for (k, b) in bufs.iter().enumerate().skip(1) {
            assert!(b == &bufs[0], "arm {} differs on an oversized record", ds[k].arm());
        }
    }
    for d in &ds {
        assert!(matches!(d.finish(), Err(DecodeError::Incomplete { .. })));
    }
}

/// Unpacks `n` nibbles (low nibble first) from packed bytes.
pub fn unpack(packed: &[u8], n: usize) -> Vec<u8> {
    (0..n).map(|j| (packed[j / 2] >> ((j & 1) * 4)) & 0xF).collect()
}

/// Packed byte `k` of a matrix whose nibbles cycle through `nibbles` (non-empty): byte `k`
/// holds nibbles `2k` (low) and `2k + 1` (high), taken modulo the cycle.
pub fn cyclic_byte(nibbles: &[u8], k: usize) -> u8 {
    nibbles[(2 * k) % nibbles.len()] | nibbles[(2 * k + 1) % nibbles.len()] << 4
}

/// `n` activations in `[−0.5, 0.5)` from a linear congruential generator seeded by `seed`.
pub fn lcg_activations(seed: u32, n: usize) -> Vec<f32> {
    let mut st = seed;
    (0..n)
        .map(|_| {
            st = st.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (st >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        })
        .collect()
}

/// The decode arm paired with the `k`-th kernel ISA, the pairing rotating with `seed >> 8`:
/// the sanitizer-instrumented decode is most of an adapter run's time, so a run decodes once
/// per ISA instead of once per pair, and across inputs every pair still meets.
pub fn rotating_arm<A: Copy>(arms: &[A], k: usize, seed: u32) -> A {
    arms[(k + (seed >> 8) as usize) % arms.len()]
}

/// Whether two float slices are the same length and equal bit for bit (NaN payloads and the
/// sign of zero included).
pub fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Asserts that a refusal class is a spec-style name.
pub fn assert_class(class: &str) {
    assert!(
        class.starts_with("E_")
            && class.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
        "bad refusal class {class:?}"
    );
}

/// The little-endian `u32` at `at`, if the bytes are there.
pub fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Rewrites the chunk checks of a version-2 or version-3 `int4-rans64-t1` blob (the same index
/// and check layout) from its (possibly damaged) header and index, where they are still in the
/// blob, so that damage to a chunk reaches the head parser, the decoders and the seal instead
/// of stopping at `E_CHECKSUM`.
pub fn reseal_rans64(b: &mut [u8]) {
    if b.len() < rans64::HEADER_LEN || (b[4] != rans64::VERSION_2 && b[4] != rans64::VERSION_3) {
        return;
    }
    let n = u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
    let Some(k) =
        n.checked_shr(u32::from(b[5])).map(|q| q + u64::from(n % (1u64 << (b[5] % 64)) != 0))
    else {
        return;
    };
    if k > 1 << 16 {
        return;
    }
    let k = k as usize;
    let checks = rans64::HEADER_LEN + 4 * k;
    let mut at = checks + 8 * k;
    for c in 0..k {
        let Some(stored) = le_u32(b, rans64::HEADER_LEN + 4 * c) else { return };
        let Some(end) = at.checked_add(stored as usize) else { return };
        let Some(body) = b.get(at..end) else { return };
        let check = rans64::chunk_check(body);
        if b.len() < checks + 8 * c + 8 {
            return;
        }
        b[checks + 8 * c..checks + 8 * c + 8].copy_from_slice(&check.to_le_bytes());
        at = end;
    }
}
