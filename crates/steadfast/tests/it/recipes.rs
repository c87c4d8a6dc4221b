//! The exactly-once recipes (`steadfast::recipes`) against blackpipe's simulated replica set,
//! with faults injected through `configureFailPoint`: the idempotent insert here, the counter
//! in `recipes_counter.rs`. Every test asserts on the store's final contents, and checks that
//! the injected faults actually fired.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig, NodeIndex};
use bson::{Bson, Document, doc};
use steadfast::event::EventRecorder;
use steadfast::options::{IndexModel, IndexOptions};
use steadfast::recipes::{
    IdempotentInsert, InsertEvidence, InsertOutcome, RecipeOptions, insert_idempotent,
    is_worth_retrying,
};
use steadfast::{Client, ClientBuilder, Collection, ErrorKind};

/// The database every recipe test uses.
pub(crate) const DB: &str = "recipes";

/// A three-member replica set, a client for it (recording its events), and one direct client
/// per member for configuring that member's fail points.
pub(crate) struct ReplicaSet {
    pub(crate) deployment: Deployment,
    pub(crate) client: Client,
    pub(crate) events: Arc<EventRecorder>,
    direct: Vec<Client>,
    /// Per member, the running trigger totals (`failCommand`, `onPrimaryTransactionalWrite`)
    /// its last `configureFailPoint` replies reported: the server's count never resets, so
    /// what fired in between is a difference.
    seen: Mutex<Vec<(i64, i64)>>,
}

impl ReplicaSet {
    /// Starts the set (seeded, so `activationProbability` fail points replay identically).
    pub(crate) async fn start() -> Self {
        Self::start_with_query("").await
    }

    /// Starts the set; `query` is appended to the client's connection string.
    pub(crate) async fn start_with_query(query: &str) -> Self {
        let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_seed(7))
            .await
            .expect("the replica set starts");
        let events = Arc::new(EventRecorder::new());
        let uri = format!("{}&heartbeatFrequencyMS=500{query}", deployment.uri());
        let client = ClientBuilder::from_uri_str(&uri)
            .await
            .expect("valid connection string")
            .event_listener(events.clone())
            .build()
            .expect("the client starts");
        let mut direct = Vec::new();
        for host in deployment.hosts() {
            let uri = format!("mongodb://{host}/?directConnection=true");
            direct.push(
                Client::with_uri_str(&uri)
                    .await
                    .expect("valid connection string"),
            );
        }
        let seen = Mutex::new(vec![(0, 0); direct.len()]);
        ReplicaSet {
            deployment,
            client,
            events,
            direct,
            seen,
        }
    }

    /// A collection of the test database, through the main client.
    pub(crate) fn collection(&self, name: &str) -> Collection<Document> {
        self.client.database(DB).collection(name)
    }

    /// The current primary according to the simulation (not the client's view).
    pub(crate) fn primary(&self) -> NodeIndex {
        self.deployment.primary().expect("the set has a primary")
    }

    /// Sends `configureFailPoint` to member `node` and returns how many times that fail point
    /// fired on it since it was last configured.
    pub(crate) async fn fail_point_on(&self, node: NodeIndex, command: Document) -> i64 {
        let transactional =
            command.get_str("configureFailPoint").ok() == Some("onPrimaryTransactionalWrite");
        let reply = self.direct[node]
            .database("admin")
            .run_command(command)
            .await
            .expect("configureFailPoint succeeds");
        let total = count_of(&reply);
        let mut seen = self.seen.lock().expect("not poisoned");
        let last = if transactional {
            &mut seen[node].1
        } else {
            &mut seen[node].0
        };
        let fired = total - *last;
        *last = total;
        fired
    }

    /// Sends `configureFailPoint` to the current primary.
    pub(crate) async fn fail_point(&self, command: Document) {
        self.fail_point_on(self.primary(), command).await;
    }

    /// Turns both fail points off on every member and returns how many times each fired
    /// since it was last configured, summed over the members: `(failCommand,
    /// onPrimaryTransactionalWrite)`.
    pub(crate) async fn heal(&self) -> (i64, i64) {
        let mut fired = (0, 0);
        for node in 0..self.direct.len() {
            let off = doc! { "configureFailPoint": "failCommand", "mode": "off" };
            fired.0 += self.fail_point_on(node, off).await;
            let off = doc! { "configureFailPoint": "onPrimaryTransactionalWrite", "mode": "off" };
            fired.1 += self.fail_point_on(node, off).await;
        }
        fired
    }

    /// The documents of `coll` as the store holds them (not read through the driver).
    pub(crate) fn stored(&self, coll: &str) -> Vec<Document> {
        self.deployment.store().documents(DB, coll)
    }

    /// Shuts the clients down, then the deployment.
    pub(crate) async fn stop(self) {
        self.client.shutdown().await;
        for client in self.direct {
            client.shutdown().await;
        }
        self.deployment.stop().await;
    }
}

