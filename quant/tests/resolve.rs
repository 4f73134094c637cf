//! Every branch of `resolve`, at typical and edge shapes, with the numbers each refusal carries.

use tetrad_quant::resolve::{E8Flags, ShortName};
use tetrad_quant::{Format, ResolveError, Resolved, resolve};

fn ok(o: u64, i: u64, nb: u64, ns: u64, stamp: Option<&str>) -> Resolved {
    resolve(o, i, nb, ns, stamp).unwrap_or_else(|e| panic!("[{o},{i}] nb {nb} ns {ns}: {e}"))
}

fn fmt(o: u64, i: u64, nb: u64, ns: u64, stamp: Option<&str>) -> Format {
    ok(o, i, nb, ns, stamp).format
}

fn err(o: u64, i: u64, nb: u64, ns: u64, stamp: Option<&str>) -> ResolveError {
    match resolve(o, i, nb, ns, stamp) {
        Ok(r) => panic!("[{o},{i}] nb {nb} ns {ns} stamp {stamp:?}: expected a refusal, got {r}"),
        Err(e) => e,
    }
}

/// The bytes `f`'s own formulas give.
fn bytes(f: Format, o: u64, i: u64, gs: Option<u32>) -> (u64, u64) {
    (f.weight_bytes(o, i).unwrap(), f.scale_bytes(o, i, gs).unwrap())
}

fn own(f: Format, o: u64, i: u64, stamp: bool) -> Result<Resolved, ResolveError> {
    let (nb, ns) = bytes(f, o, i, None);
    resolve(o, i, nb, ns, stamp.then_some(f.name()))
}

// ---- each format at typical shapes ----

#[test]
fn int8_row_typical() {
    for (o, i) in [(4096, 4096), (11008, 4096), (3, 5), (130, 7)] {
        assert_eq!(own(Format::Int8Row, o, i, false).unwrap().format, Format::Int8Row, "[{o},{i}]");
    }
}

#[test]
fn int4_row_typical_and_odd() {
    for (o, i) in [(4096, 4096), (14336, 4096), (7, 4097), (1, 3), (2, 196)] {
        let r = own(Format::Int4Row, o, i, false).unwrap();
        assert_eq!(r, Resolved { format: Format::Int4Row, group_size: None }, "[{o},{i}]");
    }
}

#[test]
fn int2_row_typical() {
    for (o, i) in [(4096, 4096), (5, 13), (1, 3)] {
        assert_eq!(own(Format::Int2Row, o, i, false).unwrap().format, Format::Int2Row, "[{o},{i}]");
    }
}

#[test]
fn int3_g64_typical() {
    for (o, i) in [(4096, 4096), (3, 100), (1, 64), (2, 65), (8, 200)] {
        let r = own(Format::Int3G64, o, i, false).unwrap();
        assert_eq!(r, Resolved { format: Format::Int3G64, group_size: Some(64) }, "[{o},{i}]");
    }
}

#[test]
fn e8_typical() {
    for (o, i) in [(4096, 4096), (2, 300), (1, 300), (129, 98), (7, 256)] {
        assert_eq!(
            own(Format::E8Iq3Lattice, o, i, false).unwrap().format,
            Format::E8Iq3Lattice,
            "[{o},{i}]"
        );
    }
}

#[test]
fn fp8_typical() {
    // ns_blk differs from 4·O: unstamped fp8.
    for (o, i) in [(4096, 4096), (7168, 2048), (129, 129), (300, 1000)] {
        assert_eq!(
            own(Format::Fp8E4m3B128, o, i, false).unwrap().format,
            Format::Fp8E4m3B128,
            "[{o},{i}]"
        );
    }
}

