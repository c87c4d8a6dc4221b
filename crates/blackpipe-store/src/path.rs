//! Dotted paths (`a.b.0.c`) through embedded documents and arrays, as the query language sees them.

use bson::{Bson, Document};

/// What a path reaches along one branch of the document.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Leaf<'a> {
    /// The path ends at this value (arrays at the end are not expanded here).
    Present(&'a Bson),
    /// The path does not exist along this branch.
    Missing,
}

/// Splits a dotted path into its components.
pub(crate) fn split_path(path: &str) -> Vec<String> {
    path.split('.').map(str::to_owned).collect()
}

/// A path component that addresses an array element (`"0"`, `"12"`; not `"01"` or `"-1"`).
pub(crate) fn array_index(part: &str) -> Option<usize> {
    let canonical = !part.is_empty()
        && part.bytes().all(|byte| byte.is_ascii_digit())
        && (part == "0" || !part.starts_with('0'));
    if canonical { part.parse().ok() } else { None }
}

/// Collects every value the path reaches in `document`, descending into arrays the way a query
/// does: an array met before the end of the path is traversed element by element (documents
/// only), and a numeric component also selects that array position.
pub(crate) fn collect_leaves<'a>(
    document: &'a Document,
    parts: &[String],
    out: &mut Vec<Leaf<'a>>,
) {
    for_each_leaf(document, parts, &mut |leaf, _| out.push(leaf));
}

/// Calls `sink` with every value the path reaches (as [`collect_leaves`] collects them) and the
/// position, in the first array the path went through, of the element it came from: the
/// position mongod's positional `$` stands for.
pub(crate) fn for_each_leaf<'a>(
    document: &'a Document,
    parts: &[String],
    sink: &mut impl FnMut(Leaf<'a>, Option<usize>),
) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    match document.get(first) {
        Some(value) => leaves_from_value(value, rest, None, &mut *sink),
        None => sink(Leaf::Missing, None),
    }
}

/// Where [`for_each_leaf`] sends what it reaches (a trait object: the walk recurses through
/// closures that count what they pass on).
type LeafSink<'s, 'a> = dyn FnMut(Leaf<'a>, Option<usize>) + 's;

fn leaves_from_value<'a>(
    value: &'a Bson,
    parts: &[String],
    outer: Option<usize>,
    sink: &mut LeafSink<'_, 'a>,
) {
    let Some((first, rest)) = parts.split_first() else {
        sink(Leaf::Present(value), outer);
        return;
    };
    match value {
        Bson::Document(document) => match document.get(first) {
            Some(child) => leaves_from_value(child, rest, outer, sink),
            None => sink(Leaf::Missing, outer),
        },
        Bson::Array(items) => {
            let mut reached = false;
            let mut counted = |leaf: Leaf<'a>, position: Option<usize>| {
                reached = true;
                sink(leaf, position);
            };
            if let Some(position) = array_index(first) {
                if let Some(item) = items.get(position) {
                    leaves_from_value(item, rest, outer, &mut counted);
                }
                // A numeric component may also name a field of embedded documents.
                for (index, item) in items.iter().enumerate() {
                    if let Bson::Document(document) = item {
                        if let Some(child) = document.get(first) {
                            leaves_from_value(child, rest, outer.or(Some(index)), &mut counted);
                        }
                    }
                }
            } else {
                for (index, item) in items.iter().enumerate() {
                    if let Bson::Document(document) = item {
                        let at = outer.or(Some(index));
                        match document.get(first) {
                            Some(child) => leaves_from_value(child, rest, at, &mut counted),
                            None => counted(Leaf::Missing, at),
                        }
                    }
                }
            }
            if !reached {
                sink(Leaf::Missing, outer);
            }
        }
        _ => sink(Leaf::Missing, outer),
    }
}

/// The value at a path without array traversal (numeric components index arrays).
pub(crate) fn get_path<'a>(document: &'a Document, parts: &[String]) -> Option<&'a Bson> {
    let (first, rest) = parts.split_first()?;
    let mut current = document.get(first)?;
    for part in rest {
        current = match current {
            Bson::Document(document) => document.get(part)?,
            Bson::Array(items) => items.get(array_index(part)?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// Sets a path inside a document, creating intermediate documents. Used to build documents from
/// equality predicates and projections, where the path is known not to cross scalars.
pub(crate) fn set_path_creating(document: &mut Document, parts: &[String], value: Bson) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    if rest.is_empty() {
        document.insert(first.clone(), value);
        return;
    }
    let child = document
        .entry(first.clone())
        .or_insert_with(|| Bson::Document(Document::new()));
    if !matches!(child, Bson::Document(_)) {
        *child = Bson::Document(Document::new());
    }
    if let Bson::Document(child) = child {
        set_path_creating(child, rest, value);
    }
}
