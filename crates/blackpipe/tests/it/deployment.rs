//! The simulated deployment seen through raw wire clients: hello per role, awaitable and
//! streaming hello, role errors, and the control API.

use std::net::SocketAddr;
use std::time::Duration;

use blackpipe::deployment::{
    Deployment, DeploymentConfig, Health, MemberOptions, Role, TopologyVersion,
};
use bson::{Document, doc};
use steadfast_wire::{MsgFlags, OpMsg};

use crate::support::{RawClient, has_more_to_come, raw, reply_document, within};

pub(crate) async fn start(config: DeploymentConfig) -> Deployment {
    Deployment::start(config.with_seed(11))
        .await
        .expect("the deployment starts")
}

pub(crate) fn address(deployment: &Deployment, index: usize) -> SocketAddr {
    deployment
        .host(index)
        .expect("node exists")
        .parse()
        .expect("hosts are socket addresses")
}

pub(crate) async fn client(deployment: &Deployment, index: usize) -> RawClient {
    RawClient::connect(address(deployment, index)).await
}

fn version_of(reply: &Document) -> Document {
    reply.get_document("topologyVersion").unwrap().clone()
}

fn counter_of(reply: &Document) -> i64 {
    version_of(reply).get_i64("counter").unwrap()
}

fn strings(reply: &Document, key: &str) -> Vec<String> {
    reply
        .get_array(key)
        .unwrap()
        .iter()
        .map(|value| value.as_str().unwrap().to_owned())
        .collect()
}

fn code(reply: &Document) -> i32 {
    reply
        .get_i32("code")
        .unwrap_or_else(|_| panic!("an error: {reply}"))
}

