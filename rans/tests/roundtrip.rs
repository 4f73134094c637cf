//! Round trips over sizes, stream counts, tables (incl. adversarial ones) and chunked decode.
#![allow(clippy::cast_possible_truncation)]

mod common;

use common::*;
use tetrad_rans::stream::step;
use tetrad_rans::{
    Decoder, EncodeError, Nibbles, RANS_L, Record, Table, decode_record_with,
    decode_stream_checked, encode_record, encode_stream, max_record_len, max_stream_len,
};

const SIZES: [usize; 12] = [0, 1, 2, 3, 5, 16, 255, 256, 257, 1000, 4096, 100_003];

/// Weight-like nibbles: a discretised Laplace-ish peak at 8, code 0 absent.
fn weightlike(n: usize, seed: u64) -> Vec<u8> {
    let hist = [0u64, 6, 9, 16, 30, 60, 120, 220, 300, 220, 120, 60, 30, 16, 9, 6];
    let t = Table::from_histogram(14, &hist).unwrap();
    sample(&t, n, seed)
}

fn hist_of(sym: &[u8]) -> [u64; 16] {
    let mut h = [0u64; 16];
    for &s in sym {
        h[usize::from(s)] += 1;
    }
    h
}

/// Encodes `sym` as a record of `n_streams`, decodes it with every arm (whole and in chunks),
/// and checks the single-stream codec on the same symbols. Returns the record length.
fn roundtrip(t: &Table, sym: &[u8], n_streams: usize) -> usize {
    // Single stream.
    let mut dst = vec![0u8; max_stream_len(sym.len(), t.scale_bits())];
    let len = encode_stream(t, sym, &mut dst).unwrap();
    let mut back = vec![0u8; sym.len()];
    decode_stream_checked(t, &dst[dst.len() - len..], &mut back).unwrap();
    assert_eq!(back, sym, "single stream");
    if sym.is_empty() {
        let err = encode_record(t, Nibbles::Unpacked(sym), n_streams, &mut dst).unwrap_err();
        assert_eq!(err, EncodeError::Empty);
        return 0;
    }
    // Record.
    let mut rec = vec![0u8; max_record_len(sym.len(), n_streams)];
    let len = encode_record(t, Nibbles::Unpacked(sym), n_streams, &mut rec).unwrap();
    assert_eq!(len % 16, 0);
    // An exactly sized buffer suffices, one byte less does not.
    let mut exact = vec![0u8; len];
    assert_eq!(encode_record(t, Nibbles::Unpacked(sym), n_streams, &mut exact), Ok(len));
    assert_eq!(exact, rec[..len]);
    let mut short = vec![0u8; len - 1];
    let err = encode_record(t, Nibbles::Unpacked(sym), n_streams, &mut short).unwrap_err();
    assert_eq!(err.class(), "E_SCRATCH");
    let r = Record::parse_streams(&rec[..len], n_streams).unwrap();
    assert_eq!(r.n_symbols(), sym.len() as u64);
    let want = pack(sym);
    for &arm in &arms() {
        let mut out = vec![0xA5u8; want.len()];
        decode_record_with(arm, t, &r, &mut out).unwrap_or_else(|e| panic!("{arm}: {e}"));
        assert_eq!(out, want, "{arm} N = {n_streams} n = {}", sym.len());
        // Chunked: odd chunk sizes cross round boundaries.
        for chunk in [1usize, 7, 128, 1000] {
            let mut d = Decoder::new(arm, t, r).unwrap();
            let mut out = vec![0x5Au8; want.len()];
            for c in out.chunks_mut(chunk) {
                d.decode_next(c).unwrap();
            }
            d.finish().unwrap();
            assert_eq!(out, want, "{arm} chunk {chunk}");
        }
    }
    len
}

#[test]
fn sizes_uniform_and_matched_tables() {
    let uniform = Table::from_freq(14, &[1024; 16]).unwrap();
    for &n in &SIZES {
        let sym = sample(&uniform, n, n as u64);
        roundtrip(&uniform, &sym, 256);
        let sym = weightlike(n, 7 + n as u64);
        if n > 0 {
            let matched = Table::from_histogram(14, &hist_of(&sym)).unwrap();
            let len = roundtrip(&matched, &sym, 256);
            if n == 100_003 {
                // Near the order-0 entropy: the matched table must compress well below 4 bits.
                assert!(len < 100_003 * 3 / 8 + 4096, "len {len}");
            }
        }
    }
}

