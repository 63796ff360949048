//! The architecture the folders show (docs/ARCHITECTURE.md) is kept by this test:
//! - the folders of `core/src` import one another only downward: no cycle among the
//!   `use crate::…` edges between them;
//! - no cycle among the modules of `host/src` either;
//! - no file of the shard (`host/src/shard/`) is over 500 lines.
//!
//! Edges are read from the sources (`crate::name` paths, also inside `use crate::{…}`
//! groups); code after a file's `#[cfg(test)]` is left out, since tests may reach up.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The checkout under test (`manifest_dir` says why not `env!` alone).
fn repo() -> PathBuf {
    common::manifest_dir().parent().unwrap().to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source without comments and without what follows the first `#[cfg(test)]`.
fn code_of(src: &str) -> String {
    let body = src.split("#[cfg(test)]").next().unwrap_or("");
    body.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Names of the crate's top-level modules that `code` refers to.
fn crate_refs(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + 7..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a::X, b, c::{…}}`: every top-level name in the group.
            let mut depth = 1;
            let mut name = String::new();
            let mut at_name = true;
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                if depth == 1 && (ch == ',' || ch.is_whitespace()) {
                    if !name.is_empty() {
                        out.insert(std::mem::take(&mut name));
                    }
                    at_name = ch == ',' || at_name;
                    continue;
                }
                if depth == 1 && at_name && (ch.is_alphanumeric() || ch == '_') {
                    name.push(ch);
                } else if !name.is_empty() {
                    out.insert(std::mem::take(&mut name));
                    at_name = false;
                } else if depth == 1 && ch == ':' {
                    at_name = false;
                }
            }
            if !name.is_empty() {
                out.insert(name);
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.insert(name);
        }
    }
    out.retain(|m| modules.contains(m));
    out
}

/// Edges between the top-level modules of a crate's `src` (a folder or a file each).
fn module_edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let module_of = |p: &Path| -> Option<String> {
        let rel = p.strip_prefix(src).unwrap();
        let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
        let name = first.trim_end_matches(".rs").to_string();
        (name != "lib" && name != "main").then_some(name)
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|p| module_of(p)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for f in &files {
        let Some(m) = module_of(f) else { continue };
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        for to in crate_refs(&code, &modules) {
            if to != m {
                edges.get_mut(&m).unwrap().insert(to);
            }
        }
    }
    edges
}

/// A cycle in the graph, if there is one (as the list of its modules).
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(n: &str, edges: &BTreeMap<String, BTreeSet<String>>, mark: &mut BTreeMap<String, Mark>, path: &mut Vec<String>) -> Option<Vec<String>> {
        mark.insert(n.to_string(), Mark::Open);
        path.push(n.to_string());
        for to in edges.get(n).into_iter().flatten() {
            match mark.get(to.as_str()).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let from = path.iter().position(|p| p == to).unwrap();
                    let mut c = path[from..].to_vec();
                    c.push(to.clone());
                    return Some(c);
                }
                Mark::New => {
                    if let Some(c) = visit(to, edges, mark, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        mark.insert(n.to_string(), Mark::Done);
        None
    }
    let mut mark = BTreeMap::new();
    for n in edges.keys() {
        if mark.get(n.as_str()).copied().unwrap_or(Mark::New) == Mark::New
            && let Some(c) = visit(n, edges, &mut mark, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

fn show(edges: &BTreeMap<String, BTreeSet<String>>) -> String {
    edges.iter().map(|(m, to)| format!("  {m} -> {}", to.iter().cloned().collect::<Vec<_>>().join(" "))).collect::<Vec<_>>().join("\n")
}

#[test]
fn core_folders_import_only_downward() {
    let edges = module_edges(&repo().join("core/src"));
    if let Some(c) = find_cycle(&edges) {
        panic!("import cycle between the folders of core/src: {}\nall edges:\n{}", c.join(" -> "), show(&edges));
    }
}

#[test]
fn host_modules_have_no_import_cycle() {
    let edges = module_edges(&repo().join("host/src"));
    if let Some(c) = find_cycle(&edges) {
        panic!("import cycle between the modules of host/src: {}\nall edges:\n{}", c.join(" -> "), show(&edges));
    }
}

#[test]
fn shard_files_stay_small() {
    let mut files = Vec::new();
    rust_files(&repo().join("host/src/shard"), &mut files);
    assert!(!files.is_empty(), "host/src/shard/ holds the shard's parts");
    for f in files {
        let lines = std::fs::read_to_string(&f).unwrap().lines().count();
        assert!(lines <= 500, "{} has {lines} lines (at most 500: split it by concern)", f.display());
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let g = |pairs: &[(&str, &str)]| {
        let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            e.entry(a.to_string()).or_default().insert(b.to_string());
            e.entry(b.to_string()).or_default();
        }
        e
    };
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    let modules: BTreeSet<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
    let refs = crate_refs("use crate::{a::X, b, c::{Y, Z}};\nlet v = crate::d::f();", &modules);
    assert_eq!(refs.into_iter().collect::<Vec<_>>(), vec!["a", "b", "c", "d"]);
}
