//! aarch64 decode arms.

pub(in crate::decode) mod neon;
