//! A GridFS program written as for the official driver: `gridfs_bucket` with options, an
//! upload stream with `id`/`chunk_size_bytes`/`metadata` written with `AsyncWriteExt` and
//! closed, downloads by id and by name with `revision`, `find` with options, `rename`,
//! `delete`, the `GridFsErrorKind` of a missing file matched through `*e.kind`, and `drop`.

use blackpipe::deployment::{Deployment, DeploymentConfig};
use futures_util::io::{AsyncReadExt, AsyncWriteExt};
use futures_util::stream::TryStreamExt;
use steadfast::Client;
use steadfast::bson::{Bson, doc};
use steadfast::error::{ErrorKind, GridFsErrorKind};
use steadfast::gridfs::{FilesCollectionDocument, GridFsBucket};
use steadfast::options::{GridFsBucketOptions, GridFsFindOptions};

async fn upload(bucket: &GridFsBucket, name: &str, id: i32, bytes: &[u8]) {
    let mut stream = bucket
        .open_upload_stream(name)
        .id(Bson::Int32(id))
        .chunk_size_bytes(4)
        .metadata(doc! { "owner": "ada" })
        .await
        .expect("open_upload_stream");
    stream.write_all(bytes).await.expect("write_all");
    stream.close().await.expect("close");
    assert_eq!(stream.id(), &Bson::Int32(id));
}

#[tokio::test]
async fn a_gridfs_program_ports_by_renaming_the_crate() {
    let deployment = Deployment::start(DeploymentConfig::replica_set(1))
        .await
        .expect("the deployment starts");
    let client = Client::with_uri_str(deployment.uri())
        .await
        .expect("a valid connection string");
    let options = GridFsBucketOptions::builder()
        .bucket_name("photos".to_string())
        .build();
    let bucket = client.database("media").gridfs_bucket(options);

    upload(&bucket, "cat.jpg", 1, b"first revision").await;
    upload(&bucket, "cat.jpg", 2, b"second revision").await;

    let mut bytes = Vec::new();
    let mut download = bucket
        .open_download_stream(Bson::Int32(1))
        .await
        .expect("by id");
    download.read_to_end(&mut bytes).await.expect("read");
    assert_eq!(bytes, b"first revision");

    let mut oldest = Vec::new();
    bucket
        .open_download_stream_by_name("cat.jpg")
        .revision(0)
        .await
        .expect("by name")
        .read_to_end(&mut oldest)
        .await
        .expect("read");
    assert_eq!(oldest, b"first revision");

    let find_options = GridFsFindOptions::builder()
        .sort(doc! { "_id": -1 })
        .build();
    let files: Vec<FilesCollectionDocument> = bucket
        .find(doc! { "filename": "cat.jpg" })
        .with_options(find_options)
        .await
        .expect("find")
        .try_collect()
        .await
        .expect("cursor");
    assert_eq!(files.len(), 2);
    assert_eq!(files[0].id, Bson::Int32(2));
    assert_eq!(files[0].length, 15);
    assert_eq!(files[0].chunk_size_bytes, 4);
    assert_eq!(files[0].metadata, Some(doc! { "owner": "ada" }));

    bucket
        .rename(Bson::Int32(2), "kitten.jpg")
        .await
        .expect("rename");
    bucket.delete(Bson::Int32(1)).await.expect("delete");
    let error = bucket
        .open_download_stream_by_name("cat.jpg")
        .await
        .expect_err("both revisions are gone");
    assert!(
        matches!(
            *error.kind,
            ErrorKind::GridFs(GridFsErrorKind::FileNotFound { .. })
        ),
        "{error}"
    );
    let renamed = bucket
        .find_one(doc! { "filename": "kitten.jpg" })
        .await
        .expect("find_one");
    assert!(renamed.is_some());
    bucket.drop().await.expect("drop");
    client.shutdown().await;
}
