//! GridFS against the simulated replica set: an upload rides out a stepdown and a connection
//! closed after a chunk insert committed (retried, deduplicated: the unique `{files_id, n}`
//! index would refuse a second copy), an upload that fails or is given up never shows as a
//! file, its orphan chunks are deleted by `abort` or, in the background, by dropping the
//! stream, and a download notices a chunk past the end.

use std::time::Duration;

use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use steadfast::error::{ErrorKind, GridFsErrorKind};
use steadfast::event::{CommandEvent, CommandStartedEvent, Event};
use steadfast::gridfs::GridFsBucket;
use steadfast::options::GridFsBucketOptions;

use crate::retry_support::{
    HANG_GUARD, admin_command, fail_command, harness, primary_host, replica_set, started, within,
};

/// The chunk size of these tests: small, so a few dozen bytes make several chunks.
const CHUNK: u32 = 8;

fn bucket(client: &steadfast::Client) -> GridFsBucket {
    let options = GridFsBucketOptions::builder()
        .chunk_size_bytes(Some(CHUNK))
        .build();
    client.database("media").gridfs_bucket(options)
}

/// `len` bytes that differ from chunk to chunk.
fn payload(len: u8) -> Vec<u8> {
    (0..len).map(|i| i.wrapping_mul(37)).collect()
}

/// How many chunks of file `id` are stored.
async fn chunk_count(client: &steadfast::Client, id: &Bson) -> u64 {
    let chunks = client.database("media").collection::<Document>("fs.chunks");
    within(chunks.count_documents(doc! { "files_id": id.clone() }))
        .await
        .expect("count")
}

/// The bytes of file `id`.
async fn download(bucket: &GridFsBucket, id: Bson) -> Result<Vec<u8>, steadfast::Error> {
    let mut stream = within(bucket.open_download_stream(id)).await?;
    let mut bytes = Vec::new();
    within(stream.read_to_end(&mut bytes))
        .await
        .map_err(driver_error)?;
    Ok(bytes)
}

/// The driver error inside a stream's `std::io::Error`.
fn driver_error(error: std::io::Error) -> steadfast::Error {
    *error
        .into_inner()
        .expect("a driver error inside")
        .downcast::<steadfast::Error>()
        .expect("a steadfast::Error")
}

/// The started `insert`s into the chunks collection.
fn chunk_inserts(events: &steadfast::event::EventRecorder) -> Vec<CommandStartedEvent> {
    started(events, "insert")
        .into_iter()
        .filter(|e| e.command.get_str("insert").ok() == Some("fs.chunks"))
        .collect()
}

#[tokio::test]
async fn an_upload_across_a_stepdown_completes_and_reads_back_byte_identical() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let bucket = bucket(&h.client);
    let data = payload(64);
    let mut upload = within(bucket.open_upload_stream("clip")).await.unwrap();
    within(upload.write_all(&data[..24])).await.unwrap();
    within(upload.flush()).await.unwrap();

    deployment.step_down(Duration::from_secs(60)).unwrap();
    within(upload.write_all(&data[24..])).await.unwrap();
    within(upload.close()).await.expect("the upload completes");

    let id = upload.id().clone();
    assert_eq!(download(&bucket, id.clone()).await.unwrap(), data);
    assert_eq!(chunk_count(&h.client, &id).await, 8);
    let inserts = chunk_inserts(&h.events);
    let (first, last) = (inserts.first().unwrap(), inserts.last().unwrap());
    assert_ne!(
        first.connection.address, last.connection.address,
        "the upload straddled the failover"
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_connection_closed_after_a_chunk_insert_committed_is_retried_without_a_duplicate() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let bucket = bucket(&h.client);
    admin_command(
        &primary_host(&deployment).await,
        doc! { "configureFailPoint": "onPrimaryTransactionalWrite", "mode": { "times": 1 },
        "data": { "closeConnection": true } },
    )
    .await;
    let data = payload(24);
    let mut upload = within(bucket.open_upload_stream("log")).await.unwrap();
    within(upload.write_all(&data)).await.unwrap();
    within(upload.close())
        .await
        .expect("the retried insert is deduplicated, not refused by the unique index");

    let id = upload.id().clone();
    let inserts = chunk_inserts(&h.events);
    assert_eq!(inserts.len(), 4, "three chunks, the first one sent twice");
    assert_eq!(
        inserts[0].command.get_i64("txnNumber").ok(),
        inserts[1].command.get_i64("txnNumber").ok()
    );
    assert_eq!(chunk_count(&h.client, &id).await, 3);
    assert_eq!(download(&bucket, id).await.unwrap(), data);
    h.client.shutdown().await;
}

