//! `tetrad resolve`: output and exit codes of the real binary.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tetrad"))
        .arg("resolve")
        .args(args)
        .output()
        .expect("run tetrad")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn args(o: u64, i: u64, nb: u64, ns: u64) -> Vec<String> {
    [
        "--o",
        &o.to_string(),
        "--i",
        &i.to_string(),
        "--weight-bytes",
        &nb.to_string(),
        "--scale-bytes",
        &ns.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run_s(a: &[String], extra: &[&str]) -> Output {
    let mut v: Vec<&str> = a.iter().map(String::as_str).collect();
    v.extend_from_slice(extra);
    run(&v)
}

#[test]
fn resolves_and_exits_zero() {
    let o = run_s(&args(6144, 16384, 6144 * 16384, 4 * 6144), &[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "int8-row\n");
    let o = run_s(&args(6144, 16384, 6144 * 16384, 4 * 6144), &["--stamp", "fp8-e4m3-b128"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "fp8-e4m3-b128\n");
    let o = run_s(&args(4096, 4096, 4096 * 2048, 4 * 4096 * 64), &[]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), "int4-grouped gs=64\n".to_string()));
}

#[test]
fn refuses_with_class_and_numbers_and_exits_one() {
    let o = run_s(&args(1, 400, 400, 4), &[]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "REFUSED E_FP8_UE8M0: fp8 with ue8m0 scales is not supported: [1, 400] has 4 scale bytes = 4 128x128 blocks (stamp none)\n"
    );
    let o = run_s(&args(1, 196, 98, 4), &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).starts_with("REFUSED E_E8_AMBIGUOUS: [1, 196] with 98 weight bytes"),
        "{}",
        stdout(&o)
    );
    let o = run_s(&args(1, 196, 98, 4), &["--stamp", "int4-row"]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), "int4-row\n".to_string()));
    let o = run_s(&args(8, 64, 256, 32), &["--stamp", "int4"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "REFUSED E_STAMP_UNKNOWN: stamp names unknown format \"int4\", expected a registry name\n"
    );
    let o = run_s(&args(10, 100, 777, 40), &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("777 weight bytes (int8-row 1000, int4-row 500"), "{}", stdout(&o));
}

#[test]
fn json_output() {
    let o = run_s(&args(4096, 4096, 4096 * 2048, 4 * 4096 * 64), &["--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["resolved"], true);
    assert_eq!(v["format"], "int4-grouped");
    assert_eq!(v["ordinal"], 4);
    assert_eq!(v["group_size"], 64);
    assert_eq!(v["input"]["weight_bytes"], 4096 * 2048);
    assert_eq!(v["input"]["stamp"], serde_json::Value::Null);

    let o = run_s(&args(8, 64, 256, 32), &["--json", "--stamp", "int2-row"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["resolved"], false);
    assert_eq!(v["refused"]["class"], "E_STAMP_MISMATCH");
    assert!(v["refused"]["detail"].as_str().unwrap().contains("stamp says int2-row"));
    assert_eq!(v["input"]["stamp"], "int2-row");

    let o = run_s(&args(4096, 4096, 1234, 4 * 4096), &["--json", "--stamp", "int4-rans256-g0"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["format"], "int4-rans256-g0");
    assert_eq!(v["ordinal"], serde_json::Value::Null);
    assert_eq!(v["status"], "stamp-gated");
}

#[test]
fn usage_errors_exit_two() {
    for bad in [
        vec!["--o", "x", "--i", "1", "--weight-bytes", "1", "--scale-bytes", "1"],
        vec!["--o", "1", "--i", "1", "--weight-bytes", "1"],
        vec!["--o", "-1", "--i", "1", "--weight-bytes", "1", "--scale-bytes", "1"],
        vec!["--o", "1", "--i", "1", "--weight-bytes", "1", "--scale-bytes", "1", "--bogus"],
    ] {
        let o = run(&bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn help_has_an_example() {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = stdout(&o);
    assert!(help.contains("Examples:"), "{help}");
    assert!(help.contains("tetrad resolve --o 6144 --i 16384"), "{help}");
    assert!(help.contains("--weight-bytes <NB>"), "{help}");
}
