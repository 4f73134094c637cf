//! The GGUF directory reader `tetrad stats` uses (`tetrad::gguf`), on hostile files.
//!
//! - Any bytes → `gguf::parse`: `Ok` or an `E_GGUF_*` refusal with a message, never a panic,
//!   and no allocation sized by a count the file cannot back.
//! - On `Ok`: the alignment is a power of two; tensor names are unique and have at most 4
//!   dimensions; every tensor of a known type has its data range inside the file, after the
//!   data section's start, aligned, and exactly `blocks × block bytes` long; `code_bytes`
//!   extracts exactly the codes of those blocks for the measured types (Q4_0, Q4_1, Q4_K,
//!   Q8_0).
//! - Appending bytes to an accepted file (more data after the last tensor) keeps it accepted
//!   with the same directory: nothing is read from the end of the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tetrad::gguf;

fuzz_target!(|bytes: &[u8]| {
    let g = match gguf::parse(bytes) {
        Ok(g) => g,
        Err(e) => {
            assert!(e.class().starts_with("E_GGUF_"), "class {}", e.class());
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
                    // Q4_K and IQ4_XS: 128 code bytes per 256; Q8_0: 32 per 32; the rest 16.
                    let per_block = if matches!(t.ggml_type, 12 | 23) {
                        128
                    } else if t.ggml_type == 8 {
                        32
                    } else {
                        16
                    };
                    assert_eq!(codes.len() as u64, n / block * per_block);
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
