//! `int4-rans64-t1` tensors in containers: the blob-level steps that `pack`, `verify` and
//! `unpack` (in [`crate::packed`], which owns the container layout both codecs share) run
//! for tensors of tetrad's own format.
//!
//! A container of `int4-rans64-t1` tensors has the same shape as one of `int4-rans256-g0`
//! records: `out-rans-NNNNN.safetensors` shards holding each selected weight as a `U8` tensor
//! (here the self-contained blob of `tetrad_rans::rans64`, tables inside) followed by its
//! `.qs` scales unchanged, the weight stamped `int4-rans64-t1` in `colibri.fmt`, and
//! `repack-manifest.json` written last with `"format": "int4-rans64-t1"`, the sha256 of each
//! blob (`records`) and of each original int4-row tensor (`originals`). No shared table is
//! written: each chunk carries its own model.
//!
//! Multiplying: [`matmul`] splits a fused matmul into row bands across threads (chunks are
//! independent, so each band decodes only from its own first chunk).
//!
//! Memory: [`decode_hash`] (what `verify` runs) decodes at most `threads` chunks at a time
//! (each at most 64 MiB, 1 MiB by default), so a hostile blob that declares a huge size costs
//! time proportional to that size but never more memory. [`decode_all`] (what `unpack` runs)
//! materialises the tensor, as it must to write it back.

use sha2::{Digest as _, Sha256};
use tetrad_quant::adapter::{Acts, AdapterError};
use tetrad_quant::adapter_rans64::Rans64Matrix;
use tetrad_quant::isa::Isa;
use tetrad_rans::rans64::{self, Arm, Blob, ChunkDecoder};

use crate::error::{Class, Refusal};

pub use tetrad_rans::rans64::FORMAT_NAME;

/// Encodes one weight's int4-row bytes (chunk shift `shift`) and proves the blob decodes back
/// to them before anyone sees it.
pub fn encode_verified(name: &str, packed: &[u8], shift: u8) -> Result<Vec<u8>, Refusal> {
    let mut blob = vec![0u8; rans64::max_encoded_len(packed.len(), shift)];
    let len = rans64::encode_into(packed, shift, &mut blob)
        .map_err(|e| Refusal::of(&e, format!("{name}: {e}")))?;
    blob.truncate(len);
    let mut back = vec![0u8; packed.len()];
    rans64::decode_into(&blob, &mut back).map_err(|e| {
        Refusal::new(Class::Internal, format!("{name}: own blob does not decode: {e}"))
    })?;
    if back != packed {
        return Err(Refusal::new(
            Class::Internal,
            format!("{name}: blob decodes to different bytes"),
        ));
    }
    Ok(blob)
}

/// Decodes a blob (best arm, chunks in batches of `threads` decoded in parallel, every seal
/// checked) and returns its byte count and the sha256 of the decoded bytes. The error is the
/// first refusal in chunk order, exactly what a sequential decode would report.
pub fn decode_hash(blob: &[u8], threads: usize) -> Result<(u64, [u8; 32]), rans64::Error> {
    let parsed = Blob::parse(blob)?;
    let arm = Arm::best();
    let n = parsed.n_chunks();
    let threads = threads.clamp(1, n.max(1));
    let step = 1usize << parsed.chunk_shift();
    // At most `threads` chunks in memory; never more than the blob declares.
    let cap = usize::try_from(parsed.n_bytes()).unwrap_or(usize::MAX).min(threads * step);
    let mut buf = vec![0u8; cap];
    let mut hasher = Sha256::new();
    let mut done = 0;
    while done < n {
        // Chunk indices; each thread opens its own chunk (the version-2 check is a pass over
        // the chunk's stored bytes, so it runs in parallel too).
        let batch: Vec<usize> = (done..n.min(done + threads)).collect();
        let lens: Vec<usize> = batch.iter().map(|&c| range_len(&parsed, c)).collect();
        let mut results: Vec<Result<(), rans64::Error>> = Vec::with_capacity(batch.len());
        std::thread::scope(|scope| {
            let mut rest = &mut buf[..];
            let mut handles = Vec::with_capacity(batch.len());
            for (&c, &len) in batch.iter().zip(&lens) {
                let (piece, tail) = rest.split_at_mut(len);
                rest = tail;
                let parsed = &parsed;
                handles.push(scope.spawn(move || -> Result<(), rans64::Error> {
                    ChunkDecoder::new_with(parsed.chunk(c)?, arm)?.decode_next(piece)
                }));
            }
            for h in handles {
                results.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            }
        });
        if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
            return Err(e);
        }
        let total: usize = lens.iter().sum();
        hasher.update(&buf[..total]);
        done += lens.len();
    }
    Ok((parsed.n_bytes(), hasher.finalize().into()))
}

/// Decoded length of chunk `c` (chunks are at most 64 MiB).
fn range_len(b: &Blob<'_>, c: usize) -> usize {
    let r = b.chunk_range(c);
    usize::try_from(r.end - r.start).unwrap_or(usize::MAX)
}

