//! The contenders' side of the workloads, written once and compiled against each crate: the
//! same source for the official `mongodb` crate and for steadfast, which also proves that code
//! written for one compiles against the other.

/// Defines `$side`, a contender on crate `$krate`, labelled `$label` in error messages.
macro_rules! contender {
    ($side:ident, $krate:ident, $label:literal) => {
        use std::time::{Duration, Instant};

        use bson::{Document, doc};
        use futures_util::TryStreamExt;
        use $krate::{Client, Collection, Database};

        use crate::BenchError;
        use crate::workload::{
            BANK, DATABASE, FAILOVER, INSERT_MANY_BATCH, INSERTS, ITEMS, SCAN, SCAN_COUNT,
            Workload, fresh_batch, fresh_document, item_id, opening_accounts, transfer_plan,
        };

        /// A connected client of this contender's crate and the handles the workloads use.
        /// Cheap to clone (the handles share the client), so every task gets its own clone.
        #[derive(Clone)]
        pub(crate) struct $side {
            client: Client,
            admin: Database,
            items: Collection<Document>,
            scan: Collection<Document>,
            inserts: Collection<Document>,
            failover: Collection<Document>,
            bank: Collection<Document>,
        }

        impl $side {
            /// Creates a client with default options for `uri` and waits until a `ping` succeeds.
            pub(crate) async fn connect(uri: &str) -> Result<Self, BenchError> {
                let client = Client::with_uri_str(uri).await?;
                let db = client.database(DATABASE);
                let side = Self {
                    admin: client.database("admin"),
                    items: db.collection(ITEMS),
                    scan: db.collection(SCAN),
                    inserts: db.collection(INSERTS),
                    failover: db.collection(FAILOVER),
                    bank: db.collection(BANK),
                    client,
                };
                side.admin.run_command(doc! { "ping": 1 }).await?;
                Ok(side)
            }

            /// Runs one operation of `workload` and returns its latency. Documents to insert are
            /// built before the clock starts.
            pub(crate) async fn execute(
                &self,
                workload: Workload,
                sequence: u64,
            ) -> Result<Duration, BenchError> {
                match workload {
                    Workload::Ping => {
                        let started = Instant::now();
                        self.admin.run_command(doc! { "ping": 1 }).await?;
                        Ok(started.elapsed())
                    }
                    Workload::FindOne => {
                        let id = item_id(sequence);
                        let started = Instant::now();
                        let found = self.items.find_one(doc! { "_id": id }).await?;
                        let elapsed = started.elapsed();
                        if found.is_none() {
                            return Err(
                                format!("{} find_one found no document {id}", $label).into()
                            );
                        }
                        Ok(elapsed)
                    }
                    Workload::InsertOne => {
                        let document = fresh_document(sequence);
                        let started = Instant::now();
                        self.inserts.insert_one(document).await?;
                        Ok(started.elapsed())
                    }
                    Workload::InsertMany => {
                        let batch = fresh_batch(sequence);
                        let started = Instant::now();
                        let result = self.inserts.insert_many(batch).await?;
                        let elapsed = started.elapsed();
                        if result.inserted_ids.len() != INSERT_MANY_BATCH {
                            return Err(
                                format!("{} insert_many reported a short insert", $label).into()
                            );
                        }
                        Ok(elapsed)
                    }
                    Workload::Find => {
                        let started = Instant::now();
                        let mut cursor = self.scan.find(doc! {}).await?;
                        let mut seen = 0;
                        while cursor.try_next().await?.is_some() {
                            seen += 1;
                        }
                        let elapsed = started.elapsed();
                        if seen != SCAN_COUNT {
                            return Err(
                                format!("{} find returned {seen} of {SCAN_COUNT}", $label).into()
                            );
                        }
                        Ok(elapsed)
                    }
                }
            }

            /// One `insert_one` of the failover writer.
            pub(crate) async fn failover_insert(&self, sequence: u64) -> Result<(), BenchError> {
                self.failover.insert_one(fresh_document(sequence)).await?;
                Ok(())
            }

            /// Opens the failover transfer writer's accounts.
            pub(crate) async fn open_bank(&self) -> Result<(), BenchError> {
                self.bank.insert_many(opening_accounts()).await?;
                Ok(())
            }

            /// One transfer of the failover writer, through the convenient transaction API: the
            /// record (its `_id` makes a second application fail), the debit and the credit.
            pub(crate) async fn failover_transfer(&self, sequence: u64) -> Result<(), BenchError> {
                let plan = transfer_plan(sequence);
                let mut session = self.client.start_session().await?;
                session
                    .start_transaction()
                    .and_run((&self.bank, &plan), |session, (bank, plan)| {
                        let (id, from, to, amount) = &**plan;
                        Box::pin(async move {
                            let record =
                                doc! { "_id": id, "from": from, "to": to, "amount": *amount };
                            bank.insert_one(record).session(&mut *session).await?;
                            let debit = doc! { "$inc": { "balance": -*amount } };
                            bank.update_one(doc! { "_id": from }, debit)
                                .session(&mut *session)
                                .await?;
                            let credit = doc! { "$inc": { "balance": *amount } };
                            bank.update_one(doc! { "_id": to }, credit)
                                .session(&mut *session)
                                .await?;
                            Ok(())
                        })
                    })
                    .await?;
                Ok(())
            }

            /// Ends the client's sessions, stops its monitors and closes its connections (what each
            /// crate's `shutdown` does).
            pub(crate) async fn shutdown(self) {
                self.client.shutdown().await;
            }
        }
    };
}

pub(crate) use contender;
