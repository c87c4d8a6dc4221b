//! Tokens from the cloud metadata services (auth.md: Azure's instance metadata service and the
//! Google Cloud metadata server). Both are plain HTTP on a link-local or internal address and
//! answer one small GET, so the request is written here: HTTP/1.1 with `Connection: close`,
//! the reply read to its `Content-Length` (or the end of the stream), bounded in size and by
//! the callback's deadline.

use std::time::Instant;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::error::{Error, Result};

/// Azure's instance metadata service.
const AZURE_HOST: &str = "169.254.169.254";
/// The Google Cloud metadata server.
const GCP_HOST: &str = "metadata";
/// The most bytes a metadata reply may have, headers included: a token is a few kilobytes.
const MAX_REPLY_BYTES: usize = 64 * 1024;

/// An HTTP GET to a metadata service: host (with the port), path and query, headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MetadataRequest {
    pub(crate) host: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(&'static str, &'static str)>,
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
        headers: vec![("Accept", "application/json"), ("Metadata", "true")],
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
        headers: vec![("Metadata-Flavor", "Google")],
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
    let body = get(&request, deadline).await?;
    let token = String::from_utf8(body)
        .map_err(|_| Error::authentication("the GCP metadata token is not UTF-8"))?;
    Ok(token.trim().to_owned())
}

/// The `access_token` of Azure's JSON reply.
fn azure_access_token(body: &[u8]) -> Result<String> {
    #[derive(serde::Deserialize)]
    struct Reply {
        access_token: String,
    }
    serde_json::from_slice::<Reply>(body)
        .map(|reply| reply.access_token)
        .map_err(|e| {
            Error::authentication(format!("the Azure metadata reply has no access_token: {e}"))
        })
}

/// Sends `request` and returns the body of a 200 reply.
///
/// # Errors
/// `Authentication` for a connection failure, the deadline passing, a malformed or oversized
/// reply, or a status other than 200 (with the body in the message).
pub(crate) async fn get(request: &MetadataRequest, deadline: Instant) -> Result<Vec<u8>> {
    let exchange = exchange(request);
    let raw = tokio::select! {
        raw = exchange => raw,
        () = crate::runtime::sleep_until(deadline) => {
            return Err(Error::authentication(format!(
                "the metadata service at {} did not answer before the OIDC callback timeout",
                request.host
            )));
        }
    };
    let raw = raw.map_err(|e| {
        Error::authentication(format!(
            "cannot reach the metadata service at {}: {e}",
            request.host
        ))
        .with_source(e)
    })?;
    let (status, body) = parse_reply(&raw)?;
    if status != 200 {
        return Err(Error::authentication(format!(
            "the metadata service at {} answered {status}: {}",
            request.host,
            String::from_utf8_lossy(body)
        )));
    }
    Ok(body.to_vec())
}

async fn exchange(request: &MetadataRequest) -> std::io::Result<Vec<u8>> {
    let mut stream = tokio::net::TcpStream::connect(request.host.as_str()).await?;
    let mut head = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        request.path, request.host
    );
    for (name, value) in &request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    let mut reply = Vec::new();
    // One byte more than allowed tells an oversized reply from one exactly at the bound.
    let limit = u64::try_from(MAX_REPLY_BYTES + 1).unwrap_or(u64::MAX);
    stream.take(limit).read_to_end(&mut reply).await?;
    Ok(reply)
}

/// The status and body of a raw HTTP/1.x reply (`Content-Length` honoured; chunked transfer
/// refused: the metadata services do not use it for these small replies).
fn parse_reply(raw: &[u8]) -> Result<(u16, &[u8])> {
    let malformed = |what: &str| Error::authentication(format!("malformed metadata reply: {what}"));
    if raw.len() > MAX_REPLY_BYTES {
        return Err(malformed("larger than 64 KiB"));
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| malformed("no end of headers"))?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|_| malformed("headers not UTF-8"))?;
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| malformed("no status code"))?;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") && !value.eq_ignore_ascii_case("identity")
        {
            return Err(malformed("chunked transfer encoding is not supported"));
        }
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| malformed("bad Content-Length"))?,
            );
        }
    }
    match length {
        Some(length) => body
            .get(..length)
            .map(|body| (status, body))
            .ok_or_else(|| malformed("shorter than its Content-Length")),
        None => Ok((status, body)),
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(gcp.headers, vec![("Metadata-Flavor", "Google")]);
    }

    #[test]
    fn replies_are_parsed_and_hostile_ones_refused() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ntokenEXTRA";
        assert_eq!(parse_reply(ok).unwrap(), (200, &b"toke"[..]));
        let denied = b"HTTP/1.1 400 Bad Request\r\n\r\nno identity";
        assert_eq!(parse_reply(denied).unwrap(), (400, &b"no identity"[..]));
        for bad in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\nshort"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
            b"garbage",
            b"HTTP/1.1 abc\r\n\r\n",
        ] {
            assert!(parse_reply(bad).is_err());
        }
        let huge = vec![b'a'; MAX_REPLY_BYTES + 1];
        assert!(parse_reply(&huge).is_err());
        assert_eq!(
            azure_access_token(br#"{"access_token":"t","expires_in":"3599"}"#).unwrap(),
            "t"
        );
        assert!(azure_access_token(b"{}").is_err());
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
        assert!(seen.contains("Metadata-Flavor: Google\r\n"), "{seen}");
    }
}