fn labels(reply: &Document) -> Vec<String> {
    reply
        .get_array("errorLabels")
        .map(|labels| {
            labels
                .iter()
                .map(|l| l.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn hello() -> Document {
    doc! { "hello": 1, "$db": "admin" }
}

#[tokio::test]
async fn every_role_answers_hello_like_mongod() {
    let deployment = start(DeploymentConfig::replica_set_with(vec![
        MemberOptions::electable(),
        MemberOptions::electable(),
        MemberOptions::passive(),
        MemberOptions::hidden(),
        MemberOptions::arbiter(),
    ]))
    .await;
    let hosts = deployment.hosts();
    let mut primary = client(&deployment, 0).await;
    let reply = primary.round_trip(hello()).await;
    assert_eq!(strings(&reply, "hosts"), hosts[..2].to_vec());
    assert_eq!(strings(&reply, "passives"), vec![hosts[2].clone()]);
    assert_eq!(strings(&reply, "arbiters"), vec![hosts[4].clone()]);
    assert_eq!(reply.get_str("setName").unwrap(), "rs0");
    assert!(reply.get_bool("isWritablePrimary").unwrap());
    assert_eq!(reply.get_str("me").unwrap(), hosts[0]);
    assert_eq!(reply.get_str("primary").unwrap(), hosts[0]);
    assert!(reply.get_object_id("electionId").is_ok());
    assert!(reply.get_document("lastWrite").is_ok());
    assert!(reply.get_document("$clusterTime").is_ok());
    assert!(reply.get_timestamp("operationTime").is_ok());
    assert_eq!(reply.get_i64("connectionId").unwrap(), 1);

    let hidden = client(&deployment, 3).await.round_trip(hello()).await;
    assert!(hidden.get_bool("hidden").unwrap());
    assert!(hidden.get_bool("secondary").unwrap());
    let arbiter = client(&deployment, 4).await.round_trip(hello()).await;
    assert!(arbiter.get_bool("arbiterOnly").unwrap());
    assert!(!arbiter.get_bool("secondary").unwrap());

    // Legacy hello over OP_QUERY says `ismaster` and echoes helloOk.
    let mut legacy = client(&deployment, 1).await;
    legacy
        .send_query("admin", doc! { "isMaster": 1, "helloOk": true })
        .await;
    let reply = reply_document(&legacy.expect_message().await);
    assert!(!reply.get_bool("ismaster").unwrap());
    assert!(reply.get_bool("secondary").unwrap());
    assert!(reply.get_bool("helloOk").unwrap());
}

#[tokio::test]
async fn standalone_and_routers_answer_their_own_hello() {
    let standalone = start(DeploymentConfig::standalone()).await;
    let reply = client(&standalone, 0).await.round_trip(hello()).await;
    assert!(reply.get_bool("isWritablePrimary").unwrap());
    assert!(!reply.contains_key("setName"));
    assert!(!reply.contains_key("$clusterTime"));
    assert!(standalone.uri().ends_with("directConnection=true"));

    let sharded = start(DeploymentConfig::sharded(2)).await;
    for index in 0..2 {
        let reply = client(&sharded, index).await.round_trip(hello()).await;
        assert_eq!(reply.get_str("msg").unwrap(), "isdbgrid");
        assert!(reply.get_document("$clusterTime").is_ok());
    }
}

#[tokio::test]
async fn awaitable_hello_replies_when_the_topology_changes() {
    let deployment = start(DeploymentConfig::replica_set(3).with_auto_failover(false)).await;
    let mut secondary = client(&deployment, 1).await;
    let first = secondary.round_trip(hello()).await;
    let mut awaitable = hello();
    awaitable.insert("topologyVersion", version_of(&first));
    awaitable.insert("maxAwaitTimeMS", 600_000_i64);
    let id = secondary.send_command(awaitable).await;
    // Whether the stepdown lands before or after the server starts waiting, the counter it
    // replies with is higher than the one the client sent.
    deployment.step_down(Duration::from_secs(60)).unwrap();
    let message = secondary.expect_message().await;
    assert_eq!(message.response_to, id);
    let reply = reply_document(&message);
    assert_eq!(counter_of(&reply), counter_of(&first) + 1);
    assert!(
        !reply.contains_key("primary"),
        "no primary after the stepdown"
    );
}

#[tokio::test]
async fn awaitable_hello_replies_at_max_await_time_without_a_change() {
    let deployment = start(DeploymentConfig::replica_set(1)).await;
    let mut node = client(&deployment, 0).await;
    let first = node.round_trip(hello()).await;
    let mut awaitable = hello();
    awaitable.insert("topologyVersion", version_of(&first));
    awaitable.insert("maxAwaitTimeMS", 50_i64);
    let reply = node.round_trip(awaitable).await;
    assert_eq!(version_of(&reply), version_of(&first));

    let mut half = hello();
    half.insert("maxAwaitTimeMS", 50_i64);
    assert_eq!(code(&node.round_trip(half).await), 31368);
}

#[tokio::test]
async fn exhaust_hello_streams_replies_with_more_to_come() {
    let deployment = start(DeploymentConfig::replica_set(3).with_auto_failover(false)).await;
    let mut monitor = client(&deployment, 2).await;
    let first = monitor.round_trip(hello()).await;
    let mut streaming = hello();
    streaming.insert("topologyVersion", version_of(&first));
    streaming.insert("maxAwaitTimeMS", 100_i64);
    let flags = MsgFlags::empty().with(MsgFlags::EXHAUST_ALLOWED, true);
    let id = monitor
        .send_msg(OpMsg::new(raw(&streaming)).with_flags(flags), None)
        .await;
    // Without a change the server still replies every maxAwaitTimeMS, each reply answering
    // the previous one.
    let mut response_to = id;
    for _ in 0..2 {
        let message = monitor.expect_message().await;
        assert!(has_more_to_come(&message));
        assert_eq!(message.response_to, response_to);
        assert_eq!(counter_of(&reply_document(&message)), counter_of(&first));
        response_to = message.request_id;
    }
    deployment.elect(1).unwrap();
    let changed = loop {
        let message = monitor.expect_message().await;
        assert!(has_more_to_come(&message));
        let reply = reply_document(&message);
        if counter_of(&reply) > counter_of(&first) {
            break reply;
        }
    };
    assert_eq!(changed.get_str("primary").unwrap(), deployment.hosts()[1]);
}

#[tokio::test]
async fn writes_to_secondaries_and_reads_without_secondary_ok_fail() {
    let deployment = start(DeploymentConfig::replica_set_with(vec![
        MemberOptions::electable(),
        MemberOptions::electable(),
        MemberOptions::arbiter(),
    ]))
    .await;
    let mut secondary = client(&deployment, 1).await;
    let lsid = doc! { "id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16] } };
    let insert = doc! {
        "insert": "c", "documents": [{"_id": 1}], "lsid": lsid, "txnNumber": 1_i64, "$db": "db",
    };
    let reply = secondary.round_trip(insert.clone()).await;
    assert_eq!(code(&reply), 10107);
    assert_eq!(reply.get_str("errmsg").unwrap(), "not primary");
    assert_eq!(labels(&reply), vec!["RetryableWriteError"]);
    assert!(reply.get_document("topologyVersion").is_ok());

    let find = doc! { "find": "c", "$db": "db" };
    let reply = secondary.round_trip(find.clone()).await;
    assert_eq!(code(&reply), 13435);
    assert!(
        labels(&reply).is_empty(),
        "reads get no RetryableWriteError"
    );
    let mut secondary_ok = find.clone();
    secondary_ok.insert("$readPreference", doc! { "mode": "secondaryPreferred" });
    let reply = secondary.round_trip(secondary_ok.clone()).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");

    let mut arbiter = client(&deployment, 2).await;
    assert_eq!(code(&arbiter.round_trip(secondary_ok).await), 13436);
    assert_eq!(code(&arbiter.round_trip(insert).await), 10107);

    let mut primary = client(&deployment, 0).await;
    let reply = primary
        .round_trip(doc! { "insert": "c", "documents": [{"_id": 1}], "$db": "db" })
        .await;
    assert_eq!(reply.get_i32("n").unwrap(), 1, "{reply}");
    // Everyone shares the store: the secondary reads what the primary wrote.
    let mut read = find;
    read.insert("$readPreference", doc! { "mode": "secondary" });
    let reply = secondary.round_trip(read).await;
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 1);
}

#[tokio::test]
async fn killed_node_refuses_connections_and_restarts_as_a_new_process() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let before = client(&deployment, 0).await.round_trip(hello()).await;
    let mut open = client(&deployment, 0).await;
    deployment.kill(0).await.unwrap();
    open.expect_closed().await;
    assert!(
        tokio::net::TcpStream::connect(address(&deployment, 0))
            .await
            .is_err()
    );
    // The set elects someone else.
    let primary = within(deployment.wait_for_primary()).await;
    assert_ne!(primary, 0);

    deployment.restart(0).await.unwrap();
    let after = client(&deployment, 0).await.round_trip(hello()).await;
    assert_ne!(
        version_of(&after).get_object_id("processId").unwrap(),
        version_of(&before).get_object_id("processId").unwrap()
    );
    assert_eq!(counter_of(&after), 0);
    assert!(after.get_bool("secondary").unwrap());
    assert_eq!(
        after.get_str("primary").unwrap(),
        deployment.hosts()[primary]
    );
}

#[tokio::test]
async fn partitioning_the_primary_elects_another() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    deployment.partition(0).unwrap();
    let primary = within(deployment.wait_for_primary()).await;
    assert_ne!(primary, 0);
    let topology = deployment.topology();
    assert_eq!(topology.node(0).unwrap().health(), Health::Partitioned);
    assert_eq!(topology.term(), 2);
}

#[tokio::test]
async fn in_flight_writes_fail_when_the_primary_steps_down() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    deployment.slow(0, Duration::from_secs(600)).unwrap();
    let mut writer = client(&deployment, 0).await;
    let counters = deployment.counters(0).unwrap();
    let before = counters.commands();
    let lsid = doc! { "id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![9; 16] } };
    writer
        .send_command(doc! {
            "insert": "c", "documents": [{"_id": 1}], "lsid": lsid, "txnNumber": 3_i64, "$db": "db",
        })
        .await;
    within(async {
        while counters.commands() == before {
            tokio::task::yield_now().await;
        }
    })
    .await;
    deployment.step_down(Duration::from_secs(60)).unwrap();
    let reply = reply_document(&writer.expect_message().await);
    assert_eq!(code(&reply), 11602);
    assert_eq!(labels(&reply), vec!["RetryableWriteError"]);
    assert_eq!(deployment.store().writes_applied("db.c"), 0);
}

#[tokio::test]
async fn shutting_down_node_answers_shutdown_in_progress() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let mut node = client(&deployment, 1).await;
    let shutdown = tokio::spawn({
        let mut admin = client(&deployment, 0).await;
        async move {
            admin
                .round_trip(doc! { "blackpipe": "shutdown", "member": 1, "quiesceMS": 600_000, "$db": "admin" })
                .await
        }
    });
    assert_eq!(within(shutdown).await.unwrap().get_f64("ok").unwrap(), 1.0);
    within(deployment.wait_until(|t| t.node(1).unwrap().health() == Health::ShuttingDown)).await;
    let reply = node.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
    assert_eq!(code(&reply), 91);
    assert!(reply.get_document("topologyVersion").is_ok());
}

#[tokio::test]
async fn overload_rejects_commands_with_backoff_but_not_hello() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let mut node = client(&deployment, 0).await;
    let reply = node
        .round_trip(doc! { "blackpipe": "overload", "mode": {"times": 1}, "baseBackoffMS": 75, "$db": "admin" })
        .await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    assert_eq!(node.round_trip(hello()).await.get_f64("ok").unwrap(), 1.0);
    let rejected = node.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
    assert_eq!(code(&rejected), 462);
    assert_eq!(
        rejected.get_str("codeName").unwrap(),
        "IngressRequestRateLimitExceeded"
    );
    assert_eq!(
        labels(&rejected),
        vec!["SystemOverloadedError", "RetryableError"]
    );
    assert_eq!(rejected.get_i64("baseBackoffMS").unwrap(), 75);
    let next = node.round_trip(doc! { "ping": 1, "$db": "admin" }).await;
    assert_eq!(next.get_f64("ok").unwrap(), 1.0);
}

