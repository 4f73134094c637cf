//! `int4-rans64-t1`: round trips, every arm against the scalar reference (valid and corrupt
//! input), every refusal class, prefixes, tiles, the ratio against the order-0 entropy, and
//! the golden vectors of docs/vectors/rans64.json.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use proptest::prelude::*;
use rand::{Rng, SeedableRng, rngs::StdRng};
use tetrad_rans::rans64::{self, Arm, Blob, ChunkBody, ChunkDecoder, Error};

#[path = "support/blob_v2.rs"]
mod blob_v2;

use blob_v2::{reseal, to_version_1};

#[path = "support/rans64_data.rs"]
mod rans64_data;

use rans64_data::{arms, gaussian_int4};

/// The encode arms to compare: every one that can encode here. `TETRAD_REQUIRE_ISA` naming
/// `avx2` turns an AVX2 encoder that cannot run (on x86-64) into a failure.
fn encode_arms() -> Vec<Arm> {
    let required = std::env::var("TETRAD_REQUIRE_ISA").unwrap_or_default();
    if cfg!(target_arch = "x86_64") && required.split(',').any(|r| r.trim() == "avx2") {
        assert!(
            Arm::Avx2.can_encode(),
            "TETRAD_REQUIRE_ISA requires avx2, which cannot encode here"
        );
    }
    Arm::ALL.iter().copied().filter(|a| a.can_encode()).collect()
}

/// Encodes with every encode arm; asserts they all produce the scalar encoder's bytes and
/// returns them. Every test below that encodes thus also checks the encode arms.
fn encode(src: &[u8], shift: u8) -> Vec<u8> {
    let mut reference: Option<Vec<u8>> = None;
    for arm in encode_arms() {
        let mut blob = vec![0u8; rans64::max_encoded_len(src.len(), shift)];
        let len = rans64::encode_v2_with(arm, src, shift, &mut blob).expect("encode");
        blob.truncate(len);
        match &reference {
            None => reference = Some(blob),
            Some(want) => assert!(
                &blob == want,
                "encode arm {arm} disagrees with scalar ({} bytes)",
                src.len()
            ),
        }
    }
    let blob = reference.expect("the scalar arm always encodes");
    let mut best = vec![0u8; rans64::max_encoded_len(src.len(), shift)];
    let len = rans64::encode_v2_into(src, shift, &mut best).expect("encode");
    assert_eq!(&best[..len], &blob[..], "encode_into disagrees with encode_with");
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

#[test]
fn scalar_arm_is_always_available_and_best_is_available() {
    assert!(Arm::Scalar.is_available());
    assert!(Arm::best().is_available());
    assert_eq!(Arm::from_name("avx512"), Some(Arm::Avx512));
    assert_eq!(Arm::from_name("avx512-vbmi"), Some(Arm::Avx512Vbmi));
    for &arm in Arm::ALL {
        assert_eq!(Arm::from_name(arm.name()), Some(arm));
    }
    // The VBMI build is the fastest x86 arm wherever it runs.
    if Arm::Avx512Vbmi.is_available() {
        assert_eq!(Arm::best(), Arm::Avx512Vbmi);
    }
}

#[test]
fn unavailable_arm_is_refused_by_name() {
    let blob = encode(&[0x12; 100], 12);
    let mut out = [0u8; 100];
    for &arm in Arm::ALL {
        if !arm.is_available() {
            let err = rans64::decode_with(arm, &blob, &mut out).unwrap_err();
            assert_eq!(err, Error::Unavailable { arm });
            assert_eq!(err.class(), "E_PATH_UNAVAILABLE");
        }
    }
}

#[test]
fn encode_arms_and_their_refusals() {
    let arms = encode_arms();
    eprintln!("rans64 encode arms: {arms:?}");
    assert_eq!(arms[0], Arm::Scalar);
    assert!(Arm::best_encoder().can_encode());
    let src = [0x12u8; 100];
    let mut blob = vec![0u8; rans64::max_encoded_len(src.len(), 12)];
    for &arm in Arm::ALL {
        let got = rans64::encode_v2_with(arm, &src, 12, &mut blob);
        if arm.can_encode() {
            assert!(got.is_ok(), "{arm}");
        } else {
            let err = got.unwrap_err();
            assert_eq!(err, rans64::EncodeError::Unavailable { arm });
            assert_eq!(err.class(), "E_PATH_UNAVAILABLE");
            assert!(err.to_string().contains(arm.name()), "{err}");
        }
    }
    // Only scalar and AVX2 have encode kernels, whatever the CPU.
    for arm in [Arm::Avx512, Arm::Avx512Vbmi, Arm::Neon] {
        assert!(!arm.can_encode(), "{arm}");
    }
}

/// Inputs from about 2.5 to 4 bits of entropy per nibble in 4 KiB chunks: some chunks code, some
/// go raw, and many end within a few words of the raw size, where the encode arms stop and
/// the scalar loop checks every word against the floor.
#[test]
fn encode_arms_agree_near_the_raw_boundary() {
    let mut rng = StdRng::seed_from_u64(11);
    let (mut coded, mut raw, mut closest) = (0, 0, usize::MAX);
    for skew in 0..80u32 {
        // With probability skew/150 a nibble is 8, else uniform.
        let src: Vec<u8> = (0..3 * 4096 + 100)
            .map(|_| {
                let mut nib = || {
                    if rng.random_range(0..150) < skew { 8u8 } else { rng.random_range(0..16u8) }
                };
                nib() | (nib() << 4)
            })
            .collect();
        let blob = encode(&src, 12);
        assert_eq!(decode_all(&blob, src.len()).unwrap(), src, "skew {skew}");
        let parsed = Blob::parse(&blob).unwrap();
        for c in 0..parsed.n_chunks() {
            let chunk = parsed.chunk(c).unwrap();
            match chunk.body {
                ChunkBody::Raw(_) => raw += 1,
                ChunkBody::Coded { ways, .. } => {
                    coded += 1;
                    let stored = 304 + ways.iter().map(|w| w.len()).sum::<usize>();
                    closest = closest.min(chunk.raw_len - stored);
                }
                _ => unreachable!("the encoder writes version 2"),
            }
        }
    }
    eprintln!(
        "raw boundary sweep: {coded} chunks coded, {raw} raw, closest {closest} bytes below raw"
    );
    assert!(coded > 10 && raw > 10, "coded {coded}, raw {raw}: the sweep missed the boundary");
    // Within the AVX2 arm's 80-byte round room: its last rounds ran in the scalar loop.
    assert!(closest < 80, "closest coded chunk is {closest} bytes below raw");
}

#[test]
fn round_trips_every_size_class_on_every_arm() {
    for &n in &[
        0usize, 1, 2, 63, 64, 65, 127, 128, 303, 304, 305, 1000, 4095, 4096, 4097, 12_289, 65_536,
        262_146,
    ] {
        for &shift in &[12u8, 20] {
            let src = gaussian_int4(n, 257, n as u64);
            let blob = encode(&src, shift);
            assert_eq!(decode_all(&blob, n).unwrap(), src, "n = {n}, shift = {shift}");
        }
    }
}

#[test]
fn extreme_inputs_round_trip_on_every_arm() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("all zero", vec![0; 70_000]),
        ("all 0xff", vec![0xFF; 70_000]),
        ("single symbol 0x88", vec![0x88; 70_000]),
        ("two symbols", (0..70_000).map(|i| if i % 3 == 0 { 0x78 } else { 0x87 }).collect()),
        ("uniform random (raw)", (0..70_000).map(|_| rng.random()).collect()),
    ];
    // Rare symbols: mostly 8, one in 5000 nibbles anything: frequency-1 slots and long
    // refills on the rare lanes.
    cases.push((
        "rare symbols",
        (0..200_000)
            .map(|_| {
                let lo = if rng.random_range(0..5000) == 0 { rng.random_range(0..16u8) } else { 8 };
                let hi = if rng.random_range(0..5000) == 0 { rng.random_range(0..16u8) } else { 8 };
                lo | (hi << 4)
            })
            .collect(),
    ));
    for (name, src) in cases {
        for shift in [12u8, 16] {
            let blob = encode(&src, shift);
            assert_eq!(decode_all(&blob, src.len()).unwrap(), src, "{name}");
        }
    }
    // Incompressible input never grows by more than the header and index.
    let random: Vec<u8> = (0..1 << 20).map(|_| rng.random()).collect();
    let blob = encode(&random, 20);
    assert_eq!(blob.len(), 16 + 12 + random.len());
}

