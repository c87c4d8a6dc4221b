//! `$collStats`: the statistics stage, as mongod 8.0 parses and answers it.

use bson::{Bson, Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn coll_stats(store: &Store, collection: &str, options: Document) -> Document {
    run(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": [{ "$collStats": options }], "cursor": {} },
    )
}

fn only_output(reply: &Document) -> Document {
    let mut output = batch(reply);
    assert_eq!(output.len(), 1, "{reply}");
    output.remove(0)
}

#[test]
fn storage_stats_give_sizes_counts_and_indexes_of_the_documents_held() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "x": "a" }, doc! { "_id": 2, "x": "b" }],
    );
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }] },
    );
    let output = only_output(&coll_stats(
        &store,
        "c",
        doc! { "storageStats": {}, "count": {} },
    ));
    assert_eq!(output.get_str("ns").unwrap(), "db.c");
    assert!(output.get_datetime("localTime").is_ok(), "{output}");
    assert_eq!(output.get_i32("count").unwrap(), 2);
    let stats = output.get_document("storageStats").unwrap();
    let size =
        i32::try_from(crate::value_order::document_size(&doc! { "_id": 1, "x": "a" }) * 2).unwrap();
    assert_eq!(stats.get_i32("size").unwrap(), size);
    assert_eq!(stats.get_i32("count").unwrap(), 2);
    assert_eq!(stats.get_i32("avgObjSize").unwrap(), size / 2);
    assert_eq!(stats.get_i32("storageSize").unwrap(), size);
    assert!(!stats.get_bool("capped").unwrap());
    assert!(!stats.contains_key("maxSize"));
    assert_eq!(stats.get_i32("nindexes").unwrap(), 2);
    let sizes = stats.get_document("indexSizes").unwrap();
    let names: Vec<&str> = sizes.keys().map(String::as_str).collect();
    assert_eq!(names, ["_id_", "x_1"]);
    let total: i32 = sizes.values().map(|size| size.as_i32().unwrap()).sum();
    assert!(
        sizes.values().all(|size| size.as_i32().unwrap() > 0),
        "{sizes}"
    );
    assert_eq!(stats.get_i32("totalIndexSize").unwrap(), total);
    assert_eq!(stats.get_i32("totalSize").unwrap(), size + total);
    assert_eq!(stats.get_i32("scaleFactor").unwrap(), 1);
}

#[test]
fn a_capped_collection_reports_its_limits_scaled() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "create": "capped", "capped": true, "size": 4096, "max": 10 },
    );
    let output = only_output(&coll_stats(
        &store,
        "capped",
        doc! { "storageStats": { "scale": 1024 } },
    ));
    let stats = output.get_document("storageStats").unwrap();
    assert!(stats.get_bool("capped").unwrap());
    assert_eq!(stats.get_i32("max").unwrap(), 10);
    assert_eq!(stats.get_i32("maxSize").unwrap(), 4);
    assert_eq!(stats.get_i32("scaleFactor").unwrap(), 1024);
    assert!(!stats.contains_key("avgObjSize"), "no documents: {stats}");
}

#[test]
fn the_rest_of_the_pipeline_runs_on_its_output() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "create": "capped", "capped": true, "size": 4096 },
    );
    let reply = run(
        &store,
        "db",
        doc! {
            "aggregate": "capped",
            "pipeline": [
                { "$collStats": { "storageStats": {} } },
                { "$project": { "_id": 0, "capped": "$storageStats.capped", "maxSize": "$storageStats.maxSize" } },
            ],
            "cursor": {},
        },
    );
    assert_eq!(batch(&reply), [doc! { "capped": true, "maxSize": 4096 }]);
}

#[test]
fn without_sections_a_missing_collection_still_answers() {
    let store = new_store();
    let output = only_output(&coll_stats(&store, "none", doc! {}));
    assert_eq!(output.keys().collect::<Vec<_>>(), ["ns", "localTime"]);
}

#[test]
fn storage_stats_or_count_of_a_missing_collection_is_namespace_not_found() {
    let store = new_store();
    for options in [doc! { "storageStats": {} }, doc! { "count": {} }] {
        assert_eq!(error_code(&coll_stats(&store, "none", options)), 26);
    }
}

#[test]
fn malformed_options_get_mongods_parse_errors() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let cases: [(Bson, i32); 6] = [
        (Bson::Int32(1), 14),
        (Bson::Document(doc! { "nope": {} }), 40415),
        (Bson::Document(doc! { "storageStats": 1 }), 14),
        (
            Bson::Document(doc! { "storageStats": { "scale": 0 } }),
            51024,
        ),
        (
            Bson::Document(doc! { "storageStats": { "other": true } }),
            40415,
        ),
        (Bson::Document(doc! { "count": 1 }), 14),
    ];
    for (options, code) in cases {
        let reply = run(
            &store,
            "db",
            doc! { "aggregate": "c", "pipeline": [{ "$collStats": options.clone() }], "cursor": {} },
        );
        assert_eq!(error_code(&reply), code, "{options}: {reply}");
    }
}

#[test]
fn plan_cache_counters_are_refused_not_invented() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let reply = coll_stats(&store, "c", doc! { "queryExecStats": {} });
    assert_eq!(error_code(&reply), 2, "{reply}");
}

#[test]
fn latency_stats_report_what_the_caller_recorded() {
    use crate::LatencyClass;
    use std::time::Duration;

    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    store.record_latency("db.c", LatencyClass::Read, Duration::from_micros(100));
    store.record_latency("db.c", LatencyClass::Read, Duration::from_micros(300));
    store.record_latency("db.c", LatencyClass::Write, Duration::from_micros(5));
    store.record_latency("db.other", LatencyClass::Write, Duration::from_micros(7));
    let reply = coll_stats(&store, "c", doc! { "latencyStats": { "histograms": true } });
    let stats = batch(&reply)[0]
        .get_document("latencyStats")
        .unwrap()
        .clone();
    let reads = stats.get_document("reads").unwrap();
    assert_eq!(reads.get_i64("ops").unwrap(), 2);
    assert_eq!(reads.get_i64("latency").unwrap(), 400);
    let histogram = reads.get_array("histogram").unwrap();
    assert_eq!(
        histogram.len(),
        2,
        "100 µs and 300 µs fall in different buckets: {histogram:?}"
    );
    assert_eq!(
        stats
            .get_document("writes")
            .unwrap()
            .get_i64("ops")
            .unwrap(),
        1
    );
    assert_eq!(
        stats
            .get_document("commands")
            .unwrap()
            .get_i64("ops")
            .unwrap(),
        0
    );
    assert_eq!(LatencyClass::of("findAndModify"), LatencyClass::Write);
    let bad = coll_stats(&store, "c", doc! { "latencyStats": { "histograms": 1 } });
    assert_eq!(error_code(&bad), 14, "{bad}");
}

#[test]
fn only_as_the_first_stage() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let reply = run(
        &store,
        "db",
        doc! {
            "aggregate": "c",
            "pipeline": [{ "$match": {} }, { "$collStats": {} }],
            "cursor": {},
        },
    );
    assert_eq!(error_code(&reply), 40602);
}
