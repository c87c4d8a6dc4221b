use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, Timestamp, doc};

use crate::deployment::hello::{
    AwaitDecision, HelloFacts, OpTime, append_cluster_time, await_decision, hello_reply,
    parse_await,
};
use crate::deployment::{MemberOptions, Topology, TopologyVersion};

fn pid(n: u8) -> ObjectId {
    ObjectId::from_bytes([n; 12])
}

fn facts(legacy: bool) -> HelloFacts {
    let op_time = OpTime {
        ts: Timestamp {
            time: 100,
            increment: 3,
        },
        term: 1,
        wall: DateTime::from_millis(100_000),
    };
    HelloFacts {
        legacy,
        hello_ok: true,
        connection_id: 42,
        local_time: DateTime::from_millis(123_456),
        last_write: Some(op_time),
        majority_write: Some(op_time),
    }
}

fn mixed_set() -> Topology {
    Topology::replica_set(
        "rs0",
        vec![
            ("h:1".into(), MemberOptions::electable(), pid(1)),
            ("h:2".into(), MemberOptions::electable(), pid(2)),
            ("h:3".into(), MemberOptions::passive(), pid(3)),
            (
                "h:4".into(),
                MemberOptions::hidden().with_tag("dc", "east"),
                pid(4),
            ),
            ("h:5".into(), MemberOptions::arbiter(), pid(5)),
        ],
    )
    .unwrap()
}

