//! Frequency tables from hostile input.
//!
//! - Arbitrary histogram (u64 counts, any scale bits incl. out-of-range) → `quantize_freq` /
//!   `Table::from_histogram`: `Ok` or a named refusal; on `Ok` the frequencies sum to M, a present
//!   symbol gets ≥ 1 and an absent one 0, and the table's own parts (`from_parts`,
//!   `from_parts_le_bytes`) validate back to an equal table.
//! - Arbitrary parts (scale, freq, start, slots) → `Table::from_parts*`: `Ok` or a named
//!   refusal; `Ok` only if the parts are exactly a valid table's.
//! - Arbitrary text → the strict table JSON parser `tetrad::table_json::parse`: `Ok` or a named
//!   refusal; `Ok` ⇒ the parts build a codec table, and the canonical writer's JSON of those
//!   parts parses back to the same parts.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use tetrad::table_json::{self, TableParts};
use tetrad_fuzz::assert_class;
use tetrad_rans::{SYMBOLS, Table, TableError, quantize_freq};

#[derive(Debug, Arbitrary)]
enum Input<'a> {
    Hist { sb: u8, hist: [u64; SYMBOLS], small: bool },
    Parts { sb: u8, freq: [u16; SYMBOLS], start: [u16; SYMBOLS], slots: &'a [u8], fix_start: bool },
}

fn check_valid(t: &Table) {
    let freq = *t.freq();
    let start = *t.start();
    let sum: u64 = freq.iter().map(|&f| u64::from(f)).sum();
    assert_eq!(sum, u64::from(t.m()));
    let slots: Vec<u16> = t.slots_u16().collect();
    assert_eq!(slots.len(), t.m() as usize);
    let again = Table::from_parts(t.scale_bits(), &freq, &start, &slots).expect("own parts");
    assert_eq!(&again, t);
    let bytes: Vec<u8> = slots.iter().flat_map(|s| s.to_le_bytes()).collect();
    let again =
        Table::from_parts_le_bytes(t.scale_bits(), &freq, &start, &bytes).expect("own bytes");
    assert_eq!(&again, t);
    for s in 0..16u8 {
        assert_eq!(t.codable(s), freq[usize::from(s)] > 0);
    }
}

fn run(inp: Input<'_>) {
    match inp {
        Input::Hist { sb, hist, small } => {
            let sb = if small { 1 + u32::from(sb) % 15 } else { u32::from(sb) };
            // Keep Σ h finite in u64 the way real histograms are (counts of nibbles).
            let hist = hist.map(|h| if small { h >> 8 } else { h });
            match quantize_freq(&hist, sb) {
                Ok(f) => {
                    let sum: u64 = f.iter().map(|&x| u64::from(x)).sum();
                    assert_eq!(sum, 1u64 << sb, "quantize_freq sum");
                    for s in 0..SYMBOLS {
                        assert_eq!(f[s] > 0, hist[s] > 0, "presence of symbol {s}");
                    }
                    let t = Table::from_histogram(sb, &hist).expect("quantized freq builds");
                    assert_eq!(t.freq(), &f);
                    check_valid(&t);
                }
                Err(e) => {
                    assert_class(e.class());
                    assert!(Table::from_histogram(sb, &hist).is_err());
                    let present = hist.iter().filter(|&&h| h > 0).count() as u64;
                    match e {
                        TableError::Scale { .. } => assert!(!(1..=15).contains(&sb)),
                        TableError::EmptyHistogram => assert_eq!(present, 0),
                        TableError::TooManySymbols { .. } => assert!(present > (1u64 << sb)),
                        other => panic!("unexpected histogram refusal {other:?}"),
                    }
                }
            }
        }
        Input::Parts { sb, freq, start, slots, fix_start } => {
            let sb = u32::from(sb) % 17;
            let freq = freq.map(u32::from);
            let mut start = start.map(u32::from);
            if fix_start {
                let mut acc = 0;
                for s in 0..SYMBOLS {
                    start[s] = acc;
                    acc += freq[s];
                }
            }
            let r = Table::from_parts_le_bytes(sb, &freq, &start, slots);
            match &r {
                Ok(t) => {
                    assert_eq!((t.scale_bits(), t.freq(), t.start()), (sb, &freq, &start));
                    check_valid(t);
                    assert_eq!(Table::from_freq(sb, &freq).as_ref(), Ok(t));
                }
                Err(e) => assert_class(e.class()),
            }
            if slots.len() % 2 == 0 {
                let s16: Vec<u16> =
                    slots.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
                assert_eq!(Table::from_parts(sb, &freq, &start, &s16), r, "u16 vs byte slots");
            }
        }
    }
}

/// Byte 0 even: the rest is table JSON text (seed-friendly); odd: an arbitrary [`Input`].
fn json(text: &str) {
    match table_json::parse(text) {
        Ok(p) => {
            let t = Table::from_parts(p.scale_bits, &p.freq, &p.start, &p.slots)
                .expect("a parsed table JSON is a valid codec table");
            check_valid(&t);
            let canon = table_json::to_json(&p);
            let back: TableParts = table_json::parse(&canon).expect("canonical JSON parses");
            assert_eq!(back, p);
        }
        Err(e) => assert_class(e.class().name()),
    }
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((m, rest)) if m & 1 == 0 => {
            if let Ok(text) = std::str::from_utf8(rest) {
                json(text);
            }
        }
        Some((_, rest)) => {
            if let Ok(inp) = Input::arbitrary_take_rest(Unstructured::new(rest)) {
                run(inp);
            }
        }
        None => {}
    }
});
