//! The plan `explain` shows for a query: which index mongod's planner would pick, and the
//! stages around it. blackpipe runs every query as a scan (indexes enforce uniqueness only), so
//! the plan is what mongod would run, chosen by mongod's rules for the cases drivers and tools
//! look at: an index whose first field the filter pins (equality first, then `$in`, then a
//! range) is used, one with a partial filter only when the query implies that filter, a hidden
//! index never; otherwise a collection scan. The `_id` index is a candidate like any other.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use bson::{Bson, Document, doc};

use super::hint::Hint;
use crate::collection::Collection;
use crate::query::Filter;
use crate::value_order::compare_values;

/// What an explained query asks for.
#[derive(Debug, Default)]
pub(crate) struct Query {
    pub(crate) filter: Document,
    pub(crate) sort: Option<Document>,
    pub(crate) projection: Option<Document>,
    pub(crate) skip: usize,
    pub(crate) limit: Option<usize>,
    pub(crate) hint: Option<Hint>,
    /// The command's collation (`locale` compared with an index's).
    pub(crate) collation: Option<Document>,
}

/// How the chosen plan reaches the documents.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Access {
    /// The collection does not exist.
    Eof,
    /// A collection scan.
    Collection { forward: bool },
    /// An index scan, by the index's `listIndexes` entry.
    Index(Document),
}

/// One field's conditions in the filter's top-level conjunction.
#[derive(Debug, Default, Clone)]
struct FieldBounds {
    eq: Option<Bson>,
    within: Option<Vec<Bson>>,
    low: Option<(Bson, bool)>,
    high: Option<(Bson, bool)>,
}

impl FieldBounds {
    fn usable(&self) -> bool {
        self.eq.is_some() || self.within.is_some() || self.low.is_some() || self.high.is_some()
    }

    /// How strongly the field narrows a scan: equality, then `$in`, then a range.
    fn strength(&self) -> u32 {
        if self.eq.is_some() {
            3
        } else if self.within.is_some() {
            2
        } else {
            u32::from(self.usable())
        }
    }

    fn has_string(&self) -> bool {
        let strings = |value: &Bson| matches!(value, Bson::String(_));
        self.eq.as_ref().is_some_and(strings)
            || self.within.iter().flatten().any(strings)
            || self
                .low
                .iter()
                .chain(&self.high)
                .any(|(value, _)| strings(value))
    }
}

/// The filter's top-level conditions per field (`$and` branches included).
fn field_bounds(filter: &Document) -> BTreeMap<String, FieldBounds> {
    let mut fields: BTreeMap<String, FieldBounds> = BTreeMap::new();
    collect_bounds(filter, &mut fields);
    fields
}

fn collect_bounds(filter: &Document, fields: &mut BTreeMap<String, FieldBounds>) {
    for (field, condition) in filter {
        if field == "$and" {
            for branch in condition.as_array().into_iter().flatten() {
                if let Bson::Document(branch) = branch {
                    collect_bounds(branch, fields);
                }
            }
            continue;
        }
        if field.starts_with('$') {
            continue;
        }
        let bounds = fields.entry(field.clone()).or_default();
        match condition {
            Bson::Document(operators)
                if operators.keys().next().is_some_and(|k| k.starts_with('$')) =>
            {
                for (operator, value) in operators {
                    match operator.as_str() {
                        "$eq" => bounds.eq = Some(value.clone()),
                        "$in" => bounds.within = value.as_array().cloned(),
                        "$gt" => bounds.low = Some((value.clone(), false)),
                        "$gte" => bounds.low = Some((value.clone(), true)),
                        "$lt" => bounds.high = Some((value.clone(), false)),
                        "$lte" => bounds.high = Some((value.clone(), true)),
                        _ => {}
                    }
                }
            }
            Bson::RegularExpression(_) => {}
            value => bounds.eq = Some(value.clone()),
        }
    }
}

