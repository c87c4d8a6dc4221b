//! The DNS records the suite's README asks for, read from its ```dns block at run time (never
//! copied into the repository): A, SRV and TXT tables, one record a line.

use std::net::Ipv4Addr;

/// One record of the README's tables. Names are fully qualified, lower case, without the
/// trailing dot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DnsRecord {
    /// `name IN A address`.
    A { name: String, address: Ipv4Addr },
    /// `name IN SRV port target` (priority and weight are not in the table: 0 and 0).
    Srv {
        name: String,
        port: u16,
        target: String,
    },
    /// `name IN TXT "string" "string" ...`: one record of one or more character strings.
    Txt { name: String, strings: Vec<String> },
}

impl DnsRecord {
    /// The owner name.
    pub(crate) fn name(&self) -> &str {
        match self {
            DnsRecord::A { name, .. }
            | DnsRecord::Srv { name, .. }
            | DnsRecord::Txt { name, .. } => name,
        }
    }
}

/// Records the suite's tests need that the README's tables leave out, each with the reason:
/// (owner, port, target). They are added only while the README still lacks them.
const SUPPLEMENT: &[(&str, u16, &str, &str)] = &[(
    "_customname._tcp.test22.test.build.10gen.cc",
    27018,
    "localhost.test.build.10gen.cc",
    "srv-service-name.json expects test22's custom service to list ports 27017 and 27018 \
     (as the public test zone does); the README's table shows only the first",
)];

/// Every record of the first ```dns block of `readme`, plus the [`SUPPLEMENT`] records it
/// still lacks.
///
/// # Errors
/// A message naming the line that cannot be read, or saying that the block or one of the
/// three kinds of record is missing (a README that changed shape must not pass with fewer
/// records).
pub(crate) fn parse_readme(readme: &str) -> Result<Vec<DnsRecord>, String> {
    let block = readme
        .split("```dns")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .ok_or("the README has no ```dns block of records")?;
    let mut records = Vec::new();
    for line in block.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("Record") {
            continue;
        }
        records.push(parse_line(line)?);
    }
    for &(name, port, target, _why) in SUPPLEMENT {
        let record = DnsRecord::Srv {
            name: name.to_string(),
            port,
            target: target.to_string(),
        };
        if !records.contains(&record) {
            records.push(record);
        }
    }
    for (kind, present) in [
        (
            "A",
            records.iter().any(|r| matches!(r, DnsRecord::A { .. })),
        ),
        (
            "SRV",
            records.iter().any(|r| matches!(r, DnsRecord::Srv { .. })),
        ),
        (
            "TXT",
            records.iter().any(|r| matches!(r, DnsRecord::Txt { .. })),
        ),
    ] {
        if !present {
            return Err(format!("the README's ```dns block has no {kind} record"));
        }
    }
    Ok(records)
}

/// `name ttl IN type data...`.
fn parse_line(line: &str) -> Result<DnsRecord, String> {
    let bad = |why: &str| format!("README record line {line:?}: {why}");
    let mut fields = line.split_whitespace();
    let (Some(name), Some(_ttl), Some(class), Some(kind)) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(bad("expected name, TTL, class and type"));
    };
    if class != "IN" {
        return Err(bad("the class is not IN"));
    }
    let name = fqdn(name);
    match kind {
        "A" => {
            let address = fields
                .next()
                .and_then(|a| a.parse().ok())
                .ok_or_else(|| bad("no IPv4 address"))?;
            Ok(DnsRecord::A { name, address })
        }
        "SRV" => {
            let port = fields
                .next()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| bad("no port"))?;
            let target = fields.next().map(fqdn).ok_or_else(|| bad("no target"))?;
            Ok(DnsRecord::Srv { name, port, target })
        }
        "TXT" => {
            let rest = line
                .split_once("TXT")
                .map(|(_, rest)| rest)
                .ok_or_else(|| bad("no text"))?;
            let strings = quoted_strings(rest).map_err(|why| bad(&why))?;
            Ok(DnsRecord::Txt { name, strings })
        }
        other => Err(bad(&format!("unknown record type {other}"))),
    }
}

/// The double-quoted character strings of a TXT record's text, in order.
fn quoted_strings(text: &str) -> Result<Vec<String>, String> {
    let mut strings = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let body = rest
            .strip_prefix('"')
            .ok_or("a TXT string does not start with a quote")?;
        let (string, after) = body
            .split_once('"')
            .ok_or("a TXT string has no closing quote")?;
        strings.push(string.to_string());
        rest = after.trim_start();
    }
    if strings.is_empty() {
        return Err("no TXT string".into());
    }
    Ok(strings)
}

/// A table name as the suite means it: fully qualified whether or not it ends with a dot.
fn fqdn(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}
