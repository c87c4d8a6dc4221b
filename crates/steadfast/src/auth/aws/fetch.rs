//! Fetching temporary credentials over HTTP: STS `AssumeRoleWithWebIdentity`, the ECS
//! container endpoint, and the EC2 instance metadata service (IMDSv2).
//!
//! Blocking (through the mechanisms' one HTTP client, [`crate::auth::http`]): callers run it on
//! the blocking pool.

// Without `aws-auth` the fetching below is not built: the client refuses MONGODB-AWS at
// creation (`features::check`), and `fetch` answers with the same error if reached anyway.
#![cfg_attr(
    not(feature = "aws-auth"),
    allow(
        dead_code,
        unused_imports,
        reason = "the fetching is built with the aws-auth feature only"
    )
)]

use std::io::Read as _;
use std::time::Duration;

use super::credentials::{
    AwsCredential, AwsEnvironment, parse_endpoint_credentials, parse_web_identity_credentials,
};
#[cfg(feature = "aws-auth")]
use crate::auth::http::{agent, body_of};
use crate::error::{Error, Result};

/// The auth specification's read timeout for the ECS and EC2 endpoints, used for STS too.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest web identity token file read (OIDC tokens are a few KiB).
const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;
/// Lifetime asked for the IMDSv2 session token: it serves the two requests that follow.
const IMDS_TOKEN_TTL_SECONDS: &str = "30";
/// The longest IAM role name (IAM quotas).
const MAX_ROLE_NAME_BYTES: usize = 128;

/// The base URLs of the credential endpoints: AWS's addresses, replaced only by tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AwsEndpoints {
    /// STS, for `AssumeRoleWithWebIdentity`.
    pub(crate) sts: String,
    /// The ECS agent's link-local address.
    pub(crate) ecs: String,
    /// The EC2 instance metadata service's link-local address.
    pub(crate) ec2: String,
}

impl Default for AwsEndpoints {
    fn default() -> Self {
        Self {
            sts: "https://sts.amazonaws.com".to_owned(),
            ecs: "http://169.254.170.2".to_owned(),
            ec2: "http://169.254.169.254".to_owned(),
        }
    }
}

/// Fetches temporary credentials from the first source the environment points to: web identity
/// when both `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN` are set, else ECS when
/// `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` is, else EC2.
///
/// # Errors
/// `Authentication` when the source cannot be reached, answers with an error status, or
/// answers something that is not credentials; `timeout` bounds each request.
#[cfg(feature = "aws-auth")]
pub(crate) fn fetch(
    environment: &dyn AwsEnvironment,
    endpoints: &AwsEndpoints,
    timeout: Duration,
) -> Result<AwsCredential> {
    let agent = agent(timeout);
    if let (Some(token_file), Some(role_arn)) = (
        environment.var("AWS_WEB_IDENTITY_TOKEN_FILE"),
        environment.var("AWS_ROLE_ARN"),
    ) {
        let session_name = environment
            .var("AWS_ROLE_SESSION_NAME")
            .unwrap_or_else(random_session_name);
        return web_identity(
            &agent,
            &endpoints.sts,
            &token_file,
            &role_arn,
            &session_name,
        );
    }
    if let Some(relative_uri) = environment.var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
        return ecs(&agent, &endpoints.ecs, &relative_uri);
    }
    ec2(&agent, &endpoints.ec2)
}

/// Without the `aws-auth` feature there is no HTTP client to fetch with.
///
/// # Errors
/// Always `Authentication`, naming the feature.
#[cfg(not(feature = "aws-auth"))]
pub(crate) fn fetch(
    _environment: &dyn AwsEnvironment,
    _endpoints: &AwsEndpoints,
    _timeout: Duration,
) -> Result<AwsCredential> {
    Err(Error::authentication(crate::features::missing(
        "fetching MONGODB-AWS credentials",
        "aws-auth",
    )))
}

