//! The DriverBench micro-benchmarks: names, groups, sizes and the composites they count in.

use serde::Serialize;

/// The group a task belongs to (its weight class in the specification).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Group {
    /// Single-document tasks.
    Single,
    /// Multi-document tasks.
    Multi,
    /// Parallel (ETL) tasks.
    Parallel,
}

/// Which of ReadBench and WriteBench a task counts in (run command counts in neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Direction {
    /// Counts in ReadBench.
    Read,
    /// Counts in WriteBench.
    Write,
    /// Counts in neither composite.
    Neither,
}

/// One DriverBench micro-benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Task {
    /// `{hello: true}` 10,000 times.
    RunCommand,
    /// find by `_id` 10,000 times.
    FindOne,
    /// insertOne of SMALL_DOC 10,000 times.
    SmallInsertOne,
    /// insertOne of LARGE_DOC 10 times.
    LargeInsertOne,
    /// find({}) over 10,000 tweets, cursor emptied.
    FindMany,
    /// insertMany of 10,000 SMALL_DOC.
    SmallInsertMany,
    /// insertMany of 10 LARGE_DOC.
    LargeInsertMany,
    /// Collection::bulkWrite of 10,000 SMALL_DOC inserts.
    SmallCollectionBulkInsert,
    /// Collection::bulkWrite of 10 LARGE_DOC inserts.
    LargeCollectionBulkInsert,
    /// Collection::bulkWrite of 10,000 (insert, replace, delete) triples.
    SmallCollectionBulkMixed,
    /// Client::bulkWrite of 10,000 SMALL_DOC inserts.
    SmallClientBulkInsert,
    /// Client::bulkWrite of 10 LARGE_DOC inserts.
    LargeClientBulkInsert,
    /// Client::bulkWrite of 10,000 triples over ten collections.
    SmallClientBulkMixed,
    /// One GRIDFS_LARGE upload.
    GridfsUpload,
    /// One GRIDFS_LARGE download.
    GridfsDownload,
    /// 100 LDJSON files imported.
    LdjsonImport,
    /// 500,000 documents exported to 100 LDJSON files.
    LdjsonExport,
    /// 50 files uploaded to GridFS.
    GridfsMultiUpload,
    /// 50 files downloaded from GridFS to disk.
    GridfsMultiDownload,
}

/// The full-scale unit counts of the specification.
const OPS_10K: u64 = 10_000;
const LARGE_OPS: u64 = 10;
/// LDJSON_MULTI's files and GRIDFS_MULTI's files.
pub(crate) const LDJSON_FILES: u64 = 100;
pub(crate) const GRIDFS_FILES: u64 = 50;

impl Task {
    /// Every task, in report order.
    pub(crate) const ALL: [Task; 19] = [
        Task::RunCommand,
        Task::FindOne,
        Task::SmallInsertOne,
        Task::LargeInsertOne,
        Task::FindMany,
        Task::SmallInsertMany,
        Task::LargeInsertMany,
        Task::SmallCollectionBulkInsert,
        Task::LargeCollectionBulkInsert,
        Task::SmallCollectionBulkMixed,
        Task::SmallClientBulkInsert,
        Task::LargeClientBulkInsert,
        Task::SmallClientBulkMixed,
        Task::GridfsUpload,
        Task::GridfsDownload,
        Task::LdjsonImport,
        Task::LdjsonExport,
        Task::GridfsMultiUpload,
        Task::GridfsMultiDownload,
    ];

