//! The CFS1 codec: two interleaved nibble rANS states over a 4096-slot table, with raw fallback.
//!
//! (Overview and examples are written with the codec; see `docs/cfs1.md`.)
#![no_std]
#![forbid(unsafe_code)]
