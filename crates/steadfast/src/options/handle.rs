//! Settings of database and collection handles, inherited level by level: an operation's own
//! option wins, then the collection's, then the database's, then the client's.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use steadfast_core::options::{ReadConcern, WriteConcern};
use steadfast_core::retry::RetryPolicy;
use steadfast_core::selection::SelectionCriteria;

/// Defines a handle-options struct (the fields are the same at both levels) with a `builder()`
/// and chainable setters; written out rather than with `options_struct!` because a retry policy
/// is neither comparable nor printable.
macro_rules! handle_options {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Default, typed_builder::TypedBuilder, serde::Deserialize)]
        #[builder(field_defaults(default, setter(into)))]
        #[serde(rename_all = "camelCase", default)]
        #[non_exhaustive]
        pub struct $name {
            /// The read concern; `None` inherits it.
            pub read_concern: Option<ReadConcern>,
            /// The write concern; `None` inherits it.
            pub write_concern: Option<WriteConcern>,
            /// How reads pick a server (a read preference); `None` inherits it.
            pub selection_criteria: Option<SelectionCriteria>,
            /// The per-operation time limit (timeoutMS); `Some(Duration::ZERO)` means no limit,
            /// `None` inherits it.
            #[serde(rename = "timeoutMS", with = "steadfast_core::serde_util::duration_ms")]
            pub timeout: Option<Duration>,
            /// The retry policy; `None` inherits it. Not deserialized (code, not data).
            #[serde(skip)]
            pub retry_policy: Option<Arc<dyn RetryPolicy>>,
        }

        impl $name {
            #[doc = concat!("Sets [`", stringify!($name), "::read_concern`].")]
            #[must_use]
            pub fn read_concern(mut self, value: ReadConcern) -> Self {
                self.read_concern = Some(value);
                self
            }

            #[doc = concat!("Sets [`", stringify!($name), "::write_concern`].")]
            #[must_use]
            pub fn write_concern(mut self, value: WriteConcern) -> Self {
                self.write_concern = Some(value);
                self
            }

            #[doc = concat!("Sets [`", stringify!($name), "::selection_criteria`].")]
            #[must_use]
            pub fn selection_criteria(mut self, value: impl Into<SelectionCriteria>) -> Self {
                self.selection_criteria = Some(value.into());
                self
            }

            #[doc = concat!("Sets [`", stringify!($name), "::timeout`].")]
            #[must_use]
            pub fn timeout(mut self, value: Duration) -> Self {
                self.timeout = Some(value);
                self
            }

            #[doc = concat!("Sets [`", stringify!($name), "::retry_policy`].")]
            #[must_use]
            pub fn retry_policy(mut self, value: Arc<dyn RetryPolicy>) -> Self {
                self.retry_policy = Some(value);
                self
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("read_concern", &self.read_concern)
                    .field("write_concern", &self.write_concern)
                    .field("selection_criteria", &self.selection_criteria)
                    .field("timeout", &self.timeout)
                    .field("retry_policy", &self.retry_policy)
                    .finish()
            }
        }
    };
}

handle_options! {
    /// Settings of a `Collection` handle (see `Database::collection_with_options`).
    CollectionOptions
}

handle_options! {
    /// Settings of a `Database` handle, inherited by its collections.
    DatabaseOptions
}

impl DatabaseOptions {
    /// These settings with `over`'s set fields taking precedence (a collection's settings over
    /// its database's).
    pub(crate) fn overridden_by(&self, over: &CollectionOptions) -> CollectionOptions {
        CollectionOptions {
            read_concern: over
                .read_concern
                .clone()
                .or_else(|| self.read_concern.clone()),
            write_concern: over
                .write_concern
                .clone()
                .or_else(|| self.write_concern.clone()),
            selection_criteria: over
                .selection_criteria
                .clone()
                .or_else(|| self.selection_criteria.clone()),
            timeout: over.timeout.or(self.timeout),
            retry_policy: over
                .retry_policy
                .clone()
                .or_else(|| self.retry_policy.clone()),
        }
    }
}
