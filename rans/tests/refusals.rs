//! Every refusal class, the header-field battery, the minimally framed bomb, and the
//! single-bit-flip sweep.
#![allow(clippy::cast_possible_truncation)]

mod common;

use common::*;
use tetrad_rans::{
    Arm, DecodeError, Decoder, EncodeError, Nibbles, ParseOrder, Record, RecordError, StreamError,
    Table, TableError, decode_record_with, decode_stream_checked, encode_record, encode_stream,
    max_record_len, quantize_freq,
};

fn weight_table() -> Table {
    Table::from_freq(
        14,
        &[0, 4915, 819, 655, 492, 492, 328, 328, 3277, 1638, 983, 819, 655, 491, 328, 164],
    )
    .unwrap()
}

fn record(t: &Table, n: usize, n_streams: usize, seed: u64) -> (Vec<u8>, Vec<u8>) {
    let sym = sample(t, n, seed);
    let mut rec = vec![0u8; max_record_len(n, n_streams)];
    let len = encode_record(t, Nibbles::Unpacked(&sym), n_streams, &mut rec).unwrap();
    rec.truncate(len);
    (rec, pack(&sym))
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn parse_class(blob: &[u8], n_streams: usize, order: ParseOrder) -> &'static str {
    Record::parse_streams_in_order(blob, n_streams, order).map_or_else(|e| e.class(), |_| "OK")
}

/// Parse, then checked decode with every arm; all arms must agree. Returns the class or "OK".
fn full_class(t: &Table, blob: &[u8], n_streams: usize) -> &'static str {
    let rec = match Record::parse_streams(blob, n_streams) {
        Err(e) => return e.class(),
        Ok(r) => r,
    };
    let mut results = arms().into_iter().map(|arm| {
        let mut out = vec![0u8; rec.packed_bytes() as usize];
        decode_record_with(arm, t, &rec, &mut out).map(|()| out)
    });
    let first = results.next().unwrap();
    for other in results {
        assert_eq!(other, first, "arms disagree");
    }
    for arm in arms() {
        let v = tetrad_rans::verify_record_with(arm, t, &rec);
        assert_eq!(v, first.as_ref().map(|_| ()).map_err(|e| *e), "verify with {arm}");
    }
    first.map_or_else(|e| e.class(), |_| "OK")
}

#[test]
fn table_classes() {
    let t = weight_table();
    let slots: Vec<u16> = t.slots_u16().collect();
    let (f, s) = (*t.freq(), *t.start());
    let class = |r: Result<Table, TableError>| r.unwrap_err().class();
    assert_eq!(class(Table::from_parts(0, &f, &s, &slots)), "E_TABLE_SCALE");
    assert_eq!(class(Table::from_parts(16, &f, &s, &slots)), "E_TABLE_SCALE");
    assert_eq!(class(Table::from_freq(16, &f)), "E_TABLE_SCALE");
    let mut s2 = s;
    s2[5] += 1;
    assert_eq!(class(Table::from_parts(14, &f, &s2, &slots)), "E_TABLE_START");
    let mut f2 = f;
    f2[15] += 1;
    assert_eq!(class(Table::from_parts(14, &f2, &s, &slots)), "E_TABLE_FREQ_SUM");
    assert_eq!(class(Table::from_freq(14, &f2)), "E_TABLE_FREQ_SUM");
    // Both wrong: the codec checks the start first.
    assert_eq!(class(Table::from_parts(14, &f2, &s2, &slots)), "E_TABLE_START");
    let mut sl = slots.clone();
    sl[0] = 16;
    assert_eq!(
        Table::from_parts(14, &f, &s, &sl).unwrap_err(),
        TableError::Slot { slot: 0, got: 16, expected: 1 }
    );
    let mut sl = slots.clone();
    sl[16383] = 14;
    assert_eq!(class(Table::from_parts(14, &f, &s, &sl)), "E_TABLE_SLOT");
    assert_eq!(class(Table::from_parts(14, &f, &s, &slots[1..])), "E_TABLE_MALFORMED");
    let mut bytes = vec![0u8; 2 * 16384 + 1];
    t.write_slots_le(&mut bytes).unwrap();
    assert_eq!(class(Table::from_parts_le_bytes(14, &f, &s, &bytes)), "E_TABLE_MALFORMED");
    assert_eq!(quantize_freq(&[1; 16], 3).unwrap_err().class(), "E_TABLE_SYMBOLS");
    assert_eq!(quantize_freq(&[0; 16], 14).unwrap_err().class(), "E_TABLE_EMPTY");
    assert_eq!(quantize_freq(&[1; 16], 0).unwrap_err().class(), "E_TABLE_SCALE");
    // Display says got vs expected.
    let msg = TableError::FreqSum { got: 16385, expected: 16384 }.to_string();
    assert!(msg.contains("16385") && msg.contains("16384"), "{msg}");
}

