//! Format inference from byte arithmetic: arbitrary `(o, i, nb, ns, stamp)` → `Ok` or a named
//! refusal, never a panic or overflow. Properties:
//! - a resolved format's own byte formulas give back `(nb, ns)` (`weight_bytes(o, i) == nb`,
//!   `scale_bytes(o, i, group_size) == ns`); the documented exception is the stamp-gated
//!   entropy-coded formats (`int4-rans256-g0`, `int4-rans64-t1`: every format whose weight
//!   formula is `DataDependent`), whose weight bytes are a data-dependent blob: only
//!   `ns == 4·O` holds, and only when stamped;
//! - a stamp that resolves resolves to itself; an unstamped tensor never resolves to the
//!   stamp-gated format; int4-grouped always carries a group size from the candidates;
//! - `stamp::verify` accepts exactly the stamped resolution;
//! - stamping the unstamped answer keeps it (a stamp never breaks a clean inference), except
//!   where `docs/FORMATS.md` says a stamp decides (the E8 tag with its collision flags).
//!
//! Input shapes: half of the time `nb`/`ns` are derived from a registry format's own formulas
//! (plus a small delta), so the accepting branches are reached, not only `E_NO_LAYOUT`.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use tetrad_fuzz::assert_class;
use tetrad_quant::format::{FormulaError, GROUP_SIZE_CANDIDATES};
use tetrad_quant::{Format, resolve, stamp};

#[derive(Debug, Arbitrary)]
enum Stamp<'a> {
    None,
    Known(u8),
    Text(&'a str),
}

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    o: u64,
    i: u64,
    small: bool,
    derive: Option<(u8, u8, i8, i8)>,
    nb: u64,
    ns: u64,
    stamp: Stamp<'a>,
}

fn run(inp: Input<'_>) {
    let (mut o, mut i) = (inp.o, inp.i);
    if inp.small {
        o %= 1 << 12;
        i %= 1 << 16;
    }
    let (mut nb, mut ns) = (inp.nb, inp.ns);
    if let Some((f, g, dw, ds)) = inp.derive {
        let f = Format::ALL[usize::from(f) % Format::ALL.len()];
        let gs = GROUP_SIZE_CANDIDATES[usize::from(g) % GROUP_SIZE_CANDIDATES.len()];
        if let Ok(w) = f.weight_bytes(o, i) {
            nb = w.wrapping_add_signed(i64::from(dw % 3));
        }
        if let Ok(s) = f.scale_bytes(o, i, Some(gs)) {
            ns = s.wrapping_add_signed(i64::from(ds % 3));
        }
    }
    let name_buf;
    let stamp = match inp.stamp {
        Stamp::None => None,
        Stamp::Known(k) => {
            name_buf = Format::ALL[usize::from(k) % Format::ALL.len()].name();
            Some(name_buf)
        }
        Stamp::Text(t) => Some(t),
    };
    let r = resolve(o, i, nb, ns, stamp);
    match r {
        Ok(res) => {
            let f = res.format;
            if f.weight_bytes(o, i) == Err(FormulaError::DataDependent) {
                assert_eq!(
                    stamp,
                    Some(f.name()),
                    "unstamped tensor resolved to a stamp-gated format"
                );
                assert_eq!(f.scale_bytes(o, i, None), Ok(ns), "{f}: scales are O f32s");
            } else {
                assert_eq!(f.weight_bytes(o, i), Ok(nb), "{res}: weight formula vs nb");
                assert_eq!(
                    f.scale_bytes(o, i, res.group_size),
                    Ok(ns),
                    "{res}: scale formula vs ns"
                );
            }
            match f {
                Format::Int4Grouped => {
                    let gs = res.group_size.expect("int4-grouped has a group size");
                    assert!(GROUP_SIZE_CANDIDATES.contains(&gs) && u64::from(gs) <= i);
                }
                Format::Int3G64 => assert_eq!(res.group_size, Some(64)),
                Format::Mxfp4 => assert_eq!(res.group_size, Some(32)),
                _ => assert_eq!(res.group_size, None),
            }
            if let Some(s) = stamp {
                assert_eq!(f.name(), s, "a stamped tensor resolved to another format");
            }
            assert!(stamp::verify("t", stamp, &res).is_ok(), "verify refuses {res} / {stamp:?}");
            if stamp.is_none() {
                // Stamping the inferred format keeps it.
                let again = resolve(o, i, nb, ns, Some(f.name()));
                assert_eq!(again.map(|r| r.format), Ok(f), "stamping {f} changed the answer");
            }
        }
        Err(e) => {
            assert_class(e.class());
            let _ = e.to_string();
            if stamp.is_some_and(|s| Format::from_name(s).is_none()) && o != 0 && i != 0 {
                assert_eq!(e.class(), "E_STAMP_UNKNOWN");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(inp) = Input::arbitrary_take_rest(Unstructured::new(data)) {
        run(inp);
    }
});
