//! The SCRAM-SHA-1 / SCRAM-SHA-256 client state machine (RFC 5802, RFC 7677) as MongoDB uses it.
//!
//! Pure: no I/O and no randomness. The caller supplies the client nonce, so the RFC test vectors
//! run as unit tests, and carries the messages over the wire (`saslStart` / `saslContinue`).
//! Usernames are never SASLprepped (MongoDB requires the raw form); SCRAM-SHA-256 passwords are
//! SASLprepped; SCRAM-SHA-1 passwords are replaced by MongoDB's MD5 digest first.

use std::sync::Mutex;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use md5::{Digest as _, Md5};
use sha1::Sha1;
use sha2::Sha256;

use crate::error::{Error, Result};

/// The minimum iteration count the auth specification requires (downgrade protection).
pub(crate) const MIN_ITERATIONS: u32 = 4096;
/// The largest iteration count a server may ask for. Each iteration is one HMAC, so the count
/// is CPU time the server makes the client spend per authentication: a hostile server asking
/// for 2^32 - 1 would pin a core for over an hour at a microsecond per HMAC. MongoDB's
/// defaults are 10,000 (SHA-1) and 15,000 (SHA-256); the cap leaves room for an administrator
/// who raises them, past OWASP's 2023 advice of 600,000 for PBKDF2-HMAC-SHA256, while
/// bounding the work a server can demand to 4,295 times less than the largest count.
pub(crate) const MAX_ITERATIONS: u32 = 1_000_000;

/// Which SCRAM hash function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScramVariant {
    /// SCRAM-SHA-1 with MongoDB's hashed password.
    Sha1,
    /// SCRAM-SHA-256 with a SASLprepped password.
    Sha256,
}

impl ScramVariant {
    /// The SASL mechanism name.
    pub(crate) fn mechanism_name(self) -> &'static str {
        match self {
            ScramVariant::Sha1 => "SCRAM-SHA-1",
            ScramVariant::Sha256 => "SCRAM-SHA-256",
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC accepts keys of any length, so `new_from_slice` cannot fail; the fallback keeps
        // this function total without a panic path.
        match self {
            ScramVariant::Sha1 => match Hmac::<Sha1>::new_from_slice(key) {
                Ok(mut mac) => {
                    mac.update(data);
                    mac.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            },
            ScramVariant::Sha256 => match Hmac::<Sha256>::new_from_slice(key) {
                Ok(mut mac) => {
                    mac.update(data);
                    mac.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            },
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramVariant::Sha1 => Sha1::digest(data).to_vec(),
            ScramVariant::Sha256 => Sha256::digest(data).to_vec(),
        }
    }

    /// `Hi()` of RFC 5802: PBKDF2 with this variant's HMAC.
    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramVariant::Sha1 => {
                let mut out = [0u8; 20];
                pbkdf2::pbkdf2_hmac::<Sha1>(password, salt, iterations, &mut out);
                out.to_vec()
            }
            ScramVariant::Sha256 => {
                let mut out = [0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out.to_vec()
            }
        }
    }

    /// The password as fed to `Hi()`: MongoDB's `hex(md5("user:mongo:pass"))` for SHA-1, the
    /// SASLprepped password for SHA-256.
    ///
    /// # Errors
    /// Authentication error when SASLprep rejects the password (prohibited characters).
    pub(crate) fn prepare_password(self, username: &str, password: &str) -> Result<String> {
        match self {
            ScramVariant::Sha1 => {
                let digest = Md5::digest(format!("{username}:mongo:{password}").as_bytes());
                Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
            }
            ScramVariant::Sha256 => stringprep::saslprep(password)
                .map(|p| p.into_owned())
                .map_err(|_| {
                    Error::authentication(
                        "the password contains characters that SASLprep prohibits",
                    )
                }),
        }
    }
}

/// Remembers the last salted password so that opening a new connection does not redo thousands
/// of PBKDF2 iterations (the auth specification's SCRAM credential cache). One cache belongs to
/// one credential, so the key is the variant, salt and iteration count.
#[derive(Default)]
pub(crate) struct ScramCache {
    entry: Mutex<Option<CacheEntry>>,
}

struct CacheEntry {
    variant: ScramVariant,
    salt: Vec<u8>,
    iterations: u32,
    salted_password: Vec<u8>,
}

impl ScramCache {
    fn get(&self, variant: ScramVariant, salt: &[u8], iterations: u32) -> Option<Vec<u8>> {
        let guard = self.entry.lock().ok()?;
        guard
            .as_ref()
            .filter(|e| e.variant == variant && e.salt == salt && e.iterations == iterations)
            .map(|e| e.salted_password.clone())
    }

    fn put(&self, variant: ScramVariant, salt: &[u8], iterations: u32, salted: &[u8]) {
        if let Ok(mut guard) = self.entry.lock() {
            *guard = Some(CacheEntry {
                variant,
                salt: salt.to_vec(),
                iterations,
                salted_password: salted.to_vec(),
            });
        }
    }
}

impl std::fmt::Debug for ScramCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScramCache { .. }")
    }
}

/// The first step: the client-first message, remembering what the next step needs.
#[derive(Clone, Debug)]
pub(crate) struct ClientFirst {
    variant: ScramVariant,
    client_nonce: String,
    bare: String,
}

impl ClientFirst {
    /// Builds `n,,n=<user>,r=<nonce>` (no channel binding, as the spec requires).
    pub(crate) fn new(variant: ScramVariant, username: &str, client_nonce: &str) -> Self {
        let escaped = username.replace('=', "=3D").replace(',', "=2C");
        ClientFirst {
            variant,
            client_nonce: client_nonce.to_string(),
            bare: format!("n={escaped},r={client_nonce}"),
        }
    }

