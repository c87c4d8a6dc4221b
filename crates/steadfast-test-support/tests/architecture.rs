//! DESIGN.md's layering rules, checked on the sources so that a change cannot quietly bring a
//! tangle back: blackpipe's deployment reads in three rooms over a foot, its gates import no
//! other gate, and the driver's collection handle is not a hub the rest of the crate imports.

use std::path::PathBuf;

use steadfast_test_support::import_graph::{ImportGraph, Module};

fn crate_src(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

fn graph(name: &str) -> ImportGraph {
    ImportGraph::of_crate(&crate_src(name)).expect("the crate's sources are readable")
}

fn modules_in(graph: &ImportGraph, prefix: &str) -> Vec<Module> {
    let found = graph.modules_under(prefix);
    assert!(!found.is_empty(), "no file under {prefix}: was it moved?");
    found
}

/// Every import from `from` into a module under one of `forbidden`, as `from -> to` lines.
fn imports_into(graph: &ImportGraph, from: &[Module], forbidden: &[&str]) -> Vec<String> {
    from.iter()
        .flat_map(|module| {
            graph
                .imports_of(module)
                .into_iter()
                .filter(|to| forbidden.iter().any(|f| is_in(to, f)))
                .map(move |to| format!("{module} -> {to}"))
        })
        .collect()
}

const ROOMS: [&str; 3] = [
    "deployment::node",
    "deployment::control",
    "deployment::effects",
];

#[test]
fn blackpipe_deployment_has_no_import_circle_over_two_files() {
    let graph = graph("blackpipe");
    modules_in(&graph, "deployment::node");
    let circles: Vec<_> = graph
        .circles_under("deployment")
        .into_iter()
        .filter(|circle| circle.len() > 2)
        .collect();
    assert!(circles.is_empty(), "import circles: {circles:?}");
}

#[test]
fn blackpipe_deployment_foot_imports_no_room() {
    let graph = graph("blackpipe");
    let foot: Vec<Module> = modules_in(&graph, "deployment")
        .into_iter()
        .filter(|m| m != "deployment" && !ROOMS.iter().any(|room| is_in(m, room)))
        .filter(|m| !m.starts_with("deployment::tests"))
        .collect();
    assert!(
        foot.len() >= 5,
        "the foot holds the model and friends: {foot:?}"
    );
    let upward = imports_into(&graph, &foot, &ROOMS);
    assert!(upward.is_empty(), "the foot imports a room: {upward:?}");
}

#[test]
fn blackpipe_node_and_control_never_import_effects() {
    let graph = graph("blackpipe");
    let mut lower = modules_in(&graph, "deployment::node");
    lower.extend(modules_in(&graph, "deployment::control"));
    let upward = imports_into(&graph, &lower, &["deployment::effects"]);
    assert!(upward.is_empty(), "imports of effects: {upward:?}");
}

#[test]
fn blackpipe_gates_import_no_other_gate() {
    let graph = graph("blackpipe");
    let gates: Vec<Module> = modules_in(&graph, "deployment::node")
        .into_iter()
        .filter(|m| {
            !matches!(
                m.as_str(),
                "deployment::node" | "deployment::node::pipeline"
            ) && !m.starts_with("deployment::node::context")
        })
        .collect();
    assert!(gates.len() >= 10, "the gates: {gates:?}");
    let gate_names: Vec<&str> = gates.iter().map(String::as_str).collect();
    let crossings = imports_into(&graph, &gates, &gate_names);
    assert!(
        crossings.is_empty(),
        "a gate imports another: {crossings:?}"
    );
}

/// Every file module of `graph` with its text.
fn sources(graph: &ImportGraph) -> Vec<(Module, String)> {
    graph
        .modules_under("")
        .into_iter()
        .map(|module| {
            let path = graph
                .file_of(&module)
                .expect("a module of the graph has a file");
            let text = std::fs::read_to_string(path).expect("readable source");
            (module, text)
        })
        .collect()
}

fn is_in(module: &str, prefix: &str) -> bool {
    module == prefix || module.starts_with(&format!("{prefix}::"))
}

#[test]
fn steadfast_reaches_into_coll_only_for_the_collection_handle() {
    let mut stray = Vec::new();
    for (module, text) in sources(&graph("steadfast")) {
        if is_in(&module, "coll") {
            continue;
        }
        for (at, _) in text.match_indices("crate::coll::") {
            let rest = &text[at + "crate::coll::".len()..];
            let named: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if named != "Collection" {
                stray.push(format!("{module}: crate::coll::{named}"));
            }
        }
    }
    assert!(
        stray.is_empty(),
        "imports into coll/ beyond the handle: {stray:?}"
    );
}

#[test]
fn steadfast_action_builders_live_in_action() {
    // GridFS's builders use the bucket's private parts and the transaction builders are
    // extended by the convenient API in session/: both are re-exported from `action`.
    const ELSEWHERE: [&str; 2] = ["gridfs::action", "session::transaction"];
    let builders: Vec<Module> = sources(&graph("steadfast"))
        .into_iter()
        .filter(|(_, text)| text.contains("IntoFuture for"))
        .map(|(module, _)| module)
        .collect();
    assert!(builders.len() > 5, "the builders: {builders:?}");
    let stray: Vec<&Module> = builders
        .iter()
        .filter(|m| !is_in(m, "action") && !ELSEWHERE.contains(&m.as_str()))
        .collect();
    assert!(stray.is_empty(), "IntoFuture outside action/: {stray:?}");
}
