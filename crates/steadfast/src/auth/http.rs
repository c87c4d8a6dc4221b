//! The one HTTP client of the authentication mechanisms that fetch credentials or tokens
//! (MONGODB-AWS's STS, ECS and EC2 endpoints; MONGODB-OIDC's Azure and GCP metadata services):
//! `ureq`, blocking, run on the blocking pool. Every request is bounded in time and every body
//! in size, since what these endpoints answer is input too; no proxy from the environment
//! (link-local metadata addresses must never go through one) and no redirect.

use std::time::Duration;

use crate::error::{Error, Result};

/// The largest body read from an endpoint (credential documents and tokens are a few KiB).
pub(crate) const MAX_BODY_BYTES: u64 = 64 * 1024;
/// How much of a refusal's body its error quotes.
const QUOTED_REFUSAL_BYTES: u64 = 512;

/// An agent whose every request ends within `timeout`.
pub(crate) fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .build()
        .into()
}

/// The body of a successful response, at most [`MAX_BODY_BYTES`]; `source` names the endpoint
/// in errors.
///
/// # Errors
/// `Authentication` when the endpoint could not be reached, answered other than 2xx (the
/// error quotes the start of its body), or its body is too large or not UTF-8.
pub(crate) fn body_of(
    response: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    source: &str,
) -> Result<String> {
    let response = response.map_err(|e| {
        Error::authentication(format!("the {source} endpoint cannot be reached: {e}"))
            .with_source(e)
    })?;
    let status = response.status();
    let mut body = response.into_body();
    if !status.is_success() {
        let quoted = body
            .with_config()
            .limit(QUOTED_REFUSAL_BYTES)
            .read_to_vec()
            .unwrap_or_default();
        return Err(Error::authentication(format!(
            "the {source} endpoint answered HTTP {}: {}",
            status.as_u16(),
            String::from_utf8_lossy(&quoted)
        )));
    }
    body.with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_string()
        .map_err(|e| {
            Error::authentication(format!(
                "the {source} endpoint's answer cannot be read: {e}"
            ))
            .with_source(e)
        })
}

/// GETs `url` with `headers` on the blocking pool and returns the body of a 2xx answer, all
/// before `deadline`.
///
/// # Errors
/// As [`body_of`]; also `Authentication` when the deadline has already passed.
///
/// # Cancel safety
/// Cancel safe: dropping the future abandons the answer (the blocking request still ends
/// within its timeout).
#[cfg(any(feature = "azure-oidc", feature = "gcp-oidc"))]
pub(crate) async fn get(
    url: String,
    headers: &'static [(&'static str, &'static str)],
    deadline: std::time::Instant,
    source: &'static str,
) -> Result<String> {
    let timeout = deadline.saturating_duration_since(crate::runtime::now());
    if timeout.is_zero() {
        return Err(Error::authentication(format!(
            "no time left to ask the {source} endpoint"
        )));
    }
    crate::runtime::run_blocking(move || {
        let mut request = agent(timeout).get(&url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        body_of(request.call(), source)
    })
    .await
    .ok_or_else(|| {
        Error::authentication(format!(
            "the runtime shut down while asking the {source} endpoint"
        ))
    })?
}
