//! A packed folder as a set: is every shard there, and only those?
//!
//! `pack` writes its shards first and `repack-manifest.json` last, as the completion marker:
//! the manifest lists every shard of the set with its size and digests. So a folder proves a
//! whole set only with its manifest: every shard the manifest lists must be present
//! (`E_SHARD_MISSING`), every `out-rans-*.safetensors` beside them must be listed
//! (`E_SHARD_UNLISTED`: a shard of another run, or one copied in), and without a manifest
//! nothing proves that the shards present are all there were (`E_MANIFEST_MISSING`: a run
//! interrupted before its manifest, or a set copied without it). `verify DIR` and `unpack`
//! refuse the same sets, with these classes; each shard's contents are then held to the
//! manifest by [`super::verify`].

use std::collections::BTreeSet;
use std::path::Path;

use super::manifest::{Digests, read_manifest};
use super::{MANIFEST_NAME, is_out_shard_name};
use crate::error::{Class, Refusal};

/// What a packed folder holds, and what keeps it from being a provably whole set.
#[derive(Debug)]
pub struct PackedSet {
    /// Its manifest, if it has one.
    pub manifest: Option<Digests>,
    /// The shard file names to read, sorted: the `out-rans-*.safetensors` present and every
    /// file the manifest lists that is present.
    pub shards: Vec<String>,
    /// Why the set is not provably whole, in the order found (empty when it is).
    pub refusals: Vec<Refusal>,
}

/// Reads `dir` as a packed set. `Err` when the folder cannot be read or its manifest is
/// malformed (`E_MANIFEST_MALFORMED`).
pub fn read_set(dir: &Path) -> Result<PackedSet, Refusal> {
    let manifest = read_manifest(dir)
        .and_then(|m| match m {
            Some(d) => d
                .check_restore_names()
                .map(|()| Some(d))
                .map_err(|why| format!("{}: {why}", dir.join(MANIFEST_NAME).display())),
            None => Ok(None),
        })
        .map_err(|why| Refusal::new(Class::ManifestMalformed, why))?;
    let rd = std::fs::read_dir(dir)
        .map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", dir.display())))?;
    let mut present = BTreeSet::new();
    for entry in rd {
        let entry =
            entry.map_err(|e| Refusal::new(Class::Io, format!("{}: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_out_shard_name(&name) {
            present.insert(name);
        }
    }
    let mut refusals = Vec::new();
    let mut shards: BTreeSet<String> = present.clone();
    match &manifest {
        None if !present.is_empty() => refusals.push(Refusal::new(
            Class::ManifestMissing,
            format!(
                "{} holds {} out-rans shard(s) but no {MANIFEST_NAME}, so whether the set is whole \
                 cannot be proven (pack writes the manifest last: a run stopped before it, or a \
                 copy without it); each shard can still be checked on its own with \
                 `tetrad verify {}/out-rans-*.safetensors`",
                dir.display(),
                present.len(),
                dir.display()
            ),
        )),
        None => {}
        Some(m) => {
            for listed in m.shards.keys() {
                let path = dir.join(listed);
                match std::fs::symlink_metadata(&path) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        refusals.push(Refusal::new(
                            Class::ShardMissing,
                            format!("{}: listed in {MANIFEST_NAME} but missing", path.display()),
                        ));
                    }
                    _ => {
                        shards.insert(listed.clone());
                    }
                }
            }
            for name in &present {
                if !m.shards.contains_key(name) {
                    refusals.push(Refusal::new(
                        Class::ShardUnlisted,
                        format!(
                            "{}: not listed in {MANIFEST_NAME}, so not part of the set it \
                             describes (another run's shard, or a file copied in)",
                            dir.join(name).display()
                        ),
                    ));
                }
            }
        }
    }
    Ok(PackedSet { manifest, shards: shards.into_iter().collect(), refusals })
}
