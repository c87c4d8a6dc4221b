//! The import graph of a crate's source files, for the architecture tests: which file names a
//! path into which other file (`use crate::a::b`, `super::c::d(..)`, `use self::{e, f}`), and
//! the circles (strongly connected components) of that graph.
//!
//! DESIGN.md's rule is that imports point down the layers and that no import circle spans more
//! than two files; a test reads the graph of its own crate and checks the rule where it holds,
//! so that a later change cannot quietly bring the tangle back.
//!
//! The reading is lexical, not a compiler's: comments, string literals and inline
//! `#[cfg(test)] mod ... { }` blocks are skipped, files under a `tests` folder are not nodes, a
//! path is attributed to the longest module prefix that is a file, and a path that names no file
//! of the crate (an external crate, a re-exported item of the same file) adds no edge.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

/// One file module, as its path from the crate root (`deployment::node::gates`; the root is
/// the empty string).
pub type Module = String;

/// The files of one crate and which of them each one imports.
#[derive(Debug, Clone, Default)]
pub struct ImportGraph {
    files: BTreeMap<Module, PathBuf>,
    edges: BTreeMap<Module, BTreeSet<Module>>,
}

impl ImportGraph {
    /// Reads every `.rs` file under `src` (a crate's `src` folder) except those under a folder
    /// named `tests`.
    ///
    /// # Errors
    ///
    /// Any error reading the folder or a file.
    pub fn of_crate(src: &Path) -> io::Result<ImportGraph> {
        let mut files = BTreeMap::new();
        collect_files(src, src, &mut files)?;
        let mut graph = ImportGraph {
            files,
            edges: BTreeMap::new(),
        };
        let modules: Vec<(Module, PathBuf)> = graph
            .files
            .iter()
            .map(|(m, p)| (m.clone(), p.clone()))
            .collect();
        for (module, path) in modules {
            let text = std::fs::read_to_string(&path)?;
            let targets: BTreeSet<Module> = paths_named(&code_only(&text))
                .iter()
                .filter_map(|named| graph.resolve(&module, named))
                .filter(|target| *target != module)
                .collect();
            graph.edges.insert(module, targets);
        }
        Ok(graph)
    }

    /// The file modules whose path starts with `prefix` (`""`: all of them).
    pub fn modules_under(&self, prefix: &str) -> Vec<Module> {
        self.files
            .keys()
            .filter(|m| is_under(m, prefix))
            .cloned()
            .collect()
    }

    /// The file that holds `module`.
    pub fn file_of(&self, module: &str) -> Option<&Path> {
        self.files.get(module).map(PathBuf::as_path)
    }

    /// The file modules that `module` imports.
    pub fn imports_of(&self, module: &str) -> BTreeSet<Module> {
        self.edges.get(module).cloned().unwrap_or_default()
    }

    /// The import circles among the modules under `prefix` (edges leaving it ignored): each
    /// strongly connected component of two or more files, largest first, each sorted.
    pub fn circles_under(&self, prefix: &str) -> Vec<Vec<Module>> {
        let nodes: Vec<Module> = self.modules_under(prefix);
        let mut circles: Vec<Vec<Module>> = Tarjan::new(self, &nodes)
            .components()
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect();
        for circle in &mut circles {
            circle.sort();
        }
        circles.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        circles
    }

    /// Attributes a named path (`crate::a::b`, `super::x`, `self::y`) to a file module.
    fn resolve(&self, module: &str, named: &[String]) -> Option<Module> {
        let mut current: Vec<&str> = split(module);
        let mut rest = named;
        match named.first().map(String::as_str) {
            Some("crate") => {
                current.clear();
                rest = &named[1..];
            }
            Some("self" | "super") => {
                // In `a/b.rs` and in `a/b/mod.rs` alike (module a::b), `self` is a::b and
                // `super` is a.
                while let Some(step) = rest.first().map(String::as_str) {
                    match step {
                        "self" => {}
                        "super" => {
                            current.pop()?;
                        }
                        _ => break,
                    }
                    rest = &rest[1..];
                }
            }
            _ => return None,
        }
        let mut full: Vec<&str> = current;
        full.extend(rest.iter().map(String::as_str));
        (0..=full.len())
            .rev()
            .map(|n| full[..n].join("::"))
            .find(|candidate| self.files.contains_key(candidate))
    }
}

