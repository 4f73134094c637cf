//! Writes `docs/vectors/rans64.json`, the golden vectors of `int4-rans64-t1`, to stdout:
//! encoded blobs of small fixed inputs, and one refused blob per refusal class (found by
//! deterministic single-byte mutations of the encoded blobs, checked with the scalar arm).
//! Run: `cargo run -p tetrad-rans --example rans64_vectors > docs/vectors/rans64.json`.
#![allow(clippy::cast_possible_truncation)]

use serde_json::{Value, json};
use tetrad_rans::rans64::{self, Arm, Blob};

#[path = "../tests/support/blob_v2.rs"]
mod blob_v2;

use blob_v2::{reseal, to_version_1};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn encode(src: &[u8], shift: u8) -> Vec<u8> {
    let mut blob = vec![0u8; rans64::max_encoded_len(src.len(), shift)];
    let n = rans64::encode_v2_into(src, shift, &mut blob).expect("encode");
    blob.truncate(n);
    blob
}

fn encode3(src: &[u8], shift: u8) -> Vec<u8> {
    let mut blob = vec![0u8; rans64::max_encoded_len(src.len(), shift)];
    let n = rans64::encode_v3_into(src, shift, &mut blob).expect("encode");
    blob.truncate(n);
    blob
}

/// A xorshift stream, so the inputs are reproducible without a crate.
struct Xs(u64);
impl Xs {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A peaked nibble: mostly 6..=9, sometimes anything.
    fn nib(&mut self) -> u8 {
        let v = self.next();
        if v.is_multiple_of(16) { (v >> 8) as u8 & 15 } else { 6 + ((v >> 8) % 4) as u8 }
    }
}

fn class(blob: &[u8], n: usize) -> Option<&'static str> {
    let mut out = vec![0u8; n];
    rans64::decode_with(Arm::Scalar, blob, &mut out).err().map(|e| e.class())
}