/// Decodes a whole blob (best arm, `threads` threads), every seal checked. A declared size
/// this machine cannot allocate is refused as `E_OVERSIZE` (never an allocation abort).
pub fn decode_all(blob: &[u8], threads: usize) -> Result<Vec<u8>, Refusal> {
    let refuse = |e: rans64::Error| Refusal::of(&e, e.to_string());
    let parsed = Blob::parse(blob).map_err(refuse)?;
    let oversize = || {
        Refusal::new(
            Class::Oversize,
            format!("decodes to {} bytes, more than this machine can allocate", parsed.n_bytes()),
        )
    };
    let n = usize::try_from(parsed.n_bytes()).map_err(|_| oversize())?;
    let mut out = crate::io::try_zeroed(n).ok_or_else(oversize)?;
    rans64::decode_threads(blob, &mut out, threads.max(1)).map_err(refuse)?;
    Ok(out)
}

/// Threads to decode with when the caller does not say: the machine's parallelism.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `y = acts · Wᵀ` for an `int4-rans64-t1` matrix on `threads` threads: the rows are split
/// into `threads` bands, each decoded from its own first chunk and multiplied by the fused
/// adapter ([`Rans64Matrix::band_with`]); the bands together decode every chunk to its end,
/// so every seal is checked. Each row is computed by the same kernel call on the same bytes
/// whatever the split, so `y` is bit-identical for any thread count. On error `y` is
/// zero-filled.
pub fn matmul(
    m: &Rans64Matrix<'_>,
    isa: Isa,
    arm: Arm,
    acts: Acts<'_>,
    y: &mut [f32],
    threads: usize,
) -> Result<(), AdapterError> {
    let (o, s) = (m.o(), acts.s());
    let shapes_ok = s.checked_mul(o) == Some(y.len()) && acts.check(m.i()).is_ok();
    if threads <= 1 || o < 2 || !shapes_ok {
        // The single-threaded path also reports shape errors.
        return m.matmul_with(isa, arm, acts, y);
    }
    let out = crate::adapter::row_bands(o, s, y, threads, |rows| m.band_with(isa, arm, acts, rows));
    if out.is_err() {
        y.fill(0.0);
    }
    out
}

// The tests code realistic weights from `synth`, which only the `cli` feature builds.
#[cfg(all(test, feature = "cli"))]
mod tests {
    use super::*;

    #[test]
    fn decode_hash_matches_a_plain_decode_for_any_thread_count() {
        let packed = crate::synth::int4_bytes(3 * 4096 + 77, 5);
        let blob = encode_verified("t", &packed, 12).unwrap();
        let want: [u8; 32] = Sha256::digest(&packed).into();
        for threads in [1, 2, 3, 8] {
            assert_eq!(decode_hash(&blob, threads).unwrap(), (packed.len() as u64, want));
        }
        assert_eq!(decode_all(&blob, 2).unwrap(), packed);
        // The first refusal in chunk order (or the decoded bytes' digest), whatever the batch
        // size, for damage anywhere.
        let mut refused = 0;
        for k in (rans64::HEADER_LEN..blob.len()).step_by(97) {
            let mut bad = blob.clone();
            bad[k] ^= 0x5A;
            let mut out = vec![0u8; packed.len()];
            let seq = rans64::decode_with(Arm::Scalar, &bad, &mut out)
                .map(|()| (packed.len() as u64, Sha256::digest(&out).into()));
            refused += usize::from(seq.is_err());
            for threads in [1, 2, 4] {
                assert_eq!(decode_hash(&bad, threads), seq, "byte {k}, {threads} threads");
            }
        }
        assert!(refused > 10, "{refused}");
    }

    #[test]
    fn threaded_matmul_refuses_hostile_activation_counts() {
        let (o, i) = (64, 96);
        let packed = crate::synth::int4_bytes(o * i / 2, 6);
        let blob = encode_verified("t", &packed, 12).unwrap();
        let scales = vec![0.01f32; o];
        let m = Rans64Matrix::new(&blob, &scales, o, i).unwrap();
        let x = vec![0.5f32; i];
        for s in [usize::MAX, usize::MAX / 64 + 1, 1 << 40, 2] {
            let mut y = vec![f32::NAN; o];
            let e = matmul(&m, Isa::Scalar, Arm::Scalar, Acts::F32 { x: &x, s }, &mut y, 2);
            let class = Class::of(&e.unwrap_err());
            assert!(
                matches!(class, Class::KernelLength | Class::KernelOverflow),
                "S = {s}: {class}"
            );
            assert!(y.iter().all(|&v| v == 0.0));
        }
        let mut y = vec![0f32; o];
        matmul(&m, Isa::Scalar, Arm::Scalar, Acts::F32 { x: &x, s: 1 }, &mut y, 2).unwrap();
    }
}
