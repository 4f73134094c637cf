//! `int4-rans64-t1` version 3 (16-bit states, `M = 256`, byte refills): round trips, every
//! arm against the scalar reference (valid and corrupt input), pieces of 64 bytes, every
//! refusal class of a version-3 chunk, and the size against version 2.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use proptest::prelude::*;
use rand::{Rng, SeedableRng, rngs::StdRng};
use tetrad_rans::rans64::{self, Blob, ChunkBody, ChunkDecoder, Error};

#[path = "support/blob_v2.rs"]
#[allow(dead_code)] // `to_version_1` serves the version-2 tests
mod blob_v2;

use blob_v2::reseal;

#[path = "support/rans64_data.rs"]
mod rans64_data;

use rans64_data::{arms, gaussian_int4};

fn encode3(src: &[u8], shift: u8) -> Vec<u8> {
    let mut blob = vec![0u8; rans64::max_encoded_len(src.len(), shift)];
    let len = rans64::encode_v3_into(src, shift, &mut blob).expect("encode");
    blob.truncate(len);
    assert_eq!(blob[4], rans64::VERSION_3);
    blob
}

/// Decodes with every arm; asserts they all agree (bytes or error) and returns the result.
fn decode_all(blob: &[u8], n: usize) -> Result<Vec<u8>, Error> {
    let mut reference: Option<Result<Vec<u8>, Error>> = None;
    for arm in arms() {
        let mut out = vec![0x5Au8; n];
        let got = rans64::decode_with(arm, blob, &mut out).map(|()| out);
        match &reference {
            None => reference = Some(got),
            Some(want) => assert_eq!(&got, want, "arm {arm} disagrees with scalar"),
        }
    }
    reference.expect("the scalar arm is always available")
}

fn class_of(blob: &[u8], n: usize) -> &'static str {
    decode_all(blob, n).unwrap_err().class()
}

/// The body offset of chunk 0 and its four way lengths in bytes.
fn way_lengths(blob: &[u8], n_chunks: usize) -> (usize, [usize; 4]) {
    let body = 16 + 12 * n_chunks;
    let mut w = [0usize; 4];
    for (i, wl) in w.iter_mut().enumerate() {
        let at = body + 16 + 4 * i;
        *wl = u32::from_le_bytes(blob[at..at + 4].try_into().unwrap()) as usize;
    }
    (body, w)
}

#[test]
fn round_trips_every_size_class_on_every_arm() {
    for &n in &[
        0usize, 1, 63, 64, 100, 127, 128, 129, 287, 288, 289, 300, 1000, 4095, 4096, 4097, 9000,
        70_000,
    ] {
        for (seed, row) in [(1u64, 64usize), (2, 4096)] {
            let src = gaussian_int4(n, row, seed + n as u64);
            for shift in [12u8, 14, 20] {
                let blob = encode3(&src, shift);
                assert_eq!(decode_all(&blob, n).unwrap(), src, "n {n} shift {shift}");
            }
        }
    }
}

#[test]
fn extreme_inputs_round_trip_on_every_arm() {
    let mut rng = StdRng::seed_from_u64(9);
    let cases: Vec<Vec<u8>> = vec![
        vec![0x88; 10_000],                                  // one symbol
        vec![0x00; 5000],                                    // one symbol, code 0
        vec![0xFF; 5000],                                    // one symbol, code 15
        (0..10_000).map(|i| (i * 37 % 256) as u8).collect(), // near uniform
        (0..10_000).map(|_| rng.random::<u8>()).collect(),   // uniform: stored raw
        (0..10_000).map(|i| if i % 997 == 0 { 0x0F } else { 0x88 }).collect(), // rare extremes
        (0..10_000).map(|i| if i % 2 == 0 { 0x01 } else { 0x10 }).collect(), // two symbols
    ];
    for src in cases {
        for shift in [12u8, 13] {
            let blob = encode3(&src, shift);
            assert_eq!(decode_all(&blob, src.len()).unwrap(), src);
        }
    }
}

#[test]
fn a_gaussian_chunk_is_coded_and_the_arms_run_rounds() {
    let src = gaussian_int4(1 << 16, 4096, 3);
    let blob = encode3(&src, 16);
    let parsed = Blob::parse(&blob).unwrap();
    assert_eq!(parsed.version(), 3);
    assert!(matches!(parsed.chunk(0).unwrap().body, ChunkBody::Coded3 { .. }));
    assert_eq!(decode_all(&blob, src.len()).unwrap(), src);
}

