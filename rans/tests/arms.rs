//! Per-arm tests: one named test per decode arm (the `isa_test!` macro), an identity sweep of
//! every available arm against the reference over record sizes and table shapes, the
//! `E_PATH_UNAVAILABLE` contract, and a property test over random records and corruptions.
//!
//! An arm that is unavailable here is not skipped silently: its named test checks that forcing
//! it is refused with `E_PATH_UNAVAILABLE` (and fails if `TETRAD_REQUIRE_ISA` names it).
#![allow(clippy::cast_possible_truncation)]

mod common;

use common::*;
use proptest::prelude::*;
use tetrad_rans::{
    Arm, DecodeError, Nibbles, Record, StreamShare, Table, decode_record_with, encode_record,
    max_record_len,
};

/// Record sizes (nibbles) of the sweep: whole rounds, partial rounds, tile edges, big ones.
const SIZES: [usize; 10] = [256, 512, 4096, 4098, 8192, 12288, 12289, 65536, 262144, 262146];

/// A symbol source: `n` symbols from a seed.
type Source = Box<dyn Fn(usize, u64) -> Vec<u8>>;

/// The table shapes of the sweep with a matching symbol source.
fn shapes() -> Vec<(&'static str, Table, Source)> {
    // Realistic: a discretised bell over 1..=15 (code 0 absent, as symmetric quantizers do).
    let bell: [u64; 16] = [0, 2, 9, 40, 150, 420, 900, 1400, 1600, 1400, 900, 420, 150, 40, 9, 2];
    let real = Table::from_histogram(14, &bell).unwrap();
    let real2 = real.clone();
    // Everything present, so all-zero and all-max data are codable.
    let full: [u64; 16] = [3, 2, 9, 40, 150, 420, 900, 1400, 1600, 1400, 900, 420, 150, 40, 9, 5];
    let full = Table::from_histogram(14, &full).unwrap();
    let mut single = [0u32; 16];
    single[8] = 1 << 14;
    let single = Table::from_freq(14, &single).unwrap();
    // A symbol of frequency 1 that occurs in a third of the data: 14-bit codes, 2-byte refills.
    let mut rare = [1000u32; 16];
    rare[0] = 1;
    rare[15] = 1;
    rare[7] = 16384 - 13 * 1000 - 2;
    let rare = Table::from_freq(14, &rare).unwrap();
    let rare2 = rare.clone();
    // The pooled table of MiniLM-L6's int4-row codes: two starts (34, 108) inside the first
    // 128-slot bucket (the `avx512-vbmi` arm's bucketed search makes two compares; "real"
    // needs three, "laplace" four, "rare-symbol" one, "crowded" six: the radix-4 search).
    let minilm = [0, 34, 74, 204, 492, 1033, 1854, 2808, 3390, 2811, 1853, 1029, 491, 203, 73, 35];
    let minilm = Table::from_freq(14, &minilm).unwrap();
    let minilm2 = minilm.clone();
    // Peaked synthetic Laplace rows (the adapter bench's table): starts 4, 12, 36 and 115 in
    // the first bucket.
    let laplace = [0, 4, 8, 24, 79, 262, 892, 3102, 7646, 3101, 889, 263, 79, 24, 7, 4];
    let laplace = Table::from_freq(14, &laplace).unwrap();
    let laplace2 = laplace.clone();
    // Six symbols of frequency 1: six starts inside the first bucket.
    let mut crowded = [1000u32; 16];
    crowded[..6].fill(1);
    crowded[15] = 16384 - 6 - 9 * 1000;
    let crowded = Table::from_freq(14, &crowded).unwrap();
    let crowded2 = crowded.clone();
    vec![
        ("laplace", laplace, Box::new(move |n, seed| sample(&laplace2, n, seed))),
        ("crowded", crowded, Box::new(move |n, seed| sample(&crowded2, n, seed))),
        ("minilm", minilm, Box::new(move |n, seed| sample(&minilm2, n, seed))),
        ("real", real, Box::new(move |n, seed| sample(&real2, n, seed))),
        ("all-zero", full.clone(), Box::new(|n, _| vec![0u8; n])),
        ("all-max", full, Box::new(|n, _| vec![15u8; n])),
        ("single-symbol", single, Box::new(|n, _| vec![8u8; n])),
        (
            "rare-symbol",
            rare,
            Box::new(move |n, seed| {
                let mut r = Rng(seed);
                let common = sample(&rare2, n, seed ^ 1);
                (0..n).map(|j| if r.below(3) == 0 { [0, 15][j % 2] } else { common[j] }).collect()
            }),
        ),
    ]
}

