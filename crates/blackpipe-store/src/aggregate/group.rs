//! The `$group` stage. Its accumulators live in `accumulator.rs` and the files beside it,
//! shared with `$setWindowFields`.

use std::collections::HashMap;
use std::sync::Arc;

use bson::{Bson, Document};

use super::acc_state::State;
use super::accumulator::Accumulator;
use crate::code;
use crate::errors::{CommandError, StoreResult};
use crate::expr::Expr;
use crate::key::encode_key;
use crate::value_order::value_size;

/// mongod's `internalDocumentSourceGroupMaxMemoryBytes` (100 MiB): what `$group` may hold
/// without `allowDiskUse`.
const MAX_GROUP_BYTES: usize = 100 * 1024 * 1024;

/// What `$group` may hold when it may spill: mongod would write to disk past
/// [`MAX_GROUP_BYTES`]; blackpipe holds everything in memory, so it stops at the size of a
/// stage's output (the groups become that output).
const MAX_GROUP_BYTES_SPILLING: usize = 256 * 1024 * 1024;

/// A parsed `$group` specification.
#[derive(Debug, Clone)]
pub(crate) struct GroupSpec {
    id: Expr,
    fields: Vec<(String, Accumulator)>,
    /// Group keys that compare equal under it are one group (the first key seen names it).
    collation: Option<crate::collation::Collation>,
    /// The command's `allowDiskUse` (mongod 8.0 allows it unless the command says false).
    allow_disk_use: bool,
}

impl GroupSpec {
    pub(crate) fn parse(spec: &Bson) -> StoreResult<GroupSpec> {
        let Bson::Document(spec) = spec else {
            return Err(CommandError::new(
                code::GROUP_SPEC_NOT_OBJECT,
                "a group's fields must be specified in an object",
            ));
        };
        let mut id = None;
        let mut fields = Vec::new();
        for (name, value) in spec {
            if name == "_id" {
                id = Some(Expr::parse(value)?);
                continue;
            }
            fields.push((name.clone(), parse_field(name, value)?));
        }
        let id = id.ok_or_else(|| {
            CommandError::new(
                code::GROUP_WITHOUT_ID,
                "a group specification must include an _id",
            )
        })?;
        Ok(GroupSpec {
            id,
            fields,
            collation: None,
            allow_disk_use: true,
        })
    }

    /// The specification grouping string keys under `collation`.
    pub(crate) fn with_collation(
        mut self,
        collation: Option<&crate::collation::Collation>,
    ) -> GroupSpec {
        self.collation = collation.cloned();
        self.fields = self
            .fields
            .into_iter()
            .map(|(name, accumulator)| (name, accumulator.with_collation(collation)))
            .collect();
        self
    }

    /// The specification under the command's `allowDiskUse`.
    pub(crate) fn with_allow_disk_use(mut self, allow: bool) -> GroupSpec {
        self.allow_disk_use = allow;
        self
    }

    /// Groups the input, emitting groups in order of first appearance.
    pub(crate) fn run(&self, input: Vec<Arc<Document>>) -> StoreResult<Vec<Arc<Document>>> {
        let mut positions: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut groups: Vec<(Bson, Vec<State>)> = Vec::new();
        let mut memory = MemoryUse::new(self.allow_disk_use);
        for document in &input {
            let id = self.id.evaluate(document)?.unwrap_or(Bson::Null);
            let key = match &self.collation {
                Some(collation) => encode_key(&collation.fold(&id)),
                None => encode_key(&id),
            };
            let position = match positions.get(&key) {
                Some(position) => *position,
                None => {
                    let states = self.start_group(&id)?;
                    memory.add(key.len() + value_size(&id))?;
                    memory.add(states.iter().map(State::bytes).sum())?;
                    groups.push((id, states));
                    positions.insert(key, groups.len() - 1);
                    groups.len() - 1
                }
            };
            let states = &mut groups[position].1;
            for ((_, accumulator), state) in self.fields.iter().zip(states.iter_mut()) {
                let before = state.bytes();
                state.add(accumulator.item(document)?)?;
                memory.grow(before, state.bytes())?;
            }
        }
        Ok(groups
            .into_iter()
            .map(|(id, states)| {
                let mut out = Document::new();
                out.insert("_id", id);
                for ((name, _), state) in self.fields.iter().zip(states) {
                    out.insert(name.clone(), state.value());
                }
                Arc::new(out)
            })
            .collect())
    }

