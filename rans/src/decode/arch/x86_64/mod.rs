//! x86-64 decode arms.

pub(in crate::decode) mod avx2;
pub(in crate::decode) mod avx512;
