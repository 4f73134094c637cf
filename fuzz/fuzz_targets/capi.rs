//! The byte entry points of libtetrad's C ABI (`capi/`), called as C calls them, on hostile
//! bytes: colibrì's bridge (`rc_record_parse`, `rc_record_decode`, `rc_record_encode`,
//! `rc_stream_decode_checked`, `rc_err_name`) and the codecs on caller buffers (CFS1,
//! `int4-rans64-t1`). Properties: nothing panics and no call reports an internal error
//! (`TETRAD_PANIC`, or the bridge's `E_NOMEM`); every result is the Rust API's, class for class
//! and byte for byte; the bridge's decode gives the same bytes on every available path, those
//! of the checked decode when the record is genuine, and `E_PATH_UNAVAILABLE` on the others.
//!
//! The library's source is compiled into this target as a module (`#[path]`), so the calls
//! are the exported functions themselves, through raw pointers and lengths.
//!
//! Input: byte 0 picks the mode (`% 6`), the rest is read per mode:
//! 0. a record blob: parse, then decode on every path with a fixed table;
//! 1. `[sb, hist u16×16 LE, n u16]` + nibbles → a record encoded by the bridge (compared with
//!    `encode_record`), then up to 8 `(offset u16, xor u8)` byte flips, then parse and decode;
//! 2. `[sb, hist u16×16 LE, n u16]` + a stream for the checked stream decode;
//! 3. `[sb, flags, freq u16×16 LE, start u16×16 LE]` + slot bytes: the bridge's table checks
//!    against `Table::from_parts`, through `rc_record_encode`;
//! 4. `[capacity selector]` + a CFS1 blob: `tetrad_cfs1_decoded_len`, `tetrad_cfs1_decompress`;
//! 5. `[shift selector]` + bytes: an `int4-rans64-t1` blob decoded as it is, and the bytes
//!    round-tripped through both codecs' encoders.
#![no_main]

extern crate tetrad as tetrad_engine;

#[allow(dead_code, missing_docs, unreachable_pub, clippy::all)]
#[path = "../../capi/src/lib.rs"]
mod capi;

use std::ffi::CStr;
use std::sync::OnceLock;

use capi::codecs::*;
use capi::colibri::*;
use capi::error::tetrad_last_class;
use capi::ffi::{STATUS_OK, STATUS_REFUSED};
use libfuzzer_sys::fuzz_target;
use tetrad_fuzz::{table_from_hist, to_codable};
use tetrad_rans::{Arm, Nibbles, ParseOrder, Record, Table};

/// Decoded sizes above this are only parsed.
const DECODE_LIMIT: u64 = 1 << 20;

const NAMES: [&str; 24] = [
    "OK",
    "E_TRUNCATED",
    "E_EMPTY",
    "E_COUNT_MISMATCH",
    "E_OVERSIZE",
    "E_OFFSET_FIRST",
    "E_OFFSETS_MONOTONIC",
    "E_STREAM_SHORT",
    "E_LENGTH_MISMATCH",
    "E_PAD_NONZERO",
    "E_UNALIGNED",
    "E_NSTREAMS",
    "E_TABLE_SCALE",
    "E_TABLE_FREQ_SUM",
    "E_TABLE_START",
    "E_TABLE_SLOT",
    "E_STREAM_STATE_RANGE",
    "E_STREAM_UNDERRUN",
    "E_STREAM_LEFTOVER",
    "E_STREAM_FINAL_STATE",
    "E_SYMBOL_UNCODABLE",
    "E_SCRATCH",
    "E_NOMEM",
    "E_PATH_UNAVAILABLE",
];

fn name(code: i64) -> &'static str {
    assert!((0..=23).contains(&code.abs()), "rans_err {code} out of range");
    assert_ne!(code.abs(), 22, "the bridge reported an internal error");
    let n = NAMES[code.unsigned_abs() as usize];
    // SAFETY: rc_err_name returns a static NUL-terminated string.
    let c = unsafe { CStr::from_ptr(rc_err_name(code as i32)) };
    assert_eq!(c.to_str().unwrap(), n);
    n
}

