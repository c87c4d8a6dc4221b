//! Serde shapes of the option types: the field names and encodings the official driver uses.

use std::time::Duration;

use bson::{Bson, doc};

use super::*;
use crate::Namespace;

fn to_doc<T: serde::Serialize>(value: &T) -> bson::Document {
    bson::serialize_to_document(value).expect("serializable")
}

#[test]
fn find_options_use_the_command_names() {
    let options = FindOptions::builder()
        .allow_disk_use(true)
        .batch_size(5)
        .limit(-10)
        .max_time(Duration::from_millis(1500))
        .skip(3)
        .let_vars(doc! { "x": 1 })
        .cursor_type(CursorType::Tailable)
        .read_concern(ReadConcern::majority())
        .selection_criteria(SelectionCriteria::ReadPreference(ReadPreference::nearest(
            None,
        )))
        .build();
    assert_eq!(
        to_doc(&options),
        doc! {
            "allowDiskUse": true,
            "batchSize": 5_i32,
            "limit": 10_i64,
            "maxTimeMS": 1500_i64,
            "skip": 3_i64,
            "let": { "x": 1 },
        }
    );
}

#[test]
fn aggregate_options_round_trip() {
    let options = AggregateOptions::builder()
        .allow_disk_use(true)
        .batch_size(100)
        .max_time(Duration::from_millis(250))
        .max_await_time(Duration::from_millis(40))
        .comment(Bson::String("report".into()))
        .hint(Hint::Name("a_1".into()))
        .let_vars(doc! { "limit": 3 })
        .build();
    let written = to_doc(&options);
    assert_eq!(written.get_i64("maxTimeMS").ok(), Some(250));
    assert_eq!(written.get_i64("maxAwaitTimeMS").ok(), Some(40));
    assert_eq!(written.get_str("hint").ok(), Some("a_1"));
    // As the official driver, the batch size is written as the command's cursor document.
    assert_eq!(
        written.get_document("cursor").ok(),
        Some(&doc! { "batchSize": 100 })
    );
    let read: AggregateOptions = bson::deserialize_from_document(written).expect("readable");
    assert_eq!(
        read,
        AggregateOptions {
            batch_size: None,
            ..options
        }
    );
}

#[test]
fn read_only_options_deserialize_from_official_names() {
    let count: CountOptions = bson::deserialize_from_document(doc! {
        "limit": 5_i64,
        "maxTimeMS": 100,
        "hint": { "a": 1 },
        "selectionCriteria": { "mode": "secondary" },
    })
    .expect("readable");
    assert_eq!(count.limit, Some(5));
    assert_eq!(count.max_time, Some(Duration::from_millis(100)));
    assert_eq!(count.hint, Some(Hint::Keys(doc! { "a": 1 })));
    assert_eq!(
        count.selection_criteria,
        Some(SelectionCriteria::ReadPreference(
            ReadPreference::secondary(None)
        ))
    );
    let update: UpdateOptions = bson::deserialize_from_document(doc! {
        "upsert": true,
        "arrayFilters": [{ "e.x": 1 }],
        "let": { "v": 2 },
        "writeConcern": { "w": "majority" },
    })
    .expect("readable");
    assert_eq!(update.upsert, Some(true));
    assert_eq!(update.let_vars, Some(doc! { "v": 2 }));
    assert!(update.write_concern.is_some());
}

#[test]
fn write_concern_is_not_serialized_but_is_read() {
    let options = InsertManyOptions::builder()
        .ordered(false)
        .write_concern(WriteConcern::majority())
        .build();
    assert_eq!(to_doc(&options), doc! { "ordered": false });
    let read: InsertManyOptions =
        bson::deserialize_from_document(doc! { "ordered": false, "writeConcern": { "w": 1 } })
            .expect("readable");
    assert_eq!(read.ordered, Some(false));
    assert!(read.write_concern.is_some());
}

