//! steadfast's side: the shared task code (GridFS and client bulkWrite included, in the same
//! statements as the official crate's) and its Collection::bulkWrite.

use super::task::Task;

super::side::core_tasks!(steadfast);
super::side::gridfs_tasks!(steadfast);
super::side::client_bulk_tasks!(steadfast);

/// Collection bulkWrite, in steadfast's names (the official crate has no such method).
mod collection_bulk {
    use bson::{Document, doc};
    use steadfast::{DeleteModel, InsertOneModel, ReplaceOneModel, WriteModel};

    use super::Side;
    use crate::BenchError;

    /// Write models built before the clock starts.
    pub(crate) struct CollectionModels(Vec<WriteModel<Document>>);

    impl Side {
        /// `count` insert models of `document`.
        pub(crate) fn collection_inserts(
            &self,
            document: &Document,
            count: u64,
        ) -> CollectionModels {
            CollectionModels(
                (0..count)
                    .map(|_| WriteModel::InsertOne(InsertOneModel::new(document.clone())))
                    .collect(),
            )
        }

        /// `count` (insert, replace with an empty filter, delete with an empty filter) triples.
        pub(crate) fn collection_mixed(&self, document: &Document, count: u64) -> CollectionModels {
            let mut models = Vec::new();
            for _ in 0..count {
                models.push(WriteModel::InsertOne(InsertOneModel::new(document.clone())));
                models.push(WriteModel::ReplaceOne(ReplaceOneModel::new(
                    doc! {},
                    document.clone(),
                )));
                models.push(WriteModel::DeleteOne(DeleteModel::new(doc! {})));
            }
            CollectionModels(models)
        }

        /// One ordered Collection::bulk_write of `models`.
        pub(crate) async fn collection_bulk_write(
            &self,
            models: CollectionModels,
        ) -> Result<(), BenchError> {
            self.corpus.bulk_write(models.0).await?;
            Ok(())
        }
    }
}

/// Why steadfast cannot run `task`, if it cannot: it runs every task.
pub(crate) fn unavailable(_task: Task) -> Option<&'static str> {
    None
}
