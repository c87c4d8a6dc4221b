//! Running `$densify` over its sorted input: a port of mongod's state machine
//! (`DocumentSourceInternalDensify`), so that the generated documents, their order and their
//! values' types (repeated `$add` of the step, repeated `$dateAdd`) are mongod's. mongod hands
//! out one document at a time; blackpipe runs each "generator" to its end at once, which gives
//! the same sequence since a generator consumes no input.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::OutputBudget;
use super::densify::{Bounds, Densify, MAX_GENERATED_DOCUMENTS, apply};
use crate::code;
use crate::errors::{CommandError, StoreResult};
use crate::expr::Expr;
use crate::key::encode_key;
use crate::path::set_path_creating;
use crate::value_order::{Number, compare_values};

/// Runs the stage over `documents`, already in the stage's sort order.
pub(super) fn run(
    spec: &Densify,
    documents: Vec<Arc<Document>>,
    budget: &mut OutputBudget,
) -> StoreResult<Vec<Arc<Document>>> {
    let mut machine = Machine {
        spec,
        budget,
        partition_expr: partition_expr(spec)?,
        out: Vec::with_capacity(documents.len()),
        generated: 0,
        phase: Phase::Uninitialized,
        current: None,
        global_min: None,
        global_max: None,
        partitioned: false,
        table: Vec::new(),
        index: HashMap::new(),
    };
    for document in documents {
        machine.next(document)?;
    }
    machine.finish()?;
    Ok(machine.out)
}

/// mongod's `_partitionExpr`: `{p: "$p", ...}` with dotted paths nested, or `None` without
/// partitions.
fn partition_expr(spec: &Densify) -> StoreResult<Option<Expr>> {
    if spec.partitions.is_empty() {
        return Ok(None);
    }
    let mut object = Document::new();
    for parts in &spec.partitions {
        set_path_creating(
            &mut object,
            parts,
            Bson::String(format!("${}", parts.join("."))),
        );
    }
    Expr::parse(&Bson::Document(object)).map(Some)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No document seen yet, or (explicit bounds) the last one was below the range.
    Uninitialized,
    NeedGenerator,
    Done,
}

/// Where a value lies relative to explicit bounds `[lower, upper)`.
enum Position {
    Below,
    AtLower,
    Inside,
    Above,
}

struct Machine<'a, 'b> {
    spec: &'a Densify,
    budget: &'b mut OutputBudget,
    partition_expr: Option<Expr>,
    out: Vec<Arc<Document>>,
    generated: usize,
    phase: Phase,
    /// The last value seen or generated on the step (mongod's `_current`).
    current: Option<Bson>,
    global_min: Option<Bson>,
    global_max: Option<Bson>,
    /// Whether the partition table is in use (set by the first document with a value).
    partitioned: bool,
    /// Each partition's last value, in the order partitions were first seen.
    table: Vec<(Document, Bson)>,
    index: HashMap<Vec<u8>, usize>,
}

impl Machine<'_, '_> {
    fn next(&mut self, document: Arc<Document>) -> StoreResult<()> {
        if self.phase == Phase::Done {
            return self.emit(document);
        }
        let Some(value) = self.value_of(&document)? else {
            // No value (missing or null): the document passes unchanged.
            return self.emit(document);
        };
        if self.phase == Phase::Uninitialized {
            return self.first(document, value);
        }
        match &self.spec.bounds {
            Bounds::Full => {
                if self.partitioned {
                    self.global_max = Some(value.clone());
                    let partition = self.partition_of(&document)?;
                    match self.last_of(&partition) {
                        Some(last) => self.current = Some(last),
                        None => {
                            // A new partition is densified from the global minimum.
                            let min = self.global_min.clone().unwrap_or_else(|| value.clone());
                            self.current = Some(self.spec.step.decrement(&min)?);
                            self.set_partition(partition, value.clone());
                        }
                    }
                }
                self.need_generator(document, value)
            }
            Bounds::Partition => {
                let partition = self.partition_of(&document)?;
                match self.last_of(&partition) {
                    Some(last) => {
                        self.current = Some(last);
                        self.need_generator(document, value)
                    }
                    None => {
                        self.set_partition(partition, value);
                        self.emit(document)
                    }
                }
            }
            Bounds::Explicit(..) => {
                if self.partitioned {
                    let partition = self.partition_of(&document)?;
                    match self.last_of(&partition) {
                        Some(last) => self.current = Some(last),
                        None => {
                            self.set_partition(partition, value.clone());
                            self.current = None;
                            return self.first_explicit(document, value);
                        }
                    }
                }
                self.need_generator_explicit(document, value)
            }
        }
    }