#[test]
fn stream_classes() {
    let t = weight_table();
    let sym = sample(&t, 300, 1);
    let mut dst = vec![0u8; 1000];
    let len = encode_stream(&t, &sym, &mut dst).unwrap();
    let s = dst[dst.len() - len..].to_vec();
    let mut out = vec![0u8; 300];
    let class = |st: &[u8], n: usize| {
        let mut out = vec![0u8; n];
        decode_stream_checked(&t, st, &mut out).map_or_else(|e| e.class(), |()| "OK")
    };
    assert_eq!(class(&s, 300), "OK");
    assert_eq!(class(&s[..3], 300), "E_STREAM_UNDERRUN");
    assert_eq!(class(&[], 0), "E_STREAM_UNDERRUN");
    let mut low = s.clone();
    low[0] = 0;
    low[1] &= 0x7F;
    assert_eq!(class(&low, 300), "E_STREAM_STATE_RANGE");
    let mut long = s.clone();
    long.push(0);
    assert_eq!(class(&long, 300), "E_STREAM_LEFTOVER");
    // One symbol short: bytes left over, or (when the first-encoded symbol needed none) the
    // state is not back at L; which one depends on the data.
    assert!(matches!(class(&s, 299), "E_STREAM_LEFTOVER" | "E_STREAM_FINAL_STATE"));
    assert_eq!(class(&s, 330), "E_STREAM_FINAL_STATE");
    assert_eq!(
        decode_stream_checked(&t, &[0x00, 0x7F, 0xFF, 0xFF], &mut out[..0]),
        Err(StreamError::StateRange { state: 0x7F_FFFF })
    );
    assert_eq!(
        decode_stream_checked(&t, &[0x00, 0x80, 0x00, 0x01], &mut out[..0]),
        Err(StreamError::FinalState { state: 0x80_0001 })
    );
}

#[test]
fn encode_classes() {
    let t = weight_table();
    let mut dst = vec![0u8; 4096];
    let e = |r: Result<usize, EncodeError>| r.unwrap_err().class();
    assert_eq!(
        e(encode_record(&t, Nibbles::Unpacked(&[1, 2, 0]), 8, &mut dst)),
        "E_SYMBOL_UNCODABLE"
    );
    assert_eq!(
        e(encode_record(&t, Nibbles::Unpacked(&[1, 2, 17]), 8, &mut dst)),
        "E_SYMBOL_UNCODABLE"
    );
    assert_eq!(
        e(encode_record(&t, Nibbles::Packed(&[0x11, 0x0F]), 8, &mut dst)),
        "E_SYMBOL_UNCODABLE"
    );
    assert_eq!(e(encode_record(&t, Nibbles::Unpacked(&[1]), 0, &mut dst)), "E_NSTREAMS");
    assert_eq!(e(encode_record(&t, Nibbles::Unpacked(&[1]), 257, &mut dst)), "E_NSTREAMS");
    assert_eq!(e(encode_record(&t, Nibbles::Unpacked(&[]), 8, &mut dst)), "E_EMPTY");
    assert_eq!(
        e(encode_record(&t, Nibbles::Unpacked(&[1; 100]), 256, &mut dst[..1000])),
        "E_SCRATCH"
    );
    assert_eq!(
        e(encode_record(&t, Nibbles::Unpacked(&[1; 100]), 256, &mut dst[..1100])),
        "E_SCRATCH"
    );
    assert_eq!(e(encode_stream(&t, &[1; 100], &mut dst[..20])), "E_SCRATCH");
}

