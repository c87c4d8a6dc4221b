//! Projections, shared by `find` and the `$project`/`$unset` stages: inclusion or exclusion
//! mode, the `_id` rules, computed fields (aggregation expressions) and `$slice`/`$elemMatch`.

use bson::{Bson, Document};

use super::errors::{CommandError, StoreResult};
use super::expr::Expr;
use super::query::Filter;
use super::value_order::Number;
use crate::code;

/// A parsed projection.
#[derive(Debug, Clone)]
pub(crate) struct Projection {
    inclusion: bool,
    fields: Vec<(String, Node)>,
    /// Whether `_id` is kept (inclusion mode keeps it unless `_id: 0`).
    keep_id: bool,
    /// A positional projection: its key (`"items.$"`, checked against the query) and the path
    /// before the `$`, included like any field and then cut to the matched element.
    positional: Option<(String, Vec<String>)>,
}

#[derive(Debug, Clone)]
enum Node {
    Include,
    Exclude,
    Computed(Expr),
    Nested(Vec<(String, Node)>),
    Slice {
        skip: Option<i64>,
        limit: i64,
    },
    /// `{field: {$elemMatch: ...}}`: the filter `{field: {$elemMatch: ...}}`, which keeps the
    /// first element `e` for which `{field: [e]}` matches.
    ElemMatch(String, Box<Filter>),
}

/// Where a projection is used: the two differ in error wording and in `$slice` support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProjectionKind {
    Find,
    Stage,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Include,
    Exclude,
    Compute,
}

impl Modes {
    /// Notes a field's mode; `_id` inclusion or exclusion never decides the projection's mode.
    fn note(&mut self, mode: Mode, path: &str) {
        if path == "_id" && mode != Mode::Compute {
            return;
        }
        if !self.decided {
            self.decided = true;
            self.first_is_exclusion = mode == Mode::Exclude;
        }
        let slot = match mode {
            Mode::Include => &mut self.inclusion,
            Mode::Exclude => &mut self.exclusion,
            Mode::Compute => &mut self.computed,
        };
        slot.get_or_insert_with(|| path.to_owned());
    }
}

#[derive(Default)]
struct Modes {
    /// Whether the first field that decided the mode was an exclusion.
    first_is_exclusion: bool,
    decided: bool,
    inclusion: Option<String>,
    exclusion: Option<String>,
    computed: Option<String>,
}

impl Projection {
    /// Parses a projection; `None` for an empty `find` projection (return whole documents).
    pub(crate) fn parse(spec: &Document, kind: ProjectionKind) -> StoreResult<Option<Projection>> {
        if spec.is_empty() {
            return match kind {
                ProjectionKind::Find => Ok(None),
                ProjectionKind::Stage => Err(CommandError::new(
                    code::EMPTY_PROJECTION,
                    "Invalid $project :: caused by :: projection specification must have at least one field",
                )),
            };
        }
        let mut modes = Modes::default();
        let mut keep_id = None;
        let mut positional: Option<(String, Vec<String>)> = None;
        let mut fields: Vec<(String, Node)> = Vec::new();
        for (key, value) in spec {
            if key.is_empty() || key.starts_with('$') {
                return Err(CommandError::new(
                    code::PROJECTION_FIELD_DOLLAR_PREFIXED,
                    format!(
                        "Invalid projection field name: '{key}': field names may not start with '$'"
                    ),
                ));
            }
            if let Some(array_path) = positional_path(key) {
                check_positional(key, value, kind, positional.is_some(), &fields)?;
                modes.note(Mode::Include, key);
                insert_path(&mut fields, array_path, Node::Include);
                positional = Some((key.clone(), crate::path::split_path(array_path)));
                continue;
            }
            if is_elem_match(value) && positional.is_some() {
                return Err(CommandError::new(
                    code::ELEM_MATCH_AFTER_POSITIONAL,
                    "Cannot specify positional operator and $elemMatch.",
                ));
            }
            let node = parse_node(value, kind, key, &mut modes)?;
            if key == "_id" {
                match node {
                    Node::Include => keep_id = Some(true),
                    Node::Exclude => keep_id = Some(false),
                    other => {
                        keep_id = Some(false);
                        insert_path(&mut fields, key, other);
                    }
                }
                continue;
            }
            insert_path(&mut fields, key, node);
        }
        if let Some(excluded) = &modes.exclusion {
            let exclusion_first = modes.first_is_exclusion;
            match (&modes.inclusion, &modes.computed) {
                (Some(included), _) if exclusion_first => {
                    return Err(CommandError::new(
                        code::INCLUSION_IN_EXCLUSION,
                        format!("Cannot do inclusion on field {included} in exclusion projection"),
                    ));
                }
                (None, Some(computed)) if exclusion_first => {
                    return Err(CommandError::new(
                        code::EXPRESSION_IN_EXCLUSION,
                        format!(
                            "Cannot use expression other than $meta in exclusion projection: {computed}"
                        ),
                    ));
                }
                (Some(_), _) | (_, Some(_)) => {
                    return Err(CommandError::new(
                        code::EXCLUSION_IN_INCLUSION,
                        format!("Cannot do exclusion on field {excluded} in inclusion projection"),
                    ));
                }
                (None, None) => {}
            }
        }
        let inclusion = modes.inclusion.is_some()
            || modes.computed.is_some()
            || (modes.exclusion.is_none() && keep_id == Some(true));
        Ok(Some(Projection {
            inclusion,
            fields,
            keep_id: keep_id.unwrap_or(true),
            positional,
        }))
    }

