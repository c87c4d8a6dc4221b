//! Options of the CRUD API: per-handle settings ([`CollectionOptions`], [`DatabaseOptions`]),
//! per-operation option structs ([`FindOptions`], [`InsertManyOptions`], ...) and the small
//! value types they use ([`Hint`], [`ReturnDocument`], [`UpdateModifications`], ...).
//!
//! Every option struct is `#[non_exhaustive]` with a `Default` and a `builder()` (the official
//! driver's style, from the `typed-builder` crate), so new options can be added without
//! breaking callers:
//!
//! ```
//! use steadfast::options::{FindOptions, Hint};
//! let options = FindOptions::builder()
//!     .limit(10)
//!     .sort(bson::doc! { "age": -1 })
//!     .hint(Hint::Name("age_-1".into()))
//!     .build();
//! assert_eq!(options.limit, Some(10));
//! ```
//!
//! The structs also have chainable setters of their own (`FindOptions::default().limit(10)`).
//!
//! Options left at `None` are not sent: the server's (or the enclosing handle's) default applies.

/// Defines a public `#[non_exhaustive]` options struct whose fields are all `Option<_>`, with a
/// `builder()` (every builder setter takes `impl Into<Option<Type>>`, as the official driver's)
/// and a chainable setter per field on the struct itself. A field marked `[into]` has a
/// chainable setter taking `impl Into<Type>`.
///
/// The struct's attributes must derive `serde::Serialize` and/or `serde::Deserialize` (with the
/// struct-level `#[serde(..)]` shape of the official driver's type): every field is given
/// `#[serde(default, skip_serializing_if = "Option::is_none")]`, so that a field left at `None`
/// is neither written nor required, and may add its own `#[serde(..)]` (a wire name, a
/// duration in milliseconds, `skip`).
macro_rules! options_struct {
    (
        $(#[$struct_meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                $([$into:ident])? $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$struct_meta])*
        #[derive(Clone, Debug, Default, PartialEq, typed_builder::TypedBuilder)]
        #[builder(field_defaults(default, setter(into)))]
        #[non_exhaustive]
        pub struct $name {
            $(
                $(#[$field_meta])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
        }

        impl $name {
            $(
                options_struct!(@setter $name, $field, $ty $(, $into)?);
            )*
        }
    };
    (@setter $name:ident, $field:ident, $ty:ty, into) => {
        #[doc = concat!("Sets [`", stringify!($name), "::", stringify!($field), "`].")]
        #[must_use]
        pub fn $field(mut self, value: impl Into<$ty>) -> Self {
            self.$field = Some(value.into());
            self
        }
    };
    (@setter $name:ident, $field:ident, $ty:ty) => {
        #[doc = concat!("Sets [`", stringify!($name), "::", stringify!($field), "`].")]
        #[must_use]
        pub fn $field(mut self, value: $ty) -> Self {
            self.$field = Some(value);
            self
        }
    };
}
// For the write models' setters (bulk/models.rs), which are the same chainable setters.
pub(crate) use options_struct;

mod admin;
mod change_stream;
mod client_options_serde;
mod client_serde;
mod collation;
mod collection;
mod command;
mod connection_string;
mod handle;
mod index;
mod listed;
mod read;
mod serde_impls;
#[cfg(test)]
mod serde_tests;
#[cfg(test)]
mod tests;
mod transaction;
mod types;
mod write;

pub use admin::{
    CreateCollectionOptions, CreateIndexOptions, DropCollectionOptions, DropDatabaseOptions,
    DropIndexOptions, ListCollectionsOptions, ListDatabasesOptions, ListIndexesOptions,
};
pub use change_stream::{ChangeStreamOptions, FullDocumentBeforeChangeType, FullDocumentType};
pub use collation::{
    Collation, CollationAlternate, CollationCaseFirst, CollationMaxVariable, CollationStrength,
};
pub use collection::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CommitQuorum, IndexOptionDefaults,
    TimeseriesGranularity, TimeseriesOptions, ValidationAction, ValidationLevel,
};
pub use command::{
    CreateSearchIndexOptions, DropSearchIndexOptions, ListSearchIndexOptions, RunCommandOptions,
    RunCursorCommandOptions, UpdateSearchIndexOptions,
};
pub use connection_string::{ConnectionString, HostInfo};
pub use handle::{CollectionOptions, DatabaseOptions};
pub use index::{
    IndexModel, IndexModelBuilder, IndexOptions, IndexVersion, Sphere2DIndexVersion,
    TextIndexVersion,
};
pub use read::{
    AggregateOptions, CountOptions, DistinctOptions, EstimatedDocumentCountOptions, FindOneOptions,
    FindOptions,
};
pub use transaction::TransactionOptions;
pub use types::{CursorType, Hint, ReturnDocument, TimeoutMode, UpdateModifications};
pub use write::{
    BulkWriteOptions, DeleteOptions, FindOneAndDeleteOptions, FindOneAndReplaceOptions,
    FindOneAndUpdateOptions, InsertManyOptions, InsertOneOptions, ReplaceOptions, UpdateOptions,
};

pub use crate::client::{
    ClientOptions, ClientOptionsBuilder, Compressor, Socks5Proxy, Tls, TlsOptions,
    TlsOptionsBuilder,
};
#[cfg(feature = "dns-resolver")]
pub use crate::client::{DnsProtocol, NameServer, ResolverConfig};
pub use crate::client_bulk::{
    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
    UpdateOneModel, WriteModel,
};
pub use crate::conn::config::{ServerApi, ServerApiBuilder, ServerApiVersion};
pub use crate::gridfs::options::{
    GridFsBucketOptions, GridFsDownloadByNameOptions, GridFsFindOneOptions, GridFsFindOptions,
    GridFsUploadOptions,
};
pub use crate::handshake::metadata::{DriverInfo, DriverInfoBuilder};
pub use crate::session::{SessionOptions, SessionOptionsBuilder};
pub use steadfast_core::ServerAddress;
/// MONGODB-OIDC callbacks: [`oidc::Callback`] and what it receives and returns.
pub use steadfast_core::options::oidc;
pub use steadfast_core::options::{
    Acknowledgment, AuthMechanism, ClientOptions as ResolvedClientOptions,
    Compressor as CompressorName, Credential, CredentialBuilder, ReadConcern, ReadConcernLevel,
    ServerMonitoringMode, Tls as ResolvedTls, WriteConcern,
};
pub use steadfast_core::retry::RetryBudgetConfig;
pub use steadfast_core::retry::{RetryPolicy, SpecPolicy};
pub use steadfast_core::selection::read_preference::{
    HedgedReadOptionsBuilder, ReadPreferenceOptionsBuilder,
};
pub use steadfast_core::selection::{
    HedgedReadOptions, Predicate, ReadPreference, ReadPreferenceMode, ReadPreferenceOptions,
    SelectionCriteria, ServerInfo, TagSet,
};

pub(crate) use types::{append_hint, duration_ms};
