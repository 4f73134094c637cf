//! docs/FORMATS.md is the human registry: its table must list exactly the rows of
//! `tetrad_quant::format::REGISTRY` (ordinal, name, weight formula, scale formula, value rule,
//! status), in the same order.

use tetrad_quant::format::REGISTRY;

const DOC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/FORMATS.md"));

fn cell(s: &str) -> String {
    let t = s.trim();
    t.strip_prefix('`').and_then(|t| t.strip_suffix('`')).unwrap_or(t).to_string()
}

/// The rows of the table whose header starts `| ord | name |`.
fn doc_rows() -> Vec<Vec<String>> {
    let mut lines = DOC.lines().skip_while(|l| !l.starts_with("| ord | name |"));
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

#[test]
fn docs_table_matches_the_registry() {
    let rows = doc_rows();
    assert_eq!(rows.len(), REGISTRY.len(), "row count");
    for (row, r) in rows.iter().zip(&REGISTRY) {
        assert_eq!(row.len(), 6, "{row:?}");
        let ord = r.ordinal.map_or_else(|| "—".to_string(), |o| o.to_string());
        let want = vec![
            ord,
            r.name.to_string(),
            r.weight_text.to_string(),
            r.scale_text.to_string(),
            r.value_rule.to_string(),
            r.status.as_str().to_string(),
        ];
        assert_eq!(row, &want, "docs/FORMATS.md row for {}", r.name);
    }
}

#[test]
fn docs_state_the_ordinal_rule() {
    assert!(DOC.contains("The next free public ordinal is **9**"));
    assert!(DOC.contains("Ordinals **≥ 100** are a private block"));
}

#[test]
fn the_parser_notices_a_changed_row() {
    // Guard against a vacuous test: a doctored copy of the table must differ.
    let rows = doc_rows();
    let mut doctored = rows.clone();
    doctored[2][2] = "O·ceil(I/4)".to_string();
    assert_ne!(rows, doctored);
    assert_eq!(rows[2][2], REGISTRY[2].weight_text);
}
