//! The task code, written once in the official crate's API and expanded for each driver (the
//! two crates share their names, so one body compiles against either): whatever one driver
//! runs, the other runs the same statements.
//!
//! Collection::bulkWrite, which only steadfast has, is written in steadfast's names
//! (`super::steadfast`); the official side gets a stub and
//! [`unavailable`](super::official::unavailable) says why.

/// The core tasks (single-document, find many, insertMany, LDJSON import/export) for the
/// driver crate `$krate`.
macro_rules! core_tasks {
    ($krate:ident) => {
        use std::path::{Path, PathBuf};
        use std::sync::Arc;

        use bson::{Document, doc};
        use futures_util::TryStreamExt;
        use $krate::{Client, Collection, Database};

        use crate::BenchError;
        use crate::driverbench::data::{parse_ldjson, write_ldjson};
        use crate::driverbench::{CORPUS, DATABASE};

        /// A connected client and the handles every task uses; clones share the client.
        #[derive(Clone)]
        pub(crate) struct Side {
            client: Client,
            db: Database,
            admin: Database,
            corpus: Collection<Document>,
        }

        impl Side {
            /// Connects to `uri` (default options unless the URI sets some) and waits for a
            /// `ping` to succeed.
            pub(crate) async fn connect(uri: &str) -> Result<Self, BenchError> {
                let client = Client::with_uri_str(uri).await?;
                let db = client.database(DATABASE);
                let side = Self {
                    admin: client.database("admin"),
                    corpus: db.collection(CORPUS),
                    db,
                    client,
                };
                side.admin.run_command(doc! { "ping": 1 }).await?;
                Ok(side)
            }

            /// Closes the client.
            pub(crate) async fn shutdown(self) {
                self.client.shutdown().await;
            }

            /// Drops the `perftest` database.
            pub(crate) async fn drop_database(&self) -> Result<(), BenchError> {
                self.db.drop().await?;
                Ok(())
            }

            /// Drops `corpus` and creates it empty (the insert tasks' before-task phase).
            pub(crate) async fn fresh_corpus(&self) -> Result<(), BenchError> {
                self.corpus.drop().await?;
                self.db.create_collection(CORPUS).await?;
                Ok(())
            }

            /// `{hello: true}`, `count` times.
            pub(crate) async fn run_command(&self, count: u64) -> Result<(), BenchError> {
                for _ in 0..count {
                    self.admin.run_command(doc! { "hello": true }).await?;
                }
                Ok(())
            }

            /// find by `_id` for `ids`, each of which must exist.
            pub(crate) async fn find_one(
                &self,
                ids: std::ops::Range<i32>,
            ) -> Result<(), BenchError> {
                for id in ids {
                    if self.corpus.find_one(doc! { "_id": id }).await?.is_none() {
                        return Err(format!("find one found no _id {id}").into());
                    }
                }
                Ok(())
            }

            /// insertOne of `document`, `count` times (the driver adds the `_id`).
            pub(crate) async fn insert_one(
                &self,
                document: &Document,
                count: u64,
            ) -> Result<(), BenchError> {
                for _ in 0..count {
                    self.corpus.insert_one(document).await?;
                }
                Ok(())
            }

            /// One ordered insertMany of `count` copies of `document`.
            pub(crate) async fn insert_many(
                &self,
                document: &Document,
                count: u64,
            ) -> Result<(), BenchError> {
                let copies = usize::try_from(count)?;
                let result = self
                    .corpus
                    .insert_many(std::iter::repeat_n(document, copies))
                    .await?;
                if result.inserted_ids.len() != copies {
                    return Err("insertMany reported a short insert".into());
                }
                Ok(())
            }

            /// find({}) on `corpus`, emptying the cursor; returns how many documents it read.
            pub(crate) async fn find_many(&self) -> Result<u64, BenchError> {
                let mut cursor = self.corpus.find(doc! {}).await?;
                let mut seen = 0_u64;
                while cursor.try_next().await?.is_some() {
                    seen += 1;
                }
                Ok(seen)
            }

            #[allow(
                dead_code,
                reason = "setup runs through the official side; both expansions keep one body"
            )]
            /// Setup: inserts `count` copies of `document`, with `_id` 1..=count when
            /// `numbered`, else with ids the driver generates.
            pub(crate) async fn seed(
                &self,
                document: &Document,
                count: u64,
                numbered: bool,
            ) -> Result<(), BenchError> {
                let count = i32::try_from(count)?;
                let documents: Vec<Document> = (1..=count)
                    .map(|id| {
                        let mut copy = document.clone();
                        if numbered {
                            copy.insert("_id", id);
                        }
                        copy
                    })
                    .collect();
                for chunk in documents.chunks(10_000) {
                    self.corpus.insert_many(chunk).await?;
                }
                Ok(())
            }

            /// Reads every LDJSON file of `files` from disk and inserts its documents with an
            /// unordered insertMany, one task per file.
            pub(crate) async fn ldjson_import(&self, files: &[PathBuf]) -> Result<(), BenchError> {
                let mut tasks = tokio::task::JoinSet::new();
                for path in files {
                    let corpus = self.corpus.clone();
                    let path = path.clone();
                    tasks.spawn(async move {
                        let bytes = tokio::fs::read(&path).await?;
                        let documents = parse_ldjson(&bytes)?;
                        corpus.insert_many(documents).ordered(false).await?;
                        Ok::<(), BenchError>(())
                    });
                }
                while let Some(joined) = tasks.join_next().await {
                    joined??;
                }
                Ok(())
            }

            /// Writes every document of `corpus` to LDJSON files of `per_file` documents in
            /// `dir` (each file written on the blocking pool while the cursor goes on);
            /// returns how many documents it wrote.
            pub(crate) async fn ldjson_export(
                &self,
                dir: &Path,
                per_file: usize,
            ) -> Result<u64, BenchError> {
                let dir = Arc::new(dir.to_path_buf());
                let mut writers = tokio::task::JoinSet::new();
                let mut cursor = self.corpus.find(doc! {}).await?;
                let mut batch = Vec::with_capacity(per_file);
                let (mut files, mut written) = (0_usize, 0_u64);
                loop {
                    let next = cursor.try_next().await?;
                    let end = next.is_none();
                    if let Some(document) = next {
                        batch.push(document);
                    }
                    if batch.len() >= per_file || (end && !batch.is_empty()) {
                        let documents = std::mem::replace(&mut batch, Vec::with_capacity(per_file));
                        written += documents.len() as u64;
                        let path = dir.join(format!("ldjson{files:03}.txt"));
                        files += 1;
                        writers.spawn_blocking(move || write_ldjson(&path, &documents));
                    }
                    if end {
                        break;
                    }
                }
                while let Some(joined) = writers.join_next().await {
                    joined??;
                }
                Ok(written)
            }

            /// Runs one of the single-document tasks' operations `units` times, split over
            /// `workers` concurrent tasks (1: the DriverBench task itself).
            pub(crate) async fn single_doc(
                &self,
                op: crate::driverbench::cpu::SingleOp,
                document: Arc<Document>,
                units: u64,
                workers: u64,
            ) -> Result<(), BenchError> {
                use crate::driverbench::cpu::SingleOp;
                let workers = workers.clamp(1, units.max(1));
                let mut tasks = tokio::task::JoinSet::new();
                for worker in 0..workers {
                    let share = units / workers + u64::from(worker < units % workers);
                    let first = worker * (units / workers) + worker.min(units % workers);
                    let side = self.clone();
                    let document = Arc::clone(&document);
                    tasks.spawn(async move {
                        match op {
                            SingleOp::RunCommand => side.run_command(share).await,
                            SingleOp::FindOne => {
                                let start = i32::try_from(first + 1)?;
                                let end = i32::try_from(first + 1 + share)?;
                                side.find_one(start..end).await
                            }
                            SingleOp::InsertOne => side.insert_one(&document, share).await,
                        }
                    });
                }
                while let Some(joined) = tasks.join_next().await {
                    joined??;
                }
                Ok(())
            }

            /// One iteration of `task`: its before-task phase, then its do-task phase timed
            /// (wall clock and this process's CPU).
            pub(crate) async fn iteration(
                &self,
                task: crate::driverbench::task::Task,
                ctx: &crate::driverbench::Context,
            ) -> Result<crate::driverbench::cpu::Sample, BenchError> {
                use crate::driverbench::cpu::{SingleOp, Timer};
                use crate::driverbench::task::Task;
                let units = task.units(ctx.scale);
                let data = &ctx.single;
                match task {
                    Task::RunCommand
                    | Task::FindOne
                    | Task::SmallInsertOne
                    | Task::LargeInsertOne => {
                        let (op, document) = match task {
                            Task::RunCommand => (SingleOp::RunCommand, &ctx.small),
                            Task::FindOne => (SingleOp::FindOne, &ctx.small),
                            Task::SmallInsertOne => (SingleOp::InsertOne, &ctx.small),
                            _ => (SingleOp::InsertOne, &ctx.large),
                        };
                        if op == SingleOp::InsertOne {
                            self.fresh_corpus().await?;
                        }
                        let document = Arc::clone(document);
                        let timer = Timer::start();
                        self.single_doc(op, document, units, 1).await?;
                        Ok(timer.stop())
                    }
                    Task::FindMany => {
                        let timer = Timer::start();
                        let seen = self.find_many().await?;
                        let sample = timer.stop();
                        if seen != units {
                            return Err(format!("find many read {seen} of {units}").into());
                        }
                        Ok(sample)
                    }
                    Task::SmallInsertMany | Task::LargeInsertMany => {
                        let document = if task == Task::SmallInsertMany {
                            &data.small
                        } else {
                            &data.large
                        };
                        self.fresh_corpus().await?;
                        let timer = Timer::start();
                        self.insert_many(document, units).await?;
                        Ok(timer.stop())
                    }
                    Task::SmallCollectionBulkInsert
                    | Task::LargeCollectionBulkInsert
                    | Task::SmallCollectionBulkMixed => {
                        self.fresh_corpus().await?;
                        let models = match task {
                            Task::SmallCollectionBulkInsert => {
                                self.collection_inserts(&data.small, units)
                            }
                            Task::LargeCollectionBulkInsert => {
                                self.collection_inserts(&data.large, units)
                            }
                            _ => self.collection_mixed(&data.small, units),
                        };
                        let timer = Timer::start();
                        self.collection_bulk_write(models).await?;
                        Ok(timer.stop())
                    }
                    Task::SmallClientBulkInsert | Task::LargeClientBulkInsert => {
                        let document = if task == Task::SmallClientBulkInsert {
                            &data.small
                        } else {
                            &data.large
                        };
                        self.fresh_corpus().await?;
                        let models = self.client_inserts(document, units);
                        let timer = Timer::start();
                        self.client_bulk_write(models).await?;
                        Ok(timer.stop())
                    }
                    Task::SmallClientBulkMixed => {
                        self.drop_database().await?;
                        for n in 1..=crate::driverbench::MIXED_COLLECTIONS {
                            self.db.create_collection(format!("{CORPUS}_{n}")).await?;
                        }
                        let models = self.client_mixed(&data.small, units);
                        let timer = Timer::start();
                        self.client_bulk_write(models).await?;
                        Ok(timer.stop())
                    }
                    Task::GridfsUpload => {
                        self.fresh_bucket().await?;
                        let bytes = ctx.gridfs_bytes();
                        let timer = Timer::start();
                        self.upload("gridfstest", bytes).await?;
                        Ok(timer.stop())
                    }
                    Task::GridfsDownload => {
                        let id = ctx
                            .gridfs_large_id
                            .clone()
                            .ok_or("setup stored no GridFS file")?;
                        let timer = Timer::start();
                        let length = self.download(id).await?;
                        let sample = timer.stop();
                        if length != ctx.gridfs_bytes().len() {
                            return Err(format!("GridFS download read {length} bytes").into());
                        }
                        Ok(sample)
                    }
                    Task::LdjsonImport => {
                        let files = ctx.ldjson_files(units)?;
                        self.fresh_corpus().await?;
                        let timer = Timer::start();
                        self.ldjson_import(files).await?;
                        Ok(timer.stop())
                    }
                    Task::LdjsonExport => {
                        let dir = ctx.output_dir("export")?;
                        let per_file = crate::driverbench::LDJSON_DOCUMENTS_PER_FILE;
                        let timer = Timer::start();
                        let written = self.ldjson_export(&dir, per_file).await?;
                        let sample = timer.stop();
                        if written != units * per_file as u64 {
                            return Err(format!("LDJSON export wrote {written} documents").into());
                        }
                        Ok(sample)
                    }
                    Task::GridfsMultiUpload => {
                        let files = ctx.gridfs_files(units)?;
                        self.fresh_bucket().await?;
                        let timer = Timer::start();
                        self.upload_files(files).await?;
                        Ok(timer.stop())
                    }
                    Task::GridfsMultiDownload => {
                        let dir = ctx.output_dir("downloads")?;
                        let timer = Timer::start();
                        self.download_files(&ctx.gridfs_stored, &dir).await?;
                        Ok(timer.stop())
                    }
                }
            }
        }
    };
}

