//! The one table of server error codes the driver reads: SDAM's state-change and shutdown
//! families, the retryable code list of retryable reads and pre-4.4 retryable writes, overload,
//! and the codes that mean a time limit ran out. SDAM error handling, retry classification and
//! the public error predicates all ask this module.

/// HostUnreachable.
pub const HOST_UNREACHABLE: i32 = 6;
/// HostNotFound.
pub const HOST_NOT_FOUND: i32 = 7;
/// IllegalOperation: among others, a server without retryable-write support got a `txnNumber`.
pub const ILLEGAL_OPERATION: i32 = 20;
/// MaxTimeMSExpired: the command ran out of its `maxTimeMS`.
pub const MAX_TIME_MS_EXPIRED: i32 = 50;
/// NetworkTimeout.
pub const NETWORK_TIMEOUT: i32 = 89;
/// ShutdownInProgress.
pub const SHUTDOWN_IN_PROGRESS: i32 = 91;
/// ReadConcernMajorityNotAvailableYet: retryable for reads only.
pub const READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET: i32 = 134;
/// PrimarySteppedDown.
pub const PRIMARY_STEPPED_DOWN: i32 = 189;
/// ExceededTimeLimit.
pub const EXCEEDED_TIME_LIMIT: i32 = 262;
/// IngressRequestRateLimitExceeded: the server shed the command before running it.
pub const INGRESS_REQUEST_RATE_LIMIT_EXCEEDED: i32 = 462;
/// SocketException.
pub const SOCKET_EXCEPTION: i32 = 9001;
/// LegacyNotPrimary.
pub const LEGACY_NOT_PRIMARY: i32 = 10058;
/// NotWritablePrimary.
pub const NOT_WRITABLE_PRIMARY: i32 = 10107;
/// InterruptedAtShutdown.
pub const INTERRUPTED_AT_SHUTDOWN: i32 = 11600;
/// InterruptedDueToReplStateChange.
pub const INTERRUPTED_DUE_TO_REPL_STATE_CHANGE: i32 = 11602;
/// NotPrimaryNoSecondaryOk.
pub const NOT_PRIMARY_NO_SECONDARY_OK: i32 = 13435;
/// NotPrimaryOrSecondary.
pub const NOT_PRIMARY_OR_SECONDARY: i32 = 13436;

/// SDAM's "node is recovering" codes.
pub const NODE_IS_RECOVERING_CODES: [i32; 5] = [
    INTERRUPTED_AT_SHUTDOWN,
    INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
    NOT_PRIMARY_OR_SECONDARY,
    PRIMARY_STEPPED_DOWN,
    SHUTDOWN_IN_PROGRESS,
];
/// SDAM's "not writable primary" codes.
pub const NOT_WRITABLE_PRIMARY_CODES: [i32; 3] = [
    NOT_WRITABLE_PRIMARY,
    NOT_PRIMARY_NO_SECONDARY_OK,
    LEGACY_NOT_PRIMARY,
];
/// The "node is shutting down" codes, a subset of the recovering codes: every connection to
/// the node will close.
pub const SHUTDOWN_CODES: [i32; 2] = [INTERRUPTED_AT_SHUTDOWN, SHUTDOWN_IN_PROGRESS];

/// Codes that make a read retryable (retryable-reads), and a write retryable on servers older
/// than 4.4, which do not attach `RetryableWriteError` themselves.
pub const RETRYABLE_CODES: [i32; 12] = [
    EXCEEDED_TIME_LIMIT,
    INTERRUPTED_AT_SHUTDOWN,
    INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
    NOT_WRITABLE_PRIMARY,
    NOT_PRIMARY_NO_SECONDARY_OK,
    NOT_PRIMARY_OR_SECONDARY,
    PRIMARY_STEPPED_DOWN,
    SHUTDOWN_IN_PROGRESS,
    HOST_NOT_FOUND,
    HOST_UNREACHABLE,
    NETWORK_TIMEOUT,
    SOCKET_EXCEPTION,
];