#[test]
fn encoder_is_deterministic() {
    let src = gaussian_int4(300_000, 4096, 3);
    assert_eq!(encode(&src, 16), encode(&src, 16));
}

fn entropy_bits(hist: &[u64; 16]) -> f64 {
    let n: u64 = hist.iter().sum();
    hist.iter()
        .filter(|&&h| h > 0)
        .map(|&h| {
            let p = h as f64 / n as f64;
            -p * p.log2()
        })
        .sum()
}

#[test]
fn size_is_within_a_hair_of_the_per_chunk_entropy() {
    // 2 MiB of per-row int4 in 1 MiB chunks: coded size vs Σ chunk order-0 entropy.
    let src = gaussian_int4(2 << 20, 2048, 11);
    let blob = encode(&src, 20);
    let mut bound_bits = 0.0;
    for chunk in src.chunks(1 << 20) {
        let mut hist = [0u64; 16];
        for &b in chunk {
            hist[usize::from(b & 15)] += 1;
            hist[usize::from(b >> 4)] += 1;
        }
        bound_bits += entropy_bits(&hist) * 2.0 * chunk.len() as f64;
    }
    let overhead = blob.len() as f64 * 8.0 / bound_bits - 1.0;
    eprintln!(
        "rans64 2 MiB gaussian: {} bytes, {:.4} % over the per-chunk entropy",
        blob.len(),
        100.0 * overhead
    );
    assert!(overhead < 0.003, "overhead {overhead}");
    assert!(overhead > 0.0);
}

#[test]
fn tiles_equal_whole_decode() {
    let src = gaussian_int4(200_003, 999, 5);
    let blob_bytes = encode(&src, 16);
    let blob = Blob::parse(&blob_bytes).unwrap();
    let mut rng = StdRng::seed_from_u64(9);
    for arm in arms() {
        let mut out = vec![0u8; src.len()];
        let mut at = 0usize;
        for c in 0..blob.n_chunks() {
            let range = blob.chunk_range(c);
            let end = range.end as usize;
            let mut dec = ChunkDecoder::new_with(blob.chunk(c).unwrap(), arm).unwrap();
            while at < end {
                let want = 64 * rng.random_range(0..40usize);
                let take = if want >= end - at { end - at } else { want };
                dec.decode_next(&mut out[at..at + take]).unwrap();
                at += take;
            }
            assert_eq!(dec.remaining(), 0);
        }
        assert_eq!(out, src, "{arm}");
    }
}