#[tokio::test]
async fn reconfig_bumps_set_version_and_adds_a_listening_member() {
    let deployment = start(DeploymentConfig::replica_set(2)).await;
    let mut admin = client(&deployment, 0).await;
    let added = admin
        .round_trip(doc! { "blackpipe": "addMember", "priority": 0, "$db": "admin" })
        .await;
    let host = added.get_str("host").unwrap().to_owned();
    let reply = admin.round_trip(hello()).await;
    assert_eq!(reply.get_i64("setVersion").unwrap(), 2);
    assert_eq!(strings(&reply, "passives"), vec![host.clone()]);
    let mut new_member = RawClient::connect(host.parse().unwrap()).await;
    let reply = new_member.round_trip(hello()).await;
    assert!(reply.get_bool("passive").unwrap());

    let config = admin
        .round_trip(doc! { "replSetGetConfig": 1, "$db": "admin" })
        .await;
    let mut config = config.get_document("config").unwrap().clone();
    let members = config.get_array("members").unwrap().clone();
    config.insert("version", 9_i64);
    config.insert("members", members[..2].to_vec());
    let reply = admin
        .round_trip(doc! { "replSetReconfig": config, "$db": "admin" })
        .await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    let reply = new_member.round_trip(hello()).await;
    assert!(reply.get_bool("isreplicaset").unwrap(), "{reply}");
    assert_eq!(deployment.topology().node(2).unwrap().role(), Role::Removed);
}

