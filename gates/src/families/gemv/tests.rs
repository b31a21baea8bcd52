use super::peers::encode_e4m3;
use super::*;

#[test]
fn sheets_and_custom_shapes_parse() {
    assert_eq!(parse_shapes("27b").unwrap().len(), 6);
    assert_eq!(parse_shapes("1p7b").unwrap().len(), 5);
    assert_eq!(parse_shapes("160x129").unwrap()[0].out_f, 129);
    assert!(parse_shapes("100x5")
        .unwrap_err()
        .contains("multiple of 32"));
    assert!(parse_shapes("5120").is_err());
}

/// `--shapes` takes what every format's launcher takes at every m, and refuses the rest naming
/// the size: no bound on in_f x out_f, in_f within each kernel's 32-bit values.
#[test]
fn custom_shapes_are_the_launchers_limits() {
    assert_eq!(parse_shapes("65536x65536").unwrap()[0].in_f, 65536);
    assert_eq!(
        parse_shapes("32x2147483647").unwrap()[0].out_f,
        i32::MAX as usize
    );
    parse_shapes("1073741792x1").unwrap();
    let why = parse_shapes("1073741824x1").unwrap_err();
    assert!(
        why.starts_with("in_f: 2 x in_f = 2147483648 exceeds i32::MAX"),
        "{why}"
    );
    assert!(parse_shapes("32x2147483648")
        .unwrap_err()
        .starts_with("out_f:"));
    assert!(parse_shapes("2147483648x1")
        .unwrap_err()
        .starts_with("in_f:"));
    let huge = format!("32x{}", usize::MAX);
    assert!(parse_shapes(&huge).unwrap_err().starts_with("out_f:"));
}

#[test]
fn e4m3_encoding_is_the_nearest_code() {
    for code in 0u8..0x7F {
        let v = f16::from_bits(E4M3_F16[code as usize].0).to_f32();
        assert_eq!(encode_e4m3(v), code, "{v}");
        assert_eq!(encode_e4m3(-v), code | 0x80, "{v}");
    }
    assert_eq!(encode_e4m3(1e9), 0x7E);
    assert_eq!(encode_e4m3(0.0), 0);
}

#[test]
fn batches_take_each_kernel_m_once_and_sort_them() {
    assert_eq!(parse_batches("1,2,4,8"), Ok(vec![1, 2, 4, 8]));
    assert_eq!(parse_batches(" 8, 1 "), Ok(vec![1, 8]));
    assert_eq!(parse_batches("1-8"), Ok((1..=8).collect()));
    assert_eq!(parse_batches("7, 1-3 ,5-5"), Ok(vec![1, 2, 3, 5, 7]));
    for (list, why) in [
        ("", "no m given"),
        (",", "no m given"),
        ("2,4,2", "2 is given twice"),
        ("1-4,3", "3 is given twice"),
        ("0", "`0` is not an m"),
        ("9", "`9` is not an m"),
        ("16", "`16` is not an m"),
        ("-1", "`-1` is not an m"),
        ("x", "`x` is not an m"),
        ("4-2", "`4-2` is an empty range"),
        ("1-9", "`1-9` is not an m"),
        ("-1-3", "`-1-3` is not an m"),
        ("2-", "`2-` is not an m"),
        ("1--2", "`1--2` is not an m"),
    ] {
        let err = parse_batches(list).unwrap_err();
        assert!(
            err.starts_with("--batches: ") && err.contains(why),
            "{list}: {err}"
        );
    }
}

#[test]
fn each_peer_arm_has_rows_of_its_own_in_the_peer_reference() {
    // bf16 at m reads the first m activation rows; each FP8 m its own block after them.
    assert_eq!(peer_rows(Arm::Bf16(8)), 0..8);
    assert_eq!(peer_rows(Arm::Bf16(2)), 0..2);
    let fp8: Vec<_> = BATCHES.map(|m| peer_rows(Arm::Fp8(m))).to_vec();
    let firsts = [8, 9, 11, 14, 18, 23, 29, 36];
    let want: Vec<_> = firsts.iter().zip(1..).map(|(&f, m)| f..f + m).collect();
    assert_eq!(fp8, want);
    assert_eq!(PEER_ROWS, 8 + 36);
}

