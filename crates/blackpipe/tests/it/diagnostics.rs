//! The diagnostic commands shells and test harnesses send (`serverStatus`, `hostInfo`,
//! `getCmdLineOpts`, `getLog`), through the official `mongodb` driver. Against a real mongod
//! (`BLACKPIPE_FIDELITY_URI`) the shapes checked are mongod's own; the exact counts need
//! blackpipe and are checked only there.

use bson::{Bson, Document, doc};
use mongodb::Client;
use mongodb::error::ErrorKind;

use crate::fidelity::Target;
use crate::support::within;

fn int(document: &Document, key: &str) -> i64 {
    match document.get(key) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Double(n)) => *n as i64,
        other => panic!("{key} is not a number: {other:?} in {document}"),
    }
}

async fn admin(client: &Client, command: Document) -> Document {
    within(client.database("admin").run_command(command))
        .await
        .expect("the command succeeds")
}

#[tokio::test]
async fn server_status_reports_the_node_its_counters_and_its_transactions() {
    let target = Target::replica_set().await;
    let client = Client::with_uri_str(&target.uri).await.unwrap();
    let coll = client.database("diag").collection::<Document>("c");
    within(coll.insert_many([doc! { "_id": 1 }, doc! { "_id": 2 }]))
        .await
        .unwrap();
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    within(coll.insert_one(doc! { "_id": 3 }).session(&mut session))
        .await
        .unwrap();
    within(session.commit_transaction()).await.unwrap();

    let status = admin(&client, doc! { "serverStatus": 1 }).await;
    assert_eq!(status.get_str("process").unwrap(), "mongod");
    assert!(
        status.get_str("version").unwrap().starts_with("8."),
        "{status}"
    );
    assert!(status.get_datetime("localTime").is_ok(), "{status}");
    let connections = status.get_document("connections").unwrap();
    assert!(int(connections, "current") >= 1, "{connections}");
    assert!(int(connections, "totalCreated") >= int(connections, "current"));
    let opcounters = status.get_document("opcounters").unwrap();
    assert!(
        int(opcounters, "insert") >= 3,
        "two documents and one in the transaction: {opcounters}"
    );
    assert!(int(opcounters, "command") >= 1, "{opcounters}");
    let repl = status.get_document("repl").unwrap();
    assert_eq!(
        repl.get_bool("isWritablePrimary").ok(),
        Some(true),
        "{repl}"
    );
    assert!(repl.get_str("setName").is_ok(), "{repl}");
    let transactions = status.get_document("transactions").unwrap();
    assert!(int(transactions, "totalCommitted") >= 1, "{transactions}");
    assert!(int(transactions, "totalStarted") >= int(transactions, "totalCommitted"));
    assert!(status.get_document("mem").is_ok(), "{status}");
    assert!(
        status
            .get_document("storageEngine")
            .unwrap()
            .get_str("name")
            .is_ok()
    );
    if target.deployment.is_some() {
        assert_eq!(int(opcounters, "insert"), 3, "{opcounters}");
        assert_eq!(int(transactions, "totalStarted"), 1, "{transactions}");
        assert_eq!(int(transactions, "totalCommitted"), 1, "{transactions}");
        assert_eq!(int(transactions, "currentOpen"), 0, "{transactions}");
    }

    // A section can be left out, as in mongod.
    let without = admin(
        &client,
        doc! { "serverStatus": 1, "repl": 0, "opcounters": 0 },
    )
    .await;
    assert!(
        !without.contains_key("repl") && !without.contains_key("opcounters"),
        "{without}"
    );
    assert!(without.contains_key("connections"));
    // On any database, like mongod.
    let elsewhere = within(
        client
            .database("diag")
            .run_command(doc! { "serverStatus": 1 }),
    )
    .await
    .unwrap();
    assert!(elsewhere.contains_key("uptime"));
}