    /// Checks a positional projection against the query it projects the results of: the query
    /// must name the projected array's top-level field.
    ///
    /// # Errors
    /// mongod's 31277 when it does not.
    pub(crate) fn check_query(&self, query: &Filter) -> StoreResult<()> {
        let Some((key, _)) = &self.positional else {
            return Ok(());
        };
        let field = key.split('.').next().unwrap_or_default();
        if query.names_field(field) {
            return Ok(());
        }
        Err(CommandError::new(
            code::POSITIONAL_PROJECTION_NOT_IN_QUERY,
            format!("Positional projection '{key}' does not match the query document."),
        ))
    }

    /// Whether the projection needs the query's matched array position (a positional `$`).
    pub(crate) fn is_positional(&self) -> bool {
        self.positional.is_some()
    }

    /// Builds an exclusion projection from a list of paths (the `$unset` stage).
    pub(crate) fn exclusion(paths: &[String]) -> Projection {
        let mut fields = Vec::new();
        let mut keep_id = true;
        for path in paths {
            if path == "_id" {
                keep_id = false;
            } else {
                insert_path(&mut fields, path, Node::Exclude);
            }
        }
        Projection {
            inclusion: false,
            fields,
            keep_id,
            positional: None,
        }
    }

    /// Applies the projection to one document.
    pub(crate) fn apply(&self, document: &Document) -> StoreResult<Document> {
        self.apply_at(document, None)
    }

    /// Applies the projection to one document the query matched at array position `position`
    /// (`Filter::matched_position`), which a positional projection keeps.
    pub(crate) fn apply_at(
        &self,
        document: &Document,
        position: Option<usize>,
    ) -> StoreResult<Document> {
        let mut out = if self.inclusion {
            let mut out = Document::new();
            if self.keep_id {
                if let Some(id) = document.get("_id") {
                    out.insert("_id", id.clone());
                }
            }
            include_fields(&self.fields, document, document, &mut out)?;
            if let Some((_, path)) = &self.positional {
                keep_matched_element(&mut out, path, position)?;
            }
            out
        } else {
            let mut out = document.clone();
            if !self.keep_id {
                out.remove("_id");
            }
            exclude_fields(&self.fields, &mut out, document)?;
            out
        };
        if self.inclusion && !self.keep_id {
            // A computed `_id` is placed first, as mongod does.
            if let Some(id) = out.remove("_id") {
                let mut reordered = Document::new();
                reordered.insert("_id", id);
                reordered.extend(out);
                out = reordered;
            }
        }
        Ok(out)
    }
}

