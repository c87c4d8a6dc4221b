//! Catalog commands: indexes, collections, databases.

use bson::{Bson, doc};

use super::{CommandContext, at, batch, error_code, insert, new_store, run, run_ok};

#[test]
fn create_list_and_drop_indexes() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [
            { "key": { "a": 1 }, "name": "a_1" },
            { "key": { "b": -1, "c": 1 }, "name": "b_-1_c_1", "unique": true, "sparse": true },
        ] },
    );
    assert_eq!(
        reply,
        doc! { "numIndexesBefore": 1, "numIndexesAfter": 3, "createdCollectionAutomatically": true, "ok": 1.0 }
    );
    let again = run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1 }, "name": "a_1" }] },
    );
    assert_eq!(
        again,
        doc! { "numIndexesBefore": 3, "numIndexesAfter": 3, "note": "all indexes already exist", "ok": 1.0 }
    );
    let listed = batch(&run_ok(&store, "db", doc! { "listIndexes": "c" }));
    assert_eq!(
        listed,
        vec![
            doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_" },
            doc! { "v": 2, "key": { "a": 1 }, "name": "a_1" },
            doc! { "v": 2, "key": { "b": -1, "c": 1 }, "name": "b_-1_c_1", "unique": true, "sparse": true },
        ]
    );
    let reply = run_ok(&store, "db", doc! { "listIndexes": "c" });
    assert_eq!(
        reply.get_document("cursor").unwrap().get_str("ns").unwrap(),
        "db.$cmd.listIndexes.c"
    );
    assert_eq!(
        run_ok(&store, "db", doc! { "dropIndexes": "c", "index": "a_1" }),
        doc! { "nIndexesWas": 3, "ok": 1.0 }
    );
    assert_eq!(
        error_code(&run(
            &store,
            "db",
            doc! { "dropIndexes": "c", "index": "a_1" }
        )),
        27
    );
    assert_eq!(
        error_code(&run(
            &store,
            "db",
            doc! { "dropIndexes": "c", "index": "_id_" }
        )),
        72
    );
    run_ok(&store, "db", doc! { "dropIndexes": "c", "index": "*" });
    assert_eq!(
        batch(&run_ok(&store, "db", doc! { "listIndexes": "c" })).len(),
        1
    );
    assert_eq!(
        error_code(&run(&store, "db", doc! { "listIndexes": "nope" })),
        26
    );
    let conflict = run(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1 }, "name": "x" }, { "key": { "z": 1 }, "name": "x" }] },
    );
    assert_eq!(error_code(&conflict), 86);
    assert_eq!(
        error_code(&run(
            &store,
            "db",
            doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1 } }] }
        )),
        9
    );
}

/// mongos answers listIndexes with a cursor in the collection's own namespace, and takes its
/// getMores naming the collection; mongod's cursor is in `<db>.$cmd.listIndexes.<coll>`.
#[test]
fn a_router_lists_indexes_in_the_collections_namespace() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1 }, "name": "a_1" }] },
    );
    let on_router = |command: bson::Document| {
        store
            .execute("db", &command, &CommandContext::new(at(0)).on_router())
            .reply
    };
    let opened = on_router(doc! { "listIndexes": "c", "cursor": { "batchSize": 1 } });
    let cursor = opened.get_document("cursor").unwrap();
    assert_eq!(cursor.get_str("ns").unwrap(), "db.c");
    let id = cursor.get_i64("id").unwrap();
    assert_ne!(id, 0, "one index is left for the getMore: {opened}");
    let more = on_router(doc! { "getMore": id, "collection": "c" });
    let rest = more.get_document("cursor").unwrap();
    assert_eq!(rest.get_str("ns").unwrap(), "db.c", "{more}");
    assert_eq!(rest.get_array("nextBatch").unwrap().len(), 1, "{more}");
    // mongod's cursor does not answer a getMore naming the collection.
    let opened = run_ok(
        &store,
        "db",
        doc! { "listIndexes": "c", "cursor": { "batchSize": 1 } },
    );
    let id = opened
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    assert_eq!(
        error_code(&run(
            &store,
            "db",
            doc! { "getMore": id, "collection": "c" }
        )),
        13
    );
}

