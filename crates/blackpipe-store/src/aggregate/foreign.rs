//! What the stages that read other collections (`$lookup`, `$graphLookup`, `$unionWith`) need
//! from the command running the pipeline, and the context their sub-pipelines are parsed and
//! run in.
//!
//! The pipeline runner stays pure over its input: the command layer hands the run a
//! [`ForeignSource`], a read-only window on the collections of the command's database exactly
//! as the command sees them (the shared collections, a transaction's private copies, or the
//! collections as of a snapshot read's time) and on its views, resolved down to their
//! collection. A [`Reader`] wraps it with what every sub-pipeline shares: the command's
//! collation and a work budget.

use std::collections::HashMap;
use std::sync::Arc;

use bson::{Bson, Document};

use super::Pipeline;
use crate::code;
use crate::collation::Collation;
use crate::commands::views::ResolvedView;
use crate::errors::{CommandError, StoreResult};
use crate::path::array_index;
use crate::query::Filter;

/// mongod's `internalMaxSubPipelineViewDepth`: sub-pipelines nest at most this deep.
const MAX_SUB_PIPELINE_DEPTH: usize = 20;

/// Documents examined (scanned in other collections, fed to or produced by a sub-pipeline)
/// in one command: about two seconds of work. mongod has no such bound (it relies on
/// `maxTimeMS`, which blackpipe does not enforce inside a pipeline); a `$lookup` without index
/// over two large collections would otherwise keep the server busy for hours.
#[cfg(not(test))]
const WORK_LIMIT: u64 = 1 << 24;
/// The unit tests reach the bound sooner: the mechanism is the same, the debug build slower.
#[cfg(test)]
const WORK_LIMIT: u64 = 1 << 20;

/// Where a pipeline is parsed: the command's database (for error messages naming a
/// namespace, and for the views a sub-pipeline reads) and how deep in sub-pipelines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParseContext<'a> {
    pub(crate) db: &'a str,
    depth: usize,
}

impl<'a> ParseContext<'a> {
    /// A top-level pipeline whose database does not matter (it cannot read other collections:
    /// update pipelines, change streams).
    pub(crate) const TOP: ParseContext<'static> = ParseContext { db: "", depth: 0 };

    /// A command's top-level pipeline in database `db`.
    pub(crate) fn database(db: &'a str) -> ParseContext<'a> {
        ParseContext { db, depth: 0 }
    }

    /// The context of a pipeline `depth` sub-pipelines deep.
    pub(super) fn at(db: &'a str, depth: usize) -> ParseContext<'a> {
        ParseContext { db, depth }
    }

    pub(super) fn depth(self) -> usize {
        self.depth
    }

    /// The context of a sub-pipeline of a stage parsed in `self`.
    ///
    /// # Errors
    /// MaxSubPipelineDepthExceeded (232) past mongod's 20 levels.
    pub(super) fn nested(self) -> StoreResult<ParseContext<'a>> {
        if self.depth >= MAX_SUB_PIPELINE_DEPTH {
            return Err(CommandError::new(
                code::MAX_SUB_PIPELINE_DEPTH_EXCEEDED,
                format!(
                    "Maximum number of nested sub-pipelines exceeded. Limit is \
                     {MAX_SUB_PIPELINE_DEPTH}"
                ),
            ));
        }
        Ok(ParseContext {
            db: self.db,
            depth: self.depth + 1,
        })
    }
}

/// The documents of one collection a [`ForeignSource`] scanned.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The matching documents, in natural order.
    pub(crate) documents: Vec<Arc<Document>>,
    /// How many documents the scan looked at (the work it cost).
    pub(crate) examined: usize,
}

/// Read-only access to the collections and views of the command's database.
pub(crate) trait ForeignSource {
    /// The command's database.
    fn db(&self) -> &str;

    /// The documents of collection `name` matching `filter`; `None` when there is no such
    /// collection (a view is not one).
    ///
    /// # Errors
    /// Those of reading the collection (a transaction's WriteConflict).
    fn scan(&mut self, name: &str, filter: &Filter) -> StoreResult<Option<Scan>>;

