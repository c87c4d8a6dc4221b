use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bson::spec::BinarySubtype;
use bson::{Binary, Document, doc};
use rand::RngCore;
use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::scram::{self, ScramCredential};
use super::*;

/// Hands out scripted bytes (then zeros), so that salts and nonces match published examples.
struct Scripted(Vec<u8>);

impl RngCore for Scripted {
    fn next_u32(&mut self) -> u32 {
        let mut bytes = [0; 4];
        self.fill_bytes(&mut bytes);
        u32::from_le_bytes(bytes)
    }

    fn next_u64(&mut self) -> u64 {
        let mut bytes = [0; 8];
        self.fill_bytes(&mut bytes);
        u64::from_le_bytes(bytes)
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for byte in dst {
            *byte = if self.0.is_empty() {
                0
            } else {
                self.0.remove(0)
            };
        }
    }
}

fn bin(text: &str) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes: text.as_bytes().to_vec(),
    }
}

fn payload_text(reply: &Document) -> String {
    let bytes = &reply
        .get_binary_generic("payload")
        .expect("payload")
        .clone();
    String::from_utf8(bytes.clone()).expect("utf-8")
}

fn start(mechanism: &str, first: &str) -> Document {
    doc! { "saslStart": 1, "mechanism": mechanism, "payload": bin(first) }
}

fn cont(message: &str) -> Document {
    doc! { "saslContinue": 1, "conversationId": 1, "payload": bin(message) }
}

fn users(list: &[User]) -> Users {
    Users::new(list, &mut SmallRng::seed_from_u64(7)).expect("valid users")
}

/// Runs a whole SCRAM-SHA-256 exchange as a client would, with `password`; returns the
/// final reply.
fn client_exchange(
    auth: &mut ConnectionAuth,
    users: &Users,
    user: &str,
    password: &str,
) -> Document {
    let mut rng = SmallRng::seed_from_u64(1);
    let first_bare = format!("n={user},r=clientnonce");
    let mut command = start("SCRAM-SHA-256", &format!("n,,{first_bare}"));
    command.insert("options", doc! { "skipEmptyExchange": true });
    let reply = auth.sasl_start(users, "admin", &command, &mut rng);
    if reply.get_f64("ok").ok() == Some(0.0) {
        return reply;
    }
    let server_first = payload_text(&reply);
    let mut fields = server_first.split(',');
    let nonce = &fields.next().unwrap()[2..];
    let salt = BASE64.decode(&fields.next().unwrap()[2..]).unwrap();
    let iterations: u32 = fields.next().unwrap()[2..].parse().unwrap();
    let client =
        ScramCredential::derive(Mechanism::ScramSha256, user, password, salt, iterations).unwrap();
    let without_proof = format!("c=biws,r={nonce}");
    let auth_message = format!("{first_bare},{server_first},{without_proof}");
    // A client's proof: ClientKey XOR HMAC(StoredKey, AuthMessage). Recompute ClientKey
    // from the salted password the same way a driver does.
    let proof = client_proof(password, &client, &auth_message);
    auth.sasl_continue(&cont(&format!(
        "{without_proof},p={}",
        BASE64.encode(proof)
    )))
}

fn client_proof(password: &str, credential: &ScramCredential, auth_message: &str) -> Vec<u8> {
    use hmac::{Hmac, Mac};
    use sha2::{Digest, Sha256};
    let mut salted = [0u8; 32];
    let prepped = stringprep::saslprep(password).unwrap();
    pbkdf2::pbkdf2_hmac::<Sha256>(
        prepped.as_bytes(),
        &credential.salt,
        credential.iterations,
        &mut salted,
    );
    let mac = |key: &[u8], data: &[u8]| {
        Hmac::<Sha256>::new_from_slice(key)
            .unwrap()
            .chain_update(data)
            .finalize()
            .into_bytes()
            .to_vec()
    };
    let client_key = mac(&salted, b"Client Key");
    assert_eq!(Sha256::digest(&client_key).to_vec(), credential.stored_key);
    let signature = mac(&credential.stored_key, auth_message.as_bytes());
    client_key
        .iter()
        .zip(signature)
        .map(|(k, s)| k ^ s)
        .collect()
}

