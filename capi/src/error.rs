//! The calling thread's last outcome: a refusal class and a message.
//!
//! Every `tetrad_*` function that returns a status records its outcome here (success records
//! class `"OK"` and an empty message), per thread, so concurrent callers never see each
//! other's errors. Class strings are interned: the pointer [`tetrad_last_class`] returns stays
//! valid for the life of the process.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::sync::Mutex;

use super::ffi::guard_value;

/// A refusal on its way to the caller.
#[derive(Debug)]
pub(crate) struct Failure {
    class: &'static str,
    message: String,
}

impl Failure {
    /// A refusal of `class` with a message.
    pub(crate) fn new(class: &'static str, message: impl Into<String>) -> Self {
        Self { class, message: message.into() }
    }

    /// `E_NULL`: a required pointer was NULL.
    pub(crate) fn null(what: &str) -> Self {
        Self::new("E_NULL", format!("{what} is NULL"))
    }

    /// A refusal from an error type with a class name.
    pub(crate) fn of(class: &'static str, e: &dyn std::fmt::Display) -> Self {
        Self::new(class, e.to_string())
    }
}

impl From<tetrad_engine::error::Refusal> for Failure {
    fn from(r: tetrad_engine::error::Refusal) -> Self {
        Self::new(r.class.name(), r.detail)
    }
}

struct Last {
    class: &'static CStr,
    message: String,
}

thread_local! {
    static LAST: RefCell<Last> = const { RefCell::new(Last { class: c"OK", message: String::new() }) };
}

/// Interned NUL-terminated copies of class names (a small, fixed set: each is leaked once).
static CLASSES: Mutex<Vec<(&'static str, &'static CStr)>> = Mutex::new(Vec::new());

/// The process-lifetime C string of `class` (`"E_UNKNOWN"` if it held a NUL, which no class
/// does).
pub(crate) fn intern(class: &'static str) -> &'static CStr {
    let mut classes = CLASSES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, c)) = classes.iter().find(|(s, _)| *s == class) {
        return c;
    }
    let Ok(owned) = CString::new(class) else {
        return c"E_UNKNOWN";
    };
    let leaked: &'static CStr = Box::leak(owned.into_boxed_c_str());
    classes.push((class, leaked));
    leaked
}

pub(crate) fn set_ok() {
    let _ = LAST.try_with(|l| {
        let mut l = l.borrow_mut();
        l.class = c"OK";
        l.message.clear();
    });
}

pub(crate) fn set_failure(f: Failure) {
    let class = intern(f.class);
    let message = f.message.replace('\0', " ");
    let _ = LAST.try_with(|l| {
        let mut l = l.borrow_mut();
        l.class = class;
        l.message = message;
    });
}

/// The class of the calling thread's last status-returning call: `"OK"` after a success, else
/// its refusal class (`"E_NULL"`, `"E_TRUNCATED"`, …). The string is static (valid for the
/// life of the process).
#[unsafe(no_mangle)]
pub extern "C" fn tetrad_last_class() -> *const c_char {
    guard_value(c"E_INTERNAL".as_ptr(), || {
        LAST.try_with(|l| l.borrow().class.as_ptr()).unwrap_or(c"OK".as_ptr())
    })
}

/// Copies the message of the calling thread's last status-returning call into `buf`
/// (`buf_len` bytes, NUL-terminated and truncated to fit when `buf_len > 0`; `buf` may be NULL
/// when `buf_len` is 0) and returns the message's full length in bytes, without the NUL (as
/// `snprintf` does). The message is empty after a success.
///
/// # Safety
/// `buf` must be NULL or point to `buf_len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tetrad_last_message(buf: *mut c_char, buf_len: usize) -> usize {
    guard_value(0, || {
        let msg = LAST.try_with(|l| l.borrow().message.clone()).unwrap_or_default();
        let bytes = msg.as_bytes();
        if buf_len > 0 && !buf.is_null() {
            let n = bytes.len().min(buf_len - 1);
            // SAFETY: `buf` is non-null and by the contract points to `buf_len` writable bytes;
            // `n + 1 <= buf_len` bytes are written, and `bytes` is a separate allocation.
            let dst = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), n + 1) };
            dst[..n].copy_from_slice(&bytes[..n]);
            dst[n] = 0;
        }
        bytes.len()
    })
}
