//! MONGODB-AWS as mongod runs it, minus the call to STS: blackpipe knows a few test AWS keys
//! ([`AwsKey`]) and checks the client's signed `GetCallerIdentity` request itself, by
//! recomputing the AWS Signature Version 4 from the received headers and the known secret.
//! What STS would answer (the caller's ARN) comes from the key's configuration; the
//! connection then authenticates as that ARN in `$external`.
//!
//! Pure: the server's nonce bytes come from the caller's random generator. The signing is
//! blackpipe's own code, not the driver's, so that each checks the other.

use std::fmt;
use std::fmt::Write as _;

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, RawDocumentBuf, doc};
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest as _, Sha256};

use super::error::AuthError;

/// The SASL mechanism name.
pub const MECHANISM: &str = "MONGODB-AWS";
/// The STS host blackpipe names in its first reply (the global endpoint, region us-east-1).
pub const STS_HOST: &str = "sts.amazonaws.com";
/// The most bytes a client's MONGODB-AWS message may have: the signed message carries a
/// session token, which AWS documents as variable-length (real ones are 1 to 2 KiB).
pub const MAX_AWS_PAYLOAD_BYTES: usize = 16 * 1024;

/// Bytes of the client's nonce and of the server's addition to it.
const NONCE_BYTES: usize = 32;
/// The request body every MONGODB-AWS signature covers, and its length.
const STS_BODY: &str = "Action=GetCallerIdentity&Version=2011-06-15";
/// `X-Amz-Date`: `YYYYMMDDTHHMMSSZ`.
const AMZ_DATE_LEN: usize = 16;

/// A test AWS access key: its secret, its session token when it stands for temporary
/// credentials, and the ARN STS would report for it (the `$external` user it becomes).
/// `Debug` does not show the secret.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AwsKey {
    /// The access key id (`AKIA...` or, for temporary credentials, `ASIA...`).
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
    /// Required from the client when set (temporary credentials); refused when not.
    pub session_token: Option<String>,
    /// The principal's ARN: the name the connection authenticates as in `$external`.
    pub arn: String,
}

impl AwsKey {
    /// A long-term key (no session token) for principal `arn`.
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        arn: impl Into<String>,
    ) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
            arn: arn.into(),
        }
    }

    /// The same key as temporary credentials with `token`.
    #[must_use]
    pub fn with_session_token(mut self, token: impl Into<String>) -> Self {
        self.session_token = Some(token.into());
        self
    }
}

impl fmt::Debug for AwsKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsKey")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<set>"),
            )
            .field("arn", &self.arn)
            .finish()
    }
}

/// A conversation between the server's nonce and the client's signature.
#[derive(Debug, Clone)]
pub(crate) struct AwsPending {
    nonce: Vec<u8>,
    gs2_cb_flag: char,
    keys: Vec<AwsKey>,
}

/// Answers the client's first message (`{r: nonce, p: gs2-cb-flag}`) with the server's
/// `{s: nonce, h: host}` payload.
///
/// # Errors
/// [`AuthError::Malformed`] when the payload is not BSON or a field is missing, mistyped or
/// of the wrong length.
pub(crate) fn server_first<R: RngCore + ?Sized>(
    payload: &[u8],
    keys: &[AwsKey],
    rng: &mut R,
) -> Result<(Vec<u8>, AwsPending), AuthError> {
    let message = parse(payload)?;
    let client_nonce = match message.get("r") {
        Some(Bson::Binary(b)) if b.subtype == BinarySubtype::Generic => &b.bytes,
        _ => return Err(AuthError::malformed("MONGODB-AWS: r must be BinData(0)")),
    };
    if client_nonce.len() != NONCE_BYTES {
        return Err(AuthError::malformed(
            "MONGODB-AWS: the client nonce must be 32 bytes",
        ));
    }
    let gs2_cb_flag = match message.get("p") {
        Some(Bson::Int32(110)) => 'n',
        Some(Bson::Int32(121)) => 'y',
        _ => return Err(AuthError::malformed("MONGODB-AWS: p must be 110 or 121")),
    };
    let mut nonce = client_nonce.clone();
    let mut server_half = [0u8; NONCE_BYTES];
    rng.fill_bytes(&mut server_half);
    nonce.extend_from_slice(&server_half);
    let reply = doc! {
        "s": Binary { subtype: BinarySubtype::Generic, bytes: nonce.clone() },
        "h": STS_HOST,
    };
    let bytes = RawDocumentBuf::try_from(&reply)
        .map_err(|_| AuthError::malformed("MONGODB-AWS: reply cannot be encoded"))?
        .into_bytes();
    let pending = AwsPending {
        nonce,
        gs2_cb_flag,
        keys: keys.to_vec(),
    };
    Ok((bytes, pending))
}

