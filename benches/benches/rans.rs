//! Criterion benchmarks of the rans codec (filled in with the codec).
#![allow(missing_docs)]

fn main() {}