fn parse_node(
    value: &Bson,
    kind: ProjectionKind,
    path: &str,
    modes: &mut Modes,
) -> StoreResult<Node> {
    match value {
        Bson::Boolean(_)
        | Bson::Int32(_)
        | Bson::Int64(_)
        | Bson::Double(_)
        | Bson::Decimal128(_) => {
            let include = match value {
                Bson::Boolean(flag) => *flag,
                other => Number::of(other).is_some_and(|number| number.as_f64() != 0.0),
            };
            if include {
                modes.note(Mode::Include, path);
                Ok(Node::Include)
            } else {
                modes.note(Mode::Exclude, path);
                Ok(Node::Exclude)
            }
        }
        Bson::Document(spec) if spec.keys().next().is_some_and(|key| key.starts_with('$')) => {
            if kind == ProjectionKind::Find {
                if let Some(argument) = spec.get("$slice") {
                    return parse_slice(argument);
                }
                if let Some(argument) = spec.get("$elemMatch") {
                    return parse_elem_match(argument, path, modes);
                }
            }
            modes.note(Mode::Compute, path);
            Ok(Node::Computed(Expr::parse(value)?))
        }
        Bson::Document(spec) => {
            if spec.is_empty() {
                return Err(CommandError::new(
                    code::EMPTY_SUB_PROJECTION,
                    "An empty sub-projection is not a valid value. Found empty object at path",
                ));
            }
            let mut children = Vec::new();
            for (key, child) in spec {
                let child_path = format!("{path}.{key}");
                insert_path(
                    &mut children,
                    key,
                    parse_node(child, kind, &child_path, modes)?,
                );
            }
            Ok(Node::Nested(children))
        }
        other => {
            modes.note(Mode::Compute, path);
            Ok(Node::Computed(Expr::parse(other)?))
        }
    }
}

/// The array path of a positional projection key (`"a.b.$"` gives `"a.b"`), if it is one.
fn positional_path(key: &str) -> Option<&str> {
    if key == "$" {
        return Some("");
    }
    let end = key
        .find(".$.")
        .or_else(|| key.strip_suffix(".$").map(str::len))?;
    Some(&key[..end])
}

/// mongod's rules for a positional projection key and its value.
fn check_positional(
    key: &str,
    value: &Bson,
    kind: ProjectionKind,
    have_positional: bool,
    fields: &[(String, Node)],
) -> StoreResult<()> {
    if kind == ProjectionKind::Stage {
        return Err(CommandError::new(
            code::POSITIONAL_PROJECTION_IN_STAGE,
            "Cannot use positional projection in aggregation projection",
        ));
    }
    match value {
        Bson::Document(_) => {
            return Err(CommandError::new(
                code::POSITIONAL_PROJECTION_WITH_OBJECT,
                "positional projection cannot be used with an expression or sub object",
            ));
        }
        Bson::Boolean(_)
        | Bson::Int32(_)
        | Bson::Int64(_)
        | Bson::Double(_)
        | Bson::Decimal128(_) => {
            let included = match value {
                Bson::Boolean(flag) => *flag,
                other => Number::of(other).is_some_and(|number| number.as_f64() != 0.0),
            };
            // An exclusion reads the key as a field path, whose `$` component is invalid.
            if !included {
                return Err(CommandError::new(
                    code::FIELD_PATH_DOLLAR_PREFIXED,
                    "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
                ));
            }
        }
        _ => {
            return Err(CommandError::new(
                code::POSITIONAL_PROJECTION_WITH_LITERAL,
                "positional projection cannot be used with a literal",
            ));
        }
    }
    if have_positional {
        return Err(CommandError::new(
            code::POSITIONAL_PROJECTION_TWICE,
            "Cannot specify more than one positional projection per query.",
        ));
    }
    if has_elem_match(fields) {
        return Err(CommandError::new(
            code::POSITIONAL_AFTER_ELEM_MATCH,
            "Cannot specify positional operator and $elemMatch.",
        ));
    }
    let after = key.find(".$.").map_or("", |at| &key[at + 3..]);
    if positional_path(after).is_some() {
        return Err(CommandError::new(
            code::POSITIONAL_PROJECTION_TWICE_IN_PATH,
            format!("Cannot use positional operator twice: {key}"),
        ));
    }
    Ok(())
}

fn is_elem_match(value: &Bson) -> bool {
    matches!(value, Bson::Document(spec) if spec.keys().next().is_some_and(|key| key == "$elemMatch"))
}

fn has_elem_match(fields: &[(String, Node)]) -> bool {
    fields
        .iter()
        .any(|(_, node)| matches!(node, Node::ElemMatch(..)))
}

