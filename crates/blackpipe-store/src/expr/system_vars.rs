//! The system variables `$$NOW` and `$$CLUSTER_TIME`: one value each per command, as mongod
//! fixes them when a command starts (its "runtime constants"), so every expression of the
//! command, in every document, reads the same instant.
//!
//! The store has no clock: the command layer passes the command's wall time and cluster time
//! in ([`CommandTime::enter`], from `Store::execute`). Expressions are evaluated without a handle
//! to the command, so, as for `$rand`'s seed (`rand.rs`), the values live in a thread-local for
//! the command's duration; each top-level evaluation copies them into its [`super::Scope`].

use std::cell::Cell;

use bson::{Bson, DateTime, Timestamp};

use crate::code;
use crate::errors::{CommandError, StoreResult};

/// The system variables of one command. Outside any command both are unavailable.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemVars {
    now: Option<DateTime>,
    cluster_time: Option<Timestamp>,
}

impl SystemVars {
    /// The value of the system variable `name` (`NOW` or `CLUSTER_TIME`).
    ///
    /// # Errors
    /// 51144 when the variable is not available: `$$CLUSTER_TIME` on a standalone, or before
    /// the deployment's clock has started, as on mongod.
    pub(crate) fn value(&self, name: &str) -> StoreResult<Bson> {
        let value = match name {
            "NOW" => self.now.map(Bson::DateTime),
            "CLUSTER_TIME" => self.cluster_time.map(Bson::Timestamp),
            _ => None,
        };
        value.ok_or_else(|| {
            CommandError::new(
                code::BUILTIN_VARIABLE_UNAVAILABLE,
                format!("Builtin variable '$${name}' is not available"),
            )
        })
    }
}

thread_local! {
    static CURRENT: Cell<SystemVars> = const {
        Cell::new(SystemVars { now: None, cluster_time: None })
    };
}

/// The system variables of the current command on this thread.
pub(crate) fn current() -> SystemVars {
    CURRENT.get()
}

/// The system variables of one command, restored to the previous ones when dropped.
#[must_use = "the command's system variables are uninstalled when this is dropped"]
pub(crate) struct CommandTime {
    previous: SystemVars,
}

impl CommandTime {
    /// Installs `now` and `cluster_time` (`None`: not available) on this thread until the value
    /// is dropped. A null timestamp counts as unavailable, as mongod's uninitialized clock.
    pub(crate) fn enter(now: DateTime, cluster_time: Option<Timestamp>) -> CommandTime {
        let cluster_time = cluster_time.filter(|ts| ts.time != 0 || ts.increment != 0);
        let fresh = SystemVars {
            now: Some(now),
            cluster_time,
        };
        CommandTime {
            previous: CURRENT.replace(fresh),
        }
    }
}

impl Drop for CommandTime {
    fn drop(&mut self) {
        CURRENT.set(self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_last_for_the_command_and_the_previous_ones_come_back() {
        let null = Timestamp {
            time: 0,
            increment: 0,
        };
        assert!(current().value("NOW").is_err());
        {
            let _command = CommandTime::enter(DateTime::from_millis(5), None);
            assert_eq!(
                current().value("NOW").ok(),
                Some(Bson::DateTime(DateTime::from_millis(5)))
            );
            let error = current()
                .value("CLUSTER_TIME")
                .err()
                .map(|error| error.code);
            assert_eq!(error, Some(51144));
            {
                let _nested = CommandTime::enter(DateTime::from_millis(6), Some(null));
                assert!(current().value("CLUSTER_TIME").is_err());
            }
            assert_eq!(
                current().value("NOW").ok(),
                Some(Bson::DateTime(DateTime::from_millis(5)))
            );
        }
        assert!(current().value("NOW").is_err());
    }
}