    /// View `name` resolved down to its collection; `None` when `name` is no view.
    ///
    /// # Errors
    /// Those of resolving the view (a view chain too deep).
    fn view(&mut self, name: &str) -> StoreResult<Option<ResolvedView>>;
}

/// The source of a pipeline that may not read other collections.
struct Detached;

impl ForeignSource for Detached {
    fn db(&self) -> &str {
        ""
    }

    fn scan(&mut self, name: &str, _filter: &Filter) -> StoreResult<Option<Scan>> {
        Err(CommandError::new(
            code::INTERNAL_ERROR,
            format!("this pipeline cannot read collection '{name}'"),
        ))
    }

    fn view(&mut self, _name: &str) -> StoreResult<Option<ResolvedView>> {
        Ok(None)
    }
}

/// A [`ForeignSource`] with what all the sub-pipelines of one command share.
pub(crate) struct Reader<'a> {
    source: &'a mut dyn ForeignSource,
    db: String,
    collation: Option<Collation>,
    work: u64,
    /// The views read so far, their pipelines parsed (by name and sub-pipeline depth).
    views: HashMap<(String, usize), (String, Pipeline)>,
}

impl<'a> Reader<'a> {
    /// A reader of `source` for a pipeline running under `collation` (the command's).
    pub(crate) fn new(source: &'a mut dyn ForeignSource, collation: Option<Collation>) -> Self {
        Reader {
            db: source.db().to_owned(),
            source,
            collation,
            work: 0,
            views: HashMap::new(),
        }
    }

