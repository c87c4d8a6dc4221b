//! The report's sections as plain text (heading, paragraphs, tables, notes), built once from
//! the measurements and written by both the Markdown and the HTML writers, so that the two
//! never disagree on a figure's formatting.

use std::fmt::Write as _;

/// A table as plain text: each writer escapes the cells for its own format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextTable {
    /// The column names.
    pub(crate) header: &'static [&'static str],
    /// The Markdown alignment row (`|---|---:|`), one entry per column.
    pub(crate) align: &'static str,
    /// One entry per row, one cell per column.
    pub(crate) rows: Vec<Vec<String>>,
}

/// One section of the report.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TextSection {
    /// The heading.
    pub(crate) heading: String,
    /// Paragraphs before the tables (Markdown inline code marks allowed).
    pub(crate) intro: Vec<String>,
    /// A list of facts before the tables (how the section ran).
    pub(crate) facts: Vec<String>,
    /// The tables, in order.
    pub(crate) tables: Vec<TextTable>,
    /// Notes after the tables (why a figure is missing, errors).
    pub(crate) notes: Vec<String>,
}

impl TextTable {
    /// The table in Markdown.
    pub(crate) fn write_markdown(&self, out: &mut String) {
        let _ = writeln!(out, "| {} |", self.header.join(" | "));
        let _ = writeln!(out, "{}", self.align);
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|cell| cell_text(cell)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
}

impl TextSection {
    /// The section in Markdown.
    pub(crate) fn write_markdown(&self, out: &mut String) {
        let _ = writeln!(out, "## {}\n", self.heading);
        for paragraph in &self.intro {
            let _ = writeln!(out, "{paragraph}\n");
        }
        for fact in &self.facts {
            let _ = writeln!(out, "- {fact}");
        }
        if !self.facts.is_empty() {
            let _ = writeln!(out);
        }
        for table in &self.tables {
            table.write_markdown(out);
            let _ = writeln!(out);
        }
        for note in &self.notes {
            let _ = writeln!(out, "- {}", cell_text(note));
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out);
        }
    }
}

/// Text safe inside a Markdown table cell (and on one list line).
pub(crate) fn cell_text(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
