//! Caller pointers to Rust slices and references, and the panic guard.
//!
//! Every helper takes the pointer and the length the caller passed and refuses NULL with a
//! nonzero length (`E_NULL`); a NULL or dangling pointer with length 0 becomes an empty slice.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::error::{Failure, set_failure, set_ok};

/// `TETRAD_OK`: the call succeeded.
pub const STATUS_OK: i32 = 0;
/// `TETRAD_REFUSED`: the input or the call was refused by name.
pub const STATUS_REFUSED: i32 = 1;
/// `TETRAD_PANIC`: an internal error was caught at the boundary (class `E_INTERNAL`).
pub const STATUS_PANIC: i32 = 2;

/// Runs `f` inside `catch_unwind` and records its outcome as the thread's last error.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Failure>) -> i32 {
    // AssertUnwindSafe: on a panic nothing `f` touched is used again; the caller's buffers
    // hold unspecified bytes then, as the header says for every failed call.
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            set_ok();
            STATUS_OK
        }
        Ok(Err(failure)) => {
            set_failure(failure);
            STATUS_REFUSED
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            set_failure(Failure::new("E_INTERNAL", format!("internal error: {what}")));
            STATUS_PANIC
        }
    }
}

/// Runs `f` inside `catch_unwind`, returning `fallback` if it panics (for the functions that
/// return a value rather than a status).
pub(crate) fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// The caller's `len` bytes at `ptr` as a slice.
///
/// # Safety
/// Unless `len` is 0, `ptr` must be NULL or point to `len` readable, initialised elements that
/// nothing writes while the slice lives.
pub(crate) unsafe fn slice<'a, T>(
    ptr: *const T,
    len: usize,
    what: &str,
) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: `ptr` is non-null and, by this function's contract, points to `len` readable
    // initialised elements that are not written while the slice lives.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The caller's `len` writable elements at `ptr` as a mutable slice.
///
/// # Safety
/// Unless `len` is 0, `ptr` must be NULL or point to `len` writable elements (initialised: the
/// types used here have no invalid bit patterns) that nothing else accesses while the slice
/// lives.
pub(crate) unsafe fn slice_mut<'a, T>(
    ptr: *mut T,
    len: usize,
    what: &str,
) -> Result<&'a mut [T], Failure> {
    if len == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: `ptr` is non-null and, by this function's contract, points to `len` writable
    // elements that nothing else accesses while the slice lives.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// Writes `value` through an out-pointer, refusing NULL.
///
/// # Safety
/// `ptr` must be NULL or valid for one aligned write of `T`.
pub(crate) unsafe fn write_out<T>(ptr: *mut T, value: T, what: &str) -> Result<(), Failure> {
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: `ptr` is non-null and, by this function's contract, valid for one aligned write.
    unsafe { ptr.write(value) };
    Ok(())
}

/// Writes `value` through an out-pointer when it is not NULL (optional outputs).
///
/// # Safety
/// `ptr` must be NULL or valid for one aligned write of `T`.
pub(crate) unsafe fn write_opt<T>(ptr: *mut T, value: T) {
    if !ptr.is_null() {
        // SAFETY: `ptr` is non-null and, by this function's contract, valid for one write.
        unsafe { ptr.write(value) };
    }
}

/// A handle the caller passed, as a shared reference.
///
/// # Safety
/// `ptr` must be NULL or a handle returned by this library's constructor for `T` and not yet
/// freed.
pub(crate) unsafe fn handle<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, Failure> {
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-null, and by this function's contract a live `Box<T>` allocation made by
    // this library, which is only read through shared references.
    Ok(unsafe { &*ptr })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_status_and_a_class() {
        let st = guard(|| panic!("planted"));
        assert_eq!(st, STATUS_PANIC);
        let class = super::super::error::tetrad_last_class();
        // SAFETY: tetrad_last_class returns a static NUL-terminated string.
        let class = unsafe { std::ffi::CStr::from_ptr(class) };
        assert_eq!(class.to_str().unwrap(), "E_INTERNAL");
        let mut buf = [0 as std::ffi::c_char; 64];
        // SAFETY: `buf` holds 64 writable bytes.
        let n = unsafe { super::super::error::tetrad_last_message(buf.as_mut_ptr(), buf.len()) };
        // SAFETY: the message was NUL-terminated inside `buf`.
        let msg = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(n, msg.to_bytes().len());
        assert!(msg.to_str().unwrap().contains("planted"));
        assert_eq!(guard_value(7, || panic!("planted")), 7);
        assert_eq!(guard(|| Ok(())), STATUS_OK);
    }

    #[test]
    fn null_is_refused_only_with_a_length() {
        // SAFETY: NULL with length 0 is allowed by the contract.
        assert!(unsafe { slice::<u8>(std::ptr::null(), 0, "p") }.unwrap().is_empty());
        // SAFETY: NULL is checked before any read.
        let e = unsafe { slice::<u8>(std::ptr::null(), 1, "p") }.unwrap_err();
        assert!(format!("{e:?}").contains("E_NULL"));
    }
}
