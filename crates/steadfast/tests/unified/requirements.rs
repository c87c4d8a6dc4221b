//! `runOnRequirements` against what a blackpipe deployment offers, and version strings.

use std::fmt;

use bson::{Bson, Document};

use crate::skips::Key;

/// The deployment shapes blackpipe simulates, in the order the runner tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Topology {
    /// A replica set of three members.
    ReplicaSet,
    /// Two mongos routers over one store.
    Sharded,
    /// A standalone server.
    Single,
    /// Two routers behind blackpipe's load balancers (see `crate::load_balanced`).
    LoadBalanced,
}

impl Topology {
    /// Every topology, in run order. A requirement without `topologies` allows all of them,
    /// load-balanced included (unified test format, "runOnRequirement").
    pub(crate) const CANDIDATES: [Topology; 4] = [
        Topology::ReplicaSet,
        Topology::Sharded,
        Topology::Single,
        Topology::LoadBalanced,
    ];

    /// The name `runOnRequirements` uses.
    pub(crate) fn spec_name(self) -> &'static str {
        match self {
            Topology::ReplicaSet => "replicaset",
            Topology::Sharded => "sharded",
            Topology::Single => "single",
            Topology::LoadBalanced => "load-balanced",
        }
    }

    /// Parses a spec name; `None` for names blackpipe does not simulate.
    pub(crate) fn from_spec_name(name: &str) -> Option<Topology> {
        Topology::CANDIDATES
            .into_iter()
            .find(|t| t.spec_name() == name)
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec_name())
    }
}

/// A `major.minor.patch` version; missing components are zero, extra ones are discarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Version(pub(crate) u32, pub(crate) u32, pub(crate) u32);

impl Version {
    /// Parses `"4.2"`, `"4.0.10"`, `"4.9.0-alpha4-271-g7d5cf02"`...
    pub(crate) fn parse(text: &str) -> Result<Version, String> {
        let mut parts = [0u32; 3];
        for (slot, part) in parts.iter_mut().zip(text.split('.')) {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            *slot = digits
                .parse()
                .map_err(|_| format!("bad version component {part:?} in {text:?}"))?;
        }
        Ok(Version(parts[0], parts[1], parts[2]))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// What a requirement says about authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthNeed {
    /// `auth: true`: run against a deployment that requires authentication.
    Required,
    /// `auth: false`: run against one that does not.
    Forbidden,
    /// No `auth` field.
    Any,
    /// `authMechanism: MONGODB-OIDC` (authentication required, with an OIDC issuer).
    Oidc,
}

impl AuthNeed {
    /// Both needs at once (a file's and a test's requirement); `None` when they conflict.
    pub(crate) fn and(self, other: AuthNeed) -> Option<AuthNeed> {
        match (self, other) {
            (AuthNeed::Any, need) | (need, AuthNeed::Any) => Some(need),
            (AuthNeed::Oidc, AuthNeed::Required) | (AuthNeed::Required, AuthNeed::Oidc) => {
                Some(AuthNeed::Oidc)
            }
            (a, b) if a == b => Some(a),
            _ => None,
        }
    }
}

/// Where one case runs: a topology, with or without authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Target {
    /// The deployment's shape.
    pub(crate) topology: Topology,
    /// Whether the deployment requires authentication (clients then carry credentials).
    pub(crate) auth: bool,
    /// Whether the deployment also accepts MONGODB-OIDC tokens from a test issuer.
    pub(crate) oidc: bool,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.oidc {
            write!(f, "{} with OIDC", self.topology)
        } else if self.auth {
            write!(f, "{} with auth", self.topology)
        } else {
            write!(f, "{}", self.topology)
        }
    }
}

/// A requirement no blackpipe deployment meets: the skip-table key and what was asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unmet {
    /// The skip-table key.
    pub(crate) key: Key,
    /// The value that could not be met.
    pub(crate) detail: String,
}