fn encode(table: &Table, nib: &[u8], n_streams: usize) -> Vec<u8> {
    let mut blob = vec![0u8; max_record_len(nib.len(), n_streams)];
    let len = encode_record(table, Nibbles::Unpacked(nib), n_streams, &mut blob).unwrap();
    blob.truncate(len);
    blob
}

fn decode(arm: Arm, table: &Table, blob: &[u8], n_streams: usize) -> Result<Vec<u8>, DecodeError> {
    let rec = Record::parse_streams(blob, n_streams).unwrap();
    let mut out = vec![0u8; rec.packed_bytes() as usize];
    decode_record_with(arm, table, &rec, &mut out).map(|()| out)
}

/// The identity sweep for one arm: every size × shape at 256 streams (and a few at other
/// stream counts that leave 8-lane and pair remainders), byte-identical to the reference.
fn sweep(arm: Arm) {
    for (name, table, source) in shapes() {
        for (k, &n) in SIZES.iter().enumerate() {
            let nib = source(n, 0x5EED + k as u64);
            let blob = encode(&table, &nib, 256);
            let want = decode(Arm::Scalar, &table, &blob, 256).expect("reference decodes");
            assert_eq!(want, pack(&nib), "reference round trip ({name}, n = {n})");
            let got = decode(arm, &table, &blob, 256);
            assert_eq!(got.as_ref(), Ok(&want), "arm {arm}, {name}, n = {n}");
        }
        for n_streams in [2usize, 8, 10, 40, 42, 250] {
            let nib = source(20_000 + n_streams, n_streams as u64);
            let blob = encode(&table, &nib, n_streams);
            let want = decode(Arm::Scalar, &table, &blob, n_streams).expect("reference decodes");
            let got = decode(arm, &table, &blob, n_streams);
            assert_eq!(got.as_ref(), Ok(&want), "arm {arm}, {name}, {n_streams} streams");
        }
    }
}

/// Whether `TETRAD_REQUIRE_ISA` names `name`.
fn required(name: &str) -> bool {
    std::env::var("TETRAD_REQUIRE_ISA")
        .is_ok_and(|v| v.split(',').map(str::trim).any(|n| n == name))
}

/// One named test per arm: the sweep where the arm is available; where it is not, the arm must
/// be refused by name (and the test fails if `TETRAD_REQUIRE_ISA` requires it).
macro_rules! isa_test {
    ($test:ident, $name:literal) => {
        #[test]
        fn $test() {
            let arm = Arm::from_name($name).expect("arm name");
            assert_eq!(arm.name(), $name);
            if arm.is_available() {
                sweep(arm);
            } else {
                assert!(!required($name), "required arm {} is not available here", $name);
                eprintln!("arm {} unavailable here: checking its refusal only", $name);
                let table = Table::from_histogram(14, &[1; 16]).unwrap();
                let blob = encode(&table, &[3u8; 512], 256);
                assert_eq!(decode(arm, &table, &blob, 256), Err(DecodeError::Unavailable { arm }));
            }
        }
    };
}

isa_test!(arm_scalar, "scalar");
isa_test!(arm_scalar_bf, "scalar-bf");
isa_test!(arm_avx2, "avx2");
isa_test!(arm_neon, "neon");
isa_test!(arm_avx512, "avx512");
isa_test!(arm_avx512_vbmi, "avx512-vbmi");

