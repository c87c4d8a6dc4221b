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
        "assertNumberConnectionsCheckedOut" => {
            let client = args.string("client")?;
            let expected = args
                .take("connections")
                .as_ref()
                .and_then(integer)
                .ok_or("assertNumberConnectionsCheckedOut: connections must be an integer")?;
            args.finish()?;
            let entity = entities.client(&client)?;
            // A closed cursor's killCursors and check-in run in the background (close is
            // synchronous): the count is taken once they are done.
            entity
                .client
                .background_tasks()
                .wait_until_client_tasks_idle()
                .await;
            let actual = entity.listener.checked_out();
            if actual != expected {
                return Err(format!(
                    "field `connections`: expected {expected} connections checked out, found {actual}"
                ));
            }
        }
        "waitForEvent" => return super::waits::wait_for_event(args, entities).await,
        "assertEventCount" => return super::waits::assert_event_count(args, entities),
        "wait" => return super::waits::wait(args).await,
        "recordTopologyDescription" => return super::waits::record_topology(args, entities),
        "assertTopologyType" => return super::waits::assert_topology_type(args, entities),
        "waitForPrimaryChange" => {
            return super::waits::wait_for_primary_change(args, entities).await;
        }
        "assertSessionDirty" => return super::sessions::assert_dirty(args, entities, true).await,
        "assertSessionNotDirty" => {
            return super::sessions::assert_dirty(args, entities, false).await;
        }
        "assertSameLsidOnLastTwoCommands" => {
            return super::sessions::assert_lsids(args, entities, true);
        }
        "assertDifferentLsidOnLastTwoCommands" => {
            return super::sessions::assert_lsids(args, entities, false);
        }
        "assertSessionTransactionState" => {
            return super::transactions::assert_state(args, entities).await;
        }
        "assertSessionPinned" => {
            return super::transactions::assert_pinned(args, entities, true).await;
        }
        "assertSessionUnpinned" => {
            return super::transactions::assert_pinned(args, entities, false).await;
        }
        "targetedFailPoint" => {
            return super::transactions::targeted_fail_point(args, entities, fixture).await;
        }
        "assertCollectionExists" => {
            return super::transactions::assert_collection(args, fixture, true);
        }
        "assertCollectionNotExists" => {
            return super::transactions::assert_collection(args, fixture, false);
        }
        "assertIndexExists" => return super::transactions::assert_index(args, fixture, true),
        "assertIndexNotExists" => return super::transactions::assert_index(args, fixture, false),
        "runOnThread" => return super::threads::run_on_thread(args, entities),
        "waitForThread" => return super::threads::wait_for_thread(args, entities).await,
        other => {
            return Err(format!(
                "test runner operation {other:?} is not supported by this runner"
            ));
        }
    }
    Ok(Ok(Outcome::Nothing))
}