#[test]
fn index_options_round_trip_with_index_spec_names() {
    let options = IndexOptions::builder()
        .name("ttl".to_string())
        .expire_after(Duration::from_secs(3600))
        .version(IndexVersion::V2)
        .sphere_2d_index_version(Sphere2DIndexVersion::V3)
        .default_language("french".to_string())
        .bits(26)
        .clustered(true)
        .build();
    let written = to_doc(&options);
    assert_eq!(
        written,
        doc! {
            "expireAfterSeconds": 3600_i64,
            "name": "ttl",
            "v": 2,
            "default_language": "french",
            "2dsphereIndexVersion": 3,
            "bits": 26,
            "clustered": true,
        }
    );
    let read: IndexOptions = bson::deserialize_from_document(written).expect("readable");
    assert_eq!(read, options);
}

#[test]
fn create_index_options_write_the_commit_quorum() {
    let majority = CreateIndexOptions::builder()
        .commit_quorum(CommitQuorum::Majority)
        .build();
    assert_eq!(to_doc(&majority), doc! { "commitQuorum": "majority" });
    let nodes = CreateIndexOptions::builder()
        .commit_quorum(CommitQuorum::Nodes(2))
        .max_time(Duration::from_secs(1))
        .build();
    assert_eq!(
        to_doc(&nodes),
        doc! { "commitQuorum": 2, "maxTimeMS": 1000_i64 }
    );
    let read: CommitQuorum = bson::deserialize_from_bson(Bson::String("tagged".into())).unwrap();
    assert_eq!(read, CommitQuorum::Custom("tagged".into()));
}

#[test]
fn transaction_options_write_max_time_and_read_max_commit_time() {
    let options = TransactionOptions::builder()
        .max_commit_time(Duration::from_millis(700))
        .write_concern(WriteConcern::majority())
        .build();
    assert_eq!(to_doc(&options), doc! { "maxTimeMS": 700_i64 });
    let read: TransactionOptions =
        bson::deserialize_from_document(doc! { "maxCommitTimeMS": 700 }).expect("readable");
    assert_eq!(read.max_commit_time, Some(Duration::from_millis(700)));
}

#[test]
fn run_cursor_command_options_read_max_time_under_both_names() {
    let read: RunCursorCommandOptions = bson::deserialize_from_document(doc! {
        "maxTimeMS": 30,
        "batchSize": 10,
        "cursorType": "tailableAwait",
        "comment": "c",
    })
    .expect("readable");
    assert_eq!(read.max_time, Some(Duration::from_millis(30)));
    assert_eq!(read.batch_size, Some(10));
    assert_eq!(read.cursor_type, Some(CursorType::TailableAwait));
    let legacy: RunCursorCommandOptions =
        bson::deserialize_from_document(doc! { "maxtime": 5 }).expect("readable");
    assert_eq!(legacy.max_time, Some(Duration::from_millis(5)));
    let empty: DropSearchIndexOptions = bson::deserialize_from_document(doc! {}).expect("readable");
    assert_eq!(empty, DropSearchIndexOptions::builder().build());
}

#[test]
fn server_api_uses_command_names() {
    let api = ServerApi::builder()
        .version(ServerApiVersion::V1)
        .strict(true)
        .build();
    let written = to_doc(&api);
    assert_eq!(written, doc! { "apiVersion": "1", "apiStrict": true });
    assert_eq!(
        bson::deserialize_from_document::<ServerApi>(written).unwrap(),
        api
    );
    assert_eq!(ServerApiVersion::V1.to_string(), "1");
    assert_eq!(
        "1".parse::<ServerApiVersion>().unwrap(),
        ServerApiVersion::V1
    );
    let error = "2".parse::<ServerApiVersion>().unwrap_err();
    assert!(error.to_string().contains("\"2\""), "{error}");
}

#[test]
fn tls_and_driver_info_deserialize() {
    let tls: Tls = bson::deserialize_from_bson(Bson::Document(doc! {
        "Enabled": { "ca_file_path": "/ca.pem", "allow_invalid_hostnames": true }
    }))
    .expect("readable");
    let Tls::Enabled(options) = tls else {
        panic!("TLS on");
    };
    assert_eq!(options.ca_file_path, Some("/ca.pem".into()));
    assert_eq!(options.allow_invalid_hostnames, Some(true));
    let off: Tls = bson::deserialize_from_bson(Bson::String("Disabled".into())).unwrap();
    assert_eq!(off, Tls::Disabled);
    let on: Option<Tls> = TlsOptions::default().into();
    assert!(matches!(on, Some(Tls::Enabled(_))));
    let info: DriverInfo =
        bson::deserialize_from_document(doc! { "name": "odm", "version": "2" }).unwrap();
    assert_eq!(info.name, "odm");
    assert_eq!(info.version.as_deref(), Some("2"));
}