fn split(module: &str) -> Vec<&str> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").collect()
    }
}

fn is_under(module: &str, prefix: &str) -> bool {
    prefix.is_empty()
        || module == prefix
        || module
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with("::"))
}

fn collect_files(root: &Path, dir: &Path, files: &mut BTreeMap<Module, PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                collect_files(root, &path, files)?;
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.insert(module_of(root, &path), path);
        }
    }
    Ok(())
}

fn module_of(root: &Path, path: &Path) -> Module {
    let relative = path.strip_prefix(root).unwrap_or(path).with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The text without comments, string and char literals, and inline test modules.
fn code_only(text: &str) -> String {
    let without_tests = match inline_test_module_start(text) {
        Some(at) => &text[..at],
        None => text,
    };
    strip_comments_and_literals(without_tests)
}

/// Where `#[cfg(test)]` opens an inline `mod name {` (conventionally the end of a file).
fn inline_test_module_start(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find("#[cfg(test)]") {
        let at = from + found;
        let after = text[at + "#[cfg(test)]".len()..].trim_start();
        let line = after.lines().next().unwrap_or("");
        if (line.starts_with("mod ") || line.starts_with("pub(crate) mod ")) && line.contains('{') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn strip_comments_and_literals(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1).copied()) {
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |end| i + 2 + end + 2);
            }
            (b'"', _) => i = skip_string(bytes, i),
            (b'r', Some(b'#' | b'"')) if !ident_before(bytes, i) => i = skip_raw_string(text, i),
            (b'\'', _) => i = skip_char_literal(bytes, i),
            _ => {
                let len = utf8_len(bytes[i]);
                out.push_str(&text[i..i + len]);
                i += len;
                continue;
            }
        }
        out.push(' ');
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

fn ident_before(bytes: &[u8], i: usize) -> bool {
    i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
}

fn skip_string(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

fn skip_raw_string(text: &str, start: usize) -> usize {
    let hashes = text[start + 1..].bytes().take_while(|b| *b == b'#').count();
    let open = start + 1 + hashes;
    if text.as_bytes().get(open) != Some(&b'"') {
        return start + 1;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    text[open + 1..]
        .find(&close)
        .map_or(text.len(), |end| open + 1 + end + close.len())
}

/// A char literal (`'a'`, `'\n'`, `'\u{1F600}'`) is skipped; a lifetime (`'a`) is kept.
fn skip_char_literal(bytes: &[u8], start: usize) -> usize {
    match (bytes.get(start + 1), bytes.get(start + 2)) {
        (Some(b'\\'), _) => {
            let mut i = start + 2;
            while i < bytes.len() && bytes[i] != b'\'' {
                i += 1;
            }
            i + 1
        }
        (Some(_), Some(b'\'')) => start + 3,
        _ => start + 1,
    }
}

/// Every path that starts with `crate`, `self` or `super`, with `use` trees expanded.
fn paths_named(code: &str) -> Vec<Vec<String>> {
    let tokens = tokenize(code);
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i].as_str(), "crate" | "self" | "super")
            && (i == 0 || tokens[i - 1] != "::")
        {
            let (tree, next) = use_tree(&tokens, i);
            paths.extend(tree);
            i = next.max(i + 1);
        } else {
            i += 1;
        }
    }
    paths
}

