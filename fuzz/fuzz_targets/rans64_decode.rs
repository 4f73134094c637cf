//! `int4-rans64-t1` blobs from hostile bytes: `Blob::parse` + decode return `Ok` or a named
//! refusal, never panic; every available decode arm gives exactly what the scalar reference
//! gives (the same bytes, or the same error, field for field); so do the resumable
//! `ChunkDecoder` fed in uneven pieces and `decode_threads`; a wrong output length is refused
//! alike by every arm; `ChunkDecoder::decode_next_pair` over neighbouring chunks gives exactly
//! what `decode_next` on each gives (bytes, results, progress).
//!
//! Input: byte 0 picks the mode. Even: the rest is the blob itself. Odd: a valid blob (version
//! 2, or version 3 when bit 1 is set; the head mutations then land on version 3's fields) is built
//! from arbitrary bytes (mapped onto a peaked nibble distribution so most chunks are coded,
//! chunk shift 12..=14, i.e. several chunks), checked to decode back on every arm, and then
//! damaged by a list of structured mutations (header and index fields, chunk-head fields:
//! frequencies, way lengths, states; truncation, garbage tails, bit flips), after which the
//! chunk checks are rewritten or not (one input bit): rewritten, the damage reaches the head
//! parser, the decoders and the seal; not, it must be refused (`E_CHECKSUM` or earlier).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use tetrad_fuzz::{assert_class, le_u32, reseal_rans64};
use tetrad_rans::rans64::{self, Arm, Blob, ChunkDecoder};

/// Decoded sizes above this are only parsed (keeps each input fast; the size bound itself is
/// the parser's job and is exercised regardless).
const DECODE_LIMIT: u64 = 1 << 22;

#[derive(Debug, Arbitrary)]
enum Mutation {
    /// Overwrite the little-endian u64 byte count.
    Count(u64),
    /// Overwrite byte 4..8 (version, shift, reserved).
    HeaderByte(u8, u8),
    /// Overwrite index entry `i` (u32).
    Index(u8, u32),
    /// Add a small delta to index entry `i`.
    IndexDelta(u8, i8),
    /// Overwrite u16 at offset `k` inside chunk `c`'s head (frequencies / way lengths).
    HeadU16 { c: u8, k: u16, v: u16 },
    /// Overwrite the state of lane `lane` of chunk `c`.
    State { c: u8, lane: u8, v: u32 },
    /// Truncate to this fraction (/256) of the length.
    Truncate(u8),
    /// Append garbage.
    Tail(Vec<u8>),
    /// Flip any bit.
    Flip(u16, u8),
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    if let Some(d) = b.get_mut(at..at + v.len()) {
        d.copy_from_slice(v);
    }
}

/// Offset of chunk `c`'s stored bytes, from the (possibly damaged) index.
fn chunk_at(blob: &[u8], n_chunks: usize, c: usize) -> Option<usize> {
    let mut at = rans64::HEADER_LEN + 12 * n_chunks;
    for k in 0..c {
        at = at.checked_add(le_u32(blob, rans64::HEADER_LEN + 4 * k)? as usize)?;
    }
    Some(at)
}

fn mutate(blob: &mut Vec<u8>, n_chunks: usize, m: &Mutation) {
    let nc = n_chunks.max(1);
    match m {
        Mutation::Count(v) => put(blob, 8, &v.to_le_bytes()),
        Mutation::HeaderByte(k, v) => put(blob, 4 + usize::from(*k % 4), &[*v]),
        Mutation::Index(i, v) => {
            put(blob, rans64::HEADER_LEN + 4 * (usize::from(*i) % nc), &v.to_le_bytes());
        }
        Mutation::IndexDelta(i, d) => {
            let at = rans64::HEADER_LEN + 4 * (usize::from(*i) % nc);
            if let Some(v) = le_u32(blob, at) {
                put(blob, at, &v.wrapping_add_signed(i32::from(*d)).to_le_bytes());
            }
        }
        Mutation::HeadU16 { c, k, v } => {
            if let Some(at) = chunk_at(blob, n_chunks, usize::from(*c) % nc) {
                let k = usize::from(*k) % (rans64::CHUNK_HEAD_LEN - 1);
                put(blob, at + k, &v.to_le_bytes());
            }
        }
        Mutation::State { c, lane, v } => {
            if let Some(at) = chunk_at(blob, n_chunks, usize::from(*c) % nc) {
                let lane = usize::from(*lane) % rans64::LANES;
                put(blob, at + 48 + 4 * lane, &v.to_le_bytes());
            }
        }
        Mutation::Truncate(f) => {
            let n = blob.len() * usize::from(*f) / 256;
            blob.truncate(n);
        }
        Mutation::Tail(t) => blob.extend_from_slice(&t[..t.len().min(64)]),
        Mutation::Flip(at, bit) => {
            if !blob.is_empty() {
                let at = usize::from(*at) % blob.len();
                blob[at] ^= 1 << (bit % 8);
            }
        }
    }
}