fn parse_elem_match(argument: &Bson, path: &str, modes: &mut Modes) -> StoreResult<Node> {
    let Bson::Document(spec) = argument else {
        return Err(CommandError::new(
            code::ELEM_MATCH_PROJECTION_NOT_OBJECT,
            format!(
                "elemMatch: Invalid argument, object required, but got {}",
                crate::errors::type_name(argument)
            ),
        ));
    };
    if path.contains('.') {
        return Err(CommandError::new(
            code::ELEM_MATCH_PROJECTION_NESTED,
            "Cannot use $elemMatch projection on a nested field.",
        ));
    }
    modes.note(Mode::Include, path);
    let mut filter = Document::new();
    filter.insert(path, bson::doc! { "$elemMatch": spec.clone() });
    Ok(Node::ElemMatch(
        path.to_owned(),
        Box::new(Filter::parse(&filter)?),
    ))
}

fn parse_slice(argument: &Bson) -> StoreResult<Node> {
    let as_int = |value: &Bson| {
        Number::of(value)
            .map(|number| number.as_f64())
            .filter(|number| number.fract() == 0.0)
    };
    // Integral by the filter above; the casts only change representation.
    #[allow(clippy::cast_possible_truncation)]
    match argument {
        Bson::Array(items) if items.len() == 2 => match (as_int(&items[0]), as_int(&items[1])) {
            (Some(skip), Some(limit)) if limit > 0.0 => Ok(Node::Slice {
                skip: Some(skip as i64),
                limit: limit as i64,
            }),
            _ => Err(CommandError::new(
                code::SLICE_LIMIT_NOT_POSITIVE,
                "Second argument to $slice must be a positive number",
            )),
        },
        other => match as_int(other) {
            Some(limit) => Ok(Node::Slice {
                skip: None,
                limit: limit as i64,
            }),
            None => Err(CommandError::new(
                code::SLICE_BAD_ARGUMENT,
                "Argument to $slice must be a number or an array of two numbers",
            )),
        },
    }
}

/// Inserts a (possibly dotted) path into a projection tree.
fn insert_path(fields: &mut Vec<(String, Node)>, path: &str, node: Node) {
    let (head, rest) = match path.split_once('.') {
        Some((head, rest)) => (head, Some(rest)),
        None => (path, None),
    };
    let Some(rest) = rest else {
        match fields.iter_mut().find(|(name, _)| name == head) {
            Some((_, existing)) => *existing = node,
            None => fields.push((head.to_owned(), node)),
        }
        return;
    };
    let position = match fields.iter().position(|(name, _)| name == head) {
        Some(position) => position,
        None => {
            fields.push((head.to_owned(), Node::Nested(Vec::new())));
            fields.len() - 1
        }
    };
    if !matches!(fields[position].1, Node::Nested(_)) {
        fields[position].1 = Node::Nested(Vec::new());
    }
    if let Node::Nested(children) = &mut fields[position].1 {
        insert_path(children, rest, node);
    }
}

/// Inclusion: copy included fields in document order, then add computed fields in spec order.
fn include_fields(
    fields: &[(String, Node)],
    source: &Document,
    root: &Document,
    out: &mut Document,
) -> StoreResult<()> {
    for (name, value) in source {
        let Some((_, node)) = fields.iter().find(|(field, _)| field == name) else {
            continue;
        };
        match node {
            Node::Include => {
                out.insert(name.clone(), value.clone());
            }
            Node::Nested(children) => {
                if let Some(projected) = include_nested(children, value, root)? {
                    out.insert(name.clone(), projected);
                }
            }
            Node::Slice { skip, limit } => {
                out.insert(name.clone(), slice(value, *skip, *limit));
            }
            Node::ElemMatch(field, filter) => {
                if let Bson::Array(items) = value {
                    let matches = |item: &&Bson| {
                        let mut probe = Document::new();
                        probe.insert(field.clone(), Bson::Array(vec![(*item).clone()]));
                        filter.matches(&probe)
                    };
                    if let Some(first) = items.iter().find(matches) {
                        out.insert(name.clone(), Bson::Array(vec![first.clone()]));
                    }
                }
            }
            Node::Exclude | Node::Computed(_) => {}
        }
    }
    for (name, node) in fields {
        match node {
            Node::Computed(expr) => {
                if let Some(value) = expr.evaluate(root)? {
                    out.insert(name.clone(), value);
                }
            }
            Node::Nested(children) if !source.contains_key(name) && has_computed(children) => {
                let mut created = Document::new();
                include_fields(children, &Document::new(), root, &mut created)?;
                out.insert(name.clone(), Bson::Document(created));
            }
            _ => {}
        }
    }
    Ok(())
}

