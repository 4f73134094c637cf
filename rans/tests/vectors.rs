//! The golden vectors of docs/vectors/vectors.json, entry by entry.
#![allow(clippy::cast_possible_truncation)]

mod common;

use common::*;
use tetrad_rans::{
    Nibbles, ParseOrder, Record, Table, decode_record_with, decode_stream, decode_stream_checked,
    encode_record, encode_stream, max_record_len, max_stream_len, quantize_freq,
};

#[test]
fn quantize_freq_vectors() {
    let mut ok = 0;
    let mut refused = 0;
    for (k, e) in section("quantize_freq").iter().enumerate() {
        let hist = arr16_u64(&e["hist"]);
        let m = e["m"].as_u64().unwrap();
        assert!(m.is_power_of_two(), "entry {k}: m = {m}");
        let sb = m.trailing_zeros();
        let got = quantize_freq(&hist, sb);
        if e.get("error").is_some() {
            let err = got.expect_err(&format!("entry {k} must be refused"));
            assert_eq!(err.class(), "E_TABLE_SYMBOLS", "entry {k}");
            refused += 1;
        } else {
            assert_eq!(got.unwrap(), arr16(&e["freq"]), "entry {k}: hist {hist:?}");
            // The build also yields a valid table.
            Table::from_histogram(sb, &hist).unwrap();
            ok += 1;
        }
    }
    assert!(ok >= 30 && refused >= 1, "ok {ok} refused {refused}");
}

#[test]
fn table_refusals_c_vectors() {
    for (k, e) in section("table_refusals_c").iter().enumerate() {
        let sb = e["scale_bits"].as_u64().unwrap() as u32;
        let slot_bytes = unhex(e["slot_hex"].as_str().unwrap());
        let slots: Vec<u16> =
            slot_bytes.chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect();
        let (freq, start) = (arr16(&e["freq"]), arr16(&e["start"]));
        let want = e["class"].as_str().unwrap();
        let a = Table::from_parts(sb, &freq, &start, &slots).expect_err("must refuse");
        assert_eq!(a.class(), want, "entry {k}: {a}");
        let b = Table::from_parts_le_bytes(sb, &freq, &start, &slot_bytes).expect_err("refuse");
        assert_eq!(b, a, "entry {k}: the two slot forms disagree");
        // Rebuilding in place refuses too and leaves the old table intact.
        let mut t = Table::from_freq(4, &[1; 16]).unwrap();
        assert_eq!(t.rebuild_from_parts(sb, &freq, &start, &slots).unwrap_err(), a);
        assert_eq!(t, Table::new());
    }
}

#[test]
fn tables_vectors() {
    for (k, e) in section("tables").iter().enumerate() {
        let t = table_of(e);
        assert_eq!(t.scale_bits(), 14);
        assert_eq!(t.freq(), &arr16(&e["freq"]));
        // The slot bytes hash to the vector's CRC-32, and they round-trip through from_parts.
        let mut bytes = vec![0u8; 2 * t.m() as usize];
        assert_eq!(t.write_slots_le(&mut bytes), Some(bytes.len()));
        assert_eq!(format!("{:08x}", crc32fast::hash(&bytes)), e["crc32"].as_str().unwrap(), "{k}");
        let u = Table::from_parts_le_bytes(14, t.freq(), t.start(), &bytes).unwrap();
        assert_eq!(u.slot_symbols(), t.slot_symbols());
        let slots: Vec<u16> = t.slots_u16().collect();
        assert_eq!(Table::from_parts(14, t.freq(), t.start(), &slots).unwrap(), t);
        // The JSON value carries the same freq/start arrays.
        let json: serde_json::Value = serde_json::from_str(e["json"].as_str().unwrap()).unwrap();
        assert_eq!(arr16(&json["start"]), *t.start(), "{k}");
    }
}

#[test]
fn stream_vectors() {
    for (k, e) in section("streams").iter().enumerate() {
        let t = table_of(e);
        let symbols = unhex(e["symbols_hex"].as_str().unwrap());
        let want = unhex(e["stream_hex"].as_str().unwrap());
        let mut dst = vec![0u8; max_stream_len(symbols.len(), t.scale_bits())];
        let len = encode_stream(&t, &symbols, &mut dst).unwrap();
        assert_eq!(hex(&dst[dst.len() - len..]), hex(&want), "entry {k} encode");
        let mut out = vec![0u8; symbols.len()];
        decode_stream_checked(&t, &want, &mut out).unwrap();
        assert_eq!(out, symbols, "entry {k} decode");
        let end = decode_stream(&t, &want, &mut out).unwrap();
        assert_eq!((end.state, end.consumed), (tetrad_rans::RANS_L, want.len()));
    }
}

