//! For every format and shape, the bytes the format's own formulas produce resolve back to that
//! format — or to one of the ambiguities documented in docs/FORMATS.md ("Known ambiguities"),
//! each encoded below as a predicate. Stamped, they always resolve to the format itself (except
//! the documented int4-grouped cases). Exhaustive over a grid of edge shapes, then proptest.

use proptest::prelude::*;
use tetrad_quant::format::GROUP_SIZE_CANDIDATES;
use tetrad_quant::resolve::resolve_literal;
use tetrad_quant::{Format, ResolveError, Resolved, resolve};

const E8_I4ROW: [u64; 8] = [195, 196, 391, 392, 587, 588, 783, 784];

#[derive(Debug, Clone, Copy)]
struct Case {
    f: Format,
    gs: Option<u32>,
    o: u64,
    i: u64,
}

impl Case {
    fn bytes(&self) -> (u64, u64) {
        let nb = match self.f {
            // A record's length is data-dependent; use the int4-row size as a plausible one.
            Format::Int4Rans256G0 | Format::Int4Rans64T1 => {
                Format::Int4Row.weight_bytes(self.o, self.i).unwrap()
            }
            f => f.weight_bytes(self.o, self.i).unwrap(),
        };
        (nb, self.f.scale_bytes(self.o, self.i, self.gs).unwrap())
    }
}

fn blocks(o: u64, i: u64) -> u64 {
    o.div_ceil(128) * i.div_ceil(128)
}

/// The resolution is the format itself (for int4-grouped: its gs, or a finer tied one).
fn is_self(c: &Case, r: &Result<Resolved, ResolveError>) -> bool {
    match (c.f, r) {
        (
            Format::Int4Grouped,
            Ok(Resolved { format: Format::Int4Grouped, group_size: Some(g) }),
        ) => {
            let gs = c.gs.unwrap();
            *g <= gs && c.i.div_ceil(u64::from(*g)) == c.i.div_ceil(u64::from(gs))
        }
        (f, Ok(res)) => res.format == f,
        _ => false,
    }
}

fn is_fmt(r: &Result<Resolved, ResolveError>, f: Format) -> bool {
    matches!(r, Ok(res) if res.format == f)
}

/// The documented unstamped ambiguities.
fn documented_unstamped(c: &Case, r: &Result<Resolved, ResolveError>) -> bool {
    let Case { f, gs, o, i } = *c;
    match f {
        Format::F32 => {
            matches!(r, Err(ResolveError::NoLayout { .. } | ResolveError::ScaleCount { .. }))
        }
        Format::Mxfp4 | Format::Int4Rans256G0 | Format::Int4Rans64T1 => !is_fmt(r, f),
        Format::Int4Grouped if u64::from(gs.unwrap()) >= i => {
            // One group per row: exactly int4-row's bytes.
            let as_row = Case { f: Format::Int4Row, gs: None, ..*c };
            is_fmt(r, Format::Int4Row) || documented_unstamped(&as_row, r)
        }
        Format::Int3G64 => match i {
            24 => is_fmt(r, Format::Int8Row),
            47 | 48 => is_fmt(r, Format::Int4Row),
            95 | 96 | 143 | 144 => {
                *r == Ok(Resolved { format: Format::Int4Grouped, group_size: Some(48) })
            }
            _ => false,
        },
        Format::Int4Row | Format::Int2Row | Format::Int4Grouped if i == 1 => {
            is_fmt(r, Format::Int8Row)
        }
        Format::Int2Row if i == 2 => is_fmt(r, Format::Int4Row),
        Format::Int4Row if o == 1 && E8_I4ROW.contains(&i) => {
            matches!(r, Err(ResolveError::E8Ambiguous { flags, .. }) if flags.i4row)
        }
        Format::Int8Row if o == 1 && i == 98 => {
            matches!(r, Err(ResolveError::E8Ambiguous { flags, .. }) if flags.i8row)
        }
        Format::Int8Row if 4 * o == blocks(o, i) => matches!(r, Err(ResolveError::Fp8Ue8m0 { .. })),
        Format::Fp8E4m3B128 if i == 98 && o <= 128 => {
            matches!(r, Err(ResolveError::E8Ambiguous { flags, .. }) if flags.f32_blk)
        }
        Format::Fp8E4m3B128 if 4 * blocks(o, i) == 4 * o => is_fmt(r, Format::Int8Row),
        Format::E8Iq3Lattice => {
            matches!(r, Err(ResolveError::E8Ambiguous { flags, .. }) if flags.any())
        }
        _ => false,
    }
}

