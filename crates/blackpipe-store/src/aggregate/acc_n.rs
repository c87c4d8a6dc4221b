//! The `n` accumulators: `$firstN`, `$lastN`, `$minN`, `$maxN` (`{input, n}`) and `$top`,
//! `$bottom`, `$topN`, `$bottomN` (`{sortBy, output[, n]}`).

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{Bson, Document};

use super::acc_state::charge;
use super::accumulator::{Accumulator, Kind};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, format_value};
use crate::expr::{Defined, Expr};
use crate::path::split_path;
use crate::sort::SortSpec;
use crate::value_order::{compare_values, value_size};

/// Parses `$firstN`, `$lastN`, `$minN` or `$maxN`'s `{input, n}`.
pub(super) fn parse_pick(
    name: &str,
    argument: &Bson,
    defined: &Defined,
) -> StoreResult<Accumulator> {
    let (kind, not_object) = match name {
        "$firstN" => (Kind::FirstN, code::FIRST_LAST_N_NOT_OBJECT),
        "$lastN" => (Kind::LastN, code::FIRST_LAST_N_NOT_OBJECT),
        "$minN" => (Kind::MinN, code::MIN_MAX_N_NOT_OBJECT),
        _ => (Kind::MaxN, code::MIN_MAX_N_NOT_OBJECT),
    };
    let Bson::Document(spec) = argument else {
        return Err(not_an_object(not_object, name, argument));
    };
    let (mut n, mut input) = (None, None);
    for (key, value) in spec {
        match key.as_str() {
            "input" => input = Some(Expr::parse_in(value, defined)?),
            "n" => n = Some(Expr::parse_in(value, defined)?),
            _ => {
                return Err(CommandError::new(
                    code::N_OPERATOR_UNKNOWN_ARGUMENT,
                    format!("Unknown argument for 'n' operator: {key}"),
                ));
            }
        }
    }
    let n =
        n.ok_or_else(|| CommandError::new(code::N_OPERATOR_WITHOUT_N, "Missing value for 'n'"))?;
    let input = input.ok_or_else(|| {
        CommandError::new(code::N_OPERATOR_WITHOUT_INPUT, "Missing value for 'input'")
    })?;
    let mut accumulator = Accumulator::simple(kind, input);
    accumulator.n = Some(n);
    Ok(accumulator)
}

/// mongod's "specification must be an object; found <name>: <value>".
fn not_an_object(code: i32, name: &str, argument: &Bson) -> CommandError {
    CommandError::new(
        code,
        format!(
            "specification must be an object; found {name}: {}",
            format_value(argument)
        ),
    )
}

/// Parses `$top`, `$bottom`, `$topN` or `$bottomN`'s `{sortBy, output[, n]}`.
pub(super) fn parse_top(
    name: &str,
    argument: &Bson,
    defined: &Defined,
) -> StoreResult<Accumulator> {
    let (kind, single) = match name {
        "$top" => (Kind::Top, true),
        "$bottom" => (Kind::Bottom, true),
        "$topN" => (Kind::TopN, false),
        _ => (Kind::BottomN, false),
    };
    let Bson::Document(spec) = argument else {
        return Err(not_an_object(code::TOP_BOTTOM_NOT_OBJECT, name, argument));
    };
    let (mut n, mut output, mut sort_by) = (None, None, None);
    for (key, value) in spec {
        match key.as_str() {
            "n" if !single => n = Some(Expr::parse_in(value, defined)?),
            "output" => output = Some(value),
            "sortBy" => match value {
                Bson::Document(pattern) => sort_by = Some(pattern),
                _ => {
                    return Err(CommandError::new(
                        code::EXPECTED_AN_OBJECT,
                        "invalid parameter: expected an object (sortBy)",
                    ));
                }
            },
            _ => {
                return Err(CommandError::new(
                    code::TOP_BOTTOM_UNKNOWN_ARGUMENT,
                    format!("Unknown argument to {name} '{key}'"),
                ));
            }
        }
    }
    let n = if single {
        Expr::Literal(Bson::Int32(1))
    } else {
        n.ok_or_else(|| CommandError::new(code::TOP_BOTTOM_WITHOUT_N, "Missing value for 'n'"))?
    };
    let output = output.ok_or_else(|| {
        CommandError::new(
            code::TOP_BOTTOM_WITHOUT_OUTPUT,
            "Missing value for 'output'",
        )
    })?;
    let sort_by = sort_by.ok_or_else(|| {
        CommandError::new(
            code::TOP_BOTTOM_WITHOUT_SORT_BY,
            "Missing value for 'sortBy'",
        )
    })?;
    let top = TopSort::parse(sort_by)?;
    let mut accumulator = Accumulator::simple(kind, Expr::parse_in(output, defined)?);
    accumulator.n = Some(n);
    accumulator.top = Some(Arc::new(top));
    Ok(accumulator)
}

