//! Packed containers — `out-rans-NNNNN.safetensors` shards of `int4-rans256-g0` records
//! (`docs/int4-rans256-g0.md` §5–§6) or `int4-rans64-t1` blobs, and the manifest written last:
//! the writer ([`pack`]), the validator ([`verify`]), the way back to int4-row shards
//! ([`unpack`]), the manifest ([`manifest`]) and the folder as a whole ([`set`]).

pub mod manifest;
#[cfg(feature = "cli")]
pub mod pack;
pub mod set;
pub mod unpack;
pub mod verify;

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
