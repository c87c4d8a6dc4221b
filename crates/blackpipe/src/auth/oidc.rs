//! MONGODB-OIDC as mongod does it, with blackpipe as its own identity provider: a test issuer
//! with an ES256 key pair (generated at start, or given) that mints access tokens, and the
//! server side of the conversation: `saslStart` with `{jwt}` (one step), or with `{n}` (the
//! human flow's first step, answered with the IdP information) followed by `saslContinue`
//! with `{jwt}`. A token is accepted when its ES256 signature verifies with the issuer's key
//! and its `iss`, `aud` and `exp` hold against the deployment's clock (the wall clock plus an
//! offset a test can advance); the principal claim names the `$external` user. Anything else
//! is mongod's AuthenticationFailed (18).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
    UnparsedPublicKey,
};
use serde_json::{Map, Value, json};

use super::error::AuthError;
use super::{MAX_CONVERSATIONS_PER_CONNECTION, MAX_PAYLOAD_BYTES};

/// The mechanism's name.
pub const MECHANISM: &str = "MONGODB-OIDC";

/// The database OIDC users live in.
pub const EXTERNAL_DB: &str = "$external";

/// The only algorithm the test issuer signs and accepts.
const ALGORITHM: &str = "ES256";

/// mongod numbers the only conversation of a connection 1.
const CONVERSATION_ID: i32 = 1;

/// How the test identity provider is set up. `Debug` does not show the key.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OidcConfig {
    /// The `iss` tokens must carry (and the IdP information's `issuer`).
    pub issuer: String,
    /// The `aud` tokens must carry.
    pub audience: String,
    /// The claim that names the user (`sub` by default).
    pub principal_claim: String,
    /// The client id the IdP information announces.
    pub client_id: String,
    /// The signing key as PKCS#8 (P-256); `None` generates one when the deployment starts.
    pub key_pkcs8: Option<Vec<u8>>,
}

impl Default for OidcConfig {
    fn default() -> Self {
        OidcConfig {
            issuer: "https://blackpipe.test/oidc".into(),
            audience: "blackpipe".into(),
            principal_claim: "sub".into(),
            client_id: "blackpipe-client".into(),
            key_pkcs8: None,
        }
    }
}

