//! `{aggregate: 1}`: pipelines whose first stage produces the documents.

use bson::{Bson, doc};

use super::{batch, cursor_id, error_code, new_store, run, run_ok};

#[test]
fn documents_feeds_the_rest_of_the_pipeline() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "any",
        doc! {
            "aggregate": 1,
            "pipeline": [
                { "$documents": [{ "x": 1 }, { "x": 2 }, { "x": 3 }] },
                { "$match": { "x": { "$gte": 2 } } },
                { "$project": { "_id": 0, "y": "$x" } },
            ],
            "cursor": {},
        },
    );
    assert_eq!(batch(&reply), [doc! { "y": 2 }, doc! { "y": 3 }]);
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(cursor.get_str("ns").unwrap(), "any.$cmd.aggregate");
}

#[test]
fn a_collectionless_cursor_is_continued_with_get_more() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "db",
        doc! {
            "aggregate": 1.0,
            "pipeline": [{ "$documents": [{ "x": 1 }, { "x": 2 }] }],
            "cursor": { "batchSize": 1 },
        },
    );
    let id = cursor_id(&reply);
    assert_ne!(id, 0);
    let more = run_ok(
        &store,
        "db",
        doc! { "getMore": id, "collection": "$cmd.aggregate" },
    );
    assert_eq!(batch(&more), [doc! { "x": 2 }]);
}

fn list_sessions(store: &crate::Store, lsid: Option<bson::Document>) -> Vec<bson::Document> {
    let mut command = doc! {
        "aggregate": 1,
        "pipeline": [{ "$listLocalSessions": { "allUsers": true } }],
        "cursor": {},
    };
    if let Some(lsid) = lsid {
        command.insert("lsid", lsid);
    }
    batch(&run_ok(store, "test", command))
}

fn lsid(byte: u8) -> bson::Document {
    let id = bson::Binary {
        subtype: bson::spec::BinarySubtype::Uuid,
        bytes: vec![byte; 16],
    };
    doc! { "id": id }
}

#[test]
fn list_local_sessions_lists_every_session_a_command_named() {
    let store = new_store();
    // Without a session anywhere, the cache is empty.
    assert_eq!(list_sessions(&store, None), Vec::<bson::Document>::new());
    // A plain read with a session caches it; the listing's own session is cached before it runs.
    run_ok(&store, "test", doc! { "find": "c", "lsid": lsid(1) });
    let listed = list_sessions(&store, Some(lsid(2)));
    let ids: Vec<_> = listed
        .iter()
        .map(|session| session.get_document("_id").unwrap().clone())
        .collect();
    let empty_user_digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    for (id, byte) in ids.iter().zip([1u8, 2]) {
        let Some(Bson::Binary(uuid)) = id.get("id") else {
            panic!("{id}")
        };
        assert_eq!(uuid.bytes, vec![byte; 16]);
        let Some(Bson::Binary(uid)) = id.get("uid") else {
            panic!("{id}")
        };
        let hex: String = uid.bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, empty_user_digest);
    }
    assert_eq!(ids.len(), 2, "{listed:?}");
    assert!(listed.iter().all(|s| s.get_datetime("lastUse").is_ok()));
}

#[test]
fn list_local_sessions_checks_its_options_and_the_lsid() {
    let store = new_store();
    for (options, code) in [
        (doc! { "bogus": 1 }, 40415),
        (doc! { "allUsers": 1 }, 14),
        (doc! { "users": "x" }, 14),
    ] {
        let command = doc! {
            "aggregate": 1, "pipeline": [{ "$listLocalSessions": options }], "cursor": {},
        };
        assert_eq!(
            error_code(&run(&store, "db", command.clone())),
            code,
            "{command}"
        );
    }
    let bad_lsid = doc! { "find": "c", "lsid": { "id": 5 } };
    assert_eq!(error_code(&run(&store, "db", bad_lsid)), 14);
}

#[test]
fn other_first_stages_need_a_collection() {
    let store = new_store();
    let cases = [
        (Bson::Array(vec![]), 73),
        (Bson::Array(vec![doc! { "$match": {} }.into()]), 73),
        (Bson::Array(vec![doc! { "$limit": 1 }.into()]), 73),
        (
            Bson::Array(vec![doc! { "$documents": 5 }.into()]),
            5_858_203,
        ),
        (
            Bson::Array(vec![doc! { "$documents": [1] }.into()]),
            5_858_203,
        ),
        (
            Bson::Array(vec![doc! { "$listLocalSessions": 1 }.into()]),
            14,
        ),
        (Bson::Array(vec![doc! { "$nope": 1 }.into()]), 40324),
    ];
    for (pipeline, code) in cases {
        let command = doc! { "aggregate": 1, "pipeline": pipeline, "cursor": {} };
        assert_eq!(
            error_code(&run(&store, "db", command.clone())),
            code,
            "{command}"
        );
    }
    let no_cursor = doc! { "aggregate": 1, "pipeline": [{ "$documents": [] }] };
    assert_eq!(error_code(&run(&store, "db", no_cursor)), 9);
}