#[test]
fn the_fp8_activation_scales_its_own_rows_and_pads_with_zeros() {
    let in_f = 32;
    let x: Vec<Vec<f64>> = (0..M_MAX).map(|i| vec![(i + 1) as f64; in_f]).collect();
    let a = peers::fp8_activation(&x, 2, in_f);
    assert_eq!(a.scale, (2.0 / 448.0) as f32);
    assert_eq!(a.x.len(), FP8_COLUMNS * in_f);
    assert!(a.x[..2 * in_f].iter().all(|&q| q != 0));
    assert!(a.x[2 * in_f..].iter().all(|&q| q == 0));
    // Row 1 (the largest) maps to 448, e4m3's largest finite code.
    assert_eq!(a.x[in_f], 0x7E);
}

#[test]
fn the_peer_reference_puts_each_m_where_its_oracle_reads_it() {
    let shape = Shape {
        name: "",
        in_f: 64,
        out_f: 3,
    };
    let inputs = inputs::make(shape, ValueClass::Uniform, 7);
    let p = peer_inputs(&inputs, shape);
    let (y, _) = peer_reference(&p, &inputs, shape);
    for (k, m) in BATCHES.into_iter().enumerate() {
        let rows = peer_rows(Arm::Fp8(m));
        let a = &p.fp8[k];
        for (j, i) in rows.enumerate() {
            for r in 0..shape.out_f {
                let w = launch::e4m3_row_f64(&inputs.e4m3[r * 64..(r + 1) * 64], E4M3_SCALE);
                let x = a.x[j * 64..(j + 1) * 64]
                    .iter()
                    .map(|&b| launch::e4m3_f64(b) * f64::from(a.scale));
                let want: f64 = w.iter().zip(x).map(|(w, x)| w * x).sum();
                assert_eq!(y[i * shape.out_f + r], want, "m={m} row {j} out {r}");
            }
        }
    }
}

#[test]
fn arms_carry_their_m_into_jsonl() {
    for arm in [
        Arm::Gemv(Format::E4m3, 4),
        Arm::ByRows(Format::Q8_0, 4),
        Arm::Bf16(4),
        Arm::Fp8(4),
    ] {
        assert_eq!(
            arm.fields().get("m"),
            Some(&serde_json::json!(4)),
            "{arm:?}"
        );
    }
}

#[test]
fn verdicts_fail_on_any_miss_and_are_unjudged_on_any_gap() {
    use every_m::verdict;
    assert_eq!(verdict([Some(true), Some(true)]), Some(true));
    assert_eq!(verdict([Some(true), None, Some(false)]), Some(false));
    assert_eq!(verdict([Some(true), None]), None);
    assert_eq!(verdict([]), None);
}

/// A uniform case whose arms take `us(arm)` per call on their side (the .cu 5% slower).
fn case(name: &'static str, in_f: usize, us: impl Fn(Arm) -> f64) -> CaseTiming<Gemv> {
    use crate::harness::{ArmSpec, Stats, TimedArm};
    let stats = |v: f64| Stats::of(&[v]);
    let mut arms = Vec::new();
    for m in BATCHES {
        for f in FORMATS {
            let t = us(Arm::Gemv(f, m));
            arms.push((
                Arm::Gemv(f, m),
                vec![(Side::Rust, stats(t)), (Side::Cu, stats(1.05 * t))],
            ));
        }
        for arm in [Arm::Bf16(m), Arm::Fp8(m)] {
            arms.push((arm, vec![(Side::Peer, stats(us(arm)))]));
        }
    }
    CaseTiming {
        shape: Shape {
            name,
            in_f,
            out_f: 1024,
        },
        class: ValueClass::Uniform,
        copies: 2,
        calls: 200,
        arms: arms
            .into_iter()
            .map(|(arm, stats)| TimedArm {
                spec: ArmSpec {
                    arm,
                    runs: Runs::Builds,
                    timed: true,
                    bytes: 1_000_000,
                },
                stats,
            })
            .collect(),
        stream: None,
    }
}

