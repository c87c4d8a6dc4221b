//! Test runner operations that wait for, count or record what a client observed: events,
//! topology descriptions, and time itself (`wait`).

use std::sync::Arc;
use std::time::Duration;

use bson::Document;

use super::{OpResult, Outcome};
use crate::args::Args;
use crate::entities::{Entity, EntityMap};
use crate::events::count_matching;
use crate::expect_error::integer;
use crate::observe::EntityListener;

/// How long `waitForEvent` waits, and `waitForPrimaryChange` by default (the format's 10 s).
const WAIT_LIMIT: Duration = Duration::from_secs(10);

/// The event (one key, its name, with assertions) and count of `waitForEvent` /
/// `assertEventCount`, and the client's listener.
fn event_and_count(
    args: &mut Args,
    entities: &EntityMap,
) -> Result<(Arc<EntityListener>, Document, usize), String> {
    let client = args.string("client")?;
    let event = args.document("event")?;
    let count = args
        .take("count")
        .as_ref()
        .and_then(integer)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or("count must be a non-negative integer")?;
    Ok((entities.client(&client)?.listener.clone(), event, count))
}

/// `waitForEvent`: waits until the client observed at least `count` matching events.
pub(super) async fn wait_for_event(mut args: Args, entities: &EntityMap) -> OpResult {
    let (listener, event, count) = event_and_count(&mut args, entities)?;
    args.finish()?;
    let seen = |l: &EntityListener| count_matching(&event, &l.events(), entities) >= count;
    if !listener.wait_for(seen, WAIT_LIMIT).await {
        let found = count_matching(&event, &listener.events(), entities);
        return Err(format!(
            "waited {WAIT_LIMIT:?} for {count} {event} events, observed {found}"
        ));
    }
    Ok(Ok(Outcome::Nothing))
}

/// `assertEventCount`: the client observed exactly `count` matching events.
pub(super) fn assert_event_count(mut args: Args, entities: &EntityMap) -> OpResult {
    let (listener, event, count) = event_and_count(&mut args, entities)?;
    args.finish()?;
    let found = count_matching(&event, &listener.events(), entities);
    if found != count {
        return Err(format!(
            "field `count`: expected {count} {event} events, observed {found}"
        ));
    }
    Ok(Ok(Outcome::Nothing))
}

/// `wait`: sleeps `ms` milliseconds (the tests use it to let background checks run).
pub(super) async fn wait(mut args: Args) -> OpResult {
    let ms = args
        .take("ms")
        .as_ref()
        .and_then(integer)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or("wait: ms must be a non-negative integer")?;
    args.finish()?;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(Ok(Outcome::Nothing))
}

/// `recordTopologyDescription`: saves the client's current topology description.
pub(super) fn record_topology(mut args: Args, entities: &mut EntityMap) -> OpResult {
    let client = args.string("client")?;
    let id = args.string("id")?;
    args.finish()?;
    let description = entities
        .client(&client)?
        .listener
        .topology()
        .ok_or_else(|| format!("client {client:?} has no topology description yet"))?;
    entities.insert(&id, Entity::Topology(description))?;
    Ok(Ok(Outcome::Nothing))
}

/// `assertTopologyType`: a saved description has this type.
pub(super) fn assert_topology_type(mut args: Args, entities: &EntityMap) -> OpResult {
    let id = args.string("topologyDescription")?;
    let expected = args.string("topologyType")?;
    args.finish()?;
    let actual = topology(entities, &id)?.topology_type.spec_name();
    if actual != expected {
        return Err(format!(
            "field `topologyType`: expected {expected}, found {actual}"
        ));
    }
    Ok(Ok(Outcome::Nothing))
}

/// `waitForPrimaryChange`: waits until the client knows a primary other than the saved
/// description's (any primary, if it had none).
pub(super) async fn wait_for_primary_change(mut args: Args, entities: &EntityMap) -> OpResult {
    let client = args.string("client")?;
    let prior_id = args.string("priorTopologyDescription")?;
    let limit = args
        .optional_integer("timeoutMS")?
        .and_then(|ms| u64::try_from(ms).ok())
        .map_or(WAIT_LIMIT, Duration::from_millis);
    args.finish()?;
    let prior = topology(entities, &prior_id)?
        .primary()
        .map(|p| p.address.clone());
    let listener = entities.client(&client)?.listener.clone();
    let changed = |l: &EntityListener| {
        l.topology()
            .and_then(|t| t.primary().map(|p| p.address.clone()))
            .is_some_and(|primary| Some(&primary) != prior.as_ref())
    };
    if !listener.wait_for(changed, limit).await {
        return Err(format!(
            "the primary did not change from {prior:?} within {limit:?}"
        ));
    }
    Ok(Ok(Outcome::Nothing))
}

fn topology(
    entities: &EntityMap,
    id: &str,
) -> Result<Arc<steadfast_core::TopologyDescription>, String> {
    match entities.get(id)? {
        Entity::Topology(description) => Ok(description.clone()),
        other => Err(format!(
            "entity {id:?} is a {}, not a topology description",
            other.kind()
        )),
    }
}