fn strings(reply: &Document, key: &str) -> Vec<String> {
    reply
        .get_array(key)
        .unwrap()
        .iter()
        .map(|value| value.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn primary_reply_lists_members_by_kind_and_carries_election_id() {
    let topology = mixed_set();
    let reply = hello_reply(&topology, 0, &facts(false));
    assert_eq!(strings(&reply, "hosts"), vec!["h:1", "h:2"]);
    assert_eq!(strings(&reply, "passives"), vec!["h:3"]);
    assert_eq!(strings(&reply, "arbiters"), vec!["h:5"]);
    assert_eq!(reply.get_str("setName").unwrap(), "rs0");
    assert_eq!(reply.get_i64("setVersion").unwrap(), 1);
    assert!(reply.get_bool("isWritablePrimary").unwrap());
    assert!(!reply.get_bool("secondary").unwrap());
    assert_eq!(reply.get_str("primary").unwrap(), "h:1");
    assert_eq!(reply.get_str("me").unwrap(), "h:1");
    assert_eq!(
        reply.get_object_id("electionId").unwrap().to_hex(),
        "7fffffff0000000000000001"
    );
    assert_eq!(
        reply.get_document("topologyVersion").unwrap(),
        &doc! {"processId": pid(1), "counter": 0_i64}
    );
    let last_write = reply.get_document("lastWrite").unwrap();
    assert_eq!(
        last_write.get_document("opTime").unwrap(),
        &doc! {"ts": Timestamp {time: 100, increment: 3}, "t": 1_i64}
    );
    assert!(last_write.contains_key("majorityWriteDate"));
    assert_eq!(reply.get_i32("maxWireVersion").unwrap(), 25);
    assert_eq!(reply.get_i32("maxBsonObjectSize").unwrap(), 16_777_216);
    assert_eq!(reply.get_i32("maxMessageSizeBytes").unwrap(), 48_000_000);
    assert_eq!(reply.get_i32("maxWriteBatchSize").unwrap(), 100_000);
    assert_eq!(reply.get_i32("logicalSessionTimeoutMinutes").unwrap(), 30);
    assert_eq!(reply.get_i64("connectionId").unwrap(), 42);
    assert!(reply.get_bool("helloOk").unwrap());
    assert!(!reply.contains_key("ismaster"));
    assert!(!reply.contains_key("msg"));
}

#[test]
fn secondary_passive_hidden_and_arbiter_describe_themselves() {
    let topology = mixed_set();
    let secondary = hello_reply(&topology, 1, &facts(false));
    assert!(!secondary.get_bool("isWritablePrimary").unwrap());
    assert!(secondary.get_bool("secondary").unwrap());
    assert_eq!(secondary.get_str("primary").unwrap(), "h:1");
    assert!(!secondary.contains_key("electionId"));
    assert!(!secondary.contains_key("passive"));

    let passive = hello_reply(&topology, 2, &facts(false));
    assert!(passive.get_bool("passive").unwrap());

    let hidden = hello_reply(&topology, 3, &facts(false));
    assert!(hidden.get_bool("hidden").unwrap());
    assert!(hidden.get_bool("passive").unwrap());
    assert_eq!(hidden.get_document("tags").unwrap(), &doc! {"dc": "east"});
    assert_eq!(hidden.get_str("me").unwrap(), "h:4");

    let arbiter = hello_reply(&topology, 4, &facts(false));
    assert!(arbiter.get_bool("arbiterOnly").unwrap());
    assert!(!arbiter.get_bool("secondary").unwrap());
    assert!(!arbiter.contains_key("lastWrite"));
}

#[test]
fn legacy_hello_says_ismaster() {
    let topology = mixed_set();
    let reply = hello_reply(&topology, 0, &facts(true));
    assert!(reply.get_bool("ismaster").unwrap());
    assert!(!reply.contains_key("isWritablePrimary"));
}

#[test]
fn no_primary_field_while_the_set_has_none() {
    let mut topology = mixed_set();
    topology.kill(0).unwrap();
    let reply = hello_reply(&topology, 1, &facts(false));
    assert!(!reply.contains_key("primary"));
    assert_eq!(
        reply.get_document("topologyVersion").unwrap(),
        &doc! {"processId": pid(2), "counter": 1_i64}
    );
}

#[test]
fn removed_member_has_no_valid_config() {
    let mut topology = mixed_set();
    topology
        .reconfigure(
            vec![("h:1".into(), MemberOptions::electable())],
            None,
            || pid(9),
        )
        .unwrap();
    let reply = hello_reply(&topology, 1, &facts(false));
    assert!(!reply.contains_key("setName"));
    assert!(reply.get_bool("isreplicaset").unwrap());
    assert!(!reply.get_bool("isWritablePrimary").unwrap());
    let primary = hello_reply(&topology, 0, &facts(false));
    assert_eq!(strings(&primary, "hosts"), vec!["h:1"]);
    assert_eq!(primary.get_i64("setVersion").unwrap(), 2);
}

#[test]
fn standalone_and_router_replies() {
    let standalone = Topology::standalone("h:1", pid(1));
    let reply = hello_reply(&standalone, 0, &facts(false));
    assert!(reply.get_bool("isWritablePrimary").unwrap());
    assert!(!reply.contains_key("setName"));
    assert!(!reply.contains_key("msg"));
    assert!(!reply.contains_key("lastWrite"));
    assert!(reply.contains_key("topologyVersion"));

    let routers = Topology::sharded(vec![("h:1".into(), pid(1)), ("h:2".into(), pid(2))]);
    let reply = hello_reply(&routers, 1, &facts(false));
    assert_eq!(reply.get_str("msg").unwrap(), "isdbgrid");
    assert!(reply.get_bool("isWritablePrimary").unwrap());
    assert!(!reply.contains_key("hosts"));
}

#[test]
fn cluster_time_has_a_zero_signature() {
    let mut reply = doc! {"ok": 1.0};
    let time = Timestamp {
        time: 5,
        increment: 1,
    };
    append_cluster_time(&mut reply, time);
    let cluster_time = reply.get_document("$clusterTime").unwrap();
    assert_eq!(cluster_time.get_timestamp("clusterTime").unwrap(), time);
    let signature = cluster_time.get_document("signature").unwrap();
    assert_eq!(
        signature.get_binary_generic("hash").unwrap(),
        &vec![0u8; 20]
    );
    assert_eq!(reply.get_timestamp("operationTime").unwrap(), time);
}

#[test]
fn await_arguments_must_come_together() {
    assert_eq!(parse_await(&doc! {"hello": 1}), Ok(None));
    let version = doc! {"processId": pid(1), "counter": 4_i64};
    let parsed = parse_await(
        &doc! {"hello": 1, "topologyVersion": version.clone(), "maxAwaitTimeMS": 500_i64},
    )
    .unwrap()
    .unwrap();
    assert_eq!(parsed.max_await_ms, 500);
    assert_eq!(parsed.seen.counter, 4);
    let missing_time = parse_await(&doc! {"hello": 1, "topologyVersion": version.clone()});
    assert_eq!(missing_time.unwrap_err().code, 51760);
    let missing_version = parse_await(&doc! {"hello": 1, "maxAwaitTimeMS": 5});
    assert_eq!(missing_version.unwrap_err().code, 31368);
    let negative =
        parse_await(&doc! {"hello": 1, "topologyVersion": version, "maxAwaitTimeMS": -1});
    assert_eq!(negative.unwrap_err().code, 31373);
    let malformed =
        parse_await(&doc! {"hello": 1, "topologyVersion": Bson::Int32(1), "maxAwaitTimeMS": 1});
    assert!(malformed.is_err());
}

#[test]
fn await_decision_compares_process_and_counter() {
    let current = TopologyVersion {
        process_id: pid(1),
        counter: 3,
    };
    let same = current;
    let older = TopologyVersion {
        counter: 2,
        ..current
    };
    let newer = TopologyVersion {
        counter: 4,
        ..current
    };
    let other_process = TopologyVersion {
        process_id: pid(2),
        counter: 9,
    };
    assert_eq!(await_decision(current, same), AwaitDecision::Wait);
    assert_eq!(await_decision(current, older), AwaitDecision::ReplyNow);
    assert_eq!(
        await_decision(current, other_process),
        AwaitDecision::ReplyNow
    );
    assert_eq!(await_decision(current, newer), AwaitDecision::FutureCounter);
}
