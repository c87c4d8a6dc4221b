//! A server process's operation counters, as `serverStatus` reports them (`opcounters`):
//! documents inserted, queries, update and delete statements, getMores and other commands.

use std::sync::atomic::{AtomicU64, Ordering};

use bson::{Bson, Document, doc};

/// Counted as requests arrive (mongod counts an operation when it starts, whatever its fate).
#[derive(Debug, Default)]
pub(crate) struct OpCounters {
    insert: AtomicU64,
    query: AtomicU64,
    update: AtomicU64,
    delete: AtomicU64,
    getmore: AtomicU64,
    command: AtomicU64,
}

impl OpCounters {
    /// Counts the command `name` (canonical): an insert by its documents, an update or a
    /// delete by its statements, like mongod.
    pub(crate) fn count(&self, name: &str, command: &Document) {
        let statements = |field: &str| match command.get(field) {
            Some(Bson::Array(items)) => items.len() as u64,
            _ => 0,
        };
        let (counter, by) = match name {
            "insert" => (&self.insert, statements("documents")),
            "update" => (&self.update, statements("updates")),
            "delete" => (&self.delete, statements("deletes")),
            "find" => (&self.query, 1),
            "getMore" => (&self.getmore, 1),
            _ => (&self.command, 1),
        };
        counter.fetch_add(by, Ordering::Relaxed);
    }

    /// The `opcounters` section.
    pub(crate) fn to_document(&self) -> Document {
        let read = |counter: &AtomicU64| {
            i64::try_from(counter.load(Ordering::Relaxed)).unwrap_or(i64::MAX)
        };
        doc! {
            "insert": read(&self.insert),
            "query": read(&self.query),
            "update": read(&self.update),
            "delete": read(&self.delete),
            "getmore": read(&self.getmore),
            "command": read(&self.command),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_count_their_statements_and_the_rest_one_each() {
        let counters = OpCounters::default();
        counters.count("insert", &doc! { "insert": "c", "documents": [{}, {}, {}] });
        counters.count("update", &doc! { "update": "c", "updates": [{}] });
        counters.count("delete", &doc! { "delete": "c", "deletes": [{}, {}] });
        counters.count("find", &doc! { "find": "c" });
        counters.count("getMore", &doc! { "getMore": 1_i64 });
        counters.count("ping", &doc! { "ping": 1 });
        counters.count("hello", &doc! { "hello": 1 });
        counters.count(
            "insert",
            &doc! { "insert": "c", "documents": "not an array" },
        );
        assert_eq!(
            counters.to_document(),
            doc! { "insert": 3_i64, "query": 1_i64, "update": 1_i64, "delete": 2_i64, "getmore": 1_i64, "command": 2_i64 }
        );
    }
}
