//! Containers and prepared tensors: `tetrad_container_*`, `tetrad_tensor_*`.
//!
//! A thin layer over [`tetrad_engine::container`] and [`tetrad_engine::prepared`]: a
//! container handle owns an opened [`Container`]; a tensor handle holds the container
//! (shared) and the tensor prepared from it ([`PreparedTensor`]: format decided, shapes and
//! bytes checked, scales widened, decoder tables and scratch made, once), so a decode or a
//! one-thread multiply repeats none of that and allocates nothing for f32 activations.
//! `tetrad_tensor_prepare` refuses what `Container::tensor` refuses; a refusal of the
//! preparing that comes after it (a damaged `int4-rans64-t1` chunk, `E_CHECKSUM`) is kept and
//! returned by every decode and multiply, as when those calls found it themselves.

use std::ffi::c_char;
use std::path::PathBuf;
use std::sync::Arc;

use tetrad_engine::container::Container;
use tetrad_engine::error::Refusal;
use tetrad_engine::prepared::PreparedTensor;
use tetrad_quant::adapter::Acts;
use tetrad_quant::kernels::quantize_activations;

use super::error::{Failure, intern};
use super::ffi::{guard, guard_value, handle, slice, slice_mut};

/// An opened checkpoint (`tetrad_container` in C).
#[derive(Debug)]
pub struct TetradContainer {
    inner: Arc<Container>,
}

/// A prepared tensor (`tetrad_tensor` in C).
#[derive(Debug)]
pub struct TetradTensor {
    /// Borrows from `*container` (see `tetrad_tensor_prepare`); declared first, so dropped
    /// before the container it borrows.
    prepared: Result<PreparedTensor<'static>, Refusal>,
    /// Keeps what `prepared` borrows alive (never read otherwise).
    #[allow(dead_code)]
    container: Arc<Container>,
    i: u64,
    format: &'static std::ffi::CStr,
    decoded_len: u64,
}

// Handles are shared across threads: the container and the tensor are never mutated.
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<TetradContainer>();
    shareable::<TetradTensor>();
};

impl TetradTensor {
    /// The prepared tensor, borrowing no longer than the handle (and so its container), or
    /// the refusal met while preparing it.
    fn prepared(&self) -> Result<&PreparedTensor<'_>, Failure> {
        // Shortening `'static` to the handle's borrow is a plain subtyping coercion.
        self.prepared.as_ref().map_err(|r| r.clone().into())
    }
}

fn path_of(bytes: &[u8]) -> Result<PathBuf, Failure> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(bytes)
            .map(PathBuf::from)
            .map_err(|_| Failure::new("E_ARGUMENT", "path is not UTF-8"))
    }
}

/// Opens a shard file or a directory of shards at `path` (`path_len` bytes, no NUL needed)
/// and stores a new handle in `*out`.
///
/// # Safety
/// `path` must point to `path_len` readable bytes; `out` must be valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_container_open(
    path: *const c_char,
    path_len: usize,
    out: *mut *mut TetradContainer,
) -> i32 {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: `out` is non-null and valid for one write (caller contract).
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: `path` points to `path_len` readable bytes (caller contract).
        let bytes = unsafe { slice(path.cast::<u8>(), path_len, "path")? };
        if bytes.is_empty() {
            return Err(Failure::new("E_ARGUMENT", "path is empty"));
        }
        let c = Container::open(&path_of(bytes)?)?;
        let h = Box::into_raw(Box::new(TetradContainer { inner: Arc::new(c) }));
        // SAFETY: as above; the handle is handed to the caller, who frees it.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Releases a container handle (NULL is a no-op). Tensors prepared from it stay valid.
///
/// # Safety
/// `c` must be NULL or a handle from `tetrad_container_open` not yet freed, and no other
/// thread may be using it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_container_free(c: *mut TetradContainer) {
    guard_value((), || {
        if !c.is_null() {
            // SAFETY: `c` came from `Box::into_raw` in `tetrad_container_open` and is freed
            // once (caller contract).
            drop(unsafe { Box::from_raw(c) });
        }
    });
}

