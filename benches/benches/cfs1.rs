//! Criterion benchmarks of the cfs1 codec (filled in with the codec).
#![allow(missing_docs)]

fn main() {}
