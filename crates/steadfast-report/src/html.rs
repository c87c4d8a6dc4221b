//! The page: one HTML document with its style and script inline.

use std::fmt::Write as _;

/// `text` with the five characters HTML gives meaning to escaped, for element content and
/// attribute values alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Style of every report: readable without the script, printable.
const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1180px;color:#1d1d1f;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.subtitle{color:#555;margin:0 0 16px;white-space:pre-wrap}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f6}
td.pass{color:#1b5e20;font-weight:600}td.fail{color:#b71c1c;font-weight:600}
svg{display:block;margin:4px 0 12px;font-size:11px}
svg text{fill:#333}
.legend{display:flex;flex-wrap:wrap;gap:14px;margin:4px 0 6px;font-size:13px}
.legend label{display:flex;align-items:center;gap:4px;cursor:pointer}
.swatch{display:inline-block;width:11px;height:11px;border-radius:2px}
.note{color:#555;font-size:12px}
#tip{position:absolute;display:none;background:#222;color:#fff;padding:4px 7px;border-radius:4px;font-size:12px;pointer-events:none;white-space:pre;z-index:10;max-width:520px}
";

/// The script: a tooltip for every element with a `data-tip`, the legend's check boxes that
/// show and hide a class of marks, and `data-ready` on the body once it ran (a browser test
/// waits for it). An error anywhere in a script is recorded on the document element, so that
/// a test can tell a page that loaded from one that broke.
const SCRIPT: &str = "
(function(){
var tip=document.getElementById('tip');
document.addEventListener('mousemove',function(e){
var el=e.target&&e.target.closest?e.target.closest('[data-tip]'):null;
if(!el){tip.style.display='none';return;}
tip.textContent=el.getAttribute('data-tip');
tip.style.display='block';tip.style.left=(e.pageX+14)+'px';tip.style.top=(e.pageY+14)+'px';
});
var boxes=document.querySelectorAll('input[data-toggle]');
for(var i=0;i<boxes.length;i++){boxes[i].addEventListener('change',function(ev){
var box=ev.target,marks=document.querySelectorAll('.'+box.getAttribute('data-toggle'));
for(var j=0;j<marks.length;j++){marks[j].style.display=box.checked?'':'none';}
});}
document.body.setAttribute('data-ready','1');
})();
";

/// A whole page: `title` as its heading, `subtitle` under it, then `sections` (HTML fragments,
/// already escaped) in order.
pub fn page(title: &str, subtitle: &str, sections: &[String]) -> String {
    let body_len: usize = sections.iter().map(String::len).sum();
    let mut out = String::with_capacity(body_len + STYLE.len() + SCRIPT.len() + 1024);
    let title = escape(title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{title}</title>\
         <script>window.onerror=function(m){{document.documentElement.setAttribute('data-script-error',String(m));}};</script>\
         <style>{STYLE}</style></head>\n<body><h1>{title}</h1><p class=\"subtitle\">{}</p>\n",
        escape(subtitle)
    );
    for section in sections {
        out.push_str(section);
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "<div id=\"tip\"></div><script>{SCRIPT}</script></body></html>"
    );
    out
}

/// A section: a heading and its content (already HTML).
pub fn section(heading: &str, content: &str) -> String {
    format!("<section><h2>{}</h2>{content}</section>", escape(heading))
}

/// A table of text cells (escaped here). `classes`, when given for a cell, becomes its class
/// (`pass`, `fail`).
pub fn table(header: &[&str], rows: &[Vec<Cell>]) -> String {
    let mut out = String::from("<table><thead><tr>");
    for name in header {
        let _ = write!(out, "<th>{}</th>", escape(name));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            match cell.class {
                Some(class) => {
                    let _ = write!(out, "<td class=\"{class}\">{}</td>", escape(&cell.text));
                }
                None => {
                    let _ = write!(out, "<td>{}</td>", escape(&cell.text));
                }
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// One table cell: its text and an optional class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// The text, escaped when the table is written.
    pub text: String,
    /// `pass` or `fail`, or none.
    pub class: Option<&'static str>,
}

impl Cell {
    /// A plain cell.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            class: None,
        }
    }

    /// "pass" or "FAIL", styled.
    pub fn verdict(passed: bool) -> Self {
        Self {
            text: if passed { "pass" } else { "FAIL" }.to_owned(),
            class: Some(if passed { "pass" } else { "fail" }),
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}