#[test]
fn sha1_conversation_matches_the_specification_example() {
    let salt = BASE64.decode("rQ9ZY3MntBeuP3E1TDVC4w==").unwrap();
    let server_nonce = BASE64.decode("Ho+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE").unwrap();
    let user = User::new("user", "pencil").with_mechanisms(vec![Mechanism::ScramSha1]);
    let users = Users::new(&[user], &mut Scripted(salt)).unwrap();
    let mut auth = ConnectionAuth::default();

    let first = start("SCRAM-SHA-1", "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL");
    let reply = auth.sasl_start(&users, "admin", &first, &mut Scripted(server_nonce));
    assert_eq!(reply.get_bool("done").ok(), Some(false), "{reply}");
    assert_eq!(
        payload_text(&reply),
        "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000"
    );

    let reply = auth.sasl_continue(&cont(
        "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,p=MC2T8BvbmWRckDw8oWl5IVghwCY=",
    ));
    assert_eq!(payload_text(&reply), "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=");
    assert_eq!(
        reply.get_bool("done").ok(),
        Some(false),
        "no skipEmptyExchange: one more round"
    );
    assert!(!auth.is_authenticated());

    let reply = auth.sasl_continue(&cont(""));
    assert_eq!(reply.get_bool("done").ok(), Some(true), "{reply}");
    assert_eq!(auth.user(), Some(("admin", "user")));
}

