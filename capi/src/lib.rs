//! `libtetrad`: tetrad's C ABI, declared in `include/tetrad.h`.
//!
//! Two surfaces live in one shared (`libtetrad.so` / `.dylib`) and one static (`libtetrad.a`)
//! library:
//!
//! - [`engine`] and [`codecs`]: tetrad's own ABI (`tetrad_*`): open a container, prepare a
//!   tensor by name and `[O, I]`, multiply with it (f32 or int8-quantized activations), decode
//!   it to dense bytes; CFS1 and `int4-rans64-t1` encode/decode of caller buffers.
//! - [`colibri`]: the seven `rc_*` functions of colibrì's `librans_c` bridge, with its C
//!   signatures, conventions, error numbers and names, so the library copied next to colibrì's
//!   Python tools as `librans_c.so` is what they load.
//!
//! # Conventions of the `tetrad_*` functions
//! - Every buffer is a pointer and an explicit length. A NULL pointer is accepted only with
//!   length 0; otherwise the call is refused with `E_NULL`.
//! - A call that can fail returns an `int32_t` status: `TETRAD_OK` (0), `TETRAD_REFUSED` (1:
//!   the input or the call was refused by name), or `TETRAD_PANIC` (2: an internal error was
//!   caught at the boundary; class `E_INTERNAL`). The class (`"E_TRUNCATED"`, …) and a message
//!   of the calling thread's last call are read with [`tetrad_last_class`](error::tetrad_last_class)
//!   and [`tetrad_last_message`](error::tetrad_last_message), like `errno`.
//! - No panic crosses the boundary: every entry point runs inside `catch_unwind`.
//! - Handles are opaque; `*_free` releases them and accepts NULL. A prepared tensor keeps its
//!   container alive, so the two may be freed in any order.
//! - Containers and tensors are immutable after creation: one handle may be used from any
//!   number of threads at once. Freeing a handle while another thread uses it is the caller's
//!   bug.
//!
//! # Unsafe policy
//! This crate is an FFI boundary, so `unsafe` is allowed here (unlike the codec crates): it is
//! confined to turning caller pointers into slices and handles (the helpers in [`ffi`]) and
//! to the `no_mangle` attributes of the exported functions (and one lifetime extension: a
//! tensor handle holds the tensor prepared from the container it keeps alive, `engine.rs`),
//! each block with a `// SAFETY:`
//! comment stating the caller contract it relies on, which the header documents per function.

// The modules name each other through `super::`, never `crate::`: the fuzz target
// (`fuzz/fuzz_targets/capi.rs`) compiles this file as a module of its own crate.
pub mod codecs;
pub mod colibri;
pub mod engine;
pub mod error;
pub mod ffi;

/// Major version (`TETRAD_VERSION_MAJOR`).
pub const VERSION_MAJOR: u32 = 0;
/// Minor version (`TETRAD_VERSION_MINOR`).
pub const VERSION_MINOR: u32 = 1;
/// Patch version (`TETRAD_VERSION_RELEASE`).
pub const VERSION_RELEASE: u32 = 0;

/// The library's version as a number: `MAJOR·10000 + MINOR·100 + RELEASE`
/// (`TETRAD_VERSION_NUMBER` of the header it was built with).
#[unsafe(no_mangle)]
pub extern "C" fn tetrad_version_number() -> u32 {
    VERSION_MAJOR * 10_000 + VERSION_MINOR * 100 + VERSION_RELEASE
}

/// The library's version as a NUL-terminated string (`"0.1.0"`), static.
#[unsafe(no_mangle)]
pub extern "C" fn tetrad_version_string() -> *const std::ffi::c_char {
    c"0.1.0".as_ptr()
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_string_matches_the_package() {
        let s = super::tetrad_version_string();
        // SAFETY: the pointer is a static C string literal.
        let c = unsafe { core::ffi::CStr::from_ptr(s) };
        assert_eq!(c.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        let v =
            format!("{}.{}.{}", super::VERSION_MAJOR, super::VERSION_MINOR, super::VERSION_RELEASE);
        assert_eq!(v, env!("CARGO_PKG_VERSION"));
    }
}