/// `decode_next_pair` on two chunks, in random pieces of unequal lengths (invalid ones too),
/// gives exactly what `decode_next` on each gives: the same bytes, the same results (errors
/// included, on a blob with a damaged chunk) and the same decoder progress.
#[test]
fn paired_pieces_equal_separate_pieces() {
    let src = gaussian_int4(300_001, 999, 8);
    let good = encode(&src, 16);
    let mut damaged = good.clone();
    let at = damaged.len() * 3 / 4;
    damaged[at] ^= 0x5A;
    // Rewrite the damaged chunk's check so the damage reaches the decoders (not E_CHECKSUM).
    reseal(&mut damaged);
    let mut rng = StdRng::seed_from_u64(21);
    let mut damage_seen = 0;
    for blob_bytes in [&good, &damaged] {
        let blob = Blob::parse(blob_bytes).unwrap();
        assert!(blob.n_chunks() >= 4);
        for arm in arms() {
            for (ca, cb) in [(0, 1), (1, 3), (2, 0), (3, 4)] {
                let (ra, rb) = (blob.chunk_range(ca), blob.chunk_range(cb));
                let (na, nb) = ((ra.end - ra.start) as usize, (rb.end - rb.start) as usize);
                let mut pa = ChunkDecoder::new_with(blob.chunk(ca).unwrap(), arm).unwrap();
                let mut pb = ChunkDecoder::new_with(blob.chunk(cb).unwrap(), arm).unwrap();
                let (mut sa, mut sb) = (pa.clone(), pb.clone());
                let (mut oa, mut ob) = (vec![0u8; na], vec![0u8; nb]);
                let (mut wa, mut wb) = (vec![0u8; na], vec![0u8; nb]);
                let (mut at_a, mut at_b) = (0usize, 0usize);
                let mut steps = 0;
                while (at_a < na || at_b < nb) && steps < 400 {
                    steps += 1;
                    let pick = |at: usize, n: usize, rng: &mut StdRng| {
                        let want = 64 * rng.random_range(0..300usize)
                            + usize::from(rng.random_range(0..20u8) == 0);
                        want.min(n - at)
                    };
                    let (ta, tb) = (pick(at_a, na, &mut rng), pick(at_b, nb, &mut rng));
                    let got = ChunkDecoder::decode_next_pair(
                        &mut pa,
                        &mut oa[at_a..at_a + ta],
                        &mut pb,
                        &mut ob[at_b..at_b + tb],
                    );
                    let want = (
                        sa.decode_next(&mut wa[at_a..at_a + ta]),
                        sb.decode_next(&mut wb[at_b..at_b + tb]),
                    );
                    assert_eq!(got, want, "{arm} chunks {ca},{cb}");
                    assert_eq!((pa.remaining(), pb.remaining()), (sa.remaining(), sb.remaining()));
                    if got.0.is_ok() {
                        at_a += ta;
                    }
                    if got.1.is_ok() {
                        at_b += tb;
                    }
                    for e in [&got.0, &got.1].into_iter().filter_map(|r| r.as_ref().err()) {
                        if e.class() != "E_OUTPUT_LENGTH" {
                            damage_seen += 1;
                        }
                    }
                }
                assert_eq!(oa[..at_a], wa[..at_a], "{arm}");
                assert_eq!(ob[..at_b], wb[..at_b], "{arm}");
                if blob_bytes == &good {
                    assert_eq!(damage_seen, 0);
                    assert_eq!((at_a, at_b), (na, nb), "{arm}");
                    assert_eq!(oa[..], src[ra.start as usize..ra.end as usize]);
                    assert_eq!(ob[..], src[rb.start as usize..rb.end as usize]);
                }
            }
        }
    }
    assert!(damage_seen > 0, "the damaged chunk was never refused");
}

/// A piece refused by the seal (the call that reaches the chunk's end) leaves `remaining()`
/// as it was, as every other refusal does, and the decoder refuses from then on; the paired
/// call agrees (a fuzz finding: the seal refusal used to count the piece as decoded).
#[test]
fn a_seal_refusal_consumes_nothing() {
    let src = gaussian_int4(8192, 128, 3);
    let good = encode(&src, 12);
    let body = chunk_body(&good, 2, 0);
    let (_, w) = way_lengths(&good, 2);
    // Damaged chunks 0 (checks rewritten) that the seal refuses: a state or word changed.
    let mut sealed = Vec::new();
    for at in (body + 48..body + 304 + w.iter().sum::<usize>()).step_by(5) {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        reseal(&mut bad);
        let blob = Blob::parse(&bad).unwrap();
        let mut dec = ChunkDecoder::new_with(blob.chunk(0).unwrap(), Arm::Scalar).unwrap();
        let mut out = vec![0u8; 4096];
        if let Err(Error::FinalState { .. } | Error::Leftover { .. }) = dec.decode_next(&mut out) {
            sealed.push(bad);
        }
    }
    assert!(sealed.len() >= 3, "only {} seal refusals", sealed.len());
    for bad in &sealed {
        let blob = Blob::parse(bad).unwrap();
        for arm in arms() {
            let mut dec = ChunkDecoder::new_with(blob.chunk(0).unwrap(), arm).unwrap();
            let mut pair =
                (dec.clone(), ChunkDecoder::new_with(blob.chunk(1).unwrap(), arm).unwrap());
            let mut out = vec![0u8; 4096];
            let (head, last) = out.split_at_mut(4096 - 64);
            dec.decode_next(head).unwrap();
            let err = dec.decode_next(last).unwrap_err();
            assert!(["E_FINAL_STATE", "E_LEFTOVER"].contains(&err.class()), "{arm}: {err:?}");
            assert_eq!(dec.remaining(), 64, "{arm}: {err:?}");
            assert_eq!(dec.decode_next(last).unwrap_err().class(), "E_OUTPUT_LENGTH");
            let (mut out2, mut other) = (vec![0u8; 4096], vec![0u8; 4096]);
            let r = ChunkDecoder::decode_next_pair(&mut pair.0, &mut out2, &mut pair.1, &mut other);
            assert_eq!((r.0, r.1), (Err(err), Ok(())), "{arm}");
            assert_eq!((pair.0.remaining(), pair.1.remaining()), (4096, 0), "{arm}");
        }
    }
}