impl std::fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcConfig")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("principal_claim", &self.principal_claim)
            .field("client_id", &self.client_id)
            .field("key_pkcs8", &self.key_pkcs8.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// The test issuer: signs tokens and verifies the ones clients present.
pub struct OidcIssuer {
    config: OidcConfig,
    key: EcdsaKeyPair,
    rng: SystemRandom,
    /// Seconds added to the wall clock: the deployment's clock, as `exp` checks see it.
    clock_offset: AtomicI64,
}

impl std::fmt::Debug for OidcIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcIssuer")
            .field("config", &self.config)
            .field("clock_offset", &self.clock_offset.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A token the issuer accepted: who it names and until when (Unix seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    /// The principal claim's value: the `$external` user.
    pub principal: String,
    /// The `exp` claim.
    pub expires_at: i64,
}

impl OidcIssuer {
    /// The issuer of `config`, generating a key pair when none is given.
    ///
    /// # Errors
    /// [`AuthError::InvalidUser`] naming the issuer when the key is not a P-256 PKCS#8 key or
    /// the system's random generator fails.
    pub fn new(config: OidcConfig) -> Result<Self, AuthError> {
        let rng = SystemRandom::new();
        let invalid = |reason: &str| AuthError::InvalidUser {
            user: format!("OIDC issuer {}", config.issuer),
            reason: reason.to_owned(),
        };
        let pkcs8 = match &config.key_pkcs8 {
            Some(pkcs8) => pkcs8.clone(),
            None => EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                .map_err(|_| invalid("cannot generate a P-256 key"))?
                .as_ref()
                .to_vec(),
        };
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng)
            .map_err(|_| invalid("the key is not a P-256 PKCS#8 key"))?;
        Ok(OidcIssuer {
            config,
            key,
            rng,
            clock_offset: AtomicI64::new(0),
        })
    }

    /// The configuration the issuer runs with.
    pub fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// The deployment's clock in Unix seconds: the wall clock plus the offset.
    pub fn now(&self) -> i64 {
        let wall = bson::DateTime::now().timestamp_millis() / 1000;
        wall.saturating_add(self.clock_offset.load(Ordering::Relaxed))
    }

    /// Moves the deployment's clock forward, so that tokens expire without waiting.
    pub fn advance_clock(&self, by: Duration) {
        let seconds = i64::try_from(by.as_secs()).unwrap_or(i64::MAX);
        let _ = self
            .clock_offset
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |offset| {
                Some(offset.saturating_add(seconds))
            });
    }

    /// A token for `principal`, valid for `lifetime` from the deployment's clock.
    pub fn mint(&self, principal: &str, lifetime: Duration) -> String {
        let lifetime = i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX);
        let now = self.now();
        let mut claims = Map::new();
        claims.insert("iss".into(), json!(self.config.issuer));
        claims.insert("aud".into(), json!(self.config.audience));
        claims.insert("iat".into(), json!(now));
        claims.insert("exp".into(), json!(now.saturating_add(lifetime)));
        claims.insert(self.config.principal_claim.clone(), json!(principal));
        self.sign(&Value::Object(claims))
    }

    /// A token with exactly these claims (tests forge wrong issuers, audiences or expiries).
    pub fn sign(&self, claims: &Value) -> String {
        let header = json!({ "alg": ALGORITHM, "typ": "JWT" });
        let signing_input = format!(
            "{}.{}",
            BASE64URL.encode(header.to_string()),
            BASE64URL.encode(claims.to_string())
        );
        // Signing with a valid key fails only if the system generator does; the token is
        // then unsigned and every server refuses it, which is what a test would notice.
        let signature = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map(|s| BASE64URL.encode(s.as_ref()))
            .unwrap_or_default();
        format!("{signing_input}.{signature}")
    }

    /// Checks `jwt`: structure, algorithm, signature, `iss`, `aud`, `exp` and the principal.
    ///
    /// # Errors
    /// [`AuthError::Failed`] for any token that does not hold (the reply never says why, as
    /// mongod's does not).
    pub fn verify(&self, jwt: &str) -> Result<VerifiedToken, AuthError> {
        let mut parts = jwt.split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AuthError::Failed);
        };
        let header = decode_json(header)?;
        if header.get("alg").and_then(Value::as_str) != Some(ALGORITHM) {
            return Err(AuthError::Failed);
        }
        let signature = BASE64URL.decode(signature).map_err(|_| AuthError::Failed)?;
        let (signing_input, _) = jwt.rsplit_once('.').ok_or(AuthError::Failed)?;
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.key.public_key().as_ref())
            .verify(signing_input.as_bytes(), &signature)
            .map_err(|_| AuthError::Failed)?;
        let claims = decode_json(claims)?;
        self.check_claims(&claims)
    }

    fn check_claims(&self, claims: &Map<String, Value>) -> Result<VerifiedToken, AuthError> {
        if claims.get("iss").and_then(Value::as_str) != Some(self.config.issuer.as_str()) {
            return Err(AuthError::Failed);
        }
        let audience_matches = match claims.get("aud") {
            Some(Value::String(aud)) => *aud == self.config.audience,
            Some(Value::Array(auds)) => auds
                .iter()
                .any(|a| a.as_str() == Some(self.config.audience.as_str())),
            _ => false,
        };
        if !audience_matches {
            return Err(AuthError::Failed);
        }
        let expires_at = claims
            .get("exp")
            .and_then(Value::as_i64)
            .ok_or(AuthError::Failed)?;
        if expires_at <= self.now() {
            return Err(AuthError::Failed);
        }
        let principal = claims
            .get(&self.config.principal_claim)
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .ok_or(AuthError::Failed)?;
        Ok(VerifiedToken {
            principal: principal.to_owned(),
            expires_at,
        })
    }

    /// The IdP information of the human flow's first step.
    pub fn idp_info(&self) -> Document {
        doc! {
            "issuer": self.config.issuer.clone(),
            "clientId": self.config.client_id.clone(),
        }
    }
}

/// A base64url JSON object of a JWT.
fn decode_json(part: &str) -> Result<Map<String, Value>, AuthError> {
    let bytes = BASE64URL.decode(part).map_err(|_| AuthError::Failed)?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(AuthError::Failed),
    }
}

