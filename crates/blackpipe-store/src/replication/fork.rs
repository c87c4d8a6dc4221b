//! A copy of a store at one point in time, for a member that starts over from its sync source.

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use crate::catalog::{lock, read, write};
use crate::{Store, StoreOptions};

impl Store {
    /// A new store holding a copy of this one: every collection (options, UUID, documents,
    /// indexes), the op log (the same entries, counters and last optime), the recent document
    /// versions (snapshot reads), the retryable-write table's sessions (txnNumbers, recorded
    /// statements, committed and aborted transactions; not open transactions) and the
    /// transaction lifetime. No cursors. Taken under the commit gate, so it is one point in
    /// time. The copy uses `options` (its seed, op log capacity, timeouts and clock; the clock
    /// learns the copied last optime). Documents are shared, not copied, until either store
    /// writes them: writes to one never show in the other.
    pub fn fork(&self, options: StoreOptions) -> Store {
        let _no_writer = write(&self.commit_gate);
        let capacity = options.oplog_capacity;
        let mut fork = Store::new(options);
        let clock = lock(&fork.oplog).clock().clone();
        fork.oplog = Mutex::new(lock(&self.oplog).copy(capacity, clock));
        for db in self.catalog.database_names() {
            for (name, handle) in self.catalog.collections(&db) {
                let copy = read(&handle).snapshot_copy();
                fork.catalog.install(&db, &name, copy);
            }
        }
        *lock(&fork.history) = lock(&self.history).clone();
        self.retryable_writes.copy_into(&fork.retryable_writes);
        fork.transaction_lifetime_millis.store(
            self.transaction_lifetime_millis.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        fork
    }
}
