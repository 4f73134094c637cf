//! Damaged blobs: every refusal class by a blob built to trigger exactly it, every proper
//! prefix of a 64 KB-input blob refused, and random single-byte corruptions of a mode-1 blob
//! counted (wrong data accepted at most twice in 2000).
#![allow(clippy::cast_possible_truncation)]

mod common;

use common::{gaussian_nibbles, round_trip};
use rand::{Rng, SeedableRng, rngs::StdRng};
use tetrad_fse::{DecodeError, Header, Mode, decode_into};

/// A mode-1 blob for 4 KiB of bell-shaped nibbles.
fn rans_blob() -> (Vec<u8>, Vec<u8>) {
    let src = gaussian_nibbles(4096, 11);
    let blob = round_trip(&src);
    assert_eq!(Header::parse(&blob).unwrap().mode, Mode::Rans);
    (src, blob)
}

fn class(blob: &[u8], cap: usize) -> &'static str {
    let mut out = vec![0u8; cap];
    decode_into(blob, &mut out).map_or_else(|e| e.class(), |_| "OK")
}

#[test]
fn every_refusal_class_is_triggered_by_exactly_its_fault() {
    let (src, blob) = rans_blob();
    let n = src.len();
    assert_eq!(class(&blob, n), "OK");
    // Header stage, in check order.
    assert_eq!(class(&blob[..8], n), "E_SHORT");
    let mut b = blob.clone();
    b[3] = b'2';
    assert_eq!(class(&b, n), "E_MAGIC");
    assert_eq!(class(&blob, n - 1), "E_CAPACITY");
    assert_eq!(class(b"CFS1\x00\x02\x00\x00\x00\x07", 2), "E_RAW_LENGTH");
    assert_eq!(class(b"CFS1\x00\x02\x00\x00\x00\x07\x08\x09", 2), "E_RAW_LENGTH");
    let mut b = blob.clone();
    b[4] = 2;
    assert_eq!(class(&b, n), "E_MODE");
    let mut b = blob.clone();
    b[5..9].fill(0);
    assert_eq!(class(&b, n), "E_EMPTY_RANS");
    assert_eq!(class(&blob[..48], n), "E_SHORT_RANS");
    let mut b = blob.clone();
    b[9] ^= 1;
    assert_eq!(class(&b, n), "E_FREQ_SUM");
    // Moving one unit between two frequencies keeps the sum: not a framing error.
    let mut b = blob.clone();
    let f0 = u16::from_le_bytes([b[9], b[10]]);
    let f8 = u16::from_le_bytes([b[25], b[26]]);
    b[9..11].copy_from_slice(&(f0 + 1).to_le_bytes());
    b[25..27].copy_from_slice(&(f8 - 1).to_le_bytes());
    assert_ne!(class(&b, n), "E_FREQ_SUM");
    let mut b = blob.clone();
    b[41..45].copy_from_slice(&0x7f_ffffu32.to_le_bytes());
    assert_eq!(class(&b, n), "E_STATE_RANGE");
    let mut b = blob.clone();
    b[45..49].copy_from_slice(&0x7f_ffffu32.to_le_bytes());
    let mut out = vec![0u8; n];
    assert_eq!(
        decode_into(&b, &mut out),
        Err(DecodeError::StateRange { which: 'B', state: 0x7f_ffff })
    );
    // Payload stage.
    assert_eq!(class(&blob[..blob.len() - 1], n), "E_TRUNCATED");
    let mut b = blob.clone();
    b.push(0);
    assert_eq!(class(&b, n), "E_LEFTOVER");
    // The single-symbol blob with a state that is valid but not L: nothing moves it back.
    let mut one = round_trip(&[0x44; 100]);
    one[41..45].copy_from_slice(&0x80_0001u32.to_le_bytes());
    let mut out = [0u8; 100];
    assert_eq!(
        decode_into(&one, &mut out),
        Err(DecodeError::FinalState { a: 0x80_0001, b: 0x80_0000 })
    );
}

#[test]
fn errors_display_got_and_expected() {
    let mut out = [0u8; 4];
    let e = decode_into(b"CFS", &mut out).unwrap_err();
    assert_eq!(e.to_string(), "blob is 3 bytes, expected at least 9 (the header)");
    let e = decode_into(b"CFS2\x00\x00\x00\x00\x00", &mut out).unwrap_err();
    assert_eq!(e.to_string(), "magic is [43, 46, 53, 32], expected \"CFS1\" (43 46 53 31)");
    let e = decode_into(b"CFS1\x07\x00\x00\x00\x00", &mut out).unwrap_err();
    assert_eq!(e.to_string(), "mode byte is 7, expected 0 (raw) or 1 (rans)");
}

#[test]
fn every_proper_prefix_of_a_64k_blob_is_refused() {
    let src = gaussian_nibbles(64 << 10, 12);
    let blob = round_trip(&src);
    assert_eq!(Header::parse(&blob).unwrap().mode, Mode::Rans);
    // O(len²) work (each prefix decodes until its bytes run out): spread over the cores.
    let threads = std::thread::available_parallelism().map_or(2, usize::from).min(4);
    let mut classes = std::collections::BTreeMap::new();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (blob, n) = (&blob, src.len());
                scope.spawn(move || {
                    let mut out = vec![0u8; n];
                    let mut classes = std::collections::BTreeMap::new();
                    for len in (t..blob.len()).step_by(threads) {
                        let e = decode_into(&blob[..len], &mut out)
                            .expect_err("a proper prefix must not decode");
                        *classes.entry(e.class()).or_insert(0usize) += 1;
                    }
                    classes
                })
            })
            .collect();
        for w in workers {
            for (k, v) in w.join().unwrap() {
                *classes.entry(k).or_insert(0usize) += v;
            }
        }
    });
    eprintln!("{} prefixes of a {}-byte blob: {classes:?}", blob.len(), blob.len());
    assert_eq!(classes["E_SHORT"], 9);
    assert_eq!(classes["E_SHORT_RANS"], 49 - 9);
    assert_eq!(classes.get("E_TRUNCATED").copied().unwrap_or(0), blob.len() - 49);
}

#[test]
fn random_single_byte_corruptions_almost_never_decode_to_wrong_data() {
    let src = gaussian_nibbles(16 << 10, 13);
    let blob = round_trip(&src);
    assert_eq!(Header::parse(&blob).unwrap().mode, Mode::Rans);
    let mut rng = StdRng::seed_from_u64(14);
    let mut out = vec![0u8; src.len() + 64];
    let (mut wrong, mut refused) = (0usize, std::collections::BTreeMap::new());
    for _ in 0..2000 {
        let mut b = blob.clone();
        let at = rng.random_range(0..b.len());
        b[at] ^= rng.random_range(1..=255u8);
        match decode_into(&b, &mut out) {
            Ok(n) => {
                // Only rawlen changes could alter n; either way it is wrong unless identical.
                if n != src.len() || out[..n] != src[..] {
                    wrong += 1;
                }
            }
            Err(e) => *refused.entry(e.class()).or_insert(0usize) += 1,
        }
    }
    eprintln!("2000 single-byte corruptions: {wrong} decoded to wrong data; refused {refused:?}");
    assert!(wrong <= 2, "{wrong} corruptions decoded to wrong data");
}
