//! Reading an operation's `arguments`: typed accessors that remove what they read, so that
//! [`Args::finish`] can reject arguments the runner does not understand (as the format
//! requires), and conversions of the common options.

use bson::{Bson, Document};
use steadfast::options::{Acknowledgment, Hint, UpdateModifications, WriteConcern};

use crate::expect_error::integer;

/// The remaining arguments of one operation.
#[derive(Debug)]
pub(crate) struct Args {
    operation: String,
    remaining: Document,
}

impl Args {
    /// The arguments of `operation` (`arguments` may be absent).
    pub(crate) fn new(operation: &str, arguments: Option<&Document>) -> Args {
        Args {
            operation: operation.to_owned(),
            remaining: arguments.cloned().unwrap_or_default(),
        }
    }

    /// Removes and returns an argument.
    pub(crate) fn take(&mut self, key: &str) -> Option<Bson> {
        self.remaining.remove(key)
    }

    /// A required document argument.
    pub(crate) fn document(&mut self, key: &str) -> Result<Document, String> {
        match self.take(key) {
            Some(Bson::Document(d)) => Ok(d),
            Some(other) => Err(self.wrong(key, "a document", &other)),
            None => Err(format!("{}: argument `{key}` is required", self.operation)),
        }
    }

    /// An optional document argument.
    pub(crate) fn optional_document(&mut self, key: &str) -> Result<Option<Document>, String> {
        match self.take(key) {
            Some(Bson::Document(d)) => Ok(Some(d)),
            Some(other) => Err(self.wrong(key, "a document", &other)),
            None => Ok(None),
        }
    }

    /// A required array of documents.
    pub(crate) fn documents(&mut self, key: &str) -> Result<Vec<Document>, String> {
        match self.take(key) {
            Some(Bson::Array(items)) => items
                .into_iter()
                .map(|item| match item {
                    Bson::Document(d) => Ok(d),
                    other => Err(self.wrong(key, "documents", &other)),
                })
                .collect(),
            Some(other) => Err(self.wrong(key, "an array", &other)),
            None => Err(format!("{}: argument `{key}` is required", self.operation)),
        }
    }

    /// A required string.
    pub(crate) fn string(&mut self, key: &str) -> Result<String, String> {
        match self.take(key) {
            Some(Bson::String(s)) => Ok(s),
            Some(other) => Err(self.wrong(key, "a string", &other)),
            None => Err(format!("{}: argument `{key}` is required", self.operation)),
        }
    }

    /// An optional string.
    pub(crate) fn optional_string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            Some(Bson::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(key, "a string", &other)),
            None => Ok(None),
        }
    }

    /// An optional number, as a double.
    pub(crate) fn optional_f64(&mut self, key: &str) -> Result<Option<f64>, String> {
        match self.take(key) {
            Some(Bson::Double(d)) => Ok(Some(d)),
            Some(Bson::Int32(n)) => Ok(Some(f64::from(n))),
            #[allow(clippy::cast_precision_loss, reason = "a test's small coordinates")]
            Some(Bson::Int64(n)) => Ok(Some(n as f64)),
            Some(other) => Err(self.wrong(key, "a number", &other)),
            None => Ok(None),
        }
    }

    /// An optional `writeConcern` common option.
    pub(crate) fn optional_write_concern(&mut self) -> Result<Option<WriteConcern>, String> {
        self.optional_document("writeConcern")?
            .map(|d| write_concern(&d))
            .transpose()
    }

    /// An optional boolean.
    pub(crate) fn optional_bool(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.take(key) {
            Some(Bson::Boolean(b)) => Ok(Some(b)),
            Some(other) => Err(self.wrong(key, "a boolean", &other)),
            None => Ok(None),
        }
    }

    /// An optional integer.
    pub(crate) fn optional_integer(&mut self, key: &str) -> Result<Option<i64>, String> {
        match self.take(key) {
            Some(value) => integer(&value)
                .map(Some)
                .ok_or_else(|| self.wrong(key, "an integer", &value)),
            None => Ok(None),
        }
    }

    /// An optional non-negative integer that fits `T`.
    pub(crate) fn optional_count<T: TryFrom<i64>>(
        &mut self,
        key: &str,
    ) -> Result<Option<T>, String> {
        match self.optional_integer(key)? {
            Some(value) => T::try_from(value)
                .map(Some)
                .map_err(|_| format!("{}: `{key}` out of range: {value}", self.operation)),
            None => Ok(None),
        }
    }

    /// An optional duration in milliseconds (`timeoutMS`, `maxTimeMS`, ...).
    pub(crate) fn optional_duration(
        &mut self,
        key: &str,
    ) -> Result<Option<std::time::Duration>, String> {
        Ok(self
            .optional_count::<u64>(key)?
            .map(std::time::Duration::from_millis))
    }

    /// An update: operators (a document) or a pipeline (an array).
    pub(crate) fn update(&mut self, key: &str) -> Result<UpdateModifications, String> {
        match self.take(key) {
            Some(Bson::Document(d)) => Ok(UpdateModifications::Document(d)),
            Some(Bson::Array(stages)) => stages
                .into_iter()
                .map(|stage| match stage {
                    Bson::Document(d) => Ok(d),
                    other => Err(self.wrong(key, "pipeline stages", &other)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(UpdateModifications::Pipeline),
            Some(other) => Err(self.wrong(key, "a document or a pipeline", &other)),
            None => Err(format!("{}: argument `{key}` is required", self.operation)),
        }
    }

    /// An optional `hint`: an index name or key pattern.
    pub(crate) fn optional_hint(&mut self) -> Result<Option<Hint>, String> {
        match self.take("hint") {
            Some(Bson::String(name)) => Ok(Some(Hint::Name(name))),
            Some(Bson::Document(keys)) => Ok(Some(Hint::Keys(keys))),
            Some(other) => Err(self.wrong("hint", "a string or a document", &other)),
            None => Ok(None),
        }
    }

    /// Fails if any argument was not consumed.
    pub(crate) fn finish(self) -> Result<(), String> {
        if self.remaining.is_empty() {
            return Ok(());
        }
        let keys: Vec<&String> = self.remaining.keys().collect();
        Err(format!(
            "{}: argument(s) {keys:?} not supported by this runner",
            self.operation
        ))
    }

    fn wrong(&self, key: &str, what: &str, found: &Bson) -> String {
        format!("{}: `{key}` must be {what}, found {found}", self.operation)
    }
}

/// A `writeConcern` common option.
pub(crate) fn write_concern(value: &Document) -> Result<WriteConcern, String> {
    let mut concern = WriteConcern::default();
    for (key, v) in value {
        match key.as_str() {
            "w" => {
                concern.w = Some(match v {
                    Bson::String(s) if s == "majority" => Acknowledgment::Majority,
                    Bson::String(s) => Acknowledgment::Custom(s.clone()),
                    other => {
                        let n = integer(other)
                            .and_then(|n| u32::try_from(n).ok())
                            .ok_or_else(|| format!("writeConcern.w: bad value {other}"))?;
                        Acknowledgment::Nodes(n)
                    }
                });
            }
            "journal" => concern.journal = v.as_bool(),
            "wtimeoutMS" => {
                let ms = integer(v)
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or_else(|| format!("writeConcern.wtimeoutMS: bad value {v}"))?;
                concern.w_timeout = Some(std::time::Duration::from_millis(ms));
            }
            other => return Err(format!("writeConcern.{other} is not supported")),
        }
    }
    Ok(concern)
}
