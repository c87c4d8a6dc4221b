//! mongod's error codes by name: the one table the store reports its errors from, which also
//! holds the names the server on top of it needs (state changes, write concern, Stable API...).
//!
//! The first group has names in mongod's error code table, and [`name`] gives them. The store
//! reports the second group as `Location<code>`, as mongod reports its numbered assertions (all
//! of them but one are such); their constants are named for what they mean.

// mongod's code names.
/// `InternalError`: an internal error.
pub const INTERNAL_ERROR: i32 = 1;
/// `BadValue`: a value the command does not accept.
pub const BAD_VALUE: i32 = 2;
/// `GraphContainsCycle`: a view defined, directly or through other views, on itself.
pub const GRAPH_CONTAINS_CYCLE: i32 = 5;
/// `HostUnreachable`: the host could not be reached.
pub const HOST_UNREACHABLE: i32 = 6;
/// `HostNotFound`: the host name did not resolve.
pub const HOST_NOT_FOUND: i32 = 7;
/// `UnknownError`: an error without a more specific code.
pub const UNKNOWN_ERROR: i32 = 8;
/// `FailedToParse`: a command or option that does not parse.
pub const FAILED_TO_PARSE: i32 = 9;
/// `UserNotFound`: no such user.
pub const USER_NOT_FOUND: i32 = 11;
/// `Unauthorized`: the user lacks the privilege.
pub const UNAUTHORIZED: i32 = 13;
/// `TypeMismatch`: a field of the wrong BSON type.
pub const TYPE_MISMATCH: i32 = 14;
/// `Overflow`: a number, or nesting, past its limit.
pub const OVERFLOW: i32 = 15;
/// `InvalidLength`: a length past its limit (a write batch too large).
pub const INVALID_LENGTH: i32 = 16;
/// `AuthenticationFailed`: wrong credentials.
pub const AUTHENTICATION_FAILED: i32 = 18;
/// `IllegalOperation`: an operation not allowed here.
pub const ILLEGAL_OPERATION: i32 = 20;
/// `LockTimeout`: a lock not acquired in time.
pub const LOCK_TIMEOUT: i32 = 24;
/// `NamespaceNotFound`: no such database or collection.
pub const NAMESPACE_NOT_FOUND: i32 = 26;
/// `IndexNotFound`: no such index.
pub const INDEX_NOT_FOUND: i32 = 27;
/// `PathNotViable`: an update path through a non-document.
pub const PATH_NOT_VIABLE: i32 = 28;
/// `CannotBackfillArray`: an update would pad an array too far.
pub const CANNOT_BACKFILL_ARRAY: i32 = 34;
/// `ConflictingUpdateOperators`: two update operators on one path.
pub const CONFLICTING_UPDATE_OPERATORS: i32 = 40;
/// `CursorNotFound`: no such cursor (killed, expired or exhausted).
pub const CURSOR_NOT_FOUND: i32 = 43;
/// `NoMatchingDocument`: a required document (a change stream's pre-image) is missing.
pub const NO_MATCHING_DOCUMENT: i32 = 47;
/// `NamespaceExists`: the collection already exists.
pub const NAMESPACE_EXISTS: i32 = 48;
/// `MaxTimeMSExpired`: `maxTimeMS` ran out.
pub const MAX_TIME_MS_EXPIRED: i32 = 50;
/// `DollarPrefixedFieldName`: a `$`-prefixed field name where none may be.
pub const DOLLAR_PREFIXED_FIELD_NAME: i32 = 52;
/// `EmptyFieldName`: an empty field name in a path.
pub const EMPTY_FIELD_NAME: i32 = 56;
/// `CommandNotFound`: no such command.
pub const COMMAND_NOT_FOUND: i32 = 59;
/// `WriteConcernTimeout` (named `WriteConcernFailed` before MongoDB 7.1): the write concern
/// was not satisfied before its `wtimeout`.
pub const WRITE_CONCERN_TIMEOUT: i32 = 64;
/// `ImmutableField`: an update would change `_id`.
pub const IMMUTABLE_FIELD: i32 = 66;
/// `CannotCreateIndex`: an index specification that cannot be built.
pub const CANNOT_CREATE_INDEX: i32 = 67;
/// `InvalidOptions`: options that contradict each other.
pub const INVALID_OPTIONS: i32 = 72;
/// `InvalidNamespace`: a database or collection name mongod refuses.
pub const INVALID_NAMESPACE: i32 = 73;
/// `NoReplicationEnabled`: a replication command on a standalone.
pub const NO_REPLICATION_ENABLED: i32 = 76;
/// `UnknownReplWriteConcern`: a write concern tag mode nobody defined.
pub const UNKNOWN_REPL_WRITE_CONCERN: i32 = 79;
/// `IndexOptionsConflict`: an index of that key with other options exists.
pub const INDEX_OPTIONS_CONFLICT: i32 = 85;
/// `IndexKeySpecsConflict`: an index of that name with another key exists.
pub const INDEX_KEY_SPECS_CONFLICT: i32 = 86;
/// `NetworkTimeout`: a network operation timed out.
pub const NETWORK_TIMEOUT: i32 = 89;
/// `ShutdownInProgress`: the server is shutting down.
pub const SHUTDOWN_IN_PROGRESS: i32 = 91;
/// `InvalidReplicaSetConfig`: a replica set configuration mongod refuses.
pub const INVALID_REPLICA_SET_CONFIG: i32 = 93;
/// `NotSecondary`: the member is not a secondary.
pub const NOT_SECONDARY: i32 = 95;
/// `OperationFailed`: an operation failed for a reason without its own code.
pub const OPERATION_FAILED: i32 = 96;
/// `UnsatisfiableWriteConcern`: a write concern no member set can satisfy.
pub const UNSATISFIABLE_WRITE_CONCERN: i32 = 100;
/// `NewReplicaSetConfigurationIncompatible`: a reconfiguration incompatible with the current one.
pub const NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE: i32 = 103;
/// `WriteConflict`: two transactions wrote the same document.
pub const WRITE_CONFLICT: i32 = 112;
/// `CommandNotSupported`: a command this server does not support here.
pub const COMMAND_NOT_SUPPORTED: i32 = 115;
/// `ConflictingOperationInProgress`: an operation conflicts with one in progress.
pub const CONFLICTING_OPERATION_IN_PROGRESS: i32 = 117;
/// `NotAReplicaSet`: a replica set command on a server that is not in one.
pub const NOT_A_REPLICA_SET: i32 = 123;
/// `CommandFailed`: a command failed for a reason without its own code.
pub const COMMAND_FAILED: i32 = 125;
/// `FailedToSatisfyReadPreference`: no member matches the read preference.
pub const FAILED_TO_SATISFY_READ_PREFERENCE: i32 = 133;
/// `ReadConcernMajorityNotAvailableYet`: no majority snapshot yet.
pub const READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET: i32 = 134;
/// `CappedPositionLost`: a tailable cursor's position was capped away.
pub const CAPPED_POSITION_LOST: i32 = 136;
/// `ExceededMemoryLimit`: an operation would hold more memory than allowed.
pub const EXCEEDED_MEMORY_LIMIT: i32 = 146;
/// `StaleEpoch`: a shard's routing information changed epoch.
pub const STALE_EPOCH: i32 = 150;
/// `InvalidViewDefinition`: a view pipeline that is not an array of stage documents.
pub const INVALID_VIEW_DEFINITION: i32 = 182;
/// `DocumentValidationFailure`: a write the collection's validator refuses.
pub const DOCUMENT_VALIDATION_FAILURE: i32 = 121;
/// `ViewDepthLimitExceeded`: views on views deeper than mongod's 20.
pub const VIEW_DEPTH_LIMIT_EXCEEDED: i32 = 165;
/// `CommandNotSupportedOnView`: a write or index command on a view.
pub const COMMAND_NOT_SUPPORTED_ON_VIEW: i32 = 166;
/// `OptionNotSupportedOnView`: an option a view does not take (another collation).
pub const OPTION_NOT_SUPPORTED_ON_VIEW: i32 = 167;
/// `InvalidPipelineOperator`: no such aggregation expression operator.
pub const INVALID_PIPELINE_OPERATOR: i32 = 168;
/// `QueryPlanKilled`: the collection went away under a cursor.
pub const QUERY_PLAN_KILLED: i32 = 175;
/// `PrimarySteppedDown`: the primary stepped down during the operation.
pub const PRIMARY_STEPPED_DOWN: i32 = 189;
/// `IncompleteTransactionHistory`: a retryable write's history was dropped.
pub const INCOMPLETE_TRANSACTION_HISTORY: i32 = 217;
/// `TransactionTooOld`: a `txnNumber` older than the session's newest.
pub const TRANSACTION_TOO_OLD: i32 = 225;
/// `RetryChangeStream`: a change stream should retry.
pub const RETRY_CHANGE_STREAM: i32 = 234;
/// `SnapshotTooOld`: a snapshot read older than the kept history.
pub const SNAPSHOT_TOO_OLD: i32 = 239;
/// `ConversionFailure`: `$convert` (and `$toDecimal`, `$toDouble`) cannot convert a value.
pub const CONVERSION_FAILURE: i32 = 241;
/// `SnapshotUnavailable`: the snapshot is not available yet.
pub const SNAPSHOT_UNAVAILABLE: i32 = 246;
/// `StaleChunkHistory`: a shard's chunk history does not reach the read's time.
pub const STALE_CHUNK_HISTORY: i32 = 250;
/// `NoSuchTransaction`: no such (open) transaction.
pub const NO_SUCH_TRANSACTION: i32 = 251;
/// `TransactionCommitted`: the transaction has already committed.
pub const TRANSACTION_COMMITTED: i32 = 256;
/// `InvalidResumeToken`: a change stream resume token that does not parse.
pub const INVALID_RESUME_TOKEN: i32 = 260;
/// `TooManyLogicalSessions`: the session table is full.
pub const TOO_MANY_LOGICAL_SESSIONS: i32 = 261;
/// `ExceededTimeLimit`: an operation exceeded its time limit.
pub const EXCEEDED_TIME_LIMIT: i32 = 262;
/// `OperationNotSupportedInTransaction`: an operation a transaction may not run.
pub const OPERATION_NOT_SUPPORTED_IN_TRANSACTION: i32 = 263;
/// `PreparedTransactionInProgress`: a prepared transaction holds the document.
pub const PREPARED_TRANSACTION_IN_PROGRESS: i32 = 267;
/// `ChangeStreamFatalError`: a change stream that cannot continue.
pub const CHANGE_STREAM_FATAL_ERROR: i32 = 280;
/// `ChangeStreamHistoryLost`: a change stream's position left the op log.
pub const CHANGE_STREAM_HISTORY_LOST: i32 = 286;
/// `APIVersionError`: a Stable API version that is missing or unknown.
pub const API_VERSION_ERROR: i32 = 322;
/// `APIStrictError`: a command outside the Stable API under `apiStrict`.
pub const API_STRICT_ERROR: i32 = 323;
/// `APIDeprecationError`: a deprecated command under `apiDeprecationErrors`.
pub const API_DEPRECATION_ERROR: i32 = 324;
/// `TransactionTooLarge`: a transaction writes too much.
pub const TRANSACTION_TOO_LARGE: i32 = 334;
/// `LoadBalancerSupportMismatch`: load-balanced and non-load-balanced use mixed.
pub const LOAD_BALANCER_SUPPORT_MISMATCH: i32 = 354;
/// `IngressRequestRateLimitExceeded`: the ingress admission rate limit was hit.
pub const INGRESS_REQUEST_RATE_LIMIT_EXCEEDED: i32 = 462;
/// `SocketException`: a socket error.
pub const SOCKET_EXCEPTION: i32 = 9001;
/// `Location10065`: an expression argument that must be an object.
pub const EXPECTED_AN_OBJECT: i32 = 10065;
/// `NotWritablePrimary`: a write to a member that is not the primary.
pub const NOT_WRITABLE_PRIMARY: i32 = 10107;
/// `BSONObjectTooLarge`: a document or value past 16 MiB + 16 KiB.
pub const BSON_OBJECT_TOO_LARGE: i32 = 10334;
/// `DuplicateKey`: a unique index already holds the key.
pub const DUPLICATE_KEY: i32 = 11000;
/// `InterruptedAtShutdown`: interrupted because the server shuts down.
pub const INTERRUPTED_AT_SHUTDOWN: i32 = 11600;
/// `Interrupted`: the operation was killed.
pub const INTERRUPTED: i32 = 11601;
/// `InterruptedDueToReplStateChange`: interrupted by a stepdown or step-up.
pub const INTERRUPTED_DUE_TO_REPL_STATE_CHANGE: i32 = 11602;
/// `StaleConfig`: a shard's routing information is stale.
pub const STALE_CONFIG: i32 = 13388;
/// `NotPrimaryNoSecondaryOk`: a read from a secondary without secondaryOk.
pub const NOT_PRIMARY_NO_SECONDARY_OK: i32 = 13435;
/// `NotPrimaryOrSecondary`: a member neither primary nor secondary.
pub const NOT_PRIMARY_OR_SECONDARY: i32 = 13436;
/// `SearchNotEnabled`: Atlas Search is not enabled.
pub const SEARCH_NOT_ENABLED: i32 = 31082;