/// Codes whose reply proves the command was refused before it ran: the node was not (or no
/// longer) able to accept it, or shed it. InterruptedDueToReplStateChange is absent on purpose:
/// it stops an operation that was already running.
pub const REJECTED_BEFORE_EXECUTION_CODES: [i32; 5] = [
    NOT_WRITABLE_PRIMARY,
    NOT_PRIMARY_NO_SECONDARY_OK,
    NOT_PRIMARY_OR_SECONDARY,
    SHUTDOWN_IN_PROGRESS,
    INGRESS_REQUEST_RATE_LIMIT_EXCEEDED,
];

/// The two families of SDAM's State Change Errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateChangeKind {
    /// The server is no longer (or not yet) the writable primary.
    NotWritablePrimary,
    /// The server is recovering, stepping down or shutting down.
    NodeIsRecovering,
}

/// Classifies a server error as a State Change Error. The code alone decides when there is
/// one; the message substrings ("node is recovering", "not master or secondary", then
/// "not master") are consulted only when the reply carries no code.
pub fn classify_state_change(code: Option<i32>, message: &str) -> Option<StateChangeKind> {
    match code {
        Some(code) if NODE_IS_RECOVERING_CODES.contains(&code) => {
            Some(StateChangeKind::NodeIsRecovering)
        }
        Some(code) if NOT_WRITABLE_PRIMARY_CODES.contains(&code) => {
            Some(StateChangeKind::NotWritablePrimary)
        }
        Some(_) => None,
        None if message.contains("node is recovering")
            || message.contains("not master or secondary") =>
        {
            Some(StateChangeKind::NodeIsRecovering)
        }
        None if message.contains("not master") => Some(StateChangeKind::NotWritablePrimary),
        None => None,
    }
}

/// Whether the code says the node is shutting down (its connections will all close).
pub fn is_shutdown_code(code: Option<i32>) -> bool {
    code.is_some_and(|c| SHUTDOWN_CODES.contains(&c))
}

/// Whether the code is in the retryable code list.
pub fn is_retryable_code(code: i32) -> bool {
    RETRYABLE_CODES.contains(&code)
}

/// Whether the code makes a read retryable.
pub fn is_retryable_read_code(code: i32) -> bool {
    is_retryable_code(code) || code == READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET
}

/// Whether the code proves the command was refused before it ran.
pub fn is_rejected_before_execution(code: i32) -> bool {
    REJECTED_BEFORE_EXECUTION_CODES.contains(&code)
}

/// Whether the code is the server's own overload code.
pub fn is_overload_code(code: i32) -> bool {
    code == INGRESS_REQUEST_RATE_LIMIT_EXCEEDED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shutdown_codes_are_recovering_codes() {
        assert!(
            SHUTDOWN_CODES
                .iter()
                .all(|c| NODE_IS_RECOVERING_CODES.contains(c))
        );
    }

    #[test]
    fn every_state_change_code_except_the_legacy_one_is_retryable() {
        for code in NODE_IS_RECOVERING_CODES
            .iter()
            .chain(&NOT_WRITABLE_PRIMARY_CODES)
        {
            assert_eq!(
                is_retryable_code(*code),
                *code != LEGACY_NOT_PRIMARY,
                "{code}"
            );
        }
    }

    #[test]
    fn read_concern_majority_not_available_yet_is_retryable_for_reads_only() {
        assert!(is_retryable_read_code(
            READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET
        ));
        assert!(!is_retryable_code(READ_CONCERN_MAJORITY_NOT_AVAILABLE_YET));
    }

    #[test]
    fn rejected_before_execution_excludes_interruptions() {
        assert!(is_rejected_before_execution(NOT_WRITABLE_PRIMARY));
        assert!(is_rejected_before_execution(
            INGRESS_REQUEST_RATE_LIMIT_EXCEEDED
        ));
        assert!(!is_rejected_before_execution(
            INTERRUPTED_DUE_TO_REPL_STATE_CHANGE
        ));
        assert!(!is_rejected_before_execution(INTERRUPTED_AT_SHUTDOWN));
    }
}
