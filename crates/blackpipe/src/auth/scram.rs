//! The server side of SCRAM (RFC 5802, RFC 7677): deriving stored credentials, parsing the
//! client's two messages, building the server's, and checking the client's proof.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use md5::{Digest as _, Md5};
use sha1::Sha1;
use sha2::Sha256;

use super::error::AuthError;
use super::users::Mechanism;

/// What the server keeps for one user and mechanism.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ScramCredential {
    pub(crate) salt: Vec<u8>,
    pub(crate) iterations: u32,
    pub(crate) stored_key: Vec<u8>,
    pub(crate) server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// SaltedPassword = Hi(password, salt, i); StoredKey = H(HMAC(SaltedPassword, "Client
    /// Key")); ServerKey = HMAC(SaltedPassword, "Server Key"). The password SCRAM-SHA-1 sees
    /// is MongoDB's `hex(md5("<user>:mongo:<password>"))`; SCRAM-SHA-256 SASLpreps it.
    pub(crate) fn derive(
        mechanism: Mechanism,
        user: &str,
        password: &str,
        salt: Vec<u8>,
        iterations: u32,
    ) -> Result<Self, String> {
        let salted = match mechanism {
            Mechanism::ScramSha1 => {
                let digest = Md5::digest(format!("{user}:mongo:{password}").as_bytes());
                let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
                let mut out = vec![0; 20];
                pbkdf2::pbkdf2_hmac::<Sha1>(hex.as_bytes(), &salt, iterations, &mut out);
                out
            }
            Mechanism::ScramSha256 => {
                let prepped = stringprep::saslprep(password)
                    .map_err(|e| format!("SASLprep rejects the password: {e}"))?;
                let mut out = vec![0; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(prepped.as_bytes(), &salt, iterations, &mut out);
                out
            }
        };
        let client_key = hmac(mechanism, &salted, b"Client Key");
        Ok(Self {
            salt,
            iterations,
            stored_key: hash(mechanism, &client_key),
            server_key: hmac(mechanism, &salted, b"Server Key"),
        })
    }
}

impl ScramCredential {
    /// Whether `password` is the one this credential was derived from: the same derivation
    /// with the stored salt and iteration count, StoredKeys compared in constant time (PLAIN
    /// checks passwords this way).
    pub(crate) fn matches_password(
        &self,
        mechanism: Mechanism,
        user: &str,
        password: &str,
    ) -> bool {
        Self::derive(
            mechanism,
            user,
            password,
            self.salt.clone(),
            self.iterations,
        )
        .is_ok_and(|derived| constant_time_eq(&derived.stored_key, &self.stored_key))
    }
}

fn hmac(mechanism: Mechanism, key: &[u8], message: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length: `new_from_slice` cannot fail, and an empty tag would
    // only make a proof check fail.
    match mechanism {
        Mechanism::ScramSha1 => Hmac::<Sha1>::new_from_slice(key)
            .map(|mac| mac.chain_update(message).finalize().into_bytes().to_vec())
            .unwrap_or_default(),
        Mechanism::ScramSha256 => Hmac::<Sha256>::new_from_slice(key)
            .map(|mac| mac.chain_update(message).finalize().into_bytes().to_vec())
            .unwrap_or_default(),
    }
}

fn hash(mechanism: Mechanism, data: &[u8]) -> Vec<u8> {
    match mechanism {
        Mechanism::ScramSha1 => Sha1::digest(data).to_vec(),
        Mechanism::ScramSha256 => Sha256::digest(data).to_vec(),
    }
}

/// Compares without stopping at the first difference, so that timing says nothing about how
/// much of a key was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The client-first message: `gs2-header client-first-bare`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientFirst {
    /// The GS2 header, echoed (base64) in the client-final message's `c=`.
    pub(crate) gs2_header: String,
    /// `n=<user>,r=<nonce>[,extensions]`, part of the AuthMessage.
    pub(crate) bare: String,
    /// The user name, `=2C` and `=3D` decoded.
    pub(crate) user: String,
    /// The client's nonce.
    pub(crate) nonce: String,
}