/// Version 3 costs at most 1.2 % over version 2 on Gaussian rows, and stays below 2.7 bits
/// per nibble there (about 2.62 for this data).
#[test]
fn size_against_version_2() {
    let src = gaussian_int4(1 << 20, 4096, 5);
    let v3 = encode3(&src, 20).len();
    let mut v2 = vec![0u8; rans64::max_encoded_len(src.len(), 20)];
    let v2 = rans64::encode_v2_into(&src, 20, &mut v2).unwrap();
    let ratio = v3 as f64 / v2 as f64;
    assert!(ratio > 1.0 && ratio < 1.012, "v3 {v3} v2 {v2}");
}

#[test]
fn pieces_of_64_bytes_equal_whole_decode() {
    let src = gaussian_int4(20_000, 100, 7);
    let blob = encode3(&src, 14);
    let parsed = Blob::parse(&blob).unwrap();
    for arm in arms() {
        let mut whole = vec![0u8; src.len()];
        rans64::decode_with(arm, &blob, &mut whole).unwrap();
        assert_eq!(whole, src);
        for piece in [64usize, 192, 256, 1024] {
            let mut out = vec![0u8; src.len()];
            let mut at = 0;
            for c in 0..parsed.n_chunks() {
                let mut d = ChunkDecoder::new_with(parsed.chunk(c).unwrap(), arm).unwrap();
                while d.remaining() > 0 {
                    let n = if d.remaining() <= piece { d.remaining() } else { piece };
                    d.decode_next(&mut out[at..at + n]).unwrap();
                    at += n;
                }
            }
            assert_eq!(out, src, "{arm} piece {piece}");
        }
    }
}

#[test]
fn every_refusal_class() {
    let src = gaussian_int4(8192, 128, 2);
    let good = encode3(&src, 12);
    assert_eq!(decode_all(&good, src.len()).unwrap(), src);
    let mut bad = good.clone();
    bad[4] = 4;
    assert_eq!(class_of(&bad, src.len()), "E_VERSION");
    assert_eq!(class_of(&good[..16 + 12 * 2 - 1], src.len()), "E_TRUNCATED");
    assert_eq!(class_of(&good[..good.len() - 1], src.len()), "E_TRUNCATED");
    let mut bad = good.clone();
    bad.push(0);
    assert_eq!(class_of(&bad, src.len()), "E_TRAILING");
    // Chunk sizes: a coded chunk shorter than version 3's 288-byte head, or exactly it.
    let v3 = |stored: u32| {
        let mut b = b"T4R1".to_vec();
        b.extend_from_slice(&[3, 12, 0, 0]);
        b.extend_from_slice(&4096u64.to_le_bytes());
        b.extend_from_slice(&stored.to_le_bytes());
        b.extend_from_slice(&[0; 8]);
        b.extend(std::iter::repeat_n(0u8, stored as usize));
        reseal(&mut b);
        b
    };
    assert_eq!(class_of(&v3(287), 4096), "E_CHUNK_SIZE");
    assert_eq!(class_of(&v3(4097), 4096), "E_CHUNK_SIZE");
    assert_eq!(class_of(&v3(288), 4096), "E_TABLE"); // all-zero frequencies
    // Checks.
    let chunk0 = 16 + 12 * 2;
    let mut bad = good.clone();
    bad[chunk0] ^= 1;
    assert!(matches!(decode_all(&bad, src.len()).unwrap_err(), Error::Checksum { chunk: 0, .. }));
    // Head: table (sum off by one), way lengths, state range.
    reseal(&mut bad);
    assert_eq!(class_of(&bad, src.len()), "E_TABLE");
    let mut bad = good.clone();
    bad[chunk0 + 16] ^= 1;
    reseal(&mut bad);
    assert_eq!(class_of(&bad, src.len()), "E_WAY_LENGTHS");
    let mut bad = good.clone();
    bad[chunk0 + 32 + 2 * 77 + 1] = 0; // lane 77's state < 256
    reseal(&mut bad);
    let err = decode_all(&bad, src.len()).unwrap_err();
    assert!(matches!(err, Error::StateRange { chunk: 0, lane: 77, .. }), "{err:?}");
    // Decode and seal: one byte moved from way 0 to way 1, a state changed, flipped bytes.
    let (body, w) = way_lengths(&good, 2);
    let mut bad = good.clone();
    let at = |w: usize| body + 16 + 4 * w;
    bad[at(0)..at(0) + 4].copy_from_slice(&(w[0] as u32 - 1).to_le_bytes());
    bad[at(1)..at(1) + 4].copy_from_slice(&(w[1] as u32 + 1).to_le_bytes());
    reseal(&mut bad);
    let class = class_of(&bad, src.len());
    assert!(["E_OVERRUN", "E_LEFTOVER", "E_FINAL_STATE"].contains(&class), "{class}");
    let mut seen = std::collections::BTreeSet::new();
    let mut rng = StdRng::seed_from_u64(12);
    for _ in 0..3000 {
        let mut bad = good.clone();
        let at = body + 288 + rng.random_range(0..w.iter().sum::<usize>());
        bad[at] ^= 1 << rng.random_range(0..8);
        reseal(&mut bad);
        match decode_all(&bad, src.len()) {
            Ok(out) => assert_ne!(out, src, "a flip that decodes to the original is impossible"),
            Err(e) => {
                seen.insert(e.class());
            }
        }
    }
    for class in ["E_FINAL_STATE", "E_OVERRUN"] {
        assert!(seen.contains(class), "{class} not seen: {seen:?}");
    }
    // One chunk: a byte added after way 3's last byte is left over; its last byte removed,
    // the way runs out.
    let src = gaussian_int4(4096, 128, 3);
    let one = encode3(&src, 12);
    let (body, w) = way_lengths(&one, 1);
    let resize = |delta: i64| {
        let mut b = one.clone();
        let stored = u32::from_le_bytes(b[16..20].try_into().unwrap()) as i64 + delta;
        b[16..20].copy_from_slice(&(stored as u32).to_le_bytes());
        let w3 = body + 16 + 12;
        b[w3..w3 + 4].copy_from_slice(&((w[3] as i64 + delta) as u32).to_le_bytes());
        if delta > 0 {
            b.push(0x5A)
        } else {
            b.pop();
        }
        reseal(&mut b);
        b
    };
    let err = decode_all(&resize(1), src.len()).unwrap_err();
    assert!(matches!(err, Error::Leftover { chunk: 0, way: 3, left: 1 }), "{err:?}");
    let err = decode_all(&resize(-1), src.len()).unwrap_err();
    assert!(matches!(err, Error::Overrun { chunk: 0, way: 3 }), "{err:?}");
}