fn main() {
    let mut xs = Xs(0x7E7_2AD);
    let mut inputs: Vec<(&str, Vec<u8>, u8)> = vec![
        ("empty", vec![], 12),
        ("five bytes, raw", vec![0x01, 0x23, 0x45, 0x67, 0x89], 12),
        ("random 500 bytes, raw fallback", (0..500).map(|_| xs.next() as u8).collect(), 12),
        ("single symbol 0x88 x 2000", vec![0x88; 2000], 12),
        (
            "all 0x0f/0xf0 extremes",
            (0..700).map(|i| if i % 2 == 0 { 0x0F } else { 0xF0 }).collect(),
            12,
        ),
    ];
    let peaked: Vec<u8> = (0..400).map(|_| xs.nib() | (xs.nib() << 4)).collect();
    inputs.push(("peaked 400 bytes, raw fallback (too short to code)", peaked, 12));
    let peaked: Vec<u8> = (0..1500).map(|_| xs.nib() | (xs.nib() << 4)).collect();
    inputs.push(("peaked 1500 bytes, partial last round", peaked, 12));
    let two: Vec<u8> = (0..5000).map(|_| xs.nib() | (xs.nib() << 4)).collect();
    inputs.push(("peaked 5000 bytes, two chunks of 4096", two, 12));
    let rare: Vec<u8> = (0..3000)
        .map(|_| {
            let lo = if xs.next().is_multiple_of(500) { (xs.next() & 15) as u8 } else { 8 };
            let hi = if xs.next().is_multiple_of(500) { (xs.next() & 15) as u8 } else { 7 };
            lo | (hi << 4)
        })
        .collect();
    inputs.push(("rare symbols 3000 bytes", rare, 12));

    let mut blobs = Vec::new();
    let mut coded = Vec::new();
    for (name, src, shift) in &inputs {
        let blob = encode(src, *shift);
        let mut out = vec![0u8; src.len()];
        rans64::decode_with(Arm::Scalar, &blob, &mut out).expect("decode");
        assert_eq!(&out, src);
        if blob.len() > 16 + 12 + 304 && blob.len() < src.len() {
            coded.push((blob.clone(), src.len()));
        }
        blobs.push(json!({"name": name, "chunk_shift": shift, "version": 2, "input_hex": hex(src), "blob_hex": hex(&blob)}));
    }
    // Version 3 (16-bit states, byte refills): every input again.
    let mut coded3 = Vec::new();
    for (name, src, shift) in &inputs {
        let blob = encode3(src, *shift);
        let mut out = vec![0u8; src.len()];
        rans64::decode_with(Arm::Scalar, &blob, &mut out).expect("decode");
        assert_eq!(&out, src);
        if blob.len() > 16 + 12 + 288 && blob.len() < src.len() {
            coded3.push((blob.clone(), src.len()));
        }
        blobs.push(json!({"name": format!("{name} (version 3)"), "chunk_shift": shift, "version": 3, "input_hex": hex(src), "blob_hex": hex(&blob)}));
    }
    // Version 1 (no chunk checks) stays readable: two of the blobs in that form, decode only.
    for (name, src, shift) in
        inputs.iter().filter(|(name, ..)| name.contains("two chunks") || name.contains("rare"))
    {
        let v1 = to_version_1(&encode(src, *shift));
        let mut out = vec![0u8; src.len()];
        rans64::decode_with(Arm::Scalar, &v1, &mut out).expect("version 1 decodes");
        assert_eq!(&out, src);
        blobs.push(json!({"name": format!("{name} (version 1)"), "chunk_shift": shift, "version": 1, "input_hex": hex(src), "blob_hex": hex(&v1)}));
    }

    // Refusals: hand-made header cases, then mutation search for the chunk classes.
    let (base, n) = coded[0].clone();
    let mut refusals: Vec<Value> = Vec::new();
    let mut push = |name: &str, blob: &[u8], n: usize, want: &str| {
        assert_eq!(class(blob, n), Some(want), "{name}");
        refusals.push(json!({"name": name, "blob_hex": hex(blob), "n_bytes": n, "class": want}));
    };
    let two_chunks = coded.iter().find(|(_, n)| (4097..=8192).contains(n)).cloned();
    push("short magic", b"T4", 0, "E_MAGIC");
    push("short header", &base[..12], n, "E_TRUNCATED");
    let mut b = base.clone();
    b[4] = 4;
    push("version 4", &b, n, "E_VERSION");
    let mut b = base.clone();
    b[5] = 27;
    push("chunk shift 27", &b, n, "E_CHUNK_SHIFT");
    let mut b = base.clone();
    b[6] = 1;
    push("reserved set", &b, n, "E_RESERVED");
    let mut b = base.clone();
    b[8..16].copy_from_slice(&((1u64 << 48) + 1).to_le_bytes());
    push("too large", &b, n, "E_TOO_LARGE");
    // The limit itself is allowed: 2^48 bytes parse on to the (missing) index.
    let mut b = base.clone();
    b[8..16].copy_from_slice(&(1u64 << 48).to_le_bytes());
    push("n_bytes exactly 2^48, index missing", &b, n, "E_TRUNCATED");
    push("index cut", &base[..17], n, "E_TRUNCATED");
    let mut b = base.clone();
    b[16..20].copy_from_slice(&(n as u32 + 1).to_le_bytes());
    push("chunk stored larger than raw", &b, n, "E_CHUNK_SIZE");
    push("body cut", &base[..base.len() - 1], n, "E_TRUNCATED");
    let mut b = base.clone();
    b.push(0);
    push("trailing byte", &b, n, "E_TRAILING");
    // One chunk: header, index entry, check, body. Every mutation of the chunk below is
    // resealed (its check rewritten) so that it reaches the class it is meant for; one is not.
    let body = 16 + 4 + 8;
    let mut b = base.clone();
    b[body + 100] ^= 0x10;
    push("a body bit flipped, check not rewritten", &b, n, "E_CHECKSUM");
    let mut b = base.clone();
    b[20] ^= 1;
    push("the recorded check off by one bit", &b, n, "E_CHECKSUM");
    let mut b = base.clone();
    b[body] ^= 1;
    reseal(&mut b);
    push("frequencies off by one", &b, n, "E_TABLE");
    let mut b = base.clone();
    b[body..body + 32].fill(0);
    b[body..body + 2].copy_from_slice(&4096u16.to_le_bytes());
    reseal(&mut b);
    push("one frequency 4096, the others 0", &b, n, "E_TABLE");
    let mut b = base.clone();
    b[body + 32] ^= 1;
    reseal(&mut b);
    push("way length off by one", &b, n, "E_WAY_LENGTHS");
    let mut b = base.clone();
    b[body + 48 + 2..body + 48 + 4].fill(0);
    reseal(&mut b);
    push("lane 0 state below L", &b, n, "E_STATE_RANGE");
    // L itself is in range: the same blob with lane 0's state exactly L parses and is
    // refused only by its decode (whatever class that is, never E_STATE_RANGE).
    let mut b = base.clone();
    b[body + 48..body + 52].copy_from_slice(&0x1_0000u32.to_le_bytes());
    reseal(&mut b);
    let later = class(&b, n).expect("a changed state is refused");
    assert_ne!(later, "E_STATE_RANGE");
    push("lane 0 state exactly L (in range; its decode fails)", &b, n, later);
    // Across chunks, a streaming decoder refuses in chunk order: chunk 0's head (E_TABLE)
    // before chunk 1's check. A decoder that verifies every check up front (§2.5 allows it)
    // names chunk 1's check instead: `up_front_class`.
    let (two, n2) = two_chunks.expect("a coded two-chunk blob");
    assert_eq!(two[5], 12);
    let k = 2;
    let body0 = 16 + 12 * k;
    let stored0 = u32::from_le_bytes(two[16..20].try_into().unwrap()) as usize;
    let mut b = two.clone();
    b[body0] ^= 1;
    reseal(&mut b);
    b[body0 + stored0 + 100] ^= 0x10;
    assert_eq!(class(&b, n2), Some("E_TABLE"));
    let up_front = Blob::parse(&b).and_then(Blob::verify_checks).map(|_| ()).unwrap_err();
    assert_eq!(up_front.class(), "E_CHECKSUM");
    let across_chunks = json!({
        "name": "chunk 0 frequencies off by one, chunk 1 check wrong",
        "blob_hex": hex(&b), "n_bytes": n2, "class": "E_TABLE", "up_front_class": "E_CHECKSUM",
    });
    // Decode-time classes: mutate the words and the states, in a fixed order, until each is
    // found.
    // E_LEFTOVER: one extra word at the end of way 3 (the last stream), sizes adjusted; the
    // states still end at L, so only the leftover check fails.
    let mut b = base.clone();
    let w3 = u32::from_le_bytes(b[body + 44..body + 48].try_into().unwrap());
    b[body + 44..body + 48].copy_from_slice(&(w3 + 1).to_le_bytes());
    let s0 = u32::from_le_bytes(b[16..20].try_into().unwrap());
    b[16..20].copy_from_slice(&(s0 + 2).to_le_bytes());
    b.extend_from_slice(&[0x34, 0x12]);
    reseal(&mut b);
    push("an extra word at the end of way 3", &b, n, "E_LEFTOVER");
    for want in ["E_OVERRUN", "E_FINAL_STATE"] {
        let mut found = false;
        'search: for at in body + 48..base.len() {
            for v in [0x00u8, 0xFF, 0x80, 0x01] {
                let mut b = base.clone();
                if b[at] == v {
                    continue;
                }
                b[at] = v;
                reseal(&mut b);
                if class(&b, n) == Some(want) {
                    push(&format!("byte {at} set to {v:#04x}"), &b, n, want);
                    found = true;
                    break 'search;
                }
            }
        }
        if !found {
            // Move words between ways (lengths still sum right) as a second search.
            for (from, to) in [(0usize, 1usize), (1, 0), (2, 3), (3, 2)] {
                let mut b = base.clone();
                let get = |b: &[u8], w: usize| {
                    u32::from_le_bytes(b[body + 32 + 4 * w..body + 36 + 4 * w].try_into().unwrap())
                };
                let (a, c) = (get(&b, from), get(&b, to));
                b[body + 32 + 4 * from..body + 36 + 4 * from]
                    .copy_from_slice(&(a - 1).to_le_bytes());
                b[body + 32 + 4 * to..body + 36 + 4 * to].copy_from_slice(&(c + 1).to_le_bytes());
                reseal(&mut b);
                if class(&b, n) == Some(want) {
                    push(&format!("one word moved from way {from} to way {to}"), &b, n, want);
                    found = true;
                    break;
                }
            }
        }
        assert!(found, "no mutation gives {want}");
    }
    // Version 3's chunk classes, on its first one-chunk coded blob: head 288 bytes (16
    // frequencies u8, 4 way lengths u32 in bytes, 128 states u16), then the byte streams.
    let (base, n) = coded3
        .iter()
        .find(|(b, _)| u64::from_le_bytes(b[8..16].try_into().unwrap()) <= 4096)
        .cloned()
        .expect("a coded version-3 blob");
    let body = 16 + 4 + 8;
    let mut b = base.clone();
    b[16..20].copy_from_slice(&287u32.to_le_bytes());
    push("version 3: a coded chunk of 287 bytes", &b, n, "E_CHUNK_SIZE");
    let mut b = base.clone();
    b[body + 100] ^= 0x10;
    push("version 3: a body bit flipped, check not rewritten", &b, n, "E_CHECKSUM");
    let mut b = base.clone();
    b[body] ^= 1;
    reseal(&mut b);
    push("version 3: frequencies off by one", &b, n, "E_TABLE");
    let mut b = base.clone();
    b[body + 16] ^= 1;
    reseal(&mut b);
    push("version 3: way length off by one", &b, n, "E_WAY_LENGTHS");
    let mut b = base.clone();
    b[body + 32 + 2 * 5 + 1] = 0;
    reseal(&mut b);
    push("version 3: lane 5 state below L = 256", &b, n, "E_STATE_RANGE");
    let mut b = base.clone();
    b[body + 32..body + 34].copy_from_slice(&256u16.to_le_bytes());
    reseal(&mut b);
    let later = class(&b, n).expect("a changed state is refused");
    assert_ne!(later, "E_STATE_RANGE");
    push("version 3: lane 0 state exactly L (in range; its decode fails)", &b, n, later);
    let mut b = base.clone();
    let w3 = u32::from_le_bytes(b[body + 28..body + 32].try_into().unwrap());
    b[body + 28..body + 32].copy_from_slice(&(w3 + 1).to_le_bytes());
    let s0 = u32::from_le_bytes(b[16..20].try_into().unwrap());
    b[16..20].copy_from_slice(&(s0 + 1).to_le_bytes());
    b.push(0x5A);
    reseal(&mut b);
    push("version 3: an extra byte at the end of way 3", &b, n, "E_LEFTOVER");
    let mut b = base.clone();
    let s0 = u32::from_le_bytes(b[16..20].try_into().unwrap());
    b[16..20].copy_from_slice(&(s0 - 1).to_le_bytes());
    b[body + 28..body + 32].copy_from_slice(&(w3 - 1).to_le_bytes());
    b.pop();
    reseal(&mut b);
    push("version 3: the last byte of way 3 removed", &b, n, "E_OVERRUN");
    let mut found = false;
    'search: for at in body + 32..base.len() {
        for v in [0x00u8, 0xFF, 0x80, 0x01] {
            let mut b = base.clone();
            if b[at] == v {
                continue;
            }
            b[at] = v;
            reseal(&mut b);
            if class(&b, n) == Some("E_FINAL_STATE") {
                push(&format!("version 3: byte {at} set to {v:#04x}"), &b, n, "E_FINAL_STATE");
                found = true;
                break 'search;
            }
        }
    }
    assert!(found, "no version-3 mutation gives E_FINAL_STATE");
    refusals.push(across_chunks);
    let doc = json!({
        "format": "int4-rans64-t1",
        "version": 3,
        "about": "blobs: input_hex (packed int4 bytes) encoded with chunk_shift by the reference encoder of docs/int4-rans64-t1.md section 4 (version 2) and section 7.4 (version 3; named so); the version-1 blobs are decode-only; refusals: blob_hex decoded into an output of n_bytes bytes must be refused with class, by a decoder that checks chunk by chunk (section 3); where up_front_class is given, a decoder that verifies every chunk check before decoding any chunk (section 2.5) refuses with that class instead. Byte offsets in refusal names count from the start of the blob. Every mutation of a version-2 or version-3 blob below the check table has its checks rewritten so that it reaches its class, unless its name says the check is wrong.",
        "blobs": blobs,
        "refusals": refusals,
    });
    println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
}
