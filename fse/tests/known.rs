//! The known inputs: exact blobs where the spec fixes them, modes, bounds and
//! ratios elsewhere.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

mod common;

use common::{compress, gaussian_nibbles, random_bytes, round_trip};
use rand::{Rng, SeedableRng, rngs::StdRng};
use tetrad_fse::{
    EncodeError, Header, L, Mode, decode_into, encode_into, max_encoded_len, normalize,
};

fn raw_blob(src: &[u8]) -> Vec<u8> {
    let mut b = b"CFS1\x00".to_vec();
    b.extend_from_slice(&(src.len() as u32).to_le_bytes());
    b.extend_from_slice(src);
    b
}

#[test]
fn sixteen_distinct_bytes_are_raw() {
    let src: Vec<u8> = (0..16u8).map(|i| i * 0x11).collect();
    assert_eq!(round_trip(&src), raw_blob(&src));
}

#[test]
fn empty_input_is_a_nine_byte_raw_blob() {
    let blob = round_trip(&[]);
    assert_eq!(blob, b"CFS1\x00\x00\x00\x00\x00");
    assert_eq!(max_encoded_len(0), 73);
    let mut nothing: [u8; 0] = [];
    assert_eq!(decode_into(&blob, &mut nothing), Ok(0));
}

#[test]
fn one_byte_and_three_extreme_bytes_are_raw() {
    for src in [&[0x00u8][..], &[0xff], &[0x88], &[0x00, 0xff, 0x88], &[0xff, 0x00, 0x0f]] {
        assert_eq!(round_trip(src), raw_blob(src));
    }
}

#[test]
fn hundred_kb_of_one_symbol_is_the_49_byte_blob() {
    let src = vec![0x88u8; 100_000];
    let blob = round_trip(&src);
    let mut want = b"CFS1\x01".to_vec();
    want.extend_from_slice(&100_000u32.to_le_bytes());
    for s in 0..16 {
        want.extend_from_slice(&(if s == 8 { 4096u16 } else { 0 }).to_le_bytes());
    }
    want.extend_from_slice(&L.to_le_bytes());
    want.extend_from_slice(&L.to_le_bytes());
    assert_eq!(blob, want);
    assert_eq!(blob.len(), 49);
}

#[test]
fn one_symbol_switches_to_rans_exactly_above_40_bytes() {
    // 8 state bytes + 32 table bytes must be < n.
    assert_eq!(Header::parse(&round_trip(&[0x33; 40])).unwrap().mode, Mode::Raw);
    assert_eq!(Header::parse(&round_trip(&[0x33; 41])).unwrap().mode, Mode::Rans);
}

#[test]
fn two_symbols_code_near_one_bit_per_nibble() {
    let mut rng = StdRng::seed_from_u64(2);
    let src: Vec<u8> = (0..50_000)
        .map(|_| {
            let mut nib = || if rng.random::<f32>() < 0.3 { 0x3u8 } else { 0xc };
            nib() | nib() << 4
        })
        .collect();
    let blob = round_trip(&src);
    let h = Header::parse(&blob).unwrap();
    assert_eq!(h.mode, Mode::Rans);
    let freq: Vec<u16> =
        (0..16).map(|i| u16::from_le_bytes([blob[9 + 2 * i], blob[10 + 2 * i]])).collect();
    assert_eq!(freq.iter().filter(|&&f| f > 0).count(), 2);
    assert_eq!(u32::from(freq[3]) + u32::from(freq[12]), 4096);
    // H(0.3) = 0.8813 bits per nibble: 100 000 nibbles ≈ 11 016 bytes.
    let ideal = 100_000.0 * 0.8813 / 8.0;
    assert!((blob.len() as f64) < ideal * 1.01 + 49.0, "{} vs {ideal}", blob.len());
}

#[test]
fn one_megabyte_of_uniform_random_bytes_is_raw_and_never_longer_than_n_plus_9() {
    let src = random_bytes(1_000_000, 3);
    let blob = round_trip(&src);
    assert_eq!(Header::parse(&blob).unwrap().mode, Mode::Raw);
    assert_eq!(blob.len(), src.len() + 9);
}

