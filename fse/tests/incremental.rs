//! The incremental decoder against `decode_into`: for every blob (valid, damaged,
//! hostile) and every split of the output into random piece sizes, the pieces concatenate to
//! exactly what `decode_into` writes, and the first error is exactly its error, met at the
//! piece that covers the failing byte (the seal: at the piece with the last byte).
#![allow(clippy::cast_possible_truncation)]

mod common;

use common::{compress, gaussian_nibbles};
use proptest::prelude::*;
use tetrad_fse::{DecodeError, DecodeTable, Decoder, Header, decode_into};

/// Outcome of decoding `blob` in pieces of the sizes `cuts` cycles through: the bytes
/// produced and the first error (with the output offset at which its piece started).
fn in_pieces(blob: &[u8], cuts: &[usize]) -> Result<Vec<u8>, (DecodeError, usize)> {
    let mut table = DecodeTable::new();
    let mut dec = Decoder::new(&mut table, blob).map_err(|e| (e, 0))?;
    let mut out = Vec::new();
    let mut k = 0;
    while dec.remaining() > 0 {
        let want = cuts[k % cuts.len()];
        k += 1;
        let mut piece = vec![0xA5u8; want];
        let at = dec.position();
        match dec.decode_next(&mut piece) {
            Ok(n) => {
                assert_eq!(n, want.min(dec.remaining() + n));
                assert!(piece[n..].iter().all(|&b| b == 0xA5), "wrote past the piece");
                out.extend_from_slice(&piece[..n]);
            }
            Err(e) => {
                let n = want.min(dec.remaining());
                assert!(piece[..n].iter().all(|&b| b == 0), "unzeroed bytes after {e}");
                // Poisoned: the same error again, nothing written.
                let mut again = [0x5Au8; 4];
                assert_eq!(dec.decode_next(&mut again), Err(e));
                assert_eq!(again, [0x5A; 4]);
                assert!(!dec.is_finished());
                return Err((e, at));
            }
        }
    }
    assert!(dec.is_finished());
    let mut more = [0u8; 3];
    assert_eq!(dec.decode_next(&mut more), Ok(0));
    Ok(out)
}

fn same_as_whole(blob: &[u8], cuts: &[usize]) -> Result<(), TestCaseError> {
    let Ok(h) = Header::parse(blob) else {
        let e = Header::parse(blob).unwrap_err();
        prop_assert_eq!(in_pieces(blob, cuts).map_err(|(e, _)| e), Err(e));
        return Ok(());
    };
    // Hostile headers may claim up to 4 GiB; only blobs the test can afford are compared.
    if h.len() > 1 << 20 {
        return Ok(());
    }
    let mut whole = vec![0u8; h.len()];
    let r = decode_into(blob, &mut whole);
    match (r, in_pieces(blob, cuts)) {
        (Ok(n), Ok(out)) => {
            prop_assert_eq!(n, out.len());
            prop_assert_eq!(&whole[..], &out[..]);
        }
        (Err(e), Err((f, at))) => {
            prop_assert_eq!(e, f);
            match e {
                DecodeError::Truncated { at: byte } => prop_assert!(at <= byte),
                // The seal is checked by the piece holding the last byte.
                _ => prop_assert!(at < h.len()),
            }
        }
        (a, b) => prop_assert!(false, "whole {a:?} vs pieces {b:?}"),
    }
    Ok(())
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(prop_oneof![1usize..4, 1usize..40, 15usize..18, 0usize..3000], 1..6)
        .prop_filter("at least one non-empty piece", |v| v.iter().any(|&c| c > 0))
}

fn sources() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (0usize..6000, any::<u64>()).prop_map(|(n, seed)| gaussian_nibbles(n, seed)),
        proptest::collection::vec(any::<u8>(), 0..600),
        (1usize..3000).prop_map(|n| vec![0x88; n]),
        (30usize..80).prop_flat_map(|n| proptest::collection::vec(0x70u8..0x90, n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn pieces_equal_decode_into(src in sources(), cuts in cuts()) {
        let blob = compress(&src);
        same_as_whole(&blob, &cuts)?;
        prop_assert_eq!(in_pieces(&blob, &cuts).unwrap(), src);
    }

    #[test]
    fn damaged_pieces_equal_decode_into(
        src in sources(),
        cuts in cuts(),
        flips in proptest::collection::vec((any::<usize>(), 1u8..=255), 0..3),
        cut in 0usize..6,
        tail in proptest::collection::vec(any::<u8>(), 0..4),
    ) {
        let mut blob = compress(&src);
        for &(at, x) in &flips {
            let n = blob.len();
            blob[at % n] ^= x;
        }
        same_as_whole(&blob, &cuts)?;
        same_as_whole(&blob[..blob.len().saturating_sub(cut)], &cuts)?;
        blob.extend_from_slice(&tail);
        same_as_whole(&blob, &cuts)?;
    }

    #[test]
    fn garbage_pieces_equal_decode_into(
        body in proptest::collection::vec(any::<u8>(), 0..400),
        rawlen in 0u32..2000,
        mode in 0u8..3,
        cuts in cuts(),
    ) {
        let mut blob = b"CFS1".to_vec();
        blob.push(mode);
        blob.extend_from_slice(&rawlen.to_le_bytes());
        blob.extend_from_slice(&body);
        same_as_whole(&blob, &cuts)?;
    }
}

/// Every piece size from 1 to 70 (around the 16-pair fast block and its 72-byte window) on a
/// 64 KiB int4-like blob, and a seal failure met by a one-byte last piece.
#[test]
fn every_small_piece_size() {
    let src = gaussian_nibbles(64 << 10, 11);
    let blob = compress(&src);
    assert_eq!(Header::parse(&blob).unwrap().mode, tetrad_fse::Mode::Rans);
    for size in 1..=70 {
        assert_eq!(in_pieces(&blob, &[size]).unwrap(), src, "piece size {size}");
    }
    // A final state that is not L: only the piece holding the last byte can see it.
    let mut bad = blob.clone();
    bad[41] ^= 1; // state A's low byte: decodes, then fails the seal
    let mut whole = vec![0u8; src.len()];
    let e = decode_into(&bad, &mut whole).unwrap_err();
    let (f, at) = in_pieces(&bad, &[src.len() - 1, 1]).unwrap_err();
    assert_eq!((f, at), (e, src.len() - 1));
    assert!(matches!(f, DecodeError::FinalState { .. } | DecodeError::Leftover { .. }), "{f}");
}

/// A raw blob is handed out piece by piece too.
#[test]
fn raw_blob_in_pieces() {
    let src: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let blob = compress(&src);
    assert_eq!(Header::parse(&blob).unwrap().mode, tetrad_fse::Mode::Raw);
    assert_eq!(in_pieces(&blob, &[7, 300, 1]).unwrap(), src);
    let empty = compress(&[]);
    let mut t = DecodeTable::new();
    let d = Decoder::new(&mut t, &empty).unwrap();
    assert!(d.is_finished());
}
