//! `createChangeStream` on a client, database or collection, and the operations of the
//! change-stream entities it saves (`iterateUntilDocumentOrError`, `iterateOnce`, `close`).

use bson::{Bson, Document};
use steadfast::action::Watch;
use steadfast::change_stream::ChangeStream;
use steadfast::change_stream::event::ResumeToken;
use steadfast::options::{ChangeStreamOptions, FullDocumentBeforeChangeType, FullDocumentType};

use super::{OpResult, Outcome};
use crate::args::Args;
use crate::entities::Entity;

/// The change streams the runner iterates: raw events, matched as documents.
pub(crate) type RawChangeStream = ChangeStream<Document>;

/// The arguments of `createChangeStream`, read once whatever the target.
struct WatchArgs {
    pipeline: Vec<Document>,
    options: ChangeStreamOptions,
    timeout: Option<std::time::Duration>,
}

impl WatchArgs {
    fn read(mut args: Args) -> Result<WatchArgs, String> {
        let pipeline = args.documents("pipeline")?;
        let timeout = args.optional_duration("timeoutMS")?;
        let mut options = ChangeStreamOptions::default();
        options.batch_size = args.optional_count("batchSize")?;
        options.max_await_time = args.optional_duration("maxAwaitTimeMS")?;
        options.comment = args.take("comment");
        options.show_expanded_events = args.optional_bool("showExpandedEvents")?;
        options.collation = args
            .optional_document("collation")?
            .map(|c| bson::deserialize_from_document(c).map_err(|e| format!("collation: {e}")))
            .transpose()?;
        options.full_document = args
            .take("fullDocument")
            .map(|v| named(&v, "fullDocument").map(full_document))
            .transpose()?;
        options.full_document_before_change = args
            .take("fullDocumentBeforeChange")
            .map(|v| named(&v, "fullDocumentBeforeChange").map(before_change))
            .transpose()?;
        options.resume_after = args.take("resumeAfter").map(token).transpose()?;
        options.start_after = args.take("startAfter").map(token).transpose()?;
        options.start_at_operation_time = match args.take("startAtOperationTime") {
            Some(Bson::Timestamp(time)) => Some(time),
            Some(other) => return Err(format!("startAtOperationTime: {other} is no timestamp")),
            None => None,
        };
        args.finish()?;
        Ok(WatchArgs {
            pipeline,
            options,
            timeout,
        })
    }

    fn apply<T>(self, watch: Watch<'_, T>) -> Watch<'_, T> {
        let watch = watch.pipeline(self.pipeline).with_options(self.options);
        match self.timeout {
            Some(timeout) => watch.timeout(timeout),
            None => watch,
        }
    }
}

fn named<'v>(value: &'v Bson, what: &str) -> Result<&'v str, String> {
    value
        .as_str()
        .ok_or_else(|| format!("{what}: {value} is not a string"))
}

fn full_document(name: &str) -> FullDocumentType {
    match name {
        "updateLookup" => FullDocumentType::UpdateLookup,
        "whenAvailable" => FullDocumentType::WhenAvailable,
        "required" => FullDocumentType::Required,
        other => FullDocumentType::Other(other.to_owned()),
    }
}

fn before_change(name: &str) -> FullDocumentBeforeChangeType {
    match name {
        "whenAvailable" => FullDocumentBeforeChangeType::WhenAvailable,
        "required" => FullDocumentBeforeChangeType::Required,
        "off" => FullDocumentBeforeChangeType::Off,
        other => FullDocumentBeforeChangeType::Other(other.to_owned()),
    }
}

fn token(value: Bson) -> Result<ResumeToken, String> {
    let raw = bson::RawBson::try_from(value).map_err(|e| format!("resume token: {e}"))?;
    Ok(ResumeToken::from(raw))
}

/// Opens the stream; its events are raw documents.
pub(super) async fn open(args: Args, target: &Entity) -> OpResult {
    let args = WatchArgs::read(args)?;
    let opened = match target {
        Entity::Client(client) => args.apply(client.client.watch()).await,
        Entity::Database(database) => args.apply(database.watch()).await,
        Entity::Collection(collection) => args.apply(collection.watch()).await,
        other => {
            return Err(format!(
                "createChangeStream: a {} cannot be watched",
                other.kind()
            ));
        }
    };
    Ok(opened.map(|stream| Outcome::ChangeStream(stream.with_type::<Document>())))
}

/// Runs change-stream operation `name`.
pub(super) async fn run(name: &str, args: Args, entity: &mut Option<RawChangeStream>) -> OpResult {
    args.finish()?;
    if name == "close" {
        drop(entity.take());
        return Ok(Ok(Outcome::Nothing));
    }
    let stream = entity
        .as_mut()
        .ok_or_else(|| format!("{name}: the change stream was closed"))?;
    let result = match name {
        "iterateOnce" => stream.next_if_any().await.map(|_| Outcome::Nothing),
        "iterateUntilDocumentOrError" => match futures_util::StreamExt::next(stream).await {
            Some(Ok(event)) => Ok(Outcome::Value(Bson::Document(event))),
            Some(Err(error)) => Err(error),
            None => return Err(format!("{name}: the change stream ended")),
        },
        other => {
            return Err(format!(
                "change stream operation {other:?} is not supported by this runner"
            ));
        }
    };
    Ok(result)
}
