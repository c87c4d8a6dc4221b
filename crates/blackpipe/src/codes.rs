//! The server error codes blackpipe answers with, named as mongod names them (its
//! `error_codes.yml`, in SCREAMING_CASE). Codes mongod has no name for (`Location<code>`) are
//! named after the situation that raises them.

/// `InternalError`.
pub(crate) const INTERNAL_ERROR: i32 = 1;
/// `BadValue`.
pub(crate) const BAD_VALUE: i32 = 2;
/// `HostUnreachable`.
pub(crate) const HOST_UNREACHABLE: i32 = 6;
/// `HostNotFound`.
pub(crate) const HOST_NOT_FOUND: i32 = 7;
/// `UnknownError`.
pub(crate) const UNKNOWN_ERROR: i32 = 8;
/// `FailedToParse`.
pub(crate) const FAILED_TO_PARSE: i32 = 9;
/// `UserNotFound`.
pub(crate) const USER_NOT_FOUND: i32 = 11;
/// `Unauthorized`.
pub(crate) const UNAUTHORIZED: i32 = 13;
/// `TypeMismatch`.
pub(crate) const TYPE_MISMATCH: i32 = 14;
/// `ProtocolError`.
pub(crate) const PROTOCOL_ERROR: i32 = 17;
/// `AuthenticationFailed`.
pub(crate) const AUTHENTICATION_FAILED: i32 = 18;
/// `IllegalOperation`.
pub(crate) const ILLEGAL_OPERATION: i32 = 20;
/// `LockTimeout`.
pub(crate) const LOCK_TIMEOUT: i32 = 24;
/// `NamespaceNotFound`.
pub(crate) const NAMESPACE_NOT_FOUND: i32 = 26;
/// `IndexNotFound`.
pub(crate) const INDEX_NOT_FOUND: i32 = 27;
/// `CursorNotFound`.
pub(crate) const CURSOR_NOT_FOUND: i32 = 43;
/// `NamespaceExists`.
pub(crate) const NAMESPACE_EXISTS: i32 = 48;
/// `MaxTimeMSExpired`.
pub(crate) const MAX_TIME_MS_EXPIRED: i32 = 50;
/// `CommandNotFound`.
pub(crate) const COMMAND_NOT_FOUND: i32 = 59;
/// `WriteConcernFailed`.
pub(crate) const WRITE_CONCERN_FAILED: i32 = 64;
/// `ImmutableField`.
pub(crate) const IMMUTABLE_FIELD: i32 = 66;
/// `InvalidOptions`.
pub(crate) const INVALID_OPTIONS: i32 = 72;
/// `InvalidNamespace`.
pub(crate) const INVALID_NAMESPACE: i32 = 73;
/// `NoReplicationEnabled`.
pub(crate) const NO_REPLICATION_ENABLED: i32 = 76;
/// `UnknownReplWriteConcern`.
pub(crate) const UNKNOWN_REPL_WRITE_CONCERN: i32 = 79;
/// `StaleShardVersion`.
pub(crate) const STALE_SHARD_VERSION: i32 = 63;
/// `NetworkTimeout`.
pub(crate) const NETWORK_TIMEOUT: i32 = 89;
/// `ShutdownInProgress`.
pub(crate) const SHUTDOWN_IN_PROGRESS: i32 = 91;
/// `InvalidReplicaSetConfig`.
pub(crate) const INVALID_REPLICA_SET_CONFIG: i32 = 93;
/// `NotSecondary`.
pub(crate) const NOT_SECONDARY: i32 = 95;
/// `OperationFailed`.
pub(crate) const OPERATION_FAILED: i32 = 96;
/// `UnsatisfiableWriteConcern`.
pub(crate) const UNSATISFIABLE_WRITE_CONCERN: i32 = 100;
/// `NewReplicaSetConfigurationIncompatible`.
pub(crate) const NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE: i32 = 103;
/// `WriteConflict`.
pub(crate) const WRITE_CONFLICT: i32 = 112;
/// `CommandNotSupported`.
pub(crate) const COMMAND_NOT_SUPPORTED: i32 = 115;
/// `NotAReplicaSet`.
pub(crate) const NOT_A_REPLICA_SET: i32 = 123;
/// `CommandFailed`.
pub(crate) const COMMAND_FAILED: i32 = 125;
/// `FailedToSatisfyReadPreference`.
pub(crate) const FAILED_TO_SATISFY_READ_PREFERENCE: i32 = 133;
/// `ReadConcernMajorityNotAvailableYet`.
pub(crate) const READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET: i32 = 134;
/// `CappedPositionLost`.
pub(crate) const CAPPED_POSITION_LOST: i32 = 136;
/// `StaleEpoch`.
pub(crate) const STALE_EPOCH: i32 = 150;
/// `QueryPlanKilled`.
pub(crate) const QUERY_PLAN_KILLED: i32 = 175;
/// `PrimarySteppedDown`.
pub(crate) const PRIMARY_STEPPED_DOWN: i32 = 189;
/// `IncompleteTransactionHistory`.
pub(crate) const INCOMPLETE_TRANSACTION_HISTORY: i32 = 217;
/// `TransactionTooOld`.
pub(crate) const TRANSACTION_TOO_OLD: i32 = 225;
/// `RetryChangeStream`.
pub(crate) const RETRY_CHANGE_STREAM: i32 = 234;
/// `SnapshotTooOld`.
pub(crate) const SNAPSHOT_TOO_OLD: i32 = 239;
/// `StaleChunkHistory`.
pub(crate) const STALE_CHUNK_HISTORY: i32 = 241;
/// `SnapshotUnavailable`.
pub(crate) const SNAPSHOT_UNAVAILABLE: i32 = 246;
/// `NoSuchTransaction`.
pub(crate) const NO_SUCH_TRANSACTION: i32 = 251;
/// `TransactionCommitted`.
pub(crate) const TRANSACTION_COMMITTED: i32 = 256;
/// `ExceededTimeLimit`.
pub(crate) const EXCEEDED_TIME_LIMIT: i32 = 262;
/// `OperationNotSupportedInTransaction`.
pub(crate) const OPERATION_NOT_SUPPORTED_IN_TRANSACTION: i32 = 263;
/// `PreparedTransactionInProgress`.
pub(crate) const PREPARED_TRANSACTION_IN_PROGRESS: i32 = 267;
/// `ChangeStreamFatalError`.
pub(crate) const CHANGE_STREAM_FATAL_ERROR: i32 = 280;
/// `ChangeStreamHistoryLost`.
pub(crate) const CHANGE_STREAM_HISTORY_LOST: i32 = 286;
/// `APIVersionError`.
pub(crate) const API_VERSION_ERROR: i32 = 322;
/// `APIStrictError`.
pub(crate) const API_STRICT_ERROR: i32 = 323;
/// `APIDeprecationError`.
pub(crate) const API_DEPRECATION_ERROR: i32 = 324;
/// `MechanismUnavailable`.
pub(crate) const MECHANISM_UNAVAILABLE: i32 = 334;
/// `UnsupportedOpQueryCommand`.
pub(crate) const UNSUPPORTED_OP_QUERY_COMMAND: i32 = 352;
/// `LoadBalancerSupportMismatch`.
pub(crate) const LOAD_BALANCER_SUPPORT_MISMATCH: i32 = 354;
/// `ReauthenticationRequired`.
pub(crate) const REAUTHENTICATION_REQUIRED: i32 = 391;
/// `IngressRequestRateLimitExceeded`.
pub(crate) const INGRESS_REQUEST_RATE_LIMIT_EXCEEDED: i32 = 462;
/// `SocketException`.
pub(crate) const SOCKET_EXCEPTION: i32 = 9001;
/// `NotWritablePrimary`.
pub(crate) const NOT_WRITABLE_PRIMARY: i32 = 10107;
/// `BSONObjectTooLarge`.
pub(crate) const BSON_OBJECT_TOO_LARGE: i32 = 10334;
/// `DuplicateKey`.
pub(crate) const DUPLICATE_KEY: i32 = 11000;
/// `InterruptedAtShutdown`.
pub(crate) const INTERRUPTED_AT_SHUTDOWN: i32 = 11600;
/// `Interrupted`.
pub(crate) const INTERRUPTED: i32 = 11601;
/// `InterruptedDueToReplStateChange`.
pub(crate) const INTERRUPTED_DUE_TO_REPL_STATE_CHANGE: i32 = 11602;
/// `StaleConfig`.
pub(crate) const STALE_CONFIG: i32 = 13388;
/// `NotPrimaryNoSecondaryOk`.
pub(crate) const NOT_PRIMARY_NO_SECONDARY_OK: i32 = 13435;
/// `NotPrimaryOrSecondary`.
pub(crate) const NOT_PRIMARY_OR_SECONDARY: i32 = 13436;
/// `SearchNotEnabled`.
pub(crate) const SEARCH_NOT_ENABLED: i32 = 31082;
/// `Location31368`: a hello with `maxAwaitTimeMS` but no `topologyVersion`.
pub(crate) const MAX_AWAIT_WITHOUT_TOPOLOGY_VERSION: i32 = 31368;
/// `Location31373`: a hello's `maxAwaitTimeMS` that is not a non-negative integer.
pub(crate) const NEGATIVE_MAX_AWAIT: i32 = 31373;
/// `Location31382`: a hello's `topologyVersion` with a counter ahead of the server's.
pub(crate) const FUTURE_TOPOLOGY_VERSION: i32 = 31382;
/// `Location40414`: a hello's malformed `topologyVersion`.
pub(crate) const MALFORMED_TOPOLOGY_VERSION: i32 = 40414;
/// `Location40571`: an OP_MSG without `$db`.
pub(crate) const MISSING_DATABASE: i32 = 40571;
/// `Location40573`: a `$changeStream` stage on a standalone.
pub(crate) const CHANGE_STREAM_ON_STANDALONE: i32 = 40573;
/// `Location51760`: a hello with `topologyVersion` but no `maxAwaitTimeMS`.
pub(crate) const TOPOLOGY_VERSION_WITHOUT_MAX_AWAIT: i32 = 51760;
/// `Location4886600`: `apiStrict` or `apiDeprecationErrors` without `apiVersion`.
pub(crate) const API_PARAMETERS_WITHOUT_VERSION: i32 = 4886600;