#[test]
fn tile_length_contract() {
    let src = gaussian_int4(10_000, 100, 1);
    let blob_bytes = encode(&src, 16);
    let blob = Blob::parse(&blob_bytes).unwrap();
    let mut dec = ChunkDecoder::new(blob.chunk(0).unwrap());
    let mut buf = vec![0u8; 100];
    assert_eq!(dec.decode_next(&mut buf).unwrap_err().class(), "E_OUTPUT_LENGTH");
    // A refused length consumes nothing.
    dec.decode_next(&mut buf[..64]).unwrap();
    assert_eq!(buf[..64], src[..64]);
    assert_eq!(dec.remaining(), 10_000 - 64);
    assert_eq!(blob.chunk(1).unwrap_err().class(), "E_NO_SUCH_CHUNK");
}

#[test]
fn threads_agree_with_one_thread() {
    let src = gaussian_int4(1 << 20 | 77, 4096, 8);
    let blob = encode(&src, 14);
    for threads in [1, 2, 3, 16] {
        let mut out = vec![0u8; src.len()];
        rans64::decode_threads(&blob, &mut out, threads).unwrap();
        assert_eq!(out, src, "threads = {threads}");
    }
}

/// Builds a version-1 blob (no chunk checks) by hand: header + index + chunk bodies.
fn assemble(shift: u8, n_bytes: u64, chunks: &[Vec<u8>]) -> Vec<u8> {
    let mut b = b"T4R1".to_vec();
    b.push(1);
    b.push(shift);
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(&n_bytes.to_le_bytes());
    for c in chunks {
        b.extend_from_slice(&(c.len() as u32).to_le_bytes());
    }
    for c in chunks {
        b.extend_from_slice(c);
    }
    b
}

fn class_of(blob: &[u8], n: usize) -> &'static str {
    decode_all(blob, n).unwrap_err().class()
}

#[test]
fn every_refusal_class() {
    let src = gaussian_int4(8192, 128, 2);
    let good = encode(&src, 12);
    assert!(decode_all(&good, src.len()).is_ok());
    // Header.
    assert_eq!(class_of(b"T4", 0), "E_MAGIC");
    assert_eq!(class_of(b"XXXXXXXXXXXXXXXX", 0), "E_MAGIC");
    assert_eq!(class_of(&good[..10], src.len()), "E_TRUNCATED");
    let mut bad = good.clone();
    bad[4] = 4; // 1, 2 and 3 are versions
    assert_eq!(class_of(&bad, src.len()), "E_VERSION");
    bad[4] = 0;
    assert_eq!(class_of(&bad, src.len()), "E_VERSION");
    // Version 1 (no check table) still decodes; version 2 with the table cut is truncated.
    assert_eq!(decode_all(&to_version_1(&good), src.len()).unwrap(), src);
    assert_eq!(class_of(&good[..16 + 4 * 2 + 8], src.len()), "E_TRUNCATED");
    let mut bad = good.clone();
    bad[5] = 11;
    assert_eq!(class_of(&bad, src.len()), "E_CHUNK_SHIFT");
    bad[5] = 27;
    assert_eq!(class_of(&bad, src.len()), "E_CHUNK_SHIFT");
    let mut bad = good.clone();
    bad[7] = 1;
    assert_eq!(class_of(&bad, src.len()), "E_RESERVED");
    let mut bad = good.clone();
    bad[8..16].copy_from_slice(&((1u64 << 48) + 1).to_le_bytes());
    assert_eq!(class_of(&bad, src.len()), "E_TOO_LARGE");
    // Index: too short for the declared chunks, sizes that do not add up.
    assert_eq!(class_of(&good[..17], src.len()), "E_TRUNCATED");
    assert_eq!(class_of(&good[..good.len() - 1], src.len()), "E_TRUNCATED");
    let mut bad = good.clone();
    bad.push(0);
    assert_eq!(class_of(&bad, src.len()), "E_TRAILING");
    // Chunk sizes: larger than raw, or coded but shorter than a head.
    assert_eq!(class_of(&assemble(12, 4096, &[vec![0; 4097]]), 4096), "E_CHUNK_SIZE");
    assert_eq!(class_of(&assemble(12, 4096, &[vec![0; 303]]), 4096), "E_CHUNK_SIZE");
    // A raw chunk decodes as itself.
    assert_eq!(
        decode_all(&assemble(12, 5, &[vec![1, 2, 3, 4, 5]]), 5).unwrap(),
        vec![1, 2, 3, 4, 5]
    );
    // Chunk checks: a changed body byte, or a changed recorded check, before anything else
    // in the chunk (the head is not even parsed); chunk order holds.
    let chunk0 = 16 + 12 * 2; // two chunks of 4096
    let mut bad = good.clone();
    bad[chunk0] ^= 1;
    let err = decode_all(&bad, src.len()).unwrap_err();
    assert!(matches!(err, Error::Checksum { chunk: 0, .. }), "{err:?}");
    let mut bad = good.clone();
    bad[16 + 4 * 2 + 8 + 7] ^= 0x80; // the top bit of chunk 1's check
    let err = decode_all(&bad, src.len()).unwrap_err();
    assert!(matches!(err, Error::Checksum { chunk: 1, .. }), "{err:?}");
    // Chunk head: table, way lengths, state range (checks rewritten, so the head is parsed).
    let mut bad = good.clone();
    bad[chunk0] ^= 1; // frequency of symbol 0 off by one: sum != 4096
    reseal(&mut bad);
    assert_eq!(class_of(&bad, src.len()), "E_TABLE");
    let mut bad = good.clone();
    bad[chunk0..chunk0 + 32].fill(0);
    bad[chunk0..chunk0 + 2].copy_from_slice(&4096u16.to_le_bytes()); // sum 4096 but f = 4096
    reseal(&mut bad);
    assert_eq!(class_of(&bad, src.len()), "E_TABLE");
    let mut bad = good.clone();
    bad[chunk0 + 32] ^= 1;
    reseal(&mut bad);
    assert_eq!(class_of(&bad, src.len()), "E_WAY_LENGTHS");
    let mut bad = good.clone();
    bad[chunk0 + 48 + 4 * 5 + 2..chunk0 + 48 + 4 * 5 + 4].fill(0); // lane 5 state < 2^16
    reseal(&mut bad);
    let err = decode_all(&bad, src.len()).unwrap_err();
    assert!(matches!(err, Error::StateRange { chunk: 0, lane: 5, .. }), "{err:?}");
    // Output length.
    let mut out = vec![0u8; src.len() + 1];
    assert_eq!(rans64::decode_into(&good, &mut out).unwrap_err().class(), "E_OUTPUT_LENGTH");
}

