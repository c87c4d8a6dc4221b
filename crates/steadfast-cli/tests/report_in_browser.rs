//! A short demo's `--report` page, opened in headless Chromium as a user would open it from
//! disk: the page loads without a script error, its script runs to the end, the timeline has a
//! row per member and a marker per injected fault, and a screenshot is taken.
//!
//! Chromium is Debian's `chromium` package (`.ci/run` installs it when missing). Without it
//! the test is skipped with its reason, except under `CI=true`, where it fails. Set
//! `STEADFAST_REPORT_SCREENSHOT=FILE.png` to keep the screenshot (the README's picture is made
//! so, by `crates/steadfast-cli/scripts/report-screenshot.sh`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

fn explain(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs headless Chromium on `page` with `action` (`--dump-dom`, `--screenshot=...`), with the
/// flags that keep it off the network and out of the user's profile.
fn headless(browser: &Path, profile: &Path, page: &Path, action: &str) -> Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1200,1500",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(action)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs")
}

#[test]
fn the_demo_report_renders_in_a_real_browser() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but Chromium is not installed (.ci/run installs Debian's chromium)"
        );
        println!("skipped: no Chromium at /usr/bin/chromium (set CHROMIUM=path to use another)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("steadfast-report-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let page = dir.join("demo.html");
    let demo = Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args([
            "demo",
            "--seconds",
            "4",
            "--workers",
            "4",
            "--json",
            "--report",
        ])
        .arg(&page)
        .output()
        .expect("the steadfast binary runs");
    assert!(demo.status.success(), "{}", explain(&demo));
    let report: serde_json::Value =
        serde_json::from_slice(&demo.stdout).expect("the demo's JSON report");
    let injected = report["faults"]
        .as_array()
        .expect("the report lists its faults")
        .iter()
        .filter(|fault| fault["skipped"].is_null())
        .count();
    assert!(injected >= 2, "a 4 s demo injects faults: {report}");

    let dom = headless(&browser, &dir.join("profile"), &page, "--dump-dom");
    assert!(dom.status.success(), "{}", explain(&dom));
    let dom = String::from_utf8_lossy(&dom.stdout);
    // The handler sets the attribute on the document element; its own source names it in quotes.
    assert!(
        !dom.contains("data-script-error=\""),
        "a script failed: {dom:.3000}"
    );
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not finish"
    );
    assert_eq!(
        dom.matches("class=\"member-row\"").count(),
        3,
        "a row per member"
    );
    assert_eq!(
        dom.matches("class=\"server-row\"").count(),
        3,
        "a row per server the driver sees"
    );
    assert_eq!(
        dom.matches("class=\"fault-marker\"").count(),
        injected,
        "a marker per injected fault"
    );
    assert!(dom.contains("class=\"op-ok\""), "operations are drawn");
    // Each operation's retries are counted on its own task: what the page shows per operation
    // adds up to at most what the driver reported, and to some when it retried at all (a 4 s
    // demo draws every one of its operations).
    let driver_retries = report["retries"]
        .as_u64()
        .expect("the report counts retries");
    let page_retries: u64 = dom
        .split("data-tip=\"")
        .skip(1)
        .filter_map(|tip| {
            let tip = &tip[..tip.find('"')?];
            let count = tip.rsplit(", ").next()?;
            let count = count
                .strip_suffix(" retries")
                .or_else(|| count.strip_suffix(" retry"))?;
            count.parse::<u64>().ok()
        })
        .sum();
    assert!(
        page_retries <= driver_retries,
        "{page_retries} > {driver_retries}"
    );
    assert_eq!(
        page_retries > 0,
        driver_retries > 0,
        "{page_retries} of {driver_retries}"
    );

    let screenshot = std::env::var_os("STEADFAST_REPORT_SCREENSHOT")
        .map_or_else(|| dir.join("demo.png"), PathBuf::from);
    let shot = headless(
        &browser,
        &dir.join("profile"),
        &page,
        &format!("--screenshot={}", screenshot.display()),
    );
    assert!(shot.status.success(), "{}", explain(&shot));
    let png = std::fs::read(&screenshot).expect("the screenshot was written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        png.len() > 20_000,
        "a picture with content: {} bytes",
        png.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
