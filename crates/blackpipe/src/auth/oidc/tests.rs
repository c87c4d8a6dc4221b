use serde_json::json;

use super::*;

fn issuer() -> OidcIssuer {
    OidcIssuer::new(OidcConfig::default()).expect("issuer")
}

fn jwt_command(token: &str) -> Document {
    let mut bytes = Vec::new();
    doc! { "jwt": token }.to_writer(&mut bytes).unwrap();
    doc! {
        "saslStart": 1,
        "mechanism": MECHANISM,
        "payload": Binary { subtype: BinarySubtype::Generic, bytes },
    }
}

#[test]
fn a_minted_token_verifies_and_names_its_principal() {
    let issuer = issuer();
    let token = issuer.mint("app", Duration::from_secs(60));
    let verified = issuer.verify(&token).expect("valid token");
    assert_eq!(verified.principal, "app");
    assert!(verified.expires_at > issuer.now());
}

#[test]
fn tokens_that_do_not_hold_are_refused() {
    let issuer = issuer();
    let other = OidcIssuer::new(OidcConfig::default()).unwrap();
    let now = issuer.now();
    let claims =
        |iss: &str, aud: &str, exp: i64| json!({"iss": iss, "aud": aud, "exp": exp, "sub": "u"});
    let good = issuer.config().issuer.clone();
    let forged = [
        other.mint("app", Duration::from_secs(60)),
        issuer.sign(&claims("https://elsewhere", "blackpipe", now + 60)),
        issuer.sign(&claims(&good, "someone-else", now + 60)),
        issuer.sign(&claims(&good, "blackpipe", now - 1)),
        issuer.sign(&json!({"iss": good, "aud": "blackpipe", "exp": now + 60})),
        "a.b".to_owned(),
        "a.b.c.d".to_owned(),
        String::new(),
    ];
    for token in forged {
        assert_eq!(issuer.verify(&token), Err(AuthError::Failed), "{token}");
    }
    // An unsigned token ("alg": "none") is refused whatever its claims.
    let token = issuer.mint("app", Duration::from_secs(60));
    let mut parts = token.split('.');
    let _header = parts.next();
    let claims_part = parts.next().unwrap();
    let none_header = BASE64URL.encode(r#"{"alg":"none"}"#);
    assert!(
        issuer
            .verify(&format!("{none_header}.{claims_part}."))
            .is_err()
    );
}

#[test]
fn an_advanced_clock_expires_tokens() {
    let issuer = issuer();
    let token = issuer.mint("app", Duration::from_secs(60));
    issuer.advance_clock(Duration::from_secs(61));
    assert_eq!(issuer.verify(&token), Err(AuthError::Failed));
}

#[test]
fn one_step_authenticates_and_bad_tokens_get_error_18() {
    let issuer = issuer();
    let mut connection = OidcConnection::default();
    let step = connection.start(
        &issuer,
        &jwt_command(&issuer.mint("app", Duration::from_secs(60))),
    );
    assert_eq!(step.principal.as_deref(), Some("app"));
    assert_eq!(step.reply.get_bool("done").ok(), Some(true));
    assert!(!connection.is_expired(issuer.now()));
    let step = connection.start(&issuer, &jwt_command("not.a.token"));
    assert_eq!(step.principal, None);
    assert_eq!(step.reply.get_i32("code").ok(), Some(18));
}

#[test]
fn the_human_first_step_returns_the_idp_info_then_takes_the_jwt() {
    let issuer = issuer();
    let mut connection = OidcConnection::default();
    let mut bytes = Vec::new();
    doc! { "n": "user" }.to_writer(&mut bytes).unwrap();
    let start = doc! {
        "saslStart": 1,
        "mechanism": MECHANISM,
        "payload": Binary { subtype: BinarySubtype::Generic, bytes },
    };
    let step = connection.start(&issuer, &start);
    assert_eq!(step.reply.get_bool("done").ok(), Some(false));
    let payload = step.reply.get_binary_generic("payload").unwrap();
    let info = Document::from_reader(payload.as_slice()).unwrap();
    assert_eq!(
        info.get_str("issuer").ok(),
        Some(issuer.config().issuer.as_str())
    );
    assert!(connection.is_awaiting_jwt());
    let token = issuer.mint("human", Duration::from_secs(60));
    let step = connection.proceed(&issuer, &jwt_command(&token));
    assert_eq!(step.principal.as_deref(), Some("human"));
    // A second continue has no conversation left.
    let step = connection.proceed(&issuer, &jwt_command(&token));
    assert_eq!(step.reply.get_i32("code").ok(), Some(17));
}

#[test]
fn hostile_payloads_get_typed_errors_and_conversations_are_bounded() {
    let issuer = issuer();
    let mut connection = OidcConnection::default();
    let oversized = doc! {
        "payload": Binary { subtype: BinarySubtype::Generic, bytes: vec![0; MAX_PAYLOAD_BYTES + 1] },
    };
    assert_eq!(
        connection
            .start(&issuer, &oversized)
            .reply
            .get_i32("code")
            .ok(),
        Some(2)
    );
    let garbage =
        doc! { "payload": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] } };
    assert_eq!(
        connection
            .start(&issuer, &garbage)
            .reply
            .get_i32("code")
            .ok(),
        Some(2)
    );
    for _ in 0..MAX_CONVERSATIONS_PER_CONNECTION {
        connection.start(&issuer, &jwt_command("x"));
    }
    let token = issuer.mint("app", Duration::from_secs(60));
    let step = connection.start(&issuer, &jwt_command(&token));
    assert_eq!(
        step.principal, None,
        "the bound holds even for a good token"
    );
}
