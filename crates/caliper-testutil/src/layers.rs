//! The layering of a crate's modules, read from its sources: which
//! modules each one names (`crate::x`), and whether they form a cycle.
//! The crates' `module_layers` tests check their layers with it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name -> the modules of the crate it names as `crate::X`.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// `text` without comments and without the contents of string literals
/// (a doc that mentions `crate::x` is not a use of it).
pub fn code_only(text: &str) -> String {
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
pub fn crate_paths(code: &str) -> BTreeSet<String> {
    items_after(code, "crate::").iter().map(|item| ident(item)).collect()
}

/// The identifier at the start of `s`, blanks before it skipped.
fn ident(s: &str) -> String {
    s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The paths after each `prefix` (`crate::`, `super::`) in `code`, from
/// their first segment to the end of the code (`crate::{a, b::c}` gives
/// `a...` and `b::c...`).
fn items_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level items of the group only.
            let (mut depth, mut start) = (0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.push(group[start..i].trim_start());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(group[start..i].trim_start());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.push(rest);
        }
    }
    found
}

/// The modules among `nodes` that `code` names: a path's first segment,
/// or its first two (`x::y`) where `nodes` has that submodule on its own.
fn uses_among(code: &str, nodes: &BTreeSet<String>) -> BTreeSet<String> {
    let mut uses = BTreeSet::new();
    for item in items_after(code, "crate::") {
        let first = ident(item);
        let sub = item[first.len()..].strip_prefix("::").map(|rest| format!("{first}::{}", ident(rest)));
        match sub {
            Some(sub) if nodes.contains(&sub) => uses.insert(sub),
            _ if nodes.contains(&first) => uses.insert(first),
            _ => false,
        };
    }
    uses
}

/// The graph of the top-level modules of the crate in `src`: a module is a
/// file `x.rs` beside `lib.rs` together with its submodules (`x/*.rs`,
/// or `x/mod.rs`), and its uses are those of all its files, their test
/// modules (`#[cfg(test)]` to the end of the file) left out. Also gives
/// each module's first file's text.
pub fn graph(src: &Path) -> (Graph, BTreeMap<String, String>) {
    graph_split(src, &[])
}

/// [`graph`], with the submodules of the modules in `split` as modules of
/// their own: `x/y.rs` (and `x/y/*.rs`) is module `x::y`, which code names
/// as `crate::x::y`; `x/mod.rs` alone is module `x`. For a module whose
/// parts sit in different layers (some below the runtime, some using it).
pub fn graph_split(src: &Path, split: &[&str]) -> (Graph, BTreeMap<String, String>) {
    let mut sources: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in std::fs::read_dir(src).unwrap() {
        let path = file.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.extension().is_some_and(|e| e == "rs") && name != "lib" {
            sources.entry(name).or_default().insert(0, std::fs::read_to_string(&path).unwrap());
        } else if path.is_dir() {
            for file in rust_files(&path) {
                let text = std::fs::read_to_string(&file).unwrap();
                let part = file.strip_prefix(&path).unwrap().components().next().unwrap();
                let part = Path::new(part.as_os_str()).file_stem().unwrap().to_string_lossy().into_owned();
                let node = if split.contains(&name.as_str()) && part != "mod" {
                    format!("{name}::{part}")
                } else {
                    name.clone()
                };
                let texts = sources.entry(node).or_default();
                if file.file_name().is_some_and(|f| f == "mod.rs") {
                    texts.insert(0, text);
                } else {
                    texts.push(text);
                }
            }
        }
    }
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    let graph = sources
        .iter()
        .map(|(name, texts)| {
            let mut uses = BTreeSet::new();
            for text in texts {
                let code = code_only(text.split("#[cfg(test)]").next().unwrap_or_default());
                uses.extend(uses_among(&code, &modules));
            }
            uses.remove(name);
            (name.clone(), uses)
        })
        .collect();
    let first = sources.into_iter().map(|(name, mut texts)| (name, texts.swap_remove(0))).collect();
    (graph, first)
}

/// The graph of the submodules of the module in directory `dir` (its
/// `x.rs` files beside `mod.rs`): which of them each one names as
/// `super::x`, its test module left out.
pub fn submodule_graph(dir: &Path) -> Graph {
    let texts: BTreeMap<String, String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs") && !path.ends_with("mod.rs"))
        .map(|path| (path.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&path).unwrap()))
        .collect();
    texts
        .iter()
        .map(|(name, text)| {
            let code = code_only(text.split("#[cfg(test)]").next().unwrap_or_default());
            let uses = items_after(&code, "super::")
                .iter()
                .map(|item| ident(item))
                .filter(|used| used != name && texts.contains_key(used))
                .collect();
            (name.clone(), uses)
        })
        .collect()
}

/// The `.rs` files under `dir`, at any depth.
fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// A cycle of `graph` (its modules in order), if there is one.
pub fn cycle(graph: &Graph) -> Option<Vec<String>> {
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

/// The graph as one `module -> uses` line per module.
pub fn describe(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(m, uses)| format!("  {m} -> {}\n", uses.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect()
}

/// Panics, naming the cycle and showing the graph, if `graph` has one.
pub fn assert_acyclic(graph: &Graph) {
    if let Some(cycle) = cycle(graph) {
        panic!("module cycle {}:\n{}", cycle.join(" -> "), describe(graph));
    }
}

/// The modules of the crate in `src` whose first file does not open with
/// a `//!` doc saying what the module owns.
pub fn undocumented(src: &Path) -> Vec<String> {
    undocumented_split(src, &[])
}

/// [`undocumented`], with the submodules of the modules in `split` as
/// modules of their own (see [`graph_split`]).
pub fn undocumented_split(src: &Path, split: &[&str]) -> Vec<String> {
    let (_, sources) = graph_split(src, split);
    sources.into_iter().filter(|(_, text)| !text.starts_with("//! ")).map(|(name, _)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_finds_uses_and_cycles() {
        let code =
            code_only("use crate::a::x; // crate::b\nuse crate::{c, d::{e, f}};\nlet s = \"crate::g\"; crate::h::y();");
        assert_eq!(crate_paths(&code), ["a", "c", "d", "h"].map(String::from).into());
        let nodes = ["a", "d", "d::e", "h"].map(String::from).into();
        let code = code_only("use crate::a::x; use crate::d::e::E; use crate::d::{self, f}; crate::{h::y, d::e}();");
        assert_eq!(uses_among(&code, &nodes), ["a", "d", "d::e", "h"].map(String::from).into());
        let code = code_only("use crate::d::e::E; use crate::b;");
        assert_eq!(uses_among(&code, &nodes), ["d::e"].map(String::from).into());
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
}