/// The access path mongod's planner would pick for `query` on `collection`.
pub(crate) fn choose(collection: Option<&Collection>, query: &Query) -> (Access, Vec<Document>) {
    let Some(collection) = collection else {
        return (Access::Eof, Vec::new());
    };
    let specs = collection.index_specs();
    match &query.hint {
        Some(Hint::Natural { forward }) => {
            return (Access::Collection { forward: *forward }, Vec::new());
        }
        Some(Hint::Index(key)) => {
            let spec = specs
                .into_iter()
                .find(|spec| {
                    spec.get_document("key")
                        .is_ok_and(|own| crate::index::same_key_pattern(own, key))
                })
                .unwrap_or_else(|| doc! { "key": key.clone(), "name": "" });
            return (Access::Index(spec), Vec::new());
        }
        None => {}
    }
    let fields = field_bounds(&query.filter);
    let mut candidates: Vec<(u32, usize, Document)> = specs
        .into_iter()
        .filter_map(|spec| score(&spec, &fields, query).map(|score| (score.0, score.1, spec)))
        .collect();
    // Strongest first; among equals, the index listed first (a stable sort keeps that order).
    candidates.sort_by_key(|candidate| std::cmp::Reverse((candidate.0, candidate.1)));
    let mut chosen = candidates.into_iter().map(|(_, _, spec)| spec);
    match chosen.next() {
        Some(best) => (Access::Index(best), chosen.collect()),
        None => (Access::Collection { forward: true }, Vec::new()),
    }
}

/// How well the index `spec` serves the filter: its first field's strength and how many of
/// its leading fields the filter constrains; `None` when the planner could not use it.
fn score(
    spec: &Document,
    fields: &BTreeMap<String, FieldBounds>,
    query: &Query,
) -> Option<(u32, usize)> {
    if matches!(spec.get("hidden"), Some(Bson::Boolean(true))) {
        return None;
    }
    let key = spec.get_document("key").ok()?;
    if key
        .values()
        .any(|direction| matches!(direction, Bson::String(_)))
    {
        return None;
    }
    let (first, _) = key.iter().next()?;
    let bounds = fields.get(first).filter(|bounds| bounds.usable())?;
    if let Some(Bson::Document(partial)) = spec.get("partialFilterExpression") {
        if !implies(fields, partial) {
            return None;
        }
    }
    let same_collation = spec
        .get_document("collation")
        .ok()
        .and_then(|c| c.get_str("locale").ok())
        == query
            .collation
            .as_ref()
            .and_then(|c| c.get_str("locale").ok())
            .filter(|l| *l != "simple");
    if bounds.has_string() && !same_collation {
        return None;
    }
    let leading = key
        .keys()
        .take_while(|field| fields.get(*field).is_some_and(FieldBounds::usable))
        .count();
    Some((bounds.strength(), leading))
}

/// Whether every document the query's conditions allow also passes the partial filter.
fn implies(fields: &BTreeMap<String, FieldBounds>, partial: &Document) -> bool {
    partial.iter().all(|(field, condition)| {
        if field == "$and" {
            return condition.as_array().is_some_and(|branches| {
                branches
                    .iter()
                    .all(|branch| matches!(branch, Bson::Document(b) if implies(fields, b)))
            });
        }
        if field.starts_with('$') {
            return false;
        }
        fields
            .get(field)
            .is_some_and(|bounds| condition_implied(field, condition, bounds))
    })
}

fn condition_implied(field: &str, condition: &Bson, bounds: &FieldBounds) -> bool {
    if let Some(value) = &bounds.eq {
        let Ok(filter) = Filter::parse(&nested(field, condition.clone())) else {
            return false;
        };
        return filter.matches(&nested(field, value.clone()));
    }
    let Bson::Document(operators) = condition else {
        return false;
    };
    operators.iter().all(|(operator, limit)| {
        let within = |bound: &Option<(Bson, bool)>, wanted: Ordering, inclusive_limit: bool| {
            bound
                .as_ref()
                .is_some_and(|(value, inclusive)| match compare_values(value, limit) {
                    Ordering::Equal => inclusive_limit || !inclusive,
                    order => order == wanted,
                })
        };
        match operator.as_str() {
            "$lt" => within(&bounds.high, Ordering::Less, false),
            "$lte" => within(&bounds.high, Ordering::Less, true),
            "$gt" => within(&bounds.low, Ordering::Greater, false),
            "$gte" => within(&bounds.low, Ordering::Greater, true),
            "$exists" => limit.as_bool() == Some(true) && bounds.usable(),
            _ => false,
        }
    })
}