/// `decode_next_pair` on chunks `(0, 1), (2, 3), …` in pieces of `pa` and `pb` rounds against
/// `decode_next` on copies of the same decoders: the same results, progress and bytes.
fn check_pairs(parsed: &Blob<'_>, pa: usize, pb: usize) {
    for ca in (0..parsed.n_chunks().saturating_sub(1)).step_by(2) {
        let (Ok(a), Ok(b)) = (parsed.chunk(ca), parsed.chunk(ca + 1)) else { continue };
        let (Ok(mut xa), Ok(mut xb)) =
            (ChunkDecoder::new_with(a, Arm::best()), ChunkDecoder::new_with(b, Arm::best()))
        else {
            continue;
        };
        let (mut ya, mut yb) = (xa.clone(), xb.clone());
        let (na, nb) = (xa.remaining(), xb.remaining());
        let (mut oa, mut ob, mut wa, mut wb) =
            (vec![0u8; na], vec![0u8; nb], vec![0u8; na], vec![0u8; nb]);
        let (mut at_a, mut at_b) = (0, 0);
        for _ in 0..(na + nb) / rans64::LANES + 4 {
            if at_a == na && at_b == nb {
                break;
            }
            let ta = (pa * rans64::LANES).min(na - at_a);
            let tb = (pb * rans64::LANES).min(nb - at_b);
            let got = ChunkDecoder::decode_next_pair(
                &mut xa,
                &mut oa[at_a..at_a + ta],
                &mut xb,
                &mut ob[at_b..at_b + tb],
            );
            let want = (
                ya.decode_next(&mut wa[at_a..at_a + ta]),
                yb.decode_next(&mut wb[at_b..at_b + tb]),
            );
            assert_eq!(
                got,
                want,
                "decode_next_pair differs from decode_next, chunks {ca}, {}",
                ca + 1
            );
            assert_eq!((xa.remaining(), xb.remaining()), (ya.remaining(), yb.remaining()));
            if got.0.is_err() || got.1.is_err() {
                break;
            }
            at_a += ta;
            at_b += tb;
        }
        assert_eq!(oa[..at_a], wa[..at_a]);
        assert_eq!(ob[..at_b], wb[..at_b]);
    }
}

fn arms() -> impl Iterator<Item = Arm> {
    Arm::ALL.iter().copied().filter(|a| a.is_available())
}