/// Stubs for a driver without Collection::bulkWrite.
macro_rules! collection_bulk_stub {
    () => {
        /// Collection bulkWrite is not available in this driver.
        mod collection_bulk {
            use bson::Document;

            use super::Side;
            use crate::BenchError;

            /// Nothing to build.
            pub(crate) struct CollectionModels;

            impl Side {
                /// Not available.
                pub(crate) fn collection_inserts(&self, _: &Document, _: u64) -> CollectionModels {
                    CollectionModels
                }

                /// Not available.
                pub(crate) fn collection_mixed(&self, _: &Document, _: u64) -> CollectionModels {
                    CollectionModels
                }

                /// Not available.
                pub(crate) async fn collection_bulk_write(
                    &self,
                    _: CollectionModels,
                ) -> Result<(), BenchError> {
                    Err(super::NOT_AVAILABLE.into())
                }
            }
        }
    };
}

/// GridFS upload/download in the official crate's names, for `$krate`.
macro_rules! gridfs_tasks {
    ($krate:ident) => {
        /// GridFS tasks.
        pub(crate) mod gridfs {
            use std::path::PathBuf;

            use bson::Bson;
            use futures_util::io::{AsyncReadExt, AsyncWriteExt};

            use super::Side;
            use crate::BenchError;

            impl Side {
                /// Drops the default bucket and stores a one-byte file in it, so that its
                /// collections and indexes exist (GridFS upload's before-task phase).
                pub(crate) async fn fresh_bucket(&self) -> Result<(), BenchError> {
                    let bucket = self.db.gridfs_bucket(None);
                    bucket.drop().await?;
                    self.upload("one-byte", &[0]).await?;
                    Ok(())
                }

                /// Uploads `bytes` as `name` through an upload stream; returns the file's id.
                pub(crate) async fn upload(
                    &self,
                    name: &str,
                    bytes: &[u8],
                ) -> Result<Bson, BenchError> {
                    let bucket = self.db.gridfs_bucket(None);
                    let mut stream = bucket.open_upload_stream(name).await?;
                    stream.write_all(bytes).await?;
                    stream.close().await?;
                    Ok(stream.id().clone())
                }

                /// Downloads the file `id` into memory; returns its length.
                pub(crate) async fn download(&self, id: Bson) -> Result<usize, BenchError> {
                    let bucket = self.db.gridfs_bucket(None);
                    let mut stream = bucket.open_download_stream(id).await?;
                    let mut bytes = Vec::new();
                    stream.read_to_end(&mut bytes).await?;
                    Ok(bytes.len())
                }

                /// Uploads every file of `files`, read from disk, one task per file.
                pub(crate) async fn upload_files(
                    &self,
                    files: &[PathBuf],
                ) -> Result<Vec<(Bson, String)>, BenchError> {
                    let mut tasks = tokio::task::JoinSet::new();
                    for path in files {
                        let side = self.clone();
                        let path = path.clone();
                        tasks.spawn(async move {
                            let bytes = tokio::fs::read(&path).await?;
                            let name = crate::driverbench::data::file_name(&path);
                            let id = side.upload(&name, &bytes).await?;
                            Ok::<_, BenchError>((id, name))
                        });
                    }
                    let mut uploaded = Vec::new();
                    while let Some(joined) = tasks.join_next().await {
                        uploaded.push(joined??);
                    }
                    Ok(uploaded)
                }

                /// Downloads every file of `files` to `dir`, one task per file.
                pub(crate) async fn download_files(
                    &self,
                    files: &[(Bson, String)],
                    dir: &std::path::Path,
                ) -> Result<(), BenchError> {
                    let mut tasks = tokio::task::JoinSet::new();
                    for (id, name) in files {
                        let bucket = self.db.gridfs_bucket(None);
                        let id = id.clone();
                        let path = dir.join(name);
                        tasks.spawn(async move {
                            let mut stream = bucket.open_download_stream(id).await?;
                            let mut bytes = Vec::new();
                            stream.read_to_end(&mut bytes).await?;
                            tokio::fs::write(&path, &bytes).await?;
                            Ok::<(), BenchError>(())
                        });
                    }
                    while let Some(joined) = tasks.join_next().await {
                        joined??;
                    }
                    Ok(())
                }
            }
        }
    };
}