/// The documented stamped exceptions: int4-grouped with one group per row is int4-row bytes.
fn documented_stamped(c: &Case, r: &Result<Resolved, ResolveError>) -> bool {
    c.f == Format::Int4Grouped
        && u64::from(c.gs.unwrap()) >= c.i
        && matches!(r, Err(e) if matches!(e.class(), "E_STAMP_MISMATCH" | "E_E8_AMBIGUOUS"))
}

fn cases(o: u64, i: u64) -> Vec<Case> {
    let mut v = Vec::new();
    for f in Format::ALL {
        if f == Format::Int4Grouped {
            for gs in GROUP_SIZE_CANDIDATES {
                v.push(Case { f, gs: Some(gs), o, i });
            }
        } else {
            v.push(Case { f, gs: None, o, i });
        }
    }
    v
}

fn check(o: u64, i: u64) -> Result<(), String> {
    for c in cases(o, i) {
        let (nb, ns) = c.bytes();
        let r = resolve(o, i, nb, ns, None);
        if !(is_self(&c, &r) || documented_unstamped(&c, &r)) {
            return Err(format!("unstamped {c:?} (nb {nb}, ns {ns}) → {r:?}"));
        }
        let r = resolve(o, i, nb, ns, Some(c.f.name()));
        if !(is_self(&c, &r) || documented_stamped(&c, &r)) {
            return Err(format!("stamped {c:?} (nb {nb}, ns {ns}) → {r:?}"));
        }
    }
    Ok(())
}

#[test]
fn exhaustive_edge_grid() {
    for o in [1u64, 2, 3, 4, 5, 127, 128, 129, 256, 385, 400, 512, 513, 1000] {
        for i in 1..=1200u64 {
            if let Err(e) = check(o, i) {
                panic!("{e}");
            }
        }
    }
}

/// The stamped shapes a literal reader of the shared spec refuses although tetrad's own
/// formulas fit (docs/FORMATS.md, "With a stamp"): what `tetrad quantize` keeps as floats.
fn literal_refuses(c: &Case) -> bool {
    let Case { f, gs, o, i } = *c;
    match f {
        Format::F32 | Format::Mxfp4 => true,
        Format::Int4Row => i == 1 || (o == 1 && E8_I4ROW.contains(&i)),
        Format::Int2Row => i <= 2,
        Format::Int3G64 => [24, 47, 48, 95, 96, 143, 144].contains(&i),
        Format::Int4Grouped => u64::from(gs.unwrap()) >= i,
        _ => false,
    }
}

/// Where the literal reading accepts a stamp it agrees with tetrad's; it refuses exactly the
/// documented collision shapes.
#[test]
fn literal_reading_agrees_where_it_accepts() {
    let mut refused = 0;
    for o in [1u64, 2, 3, 4, 5, 127, 128, 129, 256, 385, 400, 512, 513, 1000, 6144] {
        for i in (1..=1200u64).chain([16384]) {
            for c in cases(o, i) {
                let (nb, ns) = c.bytes();
                let lit = resolve_literal(o, i, nb, ns, Some(c.f.name()));
                let ours = resolve(o, i, nb, ns, Some(c.f.name()));
                match &lit {
                    Ok(r) => {
                        assert_eq!(ours, Ok(*r), "{c:?}");
                        assert!(!literal_refuses(&c), "{c:?} accepted literally");
                    }
                    Err(e) => {
                        refused += 1;
                        assert!(literal_refuses(&c), "{c:?}: {e}");
                    }
                }
                let unstamped = resolve_literal(o, i, nb, ns, None);
                // Unstamped they differ only by tetrad's `i4row` flag (int4 bytes of one row).
                if !(o == 1 && E8_I4ROW.contains(&i) && nb == i.div_ceil(2)) {
                    assert_eq!(unstamped, resolve(o, i, nb, ns, None), "{c:?}");
                }
            }
        }
    }
    assert!(refused > 2 * 15 * 1200, "{refused}");
}