#[tokio::test]
async fn an_upload_whose_files_document_fails_is_never_visible_and_abort_deletes_its_chunks() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let bucket = bucket(&h.client);
    fail_command(
        &primary_host(&deployment).await,
        Bson::Document(doc! { "skip": 3 }),
        doc! { "failCommands": ["insert"], "errorCode": 2 },
    )
    .await;
    let mut upload = within(bucket.open_upload_stream("draft")).await.unwrap();
    within(upload.write_all(&payload(24))).await.unwrap();
    let error = within(upload.close())
        .await
        .expect_err("the files insert fails");
    assert_eq!(driver_error(error).code(), Some(2));

    let id = upload.id().clone();
    assert_eq!(chunk_count(&h.client, &id).await, 3, "orphans, not a file");
    let missing = download(&bucket, id.clone()).await.expect_err("no file");
    assert!(
        matches!(
            *missing.kind,
            ErrorKind::GridFs(GridFsErrorKind::FileNotFound { .. })
        ),
        "{missing}"
    );
    within(upload.abort())
        .await
        .expect("abort deletes the orphans");
    assert_eq!(chunk_count(&h.client, &id).await, 0);
    h.client.shutdown().await;
}

#[tokio::test]
async fn abort_deletes_the_chunks_written_so_far_and_ends_the_stream() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let bucket = bucket(&h.client);
    let mut upload = within(bucket.open_upload_stream("scratch")).await.unwrap();
    within(upload.write_all(&payload(20))).await.unwrap();
    let id = upload.id().clone();

    within(upload.abort()).await.expect("abort");
    assert_eq!(chunk_count(&h.client, &id).await, 0);
    let files = h
        .client
        .database("media")
        .collection::<Document>("fs.files");
    assert_eq!(within(files.count_documents(doc! {})).await.unwrap(), 0);
    let refused = within(upload.write_all(b"more"))
        .await
        .expect_err("aborted");
    assert!(
        matches!(
            *driver_error(refused).kind,
            ErrorKind::GridFs(GridFsErrorKind::UploadStreamClosed)
        ),
        "writes after abort fail"
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_dropped_upload_deletes_its_chunks_in_the_background() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let bucket = bucket(&h.client);
    let mut upload = within(bucket.open_upload_stream("abandoned"))
        .await
        .unwrap();
    within(upload.write_all(&payload(16))).await.unwrap();
    let id = upload.id().clone();

    let from = h.events.len();
    drop(upload);
    let deleted = h.events.wait_for(from, HANG_GUARD, |event| {
        matches!(event, Event::Command(CommandEvent::Succeeded(e)) if e.command_name == "delete")
    });
    assert!(deleted.await.is_some(), "the chunks are deleted");
    assert_eq!(chunk_count(&h.client, &id).await, 0);
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_chunk_past_the_end_makes_the_download_fail_as_a_corrupt_file() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let bucket = bucket(&h.client);
    let mut upload = within(bucket.open_upload_stream("short")).await.unwrap();
    within(upload.write_all(&payload(16))).await.unwrap();
    within(upload.close()).await.unwrap();
    let id = upload.id().clone();
    let chunks = h
        .client
        .database("media")
        .collection::<Document>("fs.chunks");
    let extra = Binary {
        subtype: BinarySubtype::Generic,
        bytes: vec![0; 8],
    };
    within(chunks.insert_one(doc! { "files_id": id.clone(), "n": 2, "data": extra }))
        .await
        .unwrap();

    let error = download(&bucket, id).await.expect_err("an extra chunk");
    assert!(
        matches!(
            *error.kind,
            ErrorKind::GridFs(GridFsErrorKind::WrongNumberOfChunks {
                actual_number: 3,
                expected_number: 2,
                ..
            })
        ),
        "{error}"
    );
    h.client.shutdown().await;
}
