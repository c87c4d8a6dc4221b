//! Tokens from the cloud metadata services (auth.md: Azure's instance metadata service and the
//! Google Cloud metadata server): one small GET each, through the mechanisms' one HTTP client
//! ([`crate::auth::http`]), bounded in size and by the callback's deadline.

use std::time::Instant;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

#[cfg(any(feature = "azure-oidc", feature = "gcp-oidc"))]
use crate::auth::http;
use crate::error::{Error, Result};

/// Azure's instance metadata service.
const AZURE_HOST: &str = "169.254.169.254";
/// The Google Cloud metadata server.
const GCP_HOST: &str = "metadata";

/// An HTTP GET to a metadata service: host (with the port), path and query, headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MetadataRequest {
    pub(crate) host: String,
    pub(crate) path: String,
    pub(crate) headers: &'static [(&'static str, &'static str)],
    /// Names the service in errors.
    pub(crate) service: &'static str,
}

/// The Azure request for `resource` (and the managed identity `client_id`, when given).
pub(crate) fn azure_request(
    host: &str,
    resource: &str,
    client_id: Option<&str>,
) -> MetadataRequest {
    let mut path = format!(
        "/metadata/identity/oauth2/token?api-version=2018-02-01&resource={}",
        utf8_percent_encode(resource, NON_ALPHANUMERIC)
    );
    if let Some(client_id) = client_id {
        path.push_str("&client_id=");
        path.push_str(&utf8_percent_encode(client_id, NON_ALPHANUMERIC).to_string());
    }
    MetadataRequest {
        host: host.to_owned(),
        path,
        headers: &[("Accept", "application/json"), ("Metadata", "true")],
        service: "Azure metadata",
    }
}

/// The Google Cloud request for an identity token whose audience is `resource`.
pub(crate) fn gcp_request(host: &str, resource: &str) -> MetadataRequest {
    MetadataRequest {
        host: host.to_owned(),
        path: format!(
            "/computeMetadata/v1/instance/service-accounts/default/identity?audience={}",
            utf8_percent_encode(resource, NON_ALPHANUMERIC)
        ),
        headers: &[("Metadata-Flavor", "Google")],
        service: "GCP metadata",
    }
}

/// An access token from Azure's instance metadata service.
///
/// # Errors
/// `Authentication` when the service cannot be reached in time, answers other than 200 (the
/// error carries its body), or its JSON has no `access_token`.
pub(crate) async fn azure_token(
    resource: &str,
    client_id: Option<&str>,
    deadline: Instant,
) -> Result<String> {
    let request = azure_request(&format!("{AZURE_HOST}:80"), resource, client_id);
    let body = get(&request, deadline).await?;
    azure_access_token(&body)
}

/// An identity token from the Google Cloud metadata server.
///
/// # Errors
/// As [`azure_token`]; the body itself is the token.
pub(crate) async fn gcp_token(resource: &str, deadline: Instant) -> Result<String> {
    let request = gcp_request(&format!("{GCP_HOST}:80"), resource);
    let token = get(&request, deadline).await?;
    Ok(token.trim().to_owned())
}

/// The `access_token` of Azure's JSON reply.
fn azure_access_token(body: &str) -> Result<String> {
    #[derive(serde::Deserialize)]
    struct Reply {
        access_token: String,
    }
    serde_json::from_str::<Reply>(body)
        .map(|reply| reply.access_token)
        .map_err(|e| {
            Error::authentication(format!("the Azure metadata reply has no access_token: {e}"))
        })
}

/// Sends `request` and returns the body of a 2xx reply.
///
/// # Errors
/// `Authentication` for a connection failure, the deadline passing, an oversized reply, or a
/// status other than 2xx (with the start of the body in the message).
#[cfg(any(feature = "azure-oidc", feature = "gcp-oidc"))]
pub(crate) async fn get(request: &MetadataRequest, deadline: Instant) -> Result<String> {
    let url = format!("http://{}{}", request.host, request.path);
    http::get(url, request.headers, deadline, request.service).await
}

/// Without `azure-oidc` and `gcp-oidc` there is no HTTP client; the client refuses those
/// environments at creation (`features::check`), and this answers the same if reached anyway.
///
/// # Errors
/// Always `Authentication`, naming the feature of the service asked for.
#[cfg(not(any(feature = "azure-oidc", feature = "gcp-oidc")))]
pub(crate) async fn get(request: &MetadataRequest, _deadline: Instant) -> Result<String> {
    let feature = if request.service.contains("Azure") {
        "azure-oidc"
    } else {
        "gcp-oidc"
    };
    Err(Error::authentication(crate::features::missing(
        &format!("the {} token source", request.service),
        feature,
    )))
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    #[test]
    fn requests_follow_the_spec() {
        let azure = azure_request("h:80", "api://a b", Some("id"));
        assert_eq!(
            azure.path,
            "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=api%3A%2F%2Fa%20b&client_id=id"
        );
        assert!(azure.headers.contains(&("Metadata", "true")));
        let without_client = azure_request("h:80", "r", None);
        assert!(!without_client.path.contains("client_id"));
        let gcp = gcp_request("h:80", "aud");
        assert_eq!(
            gcp.path,
            "/computeMetadata/v1/instance/service-accounts/default/identity?audience=aud"
        );
        assert_eq!(gcp.headers, &[("Metadata-Flavor", "Google")]);
    }

    #[test]
    fn the_azure_reply_yields_its_access_token() {
        assert_eq!(
            azure_access_token(r#"{"access_token":"t","expires_in":"3599"}"#).unwrap(),
            "t"
        );
        assert!(azure_access_token("{}").is_err());
        assert!(azure_access_token("not json").is_err());
    }

    #[tokio::test]
    async fn get_reports_the_body_of_a_refusal() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let server = async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 1024];
            let n = socket.read(&mut request).await.unwrap();
            let request = String::from_utf8_lossy(&request[..n]).into_owned();
            socket
                .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 7\r\n\r\nmissing")
                .await
                .unwrap();
            request
        };
        let request = gcp_request(&host, "aud");
        let deadline = crate::runtime::now() + std::time::Duration::from_secs(30);
        let (error, seen) = tokio::join!(get(&request, deadline), server);
        let error = error.unwrap_err();
        assert!(error.to_string().contains("404") && error.to_string().contains("missing"));
        // Header names travel lower-cased (HTTP/1.1 names are case-insensitive).
        assert!(
            seen.to_ascii_lowercase()
                .contains("metadata-flavor: google\r\n"),
            "{seen}"
        );
    }
}
