//! `runOnThread` and `waitForThread`: operations run concurrently with the test's own.

use bson::Document;

use super::{OpResult, Outcome};
use crate::args::Args;
use crate::entities::EntityMap;
use crate::runner::check_operation;

/// How long `waitForThread` waits for a thread's operations (the format's 10 seconds).
const THREAD_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// `runOnThread`: starts the operation on the thread's task, after the thread's earlier
/// operations. The operation sees a handle to its object only, so it cannot save results
/// (`saveResultAsEntity` fails it).
pub(super) fn run_on_thread(mut args: Args, entities: &mut EntityMap) -> OpResult {
    let thread_id = args.string("thread")?;
    let operation = args.document("operation")?;
    args.finish()?;
    let object = operation
        .get_str("object")
        .map_err(|_| "runOnThread: the operation has no object".to_owned())?;
    let shared = entities.get(object)?.share().ok_or_else(|| {
        format!("runOnThread: {object:?} is not a client, database or collection")
    })?;
    let mut local = EntityMap::default();
    local.insert(object, shared)?;
    let thread = entities.thread_mut(&thread_id)?;
    let previous = thread.last.take();
    thread.last = Some(tokio::spawn(async move {
        if let Some(previous) = previous {
            previous
                .await
                .map_err(|e| format!("an earlier operation's task ended abnormally: {e}"))??;
        }
        run_one(&operation, &mut local).await
    }));
    Ok(Ok(Outcome::Nothing))
}

async fn run_one(operation: &Document, local: &mut EntityMap) -> Result<(), String> {
    let name = operation.get_str("name").unwrap_or("?");
    let result = super::run_on_object(operation, local).await;
    check_operation(operation, result, local).map_err(|e| format!("{name} on a thread: {e}"))
}

/// `waitForThread`: waits for the thread's operations and reports the first failure.
pub(super) async fn wait_for_thread(mut args: Args, entities: &mut EntityMap) -> OpResult {
    let thread_id = args.string("thread")?;
    args.finish()?;
    let Some(task) = entities.thread_mut(&thread_id)?.last.take() else {
        return Ok(Ok(Outcome::Nothing));
    };
    let abort = task.abort_handle();
    match tokio::time::timeout(THREAD_LIMIT, task).await {
        Ok(Ok(result)) => result.map(|()| Ok(Outcome::Nothing)),
        Ok(Err(e)) => Err(format!(
            "thread {thread_id:?}: its task ended abnormally: {e}"
        )),
        Err(_) => {
            abort.abort();
            Err(format!(
                "thread {thread_id:?} did not finish within {THREAD_LIMIT:?}"
            ))
        }
    }
}
