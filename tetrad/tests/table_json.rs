//! The table JSON writer and strict parser against the golden vectors.

use serde_json::Value;
use tetrad::table_json::{self, TableParts};

fn vectors() -> Value {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/vectors/vectors.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("vectors.json")).expect("valid JSON")
}

fn freq16(v: &Value) -> [u32; 16] {
    let mut f = [0u32; 16];
    for (o, x) in f.iter_mut().zip(v.as_array().unwrap()) {
        *o = u32::try_from(x.as_u64().unwrap()).unwrap();
    }
    f
}

#[test]
fn writer_reproduces_every_table_vector_byte_for_byte() {
    let v = vectors();
    let tables = v["tables"].as_array().unwrap();
    assert!(!tables.is_empty());
    for t in tables {
        let freq = freq16(&t["freq"]);
        let scale_bits = u32::try_from(t["scale_bits"].as_u64().unwrap()).unwrap();
        let mut start = [0u32; 16];
        for s in 1..16 {
            start[s] = start[s - 1] + freq[s - 1];
        }
        let parts =
            TableParts { scale_bits, freq, start, slots: table_json::slots_from_freq(&freq) };
        let json = table_json::to_json(&parts);
        assert_eq!(json, t["json"].as_str().unwrap());
        assert!(json.contains(t["crc32"].as_str().unwrap()));
        assert_eq!(table_json::parse(&json).unwrap(), parts);
    }
}

#[test]
fn parser_refuses_each_vector_with_its_class() {
    let v = vectors();
    let cases = v["table_refusals"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for (k, c) in cases.iter().enumerate() {
        let err = table_json::parse(c["json"].as_str().unwrap()).expect_err("must be refused");
        assert_eq!(err.class().name(), c["class"].as_str().unwrap(), "case {k}: {err}");
    }
}

#[test]
fn parser_refuses_type_confusions() {
    let v = vectors();
    let good = v["tables"][0]["json"].as_str().unwrap();
    let cases = [
        (good.replace("\"scale_bits\": 14", "\"scale_bits\": 14.0"), "E_TABLE_SCALE"),
        (good.replace("\"scale_bits\": 14", "\"scale_bits\": true"), "E_TABLE_SCALE"),
        (good.replace("\"n_streams\": 256", "\"n_streams\": \"256\""), "E_TABLE_MALFORMED"),
        (good.replace("\"freq\": [0,", "\"freq\": [-0.0,"), "E_TABLE_MALFORMED"),
        (good.replace("\"table_id\": \"g0\"", "\"table_idx\": \"g0\""), "E_TABLE_MALFORMED"),
        ("[1, 2]".to_owned(), "E_TABLE_MALFORMED"),
        (good.replace("\"table_crc32\": \"", "\"table_crc32\": \"X"), "E_TABLE_CRC"),
        // A key twice: two readers could take different tables.
        (good.replacen('{', "{\"scale_bits\": 12, ", 1), "E_TABLE_MALFORMED"),
    ];
    for (json, class) in cases {
        assert_eq!(table_json::parse(&json).unwrap_err().class().name(), class, "{json:.80}");
    }
    let twice = good.replacen('{', "{\"scale_bits\": 14, ", 1);
    let e = table_json::parse(&twice).unwrap_err().to_string();
    assert!(e.contains("has the key \"scale_bits\" twice in one object"), "{e}");
}
