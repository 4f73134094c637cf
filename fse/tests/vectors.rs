//! Golden vectors (`docs/vectors/vectors.json`, keys `cfs1` and `cfs1_rejections`): every
//! blob encodes byte-identically and round trips; every rejection entry gets exactly its
//! outcome, with the reason mapped to one `DecodeError` variant.

use serde_json::Value;
use tetrad_fse::{DecodeError, Header, Mode, decode_into, encode_into, max_encoded_len};

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/vectors/vectors.json");
    let text = std::fs::read_to_string(path).expect("vectors.json is in the repository");
    serde_json::from_str(&text).expect("vectors.json parses")
}

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The spec reason for an outcome; the match is exhaustive over our variants, so a new
/// variant must be mapped here before this compiles warning-free.
fn reason(r: &Result<usize, DecodeError>) -> &'static str {
    match r {
        Ok(_) => "OK",
        Err(e) => {
            let by_variant = match e {
                DecodeError::Short { .. } => "E_SHORT",
                DecodeError::Magic { .. } => "E_MAGIC",
                DecodeError::Capacity { .. } => "E_CAPACITY",
                DecodeError::RawLength { .. } => "E_RAW_LENGTH",
                DecodeError::Mode { .. } => "E_MODE",
                DecodeError::EmptyRans => "E_EMPTY_RANS",
                DecodeError::ShortRans { .. } => "E_SHORT_RANS",
                DecodeError::FreqSum { .. } => "E_FREQ_SUM",
                DecodeError::StateRange { .. } => "E_STATE_RANGE",
                DecodeError::Truncated { .. } => "E_TRUNCATED",
                DecodeError::Leftover { .. } => "E_LEFTOVER",
                DecodeError::FinalState { .. } => "E_FINAL_STATE",
                _ => panic!("unmapped variant {e:?}"),
            };
            assert_eq!(by_variant, e.class(), "class() disagrees with the variant");
            by_variant
        }
    }
}

#[test]
fn cfs1_blobs_encode_byte_identically_and_round_trip() {
    let v = vectors();
    let list = v["cfs1"].as_array().unwrap();
    assert_eq!(list.len(), 26);
    let mut modes = [0usize; 2];
    for (i, e) in list.iter().enumerate() {
        let input = hex(e["input_hex"].as_str().unwrap());
        let blob = hex(e["blob_hex"].as_str().unwrap());
        let mode = u8::try_from(e["mode"].as_u64().unwrap()).unwrap();
        // Encoder output must not depend on the capacity: try the bound and a lot more,
        // with different garbage in the buffer.
        for (extra, fill) in [(0usize, 0u8), (1, 0xff), (4096, 0x5a)] {
            let mut dst = vec![fill; max_encoded_len(input.len()) + extra];
            let len = encode_into(&input, &mut dst).unwrap();
            assert_eq!(dst[..len], blob[..], "vector {i}: blob differs (extra {extra})");
        }
        let h = Header::parse(&blob).unwrap();
        assert_eq!(h.mode, if mode == 0 { Mode::Raw } else { Mode::Rans }, "vector {i}");
        assert_eq!(h.len(), input.len());
        modes[usize::from(mode)] += 1;
        let mut out = vec![0xa5u8; input.len()];
        assert_eq!(decode_into(&blob, &mut out), Ok(input.len()), "vector {i}");
        assert_eq!(out, input, "vector {i}");
    }
    assert!(modes[0] > 0 && modes[1] > 0, "both modes covered: {modes:?}");
}

#[test]
fn cfs1_rejections_give_exactly_the_listed_outcome() {
    let v = vectors();
    let list = v["cfs1_rejections"].as_array().unwrap();
    assert_eq!(list.len(), 148);
    let mut seen = std::collections::BTreeMap::new();
    for (i, e) in list.iter().enumerate() {
        let blob = hex(e["blob_hex"].as_str().unwrap());
        let want = e["reason"].as_str().unwrap();
        // null = unlimited: enough for any rawlen the header can claim.
        let unlimited = || {
            let rawlen = blob.get(5..9).map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()));
            usize::try_from(rawlen).unwrap()
        };
        let cap = match &e["cap"] {
            Value::Null => unlimited(),
            c => usize::try_from(c.as_u64().expect("cap is null or an integer")).unwrap(),
        };
        let mut out = vec![0u8; cap];
        let got = decode_into(&blob, &mut out);
        assert_eq!(reason(&got), want, "entry {i}: got {got:?}");
        *seen.entry(want).or_insert(0) += 1;
    }
    // Every reason in the file is one we map.
    for r in [
        "OK",
        "E_SHORT",
        "E_MAGIC",
        "E_CAPACITY",
        "E_RAW_LENGTH",
        "E_MODE",
        "E_EMPTY_RANS",
        "E_SHORT_RANS",
        "E_STATE_RANGE",
        "E_TRUNCATED",
        "E_LEFTOVER",
        "E_FINAL_STATE",
    ] {
        assert!(seen.contains_key(r), "no vector for {r}");
    }
}
