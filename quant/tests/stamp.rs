//! Stamps: the strict `colibri.fmt` parser, the container-level `StampSet`, and `verify`.

use tetrad_quant::stamp::{
    MAX_STAMPS, MalformedReason, StampError, StampSet, StampSetError, Stamps, VerifyError, verify,
};
use tetrad_quant::{Format, Resolved, resolve};

fn malformed(json: &str) -> (usize, MalformedReason) {
    match Stamps::scan(json) {
        Err(StampError::Malformed { offset, reason }) => (offset, reason),
        other => panic!("{json:?}: expected malformed, got {other:?}"),
    }
}

fn entries(json: &str) -> Vec<(String, String)> {
    Stamps::parse(json)
        .unwrap_or_else(|e| panic!("{json:?}: {e}"))
        .iter()
        .map(|e| (e.tensor.to_string(), e.format.to_string()))
        .collect()
}

// ---- the parser ----

#[test]
fn parses_what_writers_emit() {
    let json = r#"{"model.layers.0.mlp.experts.0.down_proj.weight": "int4-rans256-g0", "model.layers.0.mlp.experts.0.gate_proj.weight": "int4-rans256-g0"}"#;
    let s = Stamps::parse(json).unwrap();
    assert_eq!(s.len(), 2);
    let e: Vec<_> = s.iter().collect();
    assert_eq!(e[0].tensor.raw(), "model.layers.0.mlp.experts.0.down_proj.weight");
    assert_eq!(e[0].format.format(), Some(Format::Int4Rans256G0));
    assert_eq!(e[0].offset, 1);
    assert_eq!(&json[e[1].offset..e[1].offset + 7], "\"model.");
    assert_eq!(
        s.get("model.layers.0.mlp.experts.0.gate_proj.weight").map(|v| v.to_string()),
        Some("int4-rans256-g0".into())
    );
    assert!(s.get("absent").is_none());
}

#[test]
fn whitespace_and_empty_objects() {
    assert!(Stamps::parse("{}").unwrap().is_empty());
    assert!(Stamps::parse(" \t\r\n{ \n } \n").unwrap().is_empty());
    assert_eq!(
        entries("\n{\n \"a\" :\t\"int8-row\"\r\n,\"b\":\"f32\"}\n"),
        vec![("a".into(), "int8-row".into()), ("b".into(), "f32".into())]
    );
}