/// The `count` of a `configureFailPoint` reply.
fn count_of(reply: &Document) -> i64 {
    match reply.get("count") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => 0,
    }
}

/// `onPrimaryTransactionalWrite`: the next `times` retryable writes commit, then the server
/// closes the connection instead of answering.
pub(crate) fn close_after_commit(times: i64) -> Document {
    doc! {
        "configureFailPoint": "onPrimaryTransactionalWrite",
        "mode": { "times": times },
        "data": { "closeConnection": true },
    }
}

/// `failCommand` closing the connection on the first `command` it sees, before executing it.
/// Paired with [`close_after_commit`]`(1)`, it makes a write commit with both of its replies
/// lost: the first send is cut before it executes, and the driver's retry (same txnNumber),
/// which the server has never applied and so does not answer from its transaction table,
/// commits and is cut after committing.
pub(crate) fn cut_first_send(command: &str) -> Document {
    fail_command(
        doc! { "times": 1 }.into(),
        &[command],
        doc! { "closeConnection": true },
    )
}

/// `failCommand` letting the first `command` through, then closing the connection on every
/// later one, before executing it, until healed. Paired with [`close_after_commit`]`(1)`, the
/// first send commits and loses its reply, and the driver's retry is cut off too: the server
/// would otherwise answer it from its transaction table, as mongod does.
pub(crate) fn cut_sends_after_the_first(command: &str) -> Document {
    fail_command(
        doc! { "skip": 1 }.into(),
        &[command],
        doc! { "closeConnection": true },
    )
}

/// `failCommand` on `commands`, with `mode` and extra `data`.
pub(crate) fn fail_command(mode: Bson, commands: &[&str], data: Document) -> Document {
    let mut all =
        doc! { "failCommands": commands.iter().map(|c| Bson::from(*c)).collect::<Vec<_>>() };
    all.extend(data);
    doc! { "configureFailPoint": "failCommand", "mode": mode, "data": all }
}

#[tokio::test]
async fn insert_without_faults_generates_an_id_and_inserts() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("plain");

    let outcome = insert_idempotent(&coll, doc! { "kind": "signup" })
        .await
        .expect("the insert succeeds");
    let InsertOutcome::Inserted { id } = &outcome else {
        panic!("expected Inserted, got {outcome:?}");
    };
    assert!(matches!(id, Bson::ObjectId(_)));
    assert_eq!(
        set.stored("plain"),
        vec![doc! { "_id": id.clone(), "kind": "signup" }]
    );
    set.stop().await;
}

#[tokio::test]
async fn insert_whose_replies_are_lost_after_commit_reports_already_inserted() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("lost_replies");
    // The first send is cut before executing; the driver's retry commits and its reply is
    // lost too: the driver reports an ambiguous network error, the recipe sends a fresh insert
    // (no fault left for it) and meets its own `_id`.
    set.fail_point(cut_first_send("insert")).await;
    set.fail_point(close_after_commit(1)).await;

    let outcome = insert_idempotent(&coll, doc! { "_id": "evt-1", "kind": "signup" })
        .await
        .expect("the recipe absorbs the lost replies");
    assert_eq!(
        outcome,
        InsertOutcome::AlreadyInserted {
            id: Bson::String("evt-1".into()),
            evidence: InsertEvidence::DuplicateAfterUncertainAttempt,
        }
    );
    assert_eq!(set.heal().await, (1, 1), "both replies were lost");
    assert_eq!(
        set.stored("lost_replies"),
        vec![doc! { "_id": "evt-1", "kind": "signup" }]
    );
    set.stop().await;
}

#[tokio::test]
async fn application_rerun_after_a_failed_insert_finds_the_document() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("rerun");
    // The first send commits and loses its reply; the driver's retry is cut off before the
    // server can answer it from its transaction table.
    set.fail_point(cut_sends_after_the_first("insert")).await;
    set.fail_point(close_after_commit(1)).await;

    // One attempt per run, so the application sees the ambiguous failure itself.
    let mut insert = IdempotentInsert::from_document(doc! { "n": 1 })
        .with_options(RecipeOptions::default().attempts(1));
    let error = insert.run(&coll).await.expect_err("both replies are lost");
    assert!(is_worth_retrying(&error), "{error}");
    assert_eq!(error.outcome(), steadfast::error::Outcome::Ambiguous);
    // The outage ends before the application re-runs.
    assert_eq!(set.heal().await, (1, 1), "both replies were lost");
    assert_eq!(set.stored("rerun"), vec![insert.document().clone()]);

    let outcome = insert.run(&coll).await.expect("the re-run succeeds");
    assert_eq!(
        outcome,
        InsertOutcome::AlreadyInserted {
            id: insert.id().clone(),
            evidence: InsertEvidence::DuplicateAfterUncertainAttempt,
        }
    );

    // A process that restarted rebuilds the insert from the saved document (with its `_id`):
    // it has no memory of the uncertain attempt, so it reads the stored document back.
    let mut rebuilt = IdempotentInsert::from_document(insert.document().clone());
    let outcome = rebuilt
        .run(&coll)
        .await
        .expect("the rebuilt insert succeeds");
    assert_eq!(
        outcome,
        InsertOutcome::AlreadyInserted {
            id: insert.id().clone(),
            evidence: InsertEvidence::StoredDocumentMatches,
        }
    );
    assert_eq!(set.stored("rerun"), vec![insert.document().clone()]);
    set.stop().await;
}

