//! Property tests: round trip over adversarial distributions, garbage never panics, and the
//! output-buffer contract (what the decoder writes, on success and on every refusal) checked
//! by decoding into buffers prefilled with 0x00 and with 0xFF.
#![allow(clippy::cast_possible_truncation)]

mod common;

use common::compress;
use proptest::prelude::*;
use tetrad_fse::{DecodeError, Header, decode_into, encode_into, max_encoded_len};

/// Inputs with extreme distributions: arbitrary bytes, a few symbols, one symbol with rare
/// outliers, and sizes around the raw/rANS threshold (40 bytes) and the fast-block sizes.
fn inputs() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..3000),
        (proptest::collection::vec(any::<u8>(), 1..4), 0usize..3000).prop_flat_map(|(alpha, n)| {
            proptest::collection::vec(proptest::sample::select(alpha), n)
        }),
        (any::<u8>(), 0usize..5000, proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4))
            .prop_map(|(b, n, outliers)| {
                let mut v = vec![b; n];
                for (at, x) in outliers {
                    if n > 0 {
                        v[at % n] = x;
                    }
                }
                v
            }),
        (30usize..80).prop_flat_map(|n| proptest::collection::vec(0x70u8..0x90, n)),
    ]
}

/// Blobs that get past the header: a valid blob with a few bytes changed, cut or extended.
fn damaged_blobs() -> impl Strategy<Value = Vec<u8>> {
    (
        inputs(),
        proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        any::<usize>(),
        proptest::collection::vec(any::<u8>(), 0..6),
    )
        .prop_map(|(src, flips, cut, tail)| {
            let mut b = compress(&src);
            for (at, x) in flips {
                let at = at % b.len();
                b[at] ^= x;
            }
            if cut % 3 == 0 {
                b.truncate(cut % (b.len() + 1));
            } else if cut % 3 == 1 {
                b.extend_from_slice(&tail);
            }
            b
        })
}

/// The contract: Ok(n) writes exactly dst[..n]; header refusals write nothing; payload
/// refusals zero dst[..rawlen] and nothing else.
fn check_contract(blob: &[u8], cap: usize) -> Result<(), TestCaseError> {
    let mut results = Vec::new();
    for fill in [0x00u8, 0xff] {
        let mut dst = vec![fill; cap];
        let r = decode_into(blob, &mut dst);
        match r {
            Ok(n) => prop_assert!(dst[n..].iter().all(|&b| b == fill)),
            Err(e) if e.is_payload() => {
                let rawlen = Header::parse(blob).unwrap().len();
                prop_assert!(dst[..rawlen].iter().all(|&b| b == 0), "{e:?} left data");
                prop_assert!(dst[rawlen..].iter().all(|&b| b == fill));
            }
            Err(_) => prop_assert!(dst.iter().all(|&b| b == fill), "header refusal wrote"),
        }
        let written = match r {
            Ok(n) => dst[..n].to_vec(),
            Err(_) => Vec::new(),
        };
        results.push((r, written));
    }
    prop_assert_eq!(&results[0], &results[1]);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(src in inputs(), slack in 0usize..300) {
        let blob = compress(&src);
        prop_assert!(blob.len() <= src.len() + 9);
        let mut big = vec![0xa5u8; max_encoded_len(src.len()) + slack];
        let len = encode_into(&src, &mut big).unwrap();
        prop_assert_eq!(&big[..len], &blob[..]);
        let mut out = vec![0u8; src.len()];
        prop_assert_eq!(decode_into(&blob, &mut out), Ok(src.len()));
        prop_assert_eq!(out, src);
    }

    #[test]
    fn arbitrary_bytes_never_panic(blob in proptest::collection::vec(any::<u8>(), 0..200), cap in 0usize..300) {
        let mut dst = vec![0u8; cap];
        let _ = decode_into(&blob, &mut dst);
        let _ = Header::parse(&blob);
    }

    #[test]
    fn arbitrary_bytes_behind_a_valid_header_never_panic(
        n in 1u32..400,
        freq_seed in any::<u64>(),
        states in any::<(u32, u32)>(),
        payload in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        // A random table that sums to 4096, random states (≥ L half the time), random payload.
        let mut blob = b"CFS1\x01".to_vec();
        blob.extend_from_slice(&n.to_le_bytes());
        let mut left = 4096u32;
        let mut s = freq_seed;
        for i in 0..16 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let f = if i == 15 { left } else { ((s >> 33) as u32) % (left + 1) };
            left -= f;
            blob.extend_from_slice(&(f as u16).to_le_bytes());
        }
        blob.extend_from_slice(&(states.0 | 0x80_0000).to_le_bytes());
        blob.extend_from_slice(&(states.1 | 0x80_0000).to_le_bytes());
        blob.extend_from_slice(&payload);
        check_contract(&blob, n as usize + 8)?;
    }

    #[test]
    fn no_output_leak_on_damaged_blobs(blob in damaged_blobs(), extra in 0usize..40) {
        let cap = Header::parse(&blob).map_or(64, |h| h.len()) + extra;
        check_contract(&blob, cap)?;
    }
}

#[test]
fn payload_refusal_zeroes_exactly_rawlen() {
    let src: Vec<u8> = (0..3000u32).map(|i| (i % 7 + 5) as u8 | ((i % 5 + 6) as u8) << 4).collect();
    let blob = compress(&src);
    let mut dst = vec![0xffu8; src.len() + 10];
    let e = decode_into(&blob[..blob.len() - 1], &mut dst).unwrap_err();
    assert!(matches!(e, DecodeError::Truncated { .. }));
    assert!(dst[..src.len()].iter().all(|&b| b == 0));
    assert!(dst[src.len()..].iter().all(|&b| b == 0xff));
}