    /// Runs `run` with a reader that refuses to read any collection.
    pub(super) fn detached<T>(run: impl FnOnce(&mut Reader<'_>) -> T) -> T {
        let mut source = Detached;
        run(&mut Reader::new(&mut source, None))
    }

    pub(super) fn collation(&self) -> Option<&Collation> {
        self.collation.as_ref()
    }

    pub(super) fn db(&self) -> &str {
        &self.db
    }

    /// Accounts for `units` documents examined.
    ///
    /// # Errors
    /// ExceededTimeLimit once the command has examined more than [`WORK_LIMIT`].
    pub(super) fn charge(&mut self, units: usize) -> StoreResult<()> {
        self.work = self
            .work
            .saturating_add(u64::try_from(units).unwrap_or(u64::MAX));
        if self.work <= WORK_LIMIT {
            return Ok(());
        }
        Err(CommandError::new(
            code::EXCEEDED_TIME_LIMIT,
            format!(
                "the pipeline examined more than {WORK_LIMIT} documents in other collections \
                 and sub-pipelines; blackpipe stops it there (mongod has no such limit)"
            ),
        ))
    }

    /// Runs `pipeline` (a sub-pipeline `depth` deep) over collection or view `from`; with
    /// no `from`, or when the pipeline starts with `$documents`, over no input. A missing
    /// collection has no documents.
    ///
    /// # Errors
    /// OptionNotSupportedOnView (167) for a view whose default collation is not the
    /// command's; the pipeline's errors.
    pub(super) fn run_over(
        &mut self,
        from: Option<&str>,
        pipeline: &Pipeline,
        depth: usize,
    ) -> StoreResult<Vec<Arc<Document>>> {
        // Every sub-pipeline run costs something, even one over no input.
        self.charge(1)?;
        let Some(name) = from.filter(|_| !pipeline.starts_with_documents()) else {
            return pipeline.run_with(Vec::new(), false, self);
        };
        let key = (name.to_owned(), depth);
        if !self.views.contains_key(&key) {
            let Some(view) = self.source.view(name)? else {
                return self.scan_and_run(name, pipeline);
            };
            self.check_view_collation(name, &view)?;
            let context = ParseContext::at(&self.db, depth);
            let parsed =
                Pipeline::parse_in(&view.pipeline, context)?.with_collation(self.collation());
            self.views.insert(key.clone(), (view.collection, parsed));
        }
        let (collection, view_pipeline) = &self.views[&key];
        let mut combined = view_pipeline.clone();
        combined.stages.extend(pipeline.stages.iter().cloned());
        let collection = collection.clone();
        self.charge(combined.stages.len())?;
        self.scan_and_run(&collection, &combined)
    }

    /// Checks, before the pipeline runs, that every view it names has the command's collation
    /// (mongod checks the namespaces a pipeline involves when it parses it).
    ///
    /// # Errors
    /// OptionNotSupportedOnView (167).
    pub(crate) fn check_involved(&mut self, pipeline: &Pipeline) -> StoreResult<()> {
        let mut names = Vec::new();
        super::multi::pipeline_involved(pipeline, &mut names);
        for name in names {
            if let Some(view) = self.source.view(&name)? {
                self.check_view_collation(&name, &view)?;
            }
        }
        Ok(())
    }

    fn check_view_collation(&self, name: &str, view: &ResolvedView) -> StoreResult<()> {
        if view.collation.as_ref() == self.collation.as_ref().map(Collation::spec) {
            return Ok(());
        }
        Err(CommandError::new(
            code::OPTION_NOT_SUPPORTED_ON_VIEW,
            format!(
                "Cannot override a view's default collation{}.{name}",
                self.db
            ),
        ))
    }

    /// Runs `pipeline` over collection `name`, its leading `$match` applied by the scan.
    fn scan_and_run(&mut self, name: &str, pipeline: &Pipeline) -> StoreResult<Vec<Arc<Document>>> {
        let everything = Filter::match_all();
        let filter = pipeline.leading_match().unwrap_or(&everything);
        let input = match self.source.scan(name, filter)? {
            Some(scan) => {
                self.charge(scan.examined)?;
                scan.documents
            }
            None => Vec::new(),
        };
        pipeline.run_with(input, true, self)
    }
}

/// Checks a field path a stage names (`as`, `localField`, `connectToField`...) as mongod's
/// `FieldPath` does.
///
/// # Errors
/// 40352 for an empty path, 15998 for an empty component, 16410 for a `$`-prefixed one, 16411
/// for a NUL byte.
pub(super) fn field_path(path: &str) -> StoreResult<Vec<String>> {
    if path.is_empty() {
        return Err(CommandError::new(
            code::EMPTY_FIELD_PATH,
            "FieldPath cannot be constructed with empty string",
        ));
    }
    let parts = crate::path::split_path(path);
    for part in &parts {
        field_name(part)?;
    }
    Ok(parts)
}

/// Checks one component of a field path (a `$facet` output name).
pub(super) fn field_name(part: &str) -> StoreResult<()> {
    if part.is_empty() {
        return Err(CommandError::new(
            code::FIELD_PATH_EMPTY_COMPONENT,
            "FieldPath field names may not be empty strings.",
        ));
    }
    if part.starts_with('$') {
        return Err(CommandError::new(
            code::FIELD_PATH_DOLLAR_PREFIXED,
            "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
        ));
    }
    if part.contains('\0') {
        return Err(CommandError::new(
            code::FIELD_PATH_NUL,
            "FieldPath field names may not contain '\0'.",
        ));
    }
    Ok(())
}

/// Every value at `parts` in `document`, as mongod's `visitAllValuesAtPath` visits them (the
/// values `$lookup` joins on and `$graphLookup` follows): arrays on the way are walked
/// through (their documents), an array at the end gives its elements, a numeric component
/// also indexes an array.
pub(super) fn values_at_path(document: &Document, parts: &[String], out: &mut Vec<Bson>) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    if let Some(value) = document.get(first) {
        visit(value, rest, out);
    }
}

fn visit(value: &Bson, parts: &[String], out: &mut Vec<Bson>) {
    let Some((first, rest)) = parts.split_first() else {
        match value {
            Bson::Array(items) => out.extend(items.iter().cloned()),
            other => out.push(other.clone()),
        }
        return;
    };
    match value {
        Bson::Document(document) => {
            if let Some(child) = document.get(first) {
                visit(child, rest, out);
            }
        }
        Bson::Array(items) => match array_index(first).and_then(|index| items.get(index)) {
            Some(item) => visit(item, rest, out),
            None => {
                for item in items {
                    if let Bson::Document(document) = item {
                        if let Some(child) = document.get(first) {
                            visit(child, rest, out);
                        }
                    }
                }
            }
        },
        _ => {}
    }
}
