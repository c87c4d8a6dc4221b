//! The program of `library.rs` (written for the official driver), run with steadfast against
//! an embedded blackpipe replica set. steadfast-bench runs the same file with the official
//! crate.

include!("library.rs");

#[tokio::test]
async fn a_program_written_for_the_official_driver_runs_unchanged() {
    run_library_against_blackpipe().await;
}
