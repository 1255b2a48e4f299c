//! The layering of the library's modules, read from its sources: `entry`
//! (what every entry point shares) uses no other module, the modules use
//! each other without a cycle, and each opens with a `//!` doc that says
//! what it owns. A cycle crept in once (`entry` called into `attributes`
//! and `preload`, which used `entry`); this keeps it from coming back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name -> the modules of the crate it names as `crate::X`.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// `text` without comments and without the contents of string literals
/// (a doc that mentions `crate::x` is not a use of it).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '"' => {
                out.push('"');
                while let Some(c) = chars.next() {
                    if c == '\\' {
                        chars.next();
                    } else if c == '"' {
                        break;
                    }
                }
                out.push('"');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The first path segments after each `crate::` in `code`, including the
/// items of `crate::{a, b::c}`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level items of the group only.
            let (mut depth, mut start) = (0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.insert(ident(&group[start..i]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(ident(&group[start..i]));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found
}

/// The graph of the modules in `src` (one file each, beside `lib.rs`).
fn graph(src: &Path) -> (Graph, BTreeMap<String, String>) {
    let mut sources = BTreeMap::new();
    for file in std::fs::read_dir(src).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if name != "lib" {
                sources.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    let graph = sources
        .iter()
        .map(|(name, text)| {
            let mut uses: BTreeSet<String> = crate_paths(&code_only(text)).intersection(&modules).cloned().collect();
            uses.remove(name);
            (name.clone(), uses)
        })
        .collect();
    (graph, sources)
}

/// A cycle of `graph` (its modules in order), if there is one.
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        m: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(m) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = path.iter().position(|p| p == m).unwrap();
                let mut cycle = path[from..].to_vec();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(m.to_string(), Mark::Open);
        path.push(m.to_string());
        for next in &graph[m] {
            if let Some(cycle) = visit(next, graph, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(m.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph.keys().find_map(|m| visit(m, graph, &mut marks, &mut Vec::new()))
}

fn describe(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(m, uses)| format!("  {m} -> {}\n", uses.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect()
}

#[test]
fn entry_is_a_leaf_and_the_modules_have_no_cycle() {
    let (graph, _) = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph.len() > 5 && graph.contains_key("entry"), "module files not found:\n{}", describe(&graph));
    assert!(graph["entry"].is_empty(), "entry uses other modules of the crate:\n{}", describe(&graph));
    if let Some(cycle) = cycle(&graph) {
        panic!("module cycle {}:\n{}", cycle.join(" -> "), describe(&graph));
    }
}

#[test]
fn every_module_says_what_it_owns() {
    let (_, sources) = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    for (name, text) in &sources {
        assert!(text.starts_with("//! "), "{name}.rs does not open with a //! doc");
    }
}

#[test]
fn the_reader_finds_uses_and_cycles() {
    let code =
        code_only("use crate::a::x; // crate::b\nuse crate::{c, d::{e, f}};\nlet s = \"crate::g\"; crate::h::y();");
    assert_eq!(crate_paths(&code), ["a", "c", "d", "h"].map(String::from).into());
    let g = |edges: &[(&str, &str)]| {
        let mut g = Graph::new();
        for (from, to) in edges {
            g.entry(from.to_string()).or_default().insert(to.to_string());
            g.entry(to.to_string()).or_default();
        }
        g
    };
    assert_eq!(cycle(&g(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    assert_eq!(cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])).map(|c| c.len()), Some(4));
}