#[tokio::test]
async fn host_info_cmd_line_opts_and_get_log_answer_as_mongod_does() {
    let target = Target::replica_set().await;
    let client = Client::with_uri_str(&target.uri).await.unwrap();

    let host = admin(&client, doc! { "hostInfo": 1 }).await;
    let system = host.get_document("system").unwrap();
    assert!(int(system, "numCores") >= 1, "{system}");
    assert!(system.get_str("hostname").is_ok(), "{system}");
    assert!(
        host.get_document("os").unwrap().get_str("type").is_ok(),
        "{host}"
    );

    let options = admin(&client, doc! { "getCmdLineOpts": 1 }).await;
    assert!(!options.get_array("argv").unwrap().is_empty(), "{options}");
    let parsed = options.get_document("parsed").unwrap();
    assert!(
        parsed.get_document("net").unwrap().contains_key("port"),
        "{parsed}"
    );
    assert!(
        parsed
            .get_document("replication")
            .unwrap()
            .get_str("replSet")
            .is_ok(),
        "{parsed}"
    );

    let names = admin(&client, doc! { "getLog": "*" }).await;
    let names: Vec<&str> = names
        .get_array("names")
        .unwrap()
        .iter()
        .filter_map(Bson::as_str)
        .collect();
    assert!(
        names.contains(&"global") && names.contains(&"startupWarnings"),
        "{names:?}"
    );
    let global = admin(&client, doc! { "getLog": "global" }).await;
    assert!(global.get_array("log").is_ok(), "{global}");

    // getCmdLineOpts and getLog run on the admin database only.
    for command in [doc! { "getCmdLineOpts": 1 }, doc! { "getLog": "*" }] {
        let error = within(client.database("diag").run_command(command.clone()))
            .await
            .expect_err("refused outside admin");
        match *error.kind {
            ErrorKind::Command(ref failure) => assert_eq!(failure.code, 13, "{command}"),
            ref other => panic!("{other:?}"),
        }
    }
    let error = within(client.database("admin").run_command(doc! { "getLog": 5 }))
        .await
        .expect_err("a log name is a string");
    match *error.kind {
        ErrorKind::Command(ref failure) => assert_eq!(failure.code, 14),
        ref other => panic!("{other:?}"),
    }
}

/// `currentOp` lists a running operation (a find a fail point holds) and itself; `killOp` ends
/// the find with Interrupted.
#[tokio::test]
async fn current_op_lists_running_operations_and_kill_op_interrupts_one() {
    use blackpipe::deployment::DeploymentConfig;

    let deployment = crate::deployment::start(DeploymentConfig::standalone()).await;
    let mut admin = crate::deployment::client(&deployment, 0).await;
    let mut worker = crate::deployment::client(&deployment, 0).await;
    // The find waits in a fail point for ten minutes: long enough never to end by itself.
    let blocking = admin
        .round_trip(doc! {
            "configureFailPoint": "failCommand",
            "mode": "alwaysOn",
            "data": { "failCommands": ["find"], "blockConnection": true, "blockTimeMS": 600_000 },
            "$db": "admin",
        })
        .await;
    assert_eq!(blocking.get_f64("ok").ok(), Some(1.0), "{blocking}");
    let slow = tokio::spawn(async move {
        worker
            .round_trip(
                doc! { "find": "c", "filter": { "x": 1 }, "comment": "slow one", "$db": "db" },
            )
            .await
    });
    // Wait for the find to be running: its arrival is counted before it is held.
    let counters = deployment.counters(0).unwrap();
    within(counters.wait_until(|counters| counters.commands() >= 2)).await;
    let listed = admin
        .round_trip(doc! { "currentOp": 1, "command.comment": "slow one", "$db": "admin" })
        .await;
    let ops = listed.get_array("inprog").unwrap();
    assert_eq!(ops.len(), 1, "{listed}");
    let op = ops[0].as_document().unwrap();
    assert_eq!(op.get_str("op").unwrap(), "query");
    assert_eq!(op.get_str("ns").unwrap(), "db.c");
    let opid = op.get_i64("opid").unwrap();
    let itself = admin
        .round_trip(
            doc! { "currentOp": 1, "command.currentOp": { "$exists": true }, "$db": "admin" },
        )
        .await;
    assert_eq!(itself.get_array("inprog").unwrap().len(), 1, "{itself}");

    // The same through the aggregation stage, as mongosh's db.currentOp() reads it.
    let staged = admin
        .round_trip(doc! {
            "aggregate": 1,
            "pipeline": [{ "$currentOp": {} }, { "$match": { "command.comment": "slow one" } }],
            "cursor": {},
            "$db": "admin",
        })
        .await;
    let batch = staged
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 1, "{staged}");
    let misplaced = admin
        .round_trip(doc! { "aggregate": "c", "pipeline": [{ "$currentOp": {} }], "cursor": {}, "$db": "db" })
        .await;
    assert_eq!(misplaced.get_i32("code").ok(), Some(73), "{misplaced}");
    let killed = admin
        .round_trip(doc! { "killOp": 1, "op": opid, "$db": "admin" })
        .await;
    assert_eq!(killed.get_f64("ok").ok(), Some(1.0), "{killed}");
    let interrupted = within(slow).await.unwrap();
    assert_eq!(
        interrupted.get_i32("code").ok(),
        Some(11601),
        "{interrupted}"
    );
    let after = admin
        .round_trip(doc! { "currentOp": 1, "command.comment": "slow one", "$db": "admin" })
        .await;
    assert!(after.get_array("inprog").unwrap().is_empty(), "{after}");
    let malformed = admin
        .round_trip(doc! { "killOp": 1, "op": "x", "$db": "admin" })
        .await;
    assert_eq!(malformed.get_i32("code").ok(), Some(14), "{malformed}");
}