/// A `$top`-family sort: the `sortBy` paths, read with aggregation field-path rules, and a sort
/// over them with `$sort`'s rules (an array sorts by its least element ascending, its
/// greatest descending).
#[derive(Debug, Clone)]
pub(crate) struct TopSort {
    paths: Vec<Vec<String>>,
    sort: SortSpec,
}

impl TopSort {
    /// The sort of a `sortBy` pattern (checked as `$sort` checks its keys).
    pub(crate) fn parse(pattern: &Document) -> StoreResult<TopSort> {
        let checked = SortSpec::parse(pattern)?;
        let paths = pattern.keys().map(|path| split_path(path)).collect();
        let mut internal = Document::new();
        for (position, (_, ascending)) in checked.keys().iter().enumerate() {
            internal.insert(format!("k{position}"), if *ascending { 1 } else { -1 });
        }
        Ok(TopSort {
            paths,
            sort: SortSpec::parse(&internal)?,
        })
    }

    pub(crate) fn with_collation(&self, collation: Option<&Collation>) -> TopSort {
        TopSort {
            paths: self.paths.clone(),
            sort: self.sort.clone().with_collation(collation),
        }
    }

    /// The sort key of a document.
    pub(crate) fn key_of(&self, root: &Document) -> StoreResult<Vec<Bson>> {
        let mut fields = Document::new();
        for (position, path) in self.paths.iter().enumerate() {
            if let Some(value) = Expr::Field(path.clone()).evaluate(root)? {
                fields.insert(format!("k{position}"), value);
            }
        }
        Ok(self.sort.sort_key(&fields))
    }

    pub(crate) fn compare(&self, left: &[Bson], right: &[Bson]) -> Ordering {
        self.sort.compare_keys(left, right)
    }
}

/// `$topN`/`$bottomN` (and `$top`/`$bottom`, n = 1): the outputs of the best `n` documents in
/// sort order. Ties keep the document seen first; a removable (sliding window) state keeps
/// every document and picks at the end, as mongod's removable window function does.
#[derive(Debug, Clone)]
pub(crate) struct TopBottom {
    bottom: bool,
    single: bool,
    n: usize,
    removable: bool,
    sort: Option<Arc<TopSort>>,
    items: Vec<(Vec<Bson>, Bson)>,
    bytes: usize,
    name: &'static str,
}

impl TopBottom {
    pub(super) fn new(accumulator: &Accumulator, n: usize, removable: bool) -> TopBottom {
        let name = match accumulator.kind {
            Kind::Top => "$top",
            Kind::Bottom => "$bottom",
            Kind::TopN => "$topN",
            _ => "$bottomN",
        };
        TopBottom {
            bottom: matches!(accumulator.kind, Kind::Bottom | Kind::BottomN),
            single: matches!(accumulator.kind, Kind::Top | Kind::Bottom),
            n,
            removable,
            sort: accumulator.top.clone(),
            items: Vec::new(),
            bytes: 0,
            name,
        }
    }