/// Finds the body of chunk 0 of a blob with one or more chunks.
fn way_lengths(blob: &[u8], n_chunks: usize) -> (usize, [usize; 4]) {
    let body = 16 + 12 * n_chunks;
    let mut w = [0usize; 4];
    for (i, wl) in w.iter_mut().enumerate() {
        let at = body + 32 + 4 * i;
        *wl = 2 * u32::from_le_bytes(blob[at..at + 4].try_into().unwrap()) as usize;
    }
    (body, w)
}

#[test]
fn seal_and_stream_refusals() {
    let src = gaussian_int4(4096, 64, 4);
    let good = encode(&src, 12);
    let (body, w) = way_lengths(&good, 1);
    let words_start = body + 304;
    // Moving one word from way 0 to way 1 keeps the total: way 0 runs out (E_OVERRUN) or
    // way 1 keeps a word (E_LEFTOVER) or a state ends wrong (E_FINAL_STATE).
    let mut bad = good.clone();
    let w0 = u32::from_le_bytes(bad[body + 32..body + 36].try_into().unwrap());
    let w1 = u32::from_le_bytes(bad[body + 36..body + 40].try_into().unwrap());
    bad[body + 32..body + 36].copy_from_slice(&(w0 - 1).to_le_bytes());
    bad[body + 36..body + 40].copy_from_slice(&(w1 + 1).to_le_bytes());
    reseal(&mut bad);
    let class = class_of(&bad, src.len());
    assert!(["E_OVERRUN", "E_LEFTOVER", "E_FINAL_STATE"].contains(&class), "{class}");
    // Final-state refusal: a state changed by one decodes to a wrong state at the end.
    let mut bad = good.clone();
    bad[body + 48] ^= 1;
    reseal(&mut bad);
    assert!(["E_FINAL_STATE", "E_OVERRUN", "E_LEFTOVER"].contains(&class_of(&bad, src.len())));
    // Every class shows up among corruptions of the words.
    let mut seen = std::collections::BTreeSet::new();
    let mut rng = StdRng::seed_from_u64(12);
    for _ in 0..3000 {
        let mut bad = good.clone();
        let at = words_start + rng.random_range(0..w.iter().sum::<usize>());
        bad[at] ^= 1 << rng.random_range(0..8);
        reseal(&mut bad);
        match decode_all(&bad, src.len()) {
            Ok(out) => assert_ne!(out, src, "a flip that decodes to the original is impossible"),
            Err(e) => {
                seen.insert(e.class());
            }
        }
    }
    assert!(seen.contains("E_FINAL_STATE"), "{seen:?}");
    assert!(seen.contains("E_OVERRUN") || seen.contains("E_LEFTOVER"), "{seen:?}");
}

#[test]
fn every_proper_prefix_is_refused() {
    let src = gaussian_int4(20_000, 100, 6);
    let good = encode(&src, 12);
    for cut in 0..good.len() {
        let err = decode_all(&good[..cut], src.len()).unwrap_err();
        assert!(["E_MAGIC", "E_TRUNCATED"].contains(&err.class()), "cut {cut}: {err:?}");
    }
}

/// Every single-bit flip of a version-2 blob is refused (most by the chunk check), on a
/// Gaussian chunk and on near-uniform ones, where the seal alone lets many through.
#[test]
fn every_bit_flip_is_refused() {
    let mut rng = StdRng::seed_from_u64(40);
    let near_uniform = |levels: u8, rng: &mut StdRng| -> Vec<u8> {
        (0..6_000).map(|_| rng.random_range(0..levels) | rng.random_range(0..levels) << 4).collect()
    };
    let cases =
        [gaussian_int4(6_000, 512, 10), near_uniform(8, &mut rng), near_uniform(4, &mut rng)];
    for src in &cases {
        let good = encode(src, 13);
        let mut flips = 0;
        for bit in (0..8 * good.len()).step_by(3) {
            let mut bad = good.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            flips += 1;
            assert!(decode_all(&bad, src.len()).is_err(), "bit {bit} of {} accepted", good.len());
        }
        assert!(flips > 5_000, "{flips}");
    }
}

