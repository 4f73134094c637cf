//! safetensors shards: a header reader that classifies every malformation, and byte-exact
//! writers for the two container flavours tetrad produces.
//!
//! # Reading
//! A shard is an 8-byte little-endian header length `n`, `n` bytes of JSON, then the data.
//! [`ShardHeader::parse`] applies exactly the validator's rules (`docs/int4-rans256-g0.md` §6):
//! the length fits the file and is ≤ 512 MiB, the JSON is an object, `__metadata__` (if any) maps
//! strings to strings, and every tensor entry has a string `dtype`, a list `shape` and
//! `data_offsets` `[b, e]` with `0 ≤ b ≤ e ≤ data size`. Anything else is
//! [`ShardError`] (`E_SHARD_MALFORMED`). So is a key that appears twice in one JSON object at
//! any depth (DECISION, stricter than the validator's wording): JSON parsers disagree on which
//! of two `"w"` entries, or of two `"colibri.fmt"` stamps, counts — most keep the last, some the
//! first — so such a header could make tetrad and another reader see different tensors or
//! different stamps; it is refused naming the key. [`ShardHeader::check_strict`] adds what a reader of
//! weights needs on top: a known dtype whose size times the shape's element count is the byte
//! extent, and no two tensors overlapping.
//!
//! Why not only the `safetensors` crate: its reader validates to its own rules and reports
//! them in its own error type, while `verify` must classify hostile files precisely, keep the
//! header's tensor order (the CFS1 container writes tensors in data-offset order, ties in
//! header order) and accept a 512 MiB header bound; so the header is parsed here with
//! `serde_json`, and the `safetensors` crate's dtype table names the element sizes.
//!
//! # Writing
//! Two header flavours are pinned by the formats, and both differ from what a generic
//! serializer emits, so the header is written by hand:
//! - `int4-rans256-g0` shards: `__metadata__` first (sorted keys), then tensors in the given
//!   order, each `{"dtype":…,"shape":[…],"data_offsets":[b,e]}`, compact separators, strings
//!   escaped like Python's `json.dumps` (ASCII only), **no padding**.
//! - CFS1 (`cfse_pack`) containers: the same compact shape with `{"cfse":"1"}` metadata, names
//!   and dtypes written raw (unescaped), padded with spaces to a multiple of 8 bytes. A name
//!   that would need escaping is refused rather than written as invalid JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::error::{Class, Classified};
use crate::json::push_str_literal;

/// Largest header a reader accepts (the validator's bound).
pub const MAX_HEADER_LEN: u64 = 512 << 20;

/// One tensor entry of a shard header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorEntry {
    /// Tensor name.
    pub name: String,
    /// dtype string as stored (`"U8"`, `"F32"`, …).
    pub dtype: String,
    /// Shape as stored.
    pub shape: Vec<u64>,
    /// Start of the data, relative to the data section.
    pub begin: u64,
    /// End (exclusive) of the data, relative to the data section.
    pub end: u64,
}

impl TensorEntry {
    /// Byte length of the tensor's data.
    pub fn len(&self) -> u64 {
        self.end - self.begin
    }

    /// True when the tensor holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.end == self.begin
    }
}

/// A parsed, validated shard header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardHeader {
    /// Byte offset of the data section in the file (`8 + header length`).
    pub data_start: u64,
    /// Size of the data section (file length − `data_start`).
    pub data_len: u64,
    /// `__metadata__`, if present.
    pub metadata: Option<BTreeMap<String, String>>,
    /// Tensors in header order.
    pub tensors: Vec<TensorEntry>,
}

/// Why a shard header was refused (`E_SHARD_MALFORMED`): what is wrong, worded for the reader
/// of a refusal (the caller prefixes the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct ShardError {
    detail: String,
}

impl ShardError {
    /// The refusal class of the spec.
    pub fn class(&self) -> Class {
        Class::ShardMalformed
    }
}

impl Classified for ShardError {
    fn class_of(&self) -> Class {
        self.class()
    }
}

fn malformed(msg: impl Into<String>) -> ShardError {
    ShardError { detail: msg.into() }
}

