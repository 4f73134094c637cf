//! Arbitrary bytes as a safetensors shard, through every reader of untrusted container files:
//! - `tetrad::shard::ShardHeader::parse` (+ `check_strict`): `Ok` or `E_SHARD_MALFORMED`; on `Ok`
//!   every tensor's `[begin, end]` lies inside the data section;
//! - `tetrad::packed::verify::verify_shard` (the bytes written to a temp file): a verdict whose
//!   refusals are all named classes, never `E_INTERNAL` (a caught panic); no refusal ⇒ every
//!   stamped record trusted;
//! - the CFS1 container decoder (`tetrad::cfse::unpack`): `Ok` or a named refusal; on `Ok` the
//!   written file is a strictly valid shard holding the declared tensors;
//! - `tetrad::packed::unpack::unpack_shard` (the `unpack` command's shard decoder, no
//!   manifest): `Ok` or a named refusal; on `Ok` the restored bytes are a strictly valid shard;
//! - `tetrad::container::Container::open` and `tensor(..)` / `decode_into` for every tensor, at
//!   its stored shape and, for an `int4-rans64-t1` blob, at the `[O, I]` its scales and byte
//!   count give (the shape an engine would ask for, so the stamp-gated decode is reached);
//!   and `TensorView::matmul` on one activation row (weights ≤ 1 MiB): 1 and 2 threads give
//!   the same bits or the same named refusal.
//!
//! Memory bound (run with `-malloc_limit_mb=1100 -rss_limit_mb=3072`, see fuzz/README.md): the
//! readers allocate O(file) plus the decoded output. CFS1 blobs and rANS records can legally
//! declare outputs far larger than themselves (a 49-byte CFS1 blob decodes to up to 4 GiB; an
//! int4-rans256-g0 record to up to 2^17 times its length), so this target only asks the CFS1
//! unpacker, `unpack_shard` and `decode_into` for outputs they declare ≤ 64 MiB in total; `verify_shard` is
//! always run (it bounds itself by its `FULL_REENCODE_LIMIT`).
#![no_main]

use std::cell::RefCell;
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use tetrad::container::Container;
use tetrad::shard::{ShardHeader, declared_bytes};
use tetrad_fuzz::assert_class;

/// Largest total declared output this target asks a decoder to produce.
const DECODE_BOUND: u64 = 64 << 20;

thread_local! {
    static DIR: RefCell<Option<tempfile::TempDir>> = const { RefCell::new(None) };
}

fn paths() -> (PathBuf, PathBuf) {
    DIR.with(|d| {
        let mut d = d.borrow_mut();
        let dir = d.get_or_insert_with(|| tempfile::tempdir().expect("temp dir"));
        (dir.path().join("model-00001-of-00001.safetensors"), dir.path().join("out.bin"))
    })
}

/// Σ declared bytes over the header's tensors (saturating): dtype × shape, or for a dtype the
/// reader does not know (the CFS1 container carries those at their blob's `rawlen`) the
/// `rawlen` its blob claims.
fn declared(h: &ShardHeader, data: &[u8]) -> u64 {
    h.tensors
        .iter()
        .map(|t| match declared_bytes(&t.dtype, &t.shape) {
            Ok(Some(n)) => n,
            Ok(None) => {
                let at = (h.data_start + t.begin) as usize;
                let end = (h.data_start + t.end) as usize;
                data.get(at..end)
                    .and_then(|b| tetrad_fse::Header::parse(b).ok())
                    .map_or(0, |hd| u64::from(hd.rawlen))
            }
            Err(_) => u64::MAX,
        })
        .fold(0u64, u64::saturating_add)
}

/// Σ bytes `unpack_shard` would decode (saturating): each tensor that parses as an
/// `int4-rans256-g0` record its `packed_bytes`, each `int4-rans64-t1` blob its byte count.
fn coded_bytes(h: &ShardHeader, data: &[u8]) -> u64 {
    h.tensors
        .iter()
        .map(|t| {
            let at = (h.data_start + t.begin) as usize..(h.data_start + t.end) as usize;
            let Some(b) = data.get(at) else { return 0 };
            if b.starts_with(&tetrad_rans::rans64::MAGIC) {
                b.get(8..16).map_or(0, |n| u64::from_le_bytes(n.try_into().expect("8 bytes")))
            } else {
                tetrad_rans::Record::parse(b).map_or(0, |r| r.packed_bytes())
            }
        })
        .fold(0u64, u64::saturating_add)
}

/// The `[O, I]` an engine would ask for a stored `int4-rans64-t1` blob (a 1-D tensor starting
/// with the format's magic): `O` from its `NAME.qs` scales (F32 `[O]`), `I = 2 · n_bytes / O`
/// from the blob's byte count; the shape as stored never matches such a tensor.
fn rans64_shape(h: &ShardHeader, data: &[u8], name: &str) -> Option<(u64, u64)> {
    let t = h.tensor(name)?;
    let blob = data.get((h.data_start + t.begin) as usize..(h.data_start + t.end) as usize)?;
    if blob.get(..4)? != tetrad_rans::rans64::MAGIC.as_slice() {
        return None;
    }
    let n_bytes = u64::from_le_bytes(blob.get(8..16)?.try_into().ok()?);
    let [o] = h.tensor(&format!("{name}.qs"))?.shape.as_slice() else { return None };
    let stride = n_bytes.checked_div(*o)?;
    let i = stride.checked_mul(2)?;
    (stride * o == n_bytes).then_some((*o, i))
}