/// mongod's positional projection on the projected document: the first array met along the
/// path is cut to its element at the matched position; without an array on the path the
/// document stays as it is.
fn keep_matched_element(
    document: &mut Document,
    path: &[String],
    position: Option<usize>,
) -> StoreResult<()> {
    let mut current = document;
    for part in path {
        match current.get_mut(part) {
            Some(Bson::Array(items)) => {
                let Some(position) = position else {
                    return Err(CommandError::new(
                        code::POSITIONAL_PROJECTION_NO_MATCH,
                        "positional operator '.$' couldn't find a matching element in the array",
                    ));
                };
                let Some(element) = items.get(position).cloned() else {
                    return Err(CommandError::new(
                        code::POSITIONAL_PROJECTION_MISMATCH,
                        "positional operator '.$' element mismatch",
                    ));
                };
                *items = vec![element];
                return Ok(());
            }
            Some(Bson::Document(child)) => current = child,
            _ => return Ok(()),
        }
    }
    Ok(())
}

fn has_computed(fields: &[(String, Node)]) -> bool {
    fields.iter().any(|(_, node)| match node {
        Node::Computed(_) => true,
        Node::Nested(children) => has_computed(children),
        _ => false,
    })
}

fn include_nested(
    children: &[(String, Node)],
    value: &Bson,
    root: &Document,
) -> StoreResult<Option<Bson>> {
    match value {
        Bson::Document(document) => {
            let mut out = Document::new();
            include_fields(children, document, root, &mut out)?;
            Ok(Some(Bson::Document(out)))
        }
        Bson::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                if let Some(projected) = include_nested(children, item, root)? {
                    out.push(projected);
                }
            }
            Ok(Some(Bson::Array(out)))
        }
        // Scalars under an inclusion of a sub-path disappear, unless a computed field creates a
        // document in their place.
        _ if has_computed(children) => {
            let mut out = Document::new();
            include_fields(children, &Document::new(), root, &mut out)?;
            Ok(Some(Bson::Document(out)))
        }
        _ => Ok(None),
    }
}

fn exclude_fields(
    fields: &[(String, Node)],
    target: &mut Document,
    root: &Document,
) -> StoreResult<()> {
    for (name, node) in fields {
        match node {
            Node::Exclude => {
                target.remove(name);
            }
            Node::Nested(children) => {
                if let Some(value) = target.get_mut(name) {
                    exclude_nested(children, value, root)?;
                }
            }
            Node::Slice { skip, limit } => {
                if let Some(value) = target.get_mut(name) {
                    *value = slice(value, *skip, *limit);
                }
            }
            Node::Include | Node::Computed(_) | Node::ElemMatch(..) => {}
        }
    }
    Ok(())
}

fn exclude_nested(
    children: &[(String, Node)],
    value: &mut Bson,
    root: &Document,
) -> StoreResult<()> {
    match value {
        Bson::Document(document) => exclude_fields(children, document, root),
        Bson::Array(items) => {
            for item in items {
                exclude_nested(children, item, root)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn slice(value: &Bson, skip: Option<i64>, limit: i64) -> Bson {
    let Bson::Array(items) = value else {
        return value.clone();
    };
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let (start, count) = match skip {
        None if limit >= 0 => (0, limit),
        // Saturating: a limit of i64::MIN (or -1e300) must not overflow on negation.
        None => ((len + limit).max(0), limit.saturating_neg()),
        Some(skip) if skip >= 0 => (skip.min(len), limit),
        Some(skip) => ((len + skip).max(0), limit),
    };
    let start = usize::try_from(start)
        .unwrap_or(items.len())
        .min(items.len());
    let count = usize::try_from(count).unwrap_or(0);
    Bson::Array(items.iter().skip(start).take(count).cloned().collect())
}
