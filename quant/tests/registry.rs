//! The registry is consistent: ordinals and names unique, the table in enum order, lookups
//! round-trip, and each row's formula *text* (what docs/FORMATS.md prints) evaluates to exactly
//! what the code's formula computes.

use tetrad_quant::Format;
use tetrad_quant::format::{
    FormulaError, NEXT_FREE_ORDINAL, PRIVATE_ORDINAL_START, REGISTRY, ScaleElem, Status,
};

#[test]
fn ordinals_are_unique() {
    for (a, ra) in REGISTRY.iter().enumerate() {
        for rb in &REGISTRY[a + 1..] {
            if ra.ordinal.is_some() {
                assert_ne!(ra.ordinal, rb.ordinal, "{} and {} share an ordinal", ra.name, rb.name);
            }
        }
    }
}

#[test]
fn names_are_unique_and_well_formed() {
    for (a, ra) in REGISTRY.iter().enumerate() {
        for rb in &REGISTRY[a + 1..] {
            assert_ne!(ra.name, rb.name);
        }
        assert!(!ra.name.is_empty());
        assert!(
            ra.name.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'),
            "{}",
            ra.name
        );
    }
}

#[test]
fn public_ordinals_are_below_the_next_free_one_and_dense() {
    let mut ords: Vec<u8> = REGISTRY.iter().filter_map(|r| r.ordinal).collect();
    ords.sort_unstable();
    let expected: Vec<u8> = (0..NEXT_FREE_ORDINAL).collect();
    assert_eq!(ords, expected, "public ordinals must be exactly 0..NEXT_FREE_ORDINAL");
    assert_eq!((NEXT_FREE_ORDINAL, PRIVATE_ORDINAL_START), (9, 100));
}

#[test]
fn table_is_in_enum_order_and_lookups_round_trip() {
    assert_eq!(Format::ALL.len(), REGISTRY.len());
    for (k, f) in Format::ALL.into_iter().enumerate() {
        assert_eq!(REGISTRY[k].format, f);
        assert_eq!(f.info().format, f);
        assert_eq!(Format::from_name(f.name()), Some(f));
        if let Some(o) = f.ordinal() {
            assert_eq!(Format::from_ordinal(o), Some(f));
        }
        assert_eq!(f.to_string(), f.name());
    }
    for o in NEXT_FREE_ORDINAL..=u8::MAX {
        assert_eq!(Format::from_ordinal(o), None, "ordinal {o}");
    }
    assert_eq!(Format::from_name("INT4-ROW"), None);
    assert_eq!(Format::from_name("int4-row "), None);
    assert_eq!(Format::from_name(""), None);
}

#[test]
fn the_spec_rows() {
    let rows: Vec<(Option<u8>, &str)> = REGISTRY.iter().map(|r| (r.ordinal, r.name)).collect();
    assert_eq!(
        rows,
        vec![
            (Some(0), "f32"),
            (Some(1), "int8-row"),
            (Some(2), "int4-row"),
            (Some(3), "int2-row"),
            (Some(4), "int4-grouped"),
            (Some(5), "int3-g64"),
            (Some(6), "e8-iq3-lattice"),
            (Some(7), "mxfp4"),
            (Some(8), "fp8-e4m3-b128"),
            (None, "int4-rans256-g0"),
            (None, "int4-rans64-t1"),
        ]
    );
    assert_eq!(Format::Int4Rans256G0.status(), Status::StampGated);
    assert_eq!(Format::Int4Rans64T1.status(), Status::StampGated);
    assert_eq!(Format::from_name("int4-rans64-t1"), Some(Format::Int4Rans64T1));
    assert_eq!(Format::Int4Rans64T1.name(), tetrad_rans::rans64::FORMAT_NAME);
    assert_eq!(Format::E8Iq3Lattice.status(), Status::Refused);
}

/// Evaluates a formula text such as `O·ceil(I/64)·24` (factors joined by `·`; a factor is a
/// number, `O`, `I`, `gs` or `ceil(A/B)`). `None` on overflow.
fn eval(expr: &str, o: u64, i: u64, gs: u64) -> Option<u64> {
    let atom = |t: &str| -> u64 {
        match t {
            "O" => o,
            "I" => i,
            "gs" => gs,
            n => n.parse().unwrap_or_else(|_| panic!("bad atom {n:?} in {expr:?}")),
        }
    };
    let mut acc: u64 = 1;
    for f in expr.split('·') {
        let v = if let Some(inner) = f.strip_prefix("ceil(").and_then(|r| r.strip_suffix(')')) {
            let (a, b) = inner.split_once('/').expect("ceil(a/b)");
            atom(a).div_ceil(atom(b))
        } else {
            atom(f)
        };
        acc = acc.checked_mul(v)?;
    }
    Some(acc)
}