/// Element size in bits of a safetensors dtype name, if known (the sub-byte `F4`, `F6_*`
/// types pack their elements densely).
pub fn dtype_bits(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        "BOOL" | "U8" | "I8" | "F8_E4M3" | "F8_E5M2" | "F8_E8M0" => 8,
        "U16" | "I16" | "F16" | "BF16" => 16,
        "U32" | "I32" | "F32" => 32,
        "U64" | "I64" | "F64" | "C64" => 64,
        _ => return None,
    })
}

/// Element size in bytes of a safetensors dtype name, if known and a whole number of bytes.
pub fn dtype_size(dtype: &str) -> Option<u64> {
    dtype_bits(dtype).filter(|b| b % 8 == 0).map(|b| b / 8)
}

/// The bytes `dtype × shape` declares: `Ok(None)` for a dtype this reader does not know,
/// `Err` (why) when the product overflows or is not a whole number of bytes.
pub fn declared_bytes(dtype: &str, shape: &[u64]) -> Result<Option<u64>, String> {
    let Some(bits) = dtype_bits(dtype) else { return Ok(None) };
    let total = shape
        .iter()
        .try_fold(bits, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format!("shape {shape:?} overflows"))?;
    if total % 8 != 0 {
        return Err(format!("{dtype} {shape:?} is {total} bits, not whole bytes"));
    }
    Ok(Some(total / 8))
}

/// Reads the 8-byte header length from the start of a file.
pub fn header_len(prefix: &[u8]) -> Result<u64, ShardError> {
    let b: [u8; 8] = prefix.get(..8).and_then(|s| s.try_into().ok()).ok_or_else(|| {
        malformed(format!("file is {} bytes, shorter than the 8-byte header length", prefix.len()))
    })?;
    Ok(u64::from_le_bytes(b))
}

impl ShardHeader {
    /// Parses the header of a shard whose first bytes are `prefix` (at least the header) and
    /// whose total length is `file_len`.
    pub fn parse(prefix: &[u8], file_len: u64) -> Result<Self, ShardError> {
        let n = header_len(prefix)?;
        if n > MAX_HEADER_LEN {
            // "GGUF" read as a header length is above the limit: say what the file is.
            if prefix.starts_with(b"GGUF") {
                return Err(malformed(
                    "a GGUF file, not a safetensors shard (`tetrad stats` and `tetrad inspect` \
                     read GGUF; this command reads safetensors)",
                ));
            }
            return Err(malformed(format!(
                "header length {n} exceeds the {MAX_HEADER_LEN}-byte limit"
            )));
        }
        let data_start = 8 + n;
        if data_start > file_len {
            return Err(malformed(format!(
                "header length {n} runs past the end of the {file_len}-byte file"
            )));
        }
        let end =
            usize::try_from(data_start).map_err(|_| malformed("header does not fit in memory"))?;
        let text = prefix
            .get(8..end)
            .ok_or_else(|| malformed(format!("header length {n} runs past the bytes read")))?;
        let text = std::str::from_utf8(text)
            .map_err(|e| malformed(format!("header is not UTF-8: {e}")))?;
        let v = parse_unique_keys(text).map_err(|e| malformed(json_error("header", &e)))?;
        let Value::Object(obj) = v else {
            return Err(malformed("header is not a JSON object"));
        };
        let data_len = file_len - data_start;
        let mut metadata = None;
        let mut tensors = Vec::with_capacity(obj.len());
        for (name, entry) in obj {
            if name == "__metadata__" {
                let Value::Object(m) = entry else {
                    return Err(malformed("__metadata__ is not an object"));
                };
                let mut map = BTreeMap::new();
                for (k, v) in m {
                    let Value::String(s) = v else {
                        return Err(malformed(format!("__metadata__[{k:?}] is not a string")));
                    };
                    map.insert(k, s);
                }
                metadata = Some(map);
                continue;
            }
            tensors.push(parse_entry(name, &entry, data_len)?);
        }
        Ok(Self { data_start, data_len, metadata, tensors })
    }

    /// The stricter checks a reader of weights needs: known dtypes, byte extents matching
    /// `dtype size × Π shape`, and no overlapping tensors.
    pub fn check_strict(&self) -> Result<(), ShardError> {
        self.check_extents(false)
    }

