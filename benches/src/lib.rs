//! Shared helpers of the criterion benchmarks: realistic data lives in [`tetrad::synth`].
pub use tetrad::synth;