/// `Blob::verify_checks` verifies every chunk's check once, in chunk order: a damaged
/// chunk is named (the first one, whichever later ones are damaged too); a verified blob
/// opens the same chunks without recomputing checks; a version-1 blob has none to verify.
#[test]
fn checks_verified_once_up_front() {
    let src = gaussian_int4(40_000, 512, 12);
    let good = encode(&src, 12);
    let blob = Blob::parse(&good).unwrap();
    let n = blob.n_chunks();
    assert!(n >= 5, "{n}");
    assert!(!blob.checks_verified());
    let verified = blob.verify_checks().unwrap();
    assert!(verified.checks_verified());
    assert_eq!(verified.n_chunks(), n);
    for (a, b) in blob.chunks().zip(verified.chunks()) {
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((a.index, a.raw_len), (b.index, b.raw_len));
    }
    assert_eq!(verified.chunks_from(3).count(), n - 3);
    let mut out = vec![0u8; src.len()];
    for c in 0..n {
        let r = blob.chunk_range(c);
        let piece = &mut out[r.start as usize..r.end as usize];
        rans64::decode_chunk_with(Arm::Scalar, &verified, c, piece).unwrap();
    }
    assert_eq!(out, src);

    // Damage chunks 1 and 3: chunk 1 is named, by the up-front pass and by a plain open.
    let mut bad = good.clone();
    for c in [3, 1] {
        let at = chunk_body(&bad, n, c) + 400;
        bad[at] ^= 0x10;
    }
    let parsed = Blob::parse(&bad).unwrap();
    let err = parsed.verify_checks().unwrap_err();
    assert_eq!((err.class(), chunk_of(&err)), ("E_CHECKSUM", Some(1)), "{err:?}");
    assert!(parsed.chunk(0).is_ok());
    assert_eq!(chunk_of(&parsed.chunk(1).unwrap_err()), Some(1));
    assert_eq!(chunk_of(&parsed.chunk(3).unwrap_err()), Some(3));

    // Version 1: nothing to verify, nothing marked verified; its chunks still decode.
    let v1 = to_version_1(&good);
    let b1 = Blob::parse(&v1).unwrap().verify_checks().unwrap();
    assert!(!b1.checks_verified());
    assert_eq!(b1.chunks().filter(Result::is_ok).count(), n);
}

/// What the seal alone catches (version 1, or a damaged chunk whose check was rewritten):
/// on a Gaussian chunk at most one flip in a thousand of the coded words is accepted; on a
/// near-uniform chunk (8 equally likely levels) far more are, which is why version 2 checks
/// every chunk. Every accepted flip decodes to other bytes, never silently to the original.
#[test]
fn what_the_seal_alone_catches() {
    let mut rng = StdRng::seed_from_u64(41);
    let uniform8: Vec<u8> =
        (0..6_000).map(|_| rng.random_range(0..8u8) | rng.random_range(0..8u8) << 4).collect();
    let mut rates = Vec::new();
    for src in [gaussian_int4(6_000, 512, 10), uniform8] {
        let good = encode(&src, 13);
        let (body, w) = way_lengths(&good, 1);
        let total_bits = 8 * (304 + w.iter().sum::<usize>());
        let (mut accepted, mut flips) = (0, 0);
        for bit in (0..total_bits).step_by(3) {
            let mut bad = good.clone();
            bad[body + bit / 8] ^= 1 << (bit % 8);
            reseal(&mut bad);
            flips += 1;
            if let Ok(out) = decode_all(&bad, src.len()) {
                assert_ne!(out, src);
                accepted += 1;
            }
            if bit % 7 == 0 {
                // The same damage in the version-1 form: the same verdict.
                let v1 = decode_all(&to_version_1(&bad), src.len()).is_ok();
                assert_eq!(v1, decode_all(&bad, src.len()).is_ok(), "bit {bit}");
            }
        }
        eprintln!("rans64 seal alone: {accepted} of {flips} flips accepted");
        rates.push((accepted, flips));
    }
    let (gauss, uniform) = (rates[0], rates[1]);
    assert!(gauss.0 * 1000 <= gauss.1, "Gaussian: {gauss:?}");
    assert!(uniform.0 * 1000 > uniform.1, "near-uniform: {uniform:?} (the seal got stronger?)");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn prop_round_trip(src in proptest::collection::vec(any::<u8>(), 0..20_000), shift in 12u8..=14) {
        // Skew half the cases so they code rather than go raw.
        let skewed: Vec<u8> = src.iter().map(|&b| if b & 0x80 != 0 { 0x88 } else { b }).collect();
        for s in [&src, &skewed] {
            let blob = encode(s, shift);
            prop_assert_eq!(decode_all(&blob, s.len()).unwrap(), s.clone());
        }
    }

    #[test]
    fn prop_corruption_same_result_on_every_arm(seed in any::<u64>(), flips in 1usize..8) {
        let src = gaussian_int4(9000, 300, seed);
        let mut blob = encode(&src, 12);
        let mut rng = StdRng::seed_from_u64(seed);
        for _ in 0..flips {
            let at = rng.random_range(0..blob.len());
            blob[at] = rng.random();
        }
        let _ = decode_all(&blob, src.len()); // asserts arm agreement, must not panic
    }

    #[test]
    fn prop_arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000), n in 0usize..5000) {
        let mut blob = bytes;
        if blob.len() >= 16 && n % 2 == 0 {
            // Give half the cases a valid-looking header so the chunk parsers run.
            blob[..4].copy_from_slice(b"T4R1");
            blob[4] = 1;
            blob[5] = 12;
            blob[6] = 0;
            blob[7] = 0;
            blob[8..16].copy_from_slice(&(n as u64).to_le_bytes());
        }
        let _ = decode_all(&blob, n);
    }
}