    /// [`check_strict`](Self::check_strict), except that a dtype this reader does not know
    /// is taken at its `data_offsets` (for tools that carry every tensor's bytes whatever its
    /// dtype, such as the CFS1 container).
    pub fn check_strict_any_dtype(&self) -> Result<(), ShardError> {
        self.check_extents(true)
    }

    fn check_extents(&self, any_dtype: bool) -> Result<(), ShardError> {
        for t in &self.tensors {
            let declared = declared_bytes(&t.dtype, &t.shape)
                .map_err(|why| malformed(format!("tensor {:?}: {why}", t.name)))?;
            let want = match declared {
                Some(n) => n,
                None if any_dtype => t.len(),
                None => {
                    return Err(malformed(format!(
                        "tensor {:?}: unknown dtype {:?}",
                        t.name, t.dtype
                    )));
                }
            };
            if want != t.len() {
                return Err(malformed(format!(
                    "tensor {:?}: {} {:?} needs {want} bytes but data_offsets cover {}",
                    t.name,
                    t.dtype,
                    t.shape,
                    t.len()
                )));
            }
        }
        let mut spans: Vec<&TensorEntry> = self.tensors.iter().filter(|t| !t.is_empty()).collect();
        spans.sort_by_key(|t| (t.begin, t.end));
        for w in spans.windows(2) {
            if w[1].begin < w[0].end {
                return Err(malformed(format!(
                    "tensors {:?} [{}, {}) and {:?} [{}, {}) overlap",
                    w[0].name, w[0].begin, w[0].end, w[1].name, w[1].begin, w[1].end
                )));
            }
        }
        Ok(())
    }

    /// The tensor named `name`, if present.
    pub fn tensor(&self, name: &str) -> Option<&TensorEntry> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// `text` as one JSON value, refusing a key repeated within an object (at any depth) with a
/// data error "has the key … twice in one object" (see the module docs). serde_json alone
/// would keep the last of the two silently.
pub(crate) fn parse_unique_keys(text: &str) -> Result<Value, serde_json::Error> {
    use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    struct Unique;
    impl<'de> DeserializeSeed<'de> for Unique {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Unique {
        type Value = Value;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Bool(v))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(Value::from(v))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(Value::from(v))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(Value::from(v))
        }
        fn visit_str<E>(self, v: &str) -> Result<Value, E> {
            Ok(Value::String(v.to_owned()))
        }
        fn visit_string<E>(self, v: String) -> Result<Value, E> {
            Ok(Value::String(v))
        }
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(v) = seq.next_element_seed(Unique)? {
                items.push(v);
            }
            Ok(Value::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut obj = serde_json::Map::new();
            while let Some(key) = map.next_key::<String>()? {
                if obj.contains_key(&key) {
                    return Err(de::Error::custom(format_args!(
                        "has the key {key:?} twice in one object"
                    )));
                }
                let v = map.next_value_seed(Unique)?;
                obj.insert(key, v);
            }
            Ok(Value::Object(obj))
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Unique.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// A [`parse_unique_keys`] error of the JSON text called `what`: "`what` is not JSON: …", or
/// "`what` has the key … twice in one object …".
pub(crate) fn json_error(what: &str, e: &serde_json::Error) -> String {
    if e.is_data() { format!("{what} {e}") } else { format!("{what} is not JSON: {e}") }
}

/// The entries of the JSON object `text`, in document order, **with** repeated keys (each a
/// separate entry), for callers whose format says what a repeated key means (the stamps:
/// agreeing duplicates collapse, conflicting ones are refused). Anything but one object is an
/// error.
pub(crate) fn object_entries(text: &str) -> Result<Vec<(String, Value)>, serde_json::Error> {
    use serde::de::{Deserializer, MapAccess, Visitor};
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<(String, Value)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = map.next_entry::<String, Value>()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let v = (&mut de).deserialize_map(Entries)?;
    de.end()?;
    Ok(v)
}

fn parse_entry(name: String, entry: &Value, data_len: u64) -> Result<TensorEntry, ShardError> {
    let Value::Object(e) = entry else {
        return Err(malformed(format!("tensor {name:?}: entry is not an object")));
    };
    let dtype = e
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(format!("tensor {name:?}: dtype missing or not a string")))?
        .to_owned();
    let shape = e
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(format!("tensor {name:?}: shape missing or not a list")))?
        .iter()
        .map(Value::as_u64)
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| malformed(format!("tensor {name:?}: shape holds a non-integer")))?;
    let offs = e
        .get("data_offsets")
        .and_then(Value::as_array)
        .filter(|a| a.len() == 2)
        .and_then(|a| Some((a[0].as_u64()?, a[1].as_u64()?)))
        .ok_or_else(|| malformed(format!("tensor {name:?}: data_offsets is not [begin, end]")))?;
    let (begin, end) = offs;
    if begin > end || end > data_len {
        return Err(malformed(format!(
            "tensor {name:?}: data_offsets [{begin}, {end}] outside the {data_len}-byte data section"
        )));
    }
    Ok(TensorEntry { name, dtype, shape, begin, end })
}