/// Prepares the tensor `name` (`name_len` bytes, UTF-8) with the `[O, I]` the model gives and
/// stores a new handle in `*out`. The tensor's format is decided here (stamp verified, or byte
/// arithmetic), and everything `Container::tensor` checks is checked.
///
/// # Safety
/// `c` must be a live container handle; `name` must point to `name_len` readable bytes; `out`
/// must be valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_tensor_prepare(
    c: *const TetradContainer,
    name: *const c_char,
    name_len: usize,
    o: u64,
    i: u64,
    out: *mut *mut TetradTensor,
) -> i32 {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: `out` is non-null and valid for one write (caller contract).
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: `c` is NULL or a live container handle (caller contract).
        let c = unsafe { handle(c, "container")? };
        // SAFETY: `name` points to `name_len` readable bytes (caller contract).
        let bytes = unsafe { slice(name.cast::<u8>(), name_len, "name")? };
        let name = std::str::from_utf8(bytes)
            .map_err(|_| Failure::new("E_ARGUMENT", "tensor name is not UTF-8"))?;
        let view = c.inner.tensor(name, o, i)?;
        let (format, decoded_len) = (intern(view.format().name()), view.decoded_len());
        let prepared = view.into_prepared(name);
        // SAFETY: `prepared` borrows the `Container` inside the `Arc` allocation of
        // `c.inner` (its shards' bytes; nothing of the view, which `into_prepared` consumed).
        // The handle keeps a clone of that `Arc`, so the container neither moves nor drops
        // while the handle lives, and it is never mutated; the field order drops `prepared`
        // first. The `'static` lifetime never leaves the handle: `TetradTensor::prepared`
        // lends it out shortened to the handle's borrow.
        let prepared = prepared.map(|p| unsafe {
            std::mem::transmute::<PreparedTensor<'_>, PreparedTensor<'static>>(p)
        });
        let t = TetradTensor { prepared, container: Arc::clone(&c.inner), i, format, decoded_len };
        let h = Box::into_raw(Box::new(t));
        // SAFETY: as above; the handle is handed to the caller, who frees it.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Releases a tensor handle (NULL is a no-op).
///
/// # Safety
/// `t` must be NULL or a handle from `tetrad_tensor_prepare` not yet freed, and no other
/// thread may be using it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_tensor_free(t: *mut TetradTensor) {
    guard_value((), || {
        if !t.is_null() {
            // SAFETY: `t` came from `Box::into_raw` in `tetrad_tensor_prepare` and is freed once
            // (caller contract).
            drop(unsafe { Box::from_raw(t) });
        }
    });
}

/// The tensor's format name (`"int4-row"`, `"int4-rans256-g0"`, …; a CFS1 int4-row weight
/// reports `"int4-row"`, what it decodes to), static; NULL if `t` is NULL.
///
/// # Safety
/// `t` must be NULL or a live tensor handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_tensor_format(t: *const TetradTensor) -> *const c_char {
    guard_value(std::ptr::null(), || {
        // SAFETY: `t` is NULL or a live tensor handle (caller contract).
        unsafe { handle(t, "tensor") }.map_or(std::ptr::null(), |t| t.format.as_ptr())
    })
}

/// Bytes `tetrad_tensor_decode` writes (the dense weight bytes; int4-row bytes for a
/// compressed tensor); 0 if `t` is NULL.
///
/// # Safety
/// `t` must be NULL or a live tensor handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_tensor_decoded_len(t: *const TetradTensor) -> u64 {
    guard_value(0, || {
        // SAFETY: `t` is NULL or a live tensor handle (caller contract).
        unsafe { handle(t, "tensor") }.map_or(0, |t| t.decoded_len)
    })
}

/// Decodes the tensor into `out` (exactly `tetrad_tensor_decoded_len` bytes, else
/// `E_OUTPUT_LEN`): a copy for a dense format, a checked decode for a compressed one.
///
/// # Safety
/// `t` must be a live tensor handle; `out` must point to `out_len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_tensor_decode(
    t: *const TetradTensor,
    out: *mut u8,
    out_len: usize,
) -> i32 {
    guard(|| {
        // SAFETY: `t` is NULL or a live tensor handle (caller contract).
        let t = unsafe { handle(t, "tensor")? };
        // SAFETY: `out` points to `out_len` writable bytes (caller contract).
        let out = unsafe { slice_mut(out, out_len, "out")? };
        t.prepared()?.decode_into(out)?;
        Ok(())
    })
}

