//! `$collStats`: the statistics stage an aggregate on a collection may start with, as mongod 8.0
//! parses it, with the figures blackpipe can give honestly.
//!
//! blackpipe holds documents in memory, not in a storage engine: `storageStats` reports their
//! BSON sizes (`storageSize` is `size`, `freeStorageSize` is 0, and there is no `wiredTiger`
//! section), and an index's size is the bytes of the keys it holds plus 8 per entry for the
//! record id. `latencyStats` reports the latencies the deployment recorded per namespace
//! ([`crate::Store::record_latency`]); `queryExecStats` needs plan cache counters blackpipe
//! does not keep: it is refused, never answered with made-up numbers.

use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::Exec;
use crate::catalog::read;
use crate::code;
use crate::collection::Collection;
use crate::errors::{CommandError, StoreResult, type_name};

/// What a `$collStats` stage asks for.
#[derive(Debug, Default)]
pub(super) struct CollStatsSpec {
    /// `storageStats`, with its `scale` (bytes per reported unit).
    storage_scale: Option<i64>,
    /// `count`.
    count: bool,
    /// `latencyStats`, with whether it asked for `histograms`.
    latency_histograms: Option<bool>,
}

/// The options of `$collStats` when it is the pipeline's first stage.
pub(super) fn first_stage(stages: &[Bson]) -> Option<&Bson> {
    match stages.first() {
        Some(Bson::Document(stage)) if stage.len() == 1 => stage.get("$collStats"),
        _ => None,
    }
}

/// Refuses `$collStats` anywhere but first, as mongod does (40602).
pub(super) fn check_not_later(stages: &[Bson]) -> StoreResult<()> {
    let later = stages
        .iter()
        .skip(1)
        .any(|stage| matches!(stage, Bson::Document(stage) if stage.contains_key("$collStats")));
    if later {
        return Err(CommandError::new(
            code::FIRST_STAGE_ONLY,
            "$collStats is only valid as the first stage in a pipeline",
        ));
    }
    Ok(())
}

impl CollStatsSpec {
    /// Parses the stage's options.
    ///
    /// # Errors
    ///
    /// As mongod's IDL parser: TypeMismatch (14) for a value of the wrong type,
    /// 40415 for an unknown field, 51024 for a `scale` below 1; BadValue (2) for the sections
    /// blackpipe does not model.
    pub(super) fn parse(options: &Bson) -> StoreResult<CollStatsSpec> {
        let options = object(options, "$collStats")?;
        let mut spec = CollStatsSpec::default();
        for (key, value) in options {
            match key.as_str() {
                "storageStats" => spec.storage_scale = Some(storage_scale(value)?),
                "count" => {
                    object(value, "$collStats.count")?;
                    spec.count = true;
                }
                "latencyStats" => spec.latency_histograms = Some(latency_histograms(value)?),
                "queryExecStats" => {
                    return Err(CommandError::bad_value(format!(
                        "blackpipe does not keep operation counters: $collStats.{key} is not \
                         supported (storageStats and count are)"
                    )));
                }
                _ => return Err(unknown_field(&format!("$collStats.{key}"))),
            }
        }
        Ok(spec)
    }

    /// Runs the stage on `collection` of the command's database: the one document it outputs.
    ///
    /// # Errors
    ///
    /// OperationNotSupportedInTransaction (263) in a transaction; NamespaceNotFound (26) when
    /// `storageStats` or `count` is asked of a collection that does not exist.
    pub(super) fn run(
        &self,
        exec: &mut Exec<'_>,
        collection: &str,
    ) -> StoreResult<Vec<Arc<Document>>> {
        if exec.txn.is_some() {
            return Err(CommandError::new(
                code::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
                "Operation not permitted in transaction :: caused by :: $collStats",
            ));
        }
        let ns = exec.ns(collection);
        let mut output = doc! { "ns": &ns };
        if let Some(host) = exec.host {
            output.insert("host", host);
        }
        output.insert("localTime", exec.now);
        if let Some(histograms) = self.latency_histograms {
            output.insert("latencyStats", exec.store.latency_stats(&ns, histograms));
        }
        if self.storage_scale.is_some() || self.count {
            let handle = exec.collection(collection)?;
            let handle = handle.ok_or_else(|| self.not_found(&ns))?;
            let collection = read(&handle);
            if let Some(scale) = self.storage_scale {
                output.insert("storageStats", storage_stats(&collection, scale));
            }
            if self.count {
                output.insert("count", number(collection.len()));
            }
        }
        Ok(vec![Arc::new(output)])
    }

