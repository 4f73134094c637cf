//! `repack-manifest.json`: the completion marker and digest list of a `pack` run.
//!
//! Written last, as JSON with a 1-space indent and sorted keys and no trailing newline (the
//! layout of Python's `json.dumps(..., indent=1, sort_keys=True)`), so a manifest is
//! byte-identical across implementations and runs.
//!
//! The `"format"` field names the codec of the records: `int4-rans256-g0` (the reference
//! tool's manifest, byte for byte) or `int4-rans64-t1` (tetrad's own format, written by
//! `tetrad pack --codec int4-rans64-t1`). An `int4-rans64-t1` manifest has no table (every blob
//! carries its own models), so no `"table_crc32"`, and each shard gains `"originals"`: tensor →
//! sha256 of the original int4-row bytes, which `verify` checks after decoding. A manifest
//! without `"format"` is read as `int4-rans256-g0`.
//!
//! Reading ([`parse_digests`], [`read_manifest`]) is shared by `verify` and `unpack`, so both
//! refuse the same manifests (`E_MANIFEST_MALFORMED`): besides the JSON shape, every `"file"`
//! must be a plain file name (no directory part, not hidden) and no file may be listed twice.
//! `unpack`, which writes each shard under its `"source"` name, also requires
//! ([`Digests::check_restore_names`]) that every source is a plain file name and that no two
//! shards restore to the same name (`"source"`, or `"file"` where an entry has no source) —
//! it would otherwise write outside its directory or one file over another. `verify` does not
//! look at sources (the spec's validator trusts such a manifest).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::MANIFEST_NAME;
use crate::json::push_str_literal;

/// One output shard's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardEntry {
    /// File size in bytes.
    pub bytes: u64,
    /// Output file name.
    pub file: String,
    /// Tensor → sha256 hex of its original (decoded) int4-row bytes; written only when not
    /// empty (`int4-rans64-t1` manifests).
    pub originals: BTreeMap<String, String>,
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
    /// The codec (`"format"`): `int4-rans256-g0` or `int4-rans64-t1`.
    pub format: &'static str,
    /// Output shards in order.
    pub shards: Vec<ShardEntry>,
    /// CRC-32 hex of the table's slot bytes (`int4-rans256-g0` only: `None` omits the field).
    pub table_crc32: Option<String>,
}

impl Manifest {
    /// The exact manifest text.
    pub fn to_json(&self) -> String {
        let n_weight: u64 = self.shards.iter().map(|s| s.weight_tensors).sum();
        let mut o = String::new();
        o.push_str("{\n \"format\": ");
        push_str_literal(&mut o, self.format);
        o.push_str(",\n");
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
                if !s.originals.is_empty() {
                    o.push_str(",\n   \"originals\": ");
                    push_digest_map(&mut o, &s.originals);
                }
                o.push_str(",\n   \"records\": ");
                push_digest_map(&mut o, &s.records);
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
        match &self.table_crc32 {
            Some(crc) => {
                o.push_str(" \"table_crc32\": ");
                push_str_literal(&mut o, crc);
                o.push_str("\n}");
            }
            None => {
                // Drop the comma after "shards".
                o.truncate(o.len() - 2);
                o.push_str("\n}");
            }
        }
        o
    }
}

/// A tensor → digest object at the shard entries' indent.
fn push_digest_map(o: &mut String, m: &BTreeMap<String, String>) {
    if m.is_empty() {
        o.push_str("{}");
        return;
    }
    o.push_str("{\n");
    for (j, (name, digest)) in m.iter().enumerate() {
        o.push_str("    ");
        push_str_literal(o, name);
        o.push_str(": ");
        push_str_literal(o, digest);
        o.push_str(if j + 1 < m.len() { ",\n" } else { "\n" });
    }
    o.push_str("   }");
}

/// What `verify` needs from a manifest: per shard file name, its whole-file digest and its
/// record digests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Digests {
    /// File name → (sha256 of the file, tensor → sha256 of the record).
    pub shards: BTreeMap<String, (Option<String>, BTreeMap<String, String>)>,
    /// The manifest's `"format"` (`None` when absent: an `int4-rans256-g0` manifest).
    pub format: Option<String>,
    /// File name → tensor → sha256 of the original int4-row bytes (`"originals"`, written
    /// for `int4-rans64-t1`; empty when absent).
    pub originals: BTreeMap<String, BTreeMap<String, String>>,
    /// File name → its size in bytes (`"bytes"`), for the entries that record one.
    pub sizes: BTreeMap<String, u64>,
    /// File name → the input shard it came from (`"source"`), for the entries that record one.
    pub sources: BTreeMap<String, String>,
}