#[tokio::test]
async fn mongod_replica_set_commands_work_on_the_receiving_member() {
    let deployment = start(DeploymentConfig::replica_set(3).with_auto_failover(false)).await;
    let mut secondary = client(&deployment, 1).await;
    let reply = secondary
        .round_trip(doc! { "replSetStepDown": 60, "$db": "admin" })
        .await;
    assert_eq!(code(&reply), 10107);
    let reply = secondary
        .round_trip(doc! { "replSetStepDown": 60, "$db": "db" })
        .await;
    assert_eq!(code(&reply), 13);

    let mut primary = client(&deployment, 0).await;
    assert_eq!(
        code(
            &primary
                .round_trip(doc! { "replSetFreeze": 30, "$db": "admin" })
                .await
        ),
        95
    );
    let reply = primary
        .round_trip(doc! { "replSetStepDown": 60, "$db": "admin" })
        .await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    assert_eq!(deployment.primary(), None);
    let reply = secondary
        .round_trip(doc! { "replSetStepUp": 1, "$db": "admin" })
        .await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    assert_eq!(deployment.primary(), Some(1));
    let status = secondary
        .round_trip(doc! { "replSetGetStatus": 1, "$db": "admin" })
        .await;
    let states: Vec<&str> = status
        .get_array("members")
        .unwrap()
        .iter()
        .map(|m| m.as_document().unwrap().get_str("stateStr").unwrap())
        .collect();
    assert_eq!(states, vec!["SECONDARY", "PRIMARY", "SECONDARY"]);
}

