//! Shared helpers of the integration tests: seeded data generators and a one-call round trip.
#![allow(dead_code, clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Normal};
use tetrad_fse::{decode_into, encode_into, max_encoded_len};

/// Bell-shaped int4 codes: rows of 4096 weights from a Gaussian with a per-row spread drawn
/// over a factor of two, rounded to 16 levels centred on 8 (like per-row int4 quantization).
pub(crate) fn gaussian_nibbles(bytes: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    let unit = Normal::new(0.0f32, 1.0).unwrap();
    let mut out = Vec::with_capacity(bytes);
    let mut spread = 1.0f32;
    for i in 0..bytes {
        if i % 2048 == 0 {
            spread = 1.2 + 1.3 * rng.random::<f32>();
        }
        let mut q = || ((unit.sample(&mut rng) * spread).round().clamp(-8.0, 7.0) + 8.0) as u8;
        out.push(q() | q() << 4);
    }
    out
}

/// Uniform random bytes.
pub(crate) fn random_bytes(bytes: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..bytes).map(|_| rng.random()).collect()
}

/// Encodes into a bound-sized buffer and returns the blob.
pub(crate) fn compress(src: &[u8]) -> Vec<u8> {
    let mut blob = vec![0u8; max_encoded_len(src.len())];
    let len = encode_into(src, &mut blob).expect("bound-sized buffer");
    blob.truncate(len);
    blob
}

/// Encodes, checks the size bound and the round trip, returns the blob.
pub(crate) fn round_trip(src: &[u8]) -> Vec<u8> {
    let blob = compress(src);
    assert!(blob.len() <= src.len() + 9, "blob {} > n + 9 = {}", blob.len(), src.len() + 9);
    let mut out = vec![0x5au8; src.len()];
    assert_eq!(decode_into(&blob, &mut out), Ok(src.len()));
    assert!(out == src, "round trip differs (n = {})", src.len());
    blob
}