/// `y = x · Wᵀ` with f32 activations: `x` is `S × I` (`x_len = S·I` floats), `y` is `S × O`
/// (`y_len = S·O` floats), row-major; `threads ≥ 1` OS threads (0 counts as 1). The
/// compressed formats are decoded tile by tile into the int4-row kernel, bit-identical to the
/// dense product of the decoded bytes. On a refusal `y` holds unspecified values.
///
/// # Safety
/// `t` must be a live tensor handle; `x` must point to `x_len` readable floats and `y` to
/// `y_len` writable floats, not overlapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_tensor_matmul_f32(
    t: *const TetradTensor,
    x: *const f32,
    x_len: usize,
    s: usize,
    y: *mut f32,
    y_len: usize,
    threads: usize,
) -> i32 {
    guard(|| {
        // SAFETY: `t` is NULL or a live tensor handle (caller contract).
        let t = unsafe { handle(t, "tensor")? };
        // SAFETY: `x` points to `x_len` readable floats (caller contract).
        let x = unsafe { slice(x, x_len, "x")? };
        // SAFETY: `y` points to `y_len` writable floats, disjoint from `x` (caller contract).
        let y = unsafe { slice_mut(y, y_len, "y")? };
        t.prepared()?.matmul_threads(Acts::F32 { x, s }, y, threads.max(1))?;
        Ok(())
    })
}

/// `y = x · Wᵀ` with int8 activations: each row of `x` (`S × I` f32, as for
/// `tetrad_tensor_matmul_f32`) is quantized to int8 codes with one scale per row (`sx =
/// max|x| / 127`, `q = round_half_even(x / sx)` in `[-127, 127]`; `tetrad_quantize_acts`
/// gives the same codes), and the product uses exact integer dot products. Formats without an
/// int8 path (f32, fp8) refuse by name. Allocates `S·I + S` bytes for the codes per call.
///
/// # Safety
/// As `tetrad_tensor_matmul_f32`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_tensor_matmul_q8(
    t: *const TetradTensor,
    x: *const f32,
    x_len: usize,
    s: usize,
    y: *mut f32,
    y_len: usize,
    threads: usize,
) -> i32 {
    guard(|| {
        // SAFETY: `t` is NULL or a live tensor handle (caller contract).
        let t = unsafe { handle(t, "tensor")? };
        // SAFETY: `x` points to `x_len` readable floats (caller contract).
        let x = unsafe { slice(x, x_len, "x")? };
        // SAFETY: `y` points to `y_len` writable floats, disjoint from `x` (caller contract).
        let y = unsafe { slice_mut(y, y_len, "y")? };
        let i = usize::try_from(t.i)
            .map_err(|_| Failure::new("E_SHAPE", "I does not fit this machine"))?;
        let n = s.checked_mul(i).ok_or_else(|| Failure::new("E_SHAPE", "S·I overflows"))?;
        if x.len() != n {
            return Err(Failure::new(
                "E_KERNEL_LENGTH",
                format!("x holds {} values, expected S·I = {n}", x.len()),
            ));
        }
        let (mut q, mut scales) = (vec![0i8; n], vec![0f32; s]);
        let acts = quantize_activations(x, s, i, &mut q, &mut scales)
            .map_err(|e| Failure::of(e.class(), &e))?;
        t.prepared()?.matmul_threads(Acts::Q8(&acts), y, threads.max(1))?;
        Ok(())
    })
}

/// Quantizes `S` rows of `I` f32 activations (`x_len = S·I`) to int8 codes `q` (`q_len =
/// S·I`) and per-row scales (`scales_len = S`), exactly as `tetrad_tensor_matmul_q8` does
/// (non-finite activations are refused, `E_KERNEL_NONFINITE_ACTIVATION`).
///
/// # Safety
/// `x` must point to `x_len` readable floats, `q` to `q_len` writable bytes and `scales` to
/// `scales_len` writable floats, none overlapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_quantize_acts(
    x: *const f32,
    x_len: usize,
    s: usize,
    i: usize,
    q: *mut i8,
    q_len: usize,
    scales: *mut f32,
    scales_len: usize,
) -> i32 {
    guard(|| {
        // SAFETY: `x` points to `x_len` readable floats (caller contract).
        let x = unsafe { slice(x, x_len, "x")? };
        // SAFETY: `q` points to `q_len` writable bytes, disjoint from the others.
        let q = unsafe { slice_mut(q, q_len, "q")? };
        // SAFETY: `scales` points to `scales_len` writable floats, disjoint from the others.
        let scales = unsafe { slice_mut(scales, scales_len, "scales")? };
        quantize_activations(x, s, i, q, scales).map_err(|e| Failure::of(e.class(), &e))?;
        Ok(())
    })
}