/// The topologies (in run order) on which at least one requirement of the list holds (all of
/// them when `requirements` is absent), each with the authentication the first requirement
/// that holds there asks for. `Ok(Err(unmet))` when none holds anywhere, naming the first
/// requirement that failed; `Err` when the list is malformed.
pub(crate) fn satisfied_on(
    requirements: Option<&Bson>,
    version: Version,
) -> Result<Result<Vec<(Topology, AuthNeed)>, Unmet>, String> {
    let any = || Topology::CANDIDATES.map(|t| (t, AuthNeed::Any)).to_vec();
    let Some(requirements) = requirements else {
        return Ok(Ok(any()));
    };
    let Bson::Array(list) = requirements else {
        return Err("runOnRequirements must be an array".to_owned());
    };
    if list.is_empty() {
        return Ok(Ok(any()));
    }
    let mut first_unmet = None;
    let mut topologies = Vec::new();
    for topology in Topology::CANDIDATES {
        for requirement in list {
            let Bson::Document(requirement) = requirement else {
                return Err("a runOnRequirement must be a document".to_owned());
            };
            match check(requirement, version, topology)? {
                Ok(auth) => {
                    topologies.push((topology, auth));
                    break;
                }
                Err(unmet) => {
                    first_unmet.get_or_insert(unmet);
                }
            }
        }
    }
    match first_unmet {
        Some(unmet) if topologies.is_empty() => Ok(Err(unmet)),
        _ => Ok(Ok(topologies)),
    }
}

/// Whether one requirement holds on `topology` of a server at `version`, and if so with
/// which authentication.
fn check(
    requirement: &Document,
    version: Version,
    topology: Topology,
) -> Result<Result<AuthNeed, Unmet>, String> {
    let mut auth = AuthNeed::Any;
    let unmet = |key: &'static str, detail: String| {
        Ok(Err(Unmet {
            key: Key::Requirement(key),
            detail,
        }))
    };
    for (field, value) in requirement {
        match field.as_str() {
            "minServerVersion" => {
                let min = Version::parse(value.as_str().ok_or("minServerVersion is a string")?)?;
                if version < min {
                    return unmet("version", format!("needs >= {min}, blackpipe is {version}"));
                }
            }
            "maxServerVersion" => {
                let max = Version::parse(value.as_str().ok_or("maxServerVersion is a string")?)?;
                if version > max {
                    return unmet("version", format!("needs <= {max}, blackpipe is {version}"));
                }
            }
            "topologies" => {
                let Bson::Array(names) = value else {
                    return Err("topologies must be an array".to_owned());
                };
                let names: Vec<&str> = names.iter().filter_map(Bson::as_str).collect();
                if !names
                    .iter()
                    .any(|n| Topology::from_spec_name(n) == Some(topology))
                {
                    return unmet("topologies", format!("needs one of {names:?}"));
                }
            }
            // Not serverless: "forbid" and "allow" hold, "require" does not.
            "serverless" => {
                if value.as_str() == Some("require") {
                    return unmet("serverless", "serverless: require".to_owned());
                }
            }
            // blackpipe starts the deployment with or without authentication, as asked.
            "auth" => {
                auth = match value.as_bool() {
                    Some(true) if auth == AuthNeed::Oidc => AuthNeed::Oidc,
                    Some(true) => AuthNeed::Required,
                    Some(false) => AuthNeed::Forbidden,
                    None => return Err("auth must be a boolean".to_owned()),
                };
            }
            "authMechanism" if value.as_str() == Some("MONGODB-OIDC") => auth = AuthNeed::Oidc,
            "authMechanism" => {
                if !matches!(value.as_str(), Some("SCRAM-SHA-1" | "SCRAM-SHA-256")) {
                    return unmet("authMechanism", format!("authMechanism {value}"));
                }
            }
            "serverParameters" => {
                if let Some(differs) = differing_parameter(value)? {
                    return unmet("serverParameters", differs);
                }
            }
            "csfle" => {
                if value.as_bool() != Some(false) {
                    return unmet("csfle", format!("csfle: {value}"));
                }
            }
            other => return Err(format!("unknown runOnRequirement field {other:?}")),
        }
    }
    Ok(Ok(auth))
}

/// The first of `wanted` (a `serverParameters` requirement) whose value differs from the one
/// blackpipe's `getParameter` reports, described; `None` when all match.
fn differing_parameter(wanted: &Bson) -> Result<Option<String>, String> {
    let Bson::Document(wanted) = wanted else {
        return Err("serverParameters must be a document".to_owned());
    };
    let actual = blackpipe::deployment::server_parameters();
    Ok(wanted
        .iter()
        .find_map(|(key, value)| match actual.get(key) {
            Some(have) if have == value => None,
            Some(have) => Some(format!("needs {key}: {value}, blackpipe has {have}")),
            None => Some(format!(
                "needs {key}: {value}, which blackpipe does not model"
            )),
        }))
}