#[tokio::test]
async fn blackpipe_admin_commands_control_the_set() {
    let deployment = start(DeploymentConfig::replica_set(3).with_auto_failover(false)).await;
    let mut admin = client(&deployment, 2).await;
    let ok = |reply: Document| assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    ok(admin
        .round_trip(doc! { "blackpipe": "stepDown", "$db": "admin" })
        .await);
    let status = admin
        .round_trip(doc! { "blackpipe": "status", "$db": "admin" })
        .await;
    assert!(!status.contains_key("primary"));
    ok(admin
        .round_trip(doc! { "blackpipe": "elect", "member": 1, "delayMS": 20, "$db": "admin" })
        .await);
    assert_eq!(within(deployment.wait_for_primary()).await, 1);
    let unknown = admin
        .round_trip(doc! { "blackpipe": "kill", "member": 7, "$db": "admin" })
        .await;
    assert_eq!(code(&unknown), 2);
    let reply = admin
        .round_trip(doc! { "blackpipe": "kill", "member": 0, "$db": "admin" })
        .await;
    ok(reply);
    assert!(
        tokio::net::TcpStream::connect(address(&deployment, 0))
            .await
            .is_err()
    );
    ok(admin
        .round_trip(doc! { "blackpipe": "restart", "member": 0, "$db": "admin" })
        .await);
    assert_eq!(deployment.topology().node(0).unwrap().health(), Health::Up);
    // Killing the node that receives the command: the reply arrives, then the node dies.
    let reply = admin
        .round_trip(doc! { "blackpipe": "kill", "$db": "admin" })
        .await;
    ok(reply);
    admin.expect_closed().await;
}

#[tokio::test]
async fn topology_versions_are_published_to_every_node() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let before: Vec<TopologyVersion> = deployment
        .topology()
        .nodes()
        .iter()
        .map(|node| node.topology_version())
        .collect();
    deployment.freeze(1, Duration::from_secs(1)).unwrap();
    deployment.step_down(Duration::from_secs(60)).unwrap();
    let primary = within(deployment.wait_for_primary()).await;
    assert_eq!(primary, 2, "member 1 is frozen, member 0 stepped down");
    for (index, node) in deployment.topology().nodes().iter().enumerate() {
        assert_eq!(node.topology_version().counter, before[index].counter + 2);
        let reply = client(&deployment, index).await.round_trip(hello()).await;
        assert_eq!(counter_of(&reply), before[index].counter + 2);
        assert_eq!(
            reply.get("electionId").is_some(),
            index == 2,
            "only the primary reports electionId"
        );
    }
}

#[tokio::test]
async fn secondaries_report_a_lagging_last_write() {
    let deployment = start(DeploymentConfig::replica_set(2)).await;
    deployment.set_replication_lag(Duration::from_secs(3600));
    let mut primary = client(&deployment, 0).await;
    let reply = primary
        .round_trip(doc! { "insert": "c", "documents": [{"_id": 1}], "writeConcern": { "w": 1 }, "$db": "db" })
        .await;
    assert_eq!(reply.get_i32("n").unwrap(), 1);
    let op_time = |reply: &Document| {
        reply
            .get_document("lastWrite")
            .unwrap()
            .get_document("opTime")
            .unwrap()
            .get_timestamp("ts")
            .unwrap()
    };
    let on_primary = primary.round_trip(hello()).await;
    let on_secondary = client(&deployment, 1).await.round_trip(hello()).await;
    assert!(op_time(&on_primary) > op_time(&on_secondary));
    let majority = on_primary
        .get_document("lastWrite")
        .unwrap()
        .get_document("majorityOpTime")
        .unwrap()
        .get_timestamp("ts")
        .unwrap();
    assert_eq!(majority, op_time(&on_secondary));
    // Without lag, both report the write.
    deployment.set_replication_lag(Duration::ZERO);
    let on_secondary = client(&deployment, 1).await.round_trip(hello()).await;
    assert_eq!(op_time(&on_primary), op_time(&on_secondary));
    // The cluster time gossiped in every reply has reached the write too.
    assert_eq!(
        on_secondary
            .get_document("$clusterTime")
            .unwrap()
            .get_timestamp("clusterTime")
            .unwrap(),
        op_time(&on_primary)
    );
}

