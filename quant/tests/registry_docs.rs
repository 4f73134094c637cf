//! docs/FORMATS.md is the human registry: its table must list exactly the rows of
//! `tetrad_quant::format::REGISTRY` (ordinal, name, weight formula, scale formula, value rule,
//! status), in the same order.

use tetrad_quant::format::REGISTRY;

const DOC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/FORMATS.md"));

fn cell(s: &str) -> String {
    let t = s.trim();
    t.strip_prefix('`').and_then(|t| t.strip_suffix('`')).unwrap_or(t).to_string()
}

/// The rows of the table whose header starts `| ord | name |` in `doc`.
fn doc_rows(doc: &str) -> Vec<Vec<String>> {
    let mut lines = doc.lines().skip_while(|l| !l.starts_with("| ord | name |"));
    let header = lines.next().expect("registry table header in docs/FORMATS.md");
    assert_eq!(header.matches('|').count(), 7, "six columns");
    let sep = lines.next().expect("separator");
    assert!(sep.starts_with("|---"));
    lines
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let inner = l.trim().strip_prefix('|').and_then(|l| l.strip_suffix('|')).expect("row");
            inner.split('|').map(cell).collect()
        })
        .collect()
}

/// Where the table in `doc` differs from the registry: one line per difference, empty when
/// they agree.
fn differences(doc: &str) -> Vec<String> {
    let rows = doc_rows(doc);
    let mut out = Vec::new();
    if rows.len() != REGISTRY.len() {
        out.push(format!("{} rows, the registry has {}", rows.len(), REGISTRY.len()));
    }
    for (row, r) in rows.iter().zip(&REGISTRY) {
        let ord = r.ordinal.map_or_else(|| "—".to_string(), |o| o.to_string());
        let want = vec![
            ord,
            r.name.to_string(),
            r.weight_text.to_string(),
            r.scale_text.to_string(),
            r.value_rule.to_string(),
            r.status.as_str().to_string(),
        ];
        if row != &want {
            out.push(format!("row for {}: {row:?}, want {want:?}", r.name));
        }
    }
    out
}

#[test]
fn docs_table_matches_the_registry() {
    let diff = differences(DOC);
    assert!(diff.is_empty(), "docs/FORMATS.md against the registry:\n{}", diff.join("\n"));
}

/// The check is not vacuous: a document whose table differs from the registry in one cell,
/// by a missing row or by two rows swapped is reported, naming the row.
#[test]
fn the_check_notices_a_changed_table() {
    let lines: Vec<&str> = DOC.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("| ord | name |")).expect("table header");
    let (first, second) = (header + 2, header + 3);
    let name = &REGISTRY[0].name;
    assert!(lines[first].contains(name), "the first row is {name}: {}", lines[first]);
    let rebuild = |edit: &dyn Fn(&mut Vec<String>)| {
        let mut l: Vec<String> = lines.iter().map(|l| (*l).to_string()).collect();
        edit(&mut l);
        l.join("\n")
    };

    let weight = &REGISTRY[0].weight_text;
    let changed = rebuild(&|l| l[first] = l[first].replacen(weight, "O·I·7", 1));
    let diff = differences(&changed);
    assert_eq!(diff.len(), 1, "{diff:?}");
    assert!(diff[0].contains(name) && diff[0].contains("O·I·7"), "{diff:?}");

    let dropped = rebuild(&|l| {
        l.remove(second);
    });
    assert!(differences(&dropped).iter().any(|d| d.contains("rows, the registry has")));

    let swapped = rebuild(&|l| l.swap(first, second));
    assert!(differences(&swapped).len() >= 2, "{:?}", differences(&swapped));
}

#[test]
fn docs_state_the_ordinal_rule() {
    assert!(DOC.contains("The next free public ordinal is **9**"));
    assert!(DOC.contains("Ordinals **≥ 100** are a private block"));
}