#[test]
fn every_proper_prefix_is_refused() {
    let src = gaussian_int4(9000, 100, 6);
    let good = encode3(&src, 12);
    for cut in 0..good.len() {
        let err = decode_all(&good[..cut], src.len()).unwrap_err();
        assert!(["E_MAGIC", "E_TRUNCATED"].contains(&err.class()), "cut {cut}: {err:?}");
    }
}

/// Peaked bytes for the Miri test: mostly codes 7..=9, now and then any code.
fn miri_bytes(n: u32) -> Vec<u8> {
    (0..n)
        .map(|i| {
            let h = i.wrapping_mul(2_654_435_761);
            let lo =
                if h.is_multiple_of(61) { (h >> 8) as u8 & 15 } else { 7 + (h >> 20) as u8 % 3 };
            let hi =
                if h.is_multiple_of(53) { (h >> 12) as u8 & 15 } else { 7 + (h >> 24) as u8 % 3 };
            lo | (hi << 4)
        })
        .collect()
}

/// Small enough for Miri (`.ci/run` runs the `miri_` tests with the AVX-512 features on):
/// the version-3 kernels' loads, stores and lookups on a coded chunk of a few rounds.
#[test]
fn miri_v3_small_blob_every_arm() {
    let src = miri_bytes(1500);
    let blob = encode3(&src, 12);
    assert!(blob.len() < src.len(), "must be a coded chunk");
    for arm in arms() {
        let mut out = vec![0u8; src.len()];
        rans64::decode_with(arm, &blob, &mut out).unwrap();
        assert_eq!(out, src, "{arm}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn prop_round_trip(src in proptest::collection::vec(any::<u8>(), 0..20_000), shift in 12u8..=14) {
        let blob = encode3(&src, shift);
        prop_assert_eq!(decode_all(&blob, src.len()).unwrap(), src);
    }

    #[test]
    fn prop_peaked_round_trip(n in 0usize..30_000, seed in any::<u64>(), row in 1usize..300) {
        let src = gaussian_int4(n, row, seed);
        let blob = encode3(&src, 12);
        prop_assert_eq!(decode_all(&blob, n).unwrap(), src);
    }

    #[test]
    fn prop_corruption_same_result_on_every_arm(seed in any::<u64>(), flips in 1usize..8, resealed in any::<bool>()) {
        let src = gaussian_int4(6000, 64, seed);
        let mut blob = encode3(&src, 12);
        let mut rng = StdRng::seed_from_u64(seed);
        for _ in 0..flips {
            let at = rng.random_range(0..blob.len());
            blob[at] ^= 1 << rng.random_range(0..8);
        }
        if resealed {
            reseal(&mut blob);
        }
        let _ = decode_all(&blob, src.len());
    }
}
