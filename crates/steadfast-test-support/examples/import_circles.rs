//! Prints the import circles of a crate's files: the measure behind the architecture tests.
//!
//! `cargo run -p steadfast-test-support --example import_circles -- crates/blackpipe/src deployment`

use std::path::PathBuf;

use steadfast_test_support::import_graph::ImportGraph;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let src = PathBuf::from(args.next().unwrap_or_else(|| "src".to_owned()));
    let prefix = args.next().unwrap_or_default();
    let graph = ImportGraph::of_crate(&src)?;
    let circles = graph.circles_under(&prefix);
    println!(
        "{} files under '{prefix}'; {} circles; the largest spans {} files",
        graph.modules_under(&prefix).len(),
        circles.len(),
        circles.first().map_or(1, Vec::len)
    );
    for circle in circles {
        println!("  {}: {}", circle.len(), circle.join(", "));
    }
    Ok(())
}