fn last_class() -> String {
    // SAFETY: tetrad_last_class returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(tetrad_last_class()) }.to_str().unwrap().to_owned()
}

/// The status of a `tetrad_*` call against the Rust result: OK, or refused with its class.
fn check_status<T, E: std::fmt::Debug>(
    st: i32,
    rust: &Result<T, E>,
    class: impl Fn(&E) -> &'static str,
) {
    match rust {
        Ok(_) => assert_eq!((st, last_class().as_str()), (STATUS_OK, "OK")),
        Err(e) => assert_eq!((st, last_class()), (STATUS_REFUSED, class(e).to_owned()), "{e:?}"),
    }
}

/// A 4-byte aligned copy of `b` (the bridge refuses unaligned records).
fn aligned(b: &[u8]) -> Vec<u32> {
    let mut w = vec![0u32; b.len().div_ceil(4) + 1];
    for (k, &v) in b.iter().enumerate() {
        w[k / 4] |= u32::from(v) << (8 * (k % 4));
    }
    w
}

struct Parts {
    sb: u32,
    freq: [u32; 16],
    start: [u32; 16],
    slots: Vec<u16>,
}

fn parts(t: &Table) -> Parts {
    Parts { sb: t.scale_bits(), freq: *t.freq(), start: *t.start(), slots: t.slots_u16().collect() }
}

fn fixed_table() -> &'static Parts {
    static T: OnceLock<Parts> = OnceLock::new();
    T.get_or_init(|| {
        let hist = [1, 2, 4, 9, 20, 60, 200, 900, 2000, 900, 200, 60, 20, 9, 4, 2];
        parts(&Table::from_histogram(14, &hist).unwrap())
    })
}

fn path_arm_available(path: i32) -> bool {
    match path {
        0 | 1 => true,
        2 => Arm::Neon.is_available(),
        3 => Arm::Avx512.is_available() || Arm::Avx512Vbmi.is_available(),
        _ => false,
    }
}