#[test]
fn unavailable_arm_is_refused_by_name() {
    let table = Table::from_histogram(14, &[1; 16]).unwrap();
    let blob = encode(&table, &[3u8; 512], 256);
    let mut seen = 0;
    for &arm in Arm::ALL.iter().filter(|a| !a.is_available()) {
        let err = decode(arm, &table, &blob, 256).unwrap_err();
        assert_eq!(err, DecodeError::Unavailable { arm });
        assert_eq!(err.class(), "E_PATH_UNAVAILABLE");
        let rec = Record::parse_streams(&blob, 256).unwrap();
        assert!(tetrad_rans::Decoder::new(arm, &table, rec).is_err());
        seen += 1;
    }
    // avx2 and neon never both run on one machine, so the refusal is always exercised.
    assert!(seen > 0, "expected at least one unavailable arm");
    if cfg!(target_arch = "x86_64") {
        let err = decode(Arm::Neon, &table, &blob, 256).unwrap_err();
        assert_eq!(err.class(), "E_PATH_UNAVAILABLE");
    }
}

#[test]
fn best_is_available_and_cached() {
    let b = Arm::best();
    assert!(b.is_available());
    assert_eq!(Arm::best(), b);
    if cfg!(target_arch = "x86_64") && Arm::Avx512Vbmi.is_available() {
        assert_eq!(b, Arm::Avx512Vbmi);
    } else if cfg!(target_arch = "x86_64") && Arm::Avx512.is_available() {
        assert_eq!(b, Arm::Avx512);
    } else if cfg!(target_arch = "x86_64") && Arm::Avx2.is_available() {
        assert_eq!(b, Arm::Avx2);
    }
    for &a in Arm::ALL {
        assert_eq!(Arm::from_name(a.name()), Some(a));
    }
}

