//! x86-64 decode arms.

pub(in crate::decode) mod avx2;
