//! The MONGODB-AWS SASL messages (auth specification, MONGODB-AWS "Conversation"): the
//! client's nonce message, the checks on the server's reply, the STS region, and the signed
//! `GetCallerIdentity` request the client answers with.
//!
//! Pure: the nonce, the date and the credentials are arguments.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, RawDocumentBuf, doc};

use super::credentials::AwsCredential;
use super::sigv4::{self, SignableRequest, SigningScope};
use crate::error::{Error, Result};

/// The SASL mechanism name.
pub(crate) const MECHANISM: &str = "MONGODB-AWS";
/// Bytes of the client's nonce, and of the server's addition to it.
pub(crate) const NONCE_BYTES: usize = 32;
/// `gs2-cb-flag`: ASCII `n`, no channel binding (the server supports none).
const GS2_CB_FLAG: i32 = b'n' as i32;
/// The longest STS host name (RFC 1035).
const MAX_HOST_BYTES: usize = 255;
/// The request body every MONGODB-AWS signature covers.
const STS_BODY: &str = "Action=GetCallerIdentity&Version=2011-06-15";
/// The region of the global STS endpoint, and of hosts without a period.
const DEFAULT_REGION: &str = "us-east-1";

/// The client's first payload: `{r: <nonce>, p: 110}` as BSON bytes.
pub(crate) fn client_first(nonce: &[u8; NONCE_BYTES]) -> Result<Vec<u8>> {
    let message = doc! {
        "r": Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes: nonce.to_vec() }),
        "p": GS2_CB_FLAG,
    };
    encode(&message)
}

/// What the server's first reply says once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerFirst {
    /// The 64-byte combined nonce.
    pub(crate) nonce: Vec<u8>,
    /// The STS host the signature names.
    pub(crate) host: String,
    /// The region derived from `host`.
    pub(crate) region: String,
}

/// Parses and checks the server's first payload against the client's nonce.
///
/// # Errors
/// `Authentication` when the payload is not BSON, a field is missing or mistyped, the nonce is
/// not 64 bytes starting with the client's, or the host is not a valid STS host name.
pub(crate) fn parse_server_first(payload: &[u8], client_nonce: &[u8]) -> Result<ServerFirst> {
    let message = Document::from_reader(payload)
        .map_err(|_| Error::authentication("the MONGODB-AWS server message is not BSON"))?;
    let nonce = match message.get("s") {
        Some(Bson::Binary(binary)) if binary.subtype == BinarySubtype::Generic => {
            binary.bytes.clone()
        }
        _ => {
            return Err(Error::authentication(
                "the MONGODB-AWS server message has no binary server nonce",
            ));
        }
    };
    if nonce.len() != 2 * NONCE_BYTES || !nonce.starts_with(client_nonce) {
        return Err(Error::authentication(
            "the MONGODB-AWS server nonce is not 64 bytes starting with the client's nonce",
        ));
    }
    let host = message
        .get_str("h")
        .map_err(|_| Error::authentication("the MONGODB-AWS server message has no STS host"))?;
    let region = region(host)?;
    Ok(ServerFirst {
        nonce,
        host: host.to_owned(),
        region,
    })
}

/// The region of STS host `host` (auth specification, "Region Calculation").
///
/// # Errors
/// `Authentication` for an empty host, one longer than 255 bytes, or one with an empty label
/// (including a leading or trailing period).
pub(crate) fn region(host: &str) -> Result<String> {
    if host.len() > MAX_HOST_BYTES {
        // Not quoted: the name could be as long as a whole server message.
        return Err(Error::authentication(
            "the STS host is longer than 255 bytes",
        ));
    }
    if host.is_empty() || host.split('.').any(str::is_empty) {
        return Err(Error::authentication(format!(
            "the STS host {host:?} is not a valid host name"
        )));
    }
    // The table of the specification names the global endpoint (its pseudocode says
    // "aws.amazonaws.com", a slip the table and the other drivers contradict).
    if host == "sts.amazonaws.com" {
        return Ok(DEFAULT_REGION.to_owned());
    }
    Ok(host.split('.').nth(1).unwrap_or(DEFAULT_REGION).to_owned())
}

/// The client's second payload: the signed `GetCallerIdentity` request's authorization
/// header, its date and (for temporary credentials) the security token.
///
/// # Errors
/// `InvalidArgument` if the message cannot be encoded (it always can).
pub(crate) fn client_second(
    server: &ServerFirst,
    credential: &AwsCredential,
    amz_date: &str,
) -> Result<Vec<u8>> {
    let nonce = BASE64.encode(&server.nonce);
    let content_length = STS_BODY.len().to_string();
    let mut headers = vec![
        ("content-length", content_length.as_str()),
        ("content-type", "application/x-www-form-urlencoded"),
        ("host", server.host.as_str()),
        ("x-amz-date", amz_date),
    ];
    if let Some(token) = credential.session_token.as_deref() {
        headers.push(("x-amz-security-token", token));
    }
    headers.push(("x-mongodb-gs2-cb-flag", "n"));
    headers.push(("x-mongodb-server-nonce", nonce.as_str()));
    let request = SignableRequest {
        method: "POST",
        path: "/",
        query: "",
        headers: &headers,
        body: STS_BODY.as_bytes(),
    };
    let scope = SigningScope {
        access_key_id: &credential.access_key_id,
        secret_access_key: credential.secret_access_key.expose(),
        date: amz_date,
        region: &server.region,
        service: "sts",
    };
    let mut message = doc! {
        "a": sigv4::authorization_header(&request, &scope),
        "d": amz_date,
    };
    if let Some(token) = &credential.session_token {
        message.insert("t", token.clone());
    }
    encode(&message)
}

fn encode(message: &Document) -> Result<Vec<u8>> {
    RawDocumentBuf::try_from(message)
        .map(RawDocumentBuf::into_bytes)
        .map_err(|e| {
            Error::invalid_argument("the MONGODB-AWS message cannot be encoded").with_source(e)
        })
}