#[test]
fn stamp_only_formats_resolve_by_stamp() {
    for (o, i) in [(4096, 4096), (3, 5), (1, 1)] {
        assert_eq!(own(Format::F32, o, i, true).unwrap().format, Format::F32);
        let r = own(Format::Mxfp4, o, i, true).unwrap();
        assert_eq!(r, Resolved { format: Format::Mxfp4, group_size: Some(32) });
    }
    // Unstamped f32 bytes are no quantized layout.
    let e = own(Format::F32, 4096, 4096, false).unwrap_err();
    assert!(
        matches!(e, ResolveError::NoLayout { o: 4096, i: 4096, weight_bytes: 67_108_864, .. }),
        "{e}"
    );
    assert_eq!(e.class(), "E_NO_LAYOUT");
    // f32 [O, 6] has int3-g64's weight bytes: the scale check refuses it.
    let e = own(Format::F32, 3, 6, false).unwrap_err();
    assert_eq!(
        e,
        ResolveError::ScaleCount { format: Format::Int3G64, o: 3, i: 6, expected: 12, got: 0 }
    );
    // mxfp4 with I a multiple of 128 reads as int4-grouped gs 128 without its stamp.
    let r = own(Format::Mxfp4, 4096, 4096, false).unwrap();
    assert_eq!(r, Resolved { format: Format::Int4Grouped, group_size: Some(128) });
    // ...and with I = 96 its 3·O scale bytes fit no f32 count.
    let e = own(Format::Mxfp4, 10, 96, false).unwrap_err();
    assert_eq!(
        e,
        ResolveError::ScaleCount { format: Format::Int4Row, o: 10, i: 96, expected: 40, got: 30 }
    );
}

// ---- group-size detection ----

#[test]
fn group_sizes_typical() {
    for gs in [16u32, 32, 48, 64, 96, 128, 192, 256] {
        let (o, i) = (4096, 4096 + 3 * 256); // 4864 = 19·256 = 38·128 = ... divisible by every gs? not needed
        let (nb, ns) = bytes(Format::Int4Grouped, o, i, Some(gs));
        let r = ok(o, i, nb, ns, None);
        assert_eq!(r.format, Format::Int4Grouped);
        let got = r.group_size.unwrap();
        assert!(
            got <= gs && i.div_ceil(u64::from(got)) == i.div_ceil(u64::from(gs)),
            "gs {gs} → {got}"
        );
    }
    // Exact, tie-free cases.
    assert_eq!(ok(8, 4096, 8 * 2048, 4 * 8 * 256, None).group_size, Some(16));
    assert_eq!(ok(8, 4096, 8 * 2048, 4 * 8 * 32, None).group_size, Some(128));
    assert_eq!(ok(8, 4096, 8 * 2048, 4 * 8 * 16, None).group_size, Some(256));
    assert_eq!(ok(8, 4608, 8 * 2304, 4 * 8 * 24, None).group_size, Some(192));
}

#[test]
fn group_size_at_i_128_finest_wins() {
    // gs 64 and gs 96 both give two groups per row; 64 is tried first.
    let (nb, ns) = bytes(Format::Int4Grouped, 16, 128, Some(96));
    assert_eq!(ns, 4 * 16 * 2);
    assert_eq!(
        ok(16, 128, nb, ns, None),
        Resolved { format: Format::Int4Grouped, group_size: Some(64) }
    );
    // Even stamped (stamps name formats, not group sizes).
    assert_eq!(ok(16, 128, nb, ns, Some("int4-grouped")).group_size, Some(64));
}