/// Every decode path against the scalar reference. Returns the decoded bytes when accepted.
fn check(blob: &[u8], piece: usize) -> Option<Vec<u8>> {
    let parsed = match Blob::parse(blob) {
        Ok(b) => b,
        Err(e) => {
            assert_class(e.class());
            // Every arm refuses the same way (parse happens before any arm-specific code).
            for arm in arms() {
                assert_eq!(rans64::decode_with(arm, blob, &mut []).err(), Some(e), "{arm}");
            }
            return None;
        }
    };
    if parsed.n_bytes() > DECODE_LIMIT {
        return None;
    }
    let n = usize::try_from(parsed.n_bytes()).expect("small");
    let mut want = vec![0u8; n];
    let reference = rans64::decode_with(Arm::Scalar, blob, &mut want);
    if let Err(e) = reference {
        assert_class(e.class());
    }
    for arm in arms() {
        let mut got = vec![0xA5u8; n];
        let r = rans64::decode_with(arm, blob, &mut got);
        assert_eq!(r, reference, "{arm} disagrees with scalar on acceptance or refusal");
        if r.is_ok() {
            assert_eq!(got, want, "{arm} decodes different bytes");
        }
        // A wrong output length is refused by every arm, before any decode.
        let mut wrong = vec![0u8; n + 1];
        let r = rans64::decode_with(arm, blob, &mut wrong);
        assert_eq!(r.map_err(|e| e.class()), Err("E_OUTPUT_LENGTH"), "{arm}");
    }
    // The resumable per-chunk decoder in pieces of `piece` rounds: same bytes, same first
    // error (in chunk order).
    let mut pieces = vec![0u8; n];
    let mut first_err = None;
    'chunks: for (c, chunk) in parsed.chunks().enumerate() {
        let r = parsed.chunk_range(c);
        let dst = &mut pieces[r.start as usize..r.end as usize];
        let chunk = match chunk {
            Ok(ch) => ch,
            Err(e) => {
                first_err = Some(e);
                break;
            }
        };
        let mut dec = ChunkDecoder::new_with(chunk, Arm::best()).expect("best is available");
        let mut at = 0;
        while at < dst.len() {
            let take = (piece * rans64::LANES).min(dst.len() - at);
            if let Err(e) = dec.decode_next(&mut dst[at..at + take]) {
                first_err = Some(e);
                break 'chunks;
            }
            at += take;
        }
    }
    match (reference, first_err) {
        (Ok(()), None) => assert_eq!(pieces, want, "piecewise decode differs"),
        (Err(e), Some(f)) => assert_eq!(e, f, "piecewise decode refuses differently"),
        (r, f) => panic!("piecewise decode disagrees: reference {r:?}, pieces {f:?}"),
    }
    check_pairs(&parsed, piece, piece % 3 + 1);
    for threads in [2, 3] {
        let mut got = vec![0u8; n];
        let r = rans64::decode_threads(blob, &mut got, threads);
        assert_eq!(r, reference, "decode_threads({threads})");
        if r.is_ok() {
            assert_eq!(got, want);
        }
    }
    reference.ok().map(|()| want)
}

/// Maps arbitrary bytes onto a peaked int4 distribution (mostly 6..=10, rare extremes).
fn peaked(raw: &[u8]) -> Vec<u8> {
    let nib = |v: u8| if v < 12 { v & 15 } else { 6 + v % 5 };
    raw.iter().map(|&b| nib(b & 0x3F) | nib(b >> 2 & 0x3F) << 4).collect()
}

fn run(data: &[u8]) -> arbitrary::Result<()> {
    let mut u = Unstructured::new(data);
    let mode: u8 = u.arbitrary()?;
    let piece = usize::from(u.arbitrary::<u8>()? % 8) + 1;
    if mode & 1 == 0 {
        check(u.take_rest(), piece);
        return Ok(());
    }
    let shift = 12 + u.arbitrary::<u8>()? % 3;
    let raw: Vec<u8> = u.arbitrary()?;
    let repeat = usize::from(u.arbitrary::<u8>()? % 16) + 1;
    let mut src = peaked(&raw);
    let one = src.clone();
    for _ in 1..repeat {
        src.extend_from_slice(&one);
    }
    src.truncate(1 << 16);
    let mut blob = vec![0u8; rans64::max_encoded_len(src.len(), shift)];
    // Bit 1 of the mode picks version 3 (16-bit states) instead of version 2.
    let len = if mode & 2 == 0 {
        rans64::encode_v2_into(&src, shift, &mut blob).expect("encodes")
    } else {
        rans64::encode_v3_into(&src, shift, &mut blob).expect("encodes version 3")
    };
    blob.truncate(len);
    assert_eq!(check(&blob, piece).as_deref(), Some(&src[..]), "own blob decodes back");
    let n_chunks = Blob::parse(&blob).expect("own blob parses").n_chunks();
    let rewrite_checks: bool = u.arbitrary()?;
    let muts: Vec<Mutation> = u.arbitrary()?;
    for m in muts.iter().take(8) {
        mutate(&mut blob, n_chunks, m);
    }
    if rewrite_checks {
        reseal_rans64(&mut blob);
    }
    let got = check(&blob, piece);
    if !rewrite_checks && let Some(out) = got {
        // Damage that the checks were not rewritten for is refused: what decodes is the input.
        // Except where the damage rewrote the header's byte count and cut the blob to match
        // (`Count` with `Truncate`): that is another well-formed, shorter blob, since no check
        // covers the header; a reader that knows the tensor's size (a container's shape and
        // sha256) refuses it, and so does this comparison of lengths.
        if out.len() == src.len() {
            assert_eq!(out, src, "a damaged blob decoded to other bytes of the same length");
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
