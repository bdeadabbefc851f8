//! The CLI's modules import each other without circles (issue 20: "no circles between
//! files"): each top-level module of `crates/cli/src` (a file and its directory) names
//! the modules it uses through `crate::` paths, outside its tests; the crate root
//! (`main.rs`) uses modules by their bare names. A cycle among them fails this test, naming
//! the modules in it and what each imports.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `text` without its `#[cfg(test)]` part (tests sit at the end of a file here).
fn without_tests(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

/// The identifiers that follow `prefix` in `text` (`crate::plan::X` gives `plan`), and
/// those inside `crate::{...}` groups.
fn names_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        let rest = &text[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or("");
            for part in inner.split(',') {
                let word: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.insert(word);
            }
        } else {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.insert(word);
        }
    }
    out
}

/// Each top-level module and the other top-level modules (or `main`, for an item of the
/// crate root) it uses.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let module_of = |path: &Path| -> String {
        let rel = path.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        first.trim_end_matches(".rs").to_string()
    };
    let modules: BTreeSet<String> = files.iter().map(|p| module_of(p)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in &files {
        let module = module_of(path);
        let text = std::fs::read_to_string(path).unwrap();
        let code = without_tests(&text);
        let mut uses = BTreeSet::new();
        for name in names_after(code, "crate::") {
            if modules.contains(&name) {
                uses.insert(name);
            } else if name.starts_with(|c: char| c.is_ascii_uppercase())
                || code.contains(&format!("crate::{name}("))
            {
                // An item of the crate root.
                uses.insert("main".to_string());
            }
        }
        if module == "main" {
            for name in &modules {
                if code.contains(&format!("{name}::")) {
                    uses.insert(name.clone());
                }
            }
        }
        uses.remove(&module);
        graph.entry(module).or_default().extend(uses);
    }
    graph
}

/// The modules on a cycle through `start`, if there is one.
fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flatten() {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, start, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    let mut seen = BTreeSet::new();
    walk(graph, start, start, &mut path, &mut seen).then_some(path)
}

#[test]
fn the_cli_modules_import_each_other_without_circles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src);
    assert!(graph.len() > 15, "too few modules found: {graph:?}");
    assert!(
        graph["run"].contains("progress") && graph["main"].contains("run"),
        "the walk does not see imports: {graph:?}"
    );
    for module in graph.keys() {
        if let Some(cycle) = cycle_through(&graph, module) {
            let imports: Vec<String> = cycle
                .iter()
                .map(|m| format!("{m} -> {:?}", graph[m]))
                .collect();
            panic!(
                "a circle of imports: {} -> {module}\n{}",
                cycle.join(" -> "),
                imports.join("\n")
            );
        }
    }
}

/// The walk finds a circle where there is one.
#[test]
fn a_circle_is_found() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    g.entry("d".into()).or_default().insert("a".into());
    assert_eq!(
        cycle_through(&g, "a"),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
    assert_eq!(cycle_through(&g, "d"), None);
    assert_eq!(
        names_after("use crate::{exit::X, plan}; crate::run::go()", "crate::"),
        ["exit", "plan", "run"]
            .map(String::from)
            .into_iter()
            .collect()
    );
}