/// How a writer spells the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderStyle {
    /// `int4-rans256-g0` shards: strings escaped like `json.dumps`, no padding.
    EscapedUnpadded,
    /// CFS1 containers: names and dtypes raw, header padded with spaces to a multiple of 8.
    RawPadded8,
}

/// A tensor to write: name, dtype, shape and its data.
#[derive(Debug, Clone, Copy)]
pub struct OutTensor<'a> {
    /// Name.
    pub name: &'a str,
    /// dtype string.
    pub dtype: &'a str,
    /// Shape.
    pub shape: &'a [u64],
    /// Data bytes.
    pub data: &'a [u8],
}

fn push_raw_literal(out: &mut String, s: &str) -> Result<(), ShardError> {
    if s.chars().any(|c| c == '"' || c == '\\' || (c as u32) < 0x20) {
        return Err(malformed(format!(
            "name {s:?} would need JSON escaping, which this container format writes raw"
        )));
    }
    out.push('"');
    out.push_str(s);
    out.push('"');
    Ok(())
}

/// A tensor's header entry without its data: name, dtype, shape and byte length.
#[derive(Debug, Clone, Copy)]
pub struct TensorSpec<'a> {
    /// Name.
    pub name: &'a str,
    /// dtype string.
    pub dtype: &'a str,
    /// Shape.
    pub shape: &'a [u64],
    /// Byte length of its data.
    pub len: u64,
}

