//! Regressions found by the `fuzz/` targets (and by writing their properties), each with its
//! input inline so `cargo test` keeps them fixed without the fuzzer.
//!
//! `non_canonical_initial_state_passes_the_seal`: the spec accepts an initial state anywhere in
//! `[L, 2^32)`, but the encoder only writes states below `256·L`. A genuine stream whose first
//! decode step refills a byte can be rewritten as a stream one byte shorter whose initial state
//! (≥ `256·L`) already holds that byte: it decodes to the same symbols and passes the seal, yet
//! is not the encoder's output. The record decoder accepts it (as the spec says); tools that
//! rely on "sealed ⇒ unique encoding" (the validator's chunked path for records over
//! `FULL_REENCODE_LIMIT`) must not. Found while writing the `rans_record_decode` re-encode
//! property; this test pins the codec's (spec) behaviour so the exception stays documented.
#![allow(clippy::cast_possible_truncation)]

use tetrad_rans::{
    Nibbles, RANS_L, Record, Table, decode_record, decode_stream_checked, encode_record,
    encode_stream, head_len, max_stream_len,
};

/// A genuine stream and its non-canonical twin (initial state ≥ 256·L, one byte shorter).
fn twin(t: &Table) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let sb = t.scale_bits();
    let m = t.m();
    for seed in 0u32..10_000 {
        let syms: Vec<u8> = (0..64u32)
            .map(|k| (seed.wrapping_mul(2_654_435_761).wrapping_add(k * 40_503) >> 7) as u8 & 15)
            .collect();
        let mut dst = vec![0u8; max_stream_len(syms.len(), sb)];
        let n = encode_stream(t, &syms, &mut dst).unwrap();
        let c = dst[dst.len() - n..].to_vec();
        let x0c = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        // The first decode step of the canonical stream, by the spec's formula.
        let slot = x0c & (m - 1);
        let s = t.symbol(slot as usize);
        let (f, st) = (t.freq()[usize::from(s)], t.start()[usize::from(s)]);
        let x1raw = f * (x0c >> sb) + slot - st;
        if x1raw >= RANS_L || c.len() < 5 {
            continue; // no refill in the first step
        }
        let x1 = (u64::from(x1raw) << 8) | u64::from(c[4]);
        if x1 < u64::from(RANS_L) {
            continue; // two refills; keep the construction to one
        }
        // The encoder's step from x1 without its renormalisation: a state ≥ 256·L.
        let x0 = (x1 / u64::from(f)) * u64::from(m) + x1 % u64::from(f) + u64::from(st);
        let Ok(x0) = u32::try_from(x0) else { continue };
        let mut nc = x0.to_be_bytes().to_vec();
        nc.extend_from_slice(&c[5..]);
        return (syms, c, nc);
    }
    panic!("no stream with a one-byte first refill found");
}

#[test]
fn non_canonical_initial_state_passes_the_seal() {
    let t = Table::from_freq(14, &[1024; 16]).unwrap();
    let (syms, canonical, nc) = twin(&t);
    assert_ne!(canonical, nc);
    assert_eq!(nc.len() + 1, canonical.len());
    assert!(u32::from_be_bytes([nc[0], nc[1], nc[2], nc[3]]) >= RANS_L << 8);
    let mut out = vec![0u8; syms.len()];
    decode_stream_checked(&t, &nc, &mut out).expect("the spec accepts states in [L, 2^32)");
    assert_eq!(out, syms);

    // The same in a one-stream record: it parses, decodes to the nibbles, and re-encoding them
    // gives the canonical record, not this one.
    let head = head_len(1);
    let mut blob = vec![0u8; head];
    blob[0..8].copy_from_slice(&(syms.len() as u64).to_le_bytes());
    blob[8..16].copy_from_slice(&(syms.len() as u64).div_ceil(2).to_le_bytes());
    blob[20..24].copy_from_slice(&(nc.len() as u32).to_le_bytes());
    blob.extend_from_slice(&nc);
    blob.resize(head + nc.len().div_ceil(16) * 16, 0);
    let rec = Record::parse_streams(&blob, 1).expect("framing is valid");
    let mut packed = vec![0u8; syms.len().div_ceil(2)];
    decode_record(&t, &rec, &mut packed).expect("sealed");
    let nib: Vec<u8> = (0..syms.len()).map(|j| (packed[j / 2] >> ((j & 1) * 4)) & 15).collect();
    assert_eq!(nib, syms);
    let mut again = vec![0u8; blob.len() + 64];
    let len = encode_record(&t, Nibbles::Unpacked(&nib), 1, &mut again).unwrap();
    assert_ne!(&again[..len], &blob[..], "re-encoding gives the canonical record");
}
