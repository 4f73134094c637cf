//! Shared helpers of the integration tests: the golden vectors and small utilities.
#![allow(dead_code, unreachable_pub, clippy::cast_possible_truncation)]

use serde_json::Value;
use std::sync::OnceLock;
use tetrad_rans::Table;

/// The golden vectors (docs/vectors/vectors.json), parsed once.
pub fn vectors() -> &'static Value {
    static V: OnceLock<Value> = OnceLock::new();
    V.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/vectors/vectors.json");
        let text = std::fs::read_to_string(path).expect("read vectors.json");
        serde_json::from_str(&text).expect("parse vectors.json")
    })
}

/// The entries of one vector section (must be non-empty, so a renamed key cannot pass).
pub fn section(name: &str) -> &'static [Value] {
    let s = vectors()[name].as_array().unwrap_or_else(|| panic!("section {name} missing"));
    assert!(!s.is_empty(), "section {name} is empty");
    s
}

/// Lowercase hex → bytes.
pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// Bytes → lowercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|v| format!("{v:02x}")).collect()
}

/// A `[u32; 16]` from a JSON array.
pub fn arr16(v: &Value) -> [u32; 16] {
    let a = v.as_array().expect("array");
    assert_eq!(a.len(), 16);
    std::array::from_fn(|i| a[i].as_u64().expect("int") as u32)
}

/// A `[u64; 16]` from a JSON array.
pub fn arr16_u64(v: &Value) -> [u64; 16] {
    let a = v.as_array().expect("array");
    assert_eq!(a.len(), 16);
    std::array::from_fn(|i| a[i].as_u64().expect("int"))
}

/// The table of a vector entry with `freq` and `scale_bits`.
pub fn table_of(e: &Value) -> Table {
    let sb = e["scale_bits"].as_u64().expect("scale_bits") as u32;
    Table::from_freq(sb, &arr16(&e["freq"])).expect("vector table is valid")
}

/// Packs one-symbol-per-byte nibbles, low nibble first (odd count: high nibble 0).
pub fn pack(nibbles: &[u8]) -> Vec<u8> {
    nibbles.chunks(2).map(|c| c[0] | c.get(1).map_or(0, |h| h << 4)).collect()
}

/// Unpacks packed int4 bytes into `n` nibbles.
pub fn unpack(packed: &[u8], n: usize) -> Vec<u8> {
    (0..n).map(|j| (packed[j / 2] >> ((j & 1) * 4)) & 15).collect()
}

/// A small deterministic PRNG (SplitMix64) so tests need no seeding plumbing.
pub struct Rng(pub u64);
impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `n` symbols drawn from the table's own distribution.
pub fn sample(table: &Table, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..n).map(|_| table.symbol(rng.below(u64::from(table.m())) as usize)).collect()
}

/// The decode arms to test: every available one. An arm named in `TETRAD_REQUIRE_ISA`
/// (comma-separated arm names) that is unavailable fails the test instead of being skipped.
/// The variable is shared with tetrad-quant's kernel arms: a name this crate does not know
/// (`neon-dot`, `avx512-vnni`, …) is left to tetrad-quant, whose kernel tests reject a name
/// that neither crate knows.
pub fn arms() -> Vec<tetrad_rans::Arm> {
    use tetrad_rans::Arm;
    if let Ok(req) = std::env::var("TETRAD_REQUIRE_ISA") {
        for name in req.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if let Some(arm) = Arm::from_name(name) {
                assert!(arm.is_available(), "required arm {name} is not available here");
            }
        }
    }
    let arms: Vec<Arm> = Arm::ALL.iter().copied().filter(|a| a.is_available()).collect();
    assert!(arms.contains(&Arm::Scalar) && arms.contains(&Arm::ScalarBranchFree));
    arms
}
