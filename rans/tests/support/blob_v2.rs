//! Version-2 `int4-rans64-t1` blob surgery shared by the rans64 tests and the golden-vector
//! generator (`#[path]`-included by both): rewriting the chunk checks after a deliberate
//! mutation, and stripping them to get the version-1 form.

use tetrad_rans::rans64;

/// Rewrites every chunk check of a version-2 blob from its (possibly damaged) index, so that a
/// damaged chunk reaches the head parser and the decoders instead of stopping at E_CHECKSUM.
pub(crate) fn reseal(b: &mut [u8]) {
    let n = u64::from_le_bytes(b[8..16].try_into().unwrap());
    let k = usize::try_from(n.div_ceil(1 << b[5])).unwrap();
    let checks = 16 + 4 * k;
    let mut at = checks + 8 * k;
    for c in 0..k {
        let stored = u32::from_le_bytes(b[16 + 4 * c..20 + 4 * c].try_into().unwrap()) as usize;
        let Some(body) = b.get(at..at + stored) else { return };
        let check = rans64::chunk_check(body);
        b[checks + 8 * c..checks + 8 * c + 8].copy_from_slice(&check.to_le_bytes());
        at += stored;
    }
}

/// The version-1 form of a version-2 blob: the same chunks without the check table.
pub(crate) fn to_version_1(b: &[u8]) -> Vec<u8> {
    let n = u64::from_le_bytes(b[8..16].try_into().unwrap());
    let k = usize::try_from(n.div_ceil(1 << b[5])).unwrap();
    let mut v1 = b[..16 + 4 * k].to_vec();
    v1[4] = 1;
    v1.extend_from_slice(&b[16 + 12 * k..]);
    v1
}