/// Splits a scale text into (count expression, element) and evaluates its byte count.
fn eval_scale_bytes(text: &str, o: u64, i: u64, gs: u64) -> Option<u64> {
    if text == "none" {
        return Some(0);
    }
    let (expr, elem) = text.rsplit_once(' ').expect("count then element type");
    let width = match elem {
        "f32" | "tag" => 4,
        "ue8m0" => 1,
        e => panic!("unknown element {e:?}"),
    };
    eval(expr, o, i, gs)?.checked_mul(width)
}

#[test]
fn formula_texts_match_the_arithmetic() {
    let dims = [
        1u64, 2, 3, 7, 31, 32, 33, 63, 64, 65, 97, 127, 128, 129, 255, 256, 257, 4095, 4096, 16384,
        33000,
    ];
    for r in &REGISTRY {
        for &o in &dims {
            for &i in &dims {
                for gs in [16u32, 48, 128, 256] {
                    let code = r.format.weight_bytes(o, i);
                    if r.weight_text == "data-dependent" {
                        assert_eq!(code, Err(FormulaError::DataDependent));
                    } else {
                        assert_eq!(
                            code.ok(),
                            eval(r.weight_text, o, i, u64::from(gs)),
                            "{} [{o},{i}]",
                            r.name
                        );
                    }
                    let scale = r.format.scale_bytes(o, i, Some(gs));
                    assert_eq!(
                        scale.ok(),
                        eval_scale_bytes(r.scale_text, o, i, u64::from(gs)),
                        "{} [{o},{i}] gs {gs}",
                        r.name
                    );
                    let elem = r.scales.elem;
                    assert_eq!(
                        r.format.scale_count(o, i, Some(gs)).unwrap() * elem.bytes(),
                        scale.unwrap()
                    );
                }
            }
        }
    }
}

#[test]
fn formulas_refuse_overflow_by_name() {
    let m = u64::MAX;
    assert_eq!(Format::Int8Row.weight_bytes(m, 2), Err(FormulaError::Overflow { o: m, i: 2 }));
    assert_eq!(
        Format::F32.weight_bytes(m / 4 + 1, 1),
        Err(FormulaError::Overflow { o: m / 4 + 1, i: 1 })
    );
    assert_eq!(Format::F32.weight_bytes(1, m / 4), Ok(m / 4 * 4));
    assert_eq!(Format::Int4Row.weight_bytes(m, m), Err(FormulaError::Overflow { o: m, i: m }));
    assert_eq!(Format::Int4Row.weight_bytes(1, m), Ok(m.div_ceil(2)));
    assert_eq!(Format::E8Iq3Lattice.weight_bytes(m, 1), Err(FormulaError::Overflow { o: m, i: 1 }));
    assert_eq!(Format::Int8Row.scale_bytes(m, 1, None), Err(FormulaError::Overflow { o: m, i: 1 }));
    assert_eq!(Format::Mxfp4.scale_bytes(m, 1, None), Ok(m));
    assert_eq!(Format::Mxfp4.scale_bytes(m, 33, None), Err(FormulaError::Overflow { o: m, i: 33 }));
    assert_eq!(
        Format::Fp8E4m3B128.scale_bytes(m, m, None).unwrap_err().class(),
        "E_FORMULA_OVERFLOW"
    );
    assert_eq!(Format::Int4Grouped.scale_bytes(4, 4, None), Err(FormulaError::GroupSizeRequired));
    assert_eq!(
        Format::Int4Grouped.scale_bytes(4, 4, Some(0)),
        Err(FormulaError::GroupSizeRequired)
    );
    assert_eq!(Format::Int4Rans256G0.weight_bytes(4, 4), Err(FormulaError::DataDependent));
    assert_eq!(Format::Int4Rans64T1.weight_bytes(4, 4), Err(FormulaError::DataDependent));
    assert_eq!(Format::Int4Rans64T1.scale_bytes(5, 9, None), Ok(20));
    assert_eq!(Format::E8Iq3Lattice.scale_bytes(m, m, None), Ok(4));
    assert_eq!(Format::F32.scale_bytes(m, m, None), Ok(0));
    assert_eq!(ScaleElem::Ue8m0.bytes(), 1);
}