    /// The variant this conversation uses.
    pub(crate) fn variant(&self) -> ScramVariant {
        self.variant
    }

    /// The bytes of the client-first message.
    pub(crate) fn message(&self) -> Vec<u8> {
        format!("n,,{}", self.bare).into_bytes()
    }

    /// Processes the server-first message and computes the client-final message.
    ///
    /// # Errors
    /// Authentication error when the server message is malformed, carries a mandatory
    /// extension, a nonce that does not extend ours, a salt that is not base64, or an iteration
    /// count below 4096 or above [`MAX_ITERATIONS`].
    ///
    /// Runs PBKDF2 (unless the cache holds the result): CPU-bound, so async callers run it
    /// on a blocking thread.
    pub(crate) fn handle_server_first(
        self,
        prepared_password: &str,
        server_first: &[u8],
        cache: Option<&ScramCache>,
    ) -> Result<ClientFinal> {
        let server_first = std::str::from_utf8(server_first)
            .map_err(|_| Error::authentication("the server-first SCRAM message is not UTF-8"))?;
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for (index, attribute) in server_first.split(',').enumerate() {
            let (name, value) = attribute.split_once('=').ok_or_else(|| {
                Error::authentication("malformed attribute in the server-first SCRAM message")
            })?;
            match name {
                "m" if index == 0 => {
                    return Err(Error::authentication(
                        "the server requires a SCRAM extension this driver does not support",
                    ));
                }
                "r" => nonce = Some(value),
                "s" => salt = Some(value),
                "i" => iterations = Some(value),
                _ => {}
            }
        }
        let missing =
            |what| Error::authentication(format!("the server-first SCRAM message has no {what}"));
        let nonce = nonce.ok_or_else(|| missing("nonce"))?;
        let salt = salt.ok_or_else(|| missing("salt"))?;
        let iterations = iterations.ok_or_else(|| missing("iteration count"))?;
        if !nonce.starts_with(&self.client_nonce) || nonce.len() == self.client_nonce.len() {
            return Err(Error::authentication(
                "the server nonce does not extend the client nonce",
            ));
        }
        let salt = BASE64
            .decode(salt)
            .map_err(|_| Error::authentication("the SCRAM salt is not valid base64"))?;
        let iterations: u32 = iterations
            .parse()
            .map_err(|_| Error::authentication("the SCRAM iteration count is not a number"))?;
        if iterations < MIN_ITERATIONS {
            return Err(Error::authentication(format!(
                "the server asked for {iterations} SCRAM iterations; at least {MIN_ITERATIONS} are required"
            )));
        }
        if iterations > MAX_ITERATIONS {
            return Err(Error::authentication(format!(
                "the server asked for {iterations} SCRAM iterations; this driver computes at most {MAX_ITERATIONS}"
            )));
        }

        let variant = self.variant;
        let salted = match cache.and_then(|c| c.get(variant, &salt, iterations)) {
            Some(salted) => salted,
            None => {
                let salted =
                    variant.salted_password(prepared_password.as_bytes(), &salt, iterations);
                if let Some(cache) = cache {
                    cache.put(variant, &salt, iterations, &salted);
                }
                salted
            }
        };
        // "biws" is base64("n,,"): the GS2 header without channel binding.
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.bare);
        let client_key = variant.hmac(&salted, b"Client Key");
        let stored_key = variant.hash(&client_key);
        let client_signature = variant.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = variant.hmac(&salted, b"Server Key");
        let server_signature = variant.hmac(&server_key, auth_message.as_bytes());
        Ok(ClientFinal {
            message: format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes(),
            expected_server_signature: server_signature,
        })
    }
}

/// The second step: the client-final message and the server signature it must be answered with.
pub(crate) struct ClientFinal {
    message: Vec<u8>,
    expected_server_signature: Vec<u8>,
}

impl std::fmt::Debug for ClientFinal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The message carries the client proof: never print it.
        f.write_str("ClientFinal { .. }")
    }
}

impl ClientFinal {
    /// The bytes of the client-final message.
    pub(crate) fn message(&self) -> &[u8] {
        &self.message
    }

    /// Checks the server-final message `v=<signature>` (or reports the server's `e=` error).
    ///
    /// # Errors
    /// Authentication error when the server reports an error, the message is malformed, or the
    /// signature does not prove that the server knows the password.
    pub(crate) fn verify_server_final(&self, server_final: &[u8]) -> Result<()> {
        let text = std::str::from_utf8(server_final)
            .map_err(|_| Error::authentication("the server-final SCRAM message is not UTF-8"))?;
        let first = text.split(',').next().unwrap_or_default();
        if let Some(error) = first.strip_prefix("e=") {
            return Err(Error::authentication(format!(
                "the server rejected the SCRAM proof: {error}"
            )));
        }
        let signature = first.strip_prefix("v=").ok_or_else(|| {
            Error::authentication("the server-final SCRAM message has no verifier")
        })?;
        let signature = BASE64
            .decode(signature)
            .map_err(|_| Error::authentication("the SCRAM server signature is not valid base64"))?;
        if !constant_time_eq(&signature, &self.expected_server_signature) {
            return Err(Error::authentication(
                "the server's SCRAM signature is wrong: the server could not prove it knows the password",
            ));
        }
        Ok(())
    }
}

/// Comparison whose duration does not depend on where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests;