#[test]
fn sha256_proof_matches_the_specification_example() {
    let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let credential =
        ScramCredential::derive(Mechanism::ScramSha256, "user", "pencil", salt, 4096).unwrap();
    let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    let server_first = scram::server_first(nonce, &credential);
    assert_eq!(
        server_first,
        format!("r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    );
    let auth_message = format!("n=user,r=rOprNGfwEbeRWgbNEkqO,{server_first},c=biws,r={nonce}");
    let proof = BASE64
        .decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
        .unwrap();
    let server_final =
        scram::verify_proof(Mechanism::ScramSha256, &credential, &auth_message, &proof).unwrap();
    assert_eq!(
        server_final,
        "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    );

    let mut wrong = proof.clone();
    wrong[0] ^= 1;
    assert_eq!(
        scram::verify_proof(Mechanism::ScramSha256, &credential, &auth_message, &wrong),
        Err(AuthError::Failed)
    );
}

#[test]
fn a_client_with_the_right_password_authenticates_with_skip_empty_exchange() {
    let users = users(&[User::new("alice", "pässword")]);
    let mut auth = ConnectionAuth::default();
    let reply = client_exchange(&mut auth, &users, "alice", "pässword");
    assert_eq!(reply.get_bool("done").ok(), Some(true), "{reply}");
    assert_eq!(auth.user(), Some(("admin", "alice")));
}

#[test]
fn wrong_password_and_unknown_user_fail_alike_with_18() {
    let users = users(&[User::new("alice", "right")]);
    let mut wrong_password = ConnectionAuth::default();
    let wrong = client_exchange(&mut wrong_password, &users, "alice", "wrong");
    let mut unknown_user = ConnectionAuth::default();
    let unknown = client_exchange(&mut unknown_user, &users, "mallory", "right");
    for reply in [&wrong, &unknown] {
        assert_eq!(reply.get_i32("code").ok(), Some(18), "{reply}");
        assert_eq!(reply.get_str("codeName").ok(), Some("AuthenticationFailed"));
        assert_eq!(reply.get_str("errmsg").ok(), Some("Authentication failed."));
    }
    assert!(!wrong_password.is_authenticated() && !unknown_user.is_authenticated());
}

#[test]
fn a_user_is_found_only_in_its_own_database() {
    let users = users(&[User::new("alice", "pw").with_db("app")]);
    let mut auth = ConnectionAuth::default();
    let first = start("SCRAM-SHA-256", "n,,n=alice,r=abc");
    let reply = auth.sasl_start(&users, "admin", &first, &mut SmallRng::seed_from_u64(1));
    assert_eq!(reply.get_i32("code").ok(), Some(18));
    let reply = auth.sasl_start(&users, "app", &first, &mut SmallRng::seed_from_u64(1));
    assert_eq!(reply.get_bool("done").ok(), Some(false), "{reply}");
}

#[test]
fn conversations_per_connection_are_bounded() {
    let users = users(&[User::new("alice", "pw")]);
    let mut auth = ConnectionAuth::default();
    let first = start("SCRAM-SHA-256", "n,,n=alice,r=abc");
    let mut rng = SmallRng::seed_from_u64(1);
    for _ in 0..MAX_CONVERSATIONS_PER_CONNECTION {
        let reply = auth.sasl_start(&users, "admin", &first, &mut rng);
        assert_eq!(reply.get_bool("done").ok(), Some(false), "{reply}");
    }
    let reply = auth.sasl_start(&users, "admin", &first, &mut rng);
    assert_eq!(reply.get_i32("code").ok(), Some(18), "{reply}");
    assert!(reply.get_str("errmsg").ok().unwrap().contains("too many"));
}

#[test]
fn hostile_client_first_messages_get_typed_errors() {
    let users = users(&[User::new("alice", "pw")]);
    let long = format!("n,,n=alice,r={}", "x".repeat(MAX_PAYLOAD_BYTES));
    let hostile = [
        "",
        "n",
        "n,",
        "p=tls-unique,,n=alice,r=abc",
        "n,a=admin,n=alice,r=abc",
        "n,,r=abc",
        "n,,n=alice",
        "n,,n=alice,r=",
        "n,,n=al=ice,r=abc",
        "n,,n=al=2,r=abc",
        "n,,n=al=é,r=abc",
        "n,,n=alice,r=a b",
        long.as_str(),
    ];
    for message in hostile {
        let mut auth = ConnectionAuth::default();
        let reply = auth.sasl_start(
            &users,
            "admin",
            &start("SCRAM-SHA-256", message),
            &mut SmallRng::seed_from_u64(1),
        );
        assert_eq!(reply.get_i32("code").ok(), Some(2), "{message:?}: {reply}");
    }
    let mut auth = ConnectionAuth::default();
    let not_utf8 = doc! {
        "saslStart": 1, "mechanism": "SCRAM-SHA-1",
        "payload": Binary { subtype: BinarySubtype::Generic, bytes: vec![0xff, 0xfe] },
    };
    let reply = auth.sasl_start(&users, "admin", &not_utf8, &mut SmallRng::seed_from_u64(1));
    assert_eq!(reply.get_i32("code").ok(), Some(2), "{reply}");
    let reply = auth.sasl_start(
        &users,
        "admin",
        // PLAIN is offered now: GSSAPI is a mechanism blackpipe still does not.
        &start("GSSAPI", "n,,n=alice,r=abc"),
        &mut SmallRng::seed_from_u64(1),
    );
    assert_eq!(reply.get_i32("code").ok(), Some(334), "{reply}");
}

#[test]
fn hostile_client_final_messages_fail_and_end_the_conversation() {
    let users = users(&[User::new("alice", "pw")]);
    for message in [
        "",
        "c=biws",
        "c=biws,r=other,p=AAAA",
        "c=biws,r=x,p=%%%",
        "p=,c=,r=",
    ] {
        let mut auth = ConnectionAuth::default();
        let first = start("SCRAM-SHA-256", "n,,n=alice,r=abc");
        auth.sasl_start(&users, "admin", &first, &mut SmallRng::seed_from_u64(1));
        let reply = auth.sasl_continue(&cont(message));
        assert_eq!(reply.get_f64("ok").ok(), Some(0.0), "{message:?}: {reply}");
        let again = auth.sasl_continue(&cont(message));
        assert_eq!(
            again.get_i32("code").ok(),
            Some(17),
            "the conversation is over: {again}"
        );
        assert!(!auth.is_authenticated());
    }
}

#[test]
fn sasl_continue_needs_a_conversation_with_its_id() {
    let mut auth = ConnectionAuth::default();
    assert_eq!(
        auth.sasl_continue(&cont("c=biws")).get_i32("code").ok(),
        Some(17)
    );
    let users = users(&[User::new("alice", "pw")]);
    let first = start("SCRAM-SHA-256", "n,,n=alice,r=abc");
    auth.sasl_start(&users, "admin", &first, &mut SmallRng::seed_from_u64(1));
    let other_id = doc! { "saslContinue": 1, "conversationId": 2, "payload": bin("c=biws") };
    assert_eq!(auth.sasl_continue(&other_id).get_i32("code").ok(), Some(17));
}

#[test]
fn speculative_authentication_answers_the_first_step_or_nothing() {
    let users = users(&[User::new("alice", "pw")]);
    let speculative = |user: &str| {
        doc! {
            "hello": 1,
            "speculativeAuthenticate": {
                "saslStart": 1, "mechanism": "SCRAM-SHA-256", "db": "admin",
                "payload": bin(&format!("n,,n={user},r=abc")),
                "options": { "skipEmptyExchange": true },
            },
        }
    };
    let mut auth = ConnectionAuth::default();
    let reply = auth
        .speculative(
            &users,
            &speculative("alice"),
            &mut SmallRng::seed_from_u64(1),
        )
        .expect("first step");
    assert_eq!(reply.get_i32("conversationId").ok(), Some(1));
    assert!(payload_text(&reply).starts_with("r=abc"));
    let mut auth = ConnectionAuth::default();
    assert!(
        auth.speculative(
            &users,
            &speculative("mallory"),
            &mut SmallRng::seed_from_u64(1)
        )
        .is_none()
    );
}

#[test]
fn supported_mechanisms_name_the_users_credentials() {
    let users = users(&[
        User::new("both", "pw"),
        User::new("old", "pw").with_mechanisms(vec![Mechanism::ScramSha1]),
    ]);
    assert_eq!(
        users.supported_mechanisms("admin.both"),
        Some(vec!["SCRAM-SHA-1", "SCRAM-SHA-256"])
    );
    assert_eq!(
        users.supported_mechanisms("admin.old"),
        Some(vec!["SCRAM-SHA-1"])
    );
    assert_eq!(users.supported_mechanisms("admin.nobody"), None);
    assert_eq!(users.supported_mechanisms("nodot"), None);
}

#[test]
fn invalid_users_are_refused_and_passwords_are_not_printed() {
    let mut rng = SmallRng::seed_from_u64(1);
    assert!(matches!(
        Users::new(&[User::new("", "pw")], &mut rng),
        Err(AuthError::InvalidUser { .. })
    ));
    // SASLprep prohibits control characters.
    assert!(matches!(
        Users::new(&[User::new("u", "bad\u{7}")], &mut rng),
        Err(AuthError::InvalidUser { .. })
    ));
    assert!(!format!("{:?}", User::new("u", "hunter2")).contains("hunter2"));
}

#[test]
fn only_handshake_and_auth_commands_run_unauthenticated() {
    for free in [
        "hello",
        "isMaster",
        "saslStart",
        "saslContinue",
        "ping",
        "buildInfo",
        "connectionStatus",
    ] {
        assert!(!requires_authentication(free), "{free}");
    }
    for guarded in [
        "find",
        "insert",
        "configureFailPoint",
        "blackpipe",
        "listDatabases",
        "killCursors",
        "endSessions",
    ] {
        assert!(requires_authentication(guarded), "{guarded}");
    }
}
