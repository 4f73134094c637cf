//! Containers of `int4-rans256-g0` records (`docs/int4-rans256-g0.md` §5–§6): the writer
//! ([`pack`]), the validator ([`verify`]) and the way back to int4-row shards ([`unpack`]).

pub mod manifest;
#[cfg(feature = "cli")]
pub mod pack;
pub mod set;
pub mod unpack;
pub mod verify;

use std::collections::BTreeMap;

use serde_json::Value;
use tetrad_rans::Table;

use crate::table_json::TableParts;

/// The format's name, as stamped.
pub const FORMAT_NAME: &str = "int4-rans256-g0";
/// Metadata key of the stamps.
pub const STAMP_KEY: &str = "colibri.fmt";
/// Metadata key of the table JSON.
pub const TABLE_KEY: &str = "colibri.int4-rans256-g0.table";
/// File name of the manifest (the completion marker).
pub const MANIFEST_NAME: &str = "repack-manifest.json";

/// The `colibri.fmt` value (a JSON object of tensor name → format name) as a map. A tensor
/// named twice with the same format collapses; with two different formats it is refused as
/// `E_STAMP_CONFLICT` naming the tensor and both claims (`formats.md`, "Stamps": the same
/// tensor stamped with two different names anywhere is refused) — a JSON parser alone would
/// keep one of the two claims silently. Anything else wrong is `E_STAMP_MALFORMED`; the
/// detail says what, for the caller to prefix with the shard.
pub fn stamp_map(text: &str) -> Result<BTreeMap<String, String>, (&'static str, String)> {
    let entries = crate::shard::object_entries(text)
        .map_err(|e| ("E_STAMP_MALFORMED", format!("{STAMP_KEY} is not a JSON object: {e}")))?;
    let mut map = BTreeMap::new();
    for (name, v) in entries {
        let Value::String(format) = v else {
            return Err((
                "E_STAMP_MALFORMED",
                format!("{STAMP_KEY}: the stamp of {name:?} is not a string"),
            ));
        };
        match map.get(&name) {
            Some(first) if *first != format => {
                return Err((
                    "E_STAMP_CONFLICT",
                    format!("{STAMP_KEY} stamps {name:?} both {first:?} and {format:?}"),
                ));
            }
            Some(_) => {}
            None => {
                map.insert(name, format);
            }
        }
    }
    Ok(map)
}

/// Name of output shard number `k`.
pub fn out_shard_name(k: usize) -> String {
    format!("out-rans-{k:05}.safetensors")
}

/// Whether a file name is an output shard of `pack`.
pub fn is_out_shard_name(name: &str) -> bool {
    name.strip_prefix("out-rans-")
        .and_then(|r| r.strip_suffix(".safetensors"))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// A codec table's arrays, for the JSON writer.
pub fn table_parts(t: &Table) -> TableParts {
    TableParts {
        scale_bits: t.scale_bits(),
        freq: *t.freq(),
        start: *t.start(),
        slots: t.slots_u16().collect(),
    }
}

/// A codec table from validated JSON arrays.
pub fn table_from_parts(p: &TableParts) -> Result<Table, tetrad_rans::TableError> {
    Table::from_parts(p.scale_bits, &p.freq, &p.start, &p.slots)
}

/// A refusal or failure of a container command: the spec's class and a detail naming the file
/// or tensor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class}: {detail}")]
pub struct Refusal {
    /// Refusal class (`E_GEOMETRY_G64`, …).
    pub class: &'static str,
    /// What and where, with the numbers.
    pub detail: String,
}

impl Refusal {
    /// A refusal of `class`.
    pub fn new(class: &'static str, detail: impl Into<String>) -> Self {
        Self { class, detail: detail.into() }
    }
}

impl From<crate::shardset::SetError> for Refusal {
    fn from(e: crate::shardset::SetError) -> Self {
        Self { class: e.class, detail: e.detail }
    }
}

impl From<std::io::Error> for Refusal {
    fn from(e: std::io::Error) -> Self {
        Self::new("E_IO", e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::stamp_map;

    #[test]
    fn stamp_map_collapses_agreeing_duplicates_and_refuses_conflicts() {
        let m = stamp_map(r#"{"b": "int4-row", "a": "int8-row", "b": "int4-row"}"#).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m["b"], "int4-row");
        for (text, class, detail) in [
            (
                r#"{"w": "int8-row", "w": "int4-rans256-g0"}"#,
                "E_STAMP_CONFLICT",
                r#"stamps "w" both "int8-row" and "int4-rans256-g0""#,
            ),
            (
                r#"{"w": "int4-rans256-g0", "v": "int4-row", "w": "int8-row"}"#,
                "E_STAMP_CONFLICT",
                r#"both "int4-rans256-g0" and "int8-row""#,
            ),
            (r#"{"w": 1}"#, "E_STAMP_MALFORMED", r#"the stamp of "w" is not a string"#),
            (r#"["w"]"#, "E_STAMP_MALFORMED", "is not a JSON object"),
            (r#"{"w": "int4-row"} x"#, "E_STAMP_MALFORMED", "is not a JSON object"),
            ("not json", "E_STAMP_MALFORMED", "is not a JSON object"),
        ] {
            let (c, d) = stamp_map(text).unwrap_err();
            assert_eq!(c, class, "{text}");
            assert!(d.contains(detail), "{text}: {d}");
        }
    }
}