#[test]
fn stream_refusal_vectors() {
    let mut classes = std::collections::BTreeSet::new();
    for (k, e) in section("stream_refusals").iter().enumerate() {
        let t = table_of(e);
        let n = e["n"].as_u64().unwrap() as usize;
        let stream = unhex(e["stream_hex"].as_str().unwrap());
        let want = e["class"].as_str().unwrap();
        let mut out = vec![0u8; n];
        let got =
            decode_stream_checked(&t, &stream, &mut out).map_or_else(|e| e.class(), |()| "OK");
        assert_eq!(got, want, "entry {k}");
        classes.insert(want);
    }
    assert_eq!(classes.len(), 5, "{classes:?}");
}

fn decode_all_arms(t: &Table, rec: &Record<'_>) -> Vec<u8> {
    let mut first: Option<Vec<u8>> = None;
    for &arm in &arms() {
        let mut out = vec![0u8; rec.packed_bytes() as usize];
        decode_record_with(arm, t, rec, &mut out).unwrap_or_else(|e| panic!("{arm}: {e}"));
        if let Some(f) = &first {
            assert_eq!(&out, f, "arm {arm} disagrees");
        } else {
            first = Some(out);
        }
    }
    first.unwrap()
}

#[test]
fn record_vectors() {
    let mut ns = std::collections::BTreeSet::new();
    for (k, e) in section("records").iter().enumerate() {
        let t = table_of(e);
        let n_streams = e["n_streams"].as_u64().unwrap() as usize;
        let nibbles = unhex(e["nibbles_hex"].as_str().unwrap());
        let want = unhex(e["record_hex"].as_str().unwrap());
        let mut dst = vec![0u8; max_record_len(nibbles.len(), n_streams)];
        let len = encode_record(&t, Nibbles::Unpacked(&nibbles), n_streams, &mut dst).unwrap();
        assert_eq!(hex(&dst[..len]), hex(&want), "entry {k} (N = {n_streams}) encode");
        // Packed input gives the same record whenever the count is even.
        if nibbles.len().is_multiple_of(2) {
            let mut dst2 = vec![0xAAu8; len];
            let len2 =
                encode_record(&t, Nibbles::Packed(&pack(&nibbles)), n_streams, &mut dst2).unwrap();
            assert_eq!(&dst2[..len2], &want[..], "entry {k} packed encode");
        }
        for order in [ParseOrder::Codec, ParseOrder::Validator] {
            let rec = Record::parse_streams_in_order(&want, n_streams, order).unwrap();
            assert_eq!(rec.n_symbols(), nibbles.len() as u64);
            let out = decode_all_arms(&t, &rec);
            assert_eq!(out, pack(&nibbles), "entry {k} decode");
        }
        ns.insert(n_streams);
    }
    assert_eq!(ns.into_iter().collect::<Vec<_>>(), vec![8, 16, 24, 32, 256]);
}

#[test]
fn record_refusal_vectors() {
    let t = table_of(&section("records")[0]);
    let mut differ = 0;
    for (k, e) in section("record_refusals").iter().enumerate() {
        let blob = unhex(e["record_hex"].as_str().unwrap());
        for (order, key) in
            [(ParseOrder::Codec, "class_c"), (ParseOrder::Validator, "class_python")]
        {
            let want = e[key].as_str().unwrap();
            let got = match Record::parse_streams_in_order(&blob, 256, order) {
                Err(err) => err.class(),
                Ok(rec) => {
                    decode_all_arms(&t, &rec);
                    "OK"
                }
            };
            assert_eq!(got, want, "entry {k} {order:?}");
        }
        differ += usize::from(e["class_c"] != e["class_python"]);
    }
    assert!(differ >= 1, "the two orders must be exercised apart");
}

#[test]
fn unchecked_vectors() {
    let v = section("unchecked");
    assert_eq!(v.len(), 2);
    // Case 0: a genuine record; every arm returns the reference's scalar output.
    let t = table_of(&v[0]);
    let blob = unhex(v[0]["record_hex"].as_str().unwrap());
    let rec = Record::parse(&blob).unwrap();
    let out = decode_all_arms(&t, &rec);
    assert_eq!(hex(&out), v[0]["scalar_hex"].as_str().unwrap());
    assert_eq!(v[0]["scalar_hex"], v[0]["scalar_bf_hex"]);
    // Case 1: the reference's unchecked arms disagree; tetrad refuses on every arm.
    let t = table_of(&v[1]);
    let blob = unhex(v[1]["record_hex"].as_str().unwrap());
    assert_ne!(v[1]["scalar_hex"], v[1]["avx512_hex"]);
    let rec = Record::parse(&blob).unwrap();
    for &arm in &arms() {
        let mut out = vec![0u8; rec.packed_bytes() as usize];
        let err = decode_record_with(arm, &t, &rec, &mut out).unwrap_err();
        assert_eq!(err.class(), "E_STREAM_STATE_RANGE", "{arm}: {err}");
    }
}