#[test]
fn record_classes_in_both_orders() {
    let t = weight_table();
    let (good, _) = record(&t, 3000, 8, 5);
    let head = 64;
    let both = |b: &[u8]| {
        let c = parse_class(b, 8, ParseOrder::Codec);
        assert_eq!(c, parse_class(b, 8, ParseOrder::Validator), "single-fault record");
        c
    };
    assert_eq!(both(&good), "OK");
    assert_eq!(parse_class(&good, 0, ParseOrder::Codec), "E_NSTREAMS");
    assert_eq!(parse_class(&good, 257, ParseOrder::Codec), "E_NSTREAMS");
    assert_eq!(both(&good[..head - 1]), "E_TRUNCATED");
    assert_eq!(both(&good[..good.len() - 16]), "E_TRUNCATED");
    let mut b = good.clone();
    put_u64(&mut b, 0, 0);
    assert_eq!(both(&b), "E_EMPTY");
    let mut b = good.clone();
    put_u64(&mut b, 8, 1501);
    assert_eq!(both(&b), "E_COUNT_MISMATCH");
    let mut b = good.clone();
    put_u32(&mut b, 16, 1);
    assert_eq!(both(&b), "E_OFFSET_FIRST");
    let off =
        |b: &[u8], i: usize| u32::from_le_bytes(b[16 + 4 * i..20 + 4 * i].try_into().unwrap());
    let mut b = good.clone();
    let o3 = off(&b, 3);
    put_u32(&mut b, 16 + 4 * 2, o3 + 1);
    assert_eq!(both(&b), "E_OFFSETS_MONOTONIC");
    let mut b = good.clone();
    let o2 = off(&b, 2);
    put_u32(&mut b, 16 + 4 * 3, o2 + 3);
    assert_eq!(both(&b), "E_STREAM_SHORT");
    // Two faults: a short stream 1 and a decreasing offset at stream 5. The codec meets the
    // short stream first; the validator checks every offset's order first.
    let mut b = good.clone();
    let o1 = off(&b, 1);
    put_u32(&mut b, 16 + 4 * 2, o1 + 2);
    let o5 = off(&b, 5);
    put_u32(&mut b, 16 + 4 * 6, o5 - 1);
    assert_eq!(parse_class(&b, 8, ParseOrder::Codec), "E_STREAM_SHORT");
    assert_eq!(parse_class(&b, 8, ParseOrder::Validator), "E_OFFSETS_MONOTONIC");
    let mut b = good.clone();
    b.extend_from_slice(&[0; 16]);
    assert_eq!(both(&b), "E_LENGTH_MISMATCH");
    let mut b = good.clone();
    b.push(0);
    assert_eq!(both(&b), "E_LENGTH_MISMATCH");
    let mut b = good.clone();
    b[16 + 4 * 9] = 1; // header pad (N = 8: offsets end at 52, head = 64)
    assert_eq!(both(&b), "E_PAD_NONZERO");
    let payload = off(&good, 8) as usize;
    if head + payload < good.len() {
        let mut b = good.clone();
        *b.last_mut().unwrap() = 0x80;
        assert_eq!(both(&b), "E_PAD_NONZERO");
    }
    // Decode-stage classes on a framing-valid record.
    let stream_start = |i: usize| head + off(&good, i) as usize;
    let mut b = good.clone();
    b[stream_start(4)] = 0;
    b[stream_start(4) + 1] = 0x10;
    assert_eq!(full_class(&t, &b, 8), "E_STREAM_STATE_RANGE");
    let mut b = good.clone();
    put_u64(&mut b, 0, 2999);
    put_u64(&mut b, 8, 1500);
    assert!(matches!(full_class(&t, &b, 8), "E_STREAM_LEFTOVER" | "E_STREAM_FINAL_STATE"));
    // An extra byte at the end of the last stream (payload grows by 16, offsets follow).
    let mut b = good[..head].to_vec();
    let payload = off(&good, 8) as usize;
    b.extend_from_slice(&good[head..head + payload]);
    b.push(0x42);
    b.resize(head + (payload + 1).div_ceil(16) * 16, 0);
    put_u32(&mut b, 16 + 4 * 8, payload as u32 + 1);
    let r = Record::parse_streams(&b, 8).unwrap();
    let mut out = vec![0u8; 1500];
    assert_eq!(
        decode_record_with(Arm::ScalarBranchFree, &t, &r, &mut out),
        Err(DecodeError::Stream { stream: 7, error: StreamError::Leftover { left: 1 } })
    );
    let mut b = good.clone();
    put_u64(&mut b, 0, 3001);
    put_u64(&mut b, 8, 1501);
    assert_eq!(full_class(&t, &b, 8), "E_STREAM_FINAL_STATE");
}

