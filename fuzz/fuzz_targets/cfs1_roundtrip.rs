//! CFS1 round trip: any bytes (raw, or shaped like int4 codes so the rANS mode is taken) →
//! `encode_into` → `Header::parse` → `decode_into` gives the bytes back; the blob is never
//! longer than `n + 9`; raw fallback is exactly `CFS1 0 rawlen bytes`; the encoder output does
//! not depend on the buffer's size or prior contents; any proper prefix of a rANS blob and any
//! extension by one byte is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tetrad_fse::{HEADER_LEN, Header, MAGIC, Mode, decode_into, encode_into, max_encoded_len};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    // Bit 0: use the bytes as is; else map them onto a peaked int4 distribution so the rANS
    // path is exercised with realistic statistics (bits 1..=3 pick how peaked).
    let src: Vec<u8> = if sel & 1 == 0 {
        rest.to_vec()
    } else {
        let spread = 1 + ((sel >> 1) & 7);
        rest.iter()
            .map(|&b| {
                let lo = 8u8.wrapping_add((b & 15) % spread).wrapping_sub(spread / 2) & 15;
                let hi = 8u8.wrapping_add((b >> 4) % spread).wrapping_sub(spread / 2) & 15;
                lo | hi << 4
            })
            .collect()
    };
    let n = src.len();
    let mut blob = vec![0u8; max_encoded_len(n)];
    let len = encode_into(&src, &mut blob).expect("any input below 4 GiB encodes");
    assert!(len <= n + HEADER_LEN, "blob {len} longer than n + 9 = {}", n + HEADER_LEN);
    // Same blob from a larger, dirty buffer.
    let mut blob2 = vec![0xEEu8; max_encoded_len(n) + 100];
    let len2 = encode_into(&src, &mut blob2).unwrap();
    assert!(blob[..len] == blob2[..len2], "encoder output depends on the buffer");
    let blob = &blob[..len];
    let h = Header::parse(blob).expect("own blob has a valid header");
    assert_eq!(h.len(), n);
    if h.mode == Mode::Raw {
        assert_eq!(&blob[..4], &MAGIC);
        assert_eq!(blob[4], 0);
        assert_eq!(&blob[HEADER_LEN..], &src[..], "raw fallback is verbatim");
    } else {
        assert!(n > 40 && len < n + HEADER_LEN, "rANS chosen without gain");
    }
    let mut out = vec![0xC3u8; n + 3];
    assert_eq!(decode_into(blob, &mut out), Ok(n));
    assert!(out[..n] == src[..], "round trip");
    assert_eq!(&out[n..], &[0xC3; 3]);
    // Truncation and extension are refused (raw blobs by length; rANS by the seal).
    if len > 0 {
        let mut o = vec![0u8; n];
        assert!(decode_into(&blob[..len - 1], &mut o).is_err(), "truncated blob accepted");
        let mut ext = blob.to_vec();
        ext.push(0);
        assert!(decode_into(&ext, &mut o).is_err(), "extended blob accepted");
    }
});
