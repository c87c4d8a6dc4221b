use super::*;

fn run(
    variant: ScramVariant,
    prepared: &str,
    nonce: &str,
    server_first: &str,
) -> (ClientFirst, ClientFinal) {
    let first = ClientFirst::new(variant, "user", nonce);
    let kept = first.clone();
    let last = first
        .handle_server_first(prepared, server_first.as_bytes(), None)
        .expect("valid server-first message");
    (kept, last)
}

#[test]
fn rfc5802_sha1_vector_with_raw_password() {
    let (first, last) = run(
        ScramVariant::Sha1,
        "pencil",
        "fyko+d2lbbFgONRv9qkxdawL",
        "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    );
    assert_eq!(first.message(), b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL");
    assert_eq!(
        last.message(),
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    );
    last.verify_server_final(b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")
        .expect("the RFC's server signature verifies");
}

#[test]
fn mongodb_sha1_conversation_uses_the_hashed_password() {
    let prepared = ScramVariant::Sha1
        .prepare_password("user", "pencil")
        .expect("sha1 preparation never fails");
    assert_eq!(prepared.len(), 32, "hex of an MD5 digest");
    let (_, last) = run(
        ScramVariant::Sha1,
        &prepared,
        "fyko+d2lbbFgONRv9qkxdawL",
        "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000",
    );
    assert_eq!(
        last.message(),
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,p=MC2T8BvbmWRckDw8oWl5IVghwCY="
    );
    last.verify_server_final(b"v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=")
        .expect("server signature verifies");
}

#[test]
fn rfc7677_sha256_vector() {
    let prepared = ScramVariant::Sha256
        .prepare_password("user", "pencil")
        .expect("ascii password");
    let (first, last) = run(
        ScramVariant::Sha256,
        &prepared,
        "rOprNGfwEbeRWgbNEkqO",
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    );
    assert_eq!(first.message(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    assert_eq!(
        last.message(),
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    last.verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        .expect("server signature verifies");
}

#[test]
fn wrong_server_signature_is_rejected() {
    let (_, last) = run(
        ScramVariant::Sha256,
        "pencil",
        "rOprNGfwEbeRWgbNEkqO",
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    );
    // Same length as the real signature, one byte different.
    let err = last
        .verify_server_final(b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        .unwrap_err();
    assert!(err.is_authentication_error());
    assert!(err.to_string().contains("signature is wrong"), "{err}");
    let err = last.verify_server_final(b"e=invalid-proof").unwrap_err();
    assert!(err.to_string().contains("invalid-proof"), "{err}");
    assert!(last.verify_server_final(b"x=abc").is_err());
    assert!(last.verify_server_final(b"v=not base64!").is_err());
}

#[test]
fn low_iteration_count_is_rejected() {
    let first = ClientFirst::new(ScramVariant::Sha256, "user", "abc");
    let err = first
        .handle_server_first(
            "pencil",
            b"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095",
            None,
        )
        .unwrap_err();
    assert!(err.to_string().contains("4095"), "{err}");
}

#[test]
fn malformed_server_first_messages_are_rejected() {
    let cases: [&[u8]; 8] = [
        b"m=ext,r=abcdef,s=QSXCR+Q6sek8bf92,i=4096",
        b"r=xyzdef,s=QSXCR+Q6sek8bf92,i=4096",
        b"r=abc,s=QSXCR+Q6sek8bf92,i=4096",
        b"r=abcdef,s=***,i=4096",
        b"r=abcdef,s=QSXCR+Q6sek8bf92,i=many",
        b"r=abcdef,i=4096",
        b"garbage",
        b"\xff\xfe",
    ];
    for case in cases {
        let first = ClientFirst::new(ScramVariant::Sha1, "user", "abc");
        let result = first.handle_server_first("pencil", case, None);
        assert!(
            result.as_ref().is_err_and(|e| e.is_authentication_error()),
            "{:?} should be rejected",
            String::from_utf8_lossy(case)
        );
    }
}

#[test]
fn usernames_are_escaped_but_not_normalised() {
    let first = ClientFirst::new(ScramVariant::Sha256, "a=b,c\u{2168}", "n");
    assert_eq!(first.message(), "n,,n=a=3Db=2Cc\u{2168},r=n".as_bytes());
}

#[test]
fn sha256_passwords_are_saslprepped() {
    let v = ScramVariant::Sha256;
    assert_eq!(v.prepare_password("IX", "I\u{00AD}X").unwrap(), "IX");
    assert_eq!(v.prepare_password("x", "\u{2168}").unwrap(), "IX");
    assert!(
        v.prepare_password("x", "a\u{0007}b").is_err(),
        "control characters are prohibited"
    );
    // SHA-1 passwords are digested, never SASLprepped.
    assert_ne!(
        ScramVariant::Sha1
            .prepare_password("IX", "I\u{00AD}X")
            .unwrap(),
        ScramVariant::Sha1.prepare_password("IX", "IX").unwrap()
    );
}

#[test]
fn cache_reuses_salted_password_only_for_same_parameters() {
    let cache = ScramCache::default();
    let server_first =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    let first = ClientFirst::new(ScramVariant::Sha256, "user", "rOprNGfwEbeRWgbNEkqO");
    let a = first
        .clone()
        .handle_server_first("pencil", server_first.as_bytes(), Some(&cache))
        .unwrap();
    assert!(
        cache
            .get(
                ScramVariant::Sha256,
                &BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap(),
                4096
            )
            .is_some()
    );
    assert!(cache.get(ScramVariant::Sha256, b"other", 4096).is_none());
    assert!(
        cache
            .get(
                ScramVariant::Sha1,
                &BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap(),
                4096
            )
            .is_none()
    );
    let b = first
        .handle_server_first("pencil", server_first.as_bytes(), Some(&cache))
        .unwrap();
    assert_eq!(a.message(), b.message());
    b.verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
        .unwrap();
}

#[test]
fn iteration_counts_above_the_cap_are_refused_before_any_work() {
    // Just over the cap first: without the cap it would be computed and accepted, so the test
    // fails in seconds instead of spending hours on u32::MAX.
    let just_over = MAX_ITERATIONS + 1;
    for iterations in [just_over, u32::MAX] {
        let first = ClientFirst::new(ScramVariant::Sha256, "user", "abc");
        let server_first = format!("r=abcdef,s=QSXCR+Q6sek8bf92,i={iterations}");
        let error = first
            .handle_server_first("pencil", server_first.as_bytes(), None)
            .expect_err("over the cap");
        assert!(error.is_authentication_error(), "{error}");
        assert!(
            error.to_string().contains(&iterations.to_string()),
            "{error}"
        );
    }
}