#[test]
fn client_options_deserialize_and_compare() {
    let options: ClientOptions = bson::deserialize_from_document(doc! {
        "hosts": ["db1:27018"],
        "appName": "shop",
        "loadbalanced": false,
        "maxPoolSize": 7,
        "serverApi": { "apiVersion": "1" },
        "timeoutMS": 2500,
    })
    .expect("readable");
    assert_eq!(options.hosts, vec![ServerAddress::tcp("db1", 27018)]);
    assert_eq!(options.app_name.as_deref(), Some("shop"));
    assert_eq!(options.load_balanced, Some(false));
    assert_eq!(options.timeout, Some(Duration::from_millis(2500)));
    assert_eq!(options, options.clone());
    let mut other = options.clone();
    other.max_pool_size = Some(8);
    assert_ne!(options, other);
    let default: ClientOptions = bson::deserialize_from_document(doc! {}).unwrap();
    assert_eq!(default.hosts, vec![ServerAddress::default()]);
}

#[test]
fn update_modifications_and_write_models_serialize() {
    let pipeline = UpdateModifications::Pipeline(vec![doc! { "$set": { "a": 1 } }]);
    let bson = bson::serialize_to_bson(&pipeline).unwrap();
    assert!(matches!(bson, Bson::Array(_)));
    let back: UpdateModifications = bson::deserialize_from_bson(bson).unwrap();
    assert_eq!(back, pipeline);
    let model = WriteModel::UpdateOne(
        UpdateOneModel::builder()
            .namespace(Namespace::new("db", "c"))
            .filter(doc! { "_id": 1 })
            .update(doc! { "$inc": { "n": 1 } })
            .upsert(true)
            .build(),
    );
    assert_eq!(
        to_doc(&model),
        doc! { "filter": { "_id": 1 }, "updateMods": { "$inc": { "n": 1 } }, "upsert": true }
    );
}

#[test]
fn compressors_parse_and_serialize() {
    assert_eq!(
        "ZLIB".parse::<Compressor>().unwrap(),
        Compressor::Zlib { level: None }
    );
    assert!("lz4".parse::<Compressor>().is_err());
    assert_eq!(
        bson::serialize_to_bson(&Compressor::Snappy).unwrap(),
        Bson::String("Snappy".into())
    );
}

#[test]
fn handle_and_gridfs_options_deserialize() {
    let handle: CollectionOptions = bson::deserialize_from_document(doc! {
        "readConcern": { "level": "local" },
        "timeoutMS": 50,
    })
    .unwrap();
    assert!(handle.read_concern.is_some());
    assert_eq!(handle.timeout, Some(Duration::from_millis(50)));
    let upload: GridFsUploadOptions =
        bson::deserialize_from_document(doc! { "chunkSizeBytes": 1024, "metadata": { "k": 1 } })
            .unwrap();
    assert_eq!(upload.chunk_size_bytes, Some(1024));
    let session: SessionOptions =
        bson::deserialize_from_document(doc! { "causalConsistency": false }).unwrap();
    assert_eq!(session.causal_consistency, Some(false));
}

#[test]
fn an_index_model_serializes_as_an_index_specification() {
    let model = crate::IndexModel::builder()
        .keys(doc! { "email": 1 })
        .options(
            crate::options::IndexOptions::builder()
                .unique(true)
                .name("email_1".to_owned())
                .build(),
        )
        .build();
    let document = bson::serialize_to_document(&model).expect("serializable");
    assert_eq!(document.get_document("key").unwrap(), &doc! { "email": 1 });
    assert!(document.get_bool("unique").unwrap());
    assert_eq!(document.get_str("name").unwrap(), "email_1");
    let bare =
        bson::serialize_to_document(&crate::IndexModel::builder().keys(doc! { "a": -1 }).build())
            .expect("serializable");
    assert_eq!(bare, doc! { "key": { "a": -1 } });
}