    pub(super) fn add(&mut self, key: Vec<Bson>, value: Option<Bson>) -> StoreResult<()> {
        let value = value.unwrap_or(Bson::Null);
        if !self.removable && self.items.len() >= self.n {
            let replace = if self.bottom {
                self.compare(&key, &self.items[0].0) == Ordering::Greater
            } else {
                let last = &self.items[self.items.len() - 1].0;
                self.compare(last, &key) == Ordering::Greater
            };
            if !replace {
                return Ok(());
            }
            let dropped = if self.bottom {
                self.items.remove(0)
            } else {
                self.items.pop().unwrap_or_default()
            };
            self.bytes = self
                .bytes
                .saturating_sub(entry_size(&dropped.0, &dropped.1));
        }
        self.bytes = charge(self.bytes, entry_size(&key, &value), self.name)?;
        if self.removable {
            // Sorted (stably, so ties keep their order) when the value is asked for.
            self.items.push((key, value));
            return Ok(());
        }
        // After any equal keys, so that ties stay in the order they were seen.
        let position = self
            .items
            .partition_point(|(other, _)| self.compare(other, &key) != Ordering::Greater);
        self.items.insert(position, (key, value));
        Ok(())
    }

    fn compare(&self, left: &[Bson], right: &[Bson]) -> Ordering {
        self.sort
            .as_ref()
            .map_or(Ordering::Equal, |sort| sort.compare(left, right))
    }

    pub(super) fn value(&self) -> Bson {
        let mut sorted;
        let items = if self.removable {
            sorted = self.items.clone();
            sorted.sort_by(|(a, _), (b, _)| self.compare(a, b));
            &sorted
        } else {
            &self.items
        };
        let count = self.n.min(items.len());
        let chosen = if self.bottom {
            &items[items.len() - count..]
        } else {
            &items[..count]
        };
        if self.single {
            return chosen
                .first()
                .map_or(Bson::Null, |(_, value)| value.clone());
        }
        Bson::Array(chosen.iter().map(|(_, value)| value.clone()).collect())
    }

    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }
}

fn entry_size(key: &[Bson], value: &Bson) -> usize {
    key.iter().map(value_size).sum::<usize>() + value_size(value)
}

/// `$minN`/`$maxN`: the `n` least (greatest) values, null and missing ignored; `$minN` lists
/// them ascending, `$maxN` descending.
#[derive(Debug, Clone)]
pub(crate) struct MinMaxN {
    max: bool,
    n: usize,
    removable: bool,
    /// Ascending (in arrival order while `removable`).
    items: Vec<Bson>,
    bytes: usize,
}

impl MinMaxN {
    pub(super) fn new(max: bool, n: usize, removable: bool) -> MinMaxN {
        MinMaxN {
            max,
            n,
            removable,
            items: Vec::new(),
            bytes: 0,
        }
    }

    pub(super) fn add(&mut self, value: Option<Bson>) -> StoreResult<()> {
        let Some(value) = value.filter(|value| !matches!(value, Bson::Null | Bson::Undefined))
        else {
            return Ok(());
        };
        if !self.removable && self.items.len() >= self.n {
            let dropped = if self.max {
                if compare_values(&self.items[0], &value) != Ordering::Less {
                    return Ok(());
                }
                self.items.remove(0)
            } else {
                let last = self.items.len() - 1;
                if compare_values(&self.items[last], &value) != Ordering::Greater {
                    return Ok(());
                }
                self.items.remove(last)
            };
            self.bytes = self.bytes.saturating_sub(value_size(&dropped));
        }
        let name = if self.max { "$maxN" } else { "$minN" };
        self.bytes = charge(self.bytes, value_size(&value), name)?;
        if self.removable {
            // Sorted when the value is asked for.
            self.items.push(value);
            return Ok(());
        }
        let position = self
            .items
            .partition_point(|other| compare_values(other, &value) != Ordering::Greater);
        self.items.insert(position, value);
        Ok(())
    }

    pub(super) fn value(&self) -> Bson {
        let mut sorted;
        let items = if self.removable {
            sorted = self.items.clone();
            sorted.sort_by(compare_values);
            &sorted
        } else {
            &self.items
        };
        let count = self.n.min(items.len());
        if self.max {
            Bson::Array(items.iter().rev().take(count).cloned().collect())
        } else {
            Bson::Array(items.iter().take(count).cloned().collect())
        }
    }

    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }
}