/// Checks the client's signed request (`{a: authorization, d: date, t?: token}`); returns the
/// ARN of the key that signed it.
///
/// # Errors
/// [`AuthError::Malformed`] for a payload that is not the expected document;
/// [`AuthError::Failed`] for an unknown key, a wrong scope, headers or token, or a signature
/// that does not match.
pub(crate) fn verify_client_second(
    pending: &AwsPending,
    payload: &[u8],
) -> Result<String, AuthError> {
    let message = parse(payload)?;
    let text = |field: &str| match message.get(field) {
        None => Ok(None),
        Some(Bson::String(value)) => Ok(Some(value.as_str())),
        Some(_) => Err(AuthError::malformed(format!(
            "MONGODB-AWS: {field} must be a string"
        ))),
    };
    let authorization =
        text("a")?.ok_or_else(|| AuthError::malformed("MONGODB-AWS: a is missing"))?;
    let date = text("d")?.ok_or_else(|| AuthError::malformed("MONGODB-AWS: d is missing"))?;
    let token = text("t")?;
    let header = AuthorizationHeader::parse(authorization)?;
    let key = pending
        .keys
        .iter()
        .find(|key| key.access_key_id == header.access_key_id)
        .ok_or(AuthError::Failed)?;
    let well_formed_date = date.len() == AMZ_DATE_LEN
        && date.bytes().enumerate().all(|(i, b)| match i {
            8 => b == b'T',
            15 => b == b'Z',
            _ => b.is_ascii_digit(),
        });
    let scope_matches = well_formed_date
        && date.get(..8) == Some(header.day)
        && header.region == "us-east-1"
        && header.service == "sts"
        && header.terminator == "aws4_request";
    if !scope_matches || token != key.session_token.as_deref() {
        return Err(AuthError::Failed);
    }
    let expected = expected_signature(pending, key, date, token);
    if header.signed_headers != expected.signed_headers
        || !constant_time_eq(header.signature.as_bytes(), expected.signature.as_bytes())
    {
        return Err(AuthError::Failed);
    }
    Ok(key.arn.clone())
}

fn parse(payload: &[u8]) -> Result<Document, AuthError> {
    Document::from_reader(payload)
        .map_err(|_| AuthError::malformed("MONGODB-AWS: the payload is not a BSON document"))
}

/// `AWS4-HMAC-SHA256 Credential=<id>/<day>/<region>/<service>/aws4_request,
/// SignedHeaders=<names>, Signature=<hex>`, split into its parts.
struct AuthorizationHeader<'a> {
    access_key_id: &'a str,
    day: &'a str,
    region: &'a str,
    service: &'a str,
    terminator: &'a str,
    signed_headers: &'a str,
    signature: &'a str,
}

impl<'a> AuthorizationHeader<'a> {
    fn parse(header: &'a str) -> Result<Self, AuthError> {
        let malformed = || AuthError::malformed("MONGODB-AWS: malformed authorization header");
        let rest = header
            .strip_prefix("AWS4-HMAC-SHA256 Credential=")
            .ok_or_else(malformed)?;
        let (credential, rest) = rest.split_once(", SignedHeaders=").ok_or_else(malformed)?;
        let (signed_headers, signature) = rest.split_once(", Signature=").ok_or_else(malformed)?;
        let parts: Vec<&str> = credential.splitn(6, '/').collect();
        let [access_key_id, day, region, service, terminator] = parts[..] else {
            return Err(malformed());
        };
        Ok(Self {
            access_key_id,
            day,
            region,
            service,
            terminator,
            signed_headers,
            signature,
        })
    }
}

struct Expected {
    signed_headers: String,
    signature: String,
}

/// The SigV4 signature of the `GetCallerIdentity` request the client should have signed.
fn expected_signature(
    pending: &AwsPending,
    key: &AwsKey,
    date: &str,
    token: Option<&str>,
) -> Expected {
    use base64::Engine as _;
    let nonce = base64::engine::general_purpose::STANDARD.encode(&pending.nonce);
    let flag = pending.gs2_cb_flag.to_string();
    let length = STS_BODY.len().to_string();
    let mut headers = vec![
        ("content-length", length.as_str()),
        ("content-type", "application/x-www-form-urlencoded"),
        ("host", STS_HOST),
        ("x-amz-date", date),
    ];
    if let Some(token) = token {
        headers.push(("x-amz-security-token", token));
    }
    headers.push(("x-mongodb-gs2-cb-flag", flag.as_str()));
    headers.push(("x-mongodb-server-nonce", nonce.as_str()));
    let signed_headers = headers
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(";");
    let mut canonical = String::from("POST\n/\n\n");
    for (name, value) in &headers {
        let _ = writeln!(canonical, "{name}:{value}");
    }
    let _ = write!(
        canonical,
        "\n{signed_headers}\n{}",
        hex(&Sha256::digest(STS_BODY))
    );
    Expected {
        signed_headers,
        signature: signature(&key.secret_access_key, date, "us-east-1", "sts", &canonical),
    }
}

/// The SigV4 signature (lower-case hex) of `canonical_request` at `date` (`X-Amz-Date`).
fn signature(
    secret: &str,
    date: &str,
    region: &str,
    service: &str,
    canonical_request: &str,
) -> String {
    let day = date.get(..8).unwrap_or(date);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{day}/{region}/{service}/aws4_request\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let mut signing_key = hmac(format!("AWS4{secret}").as_bytes(), day);
    for part in [region, service, "aws4_request"] {
        signing_key = hmac(&signing_key, part);
    }
    hex(&hmac(&signing_key, &to_sign))
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(key) else {
        // HMAC takes keys of any length.
        return Vec::new();
    };
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Compares without returning early, so timing does not reveal how much of a guessed
/// signature is right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
#[path = "aws_tests.rs"]
mod tests;
