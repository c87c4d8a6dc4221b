//! Errors of the control API and the admin commands, with the codes mongod uses for the same
//! situations.

use bson::{Document, doc};

use blackpipe_store::code;

/// Why a control request (stepdown, election, kill, reconfig, ...) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The deployment is not a replica set.
    #[error("not running with --replSet")]
    NotReplicaSet,
    /// Stepdown asked of a member that is not primary.
    #[error("not primary so can't step down")]
    NotPrimary,
    /// Stepdown without `force` and no electable secondary to take over.
    #[error("No electable secondaries caught up")]
    NoElectableSecondary,
    /// The member can never be primary, or is not a secondary now.
    #[error("member {0} is not electable")]
    NotElectable(String),
    /// The member is down or partitioned.
    #[error("member {0} is unreachable")]
    Unreachable(String),
    /// The candidate could not collect a majority of votes: too few voters reach it, or
    /// their op logs are newer than its own.
    #[error(
        "election failed: {0} could not collect the votes of a majority of voting members (unreachable, or their op logs are newer)"
    )]
    ElectionLost(String),
    /// Fewer than a majority of voting members are reachable.
    #[error("cannot elect a primary: a majority of voting members is unreachable")]
    NoMajority,
    /// `replSetFreeze` on the primary.
    #[error("cannot freeze node when primary or running for election. state: Primary")]
    FreezePrimary,
    /// No such member.
    #[error("no member {0} in this deployment")]
    UnknownMember(String),
    /// The requested configuration is invalid.
    #[error("{0}")]
    InvalidConfig(String),
    /// The configuration version does not increase.
    #[error("{0}")]
    NewConfigIncompatible(String),
    /// A malformed admin command.
    #[error("{0}")]
    BadArgument(String),
    /// A listener could not be bound (restart, reconfig adding a member).
    #[error("cannot listen: {0}")]
    Listen(String),
}

impl ControlError {
    /// The error code mongod would use.
    pub fn code(&self) -> i32 {
        match self {
            Self::NotReplicaSet => code::NO_REPLICATION_ENABLED,
            Self::NotPrimary => code::NOT_WRITABLE_PRIMARY,
            Self::NoElectableSecondary => code::EXCEEDED_TIME_LIMIT,
            Self::NotElectable(_)
            | Self::Unreachable(_)
            | Self::NoMajority
            | Self::ElectionLost(_)
            | Self::Listen(_) => code::COMMAND_FAILED,
            Self::FreezePrimary => code::NOT_SECONDARY,
            Self::UnknownMember(_) | Self::BadArgument(_) => code::BAD_VALUE,
            Self::InvalidConfig(_) => code::INVALID_REPLICA_SET_CONFIG,
            Self::NewConfigIncompatible(_) => code::NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
        }
    }

    /// The name of [`Self::code`].
    pub fn code_name(&self) -> &'static str {
        match self.code() {
            code::NO_REPLICATION_ENABLED => "NoReplicationEnabled",
            code::NOT_WRITABLE_PRIMARY => "NotWritablePrimary",
            code::EXCEEDED_TIME_LIMIT => "ExceededTimeLimit",
            code::NOT_SECONDARY => "NotSecondary",
            code::BAD_VALUE => "BadValue",
            code::INVALID_REPLICA_SET_CONFIG => "InvalidReplicaSetConfig",
            code::NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE => {
                "NewReplicaSetConfigurationIncompatible"
            }
            _ => "CommandFailed",
        }
    }

    /// The error as a command reply.
    pub fn to_reply(&self) -> Document {
        doc! {
            "ok": 0.0,
            "errmsg": self.to_string(),
            "code": self.code(),
            "codeName": self.code_name(),
        }
    }
}