    /// The specification's name for the task.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Task::RunCommand => "Run command",
            Task::FindOne => "Find one by ID",
            Task::SmallInsertOne => "Small doc insertOne",
            Task::LargeInsertOne => "Large doc insertOne",
            Task::FindMany => "Find many and empty cursor",
            Task::SmallInsertMany => "Small doc bulk insert",
            Task::LargeInsertMany => "Large doc bulk insert",
            Task::SmallCollectionBulkInsert => "Small doc Collection BulkWrite insert",
            Task::LargeCollectionBulkInsert => "Large doc Collection BulkWrite insert",
            Task::SmallCollectionBulkMixed => "Small doc Collection BulkWrite Mixed Operations",
            Task::SmallClientBulkInsert => "Small doc Client BulkWrite insert",
            Task::LargeClientBulkInsert => "Large doc Client BulkWrite insert",
            Task::SmallClientBulkMixed => "Small doc Client BulkWrite Mixed Operations",
            Task::GridfsUpload => "GridFS upload",
            Task::GridfsDownload => "GridFS download",
            Task::LdjsonImport => "LDJSON multi-file import",
            Task::LdjsonExport => "LDJSON multi-file export",
            Task::GridfsMultiUpload => "GridFS multi-file upload",
            Task::GridfsMultiDownload => "GridFS multi-file download",
        }
    }

    /// The task's group.
    pub(crate) fn group(self) -> Group {
        match self {
            Task::RunCommand | Task::FindOne | Task::SmallInsertOne | Task::LargeInsertOne => {
                Group::Single
            }
            Task::LdjsonImport
            | Task::LdjsonExport
            | Task::GridfsMultiUpload
            | Task::GridfsMultiDownload => Group::Parallel,
            _ => Group::Multi,
        }
    }

    /// The composite (ReadBench or WriteBench) the task counts in.
    pub(crate) fn direction(self) -> Direction {
        match self {
            Task::RunCommand => Direction::Neither,
            Task::FindOne
            | Task::FindMany
            | Task::GridfsDownload
            | Task::LdjsonExport
            | Task::GridfsMultiDownload => Direction::Read,
            _ => Direction::Write,
        }
    }

    /// The size in bytes of one document or file of the task's data set, as the
    /// specification states it, and how many of them one full-scale iteration processes.
    fn spec_unit(self) -> (u64, u64) {
        match self {
            Task::RunCommand => (13, OPS_10K),
            Task::FindOne | Task::FindMany => (1_622, OPS_10K),
            Task::SmallInsertOne
            | Task::SmallInsertMany
            | Task::SmallCollectionBulkInsert
            | Task::SmallClientBulkInsert => (275, OPS_10K),
            // Mixed: inserts and replacements count, deletions do not (20,000 x 275 bytes).
            Task::SmallCollectionBulkMixed | Task::SmallClientBulkMixed => (550, OPS_10K),
            Task::LargeInsertOne
            | Task::LargeInsertMany
            | Task::LargeCollectionBulkInsert
            | Task::LargeClientBulkInsert => (2_731_089, LARGE_OPS),
            Task::GridfsUpload | Task::GridfsDownload => (52_428_800, 1),
            Task::LdjsonImport | Task::LdjsonExport => (5_650_000, LDJSON_FILES),
            Task::GridfsMultiUpload | Task::GridfsMultiDownload => (5_242_880, GRIDFS_FILES),
        }
    }

    /// How many units (operations, documents or files) one iteration processes at `scale`.
    pub(crate) fn units(self, scale: Scale) -> u64 {
        (self.spec_unit().1 / scale.divisor).max(1)
    }

    /// The bytes one iteration counts for its MB/s at `scale`: the specification's size at
    /// full scale, the same per unit otherwise.
    pub(crate) fn bytes(self, scale: Scale) -> u64 {
        let (unit, _) = self.spec_unit();
        if self == Task::GridfsUpload || self == Task::GridfsDownload {
            return (unit / scale.divisor).max(1);
        }
        unit.saturating_mul(self.units(scale))
    }

    /// Whether the task's single operations are counted for CPU per operation (the
    /// single-document tasks, whose unit is one operation).
    pub(crate) fn per_operation(self) -> bool {
        self.group() == Group::Single
    }
}

/// How much of the specification's work one iteration does: `divisor` 1 is the specification;
/// `--quick` divides the operation, document, file and byte counts (never below one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Scale {
    /// The divisor of every count.
    pub(crate) divisor: u64,
}

impl Scale {
    /// The specification's scale.
    pub(crate) const FULL: Scale = Scale { divisor: 1 };
    /// The smoke run's scale: 200 operations, 2 LDJSON files, 1 GridFS file of ~1 MB.
    pub(crate) const QUICK: Scale = Scale { divisor: 50 };
}