/// The header bytes (length prefix included) of a shard holding `tensors` in order, their data
/// laid back to back.
pub fn header_bytes(
    metadata: &BTreeMap<String, String>,
    tensors: &[OutTensor<'_>],
    style: HeaderStyle,
) -> Result<Vec<u8>, ShardError> {
    let specs: Vec<TensorSpec<'_>> = tensors
        .iter()
        .map(|t| TensorSpec {
            name: t.name,
            dtype: t.dtype,
            shape: t.shape,
            len: t.data.len() as u64,
        })
        .collect();
    header_bytes_for(metadata, &specs, style)
}

/// [`header_bytes`] from the tensors' sizes alone (for writers that stream the data).
pub fn header_bytes_for(
    metadata: &BTreeMap<String, String>,
    tensors: &[TensorSpec<'_>],
    style: HeaderStyle,
) -> Result<Vec<u8>, ShardError> {
    // An empty metadata map is omitted (unpacked shards carry none).
    let mut h = String::from(if metadata.is_empty() { "{" } else { "{\"__metadata__\":{" });
    for (k, (key, val)) in metadata.iter().enumerate() {
        if k > 0 {
            h.push(',');
        }
        match style {
            HeaderStyle::EscapedUnpadded => {
                push_str_literal(&mut h, key);
                h.push(':');
                push_str_literal(&mut h, val);
            }
            HeaderStyle::RawPadded8 => {
                push_raw_literal(&mut h, key)?;
                h.push(':');
                push_raw_literal(&mut h, val)?;
            }
        }
    }
    if !metadata.is_empty() {
        h.push('}');
    }
    let mut off = 0u64;
    for (k, t) in tensors.iter().enumerate() {
        if k > 0 || !metadata.is_empty() {
            h.push(',');
        }
        match style {
            HeaderStyle::EscapedUnpadded => {
                push_str_literal(&mut h, t.name);
                h.push_str(":{\"dtype\":");
                push_str_literal(&mut h, t.dtype);
            }
            HeaderStyle::RawPadded8 => {
                push_raw_literal(&mut h, t.name)?;
                h.push_str(":{\"dtype\":");
                push_raw_literal(&mut h, t.dtype)?;
            }
        }
        h.push_str(",\"shape\":");
        crate::json::push_int_list(&mut h, t.shape, ",");
        let end = off + t.len;
        write!(h, ",\"data_offsets\":[{off},{end}]}}").expect("writing to a String cannot fail");
        off = end;
    }
    h.push('}');
    if style == HeaderStyle::RawPadded8 {
        while h.len() % 8 != 0 {
            h.push(' ');
        }
    }
    let mut out = Vec::with_capacity(8 + h.len());
    out.extend_from_slice(&(h.len() as u64).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    Ok(out)
}

/// A whole shard in memory: header then data.
pub fn shard_bytes(
    metadata: &BTreeMap<String, String>,
    tensors: &[OutTensor<'_>],
    style: HeaderStyle,
) -> Result<Vec<u8>, ShardError> {
    let mut out = header_bytes(metadata, tensors, style)?;
    out.reserve(tensors.iter().map(|t| t.data.len()).sum());
    for t in tensors {
        out.extend_from_slice(t.data);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
    }

    #[test]
    fn a_gguf_file_is_named_as_such() {
        let mut gguf = b"GGUF".to_vec();
        gguf.extend_from_slice(&3u32.to_le_bytes());
        gguf.extend_from_slice(&[0; 16]);
        let e = ShardHeader::parse(&gguf, gguf.len() as u64).unwrap_err();
        assert!(e.to_string().contains("a GGUF file, not a safetensors shard"), "{e}");
        // Any other oversized length keeps the plain message.
        let mut big = (MAX_HEADER_LEN + 1).to_le_bytes().to_vec();
        big.extend_from_slice(b"{}");
        let e = ShardHeader::parse(&big, big.len() as u64).unwrap_err();
        assert!(e.to_string().contains("exceeds the"), "{e}");
    }

    #[test]
    fn a_key_twice_in_one_object_is_refused_at_any_depth() {
        let shard = |header: &str| {
            let mut v = (header.len() as u64).to_le_bytes().to_vec();
            v.extend_from_slice(header.as_bytes());
            v.extend_from_slice(&[0; 8]);
            let n = v.len() as u64;
            ShardHeader::parse(&v, n)
        };
        let w = r#""dtype":"U8","shape":[8],"data_offsets":[0,8]"#;
        let stamp = r#""colibri.fmt":"{\"w\": \"int4-rans256-g0\"}""#;
        // The same keys in different objects are fine.
        let h = shard(&format!(r#"{{"__metadata__":{{{stamp}}},"w":{{{w}}},"v":{{{w}}}}}"#));
        assert_eq!(h.unwrap().tensors.len(), 2);
        for (header, key) in [
            (format!(r#"{{"w":{{{w}}},"w":{{{w}}}}}"#), "w"),
            (
                format!(r#"{{"__metadata__":{{}},"w":{{{w}}},"__metadata__":{{{stamp}}}}}"#),
                "__metadata__",
            ),
            (
                format!(r#"{{"__metadata__":{{{stamp},"colibri.fmt":"{{}}"}},"w":{{{w}}}}}"#),
                "colibri.fmt",
            ),
            (format!(r#"{{"w":{{{w},"dtype":"F32"}}}}"#), "dtype"),
            (
                r#"{"w":{"dtype":"U8","shape":[8],"data_offsets":[0,8],"x":[{"a":1,"a":2}]}}"#
                    .into(),
                "a",
            ),
        ] {
            let e = shard(&header).unwrap_err();
            assert_eq!(Class::of(&e), Class::ShardMalformed);
            let want = format!("header has the key {key:?} twice in one object");
            assert!(e.to_string().contains(&want), "{e}");
        }
        // Not JSON stays "not JSON"; trailing bytes after the object too.
        let e = shard(r#"{"w":"#).unwrap_err();
        assert!(e.to_string().contains("header is not JSON"), "{e}");
        let e = shard(r#"{} {}"#).unwrap_err();
        assert!(e.to_string().contains("header is not JSON"), "{e}");
    }

    #[test]
    fn unique_key_parse_equals_serde_json_without_repeats() {
        for text in [
            r#"{"a": [1, -1, 0, -0, 1.5, -2.25e-3, 1e308, 18446744073709551615, -9223372036854775808]}"#,
            r#"{"big": 18446744073709551616, "tiny": 5e-324, "neg": -0.0, "e": 12E+2}"#,
            r#"{"s": "\u00e9\ud83d\ude00\n\"\\/", "t": true, "f": false, "n": null}"#,
            r#"[{"a": {"a": {"a": []}}}, {"a": 1}, [[], {}], "x"]"#,
            r#"  {"z": 1, "y": 2, "x": {"b": 1, "a": 2}}  "#,
            "17",
            r#""just a string""#,
        ] {
            let ours = parse_unique_keys(text).unwrap();
            let theirs: Value = serde_json::from_str(text).unwrap();
            assert_eq!(ours, theirs, "{text}");
            // Key order too (the header's tensor order matters).
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
        }
    }

    #[test]
    fn writes_then_parses_both_styles() {
        let a = OutTensor { name: "w", dtype: "U8", shape: &[3], data: &[1, 2, 3] };
        let b = OutTensor { name: "w.qs", dtype: "F32", shape: &[1], data: &[0, 0, 128, 63] };
        let bytes =
            shard_bytes(&meta(&[("k", "v\"x")]), &[a, b], HeaderStyle::EscapedUnpadded).unwrap();
        let n = header_len(&bytes).unwrap() as usize;
        assert_eq!(
            std::str::from_utf8(&bytes[8..8 + n]).unwrap(),
            r#"{"__metadata__":{"k":"v\"x"},"w":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"w.qs":{"dtype":"F32","shape":[1],"data_offsets":[3,7]}}"#
        );
        let h = ShardHeader::parse(&bytes, bytes.len() as u64).unwrap();
        h.check_strict().unwrap();
        assert_eq!(h.tensors.len(), 2);
        assert_eq!(h.metadata.unwrap()["k"], "v\"x");

        let p = shard_bytes(&meta(&[("cfse", "1")]), &[a], HeaderStyle::RawPadded8).unwrap();
        let n = header_len(&p).unwrap() as usize;
        assert_eq!(n % 8, 0);
        assert!(
            std::str::from_utf8(&p[8..8 + n])
                .unwrap()
                .starts_with(r#"{"__metadata__":{"cfse":"1"},"w":"#)
        );
        assert!(
            shard_bytes(&meta(&[]), &[OutTensor { name: "a\"b", ..a }], HeaderStyle::RawPadded8)
                .is_err()
        );
    }

    #[test]
    fn refuses_malformed_headers() {
        let good = shard_bytes(
            &meta(&[]),
            &[OutTensor { name: "w", dtype: "U8", shape: &[2], data: &[1, 2] }],
            HeaderStyle::EscapedUnpadded,
        )
        .unwrap();
        let len = good.len() as u64;
        assert!(ShardHeader::parse(&good[..5], 5).is_err());
        let mut lie = good.clone();
        lie[..8].copy_from_slice(&(len).to_le_bytes());
        assert!(ShardHeader::parse(&lie, len).is_err());
        lie[..8].copy_from_slice(&(600u64 << 20).to_le_bytes());
        assert!(ShardHeader::parse(&lie, len).unwrap_err().to_string().contains("limit"));
        let with = |h: &str| {
            let mut v = (h.len() as u64).to_le_bytes().to_vec();
            v.extend_from_slice(h.as_bytes());
            v.extend_from_slice(&[0; 4]);
            let n = v.len() as u64;
            ShardHeader::parse(&v, n)
        };
        assert!(with("[1]").is_err());
        assert!(with("{\"__metadata__\":{\"a\":1}}").is_err());
        assert!(with("{\"w\":{\"dtype\":1,\"shape\":[],\"data_offsets\":[0,0]}}").is_err());
        assert!(with("{\"w\":{\"dtype\":\"U8\",\"shape\":3,\"data_offsets\":[0,0]}}").is_err());
        assert!(with("{\"w\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[3,2]}}").is_err());
        assert!(with("{\"w\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,5]}}").is_err());
        let ok = with("{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},\"v\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}").unwrap();
        assert!(ok.check_strict().unwrap_err().to_string().contains("overlap"));
        let bad_size =
            with("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}").unwrap();
        assert!(bad_size.check_strict().is_err());
    }
}
