//! The GGUF directory reader `tetrad stats` uses (`tetrad::gguf`), on hostile files.
//!
//! - Any bytes → `gguf::parse`: `Ok` or an `E_GGUF_*` refusal with a message, never a panic,
//!   and no allocation sized by a count the file cannot back.
//! - On `Ok`: the alignment is a power of two; tensor names are unique and have at most 4
//!   dimensions; every tensor of a known type has its data range inside the file, after the
//!   data section's start, aligned, and exactly `blocks × block bytes` long; `code_bytes`
//!   and `split_codes` extract one code per weight for the measured types (the nibble types,
//!   Q8_0, and the 2–6-bit codes, each below `2^bits`, from `bits/8` stored bytes a weight).
//! - Appending bytes to an accepted file (more data after the last tensor) keeps it accepted
//!   with the same directory: nothing is read from the end of the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tetrad::gguf;

fuzz_target!(|bytes: &[u8]| {
    let g = match gguf::parse(bytes) {
        Ok(g) => g,
        Err(e) => {
            assert!(e.class().name().starts_with("E_GGUF_"), "class {}", e.class());
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let len = bytes.len() as u64;
    assert!(g.alignment.is_power_of_two());
    assert_eq!(g.data_start % g.alignment, 0);
    let mut names = std::collections::HashSet::new();
    for t in &g.tensors {
        assert!(names.insert(t.name.clone()), "duplicate name {:?} accepted", t.name);
        assert!(t.dims.len() <= 4);
        match (gguf::type_info(t.ggml_type), t.range) {
            (None, None) => {}
            (Some((_, block, size)), Some((a, b))) => {
                assert!(g.data_start <= a && a <= b && b <= len, "range {a}..{b} of {len}");
                assert_eq!((a - g.data_start) % g.alignment, 0);
                let n: u64 = t.dims.iter().product();
                assert_eq!(t.dims.first().copied().unwrap_or(1) % block, 0);
                assert_eq!(b - a, n / block * size);
                #[allow(clippy::cast_possible_truncation)]
                let data = &bytes[a as usize..b as usize];
                if let Some(codes) = gguf::code_bytes(t.ggml_type, data) {
                    // Two codes per byte for the nibble types, one for Q8_0.
                    let per_byte = if gguf::is_nibble_type(t.ggml_type) { 2 } else { 1 };
                    assert_eq!(codes.len() as u64 * per_byte, n, "one code per weight");
                }
                if let Some(split) = gguf::split_codes(t.ggml_type, data) {
                    assert!(gguf::code_bytes(t.ggml_type, data).is_none());
                    assert_eq!(split.codes.len() as u64, n, "one code per weight");
                    assert_eq!(split.stored.len() as u64 * 8, n * u64::from(split.bits));
                    assert!(split.codes.iter().all(|&c| u32::from(c) < 1 << split.bits));
                }
            }
            (info, range) => {
                panic!("type {} known {} but range {range:?}", t.ggml_type, info.is_some())
            }
        }
    }
    let mut longer = bytes.to_vec();
    longer.extend_from_slice(&[0xA5; 77]);
    assert_eq!(gguf::parse(&longer).expect("appending bytes keeps a file readable"), g);
});
