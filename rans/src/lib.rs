//! Static order-0 rANS over the 16-symbol nibble alphabet, and the `int4-rans256-g0` record.
//!
//! (Overview, examples and the format essay are written with the codec; see `docs/int4-rans256-g0.md`.)
#![no_std]
#![deny(unsafe_code)] // `unsafe` is allowed only inside `arch/` modules (STYLE.md).