    /// The first document with a value (or, for explicit bounds, the first after values below
    /// the range).
    fn first(&mut self, document: Arc<Document>, value: Bson) -> StoreResult<()> {
        if self.partition_expr.is_some() && !self.partitioned {
            self.partitioned = true;
            let partition = self.partition_of(&document)?;
            self.set_partition(partition, value.clone());
        }
        match &self.spec.bounds {
            Bounds::Full => {
                self.current = Some(value.clone());
                self.global_min = Some(value.clone());
                self.global_max = Some(value);
                self.phase = Phase::NeedGenerator;
                self.emit(document)
            }
            Bounds::Partition => {
                self.phase = Phase::NeedGenerator;
                self.emit(document)
            }
            Bounds::Explicit(..) => self.first_explicit(document, value),
        }
    }

    /// mongod's `processFirstDocForExplicitRange`.
    fn first_explicit(&mut self, document: Arc<Document>, value: Bson) -> StoreResult<()> {
        let (lower, _) = self.explicit()?;
        if self.current.is_none() {
            self.current = Some(self.spec.step.decrement(&lower)?);
        }
        match self.position(&value)? {
            Position::Inside | Position::Above => self.above_lower(document, value),
            Position::AtLower => {
                self.phase = Phase::NeedGenerator;
                self.current = Some(value);
                self.emit(document)
            }
            Position::Below => {
                self.phase = Phase::Uninitialized;
                self.emit(document)
            }
        }
    }

    /// mongod's `handleNeedGen` ("full" and "partition" bounds).
    fn need_generator(&mut self, document: Arc<Document>, value: Bson) -> StoreResult<()> {
        let next = self.spec.step.increment(&self.current()?)?;
        if compare_values(&value, &next) == Ordering::Equal {
            self.set_partition_of(&document, value.clone())?;
            self.current = Some(value.clone());
        }
        if compare_values(&value, &next) != Ordering::Greater {
            return self.emit(document);
        }
        let include = self.include_of(&document)?;
        let mut generated = next;
        loop {
            self.emit_generated(include.as_ref(), &generated)?;
            self.current = Some(generated.clone());
            self.set_included(include.as_ref(), generated.clone());
            let following = self.spec.step.increment(&generated)?;
            if compare_values(&value, &following) != Ordering::Greater {
                break;
            }
            generated = following;
        }
        // The document itself ends the generator; it is the new current value if on the step.
        if compare_values(&value, &self.spec.step.increment(&self.current()?)?) == Ordering::Equal {
            self.current = Some(value.clone());
            self.set_partition_of(&document, value)?;
        }
        self.phase = Phase::NeedGenerator;
        self.emit(document)
    }

    /// mongod's `handleNeedGenExplicit`.
    fn need_generator_explicit(&mut self, document: Arc<Document>, value: Bson) -> StoreResult<()> {
        let (_, upper) = self.explicit()?;
        match self.position(&value)? {
            Position::Inside => {
                let next = self.spec.step.increment(&self.current()?)?;
                match compare_values(&value, &next) {
                    Ordering::Equal => {
                        self.current = Some(value.clone());
                        self.set_partition_of(&document, value)?;
                        self.emit(document)
                    }
                    Ordering::Less => self.emit(document),
                    Ordering::Greater => self.above_lower(document, value),
                }
            }
            Position::Above => {
                let next = self.spec.step.increment(&self.current()?)?;
                if compare_values(&next, &upper) == Ordering::Less {
                    return self.above_lower(document, value);
                }
                self.current = Some(next);
                self.set_partition_of(&document, value)?;
                if !self.partitioned {
                    self.phase = Phase::Done;
                }
                self.emit(document)
            }
            Position::AtLower => {
                self.set_partition_of(&document, value.clone())?;
                self.current = Some(value);
                self.emit(document)
            }
            Position::Below => {
                self.set_partition_of(&document, value)?;
                self.phase = Phase::Uninitialized;
                self.emit(document)
            }
        }
    }