impl Digests {
    /// The name shard `file` restores to: its `"source"`, else its own name.
    pub fn output_name<'a>(&'a self, file: &'a str) -> &'a str {
        self.sources.get(file).map_or(file, String::as_str)
    }
}

/// Whether `name` can be used as a file name inside a directory: not empty, no directory part
/// (`/`, `\`), not hidden or a dot entry (leading `.`), no NUL.
pub fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0'])
}

/// Reads the manifest of directory `dir`: `Ok(None)` when there is none, `Err` (the detail of
/// an `E_MANIFEST_MALFORMED`, naming the file) when it cannot be read or is malformed.
pub fn read_manifest(dir: &Path) -> Result<Option<Digests>, String> {
    let path = dir.join(MANIFEST_NAME);
    match crate::io::read_input(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
        Ok(text) => std::str::from_utf8(&text)
            .map_err(|e| e.to_string())
            .and_then(parse_digests)
            .map(Some)
            .map_err(|why| format!("{}: {why}", path.display())),
    }
}

/// Reads the digests of a manifest text; `Err` says why it is malformed.
pub fn parse_digests(text: &str) -> Result<Digests, String> {
    // A key twice (two "records" of one shard, say) would let two readers check different
    // digests.
    let v: Value = crate::shard::parse_unique_keys(text)
        .map_err(|e| crate::shard::json_error("manifest", &e))?;
    let shards = v.get("shards").and_then(Value::as_array).ok_or("no \"shards\" list")?;
    let format = match v.get("format") {
        None => None,
        Some(Value::String(f)) => Some(f.clone()),
        Some(_) => return Err("\"format\" is not a string".to_owned()),
    };
    let mut out = Digests { format, ..Digests::default() };
    for (k, s) in shards.iter().enumerate() {
        let file = s
            .get("file")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("shards[{k}] has no string \"file\""))?;
        if !is_plain_file_name(file) {
            return Err(format!("shards[{k}].file {file:?} is not a plain file name"));
        }
        if out.shards.contains_key(file) {
            return Err(format!("shards[{k}].file {file:?} is listed twice"));
        }
        match s.get("bytes") {
            None => {}
            Some(b) => {
                let b = b.as_u64().ok_or_else(|| {
                    format!("shards[{k}].bytes is not a non-negative integer: {b}")
                })?;
                out.sizes.insert(file.to_owned(), b);
            }
        }
        match s.get("source") {
            None => {}
            Some(Value::String(src)) => {
                out.sources.insert(file.to_owned(), src.clone());
            }
            Some(_) => return Err(format!("shards[{k}].source is not a string")),
        }
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
        let mut originals = BTreeMap::new();
        match s.get("originals") {
            None => {}
            Some(Value::Object(m)) => {
                for (name, d) in m {
                    let d = d.as_str().ok_or_else(|| {
                        format!("shards[{k}].originals[{name:?}] is not a string")
                    })?;
                    originals.insert(name.clone(), d.to_owned());
                }
            }
            Some(_) => return Err(format!("shards[{k}].originals is not an object")),
        }
        out.originals.insert(file.to_owned(), originals);
        out.shards.insert(file.to_owned(), (sha, records));
    }
    Ok(out)
}

