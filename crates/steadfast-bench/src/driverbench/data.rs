//! The DriverBench data sets, read at run time from the published `.tgz` files (never copied
//! into the repository): the single- and multi-document files into memory, the parallel
//! tasks' directories unpacked into a temporary directory that is removed afterwards.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use bson::Document;
use flate2::read::GzDecoder;

use super::super::BenchError;

/// The environment variable naming the folder that holds the `.tgz` files.
pub(crate) const DATA_ENV: &str = "STEADFAST_BENCH_DATA";
/// Where the data sets are when neither `--data` nor [`DATA_ENV`] says otherwise (relative to
/// the repository root, where the README's command runs).
pub(crate) const DEFAULT_DATA_DIR: &str = "../shared/benchmark-data";
/// The largest member of a data set read into memory (gridfs_large.bin is 52,428,800 bytes):
/// a damaged or hostile archive cannot make the bench allocate without bound.
const MAX_MEMBER_BYTES: u64 = 64 * 1024 * 1024;

/// The folder to read the data sets from: `--data`, else the environment, else the default.
pub(crate) fn data_dir(flag: Option<&Path>) -> PathBuf {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os(DATA_ENV).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
}

/// The single- and multi-document data sets, in memory.
pub(crate) struct SingleMultiData {
    /// TWEET (`tweet.json`).
    pub(crate) tweet: Document,
    /// SMALL_DOC (`small_doc.json`).
    pub(crate) small: Document,
    /// LARGE_DOC (`large_doc.json`).
    pub(crate) large: Document,
    /// GRIDFS_LARGE (`gridfs_large.bin`).
    pub(crate) gridfs_large: Vec<u8>,
}

impl SingleMultiData {
    /// Reads `single_and_multi_document.tgz` from `dir`.
    ///
    /// # Errors
    /// A missing or damaged archive, a missing member, or a JSON file that is not a document.
    pub(crate) fn load(dir: &Path) -> Result<Self, BenchError> {
        let path = dir.join("single_and_multi_document.tgz");
        let file = File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let mut archive = tar::Archive::new(GzDecoder::new(file));
        let (mut tweet, mut small, mut large, mut gridfs_large) = (None, None, None, None);
        for entry in archive.entries()? {
            let mut entry = entry?;
            let name = entry
                .path()?
                .file_name()
                .and_then(|name| name.to_str())
                .map(str::to_owned);
            let slot = match name.as_deref() {
                Some("tweet.json") => &mut tweet,
                Some("small_doc.json") => &mut small,
                Some("large_doc.json") => &mut large,
                Some("gridfs_large.bin") => &mut gridfs_large,
                _ => continue,
            };
            if entry.size() > MAX_MEMBER_BYTES {
                return Err(format!("{} is larger than expected", path.display()).into());
            }
            let mut bytes = Vec::new();
            entry
                .by_ref()
                .take(MAX_MEMBER_BYTES)
                .read_to_end(&mut bytes)?;
            *slot = Some(bytes);
        }
        let missing = |what: &str| format!("{} holds no {what}", path.display());
        Ok(Self {
            tweet: json_document(&tweet.ok_or_else(|| missing("tweet.json"))?)?,
            small: json_document(&small.ok_or_else(|| missing("small_doc.json"))?)?,
            large: json_document(&large.ok_or_else(|| missing("large_doc.json"))?)?,
            gridfs_large: gridfs_large.ok_or_else(|| missing("gridfs_large.bin"))?,
        })
    }
}

/// Parses one strict-JSON document (the data sets use no extended JSON types).
pub(crate) fn json_document(bytes: &[u8]) -> Result<Document, BenchError> {
    Ok(serde_json::from_slice::<Document>(bytes)?)
}

/// The parallel data sets unpacked into a temporary directory, removed on drop.
pub(crate) struct ParallelData {
    root: PathBuf,
    /// The LDJSON files, sorted by name.
    pub(crate) ldjson: Vec<PathBuf>,
    /// The GridFS files, sorted by name.
    pub(crate) gridfs: Vec<PathBuf>,
}

impl ParallelData {
    /// Unpacks `parallel.tgz` from `dir` into a fresh directory under the system's temporary
    /// directory.
    ///
    /// # Errors
    /// A missing or damaged archive, or a temporary directory that cannot be written.
    pub(crate) fn unpack(dir: &Path) -> Result<Self, BenchError> {
        let path = dir.join("parallel.tgz");
        let file = File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let root = scratch_dir("data")?;
        let mut data = Self {
            root,
            ldjson: Vec::new(),
            gridfs: Vec::new(),
        };
        // `unpack` refuses members that would land outside `root` (absolute or `..` paths).
        tar::Archive::new(GzDecoder::new(file)).unpack(&data.root)?;
        data.ldjson = sorted_files(&data.root.join("parallel/ldjson_multi"))?;
        data.gridfs = sorted_files(&data.root.join("parallel/gridfs_multi"))?;
        Ok(data)
    }

    /// A fresh, empty directory inside the unpacked data's temporary directory.
    pub(crate) fn output_dir(&self, name: &str) -> Result<PathBuf, BenchError> {
        let dir = self.root.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }
}

impl Drop for ParallelData {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A new directory named after this process under the system's temporary directory.
fn scratch_dir(purpose: &str) -> Result<PathBuf, BenchError> {
    let dir =
        std::env::temp_dir().join(format!("steadfast-bench-{purpose}-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn sorted_files(dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// Parses one LDJSON file: one strict-JSON document per LF-terminated line (empty lines are
/// skipped).
pub(crate) fn parse_ldjson(bytes: &[u8]) -> Result<Vec<Document>, BenchError> {
    bytes
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(json_document)
        .collect()
}

/// Writes `documents` to `path` as LDJSON (relaxed extended JSON, one document per line) and
/// flushes it to the operating system.
pub(crate) fn write_ldjson(path: &Path, documents: &[Document]) -> Result<(), BenchError> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(File::create(path)?);
    for document in documents {
        serde_json::to_writer(&mut out, document)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// The last component of `path` as text (the data sets' names are ASCII).
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}
