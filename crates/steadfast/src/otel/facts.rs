//! What the OpenTelemetry specification's span names and attributes are made of, read from the
//! command as built: the collection a command targets, the summaries, the session id, the
//! cursor, the query text. Shared by the `tracing` spans (`executor/spans.rs`) and the
//! OpenTelemetry spans (`otel/spans.rs`), so that both name things alike.

use bson::spec::BinarySubtype;
use bson::{RawBsonRef, RawDocument};

use crate::error::ErrorKind;

#[cfg(feature = "opentelemetry")]
/// The fields `db.query.text` leaves out (open-telemetry, "db.query.text").
const QUERY_TEXT_OMITS: [&str; 4] = ["lsid", "$db", "$clusterTime", "signature"];

/// The collection a command names: the value of its first field for collection commands, the
/// `collection` field for getMore; `None` for database commands (`aggregate: 1`, `ping: 1`,
/// `commitTransaction: 1`, client `bulkWrite: 1`).
pub(crate) fn collection_name<'a>(command_name: &str, body: &'a RawDocument) -> Option<&'a str> {
    if command_name == "getMore" {
        return body.get_str("collection").ok();
    }
    match body.iter().next() {
        Some(Ok((_, RawBsonRef::String(collection)))) => Some(collection),
        _ => None,
    }
}

/// `<name> <database>.<collection>`, or `<name> <database>` without a collection: the
/// operation span's name and `db.operation.summary`, and a command's `db.query.summary`.
pub(crate) fn summary(name: &str, database: &str, collection: Option<&str>) -> String {
    match collection {
        Some(collection) => format!("{name} {database}.{collection}"),
        None => format!("{name} {database}"),
    }
}

/// The cursor a getMore continues or a killCursors closes (the first one it names).
pub(crate) fn cursor_of_command(command_name: &str, body: &RawDocument) -> Option<i64> {
    match command_name {
        "getMore" => body.get_i64("getMore").ok(),
        "killCursors" => body
            .get_array("cursors")
            .ok()?
            .into_iter()
            .next()?
            .ok()?
            .as_i64(),
        _ => None,
    }
}

/// The cursor a reply opened or continued (`cursor.id`, when not 0).
pub(crate) fn cursor_of_reply(reply: &RawDocument) -> Option<i64> {
    reply
        .get_document("cursor")
        .ok()
        .and_then(|cursor| cursor.get_i64("id").ok())
        .filter(|id| *id != 0)
}

/// The session id (`lsid.id`, a UUID) as lowercase hex.
pub(crate) fn lsid_hex(body: &RawDocument) -> Option<String> {
    let id = body.get_document("lsid").ok()?.get_binary("id").ok()?;
    if id.subtype != BinarySubtype::Uuid {
        return None;
    }
    Some(id.bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The `lsid` document as relaxed Extended JSON (`{"id":{"$binary":...}}`), as the official
/// drivers report `db.mongodb.lsid`.
#[cfg(feature = "opentelemetry")]
pub(crate) fn lsid_json(body: &RawDocument) -> Option<String> {
    let lsid = body.get_document("lsid").ok()?;
    Some(crate::logging::extjson::render(lsid, usize::MAX))
}

/// `db.query.text`: the command as its started event shows it (document sequences folded back
/// in as arrays) without `lsid`, `$db`, `$clusterTime` and `signature`, as relaxed Extended
/// JSON cut to `max_length` bytes (as log messages are cut). Built only when asked for.
#[cfg(feature = "opentelemetry")]
pub(crate) fn query_text(
    body: &RawDocument,
    sequences: &[steadfast_wire::DocumentSequence],
    max_length: usize,
) -> String {
    use bson::{Document, RawDocumentBuf};

    let body = Document::try_from(body).unwrap_or_default();
    let mut command = crate::executor::monitoring::with_sequences(&body, sequences);
    for omitted in QUERY_TEXT_OMITS {
        command.remove(omitted);
    }
    match RawDocumentBuf::try_from(&command) {
        Ok(raw) => crate::logging::extjson::render(&raw, max_length),
        Err(_) => "...".to_owned(),
    }
}

/// A low-cardinality name for the kind of error (`error.type`, `exception.type`).
pub(crate) fn error_type(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArgument { .. } => "InvalidArgument",
        ErrorKind::Authentication { .. } => "Authentication",
        ErrorKind::Command(_) => "Command",
        ErrorKind::Write(_) => "Write",
        ErrorKind::InsertMany(_) => "InsertMany",
        ErrorKind::BulkWrite(_) => "BulkWrite",
        ErrorKind::ServerSelection { .. } => "ServerSelection",
        ErrorKind::InvalidResponse { .. } => "InvalidResponse",
        ErrorKind::Io(_) => "Io",
        ErrorKind::ConnectionPoolCleared { .. } => "ConnectionPoolCleared",
        ErrorKind::Shutdown => "Shutdown",
        ErrorKind::Transaction { .. } => "Transaction",
        ErrorKind::Throttled { .. } => "Throttled",
        _ => "Other",
    }
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;
    #[cfg(feature = "opentelemetry")]
    use steadfast_wire::DocumentSequence;

    #[test]
    fn collection_commands_name_their_collection_and_database_commands_do_not() {
        let find = rawdoc! { "find": "users", "filter": {} };
        assert_eq!(collection_name("find", &find), Some("users"));
        let more = rawdoc! { "getMore": 7_i64, "collection": "users" };
        assert_eq!(collection_name("getMore", &more), Some("users"));
        let commit = rawdoc! { "commitTransaction": 1 };
        assert_eq!(collection_name("commitTransaction", &commit), None);
        assert_eq!(summary("find", "shop", Some("users")), "find shop.users");
        assert_eq!(
            summary("commitTransaction", "admin", None),
            "commitTransaction admin"
        );
    }

    #[test]
    fn cursors_are_read_from_getmore_killcursors_and_replies() {
        let more = rawdoc! { "getMore": 7_i64, "collection": "users" };
        assert_eq!(cursor_of_command("getMore", &more), Some(7));
        let kill = rawdoc! { "killCursors": "users", "cursors": [9_i64] };
        assert_eq!(cursor_of_command("killCursors", &kill), Some(9));
        assert_eq!(
            cursor_of_command("find", &rawdoc! { "find": "users" }),
            None
        );
        let open = rawdoc! { "cursor": { "id": 5_i64, "firstBatch": [] }, "ok": 1 };
        assert_eq!(cursor_of_reply(&open), Some(5));
        let exhausted = rawdoc! { "cursor": { "id": 0_i64, "firstBatch": [] }, "ok": 1 };
        assert_eq!(cursor_of_reply(&exhausted), None);
    }

    #[cfg(feature = "opentelemetry")]
    #[test]
    fn query_text_drops_session_fields_folds_sequences_and_is_cut() {
        let body = rawdoc! {
            "insert": "users", "ordered": true, "lsid": { "id": 1 }, "$db": "shop",
            "$clusterTime": { "clusterTime": 1 }, "signature": 2,
        };
        let sequence = DocumentSequence::new("documents", vec![rawdoc! { "_id": 1 }]);
        let text = query_text(&body, std::slice::from_ref(&sequence), 1000);
        assert_eq!(
            text,
            r#"{"insert":"users","ordered":true,"documents":[{"_id":1}]}"#
        );
        let cut = query_text(&body, &[sequence], 10);
        assert!(cut.len() <= 13 && cut.ends_with("..."), "{cut}");
    }
}
