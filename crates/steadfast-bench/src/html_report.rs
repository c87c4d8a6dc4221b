//! `--report FILE.html`: the whole run as one self-contained page (steadfast-report's page
//! shell, tables and inline-SVG charts; no network, no CDN). The tables are the Markdown
//! report's, from the same rows ([`TextSection`]); the charts are drawn from the measurements.

mod charts;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;

use steadfast_report::html::{self, Cell, escape};

use super::report::Report;
use super::tables::{TextSection, TextTable};

/// The page's title.
const TITLE: &str = "steadfast-bench";

/// The page for `report`; `generated` is when it was written (the report carries no date).
pub(crate) fn render(report: &Report, generated: &str) -> String {
    let subtitle = format!(
        "command: {}\nmachine: {}\ngenerated: {generated}",
        report.command_line,
        report.machine_text()
    );
    let mut sections = vec![
        throughput(report),
        plain(&report.raw_section(), &[]),
        plain(&report.failover_section(), &[]),
        plain(&report.memory_section(), &[]),
    ];
    sections.push(match report.timeout_section() {
        Some(section) => plain(&section, &[]),
        None => not_run("Timeout cell", "the timeout part did not run"),
    });
    sections.push(overload(report));
    sections.extend(driverbench(report));
    sections.push(targets(report));
    html::page(TITLE, &subtitle, &sections)
}

/// Throughput: the schedule, the table, then ops/s, p50 and p99 per cell.
fn throughput(report: &Report) -> String {
    let section = report.throughput_section();
    let charts = charts::throughput(&report.throughput);
    if report.throughput.is_empty() {
        return plain(&section, &charts);
    }
    let mut parts = vec![paragraph(&format!("Schedule: {}.", report.schedule_text()))];
    parts.extend(body(&section, &tables(&section)));
    parts.extend(charts);
    html::section(&section.heading, &parts.concat())
}

fn overload(report: &Report) -> String {
    let curve = charts::goodput(report.overload.as_ref());
    match &report.overload {
        Some(overload) => plain(&overload.section(), &[curve]),
        None => html::section("Overload (open loop)", &curve),
    }
}

fn driverbench(report: &Report) -> Vec<String> {
    let ratios = charts::task_ratios(report.driverbench.as_ref());
    let Some(driverbench) = &report.driverbench else {
        return vec![html::section("DriverBench", &ratios)];
    };
    let mut sections = driverbench.sections();
    if sections.is_empty() {
        return vec![html::section("DriverBench", &ratios)];
    }
    let first = sections.remove(0);
    let mut out = vec![plain(&first, &[ratios])];
    out.extend(sections.iter().map(|section| plain(section, &[])));
    out
}

/// The targets, met and missed styled (`pass`/`fail`), not measured as plain text.
fn targets(report: &Report) -> String {
    let section = report.targets_section();
    let Some(table) = section.tables.first() else {
        return plain(&section, &[]);
    };
    let rows: Vec<Vec<Cell>> = table
        .rows
        .iter()
        .zip(&report.targets)
        .map(|(row, target)| {
            let mut cells = text_cells(row);
            if let (Some(met), Some(last)) = (target.met, cells.last_mut()) {
                *last = Cell::verdict(met);
            }
            cells
        })
        .collect();
    let table = table_or_note(table.header, &rows);
    html::section(&section.heading, &body(&section, &[table]).concat())
}

/// A section with its tables as they are and `charts` after them; a section whose tables are
/// all empty (its part did not run) is its heading and a note.
fn plain(section: &TextSection, charts: &[String]) -> String {
    if !section.tables.is_empty() && section.tables.iter().all(|t| t.rows.is_empty()) {
        let mut parts = vec![note("Not measured in this run.")];
        parts.extend_from_slice(charts);
        return html::section(&section.heading, &parts.concat());
    }
    let mut parts = body(section, &tables(section));
    parts.extend_from_slice(charts);
    html::section(&section.heading, &parts.concat())
}

/// A section of a part that did not run: its heading and why it is empty.
fn not_run(heading: &str, why: &str) -> String {
    html::section(heading, &note(&format!("Not measured: {why}.")))
}

/// The intro, the facts, `tables` (already HTML) and the notes of `section`.
fn body(section: &TextSection, tables: &[String]) -> Vec<String> {
    let mut parts: Vec<String> = section.intro.iter().map(|p| paragraph(p)).collect();
    parts.push(list(&section.facts));
    parts.extend_from_slice(tables);
    parts.push(list(&section.notes));
    parts
}

fn tables(section: &TextSection) -> Vec<String> {
    section.tables.iter().map(plain_table).collect()
}

fn plain_table(table: &TextTable) -> String {
    let rows: Vec<Vec<Cell>> = table.rows.iter().map(|row| text_cells(row)).collect();
    table_or_note(table.header, &rows)
}

/// The table, or a note when it has no row (an empty table says nothing).
fn table_or_note(header: &[&str], rows: &[Vec<Cell>]) -> String {
    if rows.is_empty() {
        note("Not measured in this run.")
    } else {
        html::table(header, rows)
    }
}

fn text_cells(row: &[String]) -> Vec<Cell> {
    row.iter().map(|text| Cell::text(text.as_str())).collect()
}

/// A paragraph.
fn paragraph(text: &str) -> String {
    format!("<p>{}</p>", inline(text))
}

/// `text` escaped, `code` in Markdown's backticks as `<code>`.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, part) in text.split('`').enumerate() {
        if index % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

/// A bulleted list, or nothing when `items` is empty.
fn list(items: &[String]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let items: String = items
        .iter()
        .map(|item| format!("<li>{}</li>", inline(item)))
        .collect();
    format!("<ul>{items}</ul>")
}

/// A one-line note (why a chart or a table is missing).
pub(crate) fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>", escape(text))
}

/// Writes the page for `report` to `path` (created or overwritten).
///
/// # Errors
/// The file cannot be written; the message names it.
pub(crate) fn write(
    report: &Report,
    generated: &str,
    path: &std::path::Path,
) -> Result<(), String> {
    std::fs::write(path, render(report, generated))
        .map_err(|e| format!("cannot write the HTML report {}: {e}", path.display()))
}
