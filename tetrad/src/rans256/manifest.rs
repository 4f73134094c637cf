//! `repack-manifest.json`: the completion marker and digest list of a `pack` run.
//!
//! Written last, as JSON with a 1-space indent and sorted keys and no trailing newline (the
//! layout of Python's `json.dumps(..., indent=1, sort_keys=True)`), so a manifest is
//! byte-identical across implementations and runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::json::push_str_literal;

/// One output shard's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardEntry {
    /// File size in bytes.
    pub bytes: u64,
    /// Output file name.
    pub file: String,
    /// Tensor name → sha256 hex of its record bytes.
    pub records: BTreeMap<String, String>,
    /// sha256 hex of the whole shard file.
    pub sha256: String,
    /// Input shard basename.
    pub source: String,
    /// Number of weight tensors (records) in the shard.
    pub weight_tensors: u64,
}

/// The manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Output shards in order.
    pub shards: Vec<ShardEntry>,
    /// CRC-32 hex of the table's slot bytes.
    pub table_crc32: String,
}

impl Manifest {
    /// The exact manifest text.
    pub fn to_json(&self) -> String {
        let n_weight: u64 = self.shards.iter().map(|s| s.weight_tensors).sum();
        let mut o = String::new();
        o.push_str("{\n \"format\": \"int4-rans256-g0\",\n");
        writeln!(o, " \"n_shards\": {},", self.shards.len()).expect("string write");
        writeln!(o, " \"n_weight_tensors\": {n_weight},").expect("string write");
        if self.shards.is_empty() {
            o.push_str(" \"shards\": [],\n");
        } else {
            o.push_str(" \"shards\": [\n");
            for (k, s) in self.shards.iter().enumerate() {
                o.push_str("  {\n");
                writeln!(o, "   \"bytes\": {},", s.bytes).expect("string write");
                o.push_str("   \"file\": ");
                push_str_literal(&mut o, &s.file);
                o.push_str(",\n   \"records\": ");
                if s.records.is_empty() {
                    o.push_str("{}");
                } else {
                    o.push_str("{\n");
                    for (j, (name, digest)) in s.records.iter().enumerate() {
                        o.push_str("    ");
                        push_str_literal(&mut o, name);
                        o.push_str(": ");
                        push_str_literal(&mut o, digest);
                        o.push_str(if j + 1 < s.records.len() { ",\n" } else { "\n" });
                    }
                    o.push_str("   }");
                }
                o.push_str(",\n   \"sha256\": ");
                push_str_literal(&mut o, &s.sha256);
                o.push_str(",\n   \"source\": ");
                push_str_literal(&mut o, &s.source);
                write!(o, ",\n   \"weight_tensors\": {}\n  }}", s.weight_tensors)
                    .expect("string write");
                o.push_str(if k + 1 < self.shards.len() { ",\n" } else { "\n" });
            }
            o.push_str(" ],\n");
        }
        o.push_str(" \"table_crc32\": ");
        push_str_literal(&mut o, &self.table_crc32);
        o.push_str("\n}");
        o
    }
}

/// What `verify` needs from a manifest: per shard file name, its whole-file digest and its
/// record digests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Digests {
    /// File name → (sha256 of the file, tensor → sha256 of the record).
    pub shards: BTreeMap<String, (Option<String>, BTreeMap<String, String>)>,
}

/// Reads the digests of a manifest text; `Err` says why it is malformed.
pub fn parse_digests(text: &str) -> Result<Digests, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let shards = v.get("shards").and_then(Value::as_array).ok_or("no \"shards\" list")?;
    let mut out = Digests::default();
    for (k, s) in shards.iter().enumerate() {
        let file = s
            .get("file")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("shards[{k}] has no string \"file\""))?;
        let sha = match s.get("sha256") {
            None => None,
            Some(Value::String(h)) => Some(h.clone()),
            Some(_) => return Err(format!("shards[{k}].sha256 is not a string")),
        };
        let mut records = BTreeMap::new();
        match s.get("records") {
            None => {}
            Some(Value::Object(m)) => {
                for (name, d) in m {
                    let d = d
                        .as_str()
                        .ok_or_else(|| format!("shards[{k}].records[{name:?}] is not a string"))?;
                    records.insert(name.clone(), d.to_owned());
                }
            }
            Some(_) => return Err(format!("shards[{k}].records is not an object")),
        }
        out.shards.insert(file.to_owned(), (sha, records));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_python_indent_1_sorted() {
        let m = Manifest {
            shards: vec![ShardEntry {
                bytes: 10,
                file: "out-rans-00000.safetensors".into(),
                records: [("a".to_owned(), "ab".to_owned()), ("b".to_owned(), "cd".to_owned())]
                    .into(),
                sha256: "ff".into(),
                source: "m.safetensors".into(),
                weight_tensors: 2,
            }],
            table_crc32: "0011aabb".into(),
        };
        // json.dumps({...}, indent=1, sort_keys=True)
        let want = "{\n \"format\": \"int4-rans256-g0\",\n \"n_shards\": 1,\n \"n_weight_tensors\": 2,\n \"shards\": [\n  {\n   \"bytes\": 10,\n   \"file\": \"out-rans-00000.safetensors\",\n   \"records\": {\n    \"a\": \"ab\",\n    \"b\": \"cd\"\n   },\n   \"sha256\": \"ff\",\n   \"source\": \"m.safetensors\",\n   \"weight_tensors\": 2\n  }\n ],\n \"table_crc32\": \"0011aabb\"\n}";
        assert_eq!(m.to_json(), want);
        let d = parse_digests(&m.to_json()).unwrap();
        assert_eq!(d.shards["out-rans-00000.safetensors"].1["b"], "cd");
        assert!(parse_digests("{}").is_err());
    }
}