/// `ProtocolError`: a message or conversation step out of protocol.
pub const PROTOCOL_ERROR: i32 = 17;
/// `StaleShardVersion`: a router's routing table is out of date.
pub const STALE_SHARD_VERSION: i32 = 63;
/// `MechanismUnavailable`: the authentication mechanism is not enabled (the value
/// [`TRANSACTION_TOO_LARGE`] also has; the auth layer names it itself).
pub const MECHANISM_UNAVAILABLE: i32 = 334;
/// `UnsupportedOpQueryCommand`: a command other than hello sent as OP_QUERY.
pub const UNSUPPORTED_OP_QUERY_COMMAND: i32 = 352;
/// `ReauthenticationRequired`: the connection's OIDC token has expired.
pub const REAUTHENTICATION_REQUIRED: i32 = 391;

// Numbered assertions, reported as `Location<code>`.
/// `Location359`: `collMod` cannot make an index unique over duplicates (mongod's name for it,
/// CannotConvertIndexToUnique, was never in blackpipe's table, so its replies keep `Location359`).
pub const CANNOT_CONVERT_INDEX_TO_UNIQUE: i32 = 359;
/// `Location15947`: a `$group` specification that is not a document.
pub const GROUP_SPEC_NOT_OBJECT: i32 = 15947;
/// `Location15952`: no such `$group` accumulator.
pub const UNKNOWN_GROUP_OPERATOR: i32 = 15952;
/// `Location15955`: a `$group` without `_id`.
pub const GROUP_WITHOUT_ID: i32 = 15955;
/// `Location15957`: a `$limit` that is not a number.
pub const LIMIT_NOT_NUMBER: i32 = 15957;
/// `Location15958`: a `$limit` that is not positive.
pub const LIMIT_NOT_POSITIVE: i32 = 15958;
/// `Location15959`: a `$match` that is not a document.
pub const MATCH_NOT_OBJECT: i32 = 15959;
/// `Location15969`: a `$project` that is not a document.
pub const PROJECT_NOT_OBJECT: i32 = 15969;
/// `Location15972`: a `$skip` that is not a number.
pub const SKIP_NOT_NUMBER: i32 = 15972;
/// `Location15973`: a `$sort` that is not a document.
pub const SORT_NOT_OBJECT: i32 = 15973;
/// `Location15975`: a sort direction other than 1 or -1.
pub const SORT_BAD_DIRECTION: i32 = 15975;
/// `Location15976`: a `$sort` without keys.
pub const SORT_WITHOUT_KEYS: i32 = 15976;
/// `Location15981`: an `$unwind` neither a string nor a document.
pub const UNWIND_BAD_SPEC: i32 = 15981;
/// `Location15983`: an operator expression with more or fewer than one field.
pub const EXPRESSION_NOT_ONE_FIELD: i32 = 15983;
/// `Location16020`: an expression with the wrong number of arguments.
pub const EXPRESSION_ARITY: i32 = 16020;
/// `Location16410`: a `$`-prefixed field name in an expression object.
pub const FIELD_PATH_DOLLAR_PREFIXED: i32 = 16410;
/// `Location16554`: an `$add` of something neither a number nor a date.
pub const ADD_NOT_NUMBER_OR_DATE: i32 = 16554;
/// `Location16555`: a `$multiply` of a non-number.
pub const MULTIPLY_NOT_NUMBER: i32 = 16555;
/// `Location16556`: a `$subtract` of types that do not subtract.
pub const SUBTRACT_TYPES: i32 = 16556;
/// `Location16609`: a `$divide` or `$mod` of non-numbers.
pub const DIVIDE_NOT_NUMBER: i32 = 16609;
/// `Location16612`: an `$add` of two dates.
pub const ADD_TWO_DATES: i32 = 16612;
/// `Location16702`: a `$concat` of a non-string.
pub const CONCAT_NOT_STRING: i32 = 16702;
/// `Location16870`: a user variable name that starts with an invalid character (mongod before
/// 5.0; 8.0 answers FailedToParse).
pub const INVALID_VARIABLE_NAME: i32 = 16870;
/// `Location16872`: `$` alone as a field path.
pub const DOLLAR_ALONE_FIELD_PATH: i32 = 16872;
/// `Location17080`: a `$cond` without `if`.
pub const COND_MISSING_PARAMETER: i32 = 17080;
/// `Location17083`: a `$cond` with an unknown parameter.
pub const COND_UNKNOWN_PARAMETER: i32 = 17083;
/// `Location17124`: a `$size` of a non-array.
pub const SIZE_NOT_ARRAY: i32 = 17124;
/// `Location17276`: a variable that is not defined.
pub const UNDEFINED_VARIABLE: i32 = 17276;
/// `Location28667`: a projection `$slice` neither a number nor two numbers.
pub const SLICE_BAD_ARGUMENT: i32 = 28667;
/// `Location28689`: an `$arrayElemAt` of a non-array.
pub const ARRAY_ELEM_AT_NOT_ARRAY: i32 = 28689;
/// `Location28690`: an `$arrayElemAt` index that is not a number.
pub const ARRAY_ELEM_AT_INDEX_NOT_NUMBER: i32 = 28690;
/// `Location28724`: a projection `$slice` count that is not positive.
pub const SLICE_LIMIT_NOT_POSITIVE: i32 = 28724;
/// `Location28765`: an `$abs` of a non-number.
pub const ABS_NOT_NUMBER: i32 = 28765;
/// `Location28809`: an `$unwind` `preserveNullAndEmptyArrays` that is not a boolean.
pub const UNWIND_BAD_PRESERVE_NULL: i32 = 28809;
/// `Location28810`: an `$unwind` `includeArrayIndex` that is not a plain field name.
pub const UNWIND_BAD_INDEX_FIELD: i32 = 28810;
/// `Location28812`: an `$unwind` without a path.
pub const UNWIND_WITHOUT_PATH: i32 = 28812;
/// `Location28818`: an `$unwind` path without its `$`.
pub const UNWIND_PATH_WITHOUT_DOLLAR: i32 = 28818;
/// `Location31002`: an `$unset` that is not a string or an array of strings.
pub const UNSET_NOT_STRINGS: i32 = 31002;
/// `Location31208`: a `$`-prefixed projection field name.
pub const PROJECTION_FIELD_DOLLAR_PREFIXED: i32 = 31208;
/// `Location31252`: an expression in an exclusion projection.
pub const EXPRESSION_IN_EXCLUSION: i32 = 31252;
/// `Location31253`: an inclusion in an exclusion projection.
pub const INCLUSION_IN_EXCLUSION: i32 = 31253;
/// `Location31254`: an exclusion in an inclusion projection.
pub const EXCLUSION_IN_INCLUSION: i32 = 31254;
/// `Location40081`: an `$in` expression whose second argument is not an array.
pub const IN_NOT_ARRAY: i32 = 40081;
/// `Location40156`: a `$count` field that is not a string.
pub const COUNT_FIELD_NOT_STRING: i32 = 40156;
/// `Location40157`: an empty `$count` field.
pub const COUNT_FIELD_EMPTY: i32 = 40157;
/// `Location40158`: a `$`-prefixed `$count` field.
pub const COUNT_FIELD_DOLLAR_PREFIXED: i32 = 40158;
/// `Location40160`: a `$count` field with a dot.
pub const COUNT_FIELD_WITH_DOT: i32 = 40160;
/// `Location40228`: a `$replaceRoot`/`$replaceWith` result that is not a document.
pub const REPLACEMENT_NOT_OBJECT: i32 = 40228;
/// `Location40229`: a `$replaceRoot` specification that is not a document.
pub const REPLACE_ROOT_NOT_OBJECT: i32 = 40229;
/// `Location40231`: a `$replaceRoot` without `newRoot`.
pub const REPLACE_ROOT_WITHOUT_NEW_ROOT: i32 = 40231;
/// `Location40234`: a `$group` field that is not an accumulator document.
pub const GROUP_FIELD_NOT_ACCUMULATOR: i32 = 40234;
/// `Location40235`: a `$group` field name with a dot.
pub const GROUP_FIELD_WITH_DOT: i32 = 40235;
/// `Location40238`: a `$group` field with more or fewer than one accumulator.
pub const GROUP_FIELD_ACCUMULATOR_COUNT: i32 = 40238;
/// `Location40272`: an `$addFields`/`$set` that is not a document.
pub const ADD_FIELDS_NOT_OBJECT: i32 = 40272;
/// `Location40323`: a pipeline stage with more or fewer than one field.
pub const STAGE_NOT_ONE_FIELD: i32 = 40323;
/// `Location40324`: no such pipeline stage.
pub const UNRECOGNIZED_STAGE: i32 = 40324;
/// `Location40352`: an empty field path.
pub const EMPTY_FIELD_PATH: i32 = 40352;
/// `Location40414`: a required command field is missing.
pub const IDL_MISSING_FIELD: i32 = 40414;
/// `Location40415`: an unknown command field.
pub const IDL_UNKNOWN_FIELD: i32 = 40415;
/// `Location40601`: `$out` or `$merge` before the last stage.
pub const WRITE_STAGE_NOT_LAST: i32 = 40601;
/// `Location40602`: `$changeStream` anywhere but first.
pub const CHANGE_STREAM_NOT_FIRST_STAGE: i32 = 40602;
/// `Location40602`: any stage that must come first (`$collStats`) anywhere but first.
pub const FIRST_STAGE_ONLY: i32 = CHANGE_STREAM_NOT_FIRST_STAGE;
/// `Location40606`: a findAndModify retry of a statement that was another write.
pub const FIND_AND_MODIFY_RETRY_MISMATCH: i32 = 40606;
/// `Location40638`: an update retry of a statement that was another write.
pub const UPDATE_RETRY_MISMATCH: i32 = 40638;
/// `Location40674`: more than one of `resumeAfter`, `startAfter`, `startAtOperationTime`.
pub const MULTIPLE_RESUME_OPTIONS: i32 = 40674;
/// `Location51024`: a value that must not be negative.
pub const NON_NEGATIVE: i32 = 51024;
/// `Location51132`: a `$merge` document without its `on` field `_id`.
pub const MERGE_ON_FIELD_MISSING: i32 = 51132;
/// `Location51270`: an empty sub-projection.
pub const EMPTY_SUB_PROJECTION: i32 = 51270;
/// `Location51272`: a projection without fields.
pub const EMPTY_PROJECTION: i32 = 51272;
/// `Location1257300`: an `$ifNull` with fewer than two arguments.
pub const IF_NULL_TOO_FEW_ARGUMENTS: i32 = 1257300;
/// `Location3040501`: a `$rand` given arguments.
pub const RAND_TAKES_NO_ARGUMENTS: i32 = 3040501;
/// `Location4161100`: a `$getField`/`$setField` argument that is not a document.
pub const FIELD_OPERATOR_NOT_OBJECT: i32 = 4161100;
/// `Location4161101`: a `$getField`/`$setField` with an unknown argument.
pub const FIELD_OPERATOR_UNKNOWN_ARGUMENT: i32 = 4161101;
/// `Location4161102`: a `$getField`/`$setField` without `field`.
pub const FIELD_OPERATOR_WITHOUT_FIELD: i32 = 4161102;
/// `Location4161103`: a `$setField` without `input`.
pub const FIELD_OPERATOR_WITHOUT_INPUT: i32 = 4161103;
/// `Location4161104`: a `$setField` without `value`.
pub const SET_FIELD_WITHOUT_VALUE: i32 = 4161104;
/// `Location4161105`: a `$setField` `input` that is not a document.
pub const SET_FIELD_INPUT_NOT_OBJECT: i32 = 4161105;
/// `Location4161106`: a `$getField`/`$setField` `field` that is not a constant string.
pub const FIELD_OPERATOR_FIELD_NOT_STRING: i32 = 4161106;
/// `Location4544702`: a `$count` accumulator with arguments.
pub const COUNT_ACCUMULATOR_ARGUMENT: i32 = 4544702;
/// `Location5107200`: a negative `$skip`.
pub const SKIP_NEGATIVE: i32 = 5107200;
/// `Location5858203`: a `$documents` that is not an array.
pub const DOCUMENTS_NOT_AN_ARRAY: i32 = 5858203;