/// Client bulkWrite in the official crate's names, for `$krate`.
macro_rules! client_bulk_tasks {
    ($krate:ident) => {
        /// Client bulkWrite tasks.
        pub(crate) mod client_bulk {
            use bson::{Document, doc};
            use $krate::Namespace;
            use $krate::options::{DeleteOneModel, InsertOneModel, ReplaceOneModel, WriteModel};

            use super::Side;
            use crate::BenchError;
            use crate::driverbench::{CORPUS, DATABASE, MIXED_COLLECTIONS};

            /// Write models built before the clock starts.
            pub(crate) struct ClientModels(Vec<WriteModel>);

            impl Side {
                /// `count` insert models of `document` into `perftest.corpus`.
                pub(crate) fn client_inserts(
                    &self,
                    document: &Document,
                    count: u64,
                ) -> ClientModels {
                    let namespace = Namespace::new(DATABASE, CORPUS);
                    ClientModels(
                        (0..count)
                            .map(|_| {
                                InsertOneModel::builder()
                                    .namespace(namespace.clone())
                                    .document(document.clone())
                                    .build()
                                    .into()
                            })
                            .collect(),
                    )
                }

                /// `count` (insert, replace, delete) triples spread over the numbered
                /// collections.
                pub(crate) fn client_mixed(&self, document: &Document, count: u64) -> ClientModels {
                    let namespaces: Vec<Namespace> = (1..=MIXED_COLLECTIONS)
                        .map(|n| Namespace::new(DATABASE, format!("{CORPUS}_{n}")))
                        .collect();
                    let mut models = Vec::new();
                    let count = usize::try_from(count).unwrap_or(usize::MAX);
                    for namespace in namespaces.iter().cycle().take(count) {
                        models.push(
                            InsertOneModel::builder()
                                .namespace(namespace.clone())
                                .document(document.clone())
                                .build()
                                .into(),
                        );
                        models.push(
                            ReplaceOneModel::builder()
                                .namespace(namespace.clone())
                                .filter(doc! {})
                                .replacement(document.clone())
                                .build()
                                .into(),
                        );
                        models.push(
                            DeleteOneModel::builder()
                                .namespace(namespace.clone())
                                .filter(doc! {})
                                .build()
                                .into(),
                        );
                    }
                    ClientModels(models)
                }

                /// One ordered client bulkWrite of `models`.
                pub(crate) async fn client_bulk_write(
                    &self,
                    models: ClientModels,
                ) -> Result<(), BenchError> {
                    self.client.bulk_write(models.0).ordered(true).await?;
                    Ok(())
                }
            }
        }
    };
}

pub(crate) use {client_bulk_tasks, collection_bulk_stub, core_tasks, gridfs_tasks};
