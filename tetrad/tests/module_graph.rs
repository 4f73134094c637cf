//! The modules of `tetrad/src` import each other without cycles.
//!
//! A node is a top-level module: `src/x.rs` or the folder `src/x/` (its files count as one
//! node). An edge `a → b` is a `crate::b…` path written in a file of `a`, in a `use` group
//! (`use crate::{b, c::d}`) or inline; comments are skipped (intra-doc links compile to
//! nothing). Test modules count: a file is one node whatever `cfg` its items carry.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → the modules its files name.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The text of a Rust file without its `//` comments (string literals that contain `//` are
/// not cut: a comment starts only where no string is open).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = '\0';
        let mut cut = line.len();
        for (k, c) in line.char_indices() {
            if c == '"' && prev != '\\' {
                in_str = !in_str;
            }
            if !in_str && c == '/' && prev == '/' {
                cut = k - 1;
                break;
            }
            prev = if prev == '\\' && c == '\\' { '\0' } else { c };
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

fn leading_ident(s: &str) -> &str {
    let s = s.trim_start();
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The first path segments after every `crate::` in `code` (each item of a `{…}` group).
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut refs = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        // `tetrad_crate::` or `$crate::` are other paths.
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let body = rest.trim_start();
        if let Some(group) = body.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = 0;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        refs.insert(leading_ident(&group[item_start..k]).to_owned());
                        item_start = k + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        } else {
            refs.insert(leading_ident(body).to_owned());
        }
    }
    refs.remove("");
    refs
}

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module graph of a crate's `src` folder. A folder that a top-level file includes with
/// `#[path = "folder/…"]` belongs to that file's node.
fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let first_of = |p: &Path| {
        let rel = p.strip_prefix(src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        first.strip_suffix(".rs").map_or(first.clone(), str::to_owned)
    };
    let mut owner = BTreeMap::new();
    for p in files.iter().filter(|p| p.parent() == Some(src)) {
        let code = std::fs::read_to_string(p).unwrap();
        for decl in code.split("#[path = \"").skip(1) {
            owner.insert(leading_ident(decl).to_owned(), first_of(p));
        }
    }
    let node_of = |p: &Path| {
        let first = first_of(p);
        owner.get(&first).cloned().unwrap_or(first)
    };
    let nodes: BTreeSet<String> = files.iter().map(|p| node_of(p)).collect();
    let mut graph = Graph::new();
    for p in &files {
        let node = node_of(p);
        if node == "lib" || node == "main" {
            continue; // the root declares every module; main uses the crate by name
        }
        let code = strip_comments(&std::fs::read_to_string(p).unwrap());
        let edges = graph.entry(node.clone()).or_default();
        for r in crate_refs(&code) {
            if r != node && nodes.contains(&r) {
                edges.insert(r);
            }
        }
    }
    graph
}

/// A cycle of `graph` as its nodes in order (the first repeated at the end), if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        n: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(n.to_owned(), Mark::Open);
        path.push(n.to_owned());
        for m in graph.get(n).into_iter().flatten() {
            match marks.get(m).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let from = path.iter().position(|p| p == m).unwrap();
                    let mut cycle = path[from..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(c) = visit(m, graph, marks, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(n.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for n in graph.keys() {
        if marks.get(n).copied().unwrap_or(Mark::New) == Mark::New
            && let Some(c) = visit(n, graph, &mut marks, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

#[test]
fn tetrad_src_has_no_module_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    assert!(graph.len() > 10, "the graph was not read: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        let edges: Vec<String> =
            graph.iter().map(|(n, to)| format!("  {n} -> {to:?}")).collect::<Vec<_>>();
        panic!("module cycle: {}\nthe graph:\n{}", cycle.join(" -> "), edges.join("\n"));
    }
}

#[test]
fn reader_sees_groups_inline_paths_and_skips_comments() {
    let code = strip_comments(
        "use crate::{a, b::{c, d}, e::f as g};\n\
         let x = crate::h::k(); // crate::commented\n\
         /// [`crate::doc`]\n\
         let s = \"//\"; let y = crate::after_string::z;\n\
         let m = $crate::macro_path; let t = tetrad_crate::no;\n",
    );
    let refs: Vec<String> = crate_refs(&code).into_iter().collect();
    assert_eq!(refs, ["a", "after_string", "b", "e", "h"]);
}

#[test]
fn cycle_finder_finds_a_cycle_and_accepts_a_dag() {
    let g = |edges: &[(&str, &str)]| {
        let mut g = Graph::new();
        for (a, b) in edges {
            g.entry((*a).to_owned()).or_default().insert((*b).to_owned());
            g.entry((*b).to_owned()).or_default();
        }
        g
    };
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    let c = find_cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])).unwrap();
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4, "{c:?}");
}