/// `Location31368`: a hello with `maxAwaitTimeMS` but no `topologyVersion`.
pub const MAX_AWAIT_WITHOUT_TOPOLOGY_VERSION: i32 = 31368;
/// `Location31373`: a hello's `maxAwaitTimeMS` that is not a non-negative integer.
pub const NEGATIVE_MAX_AWAIT: i32 = 31373;
/// `Location31382`: a hello's `topologyVersion` with a counter ahead of the server's.
pub const FUTURE_TOPOLOGY_VERSION: i32 = 31382;
/// `Location40414`: a hello's malformed `topologyVersion`.
pub const MALFORMED_TOPOLOGY_VERSION: i32 = 40414;
/// `Location40571`: an OP_MSG without `$db`.
pub const MISSING_DATABASE: i32 = 40571;
/// `Location40573`: a `$changeStream` stage on a standalone.
pub const CHANGE_STREAM_ON_STANDALONE: i32 = 40573;
/// `Location51760`: a hello with `topologyVersion` but no `maxAwaitTimeMS`.
pub const TOPOLOGY_VERSION_WITHOUT_MAX_AWAIT: i32 = 51760;
/// `Location4886600`: `apiStrict` or `apiDeprecationErrors` without `apiVersion`.
pub const API_PARAMETERS_WITHOUT_VERSION: i32 = 4886600;