#[test]
fn batch_targets_report_each_miss_with_its_numbers() {
    // Every format keeps 95% of its m = 1 GB/s at m = 8 but e4m3 at the largest shape (85%);
    // the FP8 peer beats the formats at the smallest shape at m = 8 only.
    let us = |big: bool, small: bool| {
        move |arm: Arm| match arm {
            Arm::Gemv(Format::E4m3, 8) if big => 10.0 / 0.85,
            Arm::Gemv(_, 8) => 10.0 / 0.95,
            Arm::Gemv(..) => 10.0,
            Arm::Fp8(8) if small => 5.0,
            _ => 20.0,
        }
    };
    let timings = [
        case("a", 8192, us(true, false)),
        case("b", 4096, us(false, false)),
        case("c", 2048, us(false, false)),
        case("d", 1024, us(false, false)),
        case("e", 512, us(false, true)),
    ];
    let uniform: Vec<&CaseTiming<Gemv>> = timings.iter().collect();
    let rows = every_m::targets(&uniform, &BATCHES);
    let find = |needle: &str| {
        rows.iter()
            .find(|r| r.target.contains(needle))
            .unwrap_or_else(|| panic!("no target `{needle}`"))
    };
    let e4m3 = find("e4m3: GB/s at m=8");
    assert_eq!(e4m3.met, Some(false));
    assert!(e4m3.measured.contains("85.0%") && e4m3.measured.contains("a 8192->1024"));
    // The fifth shape is not among the largest four, so its slow arm would not count.
    assert!(!find("q8_0: GB/s").target.contains("e 512"));
    assert_eq!(find("q8_0: GB/s").met, Some(true));
    assert_eq!(find("than cublas bf16").met, Some(true));
    let fp8 = find("than cublaslt e4m3");
    assert_eq!(fp8.met, Some(false));
    assert!(fp8.measured.starts_with("39 of 40"), "{}", fp8.measured);
    assert!(fp8.measured.contains("e 512->1024 m=8"), "{}", fp8.measured);
    for m in BATCHES {
        let g = find(&format!("geomean <= 1.00 at m={m} "));
        assert_eq!(g.met, Some(true));
        assert!(
            g.measured.starts_with("0.952 over 20 arms"),
            "{}",
            g.measured
        );
    }
    // Without m = 8 timed, the m = 8 target is not judged.
    let rows = every_m::targets(&uniform, &[1, 2]);
    let e4m3 = rows.iter().find(|r| r.target.starts_with("e4m3:")).unwrap();
    assert_eq!(e4m3.met, None);
}

#[test]
fn the_every_m_table_shows_each_arm_against_its_own_m_1() {
    let us = |arm| match arm {
        Arm::Gemv(_, m) => 10.0 + m as f64 * 0.1,
        _ => 20.0,
    };
    let render = |batches: &str| {
        // The arms of the m timed only, as a run with these batches has.
        let mut timings = [case("a", 8192, us)];
        let timed = parse_batches(batches).unwrap();
        timings[0].arms.retain(|a| timed.contains(&a.spec.arm.m()));
        let gemv = Gemv::new(&Args {
            no_peers: false,
            batches: batches.into(),
        })
        .unwrap();
        let mut jsonl = crate::harness::record::Jsonl::open(None, "gemv-e4m3").unwrap();
        let mut report = Report::new(&mut jsonl, 4500.0);
        gemv.summarize(&timings, &mut report);
        report.render()
    };
    let text = render("1,2,4,8");
    assert!(text.contains("the seed's table"), "{text}");
    // 1 MB a call: 10.1 us at m = 1 is 99 GB/s, 10.8 us at m = 8 is 93 GB/s, 94% of it.
    let row = |text: &str, arm: &str| {
        text.lines()
            .find(|l| l.starts_with("a 8192->1024") && l.contains(&format!("  {arm}  ")))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no `{arm}` row in:\n{text}"))
    };
    let e4m3 = row(&text, "e4m3");
    assert!(
        e4m3.contains("10.10 99 100%") && e4m3.ends_with("10.80 93 94%"),
        "{e4m3}"
    );
    assert!(row(&text, "cublas bf16").ends_with("20.00 50 100%"));
    // Without m = 1 timed: no m = 1 tables, and no share of an m = 1 that was not timed.
    let text = render("2,4");
    assert!(!text.contains("the seed's table"), "{text}");
    assert!(row(&text, "e4m3").ends_with("10.20 98  10.40 96"), "{text}");
}