/// Peaked packed int4 bytes for the Miri tests: mostly codes 7..=9, now and then any code.
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

/// Small enough for Miri: `.ci/run` runs it under Miri with the AVX-512 target features on,
/// which checks the AVX2 and AVX-512 kernels' loads, stores and permutes, and the AVX-512 DQ
/// chunk check. Miri has no shim for `vpexpandd` (`llvm.x86.avx512.mask.expand.d.512`), so
/// under Miri the `avx512` arm runs with that one instruction emulated in scalar code, and the
/// `avx512-vbmi` arm (`vpexpandw`, `vpshldvd`) reports itself unavailable (said on stderr);
/// natively every test in this file runs both wherever the CPU has them.
#[test]
fn miri_small_blob_every_arm() {
    let src = miri_bytes(800);
    eprintln!("rans64 encode arms: {:?}", encode_arms());
    let blob = encode(&src, 12);
    assert!(blob.len() < src.len(), "must be a coded chunk");
    // The chunk check (every decode below verifies it): the vector form where the build has
    // AVX-512 DQ (under Miri too: `.ci/run` turns the feature on), equal to the scalar form.
    let chunk = &blob[16 + 12..];
    assert!(chunk.len() >= 2 * 256, "two check blocks");
    if cfg!(all(target_feature = "avx512f", target_feature = "avx512dq")) {
        assert!(rans64::chunk_check_vectorized(), "AVX-512 DQ compiled in, vector check off");
    }
    eprintln!("rans64 chunk check vectorized: {}", rans64::chunk_check_vectorized());
    assert_eq!(rans64::chunk_check(chunk), rans64::chunk_check_scalar(chunk));
    let arms = arms();
    eprintln!("rans64 arms: {arms:?}");
    for arm in arms {
        let mut out = vec![0u8; src.len()];
        rans64::decode_with(arm, &blob, &mut out).unwrap();
        assert_eq!(out, src, "{arm}");
    }
}

/// [`miri_small_blob_every_arm`] for a blob of two coded chunks (4 KiB and 1 KiB), which a
/// whole-blob decode runs through the arms' two-chunk kernels (both chunks' rounds in one loop
/// while both have them, then the longer one alone).
#[test]
fn miri_two_chunks_every_arm() {
    let src = miri_bytes(5120);
    let blob = encode(&src, 12);
    let size = |c: usize| u32::from_le_bytes(blob[16 + 4 * c..20 + 4 * c].try_into().unwrap());
    assert!(size(0) < 4096 && size(1) < 1024, "two coded chunks");
    for arm in arms() {
        let mut out = vec![0u8; src.len()];
        rans64::decode_with(arm, &blob, &mut out).unwrap();
        assert_eq!(out, src, "{arm}");
    }
}

/// The chunk a refusal names (head, stream and seal classes).
fn chunk_of(e: &Error) -> Option<usize> {
    match *e {
        Error::Table { chunk, .. }
        | Error::WayLengths { chunk, .. }
        | Error::StateRange { chunk, .. }
        | Error::Overrun { chunk, .. }
        | Error::Leftover { chunk, .. }
        | Error::FinalState { chunk, .. }
        | Error::Checksum { chunk, .. } => Some(chunk),
        _ => None,
    }
}

/// Offset of chunk `c`'s body in a blob of `n_chunks` chunks.
fn chunk_body(blob: &[u8], n_chunks: usize, c: usize) -> usize {
    let mut at = 16 + 12 * n_chunks;
    for i in 0..c {
        let s = 16 + 4 * i;
        at += u32::from_le_bytes(blob[s..s + 4].try_into().unwrap()) as usize;
    }
    at
}

/// The AVX-512 arm decodes whole blobs two chunks at a time. Odd and even chunk counts, a
/// raw chunk inside a pair, a short last chunk: every arm equals the scalar decoder.
#[test]
fn chunk_pairs_round_trip_on_every_arm() {
    let mut rng = StdRng::seed_from_u64(31);
    for k in 1..=5usize {
        for raw_at in [None, Some(0), Some(k / 2)] {
            let mut src = gaussian_int4(k * 4096 - 37, 200, k as u64);
            if let Some(c) = raw_at {
                let end = ((c + 1) * 4096).min(src.len());
                src[c * 4096..end].iter_mut().for_each(|b| *b = rng.random());
            }
            let blob = encode(&src, 12);
            assert_eq!(decode_all(&blob, src.len()).unwrap(), src, "k = {k}, raw {raw_at:?}");
        }
    }
}