// Regular expressions, positional operators and projections (reported as `Location<code>`).
/// `Location31022`: a `$regexMatch`/`$regexFind`/`$regexFindAll` without `input`.
pub const REGEX_EXPR_WITHOUT_INPUT: i32 = 31022;
/// `Location31023`: a `$regex*` expression without `regex`.
pub const REGEX_EXPR_WITHOUT_REGEX: i32 = 31023;
/// `Location31024`: a `$regex*` expression with an unknown argument.
pub const REGEX_EXPR_UNKNOWN_ARGUMENT: i32 = 31024;
/// `Location31255`: an `$elemMatch` projection after a positional one.
pub const ELEM_MATCH_AFTER_POSITIONAL: i32 = 31255;
/// `Location31256`: a positional projection after an `$elemMatch` one.
pub const POSITIONAL_AFTER_ELEM_MATCH: i32 = 31256;
/// `Location31271`: a positional projection whose value is an expression or sub-object.
pub const POSITIONAL_PROJECTION_WITH_OBJECT: i32 = 31271;
/// `Location31274`: an `$elemMatch` projection whose argument is not a document.
pub const ELEM_MATCH_PROJECTION_NOT_OBJECT: i32 = 31274;
/// `Location31275`: an `$elemMatch` projection on a nested field.
pub const ELEM_MATCH_PROJECTION_NESTED: i32 = 31275;
/// `Location31276`: more than one positional projection.
pub const POSITIONAL_PROJECTION_TWICE: i32 = 31276;
/// `Location31277`: a positional projection whose array the query does not name.
pub const POSITIONAL_PROJECTION_NOT_IN_QUERY: i32 = 31277;
/// `Location31287`: a projection path with two positional operators.
pub const POSITIONAL_PROJECTION_TWICE_IN_PATH: i32 = 31287;
/// `Location31308`: a positional projection whose value is a literal.
pub const POSITIONAL_PROJECTION_WITH_LITERAL: i32 = 31308;
/// `Location31324`: a positional projection in an aggregation stage.
pub const POSITIONAL_PROJECTION_IN_STAGE: i32 = 31324;
/// `Location51091`: a regular expression that does not compile.
pub const REGEX_INVALID: i32 = 51091;
/// `Location51103`: a `$regex*` expression whose argument is not a document.
pub const REGEX_EXPR_NOT_OBJECT: i32 = 51103;
/// `Location51104`: a `$regex*` expression whose `input` is not a string.
pub const REGEX_EXPR_INPUT_NOT_STRING: i32 = 51104;
/// `Location51105`: a `$regex*` expression whose `regex` is not a string or a regex.
pub const REGEX_EXPR_REGEX_NOT_STRING: i32 = 51105;
/// `Location51106`: a `$regex*` expression whose `options` is not a string.
pub const REGEX_EXPR_OPTIONS_NOT_STRING: i32 = 51106;
/// `Location51107`: options given both in a BSON regex and in `options`.
pub const REGEX_EXPR_OPTIONS_TWICE: i32 = 51107;
/// `Location51108`: an option letter that is not `i`, `m`, `s`, `x` or `u`.
pub const REGEX_INVALID_FLAG: i32 = 51108;
/// `Location51109`: a `$regex*` expression's pattern with a NUL byte.
pub const REGEX_EXPR_NULL_IN_PATTERN: i32 = 51109;
/// `Location51110`: a `$regex*` expression's options with a NUL byte.
pub const REGEX_EXPR_NULL_IN_OPTIONS: i32 = 51110;
/// `Location51111`: a `$regex*` expression's pattern that does not compile.
pub const REGEX_EXPR_INVALID: i32 = 51111;
/// `Location51246`: a positional projection for a document the query matched without an array
/// position.
pub const POSITIONAL_PROJECTION_NO_MATCH: i32 = 51246;
/// `Location51247`: a positional projection whose matched position is past its array.
pub const POSITIONAL_PROJECTION_MISMATCH: i32 = 51247;

