//! `colibri.fmt` stamp documents from hostile text, differentially against `serde_json`:
//! - `Stamps::scan` accepts exactly the documents `serde_json` reads as an object whose values
//!   are all strings (both refuse lone surrogates, raw control characters, trailing data);
//! - on acceptance the entries, unescaped by `JsonStr::chars`, are serde_json's keys and values
//!   in document order (duplicates included), `len()` counts them, `get` returns the first;
//! - `Stamps::parse` refuses `E_STAMP_CONFLICT` exactly when one key carries two different
//!   values, and `TooMany` only above `MAX_STAMPS` entries;
//! - `StampSet::ingest` agrees with `Stamps::parse` on one shard;
//! - every refusal is a named class; nothing panics, however deep the nesting.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tetrad_fuzz::assert_class;
use tetrad_quant::stamp::{MAX_STAMPS, StampError, StampSet, Stamps};

/// Entries of a JSON object in document order, duplicates kept (serde_json's own maps drop
/// them), via a streaming visitor over `(String, Value)` pairs.
fn entries(text: &str) -> Option<Vec<(String, Value)>> {
    struct Pairs(Vec<(String, Value)>);
    impl<'de> serde::Deserialize<'de> for Pairs {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Pairs;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut a: A,
                ) -> Result<Pairs, A::Error> {
                    let mut v = Vec::new();
                    while let Some(kv) = a.next_entry::<String, Value>()? {
                        v.push(kv);
                    }
                    Ok(Pairs(v))
                }
            }
            d.deserialize_map(V)
        }
    }
    serde_json::from_str::<Pairs>(text).ok().map(|p| p.0)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let scan = Stamps::scan(text);
    let reference = entries(text);
    let all_strings = reference.as_ref().is_some_and(|e| e.iter().all(|(_, v)| v.is_string()));
    match &scan {
        Err(e) => {
            assert_class(e.class());
            assert!(!all_strings, "scan refused a valid stamp document: {e:?}");
        }
        Ok(s) => {
            assert!(all_strings, "scan accepted what serde_json refuses (or a non-string value)");
            let want = reference.unwrap();
            let got: Vec<(String, String)> = s
                .iter()
                .map(|e| (e.tensor.chars().collect(), e.format.chars().collect()))
                .collect();
            let want: Vec<(String, String)> =
                want.into_iter().map(|(k, v)| (k, v.as_str().unwrap().to_owned())).collect();
            assert_eq!(got, want, "entries differ from serde_json");
            assert_eq!(s.len(), got.len());
            for (e, (k, v)) in s.iter().zip(&got) {
                assert!(e.tensor.eq_str(k) && e.format.eq_str(v));
                assert_eq!(e.tensor.to_string(), *k);
                let first = &got.iter().find(|(k2, _)| k2 == k).unwrap().1;
                assert!(s.get(k).expect("key present").eq_str(first), "get is not the first entry");
            }
            // Conflicts: a key with two different values.
            let mut seen: HashMap<&str, &str> = HashMap::new();
            let conflict = got.iter().any(|(k, v)| *seen.entry(k).or_insert(v) != v);
            let parsed = Stamps::parse(text);
            if got.len() > MAX_STAMPS {
                assert!(matches!(parsed, Err(StampError::TooMany { .. })));
            } else if conflict {
                assert!(matches!(parsed, Err(StampError::Conflict { .. })), "{parsed:?}");
            } else {
                assert!(parsed.is_ok(), "{parsed:?}");
            }
            let mut set = StampSet::new();
            let ing = set.ingest("shard", Some(text));
            if conflict {
                assert!(ing.is_err(), "StampSet accepted a conflict");
            } else if got.len() <= MAX_STAMPS {
                assert!(ing.is_ok(), "{ing:?}");
                assert_eq!(set.len(), seen.len());
                for (k, v) in &seen {
                    assert_eq!(set.get(k), Some(*v));
                }
            }
        }
    }
    if scan.is_err() {
        assert!(Stamps::parse(text).is_err());
        let mut set = StampSet::new();
        if let Err(e) = set.ingest("shard", Some(text)) {
            assert_class(e.class());
        } else {
            panic!("StampSet ingested a malformed document");
        }
        assert!(set.is_empty(), "a refused ingest changed the set");
    }
});