#[test]
fn decode_api_classes() {
    let t = weight_table();
    let (good, packed) = record(&t, 3000, 8, 6);
    let r = Record::parse_streams(&good, 8).unwrap();
    let mut out = vec![0u8; packed.len() + 1];
    let err = decode_record_with(Arm::Scalar, &t, &r, &mut out).unwrap_err();
    assert_eq!(err, DecodeError::OutputLen { got: 1501, expected: 1500 });
    let mut d = Decoder::new(Arm::ScalarBranchFree, &t, r).unwrap();
    d.decode_next(&mut out[..100]).unwrap();
    assert_eq!(d.finish().unwrap_err().class(), "E_DECODE_INCOMPLETE");
    assert_eq!(d.decode_next(&mut out[..1401]).unwrap_err().class(), "E_OUTPUT_LEN");
    d.decode_next(&mut out[100..1500]).unwrap();
    d.finish().unwrap();
    assert_eq!(out[..1500], packed[..]);
    // A missing arm is refused, not replaced; names round-trip.
    for &arm in Arm::ALL {
        assert_eq!(Arm::from_name(arm.name()), Some(arm));
        if !arm.is_available() {
            let err = decode_record_with(arm, &t, &r, &mut out[..1500]).unwrap_err();
            assert_eq!(err, DecodeError::Unavailable { arm });
        }
    }
    let e = DecodeError::Unavailable { arm: Arm::Scalar };
    assert_eq!(e.class(), "E_PATH_UNAVAILABLE");
}

/// A record of `N = 256` built from header fields alone: every stream `00 80 00 00`.
fn framed(n_symbols: u64, packed_bytes: u64) -> Vec<u8> {
    let mut b = vec![0u8; 1056 + 1024];
    put_u64(&mut b, 0, n_symbols);
    put_u64(&mut b, 8, packed_bytes);
    for i in 0..=256 {
        put_u32(&mut b, 16 + 4 * i, 4 * i as u32);
    }
    for i in 0..256 {
        b[1056 + 4 * i + 1] = 0x80;
    }
    b
}

#[test]
fn header_field_battery_and_bomb() {
    let mut f = [0u32; 16];
    f[8] = 1 << 14;
    let single = Table::from_freq(14, &f).unwrap();
    let cases: &[(u64, u64, &str)] = &[
        (u64::MAX, 0, "E_COUNT_MISMATCH"),
        (u64::MAX, 1 << 63, "E_OVERSIZE"),
        (u64::MAX - 1, (1 << 63) - 1, "E_OVERSIZE"),
        (1 << 40, 1 << 39, "E_OVERSIZE"),
        (1 << 32, 1 << 31, "E_OVERSIZE"),
        (0, 0, "E_EMPTY"),
        (0, 1, "E_EMPTY"),
        (1, 0, "E_COUNT_MISMATCH"),
        (1, 1, "OK"),
        (2, 1, "OK"),
        (3, 1, "E_COUNT_MISMATCH"),
        (256, 128, "OK"),
        (255, 128, "OK"),
        (257, 129, "OK"),
        (1 << 28, 1 << 27, "OK"), // exactly the bound for a 1024-byte payload
        ((1 << 28) + 1, (1 << 27) + 1, "E_OVERSIZE"),
        (u64::from(u32::MAX), 1 << 31, "E_OVERSIZE"),
    ];
    for &(n, pb, want) in cases {
        let b = framed(n, pb);
        let got = if want == "OK" {
            parse_class(&b, 256, ParseOrder::Codec)
        } else {
            full_class(&single, &b, 256)
        };
        assert_eq!(got, want, "n = {n}, pb = {pb}");
    }
    // With the single-symbol table any count decodes to all-8 nibbles (x stays L forever).
    for n in [1u64, 2, 255, 256, 257] {
        assert_eq!(full_class(&single, &framed(n, n.div_ceil(2)), 256), "OK", "n = {n}");
    }
    // The minimally framed bomb: 256 four-byte streams claiming 2^40 symbols is refused by
    // the parser, before any output could be sized from n.
    let bomb = framed(1 << 40, 1 << 39);
    assert_eq!(
        Record::parse(&bomb).unwrap_err(),
        RecordError::Oversize { n_symbols: 1 << 40, limit: 1024 * 8 * (1 << 15) }
    );
    // n at the bound with other tables: a framing-valid record that fails the seal.
    let t = weight_table();
    assert_eq!(full_class(&t, &framed(1 << 12, 1 << 11), 256), "E_STREAM_FINAL_STATE");
}