#[test]
fn four_megabytes_of_gaussian_nibbles_reach_the_order0_limit() {
    let src = gaussian_nibbles(4 << 20, 4);
    let blob = round_trip(&src);
    let mut cnt = [0u64; 16];
    for &b in &src {
        cnt[usize::from(b & 15)] += 1;
        cnt[usize::from(b >> 4)] += 1;
    }
    let tot = 2.0 * src.len() as f64;
    let h: f64 =
        cnt.iter().filter(|&&c| c > 0).map(|&c| c as f64 / tot).map(|p| -p * p.log2()).sum();
    let ideal_bytes = tot * h / 8.0;
    let ratio = src.len() as f64 / blob.len() as f64;
    eprintln!(
        "4 MiB gaussian nibbles: entropy {h:.4} bits/nibble, blob {} bytes, ratio {ratio:.4} \
         (order-0 limit {:.4}), overhead over entropy {:.3} %",
        blob.len(),
        8.0 / (2.0 * h),
        100.0 * (blob.len() as f64 / ideal_bytes - 1.0)
    );
    assert_eq!(Header::parse(&blob).unwrap().mode, Mode::Rans);
    // A 12-bit table costs a little; within 0.5 % of the entropy.
    assert!((blob.len() as f64) < ideal_bytes * 1.005, "ratio {ratio}");
}

#[test]
fn four_hundred_random_sizes_round_trip_with_capacity_independent_output() {
    let mut rng = StdRng::seed_from_u64(5);
    let mut modes = [0usize; 2];
    for k in 0..400u64 {
        let n = rng.random_range(0..8192usize);
        let src = match k % 4 {
            0 => random_bytes(n, k),
            1 => gaussian_nibbles(n, k),
            2 => {
                // Few symbols, very skewed.
                (0..n).map(|_| if rng.random::<u8>() < 250 { 0x77 } else { rng.random() }).collect()
            }
            _ => {
                let a: u8 = rng.random();
                let b: u8 = rng.random();
                (0..n).map(|_| if rng.random() { a } else { b }).collect()
            }
        };
        let blob = round_trip(&src);
        let h = Header::parse(&blob).unwrap();
        modes[usize::from(h.mode == Mode::Rans)] += 1;
        let mut big = vec![0xeeu8; max_encoded_len(n) + rng.random_range(1..5000)];
        let len = encode_into(&src, &mut big).unwrap();
        assert_eq!(big[..len], blob[..], "n = {n}: output depends on capacity");
    }
    assert!(modes[0] > 50 && modes[1] > 50, "both modes exercised: {modes:?}");
}

#[test]
fn encoder_refuses_small_buffers_by_name() {
    let src = [1u8, 2, 3];
    let mut dst = [0u8; 75];
    let err = encode_into(&src, &mut dst).unwrap_err();
    assert_eq!(err, EncodeError::DstTooSmall { needed: 76, available: 75 });
    assert_eq!(err.class(), "E_DST_TOO_SMALL");
    assert_eq!(
        err.to_string(),
        "output buffer is 75 bytes, expected at least 76 (max_encoded_len)"
    );
}

#[test]
fn encoder_refuses_inputs_beyond_u32_rawlen() {
    // calloc'd and never touched: the length check comes first, so no page is faulted in.
    let huge = vec![0u8; (u32::MAX as usize) + 1];
    let mut dst = [0u8; 16];
    let err = encode_into(&huge, &mut dst).unwrap_err();
    assert_eq!(err, EncodeError::InputTooLarge { len: huge.len() });
    assert_eq!(err.class(), "E_INPUT_TOO_LARGE");
}

#[test]
fn normalisation_follows_the_big_rule() {
    // Floors: 4096·1/3 = 1365 each → sum 4095; the largest (ties: last present symbol
    // keeps it) gets the missing 1.
    let mut cnt = [0u64; 16];
    cnt[0] = 1;
    cnt[5] = 1;
    cnt[9] = 1;
    let f = normalize(&cnt).unwrap();
    assert_eq!((f[0], f[5], f[9]), (1365, 1365, 1366));
    // Strictly greater only: the first of several larger ones wins over the last present.
    let mut cnt = [0u64; 16];
    cnt[1] = 10;
    cnt[2] = 10;
    cnt[3] = 1;
    let f = normalize(&cnt).unwrap();
    // floor(40960/21) = 1950, 1950, floor(4096/21) = 195: sum 4095, +1 to symbol 1.
    assert_eq!((f[1], f[2], f[3]), (1951, 1950, 195));
    // Rare symbols are lifted to 1 and the excess is taken from the big one.
    let mut cnt = [0u64; 16];
    cnt[0] = 1_000_000;
    for c in &mut cnt[1..] {
        *c = 1;
    }
    let f = normalize(&cnt).unwrap();
    assert_eq!(f[1..], [1u16; 15]);
    assert_eq!(f[0], 4096 - 15);
    assert_eq!(normalize(&[0; 16]), None);
}

#[test]
fn compress_helper_matches_round_trip() {
    // The helper used by the other test files is the plain encoder.
    let src = gaussian_nibbles(5000, 9);
    assert_eq!(compress(&src), round_trip(&src));
}