    /// mongod's `processDocAboveExplicitMinBound`: generates from the step after the current
    /// value up to the document (or the upper bound), then passes the document.
    fn above_lower(&mut self, document: Arc<Document>, value: Bson) -> StoreResult<()> {
        let (_, upper) = self.explicit()?;
        let lower = self.spec.step.increment(&self.current()?)?;
        if compare_values(&value, &lower) == Ordering::Equal {
            self.set_partition_of(&document, value)?;
            self.current = Some(lower);
            return self.emit(document);
        }
        let end = if compare_values(&value, &upper) == Ordering::Less {
            value.clone()
        } else {
            upper.clone()
        };
        let include = self.include_of(&document)?;
        let mut generated = lower;
        let mut first = true;
        loop {
            self.emit_generated(include.as_ref(), &generated)?;
            if first || self.is_on_step(&generated, &self.current()?)? {
                self.current = Some(generated.clone());
                self.set_included(include.as_ref(), generated.clone());
            }
            first = false;
            let following = self.spec.step.increment(&generated)?;
            if compare_values(&end, &following) != Ordering::Greater {
                break;
            }
            generated = following;
        }
        if self.is_on_step(&value, &self.current()?)? {
            self.current = Some(value.clone());
            self.set_partition_of(&document, value)?;
        }
        self.emit(document)?;
        let past_upper = compare_values(&self.current()?, &upper) != Ordering::Less;
        self.phase = if past_upper && !self.partitioned {
            Phase::Done
        } else {
            Phase::NeedGenerator
        };
        Ok(())
    }

    /// The end of the input: densifies what remains of the range, per partition.
    fn finish(&mut self) -> StoreResult<()> {
        if self.phase == Phase::Done {
            return Ok(());
        }
        match self.spec.bounds.clone() {
            Bounds::Partition => Ok(()),
            Bounds::Full if !self.partitioned => Ok(()),
            Bounds::Full => {
                let (Some(max), Some(current)) = (self.global_max.clone(), self.current.clone())
                else {
                    return Ok(());
                };
                // The global maximum is included when it lies on the step.
                let end = if self.is_on_step(&max, &current)? {
                    self.spec.step.increment(&max)?
                } else {
                    max
                };
                self.finish_partitions(&end, None)
            }
            Bounds::Explicit(bounds) if self.partitioned => {
                let (lower, upper) = *bounds;
                self.finish_partitions(&upper, Some(&lower))
            }
            Bounds::Explicit(bounds) => {
                let (lower, upper) = *bounds;
                let start = match self.current.clone() {
                    None => lower,
                    Some(current) => {
                        let next = self.spec.step.increment(&current)?;
                        if compare_values(&next, &upper) != Ordering::Less {
                            return Ok(());
                        }
                        next
                    }
                };
                self.generate(None, start, &upper)
            }
        }
    }

    /// mongod's `finishDensifyingPartitionedInputHelper`: each partition from its last value
    /// (or `min`) up to `end`.
    fn finish_partitions(&mut self, end: &Bson, min: Option<&Bson>) -> StoreResult<()> {
        for (partition, last) in std::mem::take(&mut self.table) {
            let mut start = self.spec.step.increment(&last)?;
            if compare_values(&start, end) != Ordering::Less {
                continue;
            }
            if let Some(min) = min.filter(|min| compare_values(&start, min) == Ordering::Less) {
                start = min.clone();
            }
            self.check_include(&partition)?;
            self.generate(Some(&partition), start, end)?;
        }
        self.index.clear();
        Ok(())
    }

    /// A generator without a final document: `start`, then steps while under `end` (`start`
    /// always, as mongod's generator).
    fn generate(&mut self, include: Option<&Document>, start: Bson, end: &Bson) -> StoreResult<()> {
        let mut generated = start;
        loop {
            self.emit_generated(include, &generated)?;
            let following = self.spec.step.increment(&generated)?;
            if compare_values(end, &following) != Ordering::Greater {
                return Ok(());
            }
            generated = following;
        }
    }

    fn emit(&mut self, document: Arc<Document>) -> StoreResult<()> {
        self.out.push(document);
        Ok(())
    }

    /// Adds a generated document: the partition's fields and the value.
    fn emit_generated(&mut self, include: Option<&Document>, value: &Bson) -> StoreResult<()> {
        self.generated += 1;
        if self.generated > MAX_GENERATED_DOCUMENTS {
            return Err(CommandError::new(
                code::DENSIFY_TOO_MANY_DOCUMENTS,
                format!(
                    "Generated {} documents in $densify, which is over the limit of {MAX_GENERATED_DOCUMENTS}. Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more generated documents",
                    self.generated
                ),
            ));
        }
        let mut document = include.cloned().unwrap_or_default();
        set_path_creating(&mut document, &self.spec.field, value.clone());
        let admitted = self.budget.admit(document)?;
        self.out.push(admitted);
        Ok(())
    }