#[test]
fn stream_counts_including_odd() {
    let sym = weightlike(5000, 3);
    let t = Table::from_histogram(14, &hist_of(&sym)).unwrap();
    for n_streams in [1, 2, 3, 7, 8, 16, 24, 32, 100, 255, 256] {
        roundtrip(&t, &sym, n_streams);
        roundtrip(&t, &sym[..n_streams.min(4999) + 1], n_streams);
    }
}

#[test]
fn packed_input_matches_unpacked() {
    let sym = weightlike(4096, 11);
    let t = Table::from_histogram(14, &hist_of(&sym)).unwrap();
    let mut a = vec![0u8; max_record_len(4096, 256)];
    let mut b = a.clone();
    let la = encode_record(&t, Nibbles::Unpacked(&sym), 256, &mut a).unwrap();
    let lb = encode_record(&t, Nibbles::Packed(&pack(&sym)), 256, &mut b).unwrap();
    assert_eq!(a[..la], b[..lb]);
}

#[test]
fn single_symbol_table() {
    let mut f = [0u32; 16];
    f[8] = 1 << 14;
    let t = Table::from_freq(14, &f).unwrap();
    let sym = vec![8u8; 3000];
    let mut dst = [0u8; 8];
    let len = encode_stream(&t, &sym, &mut dst).unwrap();
    assert_eq!(&dst[8 - len..], &[0x00, 0x80, 0x00, 0x00]);
    let len = roundtrip(&t, &sym, 256);
    assert_eq!(len, 1056 + 1024, "every stream is exactly the 4 state bytes");
    // Single symbol at the extreme scales too.
    for sb in [1, 15] {
        let mut f = [0u32; 16];
        f[3] = 1 << sb;
        roundtrip(&Table::from_freq(sb, &f).unwrap(), &[3; 999], 8);
    }
}

#[test]
fn fifteen_symbol_table_refuses_code_zero() {
    let sym = weightlike(2000, 5);
    let t = Table::from_histogram(14, &hist_of(&sym)).unwrap();
    assert_eq!(t.freq()[0], 0);
    roundtrip(&t, &sym, 256);
    let mut bad = sym.clone();
    bad[1234] = 0;
    let mut dst = vec![0xEEu8; max_record_len(2000, 256)];
    let err = encode_record(&t, Nibbles::Unpacked(&bad), 256, &mut dst).unwrap_err();
    assert_eq!(err, EncodeError::SymbolUncodable { index: 1234, symbol: 0 });
    assert!(dst.iter().all(|&b| b == 0xEE), "nothing written before the refusal");
    let packed = pack(&bad);
    let err = encode_record(&t, Nibbles::Packed(&packed), 256, &mut dst).unwrap_err();
    assert_eq!(err, EncodeError::SymbolUncodable { index: 1234, symbol: 0 });
    let err = encode_stream(&t, &[8, 16], &mut dst).unwrap_err();
    assert_eq!(err.class(), "E_SYMBOL_UNCODABLE");
}

#[test]
fn skewed_and_small_scale_tables() {
    // Skewed: one symbol takes almost everything.
    let mut f = [1u32; 16];
    f[8] = (1 << 14) - 15;
    let t = Table::from_freq(14, &f).unwrap();
    roundtrip(&t, &sample(&t, 20_000, 1), 256);
    roundtrip(&t, &weightlike(20_000, 2), 256); // mismatched statistics still round-trip
    // Scale bits 6 (vectors), 1, 12 (CFS1-style) and 15.
    for (sb, seed) in [(6u32, 3u64), (1, 4), (12, 5), (15, 6)] {
        let m = 1u32 << sb;
        let mut f = [0u32; 16];
        for (s, v) in f.iter_mut().enumerate().take(m.min(16) as usize) {
            *v = 1 + u32::from(s == 0) * (m - m.min(16));
        }
        let t = Table::from_freq(sb, &f).unwrap();
        let sym: Vec<u8> =
            (0..4000u64).map(|i| (Rng(seed + i).below(u64::from(m.min(16)))) as u8).collect();
        roundtrip(&t, &sym, 16);
    }
}