/// Parses `n,,n=user,r=nonce`. Channel binding (`p=`) and an authorization identity are
/// refused, as mongod refuses them.
pub(crate) fn parse_client_first(message: &str) -> Result<ClientFirst, AuthError> {
    let bad =
        |why: &str| AuthError::malformed(format!("Incorrect SCRAM client first message: {why}"));
    let (flag, rest) = message
        .split_once(',')
        .ok_or_else(|| bad("no GS2 header"))?;
    if flag != "n" && flag != "y" {
        return Err(bad("channel binding is not supported"));
    }
    let (authzid, bare) = rest.split_once(',').ok_or_else(|| bad("no GS2 header"))?;
    if !authzid.is_empty() {
        return Err(bad("an authorization identity is not supported"));
    }
    let mut fields = bare.split(',');
    let user = fields
        .next()
        .and_then(|f| f.strip_prefix("n="))
        .ok_or_else(|| bad("expected n=<user>"))?;
    let nonce = fields
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .ok_or_else(|| bad("expected r=<nonce>"))?;
    if nonce.is_empty() || !nonce.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(bad("the nonce must be printable ASCII"));
    }
    Ok(ClientFirst {
        gs2_header: format!("{flag},{authzid},"),
        bare: bare.to_owned(),
        user: decode_user(user).ok_or_else(|| bad("bad escape in the user name"))?,
        nonce: nonce.to_owned(),
    })
}

/// Undoes the SCRAM escaping of `,` (`=2C`) and `=` (`=3D`); `None` for any other `=`.
fn decode_user(escaped: &str) -> Option<String> {
    let mut user = String::with_capacity(escaped.len());
    let mut rest = escaped;
    while let Some(at) = rest.find('=') {
        user.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 3)?;
        user.push(match code {
            "2C" => ',',
            "3D" => '=',
            _ => return None,
        });
        rest = &rest[at + 3..];
    }
    user.push_str(rest);
    (!user.is_empty()).then_some(user)
}

/// `r=<nonce>,s=<salt>,i=<iterations>`.
pub(crate) fn server_first(nonce: &str, credential: &ScramCredential) -> String {
    format!(
        "r={nonce},s={},i={}",
        BASE64.encode(&credential.salt),
        credential.iterations
    )
}

/// The client-final message, split into what the AuthMessage needs and the proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientFinal {
    pub(crate) without_proof: String,
    pub(crate) channel_binding: String,
    pub(crate) nonce: String,
    pub(crate) proof: Vec<u8>,
}

/// Parses `c=<binding>,r=<nonce>[,extensions],p=<proof>`.
pub(crate) fn parse_client_final(message: &str) -> Result<ClientFinal, AuthError> {
    let bad =
        |why: &str| AuthError::malformed(format!("Incorrect SCRAM client final message: {why}"));
    let (without_proof, proof) = message
        .rsplit_once(",p=")
        .ok_or_else(|| bad("expected p=<proof>"))?;
    let mut fields = without_proof.split(',');
    let channel_binding = fields
        .next()
        .and_then(|f| f.strip_prefix("c="))
        .ok_or_else(|| bad("expected c=<channel binding>"))?;
    let nonce = fields
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .ok_or_else(|| bad("expected r=<nonce>"))?;
    let proof = BASE64
        .decode(proof)
        .map_err(|_| bad("the proof is not base64"))?;
    Ok(ClientFinal {
        without_proof: without_proof.to_owned(),
        channel_binding: channel_binding.to_owned(),
        nonce: nonce.to_owned(),
        proof,
    })
}

/// Checks the client's proof against the AuthMessage; on success returns the server-final
/// message `v=<ServerSignature>`.
///
/// ClientSignature = HMAC(StoredKey, AuthMessage); ClientKey = proof XOR ClientSignature; the
/// proof holds when H(ClientKey) = StoredKey.
pub(crate) fn verify_proof(
    mechanism: Mechanism,
    credential: &ScramCredential,
    auth_message: &str,
    proof: &[u8],
) -> Result<String, AuthError> {
    let signature = hmac(mechanism, &credential.stored_key, auth_message.as_bytes());
    if proof.len() != signature.len() {
        return Err(AuthError::Failed);
    }
    let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
    if !constant_time_eq(&hash(mechanism, &client_key), &credential.stored_key) {
        return Err(AuthError::Failed);
    }
    let server_signature = hmac(mechanism, &credential.server_key, auth_message.as_bytes());
    Ok(format!("v={}", BASE64.encode(server_signature)))
}