    /// The states of a new group. `n` of the `n` accumulators is evaluated against the group
    /// key when it is a document (so `n` may depend on it), else against an empty document.
    fn start_group(&self, id: &Bson) -> StoreResult<Vec<State>> {
        let empty = Document::new();
        let n_root = match id {
            Bson::Document(key) => key,
            _ => &empty,
        };
        self.fields
            .iter()
            .map(|(_, accumulator)| accumulator.start(n_root, false))
            .collect()
    }
}

/// Parses one output field, with mongod's checks in mongod's order.
fn parse_field(name: &str, value: &Bson) -> StoreResult<Accumulator> {
    let spec = match value {
        Bson::Document(spec) if spec.keys().next().is_some_and(|key| key.starts_with('$')) => spec,
        _ => {
            return Err(CommandError::new(
                code::GROUP_FIELD_NOT_ACCUMULATOR,
                format!("The field '{name}' must be an accumulator object"),
            ));
        }
    };
    if name.contains('.') {
        return Err(CommandError::new(
            code::GROUP_FIELD_WITH_DOT,
            format!("The field name '{name}' cannot contain '.'"),
        ));
    }
    if name.starts_with('$') {
        return Err(CommandError::new(
            code::GROUP_FIELD_OPERATOR_NAME,
            format!("The field name '{name}' cannot be an operator name"),
        ));
    }
    let (operator, argument) = match spec.iter().next() {
        Some(first) if spec.len() == 1 => first,
        _ => {
            return Err(CommandError::new(
                code::GROUP_FIELD_ACCUMULATOR_COUNT,
                format!("The field '{name}' must specify one accumulator"),
            ));
        }
    };
    if matches!(argument, Bson::Array(_)) {
        return Err(CommandError::new(
            code::ACCUMULATOR_UNARY,
            format!("The {operator} accumulator is a unary operator"),
        ));
    }
    Accumulator::parse_group(operator, argument, spec)?.ok_or_else(|| {
        CommandError::new(
            code::UNKNOWN_GROUP_OPERATOR,
            format!("unknown group operator '{operator}'"),
        )
    })
}

/// The memory a stage holds, against mongod's limit (or blackpipe's, where mongod would spill).
pub(super) struct MemoryUse {
    used: usize,
    allow_disk_use: bool,
}

impl MemoryUse {
    pub(super) fn new(allow_disk_use: bool) -> MemoryUse {
        MemoryUse {
            used: 0,
            allow_disk_use,
        }
    }

    pub(super) fn add(&mut self, bytes: usize) -> StoreResult<()> {
        self.used = self.used.saturating_add(bytes);
        self.check()
    }

    /// Accounts for a state that went from `before` to `after` bytes.
    pub(super) fn grow(&mut self, before: usize, after: usize) -> StoreResult<()> {
        self.used = self.used.saturating_sub(before).saturating_add(after);
        self.check()
    }

    fn check(&self) -> StoreResult<()> {
        if !self.allow_disk_use && self.used > MAX_GROUP_BYTES {
            return Err(CommandError::new(
                code::QUERY_EXCEEDED_MEMORY_LIMIT_NO_DISK_USE_ALLOWED,
                "Exceeded memory limit for $group, but didn't allow external sort. Pass \
                 allowDiskUse:true to opt in.",
            ));
        }
        if self.used > MAX_GROUP_BYTES_SPILLING {
            return Err(CommandError::new(
                code::EXCEEDED_MEMORY_LIMIT,
                format!(
                    "$group holds more than {MAX_GROUP_BYTES_SPILLING} bytes; mongod would spill \
                     it to disk, blackpipe holds every group in memory and stops there"
                ),
            ));
        }
        Ok(())
    }
}