/// `{a: {b: value}}` for the path `a.b`.
fn nested(path: &str, value: Bson) -> Document {
    let mut parts = path.rsplit('.');
    let last = parts.next().unwrap_or(path);
    let mut document = doc! { last: value };
    for part in parts {
        document = doc! { part: document };
    }
    document
}

/// The winning plan's stages for `access`.
pub(crate) fn winning_plan(access: &Access, query: &Query) -> Document {
    let mut stage = match access {
        Access::Eof => doc! { "stage": "EOF" },
        Access::Collection { forward } => {
            let mut scan = doc! { "stage": "COLLSCAN" };
            if !query.filter.is_empty() {
                scan.insert("filter", parsed_query(&query.filter));
            }
            scan.insert("direction", if *forward { "forward" } else { "backward" });
            scan
        }
        Access::Index(spec) => fetch(spec, query),
    };
    let sorted_by_index = matches!(access, Access::Index(spec) if query.sort.as_ref().is_some_and(|sort| index_provides(spec, sort)));
    if let Some(sort) = query
        .sort
        .as_ref()
        .filter(|sort| !sort.is_empty() && !sorted_by_index)
    {
        let mut sort_stage =
            doc! { "stage": "SORT", "sortPattern": sort.clone(), "memLimit": 104_857_600_i64 };
        if let Some(limit) = query.limit {
            sort_stage.insert(
                "limitAmount",
                i64::try_from(limit.saturating_add(query.skip)).unwrap_or(i64::MAX),
            );
        }
        sort_stage.insert("type", "simple");
        stage = wrap(sort_stage, stage);
    }
    if query.skip > 0 {
        stage = wrap(
            doc! { "stage": "SKIP", "skipAmount": i64::try_from(query.skip).unwrap_or(i64::MAX) },
            stage,
        );
    }
    if let Some(limit) = query
        .limit
        .filter(|_| query.sort.is_none() || sorted_by_index)
    {
        stage = wrap(
            doc! { "stage": "LIMIT", "limitAmount": i64::try_from(limit).unwrap_or(i64::MAX) },
            stage,
        );
    }
    if let Some(projection) = query.projection.as_ref().filter(|p| !p.is_empty()) {
        let simple = projection
            .values()
            .all(|value| !matches!(value, Bson::Document(_)))
            && projection
                .keys()
                .all(|key| !key.contains('.') && !key.starts_with('$'));
        let name = if simple {
            "PROJECTION_SIMPLE"
        } else {
            "PROJECTION_DEFAULT"
        };
        stage = wrap(
            doc! { "stage": name, "transformBy": projection.clone() },
            stage,
        );
    }
    stage
}

/// `outer` with `inner` as its input stage.
pub(crate) fn wrap(mut outer: Document, inner: Document) -> Document {
    outer.insert("inputStage", inner);
    outer
}

fn index_provides(spec: &Document, sort: &Document) -> bool {
    let Ok(key) = spec.get_document("key") else {
        return false;
    };
    let forward = sort
        .iter()
        .zip(key.iter())
        .all(|((a, da), (b, db))| a == b && same_sign(da, db, true));
    let backward = sort
        .iter()
        .zip(key.iter())
        .all(|((a, da), (b, db))| a == b && same_sign(da, db, false));
    sort.len() <= key.len() && (forward || backward)
}

fn same_sign(left: &Bson, right: &Bson, same: bool) -> bool {
    let sign =
        |value: &Bson| crate::value_order::Number::of(value).is_some_and(|n| n.as_f64() > 0.0);
    (sign(left) == sign(right)) == same
}