    fn current(&self) -> StoreResult<Bson> {
        self.current.clone().ok_or_else(|| {
            CommandError::new(code::INTERNAL_ERROR, "$densify lost its current value")
        })
    }

    fn explicit(&self) -> StoreResult<(Bson, Bson)> {
        match &self.spec.bounds {
            Bounds::Explicit(bounds) => Ok((**bounds).clone()),
            _ => Err(CommandError::new(
                code::INTERNAL_ERROR,
                "$densify expected explicit bounds",
            )),
        }
    }

    fn position(&self, value: &Bson) -> StoreResult<Position> {
        let (lower, upper) = self.explicit()?;
        Ok(match compare_values(value, &lower) {
            Ordering::Less => Position::Below,
            Ordering::Equal => Position::AtLower,
            Ordering::Greater if compare_values(value, &upper) == Ordering::Less => {
                Position::Inside
            }
            Ordering::Greater => Position::Above,
        })
    }

    /// The densified field's value: `None` when missing or null; an error for a value neither
    /// a number nor a date, or not the range's kind.
    fn value_of(&self, document: &Document) -> StoreResult<Option<Bson>> {
        let mut value = None;
        let mut current = Some(document);
        for part in &self.spec.field {
            value = current.and_then(|document| document.get(part));
            current = match value {
                Some(Bson::Document(inner)) => Some(inner),
                _ => None,
            };
        }
        let value = match value {
            None | Some(Bson::Null | Bson::Undefined) => return Ok(None),
            Some(value) => value,
        };
        let is_date = matches!(value, Bson::DateTime(_));
        if !is_date && Number::of(value).is_none() {
            return Err(CommandError::new(
                code::DENSIFY_FIELD_TYPE,
                "Densify field type must be numeric or a date",
            ));
        }
        match (self.spec.step.unit.is_some(), is_date) {
            (true, false) => Err(CommandError::new(
                code::DENSIFY_VALUE_KIND,
                "Encountered numeric densify value in collection when step has a date unit.",
            )),
            (false, true) => Err(CommandError::new(
                code::DENSIFY_VALUE_KIND,
                "Encountered date densify value in collection when step does not have a date unit.",
            )),
            _ => Ok(Some(value.clone())),
        }
    }

    fn partition_of(&self, document: &Document) -> StoreResult<Document> {
        let Some(expr) = &self.partition_expr else {
            return Ok(Document::new());
        };
        match expr.evaluate(document)? {
            Some(Bson::Document(partition)) => Ok(partition),
            _ => Ok(Document::new()),
        }
    }

    fn key(&self, partition: &Document) -> Vec<u8> {
        let partition = Bson::Document(partition.clone());
        match &self.spec.collation {
            Some(collation) => encode_key(&collation.fold(&partition)),
            None => encode_key(&partition),
        }
    }

    fn last_of(&self, partition: &Document) -> Option<Bson> {
        let position = *self.index.get(&self.key(partition))?;
        self.table.get(position).map(|(_, last)| last.clone())
    }

    /// mongod's `setPartitionValue` for a partition (a no-op without partitions).
    fn set_partition(&mut self, partition: Document, value: Bson) {
        if !self.partitioned {
            return;
        }
        let key = self.key(&partition);
        match self.index.get(&key) {
            Some(position) => self.table[*position].1 = value,
            None => {
                self.index.insert(key, self.table.len());
                self.table.push((partition, value));
            }
        }
    }

    fn set_partition_of(&mut self, document: &Document, value: Bson) -> StoreResult<()> {
        if self.partitioned {
            let partition = self.partition_of(document)?;
            self.set_partition(partition, value);
        }
        Ok(())
    }

    fn set_included(&mut self, include: Option<&Document>, value: Bson) {
        if let Some(partition) = include {
            self.set_partition(partition.clone(), value);
        }
    }

    /// The fields a generated document copies from `document`: its partition's.
    fn include_of(&self, document: &Document) -> StoreResult<Option<Document>> {
        if !self.partitioned {
            return Ok(None);
        }
        let partition = self.partition_of(document)?;
        self.check_include(&partition)?;
        Ok(Some(partition))
    }