#[test]
fn rare_symbol_table_exercises_two_byte_refills() {
    let m = 1u32 << 14;
    let mut f = [0u32; 16];
    f[1..8].fill(1);
    f[8..15].fill(3);
    f[15] = m - 28;
    let t = Table::from_freq(14, &f).unwrap();
    // Every codable symbol equally often: the rare ones cost 14 bits each.
    let mut rng = Rng(99);
    let sym: Vec<u8> = (0..50_000).map(|_| 1 + rng.below(15) as u8).collect();
    roundtrip(&t, &sym, 256);
    let mut dst = vec![0u8; max_stream_len(sym.len(), 14)];
    let len = encode_stream(&t, &sym, &mut dst).unwrap();
    let stream = &dst[dst.len() - len..];
    let (mut x, mut pos, mut two, mut one) =
        (u32::from_be_bytes(stream[..4].try_into().unwrap()), 4, 0, 0);
    for &s in &sym {
        let before = pos;
        assert_eq!(step(&t, &mut x, stream, &mut pos, stream.len()), s);
        match pos - before {
            2 => two += 1,
            1 => one += 1,
            0 => {}
            k => panic!("{k} bytes in one refill"),
        }
    }
    assert_eq!((x, pos), (RANS_L, stream.len()));
    let share = f64::from(two) / sym.len() as f64;
    println!(
        "rare-symbol table: 2-byte refills on {two} of {} steps ({:.1}%), 1-byte on {one}",
        sym.len(),
        100.0 * share
    );
    assert!(share > 0.01, "2-byte refill share {share}");
    // The vector stream with this table also round-trips (checked in vectors.rs); the
    // arms agree on this record above.
}

#[test]
fn realistic_megabyte_all_arms() {
    let sym = weightlike(1 << 21, 42);
    let t = Table::from_histogram(14, &hist_of(&sym)).unwrap();
    let packed = pack(&sym);
    let mut rec = vec![0u8; max_record_len(sym.len(), 256)];
    let len = encode_record(&t, Nibbles::Packed(&packed), 256, &mut rec).unwrap();
    let r = Record::parse(&rec[..len]).unwrap();
    for &arm in &arms() {
        let mut out = vec![0u8; packed.len()];
        decode_record_with(arm, &t, &r, &mut out).unwrap();
        assert!(out == packed, "{arm}");
    }
}

#[test]
fn stream_bound_holds_for_the_costliest_symbols() {
    // Symbols of frequency 1 cost the full sb bits each: the tightest case of the bound
    // ceil(c·sb/8) + 4 that the interleaved record encoder sizes its regions by.
    for sb in [1u32, 6, 12, 14, 15] {
        let m = 1u32 << sb;
        let mut f = [0u32; 16];
        f[0] = 1;
        f[15] = 1;
        f[7] = m - 2;
        let t = Table::from_freq(sb, &f).unwrap();
        for c in [1usize, 2, 3, 7, 100, 1001, 65_537] {
            for pattern in 0..if sb == 1 { 2 } else { 3u64 } {
                let sym: Vec<u8> = (0..c as u64)
                    .map(|k| match pattern {
                        0 => 15,
                        1 => {
                            if k % 2 == 0 {
                                0
                            } else {
                                15
                            }
                        }
                        _ => {
                            if Rng(k).below(8) == 0 {
                                7
                            } else {
                                15
                            }
                        }
                    })
                    .collect();
                let mut dst = vec![0u8; max_stream_len(c, sb)];
                let len = encode_stream(&t, &sym, &mut dst)
                    .unwrap_or_else(|e| panic!("sb {sb} c {c} pattern {pattern}: {e}"));
                let mut out = vec![0u8; c];
                decode_stream_checked(&t, &dst[dst.len() - len..], &mut out).unwrap();
                assert_eq!(out, sym);
            }
        }
    }
}