/// FETCH over IXSCAN: the index's description and the bounds the filter gives each field.
fn fetch(spec: &Document, query: &Query) -> Document {
    let key = spec.get_document("key").cloned().unwrap_or_default();
    let fields = field_bounds(&query.filter);
    let flag = |name: &str| matches!(spec.get(name), Some(Bson::Boolean(true)));
    let index_bounds: Document = key
        .iter()
        .map(|(field, _)| (field.clone(), Bson::Array(intervals(fields.get(field)))))
        .collect();
    let multi_key_paths: Document = key
        .keys()
        .map(|field| (field.clone(), Bson::Array(Vec::new())))
        .collect();
    let scan = doc! {
        "stage": "IXSCAN",
        "keyPattern": key.clone(),
        "indexName": spec.get_str("name").unwrap_or_default(),
        "isMultiKey": false,
        "multiKeyPaths": multi_key_paths,
        "isUnique": flag("unique") || spec.get_str("name").is_ok_and(|name| name == "_id_"),
        "isSparse": flag("sparse"),
        "isPartial": spec.contains_key("partialFilterExpression"),
        "indexVersion": 2,
        "direction": "forward",
        "indexBounds": index_bounds,
    };
    let residual: Document = query
        .filter
        .iter()
        .filter(|(field, _)| !key.contains_key(field.as_str()))
        .map(|(field, value)| (field.clone(), value.clone()))
        .collect();
    let mut fetch = doc! { "stage": "FETCH" };
    if !residual.is_empty() {
        fetch.insert("filter", parsed_query(&residual));
    }
    wrap(fetch, scan)
}

/// The index bounds of one key field, as mongod prints them.
fn intervals(bounds: Option<&FieldBounds>) -> Vec<Bson> {
    let point = |value: &Bson| Bson::String(format!("[{value}, {value}]"));
    let Some(bounds) = bounds.filter(|bounds| bounds.usable()) else {
        return vec![Bson::String("[MinKey, MaxKey]".to_owned())];
    };
    if let Some(value) = &bounds.eq {
        return vec![point(value)];
    }
    if let Some(values) = &bounds.within {
        let mut values = values.clone();
        values.sort_by(compare_values);
        return values.iter().map(point).collect();
    }
    let numeric = bounds
        .low
        .iter()
        .chain(&bounds.high)
        .all(|(value, _)| crate::value_order::Number::of(value).is_some());
    let (open_low, open_high) = if numeric {
        ("-inf.0", "inf.0")
    } else {
        ("MinKey", "MaxKey")
    };
    let low = bounds.low.as_ref().map_or_else(
        || format!("[{open_low}"),
        |(value, inclusive)| format!("{}{value}", if *inclusive { '[' } else { '(' }),
    );
    let high = bounds.high.as_ref().map_or_else(
        || format!("{open_high}]"),
        |(value, inclusive)| format!("{value}{}", if *inclusive { ']' } else { ')' }),
    );
    vec![Bson::String(format!("{low}, {high}"))]
}

/// The filter as mongod's `parsedQuery` shows it: one `{field: {$op: value}}` per condition
/// (equalities as `$eq`), under `$and` when there is more than one.
pub(crate) fn parsed_query(filter: &Document) -> Document {
    let mut conditions: Vec<Document> = Vec::new();
    flatten(filter, &mut conditions);
    match conditions.len() {
        0 => Document::new(),
        1 => conditions.remove(0),
        _ => doc! { "$and": conditions },
    }
}

fn flatten(filter: &Document, out: &mut Vec<Document>) {
    for (field, condition) in filter {
        match (field.as_str(), condition) {
            ("$and", Bson::Array(branches)) => {
                for branch in branches {
                    if let Bson::Document(branch) = branch {
                        flatten(branch, out);
                    }
                }
            }
            (name, _) if name.starts_with('$') => out.push(doc! { name: condition.clone() }),
            (_, Bson::Document(operators))
                if operators.keys().next().is_some_and(|k| k.starts_with('$')) =>
            {
                for (operator, value) in operators {
                    out.push(doc! { field.clone(): { operator.clone(): value.clone() } });
                }
            }
            _ => out.push(doc! { field.clone(): { "$eq": condition.clone() } }),
        }
    }
}