    fn not_found(&self, ns: &str) -> CommandError {
        let section = if self.storage_scale.is_some() {
            "storageStats"
        } else {
            "count"
        };
        CommandError::new(
            code::NAMESPACE_NOT_FOUND,
            format!(
                "Unable to retrieve {section} in $collStats stage :: caused by :: Collection \
                 [{ns}] not found."
            ),
        )
    }
}

/// `latencyStats`' options: whether it asks for `histograms`.
fn latency_histograms(value: &Bson) -> StoreResult<bool> {
    let options = object(value, "$collStats.latencyStats")?;
    let mut histograms = false;
    for (key, value) in options {
        match (key.as_str(), value) {
            ("histograms", Bson::Boolean(on)) => histograms = *on,
            ("histograms", other) => {
                return Err(wrong_type(
                    "$collStats.latencyStats.histograms",
                    other,
                    "bool",
                ));
            }
            _ => return Err(unknown_field(&format!("$collStats.latencyStats.{key}"))),
        }
    }
    Ok(histograms)
}

/// `storageStats`' options: `scale` (at least 1) and the flags mongod takes.
fn storage_scale(value: &Bson) -> StoreResult<i64> {
    let options = object(value, "$collStats.storageStats")?;
    let mut scale = 1;
    for (key, value) in options {
        match key.as_str() {
            "scale" => scale = scale_of(value)?,
            "verbose" | "waitForLock" | "numericOnly" => {
                if !matches!(value, Bson::Boolean(_)) {
                    return Err(wrong_type(
                        &format!("$collStats.storageStats.{key}"),
                        value,
                        "bool",
                    ));
                }
            }
            _ => return Err(unknown_field(&format!("$collStats.storageStats.{key}"))),
        }
    }
    Ok(scale)
}

fn scale_of(value: &Bson) -> StoreResult<i64> {
    let scale = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        // mongod's safeInt64 truncates a double.
        Bson::Double(n) if n.is_finite() => *n as i64,
        other => return Err(wrong_type("scale", other, "int")),
    };
    if scale < 1 {
        return Err(CommandError::new(
            code::NON_NEGATIVE,
            format!("BSON field 'scale' value must be >= 1, actual value '{scale}'"),
        ));
    }
    Ok(scale)
}

/// mongod's `storageStats` section, in its field order, sizes divided by `scale`.
fn storage_stats(collection: &Collection, scale: i64) -> Document {
    let scaled = |bytes: usize| number(bytes / usize::try_from(scale).unwrap_or(usize::MAX));
    let size = collection.data_size();
    let count = collection.len();
    let index_sizes = collection.index_sizes();
    let total_index_size: usize = index_sizes.iter().map(|(_, bytes)| bytes).sum();
    let mut stats = doc! { "size": scaled(size), "count": number(count) };
    // Only with documents, and not scaled, as in mongod.
    if let Some(average) = size.checked_div(count) {
        stats.insert("avgObjSize", number(average));
    }
    stats.insert("numOrphanDocs", 0_i32);
    stats.insert("storageSize", scaled(size));
    stats.insert("freeStorageSize", 0_i32);
    let capped = collection.capped_limits();
    stats.insert("capped", capped.is_some());
    if let Some(limits) = capped {
        if let Some(max) = limits.max_documents {
            stats.insert("max", number(max));
        }
        stats.insert("maxSize", scaled(limits.max_bytes));
    }
    stats.insert("nindexes", number(index_sizes.len()));
    stats.insert("indexBuilds", Bson::Array(Vec::new()));
    stats.insert("totalIndexSize", scaled(total_index_size));
    stats.insert("totalSize", scaled(size + total_index_size));
    let sizes: Document = index_sizes
        .into_iter()
        .map(|(name, bytes)| (name, scaled(bytes)))
        .collect();
    stats.insert("indexSizes", sizes);
    stats.insert(
        "scaleFactor",
        number(usize::try_from(scale).unwrap_or(usize::MAX)),
    );
    stats
}

/// A count or size as mongod appends it: an int when it fits, else a long.
fn number(value: usize) -> Bson {
    match i32::try_from(value) {
        Ok(small) => Bson::Int32(small),
        Err(_) => Bson::Int64(i64::try_from(value).unwrap_or(i64::MAX)),
    }
}

fn object<'v>(value: &'v Bson, field: &str) -> StoreResult<&'v Document> {
    match value {
        Bson::Document(document) => Ok(document),
        other => Err(wrong_type(field, other, "object")),
    }
}

fn wrong_type(field: &str, value: &Bson, expected: &str) -> CommandError {
    CommandError::type_mismatch(format!(
        "BSON field '{field}' is the wrong type '{}', expected type '{expected}'",
        type_name(value)
    ))
}

fn unknown_field(field: &str) -> CommandError {
    CommandError::new(
        code::IDL_UNKNOWN_FIELD,
        format!("BSON field '{field}' is an unknown field."),
    )
}
