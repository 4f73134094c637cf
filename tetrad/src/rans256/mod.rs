//! Containers of `int4-rans256-g0` records (`docs/int4-rans256-g0.md` §5–§6): the writer
//! ([`pack`]), the validator ([`verify`]) and the way back to int4-row shards ([`unpack`]).

pub mod manifest;
pub mod pack;
pub mod unpack;
pub mod verify;

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