#[tokio::test]
async fn session_commands_are_accepted() {
    let deployment = start(DeploymentConfig::replica_set(2)).await;
    let mut node = client(&deployment, 1).await;
    let hello_reply = node.round_trip(hello()).await;
    assert_eq!(
        hello_reply.get_i32("logicalSessionTimeoutMinutes").unwrap(),
        30
    );
    let lsid = doc! { "id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![1; 16] } };
    for command in [
        doc! { "endSessions": [lsid.clone()], "$db": "admin" },
        doc! { "killAllSessions": [], "$db": "admin" },
        doc! { "killSessions": [lsid], "$db": "admin" },
    ] {
        let reply = node.round_trip(command.clone()).await;
        assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{command} -> {reply}");
    }
}

/// A handshake hello naming the application.
fn handshake(app_name: &str) -> Document {
    let mut command = hello();
    command.insert("client", doc! { "application": { "name": app_name } });
    command
}

async fn fail_hello(deployment: &Deployment, data: Document, times: i32) {
    let mut admin = client(deployment, 0).await;
    let mut fail_point = doc! {
        "configureFailPoint": "failCommand",
        "mode": { "times": times },
        "data": data,
    };
    fail_point.insert("$db", "admin");
    let reply = admin.round_trip(fail_point).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
}

#[tokio::test]
async fn fail_command_on_hello_fails_the_handshake_of_the_named_application_only() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let data =
        doc! { "failCommands": ["hello", "isMaster"], "appName": "monitorA", "errorCode": 91 };
    fail_hello(&deployment, data, 2).await;
    let mut other = client(&deployment, 0).await;
    let reply = other.round_trip(handshake("someoneElse")).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    let mut named = client(&deployment, 0).await;
    assert_eq!(code(&named.round_trip(handshake("monitorA")).await), 91);

    let data = doc! { "failCommands": ["hello"], "appName": "monitorB", "closeConnection": true };
    fail_hello(&deployment, data, 1).await;
    let mut closed = client(&deployment, 0).await;
    closed.send_command(handshake("monitorB")).await;
    closed.expect_closed().await;
}

/// mongod runs every turn of an exhaust hello as the command again: a fail point set while
/// the stream runs ends it with the error (no moreToCome), as a monitor must see.
#[tokio::test]
async fn fail_command_on_hello_ends_a_streaming_hello() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let mut monitor = client(&deployment, 0).await;
    let first = monitor.round_trip(handshake("streamer")).await;
    let mut streaming = hello();
    streaming.insert("topologyVersion", version_of(&first));
    streaming.insert("maxAwaitTimeMS", 50_i64);
    let flags = MsgFlags::empty().with(MsgFlags::EXHAUST_ALLOWED, true);
    monitor
        .send_msg(OpMsg::new(raw(&streaming)).with_flags(flags), None)
        .await;
    assert!(has_more_to_come(&monitor.expect_message().await));
    let data = doc! {
        "failCommands": ["hello"], "appName": "streamer", "errorCode": 91,
        "blockConnection": true, "blockTimeMS": 10,
    };
    fail_hello(&deployment, data, 1).await;
    let failed = within(async {
        loop {
            let message = monitor.expect_message().await;
            let reply = reply_document(&message);
            if reply.get_f64("ok").unwrap_or(1.0) == 0.0 {
                assert!(!has_more_to_come(&message), "an error ends the stream");
                break reply;
            }
        }
    })
    .await;
    assert_eq!(code(&failed), 91);
    // Not in quiesce mode: an injected shutdown error carries no topologyVersion.
    assert!(!failed.contains_key("topologyVersion"), "{failed}");
}