#[cfg(feature = "aws-auth")]
fn web_identity(
    agent: &ureq::Agent,
    sts: &str,
    token_file: &str,
    role_arn: &str,
    session_name: &str,
) -> Result<AwsCredential> {
    let token = read_token_file(token_file)?;
    let response = agent
        .post(&format!("{sts}/"))
        .header("Accept", "application/json")
        .send_form([
            ("Action", "AssumeRoleWithWebIdentity"),
            ("RoleSessionName", session_name),
            ("RoleArn", role_arn),
            ("WebIdentityToken", token.trim()),
            ("Version", "2011-06-15"),
        ]);
    let body = body_of(response, "AssumeRoleWithWebIdentity")?;
    parse_web_identity_credentials(&body)
}

fn read_token_file(path: &str) -> Result<String> {
    let failed = |e: std::io::Error| {
        Error::authentication(format!(
            "the web identity token file {path:?} cannot be read: {e}"
        ))
    };
    let mut token = String::new();
    std::fs::File::open(path)
        .map_err(failed)?
        .take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_string(&mut token)
        .map_err(failed)?;
    if u64::try_from(token.len()).map_or(true, |len| len > MAX_TOKEN_FILE_BYTES) {
        return Err(Error::authentication(format!(
            "the web identity token file {path:?} exceeds {MAX_TOKEN_FILE_BYTES} bytes"
        )));
    }
    Ok(token)
}

fn random_session_name() -> String {
    let bytes: [u8; 8] = crate::runtime::secure_random_bytes();
    let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("steadfast-{suffix}")
}

#[cfg(feature = "aws-auth")]
fn ecs(agent: &ureq::Agent, base: &str, relative_uri: &str) -> Result<AwsCredential> {
    if !is_safe_relative_uri(relative_uri) {
        return Err(Error::authentication(
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is not a path on the ECS endpoint",
        ));
    }
    let response = agent.get(&format!("{base}{relative_uri}")).call();
    let body = body_of(response, "ECS")?;
    parse_endpoint_credentials(&body, "ECS")
}

/// A path (and query) that cannot redirect the request to another host or smuggle a header:
/// it starts with `/`, not `//`, and holds only visible ASCII other than `@`, `\` and `#`.
fn is_safe_relative_uri(uri: &str) -> bool {
    uri.starts_with('/')
        && !uri.starts_with("//")
        && uri
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'@' | b'\\' | b'#'))
}

#[cfg(feature = "aws-auth")]
fn ec2(agent: &ureq::Agent, base: &str) -> Result<AwsCredential> {
    let token = body_of(
        agent
            .put(&format!("{base}/latest/api/token"))
            .header(
                "X-aws-ec2-metadata-token-ttl-seconds",
                IMDS_TOKEN_TTL_SECONDS,
            )
            .send_empty(),
        "EC2 token",
    )?;
    let token = token.trim();
    let roles_url = format!("{base}/latest/meta-data/iam/security-credentials/");
    let roles = body_of(
        agent
            .get(&roles_url)
            .header("X-aws-ec2-metadata-token", token)
            .call(),
        "EC2 role",
    )?;
    let role = roles.lines().next().unwrap_or("").trim();
    if !is_role_name(role) {
        return Err(Error::authentication(
            "the EC2 metadata service named no valid IAM role",
        ));
    }
    let body = body_of(
        agent
            .get(&format!("{roles_url}{role}"))
            .header("X-aws-ec2-metadata-token", token)
            .call(),
        "EC2",
    )?;
    parse_endpoint_credentials(&body, "EC2")
}

/// IAM role names: 1 to 128 of `A-Za-z0-9+=,.@_-` (so the name is safe in a URL path).
fn is_role_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_ROLE_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+=,.@_-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_uris_that_could_leave_the_ecs_host_are_refused() {
        assert!(is_safe_relative_uri("/v2/credentials/abc-123?x=1"));
        for bad in [
            "",
            "v2",
            "//evil.example/x",
            "/a@b",
            "/a b",
            "/a\r\nHost: x",
            "/a#b",
        ] {
            assert!(!is_safe_relative_uri(bad), "{bad:?}");
        }
    }

    #[test]
    fn role_names_are_checked_before_they_enter_a_url() {
        assert!(is_role_name("my-role_1.x@y+z=,"));
        for bad in ["", "../x", "a/b", "a b", &"r".repeat(129)] {
            assert!(!is_role_name(bad), "{bad:?}");
        }
    }
}