/// Parses with the bridge, compares with `Record::parse_streams_in_order`, and decodes on every path.
fn parse_and_decode(blob: &[u8], p: &Parts) {
    let words = aligned(blob);
    let ptr = words.as_ptr().cast::<u8>();
    let (mut ns, mut pb) = (0u64, 0u64);
    // SAFETY: `ptr` holds `blob.len()` readable bytes; the out-pointers are valid.
    let rc = unsafe { rc_record_parse(ptr, blob.len() as u64, 256, &mut ns, &mut pb) };
    let rust = Record::parse_streams_in_order(blob, 256, ParseOrder::Codec);
    let expected = rust.as_ref().map_or_else(|e| e.class(), |_| "OK");
    assert_eq!(name(i64::from(rc)), expected);
    if blob.len() > 1 {
        // SAFETY: one byte in, still inside the buffer.
        let rc = unsafe {
            rc_record_parse(
                ptr.add(1),
                blob.len() as u64 - 1,
                256,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(name(i64::from(rc)), "E_UNALIGNED");
    }
    let Ok(record) = rust else { return };
    assert_eq!((ns, pb), (record.n_symbols(), record.packed_bytes()));
    if pb > DECODE_LIMIT {
        return;
    }
    let t = Table::from_parts(p.sb, &p.freq, &p.start, &p.slots).unwrap();
    let mut checked = vec![0u8; pb as usize];
    let genuine = tetrad_rans::decode_record_with(Arm::Scalar, &t, &record, &mut checked).is_ok();
    let mut first: Option<Vec<u8>> = None;
    for path in [-1, 0, 1, 2, 3, 4] {
        let mut out = vec![0xA5u8; pb as usize];
        // SAFETY: the blob and table arrays are readable at their lengths; `out` holds
        // `packed_bytes` writable bytes.
        let rc = unsafe {
            rc_record_decode(
                ptr,
                blob.len() as u64,
                256,
                p.freq.as_ptr(),
                p.start.as_ptr(),
                p.slots.as_ptr(),
                p.sb,
                path,
                out.as_mut_ptr(),
            )
        };
        if path >= 0 && !path_arm_available(path) {
            assert_eq!(name(i64::from(rc)), "E_PATH_UNAVAILABLE", "path {path}");
            continue;
        }
        assert_eq!(name(i64::from(rc)), "OK", "path {path}");
        if genuine {
            assert_eq!(out, checked, "path {path}");
        }
        match &first {
            None => first = Some(out),
            Some(f) => assert_eq!(&out, f, "path {path} differs from the selected path"),
        }
    }
}

fn table_from(u: &[u8]) -> (Table, &[u8]) {
    let sb = tetrad_fuzz::scale_bits(u.first().copied().unwrap_or(0));
    let mut hist = [0u16; 16];
    for (k, h) in hist.iter_mut().enumerate() {
        *h = u16::from_le_bytes([
            u.get(1 + 2 * k).copied().unwrap_or(0),
            u.get(2 + 2 * k).copied().unwrap_or(0),
        ]);
    }
    (table_from_hist(sb, &hist), u.get(33..).unwrap_or(&[]))
}

fn mode_encode(data: &[u8]) {
    let (t, rest) = table_from(data);
    let p = parts(&t);
    let n = usize::from(u16::from_le_bytes([
        rest.first().copied().unwrap_or(1),
        rest.get(1).copied().unwrap_or(0),
    ]));
    let rest = rest.get(2..).unwrap_or(&[]);
    let src: Vec<u8> = rest.iter().cycle().take(n).copied().collect();
    let nib = to_codable(&t, &src);
    let cap = rc_record_bound(nib.len() as u64, 256) as usize;
    let mut out = vec![0u8; cap];
    // SAFETY: every pointer covers its length.
    let rc = unsafe {
        rc_record_encode(
            nib.as_ptr(),
            nib.len() as u64,
            p.freq.as_ptr(),
            p.start.as_ptr(),
            p.slots.as_ptr(),
            p.sb,
            256,
            out.as_mut_ptr(),
            cap as u64,
        )
    };
    let mut want = vec![0u8; tetrad_rans::max_record_len(nib.len(), 256)];
    match tetrad_rans::encode_record(&t, Nibbles::Unpacked(&nib), 256, &mut want) {
        Ok(len) => {
            assert_eq!(rc, len as i64);
            assert_eq!(out[..len], want[..len]);
            out.truncate(len);
        }
        Err(e) => {
            assert_eq!(name(rc), e.class());
            return;
        }
    }
    // Damage: (offset u16, xor u8) triples after the nibbles.
    let flips = rest.get(n.min(rest.len())..).unwrap_or(&[]);
    for f in flips.chunks_exact(3).take(8) {
        let at = usize::from(u16::from_le_bytes([f[0], f[1]])) % out.len();
        out[at] ^= f[2];
    }
    parse_and_decode(&out, &p);
}

fn mode_stream(data: &[u8]) {
    let (t, rest) = table_from(data);
    let p = parts(&t);
    let n = usize::from(u16::from_le_bytes([
        rest.first().copied().unwrap_or(0),
        rest.get(1).copied().unwrap_or(0),
    ])) % 4096;
    let stream = rest.get(2..).unwrap_or(&[]);
    let mut out = vec![0u8; n];
    let mut want = vec![0u8; n];
    // SAFETY: every pointer covers its length (`out` is `n` bytes).
    let rc = unsafe {
        rc_stream_decode_checked(
            stream.as_ptr(),
            stream.len() as u64,
            n as u64,
            p.freq.as_ptr(),
            p.start.as_ptr(),
            p.slots.as_ptr(),
            p.sb,
            out.as_mut_ptr(),
        )
    };
    let rust = tetrad_rans::decode_stream_checked(&t, stream, &mut want);
    assert_eq!(name(i64::from(rc)), rust.map_or_else(|e| e.class(), |()| "OK"));
    if rc == 0 {
        assert_eq!(out, want);
    }
}

fn mode_table(data: &[u8]) {
    let sb = u32::from(data.first().copied().unwrap_or(0) % 17);
    let flags = data.get(1).copied().unwrap_or(0);
    let word = |k: usize| {
        u32::from(u16::from_le_bytes([
            data.get(k).copied().unwrap_or(0),
            data.get(k + 1).copied().unwrap_or(0),
        ]))
    };
    let mut freq: [u32; 16] = std::array::from_fn(|s| word(2 + 2 * s));
    if flags & 1 != 0 && (1..=15).contains(&sb) {
        // Scale the frequencies to sum to M, so the later checks are reached.
        let m = 1u32 << sb;
        let total: u32 = freq.iter().sum::<u32>().max(1);
        for f in &mut freq {
            *f = *f * m / total;
        }
        let short = m - freq.iter().sum::<u32>();
        freq[8] += short;
    }
    let mut start: [u32; 16] = std::array::from_fn(|s| word(34 + 2 * s));
    if flags & 2 != 0 {
        let mut acc = 0;
        for s in 0..16 {
            start[s] = acc;
            acc += freq[s];
        }
    }
    let m = if (1..=15).contains(&sb) { 1usize << sb } else { 1 };
    let raw = data.get(66..).unwrap_or(&[]);
    let mut slots: Vec<u16> = (0..m)
        .map(|k| u16::from(raw.get(k % raw.len().max(1)).copied().unwrap_or(0)) % 17)
        .collect();
    if flags & 4 != 0 {
        // The canonical slots of these bands (where they are bands), then one edit.
        let mut k = 0;
        for s in 0..16 {
            for _ in 0..freq[s] {
                if k == m {
                    break;
                }
                slots[k] = s as u16;
                k += 1;
            }
        }
        if flags & 8 != 0 && m > 1 {
            let at = usize::from(flags) % m;
            slots[at] = (slots[at] + 1) % 16;
        }
    }
    let expected = if (1..=15).contains(&sb) {
        Table::from_parts(sb, &freq, &start, &slots).map_or_else(|e| e.class(), |_| "OK")
    } else {
        "E_TABLE_SCALE"
    };
    let nib = [8u8; 3];
    let mut out = vec![0u8; rc_record_bound(3, 256) as usize];
    // SAFETY: every pointer covers its length (`slots` holds M entries).
    let rc = unsafe {
        rc_record_encode(
            nib.as_ptr(),
            3,
            freq.as_ptr(),
            start.as_ptr(),
            slots.as_ptr(),
            sb,
            256,
            out.as_mut_ptr(),
            out.len() as u64,
        )
    };
    if expected == "OK" {
        // Symbol 8 may be absent from a valid table.
        assert!(rc > 0 || name(rc) == "E_SYMBOL_UNCODABLE", "{}", name(rc));
    } else {
        assert_eq!(name(rc), expected);
    }
}

fn mode_cfs1(data: &[u8]) {
    let sel = data.first().copied().unwrap_or(0);
    let blob = data.get(1..).unwrap_or(&[]);
    let header = tetrad_fse::Header::parse(blob);
    let mut raw = 0u64;
    // SAFETY: `blob` covers its length; `raw` is writable.
    let st = unsafe { tetrad_cfs1_decoded_len(blob.as_ptr(), blob.len(), &mut raw) };
    check_status(st, &header, |e| e.class());
    let rawlen = header.map_or(256, |h| u64::from(h.rawlen));
    if rawlen > DECODE_LIMIT {
        return;
    }
    let cap = if sel & 0x80 != 0 {
        rawlen as usize
    } else {
        (rawlen as usize).saturating_sub(usize::from(sel & 7))
    };
    let (mut out, mut want) = (vec![0x11u8; cap + 8], vec![0x11u8; cap + 8]);
    let mut written = usize::MAX;
    // SAFETY: `out` holds `cap` writable bytes (and more); `written` is writable.
    let st = unsafe {
        tetrad_cfs1_decompress(blob.as_ptr(), blob.len(), out.as_mut_ptr(), cap, &mut written)
    };
    let rust = tetrad_fse::decode_into(blob, &mut want[..cap]);
    check_status(st, &rust, |e| e.class());
    if let Ok(n) = rust {
        assert_eq!(written, n);
        assert_eq!(out[..n], want[..n]);
    }
    assert!(out[cap..].iter().all(|&b| b == 0x11), "bytes past dst_cap touched");
}

fn mode_rans64(data: &[u8]) {
    let sel = data.first().copied().unwrap_or(0);
    let bytes = data.get(1..).unwrap_or(&[]);
    let parsed = tetrad_rans::rans64::Blob::parse(bytes).map(|b| b.n_bytes());
    let mut n = 0u64;
    // SAFETY: `bytes` covers its length; `n` is writable.
    let st = unsafe { tetrad_rans64_decoded_len(bytes.as_ptr(), bytes.len(), &mut n) };
    check_status(st, &parsed, |e| e.class());
    if let Ok(len) = parsed
        && len <= DECODE_LIMIT
    {
        let len = len as usize - usize::from(sel & 1).min(len as usize);
        let (mut out, mut want) = (vec![0u8; len], vec![0u8; len]);
        // SAFETY: `out` holds `len` writable bytes.
        let st =
            unsafe { tetrad_rans64_decode(bytes.as_ptr(), bytes.len(), out.as_mut_ptr(), len) };
        let rust = tetrad_rans::rans64::decode_into(bytes, &mut want);
        check_status(st, &rust, |e| e.class());
        if rust.is_ok() {
            assert_eq!(out, want);
        }
    }
    // Round trips of the bytes through both encoders.
    let shift = 12 + u32::from(sel >> 1) % 15;
    let cap = tetrad_rans64_bound(bytes.len(), shift);
    let mut blob = vec![0u8; cap];
    let mut w = 0usize;
    // SAFETY: every pointer covers its length.
    let st = unsafe {
        tetrad_rans64_encode(bytes.as_ptr(), bytes.len(), shift, blob.as_mut_ptr(), cap, &mut w)
    };
    assert_eq!(st, STATUS_OK, "{}", last_class());
    let mut back = vec![0u8; bytes.len()];
    // SAFETY: every pointer covers its length.
    let st = unsafe { tetrad_rans64_decode(blob.as_ptr(), w, back.as_mut_ptr(), back.len()) };
    assert_eq!((st, &back[..]), (STATUS_OK, bytes));
    let cap = tetrad_cfs1_bound(bytes.len());
    let mut blob = vec![0u8; cap];
    // SAFETY: every pointer covers its length.
    let st = unsafe {
        tetrad_cfs1_compress(bytes.as_ptr(), bytes.len(), blob.as_mut_ptr(), cap, &mut w)
    };
    assert_eq!(st, STATUS_OK, "{}", last_class());
    assert!(w <= bytes.len() + 9);
    // SAFETY: every pointer covers its length.
    let st = unsafe {
        tetrad_cfs1_decompress(
            blob.as_ptr(),
            w,
            back.as_mut_ptr(),
            back.len(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!((st, &back[..]), (STATUS_OK, bytes));
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    match mode % 6 {
        0 => parse_and_decode(rest, fixed_table()),
        1 => mode_encode(rest),
        2 => mode_stream(rest),
        3 => mode_table(rest),
        4 => mode_cfs1(rest),
        _ => mode_rans64(rest),
    }
});
