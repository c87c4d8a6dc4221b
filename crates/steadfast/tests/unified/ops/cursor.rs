//! Cursor entities (`createFindCursor`): iterating and closing them.

use bson::{Bson, Document};
use steadfast::Cursor;

use super::{OpResult, Outcome};
use crate::args::Args;

/// Runs cursor operation `name`.
pub(super) async fn run(name: &str, args: Args, entity: &mut Option<Cursor<Document>>) -> OpResult {
    let mut args = args;
    if name == "close" {
        let timeout = args.optional_duration("timeoutMS")?;
        args.finish()?;
        if let Some(cursor) = entity.take() {
            match timeout {
                Some(timeout) => cursor.close_with_timeout(timeout),
                None => cursor.close(),
            }
        }
        return Ok(Ok(Outcome::Nothing));
    }
    args.finish()?;
    let cursor = entity
        .as_mut()
        .ok_or_else(|| format!("{name}: the cursor was closed"))?;
    let result = match name {
        // One attempt to get a document; a tailable cursor may bring nothing.
        "iterateOnce" => cursor.try_advance().await.map(|_| Outcome::Nothing),
        // On a tailable cursor, advance asks until a document arrives.
        "iterateUntilDocumentOrError" => match cursor.advance().await {
            Ok(true) => {
                let document = cursor
                    .deserialize_current()
                    .map_err(|e| format!("{name}: {e}"))?;
                Ok(Outcome::Value(Bson::Document(document)))
            }
            Ok(false) => return Err(format!("{name}: the cursor is exhausted")),
            Err(error) => Err(error),
        },
        other => {
            return Err(format!(
                "cursor operation {other:?} is not supported by this runner"
            ));
        }
    };
    Ok(result)
}