/// A random table: 2..=16 present symbols with random weights.
fn table_strategy() -> impl Strategy<Value = Table> {
    (proptest::array::uniform16(0u64..50), any::<u16>()).prop_map(|(mut h, keep)| {
        h[usize::from(keep % 16)] += 1;
        h[usize::from((keep >> 4) % 16)] += 1;
        Table::from_histogram(14, &h).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random records and random corruptions: every arm gives the reference's bytes or the
    /// reference's error.
    #[test]
    fn arms_match_reference_on_random_and_corrupt_records(
        table in table_strategy(),
        n in 1usize..20_000,
        n_streams in prop_oneof![Just(256usize), Just(42), Just(8), 1usize..=256],
        seed in any::<u64>(),
        flips in proptest::collection::vec((any::<u32>(), 0u8..8), 0..4),
    ) {
        let nib = sample(&table, n, seed);
        let mut blob = encode(&table, &nib, n_streams);
        let head = tetrad_rans::head_len(n_streams);
        let payload = blob.len() - head;
        for &(at, bit) in &flips {
            let i = head + at as usize % payload;
            blob[i] ^= 1 << bit;
        }
        // Flips in the padding may make the record unparsable: nothing to decode then.
        let Ok(rec) = Record::parse_streams(&blob, n_streams) else { return Ok(()); };
        let mut want = vec![0u8; rec.packed_bytes() as usize];
        let want = decode_record_with(Arm::Scalar, &table, &rec, &mut want).map(|()| want);
        if flips.is_empty() {
            prop_assert_eq!(want.as_ref(), Ok(&pack(&nib)));
        }
        for arm in arms() {
            let mut out = vec![0u8; rec.packed_bytes() as usize];
            let got = decode_record_with(arm, &table, &rec, &mut out).map(|()| out);
            prop_assert_eq!(&got, &want, "arm {}", arm);
        }
    }
}

/// A small record through every available arm, for Miri (`.ci/miri-tests` runs the tests
/// whose names contain `miri_` with the AVX-512 and so AVX2 target features on): checks the
/// SIMD kernels' memory accesses (gathers, unaligned loads/stores) for undefined behaviour.
#[test]
fn miri_small_record_every_arm() {
    // The Miri step compiles with the AVX-512 target features: the arm must then run here
    // (Miri has no CPUID, so detection follows the compile-time features), or this test
    // would silently skip the kernel it exists for.
    if cfg!(all(target_feature = "avx512f", target_feature = "avx512bw", target_feature = "avx2")) {
        assert!(Arm::Avx512.is_available(), "avx512 arm compiled in but not available");
    }
    let (_, table, source) = shapes().into_iter().find(|s| s.0 == "rare-symbol").unwrap();
    for (n_streams, n) in [(256usize, 256 * 40 + 3), (42, 42 * 60 + 1)] {
        let nib = source(n, 7);
        let blob = encode(&table, &nib, n_streams);
        let want = decode(Arm::Scalar, &table, &blob, n_streams).expect("reference decodes");
        assert_eq!(want, pack(&nib));
        for arm in arms() {
            assert_eq!(decode(arm, &table, &blob, n_streams).as_ref(), Ok(&want), "arm {arm}");
        }
    }
}

/// Threaded decode (streams split by pairs across threads) gives exactly the single-threaded
/// result, on valid records (full and partial last rounds, no full round, one and several
/// batches, even and odd stream counts) and on corrupt ones (the same lowest faulty stream).
#[test]
fn threaded_decode_matches_single_threaded() {
    let (_, table, source) = shapes().into_iter().find(|s| s.0 == "real").unwrap();
    for arm in arms() {
        // 2500 rounds: several of the threaded decoder's batches (1024 rounds) and a partial one.
        for (n_streams, n) in [
            (256usize, 65536 + 77),
            (256, 256 * 2500 + 77),
            (256, 4096),
            (256, 101),
            (42, 42 * 300 + 9),
            (41, 5000),
        ] {
            let nib = source(n, n as u64);
            let mut blob = encode(&table, &nib, n_streams);
            for corrupt in [None, Some(0.9), Some(0.3)] {
                if let Some(at) = corrupt {
                    damage_payload(&mut blob, n_streams, at);
                }
                let Ok(rec) = Record::parse_streams(&blob, n_streams) else { continue };
                let want = whole_decode(arm, &table, &rec);
                if corrupt.is_none() {
                    assert_eq!(want.as_ref(), Ok(&pack(&nib)));
                }
                for threads in [1usize, 2, 3, 4, 300] {
                    let mut out = vec![0u8; rec.packed_bytes() as usize];
                    let got =
                        tetrad_rans::decode_record_threads(arm, &table, &rec, &mut out, threads)
                            .map(|()| out);
                    assert_eq!(got, want, "arm {arm}, {n_streams} streams, {threads} threads");
                }
            }
        }
    }
}

/// Flips bit 5 of the payload byte at fraction `at` of the payload (the header untouched).
fn damage_payload(blob: &mut [u8], n_streams: usize, at: f64) {
    let head = tetrad_rans::head_len(n_streams);
    let i = head + ((blob.len() - head) as f64 * at) as usize;
    blob[i] ^= 0x20;
}

/// The single-threaded whole-record decode: the bytes or the refusal.
fn whole_decode(arm: Arm, table: &Table, rec: &Record<'_>) -> Result<Vec<u8>, DecodeError> {
    let mut out = vec![0u8; rec.packed_bytes() as usize];
    decode_record_with(arm, table, rec, &mut out).map(|()| out)
}

/// `StreamShare`: the shares of a partition of the pairs, each decoded in uneven batches of
/// rounds and then its tail, put back in their places give the whole-record decode's bytes,
/// and their seals, lowest share first, its verdict; a share the record cannot give is
/// refused by name.
#[test]
fn stream_shares_give_the_whole_record() {
    let (_, table, source) = shapes().into_iter().find(|s| s.0 == "real").unwrap();
    for arm in arms() {
        for (n_streams, n, cuts) in [
            (256usize, 256 * 40 + 77, vec![0usize, 64]),
            (256, 256 * 7, vec![0, 1, 100]),
            (42, 42 * 30 + 9, vec![0, 5, 20]),
            (8, 8 * 3, vec![0, 3]),
        ] {
            let nib = source(n, n as u64);
            let mut blob = encode(&table, &nib, n_streams);
            for corrupt in [None, Some(0.9), Some(0.3)] {
                if let Some(at) = corrupt {
                    damage_payload(&mut blob, n_streams, at);
                }
                let Ok(rec) = Record::parse_streams(&blob, n_streams) else { continue };
                let want = whole_decode(arm, &table, &rec);
                let pairs = n_streams / 2;
                let mut out = vec![0u8; rec.packed_bytes() as usize];
                let mut verdict = Ok(());
                let ends = cuts.iter().skip(1).copied().chain([pairs]);
                for (p0, p1) in cuts.iter().copied().zip(ends) {
                    let mut share = StreamShare::new(arm, &table, &rec, p0..p1).unwrap();
                    assert_eq!(share.width(), p1 - p0);
                    let rounds = share.rounds_left();
                    let mut done = 0;
                    for batch in [1usize, 7, usize::MAX] {
                        let k = batch.min(rounds - done);
                        let mut c = vec![0u8; k * (p1 - p0)];
                        share.decode_rounds(&mut c);
                        for (r, part) in c.chunks_exact(p1 - p0).enumerate() {
                            let at = (done + r) * pairs + p0;
                            out[at..at + part.len()].copy_from_slice(part);
                        }
                        done += k;
                    }
                    assert_eq!(share.rounds_left(), 0);
                    let tail_at = (rounds * pairs + p0).min(out.len());
                    let tail_len = (out.len() - tail_at).min(p1 - p0);
                    share.decode_tail(&mut out[tail_at..tail_at + tail_len]);
                    let sealed = share.finish();
                    if verdict.is_ok() {
                        verdict = sealed;
                    }
                }
                let got = verdict.map(|()| out);
                let what = format!("arm {arm}, {n_streams} streams, cuts {cuts:?}, {corrupt:?}");
                match &want {
                    Ok(_) => assert_eq!(got, want, "{what}"),
                    Err(e) => assert_eq!(got.err(), Some(*e), "{what}"),
                }
            }
        }
        let nib = source(2 * 41, 3);
        let odd = encode(&table, &nib, 41);
        let rec = Record::parse_streams(&odd, 41).unwrap();
        let err = StreamShare::new(arm, &table, &rec, 0..10).err().unwrap();
        assert_eq!(err.class(), "E_SHARE_RANGE", "odd N");
        let even = encode(&table, &nib, 42);
        let rec = Record::parse_streams(&even, 42).unwrap();
        for (a, b) in [(0, 22), (5, 4), (3, 3)] {
            let r = a..b;
            let err = StreamShare::new(arm, &table, &rec, r.clone()).err().unwrap();
            assert_eq!(err.class(), "E_SHARE_RANGE", "pairs {r:?} of 21");
        }
    }
}

/// Initial states in `[2^31, 2^32)` are inside the spec's range (no encoder writes one, a
/// hostile record may): a decode step from such a state can stay at or above `2^31`, where
/// the refill must read no byte (the AVX-512 arms derive the byte count from the state's
/// leading zeros, and there are none). Every arm must step them exactly as the reference does:
/// the same decoded bytes, the same verdict, at every scale.
#[test]
fn initial_states_with_the_top_bit_decode_alike_on_every_arm() {
    let bell: [u64; 16] = [0, 2, 9, 40, 150, 420, 900, 1400, 1600, 1400, 900, 420, 150, 40, 9, 2];
    // One symbol above half the slots: from a state above 2^31 its step stays above 2^31.
    let peaked: [u64; 16] = [0, 1, 1, 2, 4, 8, 30, 100, 4000, 100, 30, 8, 4, 2, 1, 1];
    for (hist, sb) in [(bell, 14u32), (peaked, 14), (peaked, 15), (peaked, 10)] {
        let table = Table::from_histogram(sb, &hist).unwrap();
        for n_streams in [256usize, 42] {
            let nib = sample(&table, n_streams * 300 + 5, u64::from(sb));
            let mut blob = encode(&table, &nib, n_streams);
            let head = (16 + 4 * (n_streams + 1)).next_multiple_of(16);
            for i in 0..n_streams {
                let off = u32::from_le_bytes(blob[16 + 4 * i..20 + 4 * i].try_into().unwrap());
                // The state is big-endian: its first byte is the top one.
                blob[head + off as usize] |= [0x80, 0xFF, 0xC0][i % 3];
            }
            let rec = Record::parse_streams(&blob, n_streams).unwrap();
            let run = |arm: Arm| {
                let mut d = tetrad_rans::Decoder::new(arm, &table, rec).unwrap();
                let mut out = vec![0u8; rec.packed_bytes() as usize];
                let stepped = d.decode_next(&mut out);
                (out, stepped, d.finish())
            };
            let want = run(Arm::Scalar);
            assert!(want.2.is_err(), "damaged states must not verify (sb {sb})");
            for arm in arms() {
                assert_eq!(run(arm), want, "arm {arm}, sb {sb}, {n_streams} streams");
            }
        }
    }
}