#[test]
fn escapes_are_unescaped_on_demand() {
    let json = r#"{"a\"b\\c\/d\b\f\n\r\t": "x", "\u00e9\u0041": "int4-row", "\ud83d\ude00 z": "\u0069nt8-row", "é😀": "mxfp4"}"#;
    let got = entries(json);
    assert_eq!(got[0].0, "a\"b\\c/d\u{8}\u{c}\n\r\t");
    assert_eq!(got[1].0, "éA");
    assert_eq!(got[2], ("😀 z".to_string(), "int8-row".to_string()));
    assert_eq!(got[3], ("é😀".to_string(), "mxfp4".to_string()));
    let s = Stamps::parse(json).unwrap();
    assert_eq!(s.get("😀 z").and_then(|v| v.format()), Some(Format::Int8Row));
    assert_eq!(s.get("éA").and_then(|v| v.format()), Some(Format::Int4Row));
    let e: Vec<_> = s.iter().collect();
    assert!(e[1].tensor.has_escapes());
    assert!(!e[3].tensor.has_escapes());
    assert!(e[2].tensor.eq_str("😀 z"));
    assert!(!e[2].tensor.eq_str("😀 y"));
    assert!(!e[2].tensor.eq_str("😀 z "));
    assert!(e[1].tensor.chars().eq("éA".chars()));
    // Uppercase hex digits too.
    assert_eq!(entries(r#"{"\u00C9": "f32"}"#)[0].0, "É");
}

#[test]
fn malformed_json_is_refused_with_offset_and_reason() {
    use MalformedReason::*;
    assert_eq!(malformed(""), (0, UnexpectedEnd));
    assert_eq!(malformed("{"), (1, UnexpectedEnd));
    assert_eq!(malformed(r#"{"a": "b""#), (9, UnexpectedEnd));
    assert_eq!(malformed(r#"{"a": "b",}"#), (10, Unexpected));
    assert_eq!(malformed(r#"{"a" "b"}"#), (5, Unexpected));
    assert_eq!(malformed(r#"{a: "b"}"#), (1, Unexpected));
    assert_eq!(malformed(r#"{'a': "b"}"#), (1, Unexpected));
    assert_eq!(malformed(r#"{"a": "b"} x"#), (11, TrailingData));
    assert_eq!(malformed(r#"{"a": "b"}{}"#), (10, TrailingData));
    assert_eq!(malformed(r#"{"a": "b\x"}"#), (8, BadEscape));
    assert_eq!(malformed(r#"{"a": "\u12G4"}"#), (11, BadEscape));
    assert_eq!(malformed(r#"{"a": "\udc00"}"#), (7, LoneSurrogate));
    assert_eq!(malformed(r#"{"a": "\ud800"}"#), (7, LoneSurrogate));
    assert_eq!(malformed(r#"{"a": "\ud800\u0041"}"#), (7, LoneSurrogate));
    assert_eq!(malformed("{\"a\": \"b\tc\"}"), (8, ControlChar));
    assert_eq!(malformed("{\"a\": \"b\nc\"}"), (8, ControlChar));
    assert_eq!(malformed("\u{feff}{}").1, Unexpected, "no byte-order mark");
    assert_eq!(malformed(r#"{"a": "b" "c": "d"}"#), (10, Unexpected));
    // Class and message.
    let e = Stamps::parse("nope").unwrap_err();
    assert_eq!(e.class(), "E_STAMP_MALFORMED");
    assert_eq!(
        e.to_string(),
        "stamp json is malformed at byte 1: unexpected character, expected an object of string to string"
    );
}

#[test]
fn not_an_object_is_refused() {
    for json in [r#""int4-row""#, "[]", r#"["a", "b"]"#, "42", "null", "true", " -1.5e3 "] {
        let (_, reason) = malformed(json);
        assert_eq!(reason, MalformedReason::NotAnObject, "{json}");
    }
    // ...but invalid JSON is reported as such.
    assert_eq!(malformed("[1,]").1, MalformedReason::Unexpected);
    assert_eq!(malformed("01").1, MalformedReason::TrailingData);
}

#[test]
fn non_string_entries_are_refused() {
    for (json, at) in [
        (r#"{"a": 1}"#, 6),
        (r#"{"a": "int8-row", "b": null}"#, 23),
        (r#"{"a": {"x": "y"}}"#, 6),
        (r#"{"a": ["int4-row"]}"#, 6),
        (r#"{"a": true}"#, 6),
        (r#"{"a": -0.5E+2}"#, 6),
    ] {
        assert_eq!(malformed(json), (at, MalformedReason::NonStringEntry), "{json}");
    }
    // A later syntax error wins over an earlier non-string entry.
    assert_eq!(malformed(r#"{"a": 1, "b": }"#).1, MalformedReason::Unexpected);
    // Invalid numbers are syntax errors.
    for json in [r#"{"a": 01}"#, r#"{"a": 1.}"#, r#"{"a": -}"#, r#"{"a": 1e}"#, r#"{"a": tru}"#] {
        assert_ne!(malformed(json).1, MalformedReason::NonStringEntry, "{json}");
    }
}

#[test]
fn deep_nesting_is_bounded() {
    let ok = format!("{{\"a\": {}1{}}}", "[".repeat(128), "]".repeat(128));
    assert_eq!(malformed(&ok).1, MalformedReason::NonStringEntry);
    let deep = format!("{{\"a\": {}1{}}}", "[".repeat(129), "]".repeat(129));
    assert_eq!(malformed(&deep).1, MalformedReason::TooDeep);
    let huge = "[".repeat(1_000_000);
    assert_eq!(malformed(&huge).1, MalformedReason::TooDeep);
    let objs = format!("{}1{}", "{\"k\":".repeat(200), "}".repeat(200));
    assert_eq!(malformed(&objs).1, MalformedReason::TooDeep);
}

#[test]
fn duplicates_agreeing_collapse_conflicting_refused() {
    let s = Stamps::parse(r#"{"a": "int4-row", "a": "int4-row", "\u0061": "int4-row"}"#).unwrap();
    assert_eq!(s.len(), 3);
    assert_eq!(s.get("a").map(|v| v.to_string()), Some("int4-row".into()));
    let json = r#"{"a": "int4-row", "b": "f32", "\u0061": "int8-row"}"#;
    assert_eq!(Stamps::parse(json).unwrap_err(), StampError::Conflict { first: 1, second: 30 });
    assert_eq!(Stamps::parse(json).unwrap_err().class(), "E_STAMP_CONFLICT");
    // Agreement is on the unescaped value.
    assert!(Stamps::parse(r#"{"a": "f32", "a": "\u0066\u0033\u0032"}"#).is_ok());
    // `scan` does not look for duplicates.
    assert!(Stamps::scan(json).is_ok());
}

#[test]
fn cap_on_entries() {
    let obj = |n: usize| {
        let body: Vec<String> = (0..n).map(|k| format!("\"t{k}\": \"int4-row\"")).collect();
        format!("{{{}}}", body.join(", "))
    };
    assert_eq!(Stamps::parse(&obj(MAX_STAMPS)).unwrap().len(), 4096);
    let e = Stamps::parse(&obj(MAX_STAMPS + 1)).unwrap_err();
    assert_eq!(e, StampError::TooMany { got: 4097, cap: 4096 });
    assert_eq!(e.class(), "E_STAMP_CAP");
}

// ---- the container-level set ----

#[test]
fn set_missing_key_is_unstamped() {
    let mut set = StampSet::new();
    set.ingest("s0", None).unwrap();
    assert!(set.is_empty());
}

#[test]
fn set_agreeing_duplicates_collapse_across_shards() {
    let mut set = StampSet::new();
    set.ingest("s0", Some(r#"{"a": "int4-row", "b": "mxfp4"}"#)).unwrap();
    set.ingest("s1", Some(r#"{"a": "int4-row", "c": "f32", "c": "f32"}"#)).unwrap();
    assert_eq!(set.len(), 3);
    assert_eq!(set.get("a"), Some("int4-row"));
    let all: Vec<_> = set.iter().collect();
    assert_eq!(all, vec![("a", "int4-row"), ("b", "mxfp4"), ("c", "f32")]);
}

#[test]
fn set_conflicts_name_tensor_and_both_claims() {
    let mut set = StampSet::new();
    set.ingest("shard-0", Some(r#"{"a": "int4-row"}"#)).unwrap();
    let e = set.ingest("shard-1", Some(r#"{"z": "f32", "a": "int8-row"}"#)).unwrap_err();
    assert_eq!(
        e,
        StampSetError::Conflict {
            tensor: "a".into(),
            first: "int4-row".into(),
            first_shard: "shard-0".into(),
            second: "int8-row".into(),
            second_shard: "shard-1".into(),
        }
    );
    assert_eq!(e.class(), "E_STAMP_CONFLICT");
    assert_eq!(
        e.to_string(),
        "tensor \"a\" is stamped \"int4-row\" (shard shard-0) and \"int8-row\" (shard shard-1), expected one format"
    );
    // All-or-nothing: "z" from the refused shard was not added.
    assert_eq!(set.get("z"), None);
    // Within one shard.
    let e = StampSet::new().ingest("s", Some(r#"{"q": "f32", "q": "mxfp4"}"#)).unwrap_err();
    assert!(
        matches!(e, StampSetError::Conflict { ref first_shard, ref second_shard, .. } if first_shard == "s" && second_shard == "s")
    );
}

#[test]
fn set_malformed_names_the_shard() {
    let e = StampSet::new().ingest("bad.safetensors", Some(r#"{"a": 3}"#)).unwrap_err();
    assert_eq!(
        e,
        StampSetError::Malformed {
            shard: "bad.safetensors".into(),
            error: StampError::Malformed { offset: 6, reason: MalformedReason::NonStringEntry },
        }
    );
    assert_eq!(e.class(), "E_STAMP_MALFORMED");
    assert!(e.to_string().starts_with("shard bad.safetensors: stamp json is malformed at byte 6"));
}

#[test]
fn set_cap_counts_distinct_names_across_shards() {
    let obj = |from: usize, to: usize| {
        let body: Vec<String> = (from..to).map(|k| format!("\"t{k}\": \"int4-row\"")).collect();
        format!("{{{}}}", body.join(","))
    };
    let mut set = StampSet::new();
    set.ingest("s0", Some(&obj(0, 3000))).unwrap();
    // Duplicates of earlier names do not count.
    set.ingest("s1", Some(&obj(2000, 4096))).unwrap();
    assert_eq!(set.len(), MAX_STAMPS);
    let e = set.ingest("s2", Some(&obj(4096, 4097))).unwrap_err();
    assert_eq!(e, StampSetError::TooMany { shard: "s2".into(), cap: 4096 });
    assert_eq!(e.class(), "E_STAMP_CAP");
    assert_eq!(set.len(), MAX_STAMPS);
    // A single shard with 5000 entries of which only 10 are distinct is fine.
    let body: Vec<String> = (0..5000).map(|k| format!("\"u{}\": \"f32\"", k % 10)).collect();
    let mut set = StampSet::new();
    set.ingest("s", Some(&format!("{{{}}}", body.join(",")))).unwrap();
    assert_eq!(set.len(), 10);
}

#[test]
fn set_dangling_stamps_are_refused() {
    let mut set = StampSet::new();
    set.ingest("s0", Some(r#"{"a": "int4-row", "b": "int4-row"}"#)).unwrap();
    set.check_dangling(|t| t == "a" || t == "b").unwrap();
    let e = set.check_dangling(|t| t == "a").unwrap_err();
    assert_eq!(
        e,
        StampSetError::Dangling {
            tensor: "b".into(),
            format: "int4-row".into(),
            shard: "s0".into()
        }
    );
    assert_eq!(e.class(), "E_STAMP_DANGLING");
}

// ---- verify ----

#[test]
fn verify_agreement_passes() {
    let r = resolve(8, 64, 256, 32, Some("int4-row")).unwrap();
    assert_eq!(verify("w", Some("int4-row"), &r), Ok(()));
    let r = resolve(8, 64, 256, 32, None).unwrap();
    assert_eq!(verify("w", None, &r), Ok(()));
}

#[test]
fn verify_refuses_disagreement_unknown_names_and_unstamped_entropy_coding() {
    let r = resolve(8, 64, 256, 32, None).unwrap();
    let e = verify("w", Some("int2-row"), &r).unwrap_err();
    assert_eq!(
        e,
        VerifyError::Mismatch { tensor: "w", stamped: Format::Int2Row, resolved: Format::Int4Row }
    );
    assert_eq!(e.class(), "E_STAMP_MISMATCH");
    assert_eq!(e.to_string(), "tensor \"w\" is stamped int2-row but resolves to int4-row");
    let e = verify("w", Some("int4"), &r).unwrap_err();
    assert_eq!(e, VerifyError::UnknownFormat { tensor: "w", stamp: "int4" });
    assert_eq!(e.class(), "E_STAMP_UNKNOWN");
    let rans = Resolved { format: Format::Int4Rans256G0, group_size: None };
    let e = verify("w", None, &rans).unwrap_err();
    assert_eq!(e.class(), "E_STAMP_MISSING");
    assert_eq!(verify("w", Some("int4-rans256-g0"), &rans), Ok(()));
    // int4-rans64-t1 is gated the same way, and the two entropy-coded formats never stand in
    // for each other (nor for int4-row).
    let r64 = Resolved { format: Format::Int4Rans64T1, group_size: None };
    assert_eq!(verify("w", None, &r64).unwrap_err().class(), "E_STAMP_MISSING");
    assert_eq!(verify("w", Some("int4-rans64-t1"), &r64), Ok(()));
    assert_eq!(verify("w", Some("int4-rans256-g0"), &r64).unwrap_err().class(), "E_STAMP_MISMATCH");
    assert_eq!(verify("w", Some("int4-rans64-t1"), &rans).unwrap_err().class(), "E_STAMP_MISMATCH");
    assert_eq!(verify("w", Some("int4-row"), &r64).unwrap_err().class(), "E_STAMP_MISMATCH");
    let row = Resolved { format: Format::Int4Row, group_size: None };
    assert_eq!(verify("w", Some("int4-rans64-t1"), &row).unwrap_err().class(), "E_STAMP_MISMATCH");
}

#[test]
fn end_to_end_trust_verify_refuse() {
    // A container: two shards, stamps, and tensors with their byte counts.
    let mut set = StampSet::new();
    set.ingest("s0", Some(r#"{"x.weight": "int3-g64", "y.weight": "fp8-e4m3-b128"}"#)).unwrap();
    set.ingest("s1", None).unwrap();
    let tensors = [
        ("x.weight", 16u64, 48u64, 16 * 24, 16 * 4, Format::Int3G64),
        ("y.weight", 6144, 16384, 6144 * 16384, 4 * 6144, Format::Fp8E4m3B128),
        ("z.weight", 6144, 16384, 6144 * 16384, 4 * 6144, Format::Int8Row),
    ];
    set.check_dangling(|t| tensors.iter().any(|x| x.0 == t)).unwrap();
    for (name, o, i, nb, ns, want) in tensors {
        let stamp = set.get(name);
        let r = resolve(o, i, nb, ns, stamp).unwrap();
        verify(name, stamp, &r).unwrap();
        assert_eq!(r.format, want, "{name}");
    }
}

// ---- differential properties against serde_json ----

mod props {
    use super::*;
    use proptest::prelude::*;

    /// serde_json's verdict: is this a JSON object whose values are all strings?
    fn serde_accepts(json: &str) -> bool {
        match serde_json::from_str::<serde_json::Value>(json) {
            Ok(serde_json::Value::Object(m)) => m.values().all(|v| v.is_string()),
            _ => false,
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9._]{0,12}",
            any::<String>(),
            "[\"\\\\/\u{0}-\u{1f}é😀\u{7f}\u{ffff}a]{0,6}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        #[test]
        fn writer_output_round_trips(entries in proptest::collection::vec((text(), text()), 0..8), pretty in any::<bool>()) {
            let map: serde_json::Map<String, serde_json::Value> =
                entries.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
            let json = if pretty {
                serde_json::to_string_pretty(&map).unwrap()
            } else {
                serde_json::to_string(&map).unwrap()
            };
            let s = Stamps::parse(&json).unwrap();
            let got: Vec<(String, String)> = s.iter().map(|e| (e.tensor.to_string(), e.format.to_string())).collect();
            let want: Vec<(String, String)> = map.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
            prop_assert_eq!(&got, &want);
            for (k, v) in &want {
                let found = s.get(k).map(|x| x.to_string());
                prop_assert_eq!(found.as_deref(), Some(v.as_str()));
            }
        }

        #[test]
        fn mutated_documents_agree_with_serde(
            entries in proptest::collection::vec((text(), text()), 1..5),
            pos in any::<prop::sample::Index>(),
            ins in prop::sample::select(vec!["", "\"", "\\", ",", ":", "{", "}", "[", "]", "1", "n", " ", "\\u", "\\ud800", "\u{1}"]),
            delete in 0usize..3,
        ) {
            let map: serde_json::Map<String, serde_json::Value> =
                entries.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
            let json = serde_json::to_string(&map).unwrap();
            let cut = {
                let mut p = pos.index(json.len() + 1);
                while !json.is_char_boundary(p) { p -= 1; }
                p
            };
            let mut end = cut;
            for _ in 0..delete {
                if let Some(c) = json[end..].chars().next() { end += c.len_utf8(); }
            }
            let doc = format!("{}{}{}", &json[..cut], ins, &json[end..]);
            let ours = Stamps::scan(&doc);
            prop_assert_eq!(ours.is_ok(), serde_accepts(&doc), "{:?} → {:?}", doc, ours.err());
            let _ = Stamps::parse(&doc);
        }

        #[test]
        fn garbage_never_panics(doc in "[{}\\[\\]\",:\\\\ a-c0-9ud.eE+\\-\n\t]{0,48}") {
            let ours = Stamps::scan(&doc);
            prop_assert_eq!(ours.is_ok(), serde_accepts(&doc), "{:?} → {:?}", doc, ours.err());
            if let Ok(s) = Stamps::parse(&doc) {
                prop_assert_eq!(s.iter().count(), s.len());
                for e in &s { let _ = (e.tensor.to_string(), e.format.format()); }
            }
        }
    }
}