// Variables, array, set, object and conditional expressions (agg-vars), reported as
// `Location<code>`.
/// `Location16874`: a `$let` whose argument is not a document.
pub const LET_NOT_OBJECT: i32 = 16874;
/// `Location16875`: a `$let` with an unknown parameter.
pub const LET_UNKNOWN_PARAMETER: i32 = 16875;
/// `Location16876`: a `$let` without `vars`.
pub const LET_WITHOUT_VARS: i32 = 16876;
/// `Location16877`: a `$let` without `in`.
pub const LET_WITHOUT_IN: i32 = 16877;
/// `Location16878`: a `$map` whose argument is not a document.
pub const MAP_NOT_OBJECT: i32 = 16878;
/// `Location16879`: a `$map` with an unknown parameter.
pub const MAP_UNKNOWN_PARAMETER: i32 = 16879;
/// `Location16880`: a `$map` without `input`.
pub const MAP_WITHOUT_INPUT: i32 = 16880;
/// `Location16882`: a `$map` without `in`.
pub const MAP_WITHOUT_IN: i32 = 16882;
/// `Location16883`: a `$map` input that is not an array.
pub const MAP_INPUT_NOT_ARRAY: i32 = 16883;
/// `Location28646`: a `$filter` whose argument is not a document.
pub const FILTER_NOT_OBJECT: i32 = 28646;
/// `Location28647`: a `$filter` with an unknown parameter.
pub const FILTER_UNKNOWN_PARAMETER: i32 = 28647;
/// `Location28648`: a `$filter` without `input`.
pub const FILTER_WITHOUT_INPUT: i32 = 28648;
/// `Location28650`: a `$filter` without `cond`.
pub const FILTER_WITHOUT_COND: i32 = 28650;
/// `Location28651`: a `$filter` input that is not an array.
pub const FILTER_INPUT_NOT_ARRAY: i32 = 28651;
/// `Location327391`: a `$filter` `limit` that is not a 32-bit integer.
pub const FILTER_LIMIT_NOT_INT32: i32 = 327_391;
/// `Location327392`: a `$filter` `limit` that is not positive.
pub const FILTER_LIMIT_NOT_POSITIVE: i32 = 327_392;
/// `Location40075`: a `$reduce` whose argument is not a document.
pub const REDUCE_NOT_OBJECT: i32 = 40075;
/// `Location40076`: a `$reduce` with an unknown argument.
pub const REDUCE_UNKNOWN_ARGUMENT: i32 = 40076;
/// `Location40077`: a `$reduce` without `input`.
pub const REDUCE_WITHOUT_INPUT: i32 = 40077;
/// `Location40078`: a `$reduce` without `initialValue`.
pub const REDUCE_WITHOUT_INITIAL_VALUE: i32 = 40078;
/// `Location40079`: a `$reduce` without `in`.
pub const REDUCE_WITHOUT_IN: i32 = 40079;
/// `Location40080`: a `$reduce` input that is not an array.
pub const REDUCE_INPUT_NOT_ARRAY: i32 = 40080;
/// `Location28664`: a `$concatArrays` of a non-array.
pub const CONCAT_ARRAYS_NOT_ARRAY: i32 = 28664;
/// `Location28667`: an expression given fewer or more arguments than its range allows.
pub const EXPRESSION_ARITY_RANGE: i32 = 28667;
/// `Location28724`: a `$slice` expression whose first argument is not an array.
pub const SLICE_NOT_ARRAY: i32 = 28724;
/// `Location28725`: a `$slice` expression whose second argument is not a number.
pub const SLICE_SECOND_NOT_NUMBER: i32 = 28725;
/// `Location28726`: a `$slice` expression whose second argument is not a 32-bit integer.
pub const SLICE_SECOND_NOT_INT32: i32 = 28726;
/// `Location28727`: a `$slice` expression whose third argument is not a number.
pub const SLICE_THIRD_NOT_NUMBER: i32 = 28727;
/// `Location28728`: a `$slice` expression whose third argument is not a 32-bit integer.
pub const SLICE_THIRD_NOT_INT32: i32 = 28728;
/// `Location28729`: a `$slice` expression whose third argument is not positive.
pub const SLICE_THIRD_NOT_POSITIVE: i32 = 28729;
/// `Location34435`: a `$reverseArray` of a non-array.
pub const REVERSE_ARRAY_NOT_ARRAY: i32 = 34435;
/// `Location34443`: a `$range` start that is not a number.
pub const RANGE_START_NOT_NUMBER: i32 = 34443;
/// `Location34444`: a `$range` start that is not a 32-bit integer.
pub const RANGE_START_NOT_INT32: i32 = 34444;
/// `Location34445`: a `$range` end that is not a number.
pub const RANGE_END_NOT_NUMBER: i32 = 34445;
/// `Location34446`: a `$range` end that is not a 32-bit integer.
pub const RANGE_END_NOT_INT32: i32 = 34446;
/// `Location34447`: a `$range` step that is not a number.
pub const RANGE_STEP_NOT_NUMBER: i32 = 34447;
/// `Location34448`: a `$range` step that is not a 32-bit integer.
pub const RANGE_STEP_NOT_INT32: i32 = 34448;
/// `Location34449`: a `$range` step of zero.
pub const RANGE_STEP_ZERO: i32 = 34449;
/// `Location34460`: a `$zip` whose argument is not a document.
pub const ZIP_NOT_OBJECT: i32 = 34460;
/// `Location34461`: `$zip` `inputs` that is not an array.
pub const ZIP_INPUTS_NOT_ARRAY: i32 = 34461;
/// `Location34462`: `$zip` `defaults` that is not an array.
pub const ZIP_DEFAULTS_NOT_ARRAY: i32 = 34462;
/// `Location34463`: a `$zip` `useLongestLength` that is not a boolean.
pub const ZIP_LONGEST_NOT_BOOL: i32 = 34463;
/// `Location34464`: a `$zip` with an unknown argument.
pub const ZIP_UNKNOWN_ARGUMENT: i32 = 34464;
/// `Location34465`: a `$zip` without input arrays.
pub const ZIP_WITHOUT_INPUTS: i32 = 34465;
/// `Location34466`: `$zip` `defaults` without `useLongestLength: true`.
pub const ZIP_DEFAULTS_WITHOUT_LONGEST: i32 = 34466;
/// `Location34467`: `$zip` `defaults` and `inputs` of different lengths.
pub const ZIP_DEFAULTS_LENGTH: i32 = 34467;
/// `Location34468`: a `$zip` input that is not an array.
pub const ZIP_INPUT_NOT_ARRAY: i32 = 34468;
/// `Location40090`: an `$indexOfArray` of a non-array.
pub const INDEX_OF_ARRAY_NOT_ARRAY: i32 = 40090;
/// `Location40096`: an `$indexOfArray` start or end index that is not an integer.
pub const INDEX_OF_ARRAY_INDEX_NOT_INTEGRAL: i32 = 40096;
/// `Location40097`: a negative `$indexOfArray` start or end index.
pub const INDEX_OF_ARRAY_INDEX_NEGATIVE: i32 = 40097;
/// `Location5787801`: a `$firstN`/`$lastN` whose argument is not a document.
pub const FIRST_LAST_N_NOT_OBJECT: i32 = 5_787_801;
/// `Location5787900`: a `$minN`/`$maxN` whose argument is not a document.
pub const MIN_MAX_N_NOT_OBJECT: i32 = 5_787_900;
/// `Location5787901`: an `n` operator with an unknown argument.
pub const N_OPERATOR_UNKNOWN_ARGUMENT: i32 = 5_787_901;
/// `Location5787902`: an `n` that is not a number.
pub const N_NOT_NUMBER: i32 = 5_787_902;
/// `Location5787903`: an `n` that is not an integer.
pub const N_NOT_INTEGRAL: i32 = 5_787_903;
/// `Location5787906`: an `n` operator without `n`.
pub const N_OPERATOR_WITHOUT_N: i32 = 5_787_906;
/// `Location5787907`: an `n` operator without `input`.
pub const N_OPERATOR_WITHOUT_INPUT: i32 = 5_787_907;
/// `Location5787908`: an `n` that is not positive.
pub const N_NOT_POSITIVE: i32 = 5_787_908;
/// `Location5788200`: an `n` operator's input that is not an array.
pub const N_OPERATOR_INPUT_NOT_ARRAY: i32 = 5_788_200;
/// `Location2942500`: a `$sortArray` whose argument is not a document.
pub const SORT_ARRAY_NOT_OBJECT: i32 = 2_942_500;
/// `Location2942501`: a `$sortArray` with an unknown argument.
pub const SORT_ARRAY_UNKNOWN_ARGUMENT: i32 = 2_942_501;
/// `Location2942502`: a `$sortArray` without `input`.
pub const SORT_ARRAY_WITHOUT_INPUT: i32 = 2_942_502;
/// `Location2942503`: a `$sortArray` without `sortBy`.
pub const SORT_ARRAY_WITHOUT_SORT_BY: i32 = 2_942_503;
/// `Location2942504`: a `$sortArray` input that is not an array.
pub const SORT_ARRAY_INPUT_NOT_ARRAY: i32 = 2_942_504;
/// `Location2942506`: a `$sortArray` `sortBy` neither 1, -1 nor a sort pattern.
pub const SORT_ARRAY_BAD_SORT_BY: i32 = 2_942_506;
/// `Location40386`: an `$arrayToObject` of a non-array.
pub const ARRAY_TO_OBJECT_NOT_ARRAY: i32 = 40386;
/// `Location40391`: an `$arrayToObject` element that is not a document after a document.
pub const ARRAY_TO_OBJECT_EXPECTED_OBJECT: i32 = 40391;
/// `Location40392`: an `$arrayToObject` `{k, v}` document with other than two fields.
pub const ARRAY_TO_OBJECT_FIELD_COUNT: i32 = 40392;
/// `Location40393`: an `$arrayToObject` document without `k` or `v`.
pub const ARRAY_TO_OBJECT_WITHOUT_K_OR_V: i32 = 40393;
/// `Location40394`: an `$arrayToObject` `k` that is not a string.
pub const ARRAY_TO_OBJECT_K_NOT_STRING: i32 = 40394;
/// `Location40395`: an `$arrayToObject` pair whose key is not a string.
pub const ARRAY_TO_OBJECT_KEY_NOT_STRING: i32 = 40395;
/// `Location40396`: an `$arrayToObject` element that is not an array after an array.
pub const ARRAY_TO_OBJECT_EXPECTED_ARRAY: i32 = 40396;
/// `Location40397`: an `$arrayToObject` pair that is not of size 2.
pub const ARRAY_TO_OBJECT_PAIR_SIZE: i32 = 40397;
/// `Location40398`: an `$arrayToObject` element neither an array nor a document.
pub const ARRAY_TO_OBJECT_BAD_FORMAT: i32 = 40398;
/// `Location4940400`: an `$arrayToObject` pair key with a NUL byte.
pub const ARRAY_TO_OBJECT_KEY_NUL: i32 = 4_940_400;
/// `Location4940401`: an `$arrayToObject` `k` with a NUL byte.
pub const ARRAY_TO_OBJECT_K_NUL: i32 = 4_940_401;
/// `Location40390`: an `$objectToArray` of a non-document.
pub const OBJECT_TO_ARRAY_NOT_OBJECT: i32 = 40390;
/// `Location17040`: an `$allElementsTrue` of a non-array.
pub const ALL_ELEMENTS_TRUE_NOT_ARRAY: i32 = 17040;
/// `Location17041`: an `$anyElementTrue` of a non-array.
pub const ANY_ELEMENT_TRUE_NOT_ARRAY: i32 = 17041;
/// `Location17042`: a `$setIsSubset` whose second argument is not an array.
pub const SET_IS_SUBSET_SECOND_NOT_ARRAY: i32 = 17042;
/// `Location17043`: a `$setUnion` of a non-array.
pub const SET_UNION_NOT_ARRAY: i32 = 17043;
/// `Location17044`: a `$setEquals` of a non-array.
pub const SET_EQUALS_NOT_ARRAY: i32 = 17044;
/// `Location17045`: a `$setEquals` with fewer than two arguments.
pub const SET_EQUALS_TOO_FEW_ARGUMENTS: i32 = 17045;
/// `Location17046`: a `$setIsSubset` whose first argument is not an array.
pub const SET_IS_SUBSET_FIRST_NOT_ARRAY: i32 = 17046;
/// `Location17047`: a `$setIntersection` of a non-array.
pub const SET_INTERSECTION_NOT_ARRAY: i32 = 17047;
/// `Location17048`: a `$setDifference` whose first argument is not an array.
pub const SET_DIFFERENCE_FIRST_NOT_ARRAY: i32 = 17048;
/// `Location17049`: a `$setDifference` whose second argument is not an array.
pub const SET_DIFFERENCE_SECOND_NOT_ARRAY: i32 = 17049;
/// `Location40400`: a `$mergeObjects` of a non-document.
pub const MERGE_OBJECTS_NOT_OBJECT: i32 = 40400;
/// `Location40060`: a `$switch` whose argument is not a document.
pub const SWITCH_NOT_OBJECT: i32 = 40060;
/// `Location40061`: `$switch` `branches` that is not an array.
pub const SWITCH_BRANCHES_NOT_ARRAY: i32 = 40061;
/// `Location40062`: a `$switch` branch that is not a document.
pub const SWITCH_BRANCH_NOT_OBJECT: i32 = 40062;
/// `Location40063`: a `$switch` branch with an unknown argument.
pub const SWITCH_BRANCH_UNKNOWN_ARGUMENT: i32 = 40063;
/// `Location40064`: a `$switch` branch without `case`.
pub const SWITCH_BRANCH_WITHOUT_CASE: i32 = 40064;
/// `Location40065`: a `$switch` branch without `then`.
pub const SWITCH_BRANCH_WITHOUT_THEN: i32 = 40065;
/// `Location40066`: a `$switch` where no branch matched and there is no default.
pub const SWITCH_NO_MATCH: i32 = 40066;
/// `Location40067`: a `$switch` with an unknown argument.
pub const SWITCH_UNKNOWN_ARGUMENT: i32 = 40067;
/// `Location40068`: a `$switch` without branches.
pub const SWITCH_WITHOUT_BRANCHES: i32 = 40068;
/// `Location4738901`: a command's `let` setting a system variable.
pub const SET_INTERNAL_CONSTANT: i32 = 4_738_901;
/// `Location17081`: a `$cond` without `then`.
pub const COND_WITHOUT_THEN: i32 = 17081;
/// `Location17082`: a `$cond` without `else`.
pub const COND_WITHOUT_ELSE: i32 = 17082;

