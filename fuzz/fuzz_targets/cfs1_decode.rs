//! CFS1 blobs from hostile bytes: `decode_into` returns `Ok(rawlen)` or a named refusal,
//! never panics, and never leaks: run twice, into a 0x00- and a 0xFF-prefilled buffer, the
//! results are identical, `Ok(n)` writes exactly `dst[..n]`, a payload-stage refusal leaves
//! `dst[..rawlen]` zeroed, a header-stage refusal writes nothing, and `dst[rawlen..]` is never
//! touched. `Header::parse` agrees with the decoder's header stage; the caller-table variant
//! (with a table dirtied by the previous input) agrees with the plain one; a decoded blob's
//! bytes round-trip through the encoder.
//!
//! Input: byte 0 chooses the output capacity (bit 7 set: exactly the header's `rawlen`, up to
//! 1 MiB; else `rawlen` minus the low 7 bits, or a small fixed size), the rest is the blob.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use tetrad_fse::{
    DecodeTable, Header, decode_into, decode_into_scratch, encode_into, max_encoded_len,
};
use tetrad_fuzz::assert_class;

/// Output buffers larger than this are not allocated (the header-only checks still run).
const MAX_CAP: usize = 1 << 20;

thread_local! {
    static TABLE: RefCell<DecodeTable> = const { RefCell::new(DecodeTable::new()) };
}

fn rawlen_of(blob: &[u8]) -> Option<usize> {
    Some(u32::from_le_bytes(blob.get(5..9)?.try_into().ok()?) as usize)
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, blob)) = data.split_first() else { return };
    let header = Header::parse(blob);
    if let Err(e) = header {
        assert_class(e.class());
        assert!(!e.is_payload(), "Header::parse returned a payload refusal");
    }
    let cap = match rawlen_of(blob) {
        Some(r) if sel & 0x80 != 0 => r,
        Some(r) => r.saturating_sub(usize::from(sel & 0x7F)),
        None => usize::from(sel),
    };
    if cap > MAX_CAP {
        return;
    }
    let mut a = vec![0x00u8; cap];
    let mut b = vec![0xFFu8; cap];
    let ra = decode_into(blob, &mut a);
    let rb = decode_into(blob, &mut b);
    assert_eq!(ra, rb, "result depends on the output buffer's contents");
    let rc = TABLE.with(|t| {
        let mut c = vec![0x5Au8; cap];
        let r = decode_into_scratch(&mut t.borrow_mut(), blob, &mut c);
        if let Ok(n) = r {
            assert!(c[..n] == a[..n], "caller-table decode differs");
        }
        r
    });
    assert_eq!(ra, rc, "caller-table decode verdict differs");
    match ra {
        Ok(n) => {
            let h = header.expect("decoded blob has a valid header");
            assert_eq!(n, h.len());
            assert!(a[..n] == b[..n], "decoded bytes depend on the buffer");
            assert!(a[n..].iter().all(|&x| x == 0x00) && b[n..].iter().all(|&x| x == 0xFF));
            // Decoded bytes round-trip through the encoder (not necessarily to the same blob).
            let mut blob2 = vec![0u8; max_encoded_len(n)];
            let m = encode_into(&a[..n], &mut blob2).expect("encodes");
            assert!(m <= n + 9);
            let mut back = vec![0u8; n];
            assert_eq!(decode_into(&blob2[..m], &mut back), Ok(n));
            assert!(back == a[..n]);
        }
        Err(e) => {
            assert_class(e.class());
            if e.is_payload() {
                let r = header.expect("payload refusal after a valid header").len();
                assert!(
                    a[..r].iter().all(|&x| x == 0) && b[..r].iter().all(|&x| x == 0),
                    "partial output leaked"
                );
                assert!(a[r..].iter().all(|&x| x == 0x00) && b[r..].iter().all(|&x| x == 0xFF));
            } else {
                assert!(
                    a.iter().all(|&x| x == 0x00) && b.iter().all(|&x| x == 0xFF),
                    "header refusal wrote output"
                );
                match header {
                    Err(h) => {
                        // Only E_CAPACITY (which needs the buffer) can come before a header
                        // refusal in the decoder's order.
                        assert!(h == e || e.class() == "E_CAPACITY", "{h:?} vs {e:?}");
                    }
                    Ok(h) => assert_eq!(e.class(), "E_CAPACITY", "{h:?}"),
                }
                if e.class() == "E_CAPACITY" {
                    assert!(rawlen_of(blob).expect("has rawlen") > cap);
                }
            }
        }
    }
});
