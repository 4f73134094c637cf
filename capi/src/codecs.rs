//! Codecs on caller buffers: CFS1 (`tetrad_cfs1_*`) and `int4-rans64-t1` (`tetrad_rans64_*`).
//!
//! Straight calls into [`tetrad_fse`] and [`tetrad_rans::rans64`]; nothing is allocated.

use tetrad_rans::rans64;

use super::error::Failure;
use super::ffi::{guard, slice, slice_mut, write_opt, write_out};

/// The output capacity `tetrad_cfs1_compress` needs for `n` input bytes: `n + 73` (saturating).
/// Blobs themselves are never longer than `n + 9`.
#[unsafe(no_mangle)]
pub extern "C" fn tetrad_cfs1_bound(n: usize) -> usize {
    tetrad_fse::max_encoded_len(n)
}

/// Compresses `src` (`src_len` bytes, below 4 GiB) as one CFS1 blob into `dst` (`dst_cap ≥
/// tetrad_cfs1_bound(src_len)`, else `E_DST_TOO_SMALL`) and stores its length in `*written`.
///
/// # Safety
/// `src` must point to `src_len` readable bytes, `dst` to `dst_cap` writable bytes (not
/// overlapping `src`); `written` must be valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_cfs1_compress(
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_cap: usize,
    written: *mut usize,
) -> i32 {
    guard(|| {
        // SAFETY: `src` points to `src_len` readable bytes (caller contract).
        let src = unsafe { slice(src, src_len, "src")? };
        // SAFETY: `dst` points to `dst_cap` writable bytes, disjoint from `src`.
        let dst = unsafe { slice_mut(dst, dst_cap, "dst")? };
        if written.is_null() {
            return Err(Failure::null("written"));
        }
        let n = tetrad_fse::encode_into(src, dst).map_err(|e| Failure::of(e.class(), &e))?;
        // SAFETY: `written` is non-null and valid for one write (caller contract).
        unsafe { write_out(written, n, "written") }
    })
}

/// Reads a CFS1 blob's header (every framing check that needs no output buffer) and stores
/// the number of bytes it decodes to in `*raw_len`.
///
/// # Safety
/// `src` must point to `src_len` readable bytes; `raw_len` must be valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_cfs1_decoded_len(
    src: *const u8,
    src_len: usize,
    raw_len: *mut u64,
) -> i32 {
    guard(|| {
        // SAFETY: `src` points to `src_len` readable bytes (caller contract).
        let src = unsafe { slice(src, src_len, "src")? };
        if raw_len.is_null() {
            return Err(Failure::null("raw_len"));
        }
        let h = tetrad_fse::Header::parse(src).map_err(|e| Failure::of(e.class(), &e))?;
        // SAFETY: `raw_len` is non-null and valid for one write (caller contract).
        unsafe { write_out(raw_len, u64::from(h.rawlen), "raw_len") }
    })
}

/// Decompresses the CFS1 blob `src` into `dst` (`dst_cap` bytes, at least the blob's raw
/// length, else `E_CAPACITY`; bytes past it are never touched) and stores the decoded length
/// in `*written` (which may be NULL). Every refusal of the format is by name.
///
/// # Safety
/// `src` must point to `src_len` readable bytes, `dst` to `dst_cap` writable bytes (not
/// overlapping `src`); `written` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_cfs1_decompress(
    src: *const u8,
    src_len: usize,
    dst: *mut u8,
    dst_cap: usize,
    written: *mut usize,
) -> i32 {
    guard(|| {
        // SAFETY: `src` points to `src_len` readable bytes (caller contract).
        let src = unsafe { slice(src, src_len, "src")? };
        // SAFETY: `dst` points to `dst_cap` writable bytes, disjoint from `src`.
        let dst = unsafe { slice_mut(dst, dst_cap, "dst")? };
        let n = tetrad_fse::decode_into(src, dst).map_err(|e| Failure::of(e.class(), &e))?;
        // SAFETY: `written` is NULL or valid for one write (caller contract).
        unsafe { write_opt(written, n) };
        Ok(())
    })
}