// Accumulators and window functions (accumulators): their own file.
mod accumulators;
pub use self::accumulators::*;
// Single-input aggregation stages and the system variables (stages-single): their own file.
mod stages_single;
pub use self::stages_single::*;
// Stages reading other collections and running sub-pipelines (stages-multi): their own file.
mod stages_multi;
pub use self::stages_multi::*;

/// The name mongod gives `code`, if it has one; `None` for the codes mongod reports as
/// `Location<code>`.
pub fn name(code: i32) -> Option<&'static str> {
    let name = match code {
        PROTOCOL_ERROR => "ProtocolError",
        STALE_SHARD_VERSION => "StaleShardVersion",
        UNSUPPORTED_OP_QUERY_COMMAND => "UnsupportedOpQueryCommand",
        REAUTHENTICATION_REQUIRED => "ReauthenticationRequired",
        INTERNAL_ERROR => "InternalError",
        BAD_VALUE => "BadValue",
        GRAPH_CONTAINS_CYCLE => "GraphContainsCycle",
        HOST_UNREACHABLE => "HostUnreachable",
        HOST_NOT_FOUND => "HostNotFound",
        UNKNOWN_ERROR => "UnknownError",
        FAILED_TO_PARSE => "FailedToParse",
        USER_NOT_FOUND => "UserNotFound",
        UNAUTHORIZED => "Unauthorized",
        TYPE_MISMATCH => "TypeMismatch",
        OVERFLOW => "Overflow",
        INVALID_LENGTH => "InvalidLength",
        AUTHENTICATION_FAILED => "AuthenticationFailed",
        ILLEGAL_OPERATION => "IllegalOperation",
        LOCK_TIMEOUT => "LockTimeout",
        NAMESPACE_NOT_FOUND => "NamespaceNotFound",
        INDEX_NOT_FOUND => "IndexNotFound",
        PATH_NOT_VIABLE => "PathNotViable",
        CANNOT_BACKFILL_ARRAY => "CannotBackfillArray",
        CONFLICTING_UPDATE_OPERATORS => "ConflictingUpdateOperators",
        CURSOR_NOT_FOUND => "CursorNotFound",
        NO_MATCHING_DOCUMENT => "NoMatchingDocument",
        NAMESPACE_EXISTS => "NamespaceExists",
        MAX_TIME_MS_EXPIRED => "MaxTimeMSExpired",
        DOLLAR_PREFIXED_FIELD_NAME => "DollarPrefixedFieldName",
        EMPTY_FIELD_NAME => "EmptyFieldName",
        COMMAND_NOT_FOUND => "CommandNotFound",
        WRITE_CONCERN_TIMEOUT => "WriteConcernTimeout",
        IMMUTABLE_FIELD => "ImmutableField",
        CANNOT_CREATE_INDEX => "CannotCreateIndex",
        INVALID_OPTIONS => "InvalidOptions",
        INVALID_NAMESPACE => "InvalidNamespace",
        NO_REPLICATION_ENABLED => "NoReplicationEnabled",
        UNKNOWN_REPL_WRITE_CONCERN => "UnknownReplWriteConcern",
        INDEX_OPTIONS_CONFLICT => "IndexOptionsConflict",
        INDEX_KEY_SPECS_CONFLICT => "IndexKeySpecsConflict",
        NETWORK_TIMEOUT => "NetworkTimeout",
        SHUTDOWN_IN_PROGRESS => "ShutdownInProgress",
        INVALID_REPLICA_SET_CONFIG => "InvalidReplicaSetConfig",
        NOT_SECONDARY => "NotSecondary",
        OPERATION_FAILED => "OperationFailed",
        UNSATISFIABLE_WRITE_CONCERN => "UnsatisfiableWriteConcern",
        NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE => "NewReplicaSetConfigurationIncompatible",
        WRITE_CONFLICT => "WriteConflict",
        COMMAND_NOT_SUPPORTED => "CommandNotSupported",
        CONFLICTING_OPERATION_IN_PROGRESS => "ConflictingOperationInProgress",
        NOT_A_REPLICA_SET => "NotAReplicaSet",
        COMMAND_FAILED => "CommandFailed",
        FAILED_TO_SATISFY_READ_PREFERENCE => "FailedToSatisfyReadPreference",
        READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET => "ReadConcernMajorityNotAvailableYet",
        CAPPED_POSITION_LOST => "CappedPositionLost",
        EXCEEDED_MEMORY_LIMIT => "ExceededMemoryLimit",
        STALE_EPOCH => "StaleEpoch",
        DOCUMENT_VALIDATION_FAILURE => "DocumentValidationFailure",
        INVALID_VIEW_DEFINITION => "InvalidViewDefinition",
        VIEW_DEPTH_LIMIT_EXCEEDED => "ViewDepthLimitExceeded",
        COMMAND_NOT_SUPPORTED_ON_VIEW => "CommandNotSupportedOnView",
        OPTION_NOT_SUPPORTED_ON_VIEW => "OptionNotSupportedOnView",
        INVALID_PIPELINE_OPERATOR => "InvalidPipelineOperator",
        QUERY_PLAN_KILLED => "QueryPlanKilled",
        PRIMARY_STEPPED_DOWN => "PrimarySteppedDown",
        INCOMPLETE_TRANSACTION_HISTORY => "IncompleteTransactionHistory",
        TRANSACTION_TOO_OLD => "TransactionTooOld",
        RETRY_CHANGE_STREAM => "RetryChangeStream",
        SNAPSHOT_TOO_OLD => "SnapshotTooOld",
        CONVERSION_FAILURE => "ConversionFailure",
        STALE_CHUNK_HISTORY => "StaleChunkHistory",
        SNAPSHOT_UNAVAILABLE => "SnapshotUnavailable",
        NO_SUCH_TRANSACTION => "NoSuchTransaction",
        TRANSACTION_COMMITTED => "TransactionCommitted",
        INVALID_RESUME_TOKEN => "InvalidResumeToken",
        TOO_MANY_LOGICAL_SESSIONS => "TooManyLogicalSessions",
        EXCEEDED_TIME_LIMIT => "ExceededTimeLimit",
        OPERATION_NOT_SUPPORTED_IN_TRANSACTION => "OperationNotSupportedInTransaction",
        PREPARED_TRANSACTION_IN_PROGRESS => "PreparedTransactionInProgress",
        CHANGE_STREAM_FATAL_ERROR => "ChangeStreamFatalError",
        CHANGE_STREAM_HISTORY_LOST => "ChangeStreamHistoryLost",
        API_VERSION_ERROR => "APIVersionError",
        API_STRICT_ERROR => "APIStrictError",
        API_DEPRECATION_ERROR => "APIDeprecationError",
        TRANSACTION_TOO_LARGE => "TransactionTooLarge",
        LOAD_BALANCER_SUPPORT_MISMATCH => "LoadBalancerSupportMismatch",
        INGRESS_REQUEST_RATE_LIMIT_EXCEEDED => "IngressRequestRateLimitExceeded",
        SOCKET_EXCEPTION => "SocketException",
        NOT_WRITABLE_PRIMARY => "NotWritablePrimary",
        BSON_OBJECT_TOO_LARGE => "BSONObjectTooLarge",
        DUPLICATE_KEY => "DuplicateKey",
        INTERRUPTED_AT_SHUTDOWN => "InterruptedAtShutdown",
        INTERRUPTED => "Interrupted",
        INTERRUPTED_DUE_TO_REPL_STATE_CHANGE => "InterruptedDueToReplStateChange",
        STALE_CONFIG => "StaleConfig",
        NOT_PRIMARY_NO_SECONDARY_OK => "NotPrimaryNoSecondaryOk",
        NOT_PRIMARY_OR_SECONDARY => "NotPrimaryOrSecondary",
        SEARCH_NOT_ENABLED => "SearchNotEnabled",
        // Accumulators and window functions (accumulators).
        QUERY_EXCEEDED_MEMORY_LIMIT_NO_DISK_USE_ALLOWED => {
            "QueryExceededMemoryLimitNoDiskUseAllowed"
        }
        // Stages reading other collections and running sub-pipelines (stages-multi).
        MAX_SUB_PIPELINE_DEPTH_EXCEEDED => "MaxSubPipelineDepthExceeded",
        _ => return None,
    };
    Some(name)
}
