//! Special test operations (`object: testRunner`).

use super::{OpResult, Outcome};
use crate::args::Args;
use crate::entities::EntityMap;
use crate::expect_error::integer;
use crate::fixture::Fixture;

/// Runs test runner operation `name`.
pub(super) async fn run(
    name: &str,
    mut args: Args,
    entities: &mut EntityMap,
    fixture: &mut Fixture,
) -> OpResult {
    match name {
        "failPoint" => {
            let client = args.string("client")?;
            let command = args.document("failPoint")?;
            args.finish()?;
            // The entity's listener never records configureFailPoint's command events.
            let client = entities.client(&client)?.client.clone();
            fixture.set_fail_point(&client, command).await?;
        }
        "createEntities" => {
            let list = args.documents("entities")?;
            args.finish()?;
            entities.create(&list, fixture).await?;
        }
        "wait" => {
            let millis = args
                .take("ms")
                .as_ref()
                .and_then(integer)
                .and_then(|ms| u64::try_from(ms).ok())
                .ok_or("wait: ms must be a non-negative integer")?;
            args.finish()?;
            // The format's `wait` is a plain sleep: the test lets time pass on purpose.
            tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
        }
        "assertNumberConnectionsCheckedOut" => {
            let client = args.string("client")?;
            let expected = args
                .take("connections")
                .as_ref()
                .and_then(integer)
                .ok_or("assertNumberConnectionsCheckedOut: connections must be an integer")?;
            args.finish()?;
            let actual = entities.client(&client)?.listener.checked_out();
            if actual != expected {
                return Err(format!(
                    "field `connections`: expected {expected} connections checked out, found {actual}"
                ));
            }
        }
        other => {
            return Err(format!(
                "test runner operation {other:?} is not supported by this runner"
            ));
        }
    }
    Ok(Ok(Outcome::Nothing))
}
