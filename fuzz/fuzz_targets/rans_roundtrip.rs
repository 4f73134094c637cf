//! Round trip of the rANS codec: arbitrary nibbles, an arbitrary valid table (scale bits
//! 1..=15, any frequencies summing to M) and an arbitrary stream count N → encode → every
//! decode arm gives the nibbles back; the record length never exceeds `max_record_len`; the
//! single-stream primitives (`encode_stream` / `decode_stream_checked`) round-trip too, and the
//! packed format path (`encode_record_packed`, N = 256) agrees with the unpacked one.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tetrad_fuzz::{decode_all_arms, scale_bits, to_codable, unpack};
use tetrad_rans::{
    FORMAT_STREAMS, Nibbles, Record, SYMBOLS, Table, decode_stream, decode_stream_checked,
    encode_record, encode_record_packed, encode_stream, max_record_len, max_stream_len,
};

/// A valid table from arbitrary frequency weights: the weights are scaled to sum exactly to M
/// (any split is a valid table, including zero and full-M frequencies).
fn table_from_weights(sb: u32, w: &[u8; SYMBOLS]) -> Table {
    let m = 1u32 << sb;
    let total: u32 = w.iter().map(|&x| u32::from(x)).sum();
    let mut freq = [0u32; SYMBOLS];
    let mut acc = 0u32;
    for s in 0..SYMBOLS {
        // All weights zero: every share is 0 and symbol 8 takes all of M below.
        freq[s] = (u32::from(w[s]) * m).checked_div(total).unwrap_or(0);
        acc += freq[s];
    }
    // Give the rounding remainder to the largest weight.
    let big = if total == 0 { 8 } else { (0..SYMBOLS).max_by_key(|&s| w[s]).unwrap() };
    freq[big] += m - acc;
    Table::from_freq(sb, &freq).expect("frequencies sum to M")
}

fn run(data: &[u8]) -> arbitrary::Result<()> {
    let mut u = Unstructured::new(data);
    let sb = scale_bits(u.arbitrary()?);
    let w: [u8; SYMBOLS] = u.arbitrary()?;
    let nsel: u8 = u.arbitrary()?;
    let n_streams = if nsel == 0 { 256 } else { usize::from(nsel) };
    let t = table_from_weights(sb, &w);
    let raw: &[u8] = u.arbitrary()?;
    let raw = &raw[..raw.len().min(16384)];
    if raw.is_empty() {
        return Ok(());
    }
    let nib = to_codable(&t, raw);
    let n = nib.len();

    // Record round trip with arbitrary N.
    let bound = max_record_len(n, n_streams);
    let mut blob = vec![0u8; bound];
    let len = encode_record(&t, Nibbles::Unpacked(&nib), n_streams, &mut blob)
        .expect("codable nibbles encode into max_record_len");
    assert!(len <= bound && len.is_multiple_of(16));
    blob.truncate(len);
    let rec = Record::parse_streams(&blob, n_streams).expect("own record parses");
    assert_eq!(rec.n_symbols(), n as u64);
    let out = decode_all_arms(&t, &rec).expect("own record decodes").expect("small record");
    assert_eq!(unpack(&out, n), nib, "record round trip");

    // The packed path (format N = 256) is the same record as the unpacked nibbles.
    if n.is_multiple_of(2) {
        let packed: Vec<u8> = nib.chunks(2).map(|p| p[0] | (p[1] << 4)).collect();
        let mut b2 = vec![0u8; max_record_len(n, FORMAT_STREAMS)];
        let l2 = encode_record_packed(&t, &packed, &mut b2).expect("packed encodes");
        let mut b3 = vec![0u8; max_record_len(n, FORMAT_STREAMS)];
        let l3 = encode_record(&t, Nibbles::Unpacked(&nib), FORMAT_STREAMS, &mut b3).unwrap();
        assert!(b2[..l2] == b3[..l3], "packed and unpacked encodes differ");
        let rec = Record::parse(&b2[..l2]).expect("format record parses");
        let back = decode_all_arms(&t, &rec).unwrap().unwrap();
        assert_eq!(back, packed);
    }

    // One stream.
    let mut s = vec![0u8; max_stream_len(n, sb)];
    let sl = encode_stream(&t, &nib, &mut s).expect("max_stream_len is enough");
    let st = &s[s.len() - sl..];
    let mut back = vec![0u8; n];
    decode_stream_checked(&t, st, &mut back).expect("own stream passes the seal");
    assert_eq!(back, nib, "stream round trip");
    let end = decode_stream(&t, st, &mut back).unwrap();
    assert_eq!((end.state, end.consumed), (tetrad_rans::RANS_L, sl));
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