/// The output capacity `tetrad_rans64_encode` needs for `n` packed bytes with chunks of
/// `2^chunk_shift` bytes (`chunk_shift` is clamped to 12..=26 here; the encoder refuses a
/// shift outside it); 0 when `n` is above the format's 2^48-byte limit.
#[unsafe(no_mangle)]
pub extern "C" fn tetrad_rans64_bound(n: usize, chunk_shift: u32) -> usize {
    if n as u64 > rans64::MAX_BYTES {
        return 0;
    }
    let shift = u8::try_from(chunk_shift).unwrap_or(u8::MAX);
    rans64::max_encoded_len(n, shift)
}

/// Encodes `src` (packed int4 bytes) as an `int4-rans64-t1` blob with chunks of
/// `2^chunk_shift` bytes (12..=26, else `E_CHUNK_SHIFT`; `TETRAD_RANS64_DEFAULT_CHUNK_SHIFT`
/// is 20) into `dst` (`dst_cap ≥ tetrad_rans64_bound`) and stores its length in `*written`.
/// Deterministic: the bytes depend only on `src` and `chunk_shift`.
///
/// # Safety
/// `src` must point to `src_len` readable bytes, `dst` to `dst_cap` writable bytes (not
/// overlapping `src`); `written` must be valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_rans64_encode(
    src: *const u8,
    src_len: usize,
    chunk_shift: u32,
    dst: *mut u8,
    dst_cap: usize,
    written: *mut usize,
) -> i32 {
    guard(|| {
        // SAFETY: `src` points to `src_len` readable bytes (caller contract).
        let src = unsafe { slice(src, src_len, "src")? };
        // SAFETY: `dst` points to `dst_cap` writable bytes, disjoint from `src`.
        let dst = unsafe { slice_mut(dst, dst_cap, "dst")? };
        if written.is_null() {
            return Err(Failure::null("written"));
        }
        let shift = u8::try_from(chunk_shift).unwrap_or(u8::MAX);
        let n = rans64::encode_into(src, shift, dst).map_err(|e| Failure::of(e.class(), &e))?;
        // SAFETY: `written` is non-null and valid for one write (caller contract).
        unsafe { write_out(written, n, "written") }
    })
}

/// Parses an `int4-rans64-t1` blob's header and chunk index and stores the number of bytes it
/// decodes to in `*n_bytes`.
///
/// # Safety
/// `blob` must point to `blob_len` readable bytes; `n_bytes` must be valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_rans64_decoded_len(
    blob: *const u8,
    blob_len: usize,
    n_bytes: *mut u64,
) -> i32 {
    guard(|| {
        // SAFETY: `blob` points to `blob_len` readable bytes (caller contract).
        let blob = unsafe { slice(blob, blob_len, "blob")? };
        if n_bytes.is_null() {
            return Err(Failure::null("n_bytes"));
        }
        let b = rans64::Blob::parse(blob).map_err(|e| Failure::of(e.class(), &e))?;
        // SAFETY: `n_bytes` is non-null and valid for one write (caller contract).
        unsafe { write_out(n_bytes, b.n_bytes(), "n_bytes") }
    })
}

/// Decodes an `int4-rans64-t1` blob into `dst` (exactly its decoded length, else
/// `E_OUTPUT_LENGTH`) with the best decode arm, checking every chunk.
///
/// # Safety
/// `blob` must point to `blob_len` readable bytes and `dst` to `dst_len` writable bytes, not
/// overlapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_rans64_decode(
    blob: *const u8,
    blob_len: usize,
    dst: *mut u8,
    dst_len: usize,
) -> i32 {
    guard(|| {
        // SAFETY: `blob` points to `blob_len` readable bytes (caller contract).
        let blob = unsafe { slice(blob, blob_len, "blob")? };
        // SAFETY: `dst` points to `dst_len` writable bytes, disjoint from `blob`.
        let dst = unsafe { slice_mut(dst, dst_len, "dst")? };
        rans64::decode_into(blob, dst).map_err(|e| Failure::of(e.class(), &e))?;
        Ok(())
    })
}