impl Digests {
    /// What `unpack` needs of the names it writes: every `"source"` a plain file name, and no
    /// two shards restoring to the same name (they would overwrite each other). `Err` says
    /// why (an `E_MANIFEST_MALFORMED` detail).
    pub fn check_restore_names(&self) -> Result<(), String> {
        for (file, src) in &self.sources {
            if !is_plain_file_name(src) {
                return Err(format!("the source of {file:?}, {src:?}, is not a plain file name"));
            }
        }
        let mut restored: BTreeMap<&str, &str> = BTreeMap::new();
        for file in self.shards.keys() {
            if let Some(other) = restored.insert(self.output_name(file), file) {
                return Err(format!(
                    "shards {other:?} and {file:?} both restore to {:?}",
                    self.output_name(file)
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_python_indent_1_sorted() {
        let m = Manifest {
            format: "int4-rans256-g0",
            shards: vec![ShardEntry {
                bytes: 10,
                file: "out-rans-00000.safetensors".into(),
                originals: BTreeMap::new(),
                records: [("a".to_owned(), "ab".to_owned()), ("b".to_owned(), "cd".to_owned())]
                    .into(),
                sha256: "ff".into(),
                source: "m.safetensors".into(),
                weight_tensors: 2,
            }],
            table_crc32: Some("0011aabb".into()),
        };
        // json.dumps({...}, indent=1, sort_keys=True)
        let want = "{\n \"format\": \"int4-rans256-g0\",\n \"n_shards\": 1,\n \"n_weight_tensors\": 2,\n \"shards\": [\n  {\n   \"bytes\": 10,\n   \"file\": \"out-rans-00000.safetensors\",\n   \"records\": {\n    \"a\": \"ab\",\n    \"b\": \"cd\"\n   },\n   \"sha256\": \"ff\",\n   \"source\": \"m.safetensors\",\n   \"weight_tensors\": 2\n  }\n ],\n \"table_crc32\": \"0011aabb\"\n}";
        assert_eq!(m.to_json(), want);
        let d = parse_digests(&m.to_json()).unwrap();
        assert_eq!(d.shards["out-rans-00000.safetensors"].1["b"], "cd");
        assert!(parse_digests("{}").is_err());
        assert_eq!(d.format.as_deref(), Some("int4-rans256-g0"));
        assert!(d.originals["out-rans-00000.safetensors"].is_empty());
    }

    #[test]
    fn names_must_be_plain_unique_and_restore_to_distinct_files() {
        let m = |shards: &str| parse_digests(&format!("{{\"shards\": [{shards}]}}"));
        let d = m(r#"{"file": "a", "source": "x", "bytes": 7}, {"file": "b"}"#).unwrap();
        assert_eq!((d.output_name("a"), d.output_name("b")), ("x", "b"));
        assert_eq!(d.sizes["a"], 7);
        assert!(!d.sizes.contains_key("b"));
        let bad = [
            (r#"{"file": "a", "source": "x"}, {"file": "b", "source": "x"}"#, "both restore to"),
            (r#"{"file": "a", "source": "b"}, {"file": "b"}"#, "both restore to"),
            (r#"{"file": "a"}, {"file": "a", "source": "y"}"#, "listed twice"),
            (r#"{"file": "../a"}"#, "not a plain file name"),
            (r#"{"file": "a", "source": "d/x"}"#, "not a plain file name"),
            (r#"{"file": "a", "source": ".."}"#, "not a plain file name"),
            (r#"{"file": "a", "source": ""}"#, "not a plain file name"),
            (r#"{"file": "a", "source": 3}"#, "not a string"),
            (r#"{"file": "a", "bytes": -1}"#, "not a non-negative integer"),
            (r#"{"file": "a", "file": "b"}"#, "has the key \"file\" twice in one object"),
        ];
        for (shards, why) in bad {
            // Sources are checked only by `check_restore_names` (unpack), the rest when read.
            let e = match m(shards) {
                Ok(d) => d.check_restore_names().unwrap_err(),
                Err(e) => e,
            };
            assert!(e.contains(why), "{shards}: {e}");
            if why == "both restore to" {
                assert!(m(shards).is_ok(), "verify reads {shards}");
            }
        }
        d.check_restore_names().unwrap();
        for ok in ["model-00001-of-00002.safetensors", "a b", "x..y"] {
            assert!(is_plain_file_name(ok), "{ok}");
        }
        for no in ["", ".", "..", ".hidden", "a/b", "a\\b", "/abs", "nul\0"] {
            assert!(!is_plain_file_name(no), "{no:?}");
        }
    }

    #[test]
    fn rans64_manifest_has_originals_and_no_table() {
        let m = Manifest {
            format: "int4-rans64-t1",
            shards: vec![ShardEntry {
                bytes: 10,
                file: "out-rans-00000.safetensors".into(),
                originals: [("a".to_owned(), "01".to_owned())].into(),
                records: [("a".to_owned(), "ab".to_owned())].into(),
                sha256: "ff".into(),
                source: "m.safetensors".into(),
                weight_tensors: 1,
            }],
            table_crc32: None,
        };
        let want = "{\n \"format\": \"int4-rans64-t1\",\n \"n_shards\": 1,\n \"n_weight_tensors\": 1,\n \"shards\": [\n  {\n   \"bytes\": 10,\n   \"file\": \"out-rans-00000.safetensors\",\n   \"originals\": {\n    \"a\": \"01\"\n   },\n   \"records\": {\n    \"a\": \"ab\"\n   },\n   \"sha256\": \"ff\",\n   \"source\": \"m.safetensors\",\n   \"weight_tensors\": 1\n  }\n ]\n}";
        assert_eq!(m.to_json(), want);
        let v: Value = serde_json::from_str(&m.to_json()).unwrap();
        assert_eq!(v["format"], "int4-rans64-t1");
        let d = parse_digests(&m.to_json()).unwrap();
        assert_eq!(d.format.as_deref(), Some("int4-rans64-t1"));
        assert_eq!(d.originals["out-rans-00000.safetensors"]["a"], "01");
        let old = parse_digests(r#"{"shards": [{"file": "x"}]}"#).unwrap();
        assert_eq!(old.format, None);
    }
}