#[tokio::test]
async fn insert_retries_errors_that_did_not_write_and_inserts_once() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("not_written");
    // Refused before executing, with the retryable label: the driver retries once and fails
    // again, the recipe sends the insert a second time (and the driver's first attempt of that
    // fails too), then it goes through. Nothing was ever uncertain.
    set.fail_point(fail_command(
        doc! { "times": 3 }.into(),
        &["insert"],
        doc! { "errorCode": 91, "errorLabels": ["RetryableWriteError"] },
    ))
    .await;

    let outcome = insert_idempotent(&coll, doc! { "_id": 5, "v": "x" })
        .await
        .expect("the third attempt inserts");
    assert_eq!(outcome, InsertOutcome::Inserted { id: Bson::Int32(5) });
    assert_eq!(set.heal().await, (3, 0));
    assert_eq!(set.stored("not_written"), vec![doc! { "_id": 5, "v": "x" }]);
    set.stop().await;
}

#[tokio::test]
async fn duplicate_on_another_unique_index_stays_an_error() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("users");
    coll.create_index(
        IndexModel::builder()
            .keys(doc! { "email": 1 })
            .options(IndexOptions::default().unique(true))
            .build(),
    )
    .await
    .expect("the unique index is created");
    insert_idempotent(&coll, doc! { "_id": 1, "email": "a@example.com" })
        .await
        .expect("the first user is inserted");
    // Even after an uncertain attempt, a clash on `email` is someone else's data.
    set.fail_point(close_after_commit(2)).await;
    let mut clash = IdempotentInsert::from_document(doc! { "_id": 2, "email": "a@example.com" })
        .with_options(RecipeOptions::default().attempts(3));
    let error = clash.run(&coll).await.expect_err("the email is taken");
    assert_eq!(error.code(), Some(11000), "{error}");
    assert!(!is_worth_retrying(&error));
    set.heal().await;
    assert_eq!(set.stored("users").len(), 1);
    set.stop().await;
}

#[tokio::test]
async fn a_different_document_under_the_same_id_is_a_conflict() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("conflict");
    insert_idempotent(&coll, doc! { "_id": "k", "owner": "first" })
        .await
        .expect("the first document is inserted");

    let error = insert_idempotent(&coll, doc! { "_id": "k", "owner": "second" })
        .await
        .expect_err("another document holds the _id");
    assert_eq!(error.code(), Some(11000), "{error}");
    // The same document again is recognised as already there.
    let again = insert_idempotent(&coll, doc! { "owner": "first", "_id": "k" })
        .await
        .expect("the same document is recognised");
    assert!(again.was_already_inserted());
    assert_eq!(
        set.stored("conflict"),
        vec![doc! { "_id": "k", "owner": "first" }]
    );
    set.stop().await;
}

#[tokio::test]
async fn unacknowledged_writes_are_refused_before_anything_is_sent() {
    let set = ReplicaSet::start_with_query("&w=0").await;
    let coll = set.collection("w0");
    let error = insert_idempotent(&coll, doc! { "a": 1 })
        .await
        .expect_err("w: 0 cannot be idempotent");
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert!(set.stored("w0").is_empty());
    set.stop().await;
}

/// Waits (on the simulation's request counters, with a generous bound that only keeps a broken
/// test from hanging) until member `node` has received `count` more non-hello commands than
/// `baseline`.
pub(crate) async fn wait_for_commands(
    set: &ReplicaSet,
    node: NodeIndex,
    baseline: u64,
    count: u64,
) {
    let counters = set.deployment.counters(node).expect("the member exists");
    let arrived = counters.wait_until(|c| c.commands() - c.hellos() >= baseline + count);
    tokio::time::timeout(Duration::from_secs(30), arrived)
        .await
        .expect("the command reached the member");
}

/// Non-hello commands member `node` has received so far.
pub(crate) fn commands_received(set: &ReplicaSet, node: NodeIndex) -> u64 {
    let counters = set.deployment.counters(node).expect("the member exists");
    counters.commands() - counters.hellos()
}