#[test]
fn group_size_not_below_i_is_per_row() {
    // gs ≥ I: one scale per row, which is int4-row.
    for (i, gs) in [(100u64, 128u32), (128, 128), (16, 16), (256, 256), (5, 16)] {
        let (nb, ns) = bytes(Format::Int4Grouped, 9, i, Some(gs));
        assert_eq!(ns, 36);
        assert_eq!(ok(9, i, nb, ns, None).format, Format::Int4Row, "I {i} gs {gs}");
        // A stamp int4-grouped on per-row bytes disagrees (DECISION: stamp such tensors int4-row).
        let e = err(9, i, nb, ns, Some("int4-grouped"));
        assert!(
            matches!(
                e,
                ResolveError::StampMismatch {
                    stamped: Format::Int4Grouped,
                    inferred: Format::Int4Row,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.class(), "E_STAMP_MISMATCH");
    }
}

#[test]
fn group_detection_stops_at_first_gs_above_i() {
    // I = 40: candidates 16, 32 only (48 > 40). ns for 3 groups/row (gs 16) resolves; ns for
    // "gs 48" would be one group = per row.
    assert_eq!(ok(2, 40, 40, 4 * 2 * 3, None).group_size, Some(16));
    assert_eq!(ok(2, 40, 40, 4 * 2 * 2, None).group_size, Some(32));
}

#[test]
fn unknown_group_size_is_refused_by_the_scale_check() {
    // I = 4096 with gs 100 (not a candidate): 41 groups per row.
    let (o, i) = (8u64, 4096u64);
    let ns = 4 * o * i.div_ceil(100);
    let e = err(o, i, o * i / 2, ns, None);
    assert_eq!(
        e,
        ResolveError::ScaleCount { format: Format::Int4Row, o, i, expected: 32, got: ns }
    );
    assert_eq!(e.class(), "E_SCALE_COUNT");
    assert!(e.to_string().contains("no group size in 16..256 fits"), "{e}");
}

// ---- the int8-row vs fp8 landmine ----

#[test]
fn glm_o_proj_int8_unless_stamped_fp8() {
    let (o, i) = (6144u64, 16384u64);
    let (nb, ns) = (o * i, 4 * o);
    assert_eq!(ns, 4 * 48 * 128, "per-row and per-block scale counts coincide");
    assert_eq!(fmt(o, i, nb, ns, None), Format::Int8Row);
    assert_eq!(fmt(o, i, nb, ns, Some("int8-row")), Format::Int8Row);
    assert_eq!(fmt(o, i, nb, ns, Some("fp8-e4m3-b128")), Format::Fp8E4m3B128);
    // Any other stamp is refused.
    let e = err(o, i, nb, ns, Some("int4-row"));
    assert!(
        matches!(
            e,
            ResolveError::StampMismatch { stamped: Format::Int4Row, inferred: Format::Int8Row, .. }
        ),
        "{e}"
    );
}

#[test]
fn ue8m0_family_refused_unless_stamped_int8_row() {
    for (o, i) in [(1u64, 400u64), (2, 1024), (129, 33000)] {
        let blocks = o.div_ceil(128) * i.div_ceil(128);
        let (nb, ns) = (o * i, 4 * o);
        assert_eq!(ns, blocks, "[{o},{i}]: per-row f32 bytes == one ue8m0 byte per block");
        let e = err(o, i, nb, ns, None);
        assert_eq!(e, ResolveError::Fp8Ue8m0 { o, i, scale_bytes: ns, blocks, stamp: None });
        assert_eq!(e.class(), "E_FP8_UE8M0");
        assert!(e.to_string().starts_with("fp8 with ue8m0 scales is not supported"));
        assert_eq!(fmt(o, i, nb, ns, Some("int8-row")), Format::Int8Row);
        let e = err(o, i, nb, ns, Some("fp8-e4m3-b128"));
        assert_eq!(
            e,
            ResolveError::Fp8Ue8m0 {
                o,
                i,
                scale_bytes: ns,
                blocks,
                stamp: Some(Format::Fp8E4m3B128)
            }
        );
    }
}

#[test]
fn fp8_with_ue8m0_block_scales_refused_even_stamped_int8() {
    // [256, 4096]: 2·32 = 64 blocks, 64 scale bytes ≠ 4·O: no int8-row escape.
    let (o, i) = (256u64, 4096u64);
    for stamp in [None, Some("int8-row"), Some("fp8-e4m3-b128")] {
        let e = err(o, i, o * i, 64, stamp);
        assert_eq!(e.class(), "E_FP8_UE8M0", "{stamp:?}");
    }
}

#[test]
fn int8_sized_with_wrong_scales_is_a_scale_count_refusal() {
    let e = err(10, 10, 100, 44, None);
    assert_eq!(
        e,
        ResolveError::ScaleCount { format: Format::Int8Row, o: 10, i: 10, expected: 40, got: 44 }
    );
}

// ---- the E8 tag and its collisions ----

#[test]
fn i98_e8_collisions() {
    // [1, 98]: int8-row with one row scale == E8 tag (flags f32_blk and i8row).
    let e = err(1, 98, 98, 4, None);
    let flags = E8Flags { f32_blk: true, ue8m0_blk: false, i8row: true, i4row: false };
    assert_eq!(e, ResolveError::E8Ambiguous { o: 1, i: 98, weight_bytes: 98, flags, stamp: None });
    assert_eq!(e.class(), "E_E8_AMBIGUOUS");
    assert_eq!(fmt(1, 98, 98, 4, Some("int8-row")), Format::Int8Row);
    assert_eq!(fmt(1, 98, 98, 4, Some("fp8-e4m3-b128")), Format::Fp8E4m3B128);
    assert_eq!(fmt(1, 98, 98, 4, Some("e8-iq3-lattice")), Format::E8Iq3Lattice);
    assert_eq!(err(1, 98, 98, 4, Some("int4-row")).class(), "E_E8_AMBIGUOUS");
    assert_eq!(err(1, 98, 98, 4, Some("int2-row")).class(), "E_E8_AMBIGUOUS");

    // [100, 98]: fp8 with one f32 block scale (f32_blk only): int8-row stamp is refused.
    let flags = E8Flags { f32_blk: true, ..E8Flags::default() };
    assert_eq!(
        err(100, 98, 9800, 4, None),
        ResolveError::E8Ambiguous { o: 100, i: 98, weight_bytes: 9800, flags, stamp: None }
    );
    assert_eq!(fmt(100, 98, 9800, 4, Some("fp8-e4m3-b128")), Format::Fp8E4m3B128);
    assert_eq!(fmt(100, 98, 9800, 4, Some("e8-iq3-lattice")), Format::E8Iq3Lattice);
    let e = err(100, 98, 9800, 4, Some("int8-row"));
    assert_eq!(
        e,
        ResolveError::E8Ambiguous {
            o: 100,
            i: 98,
            weight_bytes: 9800,
            flags,
            stamp: Some(Format::Int8Row)
        }
    );

    // [400, 98]: fp8 with four ue8m0 block bytes (ue8m0_blk only): only the E8 stamp settles it.
    let flags = E8Flags { ue8m0_blk: true, ..E8Flags::default() };
    assert_eq!(
        err(400, 98, 39200, 4, None),
        ResolveError::E8Ambiguous { o: 400, i: 98, weight_bytes: 39200, flags, stamp: None }
    );
    assert_eq!(fmt(400, 98, 39200, 4, Some("e8-iq3-lattice")), Format::E8Iq3Lattice);
    assert_eq!(err(400, 98, 39200, 4, Some("fp8-e4m3-b128")).class(), "E_E8_AMBIGUOUS");

    // [200, 98]: int8-sized with two blocks: no flag, E8.
    assert_eq!(fmt(200, 98, 19600, 4, None), Format::E8Iq3Lattice);
}

#[test]
fn o1_int4_row_shapes_that_carry_the_e8_tag() {
    for i in [195u64, 196, 391, 392, 587, 588, 783, 784] {
        let (nb, ns) = bytes(Format::Int4Row, 1, i, None);
        assert_eq!((nb, ns), (98 * i.div_ceil(256), 4), "I {i} collides with the tag");
        let flags = E8Flags { i4row: true, ..E8Flags::default() };
        let e = err(1, i, nb, ns, None);
        assert_eq!(e, ResolveError::E8Ambiguous { o: 1, i, weight_bytes: nb, flags, stamp: None });
        assert!(e.to_string().contains("i4row"), "{e}");
        assert_eq!(fmt(1, i, nb, ns, Some("int4-row")), Format::Int4Row);
        assert_eq!(fmt(1, i, nb, ns, Some("e8-iq3-lattice")), Format::E8Iq3Lattice);
        assert_eq!(fmt(1, i, nb, ns, Some("int4-rans256-g0")), Format::Int4Rans256G0);
        assert_eq!(fmt(1, i, nb, ns, Some("int4-rans64-t1")), Format::Int4Rans64T1);
        assert_eq!(err(1, i, nb, ns, Some("int8-row")).class(), "E_E8_AMBIGUOUS");
        assert_eq!(err(1, i, nb, ns, Some("int4-grouped")).class(), "E_E8_AMBIGUOUS");
        // With two rows the scale count is 8 bytes: no collision.
        let (nb2, ns2) = bytes(Format::Int4Row, 2, i, None);
        assert_eq!(fmt(2, i, nb2, ns2, None), Format::Int4Row);
    }
    // And these are the only ones: every other O = 1 int4-row shape up to 4096 resolves.
    for i in 2..=4096u64 {
        if [195, 196, 391, 392, 587, 588, 783, 784].contains(&i) {
            continue;
        }
        let (nb, ns) = bytes(Format::Int4Row, 1, i, None);
        assert_eq!(fmt(1, i, nb, ns, None), Format::Int4Row, "I {i}");
    }
}

#[test]
fn int3_vs_int4_first_match_wins() {
    for o in [1u64, 5, 4096] {
        for i in [47u64, 48] {
            let (nb, ns) = bytes(Format::Int3G64, o, i, None);
            assert_eq!(bytes(Format::Int4Row, o, i, None), (nb, ns), "identical byte counts");
            assert_eq!(fmt(o, i, nb, ns, None), Format::Int4Row, "[{o},{i}] is int4-row, not int3");
            assert_eq!(
                ok(o, i, nb, ns, Some("int3-g64")),
                Resolved { format: Format::Int3G64, group_size: Some(64) }
            );
            assert_eq!(fmt(o, i, nb, ns, Some("int4-row")), Format::Int4Row);
        }
    }
}

// ---- stamps ----

#[test]
fn stamp_gated_int4_rans256_g0() {
    // Dispatched before byte arithmetic: any record length, O f32 scales.
    for nb in [1u64, 37, 4096 * 2048, 0] {
        assert_eq!(
            ok(4096, 4096, nb, 4 * 4096, Some("int4-rans256-g0")),
            Resolved { format: Format::Int4Rans256G0, group_size: None }
        );
    }
    let e = err(4096, 4096, 1000, 4 * 4096 * 32, Some("int4-rans256-g0"));
    assert_eq!(
        e,
        ResolveError::ScaleCount {
            format: Format::Int4Rans256G0,
            o: 4096,
            i: 4096,
            expected: 16384,
            got: 524_288
        }
    );
    // Unstamped, the same bytes are never entropy-coded: int4-row bytes are int4-row...
    assert_eq!(fmt(4096, 4096, 4096 * 2048, 4 * 4096, None), Format::Int4Row);
    // ...and a record-sized blob is refused.
    assert_eq!(err(4096, 4096, 1_234_567, 4 * 4096, None).class(), "E_NO_LAYOUT");
}

#[test]
fn unknown_stamp_is_refused() {
    let e = err(4, 4, 16, 16, Some("int4_row"));
    assert_eq!(e, ResolveError::UnknownStamp { name: ShortName::new("int4_row") });
    assert_eq!(e.class(), "E_STAMP_UNKNOWN");
    assert_eq!(e.to_string(), "stamp names unknown format \"int4_row\", expected a registry name");
    let long = "x".repeat(100) + "é";
    let ResolveError::UnknownStamp { name } = err(4, 4, 16, 16, Some(&long)) else { panic!() };
    assert!(name.is_truncated());
    assert_eq!(name.as_str(), &long[..32]);
    // Truncation respects char boundaries.
    let s = "a".repeat(31) + "éé";
    let n = ShortName::new(&s);
    assert_eq!(n.as_str(), "a".repeat(31));
}

#[test]
fn stamp_disagreeing_with_the_bytes_is_refused() {
    // int4-row bytes stamped int2-row.
    let e = err(8, 64, 256, 32, Some("int2-row"));
    assert_eq!(
        e,
        ResolveError::StampMismatch {
            stamped: Format::Int2Row,
            inferred: Format::Int4Row,
            o: 8,
            i: 64,
            weight_bytes: 256,
            scale_bytes: 32,
            expected_weight: Some(128),
            expected_scale: Some(32),
        }
    );
    assert!(
        e.to_string().contains("stamp says int2-row (needs 128 weight and 32 scale bytes)"),
        "{e}"
    );
    // int4-grouped bytes stamped int4-row.
    assert_eq!(err(8, 4096, 8 * 2048, 4 * 8 * 64, Some("int4-row")).class(), "E_STAMP_MISMATCH");
    // Stamped f32 with the wrong byte count: the steps' own refusal.
    assert_eq!(err(8, 64, 8 * 64 * 4 + 1, 0, Some("f32")).class(), "E_NO_LAYOUT");
    // Agreement passes.
    assert_eq!(fmt(8, 64, 256, 32, Some("int4-row")), Format::Int4Row);
}

#[test]
fn stamp_settles_hidden_collisions() {
    // [O, 1]: int4-row, int2-row and int8-row share byte counts; unstamped → int8-row.
    assert_eq!(fmt(7, 1, 7, 28, None), Format::Int8Row);
    assert_eq!(fmt(7, 1, 7, 28, Some("int4-row")), Format::Int4Row);
    assert_eq!(fmt(7, 1, 7, 28, Some("int2-row")), Format::Int2Row);
    // [1, 1]: also the fp8 first branch.
    assert_eq!(fmt(1, 1, 1, 4, None), Format::Int8Row);
    assert_eq!(fmt(1, 1, 1, 4, Some("fp8-e4m3-b128")), Format::Fp8E4m3B128);
    assert_eq!(fmt(1, 1, 1, 4, Some("int2-row")), Format::Int2Row);
    // int3-g64 at I = 24 (int8-sized) and 96 (int4-grouped gs 48).
    assert_eq!(fmt(3, 24, 72, 12, None), Format::Int8Row);
    assert_eq!(fmt(3, 24, 72, 12, Some("int3-g64")), Format::Int3G64);
    assert_eq!(
        ok(3, 96, 144, 24, None),
        Resolved { format: Format::Int4Grouped, group_size: Some(48) }
    );
    assert_eq!(fmt(3, 96, 144, 24, Some("int3-g64")), Format::Int3G64);
}

// ---- refusals of degenerate input ----

#[test]
fn zero_dimensions_are_refused() {
    assert_eq!(err(0, 5, 0, 4, None), ResolveError::EmptyShape { o: 0, i: 5 });
    assert_eq!(err(5, 0, 0, 0, Some("int4-row")), ResolveError::EmptyShape { o: 5, i: 0 });
    assert_eq!(err(0, 0, 0, 0, None).class(), "E_SHAPE_EMPTY");
}

#[test]
fn no_layout_carries_the_candidates() {
    let e = err(10, 100, 777, 40, None);
    assert_eq!(
        e,
        ResolveError::NoLayout {
            o: 10,
            i: 100,
            weight_bytes: 777,
            int8: 1000,
            int4: 500,
            int2: 250,
            int3: 480
        }
    );
    assert_eq!(
        e.to_string(),
        "no known layout for [10, 100] has 777 weight bytes (int8-row 1000, int4-row 500, int2-row 250, int3-g64 480)"
    );
}

#[test]
fn no_layout_names_overflowing_formulas() {
    // O·I and O·2 overflow u64 (saturated); O·1 is exactly u64::MAX: both read "or more".
    let e = err(u64::MAX, 3, 136, 4, None);
    assert_eq!(e.class(), "E_NO_LAYOUT");
    assert_eq!(
        e.to_string(),
        "no known layout for [18446744073709551615, 3] has 136 weight bytes (int8-row 2^64 - 1 \
         or more, int4-row 2^64 - 1 or more, int2-row 2^64 - 1 or more, int3-g64 2^64 - 1 or more)"
    );
}

#[test]
fn stamp_gated_int4_rans64_t1() {
    // Dispatched before byte arithmetic like int4-rans256-g0: any blob length, O f32 scales.
    for nb in [1u64, 37, 4096 * 2048, 0] {
        assert_eq!(
            ok(4096, 4096, nb, 4 * 4096, Some("int4-rans64-t1")),
            Resolved { format: Format::Int4Rans64T1, group_size: None }
        );
    }
    // Bytes that are exactly int4-row's resolve to the stamp, never to int4-row.
    let (nb, ns) = bytes(Format::Int4Row, 8, 100, None);
    assert_eq!(fmt(8, 100, nb, ns, Some("int4-rans64-t1")), Format::Int4Rans64T1);
    assert_eq!(fmt(8, 100, nb, ns, None), Format::Int4Row);
    let e = err(4096, 4096, 1000, 4 * 4096 * 32, Some("int4-rans64-t1"));
    assert_eq!(
        e,
        ResolveError::ScaleCount {
            format: Format::Int4Rans64T1,
            o: 4096,
            i: 4096,
            expected: 16384,
            got: 524_288
        }
    );
    assert_eq!(e.class(), "E_SCALE_COUNT");
}

#[test]
fn huge_shapes_never_panic() {
    let m = u64::MAX;
    for (o, i) in [(m, m), (m, 1), (1, m), (m / 2, 3), (1 << 32, 1 << 32)] {
        for (nb, ns) in [(0, 0), (m, m), (4, 4), (m, 4), (1, m)] {
            for stamp in [
                None,
                Some("int4-row"),
                Some("int4-grouped"),
                Some("fp8-e4m3-b128"),
                Some("int4-rans256-g0"),
                Some("int4-rans64-t1"),
                Some("f32"),
            ] {
                let _ = resolve(o, i, nb, ns, stamp);
            }
        }
    }
    // An overflowing formula never equals a real count: refused, not wrapped.
    assert_eq!(err(m, m, 0, 0, None).class(), "E_NO_LAYOUT");
    assert_eq!(err(m, 2, m, 4, Some("int4-rans256-g0")).class(), "E_SCALE_COUNT");
    assert_eq!(err(m, 2, m, 4, Some("int4-rans64-t1")).class(), "E_SCALE_COUNT");
}

#[test]
fn display_of_resolved() {
    assert_eq!(ok(8, 4096, 8 * 2048, 4 * 8 * 32, None).to_string(), "int4-grouped gs=128");
    assert_eq!(ok(8, 4096, 8 * 2048, 32, None).to_string(), "int4-row");
    assert_eq!(ok(8, 4096, 8 * 64 * 24, 4 * 8 * 64, None).to_string(), "int3-g64");
}

#[test]
fn group_hint_only_when_groups_were_tried() {
    // Fewer scale bytes than one per row: no group detection ran, so no hint.
    let e = err(8, 64, 256, 16, None);
    assert_eq!(
        e,
        ResolveError::ScaleCount { format: Format::Int4Row, o: 8, i: 64, expected: 32, got: 16 }
    );
    assert_eq!(e.to_string(), "int4-row [8, 64] needs 32 scale bytes, got 16");
}
