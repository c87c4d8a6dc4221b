//! MONGODB-OIDC for the `auth/unified` suite: deployments that accept OIDC tokens from
//! blackpipe's test issuer, the token file the driver's `ENVIRONMENT: test` reads (named by
//! `OIDC_TOKEN_FILE`, as in the drivers' own test environments), and client entities whose
//! `authMechanismProperties` is the `$$placeholder` the suite leaves to the runner.
//!
//! The process cannot set an environment variable for itself (`set_var` is unsafe and the
//! workspace forbids unsafe code), so when `OIDC_TOKEN_FILE` is unset and the OIDC suite is
//! to run, the runner starts itself again with the variable naming a fresh temporary file.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use blackpipe::auth::OidcConfig;
use blackpipe::deployment::{Deployment, DeploymentConfig, DeploymentKind};
use bson::{Bson, Document};

/// The variable the driver's `test` environment reads.
const TOKEN_FILE_VARIABLE: &str = "OIDC_TOKEN_FILE";

/// The suite whose tests need OIDC.
const OIDC_SUITE: &str = "auth/unified";

/// The `$external` user the tokens name.
const PRINCIPAL: &str = "test_user1";

/// How long a test's token is valid: far longer than a test runs.
const TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

/// Runs the runner again with `OIDC_TOKEN_FILE` set when the OIDC suite is selected and the
/// variable is not; `Some` is the child's exit code, `None` means carry on in this process.
pub(crate) fn run_with_token_file() -> Option<ExitCode> {
    if std::env::var_os(TOKEN_FILE_VARIABLE).is_some() {
        return None;
    }
    let only_suite = std::env::var("STEADFAST_UNIFIED_SUITE").ok();
    if only_suite.is_some_and(|s| !OIDC_SUITE.contains(&s)) {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("steadfast-unified-oidc-{}", std::process::id()));
    if let Err(error) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {error}", dir.display());
        return Some(ExitCode::FAILURE);
    }
    let status = std::env::current_exe().and_then(|exe| {
        std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(TOKEN_FILE_VARIABLE, dir.join("token"))
            .status()
    });
    let _ = std::fs::remove_dir_all(&dir);
    match status {
        Ok(status) if status.success() => Some(ExitCode::SUCCESS),
        Ok(_) => Some(ExitCode::FAILURE),
        Err(error) => {
            eprintln!("cannot run the runner again with {TOKEN_FILE_VARIABLE} set: {error}");
            Some(ExitCode::FAILURE)
        }
    }
}

/// `config` accepting OIDC tokens from a fresh test issuer. A sharded cluster gets one
/// router, as the drivers' OIDC test environments have one server: the suite sets fail points
/// through a single-mongos client and expects them to hit the client entity that leaves
/// `useMultipleMongoses` unset.
pub(crate) fn configure(mut config: DeploymentConfig) -> DeploymentConfig {
    if config.kind == DeploymentKind::Sharded {
        config.members.truncate(1);
    }
    config.with_oidc(OidcConfig::default())
}

/// Writes a token of `deployment`'s issuer to the file `OIDC_TOKEN_FILE` names (replacing it
/// whole, so a reader never sees half a token).
pub(crate) fn write_token(deployment: &Deployment) -> Result<(), String> {
    let issuer = deployment
        .oidc_issuer()
        .ok_or("the deployment was started without OIDC")?;
    let path = PathBuf::from(
        std::env::var_os(TOKEN_FILE_VARIABLE).ok_or(format!("{TOKEN_FILE_VARIABLE} is not set"))?,
    );
    let partial = path.with_extension("partial");
    std::fs::write(&partial, issuer.mint(PRINCIPAL, TOKEN_LIFETIME))
        .and_then(|()| std::fs::rename(&partial, &path))
        .map_err(|e| format!("cannot write the OIDC token to {}: {e}", path.display()))
}

/// For a client entity that authenticates with MONGODB-OIDC: the URI without the fixture's
/// SCRAM user, and the `$$placeholder` mechanism properties replaced by `ENVIRONMENT:test`.
/// Other entities' URIs are returned unchanged.
pub(crate) fn client_uri(uri: String, uri_options: &mut Document) -> String {
    if uri_options.get_str("authMechanism").ok() != Some("MONGODB-OIDC") {
        return uri;
    }
    let placeholder = matches!(
        uri_options.get("authMechanismProperties"),
        Some(Bson::Document(d)) if d.contains_key("$$placeholder")
    );
    if placeholder {
        uri_options.insert("authMechanismProperties", "ENVIRONMENT:test");
    }
    match uri.split_once("://").and_then(|(scheme, rest)| {
        let (userinfo, hosts) = rest.split_once('@')?;
        // An '@' after the first '/' belongs to the path or query, not to credentials.
        (!userinfo.contains('/')).then(|| format!("{scheme}://{hosts}"))
    }) {
        Some(without_user) => without_user,
        None => uri,
    }
}