    /// mongod's checks that the partition's fields leave room for the densified field.
    fn check_include(&self, include: &Document) -> StoreResult<()> {
        let mut current = include;
        let last = self.spec.field.len().saturating_sub(1);
        for (position, part) in self.spec.field.iter().enumerate() {
            match current.get(part) {
                Some(Bson::Array(_)) => {
                    return Err(CommandError::new(
                        code::DENSIFY_THROUGH_ARRAY,
                        "$densify cannot generate fields nested inside arrays",
                    ));
                }
                Some(Bson::Document(inner)) if position < last => current = inner,
                Some(_) if position == last => {
                    return Err(CommandError::new(
                        code::DENSIFY_PARTITION_IS_FIELD,
                        "DocGenerator cannot include field that is being densified",
                    ));
                }
                Some(_) => {
                    return Err(CommandError::new(
                        code::DENSIFY_THROUGH_SCALAR,
                        "$densify cannot overwrite non-object values with objects",
                    ));
                }
                None => break,
            }
        }
        Ok(())
    }

    /// mongod's `isOnStepRelativeTo`: whether `value` is a whole number of steps from `base`.
    fn is_on_step(&self, value: &Bson, base: &Bson) -> StoreResult<bool> {
        let step = &self.spec.step;
        let Some(unit) = &step.unit else {
            let difference = super::single::arith(crate::expr::Operator::Subtract, value, base)?;
            let remainder =
                super::single::arith(crate::expr::Operator::Mod, &difference, &step.value)?;
            return Ok(Number::of(&remainder).is_some_and(|number| number.as_f64() == 0.0));
        };
        let (Bson::DateTime(value), Bson::DateTime(base)) = (value, base) else {
            return Ok(false);
        };
        if matches!(unit.as_str(), "month" | "quarter" | "year") {
            return self.months_on_step(*value, *base);
        }
        let epoch = Bson::DateTime(bson::DateTime::from_millis(0));
        let Bson::DateTime(one_step) = step.increment(&epoch)? else {
            return Ok(false);
        };
        let length = i128::from(one_step.timestamp_millis());
        let difference = i128::from(value.timestamp_millis()) - i128::from(base.timestamp_millis());
        Ok(length != 0 && difference % length == 0)
    }

    /// Whether stepping `base` by whole months (as mongod does, one `$dateAdd` at a time)
    /// lands on `value`. Far values are reached by one jump once the day of the month can no
    /// longer be clamped, so that the work stays small.
    fn months_on_step(&self, value: bson::DateTime, base: bson::DateTime) -> StoreResult<bool> {
        const STEPS_BEFORE_JUMP: usize = 64;
        let step = &self.spec.step;
        let target = Bson::DateTime(value);
        let mut stepped = Bson::DateTime(base);
        let mut steps = 0;
        let mut jumped = false;
        while compare_values(&stepped, &target) == Ordering::Less {
            if steps == STEPS_BEFORE_JUMP && !jumped {
                jumped = true;
                stepped = self.jump_months(&stepped, &target)?;
                continue;
            }
            stepped = step.increment(&stepped)?;
            steps += 1;
        }
        Ok(compare_values(&stepped, &target) == Ordering::Equal)
    }

    /// `stepped` advanced by as many whole steps as keep it a few steps under `target`.
    fn jump_months(&self, stepped: &Bson, target: &Bson) -> StoreResult<Bson> {
        let step = &self.spec.step;
        let unit = step.unit.as_deref().unwrap_or("month");
        let months_per_unit = match unit {
            "quarter" => 3,
            "year" => 12,
            _ => 1,
        };
        let amount = crate::integer::integral(&step.value).unwrap_or(1).max(1);
        let diff = Expr::parse(&Bson::Document(doc! {
            "$dateDiff": { "startDate": "$v", "endDate": { "$literal": target.clone() }, "unit": "month" }
        }))?;
        let months = match apply(&diff, stepped)? {
            Bson::Int64(months) => months,
            _ => return Ok(stepped.clone()),
        };
        let whole_steps = (months - 1) / amount.saturating_mul(months_per_unit) - 1;
        if whole_steps <= 0 {
            return Ok(stepped.clone());
        }
        let Some(total) = whole_steps.checked_mul(amount) else {
            return Ok(stepped.clone());
        };
        let jump = Expr::parse(&Bson::Document(doc! {
            "$dateAdd": { "startDate": "$v", "unit": unit, "amount": total }
        }))?;
        apply(&jump, stepped)
    }
}