#[test]
fn unique_index_build_fails_on_existing_duplicates() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "a": 1 }, doc! { "_id": 2, "a": 1 }],
    );
    let reply = run(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1 }, "name": "a_1", "unique": true }] },
    );
    assert_eq!(error_code(&reply), 11000);
    // Sparse unique indexes ignore documents without the field; array values index each element.
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "s", "indexes": [{ "key": { "t": 1 }, "name": "t_1", "unique": true, "sparse": true }] },
    );
    insert(
        &store,
        "s",
        vec![
            doc! { "_id": 1 },
            doc! { "_id": 2 },
            doc! { "_id": 3, "t": [1, 2] },
        ],
    );
    let clash = run_ok(
        &store,
        "db",
        doc! { "insert": "s", "documents": [{ "_id": 4, "t": 2 }] },
    );
    assert!(clash.contains_key("writeErrors"));
    // A partial index only covers matching documents.
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "p", "indexes": [{ "key": { "u": 1 }, "name": "u_1", "unique": true, "partialFilterExpression": { "active": true } }] },
    );
    insert(
        &store,
        "p",
        vec![
            doc! { "u": 1, "active": false },
            doc! { "u": 1, "active": true },
        ],
    );
    let clash = run_ok(
        &store,
        "db",
        doc! { "insert": "p", "documents": [{ "u": 1, "active": true }] },
    );
    assert!(clash.contains_key("writeErrors"));
}

#[test]
fn collections_and_databases() {
    let store = new_store();
    run_ok(&store, "db", doc! { "create": "b", "capped": false });
    run_ok(&store, "db", doc! { "create": "b", "capped": false });
    assert_eq!(
        error_code(&run(
            &store,
            "db",
            doc! { "create": "b", "capped": true, "size": 1024 }
        )),
        48
    );
    insert(&store, "a", vec![doc! { "x": 1 }]);
    let listed = batch(&run_ok(&store, "db", doc! { "listCollections": 1 }));
    let names: Vec<&str> = listed
        .iter()
        .map(|entry| entry.get_str("name").unwrap())
        .collect();
    assert_eq!(names, vec!["a", "b"]);
    assert_eq!(
        listed[1].get_document("options").unwrap(),
        &doc! { "capped": false }
    );
    assert!(matches!(
        listed[0].get_document("info").unwrap().get("uuid"),
        Some(Bson::Binary(_))
    ));
    let only_b = batch(&run_ok(
        &store,
        "db",
        doc! { "listCollections": 1, "filter": { "name": "b" }, "nameOnly": true },
    ));
    assert_eq!(only_b, vec![doc! { "name": "b", "type": "collection" }]);

    insert(&store, "c", vec![doc! { "x": 1 }]);
    run_ok(
        &store,
        "other",
        doc! { "insert": "z", "documents": [{ "y": "abc" }] },
    );
    let reply = run_ok(&store, "admin", doc! { "listDatabases": 1 });
    let names: Vec<&str> = reply
        .get_array("databases")
        .unwrap()
        .iter()
        .map(|entry| entry.as_document().unwrap().get_str("name").unwrap())
        .collect();
    assert_eq!(names, vec!["db", "other"]);
    assert!(reply.get_i64("totalSize").unwrap() > 0);
    let reply = run_ok(
        &store,
        "admin",
        doc! { "listDatabases": 1, "nameOnly": true, "filter": { "name": "other" } },
    );
    assert_eq!(
        reply,
        doc! { "databases": [{ "name": "other" }], "ok": 1.0 }
    );
    assert_eq!(
        error_code(&run(&store, "db", doc! { "listDatabases": 1 })),
        13
    );

    assert_eq!(
        run_ok(&store, "db", doc! { "drop": "c" }),
        doc! { "nIndexesWas": 1, "ns": "db.c", "ok": 1.0 }
    );
    assert_eq!(
        run_ok(&store, "db", doc! { "drop": "c" }),
        doc! { "ok": 1.0 }
    );
    run_ok(&store, "other", doc! { "dropDatabase": 1 });
    assert_eq!(store.database_names(), vec!["db".to_owned()]);
    let stats = run_ok(&store, "db", doc! { "dbStats": 1 });
    assert_eq!(stats.get_i64("collections").unwrap(), 2);
    assert_eq!(stats.get_i64("objects").unwrap(), 1);
}