/// One connection's OIDC state (kept in the connection's extensions beside the SCRAM state).
#[derive(Debug, Clone, Default)]
pub struct OidcConnection {
    /// The human flow's first step was answered: `saslContinue` with `{jwt}` comes next.
    awaiting_jwt: bool,
    conversations_started: u32,
    /// When the token the connection authenticated with expires (Unix seconds).
    expires_at: Option<i64>,
}

/// What a step did: the reply, and the user it authenticated (if it finished).
#[derive(Debug)]
pub struct Step {
    /// The reply document.
    pub reply: Document,
    /// The `$external` user the connection authenticated as, when the step finished.
    pub principal: Option<String>,
}

impl OidcConnection {
    /// Whether the token the connection authenticated with has expired at `now`.
    pub fn is_expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|exp| exp <= now)
    }

    /// Whether a `saslContinue` belongs to an OIDC conversation.
    pub fn is_awaiting_jwt(&self) -> bool {
        self.awaiting_jwt
    }

    /// Runs a `saslStart` (or the body of `speculativeAuthenticate`) for MONGODB-OIDC.
    pub fn start(&mut self, issuer: &OidcIssuer, command: &Document) -> Step {
        let result = if self.conversations_started >= MAX_CONVERSATIONS_PER_CONNECTION {
            Err(AuthError::TooManyConversations)
        } else {
            self.conversations_started += 1;
            self.awaiting_jwt = false;
            payload(command).and_then(|payload| self.first_step(issuer, &payload))
        };
        self.finish(result)
    }

    /// Runs a `saslContinue` carrying `{jwt}` after the human flow's first step.
    pub fn proceed(&mut self, issuer: &OidcIssuer, command: &Document) -> Step {
        let result = if !std::mem::take(&mut self.awaiting_jwt) {
            Err(AuthError::NoConversation)
        } else {
            payload(command).and_then(|payload| self.accept_jwt(issuer, &payload))
        };
        self.finish(result)
    }

    fn first_step(
        &mut self,
        issuer: &OidcIssuer,
        payload: &Document,
    ) -> Result<(Document, Option<String>), AuthError> {
        if payload.contains_key("jwt") {
            return self.accept_jwt(issuer, payload);
        }
        match payload.get("n") {
            None | Some(Bson::String(_)) => {
                self.awaiting_jwt = true;
                Ok((step_reply(false, &issuer.idp_info()), None))
            }
            Some(_) => Err(AuthError::malformed("n must be a string")),
        }
    }

    fn accept_jwt(
        &mut self,
        issuer: &OidcIssuer,
        payload: &Document,
    ) -> Result<(Document, Option<String>), AuthError> {
        let jwt = payload
            .get_str("jwt")
            .map_err(|_| AuthError::malformed("jwt must be a string"))?;
        let verified = issuer.verify(jwt)?;
        self.expires_at = Some(verified.expires_at);
        Ok((step_reply(true, &Document::new()), Some(verified.principal)))
    }

    fn finish(&mut self, result: Result<(Document, Option<String>), AuthError>) -> Step {
        match result {
            Ok((reply, principal)) => Step { reply, principal },
            Err(error) => {
                self.awaiting_jwt = false;
                Step {
                    reply: error.to_reply(),
                    principal: None,
                }
            }
        }
    }
}

/// A step's reply: `{conversationId, done, payload}` with a BSON payload (empty when done).
fn step_reply(done: bool, payload: &Document) -> Document {
    let mut bytes = Vec::new();
    if !payload.is_empty() {
        // A document built here from strings always encodes.
        let _ = payload.to_writer(&mut bytes);
    }
    doc! {
        "conversationId": CONVERSATION_ID,
        "done": done,
        "payload": Binary { subtype: BinarySubtype::Generic, bytes },
    }
}

/// The BSON document in a SASL command's `payload`, bounded by [`MAX_PAYLOAD_BYTES`].
fn payload(command: &Document) -> Result<Document, AuthError> {
    let bytes = match command.get("payload") {
        Some(Bson::Binary(binary)) => &binary.bytes,
        _ => return Err(AuthError::malformed("payload must be BinData")),
    };
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(AuthError::malformed(format!(
            "payload of {} bytes exceeds {MAX_PAYLOAD_BYTES}",
            bytes.len()
        )));
    }
    Document::from_reader(bytes.as_slice())
        .map_err(|_| AuthError::malformed("payload is not a BSON document"))
}

#[cfg(test)]
mod tests;