/// Flips every bit of a record. A flip must be refused, or else the flipped blob must be a
/// genuine record of other nibbles: re-encoding what it decodes to reproduces it bit for bit.
/// (rANS's seal is a consistency check, not a checksum: two states can converge again, e.g.
/// across adjacent symbols of equal frequency, so a flip can turn one valid stream into
/// another. The container's digests cover that; the decoder is never fooled into returning
/// bytes that the record does not encode.) Returns (flips tried, flips accepted).
fn sweep(t: &Table, n: usize, n_streams: usize, seed: u64) -> (u64, u64) {
    let (good, packed) = record(t, n, n_streams, seed);
    assert_eq!(full_class(t, &good, n_streams), "OK");
    let (mut tried, mut accepted) = (0, 0);
    let mut b = good.clone();
    let mut re = vec![0u8; good.len() + 64];
    for byte in 0..good.len() {
        for bit in 0..8 {
            b[byte] ^= 1 << bit;
            tried += 1;
            if full_class(t, &b, n_streams) == "OK" {
                accepted += 1;
                let rec = Record::parse_streams(&b, n_streams).unwrap();
                let mut out = vec![0u8; rec.packed_bytes() as usize];
                decode_record_with(Arm::Scalar, t, &rec, &mut out).unwrap();
                assert_ne!(out, packed, "flip of bit {bit} of byte {byte} decodes to the original");
                let nib = unpack(&out, rec.n_symbols() as usize);
                let len = encode_record(t, Nibbles::Unpacked(&nib), n_streams, &mut re).unwrap();
                assert_eq!(
                    re[..len],
                    b[..],
                    "accepted flip (bit {bit} of byte {byte}) is not a genuine record"
                );
            }
            b[byte] ^= 1 << bit;
        }
    }
    (tried, accepted)
}

#[test]
fn single_bit_flip_sweep() {
    let distinct = Table::from_freq(
        14,
        &[0, 4900, 830, 660, 500, 470, 340, 310, 3290, 1620, 990, 810, 640, 480, 320, 224],
    )
    .unwrap();
    let (mut total, mut total_accepted) = (0, 0);
    for (name, t) in [("distinct freqs", distinct), ("vector table", weight_table())] {
        for (n, n_streams, seed) in [(2000usize, 8usize, 1u64), (1537, 16, 2), (4096, 256, 3)] {
            let (tried, accepted) = sweep(&t, n, n_streams, seed);
            println!(
                "bit-flip sweep, {name}, N = {n_streams}, n = {n}: {tried} flips, {accepted} \
                 accepted as other genuine records"
            );
            total += tried;
            total_accepted += accepted;
        }
    }
    println!(
        "single-bit-flip sweep: {total} flips tried (every bit of every record), {} refused, \
         {total_accepted} turned the record into another genuine record",
        total - total_accepted
    );
    assert!(total > 80_000);
    // Rare: a flip must hit a state convergence. Far above this would mean a weak seal.
    assert!(total_accepted * 1000 < total, "{total_accepted} of {total} flips accepted");
}
