//! The blocking handles' accessors and the actions their methods build, with no server: the
//! client points at a port nothing listens on and no operation is sent.

use bson::{Bson, DateTime, doc};

use crate::error::ErrorKind;
use crate::options::{
    ClientOptions, CollectionOptions, DatabaseOptions, GridFsBucketOptions, ReadConcern,
    ReadPreference, SelectionCriteria, WriteConcern,
};

use super::Client;
use super::gridfs::FilesCollectionDocument;

/// A client whose connection string sets a read concern and a write concern.
fn client() -> Client {
    let uri = "mongodb://127.0.0.1:1/?directConnection=true&readConcernLevel=majority&w=2";
    let options = ClientOptions::parse(uri)
        .run()
        .expect("valid connection string");
    Client::with_options(options).expect("the client starts")
}

fn secondary() -> SelectionCriteria {
    SelectionCriteria::ReadPreference(ReadPreference::Secondary {
        options: Default::default(),
    })
}

#[test]
fn handles_report_their_names_and_the_concerns_they_inherit_or_override() {
    let client = client();
    assert_eq!(client.read_concern(), Some(&ReadConcern::majority()));
    assert_eq!(client.write_concern(), Some(&WriteConcern::nodes(2)));

    let db = client.database_with_options(
        "shop",
        DatabaseOptions::default()
            .read_concern(ReadConcern::local())
            .selection_criteria(secondary()),
    );
    assert_eq!(db.name(), "shop");
    assert_eq!(db.read_concern(), Some(&ReadConcern::local()));
    assert_eq!(db.write_concern(), Some(&WriteConcern::nodes(2)));
    assert_eq!(db.selection_criteria(), Some(&secondary()));

    let orders = db.collection::<bson::Document>("orders");
    assert_eq!(orders.name(), "orders");
    assert_eq!(orders.namespace().to_string(), "shop.orders");
    // The database's read concern, which overrides the client's, is the collection's too.
    assert_eq!(orders.read_concern(), Some(&ReadConcern::local()));
    let own = db.collection_with_options::<bson::Document>(
        "audit",
        CollectionOptions::default().write_concern(WriteConcern::majority()),
    );
    assert_eq!(own.write_concern(), Some(&WriteConcern::majority()));
    assert_eq!(own.clone_with_type::<Bson>().name(), "audit");

    let bucket = db.gridfs_bucket(
        GridFsBucketOptions::builder()
            .write_concern(WriteConcern::majority())
            .build(),
    );
    assert_eq!(bucket.write_concern(), Some(&WriteConcern::majority()));
    assert_eq!(bucket.read_concern(), Some(&ReadConcern::local()));
    assert_eq!(bucket.selection_criteria(), Some(&secondary()));
    client.shutdown().run();
}

/// `true` when `result` is the refusal to block inside an async runtime.
fn refused<T>(result: crate::error::Result<T>) -> bool {
    matches!(&result, Err(e) if matches!(e.kind(), ErrorKind::InvalidArgument { .. }))
}

#[test]
fn actions_built_by_the_blocking_handles_refuse_to_block_inside_an_async_runtime() {
    let client = client();
    let db = client.database("shop");
    let orders = db.collection::<bson::Document>("orders");
    let bucket = db.gridfs_bucket(None);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        assert!(refused(client.list_database_names().run()));
        assert!(refused(client.start_session().run()));
        assert!(refused(db.list_collection_names().run()));
        assert!(refused(db.run_command(doc! { "ping": 1 }).run()));
        assert!(refused(orders.count_documents(doc! {}).run()));
        assert!(refused(orders.find_one(doc! {}).run()));
        assert!(refused(orders.insert_one(doc! { "x": 1 }).run()));
        assert!(refused(orders.list_index_names().run()));
        assert!(refused(bucket.find(doc! {}).run()));
        assert!(refused(bucket.delete(Bson::Int32(1)).run()));
    });
    drop(runtime);
    client.shutdown().run();
}

#[test]
fn a_files_collection_document_reads_and_writes_the_fields_gridfs_stores() {
    let stored = doc! {
        "_id": 7,
        "length": 300_000_i64,
        "chunkSize": 261_120,
        "uploadDate": DateTime::from_millis(1_000),
        "filename": "report.pdf",
        "metadata": { "owner": "ana" },
    };
    let file: FilesCollectionDocument =
        bson::deserialize_from_document(stored.clone()).expect("decodes");
    assert_eq!(file.id, Bson::Int32(7));
    assert_eq!(file.length, 300_000);
    assert_eq!(file.chunk_size_bytes, 261_120);
    assert_eq!(file.upload_date, DateTime::from_millis(1_000));
    assert_eq!(file.filename.as_deref(), Some("report.pdf"));
    assert_eq!(file.metadata, Some(doc! { "owner": "ana" }));
    let written = bson::serialize_to_document(&file.clone()).expect("encodes");
    let keys: Vec<&str> = written.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "_id",
            "length",
            "chunkSize",
            "uploadDate",
            "filename",
            "metadata"
        ]
    );
    let again: FilesCollectionDocument =
        bson::deserialize_from_document(written).expect("decodes again");
    assert_eq!(again.chunk_size_bytes, file.chunk_size_bytes);
    assert_eq!(again.metadata, file.metadata);
}