/// Refusals come out in chunk order whichever chunk of a pair is corrupt: a decode error in
/// chunk 1 names chunk 1; a head error in chunk 1 waits until chunk 0 has decoded, so a
/// decode error in chunk 0 wins over it; and chunk 2's head error is reported after chunks
/// 0 and 1 decode.
#[test]
fn chunk_pairs_refuse_in_chunk_order_on_every_arm() {
    let src = gaussian_int4(4 * 4096, 256, 77);
    let good = encode(&src, 12);
    let body = |c: usize| chunk_body(&good, 4, c);
    // A flip in chunk c's words that the decoder refuses (almost every flip is refused).
    let broken_words = |blob: &mut Vec<u8>, c: usize| {
        let at = body(c) + 304 + 101;
        for bit in 0..8 {
            let mut b = blob.clone();
            b[at] ^= 1 << bit;
            reseal(&mut b);
            if decode_all(&b, src.len()).is_err() {
                *blob = b;
                return;
            }
        }
        panic!("no refused flip at chunk {c}");
    };
    for c in 0..4 {
        let mut bad = good.clone();
        broken_words(&mut bad, c);
        let err = decode_all(&bad, src.len()).unwrap_err();
        assert_eq!(chunk_of(&err), Some(c), "words of chunk {c}: {err:?}");
    }
    for c in 0..4 {
        let mut bad = good.clone();
        bad[body(c)] ^= 1; // frequency of symbol 0 off by one
        reseal(&mut bad);
        let err = decode_all(&bad, src.len()).unwrap_err();
        assert_eq!((err.class(), chunk_of(&err)), ("E_TABLE", Some(c)), "{err:?}");
    }
    // A damaged chunk 1 (check not rewritten) waits for chunk 0 too.
    let mut bad = good.clone();
    bad[body(1) + 500] ^= 4;
    let err = decode_all(&bad, src.len()).unwrap_err();
    assert_eq!((err.class(), chunk_of(&err)), ("E_CHECKSUM", Some(1)), "{err:?}");
    broken_words(&mut bad, 0);
    let err = decode_all(&bad, src.len()).unwrap_err();
    assert_eq!(chunk_of(&err), Some(0), "chunk 0's decode error comes first: {err:?}");
    let mut bad = good.clone();
    bad[body(1)] ^= 1;
    reseal(&mut bad);
    broken_words(&mut bad, 0);
    let err = decode_all(&bad, src.len()).unwrap_err();
    assert_eq!(chunk_of(&err), Some(0), "chunk 0's decode error comes first: {err:?}");
    assert_ne!(err.class(), "E_TABLE");
}

/// Damage anywhere in a large chunk (256 KiB: two pairs of chunks) — its head, its first or
/// last way, its middle, its very last byte, a raw chunk's bytes — is `E_CHECKSUM` for that
/// chunk on every arm and with threads, equal to a check-first open (`Blob::chunk`); with the
/// check rewritten to match, the decode's own class comes through, the same on every arm.
#[test]
fn damage_anywhere_in_a_large_chunk_is_refused_by_its_check() {
    let src = gaussian_int4(4 << 18, 1000, 21);
    let good = encode(&src, 18);
    let n = Blob::parse(&good).unwrap().n_chunks();
    assert_eq!(n, 4);
    assert_eq!(decode_all(&good, src.len()).unwrap(), src);
    let mut out = vec![0u8; src.len()];
    rans64::decode_threads(&good, &mut out, 2).unwrap();
    assert_eq!(out, src);
    let stored = |c: usize| u32::from_le_bytes(good[16 + 4 * c..20 + 4 * c].try_into().unwrap());
    for c in [1usize, 2] {
        let (body, len) = (chunk_body(&good, n, c), stored(c) as usize);
        for (what, at, bit) in [
            ("head", body + 40, 0x01u8),
            ("first way", body + 304 + 2, 0x40),
            ("middle", body + len / 2, 0x08),
            ("last way", body + len - 9, 0x02),
            ("last byte", body + len - 1, 0x80),
        ] {
            let mut bad = good.clone();
            bad[at] ^= bit;
            let err = decode_all(&bad, src.len()).unwrap_err();
            assert_eq!((err.class(), chunk_of(&err)), ("E_CHECKSUM", Some(c)), "{what}: {err:?}");
            let first = Blob::parse(&bad).unwrap().chunk(c).unwrap_err();
            assert_eq!(first, err, "{what}: check-first open");
            for threads in [2, 3] {
                let got = rans64::decode_threads(&bad, &mut out, threads).unwrap_err();
                assert_eq!(got, err, "{what}, {threads} threads");
            }
            // The same damage with a matching check reaches the decoder.
            reseal(&mut bad);
            match decode_all(&bad, src.len()) {
                Ok(v) => assert_ne!(v, src, "{what}: resealed damage decoded to the original"),
                Err(e) => {
                    assert_ne!(e.class(), "E_CHECKSUM", "{what}");
                    assert_eq!(chunk_of(&e), Some(c), "{what}: {e:?}");
                }
            }
        }
    }
    // A raw chunk (incompressible bytes) decodes whatever its bytes are: only the check can
    // refuse a flip in it.
    let mut mixed = src.clone();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for b in &mut mixed[1 << 18..2 << 18] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x.to_le_bytes()[3];
    }
    let good = encode(&mixed, 18);
    let good_stored =
        |c: usize| u32::from_le_bytes(good[16 + 4 * c..20 + 4 * c].try_into().unwrap());
    assert_eq!(good_stored(1), 1 << 18, "chunk 1 is raw");
    assert_eq!(decode_all(&good, mixed.len()).unwrap(), mixed);
    for at in [0, 1000, (1 << 18) - 1] {
        let mut bad = good.clone();
        bad[chunk_body(&good, n, 1) + at] ^= 0x20;
        let err = decode_all(&bad, mixed.len()).unwrap_err();
        assert_eq!((err.class(), chunk_of(&err)), ("E_CHECKSUM", Some(1)), "raw byte {at}");
        let got = rans64::decode_threads(&bad, &mut out, 2).unwrap_err();
        assert_eq!(got, err);
    }
}