/// What shells send to read and set logging and profiling (`db.setLogLevel`,
/// `db.getLogComponents`, `db.getProfilingStatus`).
#[tokio::test]
async fn log_verbosity_and_profiling_answer_as_shells_expect() {
    use blackpipe::deployment::DeploymentConfig;

    let deployment = crate::deployment::start(DeploymentConfig::standalone()).await;
    let mut admin = crate::deployment::client(&deployment, 0).await;
    let set = admin
        .round_trip(doc! { "setParameter": 1, "logComponentVerbosity": { "verbosity": 1, "query": { "verbosity": 2 } }, "$db": "admin" })
        .await;
    assert_eq!(set.get_f64("ok").ok(), Some(1.0), "{set}");
    let got = admin
        .round_trip(
            doc! { "getParameter": 1, "logComponentVerbosity": 1, "logLevel": 1, "$db": "admin" },
        )
        .await;
    let verbosity = got.get_document("logComponentVerbosity").unwrap();
    assert_eq!(verbosity.get_i32("verbosity").unwrap(), 1);
    assert_eq!(
        verbosity
            .get_document("query")
            .unwrap()
            .get_i32("verbosity")
            .unwrap(),
        2
    );
    assert_eq!(got.get_i32("logLevel").unwrap(), 1);
    let bad = admin
        .round_trip(
            doc! { "setParameter": 1, "logComponentVerbosity": { "nonsense": 1 }, "$db": "admin" },
        )
        .await;
    assert_eq!(bad.get_i32("code").ok(), Some(2), "{bad}");
    let lifetime = admin
        .round_trip(
            doc! { "setParameter": 1, "transactionLifetimeLimitSeconds": 5, "$db": "admin" },
        )
        .await;
    assert_eq!(lifetime.get_i32("was").ok(), Some(60), "{lifetime}");
    let fixed = admin
        .round_trip(
            doc! { "setParameter": 1, "featureCompatibilityVersion": "7.0", "$db": "admin" },
        )
        .await;
    assert_eq!(fixed.get_i32("code").ok(), Some(72), "{fixed}");
    let fcv = admin
        .round_trip(doc! { "getParameter": 1, "featureCompatibilityVersion": 1, "$db": "admin" })
        .await;
    assert_eq!(
        fcv.get_document("featureCompatibilityVersion")
            .unwrap()
            .get_str("version")
            .unwrap(),
        "8.0"
    );

    let status = admin.round_trip(doc! { "profile": -1, "$db": "db" }).await;
    assert_eq!(status.get_i32("was").ok(), Some(0), "{status}");
    let on = admin.round_trip(doc! { "profile": 2, "$db": "db" }).await;
    assert_eq!(on.get_i32("code").ok(), Some(20), "no profiler: {on}");
}

/// A router's `config` catalog, as `sh.status()` reads it: the cluster's version, its one
/// shard (blackpipe's store), every router, every database; and `balancerStatus`.
#[tokio::test]
async fn a_router_has_the_config_catalog_shells_read() {
    use blackpipe::deployment::{Deployment, DeploymentConfig};

    let deployment = Deployment::start(DeploymentConfig::sharded(2))
        .await
        .unwrap();
    let client = Client::with_uri_str(&deployment.uri()).await.unwrap();
    within(
        client
            .database("app")
            .collection::<Document>("c")
            .insert_one(doc! { "a": 1 }),
    )
    .await
    .unwrap();
    let config = client.database("config");
    let all = |name: &'static str| {
        let collection = config.collection::<Document>(name);
        async move {
            let cursor = within(collection.find(doc! {})).await.unwrap();
            futures_util::TryStreamExt::try_collect::<Vec<_>>(cursor)
                .await
                .unwrap()
        }
    };
    assert_eq!(all("version").await.len(), 1);
    assert_eq!(all("shards").await.len(), 1);
    assert_eq!(all("mongos").await.len(), 2, "both routers");
    let databases = all("databases").await;
    assert!(
        databases
            .iter()
            .any(|db| db.get_str("_id").is_ok_and(|id| id == "app")),
        "{databases:?}"
    );
    assert!(all("collections").await.is_empty(), "no sharded collection");
    let names = within(config.list_collection_names()).await.unwrap();
    assert!(names.contains(&"shards".to_owned()), "{names:?}");
    let balancer = admin(&client, doc! { "balancerStatus": 1 }).await;
    assert_eq!(
        balancer.get_bool("inBalancerRound").ok(),
        Some(false),
        "{balancer}"
    );
}