/// Largest weight bytes, `O` and `I` this target multiplies with (one activation row).
const MATMUL_BOUND: u64 = 1 << 20;

/// `TensorView::matmul` (the engine's call) on one activation row: on 1 and 2 threads the same
/// bits, or the same named refusal.
fn multiply_agrees(v: &tetrad::container::TensorView<'_>, name: &str, o: u64, i: u64) {
    #[allow(clippy::cast_possible_truncation)] // ≤ MATMUL_BOUND
    let (o, i) = (o as usize, i as usize);
    #[allow(clippy::cast_precision_loss)]
    let x: Vec<f32> = (0..i).map(|k| (k % 17) as f32 - 8.0).collect();
    let isa = tetrad_quant::isa::best();
    let run = |threads| {
        let mut y = vec![0f32; o];
        v.matmul(name, isa, &x, 1, &mut y, threads)
            .map(|how| (how, y.iter().map(|f| f.to_bits()).collect::<Vec<u32>>()))
    };
    match (run(1), run(2)) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{name}: 1 and 2 threads differ"),
        (Err(a), Err(b)) => {
            assert_class(a.class.name());
            assert_eq!((a.class, &a.detail), (b.class, &b.detail), "{name}");
        }
        (a, b) => panic!("{name}: 1 thread {:?}, 2 threads {:?}", a.err(), b.err()),
    }
}

fuzz_target!(|data: &[u8]| {
    let header = ShardHeader::parse(data, data.len() as u64);
    match &header {
        Ok(h) => {
            assert!(h.data_start >= 8 && h.data_start <= data.len() as u64);
            assert_eq!(h.data_start + h.data_len, data.len() as u64);
            for t in &h.tensors {
                assert!(t.begin <= t.end && t.end <= h.data_len, "{t:?}");
            }
            if let Err(e) = h.check_strict() {
                assert_eq!(e.class().name(), "E_SHARD_MALFORMED");
            }
        }
        Err(e) => assert_eq!(e.class().name(), "E_SHARD_MALFORMED"),
    }

    let (path, out) = paths();
    std::fs::write(&path, data).expect("write temp shard");
    let verdict = tetrad::packed::verify::verify_shard(&path, Some(16));
    for r in &verdict.refusals {
        assert_class(r.class.name());
        assert_ne!(r.class.name(), "E_INTERNAL", "verify_shard caught a panic: {r}");
    }
    if header.is_err() {
        assert!(!verdict.refusals.is_empty(), "verify trusted a malformed shard");
    }
    if verdict.refusals.is_empty() {
        assert_eq!(verdict.trusted, verdict.stamped.min(16));
    }

    let Ok(h) = header else { return };
    if declared(&h, data) <= DECODE_BOUND {
        match tetrad::cfse::unpack(&path, &out, &|_| {}) {
            Ok(n) => {
                assert_eq!(n, h.tensors.len());
                let bytes = std::fs::read(&out).expect("unpacked file");
                let back = ShardHeader::parse(&bytes, bytes.len() as u64).expect("valid output");
                // Any dtype: CFS1 carries dtypes this reader does not know at their extents.
                back.check_strict_any_dtype().expect("strictly valid output");
                assert_eq!(back.tensors.len(), n);
            }
            Err(e) => assert_class(e.class.name()),
        }
    }

    if coded_bytes(&h, data) <= DECODE_BOUND {
        match tetrad::packed::unpack::unpack_shard(&path) {
            Ok((bytes, records)) => {
                assert!(records <= h.tensors.len() as u64);
                let back = ShardHeader::parse(&bytes, bytes.len() as u64).expect("valid output");
                back.check_strict().expect("strictly valid output");
            }
            Err(e) => assert_class(e.class.name()),
        }
    }

    match Container::open(&path) {
        Ok(c) => {
            let names: Vec<String> = c.names().map(str::to_owned).collect();
            let mut budget = DECODE_BOUND;
            for name in names.iter().take(16) {
                let shape = h.tensor(name).map(|t| t.shape.clone()).unwrap_or_default();
                let (o, i) = match shape.as_slice() {
                    [o, i] => (*o, *i),
                    [n] => (1, *n),
                    _ => (1, 1),
                };
                let mut shapes = vec![(o, i)];
                shapes.extend(rans64_shape(&h, data, name));
                for (o, i) in shapes {
                    match c.tensor(name, o, i) {
                        Ok(v) => {
                            let n = v.decoded_len();
                            if n <= budget {
                                budget -= n;
                                #[allow(clippy::cast_possible_truncation)] // ≤ DECODE_BOUND
                                let mut buf = vec![0u8; n as usize];
                                if let Err(e) = v.decode_into(&mut buf) {
                                    assert_class(e.class.name());
                                }
                            }
                            if n <= MATMUL_BOUND && o <= MATMUL_BOUND && i <= MATMUL_BOUND {
                                multiply_agrees(&v, name, o, i);
                            }
                        }
                        Err(e) => assert_class(e.class.name()),
                    }
                }
            }
        }
        Err(e) => assert_class(e.class.name()),
    }
});