#[test]
fn rename_collection_moves_documents_and_indexes() {
    let store = new_store();
    insert(&store, "from", vec![doc! { "_id": 1 }]);
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "from", "indexes": [{ "key": { "a": 1 }, "name": "a_1" }] },
    );
    insert(&store, "taken", vec![doc! { "_id": 9 }]);
    let rename = |to: &str, drop_target: bool| {
        run(
            &store,
            "admin",
            doc! { "renameCollection": "db.from", "to": to, "dropTarget": drop_target },
        )
    };
    assert_eq!(error_code(&rename("db.taken", false)), 48);
    assert_eq!(
        error_code(&run(
            &store,
            "db",
            doc! { "renameCollection": "db.from", "to": "db.x" }
        )),
        13
    );
    assert_eq!(rename("db.to", false), doc! { "ok": 1.0 });
    assert!(store.documents("db", "from").is_empty());
    assert_eq!(store.documents("db", "to"), vec![doc! { "_id": 1 }]);
    assert_eq!(
        batch(&run_ok(&store, "db", doc! { "listIndexes": "to" })).len(),
        2
    );
    assert_eq!(error_code(&rename("db.y", false)), 26);
    // The renamed collection reports its new namespace in errors.
    let reply = run_ok(
        &store,
        "db",
        doc! { "insert": "to", "documents": [{ "_id": 1 }] },
    );
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert!(
        error
            .get_str("errmsg")
            .unwrap()
            .contains("collection: db.to "),
        "{error}"
    );
    let reply = run(
        &store,
        "admin",
        doc! { "renameCollection": "db.to", "to": "other.moved", "dropTarget": true },
    );
    assert_eq!(reply, doc! { "ok": 1.0 });
    assert_eq!(store.documents("other", "moved"), vec![doc! { "_id": 1 }]);
}

#[test]
fn validate_counts_records_and_index_keys() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "a": [1, 2] },
            doc! { "_id": 2 },
            doc! { "_id": 3, "a": 3 },
        ],
    );
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [
            { "key": { "a": 1 }, "name": "a_1" },
            { "key": { "a": -1 }, "name": "a_-1_sparse", "sparse": true },
        ] },
    );
    let reply = run_ok(&store, "db", doc! { "validate": "c", "full": true });
    assert_eq!(reply.get_bool("valid").ok(), Some(true), "{reply}");
    assert_eq!(reply.get_i64("nrecords").ok(), Some(3));
    let keys = reply.get_document("keysPerIndex").unwrap();
    assert_eq!(keys.get_i64("_id_").ok(), Some(3));
    // Multikey: two keys for [1, 2]; the missing field is a null key, except in a sparse index.
    assert_eq!(keys.get_i64("a_1").ok(), Some(4), "{keys}");
    assert_eq!(keys.get_i64("a_-1_sparse").ok(), Some(3), "{keys}");
    let missing = run(&store, "db", doc! { "validate": "nothing" });
    assert_eq!(error_code(&missing), 26, "{missing}");
    let background = run(&store, "db", doc! { "validate": "c", "background": true });
    assert_eq!(error_code(&background), 115, "{background}");
    let both = run(
        &store,
        "db",
        doc! { "validate": "c", "background": true, "full": true },
    );
    assert_eq!(error_code(&both), 72, "{both}");
}
