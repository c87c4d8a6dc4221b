//! MONGODB-X509: the `authenticate` command (and its speculative form inside `hello`) on
//! `$external`. The user is the subject of the certificate the client presented in the TLS
//! handshake, in RFC 2253 / RFC 4514 form as mongod writes it (last RDN first, `,` between RDNs,
//! `+` inside one, special characters escaped); that user must exist in `$external`.

use std::fmt::Write as _;

use bson::{Document, doc};
use x509_parser::der_parser::asn1_rs::ToDer as _;
use x509_parser::prelude::{FromDer as _, X509Certificate};
use x509_parser::x509::AttributeTypeAndValue;

use super::error::AuthError;
use super::session::ConnectionAuth;
use super::users::{EXTERNAL_DB, Users};

/// The mechanism's name in `authenticate`.
pub(super) const MECHANISM: &str = "MONGODB-X509";

/// The attribute keywords RFC 2253 defines; any other attribute is written as its dotted OID.
const KEYWORDS: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.6", "C"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// The subject of the DER certificate `der` in RFC 2253 form.
///
/// # Errors
/// [`AuthError::Malformed`] when `der` is not a certificate (the TLS layer has verified it, so
/// this would be a certificate x509-parser cannot read).
pub fn subject_name(der: &[u8]) -> Result<String, AuthError> {
    let (_, certificate) = X509Certificate::from_der(der)
        .map_err(|e| AuthError::malformed(format!("cannot read the client certificate: {e}")))?;
    let mut rdns: Vec<String> = Vec::new();
    for rdn in certificate.subject().iter_rdn() {
        let attributes: Vec<String> = rdn.iter().map(attribute).collect();
        rdns.push(attributes.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

/// `TYPE=value`: a keyword or dotted OID, then the escaped string, or `#` and the hex of the
/// value's DER when it is not a string type this parser reads.
fn attribute(attribute: &AttributeTypeAndValue<'_>) -> String {
    let oid = attribute.attr_type().to_id_string();
    let name = KEYWORDS
        .iter()
        .find(|(dotted, _)| *dotted == oid)
        .map_or(oid.clone(), |(_, keyword)| (*keyword).to_owned());
    match attribute.as_str() {
        Ok(text) => format!("{name}={}", escape(text)),
        Err(_) => {
            let der = attribute.attr_value().to_der_vec().unwrap_or_default();
            let mut hex = String::with_capacity(der.len() * 2);
            for byte in der {
                let _ = write!(hex, "{byte:02x}");
            }
            format!("{name}=#{hex}")
        }
    }
}

/// RFC 4514 section 2.4: `"+,;<>\` and NUL always, `#` or a space first, a space last.
pub(crate) fn escape(value: &str) -> String {
    let last = value.chars().count().saturating_sub(1);
    let mut out = String::with_capacity(value.len());
    for (index, c) in value.chars().enumerate() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\0' => out.push_str("\\00"),
            '#' if index == 0 => out.push_str("\\#"),
            ' ' if index == 0 || index == last => out.push_str("\\ "),
            _ => out.push(c),
        }
    }
    out
}

/// Checks one MONGODB-X509 request (`authenticate` or the speculative document) and returns
/// the user it authenticates.
fn check(
    users: &Users,
    db: &str,
    command: &Document,
    certificate: Option<&[u8]>,
) -> Result<String, AuthError> {
    if db != EXTERNAL_DB {
        return Err(AuthError::X509OutsideExternal);
    }
    let subject = subject_name(certificate.ok_or(AuthError::NoClientCertificate)?)?;
    if let Ok(named) = command.get_str("user")
        && named != subject
    {
        return Err(AuthError::X509UserMismatch);
    }
    if !users.contains(EXTERNAL_DB, &subject) {
        return Err(AuthError::Failed);
    }
    Ok(subject)
}

impl ConnectionAuth {
    /// Runs `authenticate` sent to `db`: MONGODB-X509 only, as mongod. Returns the reply
    /// (`{dbname, user}` or an error reply).
    pub fn authenticate(
        &mut self,
        users: &Users,
        db: &str,
        command: &Document,
        certificate: Option<&[u8]>,
    ) -> Document {
        self.x509_step(users, db, command, certificate)
            .unwrap_or_else(|error| error.to_reply())
    }

    /// The `speculativeAuthenticate` answer for a `hello` carrying a MONGODB-X509
    /// `authenticate`; `None` (mongod leaves the field out) when it fails, so the driver
    /// authenticates the ordinary way and sees the error then.
    pub fn speculative_x509(
        &mut self,
        users: &Users,
        hello: &Document,
        certificate: Option<&[u8]>,
    ) -> Option<Document> {
        let request = hello.get_document("speculativeAuthenticate").ok()?;
        if !request.contains_key("authenticate") {
            return None;
        }
        let db = request.get_str("db").unwrap_or(EXTERNAL_DB);
        self.x509_step(users, db, request, certificate).ok()
    }

    fn x509_step(
        &mut self,
        users: &Users,
        db: &str,
        command: &Document,
        certificate: Option<&[u8]>,
    ) -> Result<Document, AuthError> {
        self.count_attempt()?;
        match command.get_str("mechanism") {
            Ok(MECHANISM) => {}
            Ok(other) => return Err(AuthError::UnsupportedMechanism(other.to_owned())),
            Err(_) => return Err(AuthError::malformed("Auth mechanism not specified")),
        }
        let user = check(users, db, command, certificate)?;
        let reply = doc! { "dbname": EXTERNAL_DB, "user": user.clone() };
        self.set_user(EXTERNAL_DB, user);
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;
    use steadfast_test_support::pki::{DnType, TestPki};

    use super::*;
    use crate::auth::{User, Users};

    fn users() -> Users {
        Users::new(&[User::external("CN=app,O=Example")], &mut rand::rng()).unwrap()
    }

    fn certificate(pki: &TestPki, common_name: &str) -> Vec<u8> {
        pki.client(&[
            (DnType::OrganizationName, "Example"),
            (DnType::CommonName, common_name),
        ])
        .der
    }

    #[test]
    fn the_subject_is_written_last_rdn_first_with_special_characters_escaped() {
        let pki = TestPki::new();
        assert_eq!(
            subject_name(&certificate(&pki, "app")).unwrap(),
            "CN=app,O=Example"
        );
        assert_eq!(
            subject_name(&certificate(&pki, "a,b+c")).unwrap(),
            "CN=a\\,b\\+c,O=Example"
        );
        assert!(subject_name(b"not a certificate").is_err());
    }

    #[test]
    fn escaping_follows_rfc_4514() {
        assert_eq!(escape("plain"), "plain");
        assert_eq!(escape("#lead"), "\\#lead");
        assert_eq!(escape("mid#dle"), "mid#dle");
        assert_eq!(escape(" both "), "\\ both\\ ");
        assert_eq!(escape("q\"<>;\\"), "q\\\"\\<\\>\\;\\\\");
        assert_eq!(escape("nul\0"), "nul\\00");
    }

    #[test]
    fn authenticate_checks_database_certificate_named_user_and_existence() {
        let pki = TestPki::new();
        let users = users();
        let cert = certificate(&pki, "app");
        let command = doc! { "authenticate": 1, "mechanism": "MONGODB-X509" };
        let code = |reply: Document| reply.get_i32("code").ok();

        let mut auth = ConnectionAuth::default();
        assert_eq!(
            code(auth.authenticate(&users, "admin", &command, Some(&cert))),
            Some(17)
        );
        assert_eq!(
            code(auth.authenticate(&users, EXTERNAL_DB, &command, None)),
            Some(18)
        );
        let mut named = command.clone();
        named.insert("user", "CN=other");
        assert_eq!(
            code(auth.authenticate(&users, EXTERNAL_DB, &named, Some(&cert))),
            Some(18)
        );
        let stranger = certificate(&pki, "stranger");
        assert_eq!(
            code(auth.authenticate(&users, EXTERNAL_DB, &command, Some(&stranger))),
            Some(18)
        );
        let mut scram = command.clone();
        scram.insert("mechanism", "SCRAM-SHA-1");
        assert_eq!(
            code(auth.authenticate(&users, EXTERNAL_DB, &scram, Some(&cert))),
            Some(334)
        );
        assert!(!auth.is_authenticated());

        named.insert("user", "CN=app,O=Example");
        let reply = auth.authenticate(&users, EXTERNAL_DB, &named, Some(&cert));
        assert_eq!(
            reply,
            doc! { "dbname": "$external", "user": "CN=app,O=Example" }
        );
        assert_eq!(auth.user(), Some((EXTERNAL_DB, "CN=app,O=Example")));
    }

    #[test]
    fn speculative_x509_answers_only_when_it_succeeds() {
        let pki = TestPki::new();
        let users = users();
        let cert = certificate(&pki, "app");
        let hello = doc! {
            "hello": 1,
            "speculativeAuthenticate": {
                "authenticate": 1, "mechanism": "MONGODB-X509", "db": "$external"
            },
        };
        let mut auth = ConnectionAuth::default();
        assert_eq!(auth.speculative_x509(&users, &hello, None), None);
        assert!(!auth.is_authenticated());
        assert_eq!(
            auth.speculative_x509(&users, &hello, Some(&cert)),
            Some(doc! { "dbname": "$external", "user": "CN=app,O=Example" })
        );
        assert!(auth.is_authenticated());
    }
}
