//! The golden vectors of `int4-rans64-t1` (docs/vectors/rans64.json): the encoders reproduce
//! every version-2 and version-3 blob byte for byte, every available arm decodes every blob (version 1
//! too) to the input, and every refusal
//! case is refused with its class by every arm (and with its `up_front_class` when every
//! chunk check is verified first). (`docs/vectors/rans64_check.py`, an
//! independent decoder written from the spec, checks the same file in CI.)

use tetrad_rans::rans64::{self, Arm, Blob, ChunkDecoder};

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn vectors() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/vectors/rans64.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn encoder_reproduces_every_golden_blob() {
    let v = vectors();
    let blobs = v["blobs"].as_array().unwrap();
    assert!(blobs.len() >= 9);
    let (mut v1, mut v3) = (0, 0);
    for case in blobs {
        let input = unhex(case["input_hex"].as_str().unwrap());
        let want = unhex(case["blob_hex"].as_str().unwrap());
        let shift = u8::try_from(case["chunk_shift"].as_u64().unwrap()).unwrap();
        let version = case["version"].as_u64().unwrap();
        assert_eq!(u64::from(want[4]), version, "{}", case["name"]);
        if version == u64::from(rans64::VERSION_2) {
            let mut blob = vec![0u8; rans64::max_encoded_len(input.len(), shift)];
            let n = rans64::encode_v2_into(&input, shift, &mut blob).unwrap();
            assert_eq!(&blob[..n], &want[..], "{}", case["name"]);
        } else if version == u64::from(rans64::VERSION_3) {
            let mut blob = vec![0u8; rans64::max_encoded_len(input.len(), shift)];
            let n = rans64::encode_v3_into(&input, shift, &mut blob).unwrap();
            assert_eq!(&blob[..n], &want[..], "{}", case["name"]);
            v3 += 1;
        } else {
            v1 += 1;
        }
        for &arm in Arm::ALL.iter().filter(|a| a.is_available()) {
            let mut out = vec![0xEEu8; input.len()];
            rans64::decode_with(arm, &want, &mut out).unwrap();
            assert_eq!(out, input, "{} on {arm}", case["name"]);
        }
    }
    assert!(v1 >= 2, "version-1 blobs must stay readable: {v1} vectors");
    assert!(v3 >= 9, "every input has a version-3 blob: {v3} vectors");
}

#[test]
fn every_golden_refusal_is_refused_with_its_class() {
    let v = vectors();
    let refusals = v["refusals"].as_array().unwrap();
    let mut classes = std::collections::BTreeSet::new();
    let mut across = 0;
    for case in refusals {
        let blob = unhex(case["blob_hex"].as_str().unwrap());
        let n = usize::try_from(case["n_bytes"].as_u64().unwrap()).unwrap();
        let want = case["class"].as_str().unwrap();
        classes.insert(want.to_string());
        for &arm in Arm::ALL.iter().filter(|a| a.is_available()) {
            let mut out = vec![0u8; n];
            let err = rans64::decode_with(arm, &blob, &mut out).unwrap_err();
            assert_eq!(err.class(), want, "{} on {arm}", case["name"]);
        }
        // Verifying every check first (as the fused adapter does) may name another chunk.
        let up_front = case.get("up_front_class").map_or(want, |c| c.as_str().unwrap());
        let got = Blob::parse(&blob).and_then(Blob::verify_checks).and_then(|b| {
            let mut out = vec![0u8; n];
            let mut pieces = out.chunks_mut(1 << b.chunk_shift());
            for chunk in b.chunks() {
                ChunkDecoder::new_with(chunk?, Arm::Scalar)?.decode_next(pieces.next().unwrap())?;
            }
            Ok(())
        });
        assert_eq!(got.unwrap_err().class(), up_front, "{} verified up front", case["name"]);
        across += usize::from(case.get("up_front_class").is_some());
    }
    assert!(across >= 1, "no vector where verifying the checks up front changes the class");
    // Every spec class (not the API-only ones) has a vector.
    for c in [
        "E_MAGIC",
        "E_TRUNCATED",
        "E_VERSION",
        "E_CHUNK_SHIFT",
        "E_RESERVED",
        "E_TOO_LARGE",
        "E_CHUNK_SIZE",
        "E_TRAILING",
        "E_CHECKSUM",
        "E_TABLE",
        "E_WAY_LENGTHS",
        "E_STATE_RANGE",
        "E_OVERRUN",
        "E_FINAL_STATE",
        "E_LEFTOVER",
    ] {
        assert!(classes.contains(c), "no vector for {c}");
    }
}