#[test]
fn the_classifier_is_not_vacuous() {
    // Undocumented outcomes are rejected.
    let c = Case { f: Format::Int4Row, gs: None, o: 4, i: 100 };
    assert!(!documented_unstamped(&c, &Ok(Resolved { format: Format::Int8Row, group_size: None })));
    assert!(!documented_unstamped(&c, &Err(ResolveError::EmptyShape { o: 4, i: 100 })));
    let c = Case { f: Format::Int3G64, gs: None, o: 4, i: 48 };
    assert!(!documented_unstamped(&c, &Ok(Resolved { format: Format::Int2Row, group_size: None })));
    let c = Case { f: Format::Mxfp4, gs: None, o: 4, i: 48 };
    assert!(!documented_unstamped(
        &c,
        &Ok(Resolved { format: Format::Mxfp4, group_size: Some(32) })
    ));
    // Each documented ambiguity actually occurs (the list is not padded).
    let hits = |f: Format, gs: Option<u32>, o: u64, i: u64| {
        let c = Case { f, gs, o, i };
        let (nb, ns) = c.bytes();
        let r = resolve(o, i, nb, ns, None);
        !is_self(&c, &r) && documented_unstamped(&c, &r)
    };
    assert!(hits(Format::F32, None, 3, 6));
    assert!(hits(Format::F32, None, 3, 7));
    assert!(hits(Format::Mxfp4, None, 8, 4096));
    // The gs tie is accepted by `is_self`, only towards a finer group with the same count.
    let c = Case { f: Format::Int4Grouped, gs: Some(96), o: 8, i: 128 };
    let (nb, ns) = c.bytes();
    let r = resolve(8, 128, nb, ns, None);
    assert_eq!(r, Ok(Resolved { format: Format::Int4Grouped, group_size: Some(64) }));
    assert!(is_self(&c, &r));
    let c48 = Case { gs: Some(48), ..c };
    assert!(!is_self(&c48, &r), "64 is not a tie of 48 at I = 128");
    assert!(hits(Format::Int4Grouped, Some(128), 8, 100));
    for i in [24, 47, 48, 95, 96, 143, 144] {
        assert!(hits(Format::Int3G64, None, 8, i), "int3 I {i}");
    }
    assert!(hits(Format::Int4Row, None, 8, 1));
    assert!(hits(Format::Int2Row, None, 8, 1));
    assert!(hits(Format::Int2Row, None, 8, 2));
    for i in E8_I4ROW {
        assert!(hits(Format::Int4Row, None, 1, i));
    }
    assert!(hits(Format::Int8Row, None, 1, 98));
    assert!(hits(Format::Int8Row, None, 1, 400));
    assert!(hits(Format::Fp8E4m3B128, None, 6144, 16384));
    assert!(hits(Format::Fp8E4m3B128, None, 100, 98));
    assert!(hits(Format::E8Iq3Lattice, None, 1, 196));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_shapes_resolve_to_their_format(
        o in prop_oneof![1u64..=600, 1u64..=200_000, Just(1u64), Just(128), Just(129), 1u64..=(1u64 << 31)],
        i in prop_oneof![1u64..=1200, 1u64..=200_000, Just(98u64), Just(128), Just(256), 1u64..=(1u64 << 31)],
    ) {
        if let Err(e) = check(o, i) {
            prop_assert!(false, "{}", e);
        }
    }
}