/// Identifiers, `::`, and single punctuation characters.
fn tokenize(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut end = at + c.len_utf8();
            while let Some(&(next_at, next)) = chars.peek() {
                if next.is_alphanumeric() || next == '_' {
                    end = next_at + next.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            tokens.push(code[at..end].to_owned());
        } else if c == ':' && chars.peek().is_some_and(|&(_, n)| n == ':') {
            chars.next();
            tokens.push("::".to_owned());
        } else if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    tokens
}

/// Reads `a::b::{c, d::{e}}` from `at`: the expanded paths and the index after the tree.
fn use_tree(tokens: &[String], at: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    let mut i = at;
    while i < tokens.len() && is_ident(&tokens[i]) {
        prefix.push(tokens[i].clone());
        i += 1;
        if tokens.get(i).map(String::as_str) != Some("::") {
            return (vec![prefix], i);
        }
        i += 1;
    }
    match tokens.get(i).map(String::as_str) {
        Some("{") => {
            let mut paths = Vec::new();
            i += 1;
            while i < tokens.len() && tokens[i] != "}" {
                let (inner, next) = use_tree(tokens, i);
                for suffix in inner {
                    let mut full = prefix.clone();
                    full.extend(suffix.into_iter().filter(|s| s != "self"));
                    paths.push(full);
                }
                i = next;
                while i < tokens.len() && tokens[i] != "," && tokens[i] != "}" {
                    i += 1;
                }
                if tokens.get(i).map(String::as_str) == Some(",") {
                    i += 1;
                }
            }
            (paths, i + 1)
        }
        // `a::*` or `a::b` followed by something else.
        _ => (vec![prefix], i),
    }
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Tarjan's strongly connected components over the graph restricted to `nodes`.
struct Tarjan<'g> {
    graph: &'g ImportGraph,
    nodes: BTreeSet<&'g str>,
    index: BTreeMap<String, usize>,
    low: BTreeMap<String, usize>,
    stack: Vec<String>,
    on_stack: BTreeSet<String>,
    components: Vec<Vec<Module>>,
}

impl<'g> Tarjan<'g> {
    fn new(graph: &'g ImportGraph, nodes: &'g [Module]) -> Self {
        Tarjan {
            graph,
            nodes: nodes.iter().map(String::as_str).collect(),
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            components: Vec::new(),
        }
    }

    fn components(mut self) -> Vec<Vec<Module>> {
        let nodes: Vec<&str> = self.nodes.iter().copied().collect();
        for node in nodes {
            if !self.index.contains_key(node) {
                self.visit(node);
            }
        }
        self.components
    }

    fn visit(&mut self, node: &str) {
        let order = self.index.len();
        self.index.insert(node.to_owned(), order);
        self.low.insert(node.to_owned(), order);
        self.stack.push(node.to_owned());
        self.on_stack.insert(node.to_owned());
        let targets: Vec<Module> = (self.graph.edges.get(node).into_iter().flatten())
            .filter(|t| self.nodes.contains(t.as_str()))
            .cloned()
            .collect();
        for target in &targets {
            if !self.index.contains_key(target) {
                self.visit(target);
                let low = self.low[node].min(self.low[target]);
                self.low.insert(node.to_owned(), low);
            } else if self.on_stack.contains(target) {
                let low = self.low[node].min(self.index[target]);
                self.low.insert(node.to_owned(), low);
            }
        }
        if self.low[node] == self.index[node] {
            let mut component = Vec::new();
            while let Some(top) = self.stack.pop() {
                self.on_stack.remove(&top);
                let done = top == node;
                component.push(top);
                if done {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> ImportGraph {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("import-graph-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        let graph = ImportGraph::of_crate(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        graph
    }

    #[test]
    fn finds_a_three_file_circle_through_use_trees_and_inline_paths() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b; mod c;"),
            ("a.rs", "use crate::{b::Thing, x};"),
            ("b.rs", "fn f() { super::c::go(); }"),
            ("c/mod.rs", "use super::a; // use crate::b;\n"),
        ]);
        assert_eq!(g.circles_under(""), vec![vec!["a", "b", "c"]]);
        assert_eq!(g.imports_of("c"), BTreeSet::from(["a".to_owned()]));
    }

    #[test]
    fn comments_strings_and_inline_tests_add_no_edge() {
        let g = graph(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "/// [`crate::b`]\nconst S: &str = \"crate::b\";\n#[cfg(test)]\nmod tests {\n use crate::b;\n}\n",
            ),
            ("b.rs", "use crate::a;"),
        ]);
        assert!(g.circles_under("").is_empty());
        assert!(g.imports_of("a").is_empty());
    }

    #[test]
    fn circles_are_limited_to_the_prefix() {
        let g = graph(&[
            ("lib.rs", "mod d; mod e;"),
            ("d/mod.rs", "mod x; mod y; use crate::e;"),
            ("d/x.rs", "use super::y;"),
            ("d/y.rs", "use super::x;"),
            ("e.rs", "use crate::d;"),
        ]);
        assert_eq!(g.circles_under("d"), vec![vec!["d::x", "d::y"]]);
        assert_eq!(g.circles_under("").len(), 2);
        assert_eq!(g.modules_under("d"), vec!["d", "d::x", "d::y"]);
    }
}
