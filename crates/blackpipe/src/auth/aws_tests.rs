//! The MONGODB-AWS server side: signatures recomputed and compared, hostile messages refused
//! with typed errors.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc};
use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::*;

const DATE: &str = "20191107T002607Z";
const ARN: &str = "arn:aws:iam::123456789012:user/app";

fn bin(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

fn bytes(document: &Document) -> Vec<u8> {
    RawDocumentBuf::try_from(document).unwrap().into_bytes()
}

fn key() -> AwsKey {
    AwsKey::new("AKIDTEST", "secret/KEY", ARN)
}

/// Runs the first step; returns the conversation and the combined nonce.
fn started(keys: &[AwsKey]) -> (AwsPending, Vec<u8>) {
    let first = doc! { "r": bin(vec![1; 32]), "p": 110 };
    let (reply, pending) =
        server_first(&bytes(&first), keys, &mut SmallRng::seed_from_u64(1)).unwrap();
    let reply = Document::from_reader(reply.as_slice()).unwrap();
    assert_eq!(reply.get_str("h").unwrap(), STS_HOST);
    let Some(Bson::Binary(nonce)) = reply.get("s") else {
        panic!("no nonce in {reply}")
    };
    assert_eq!(nonce.bytes.len(), 64);
    assert_eq!(nonce.bytes[..32], [1; 32]);
    (pending, nonce.bytes.clone())
}

/// What a correct client sends, written out here from the auth specification's table.
fn signed(nonce: &[u8], id: &str, secret: &str, token: Option<&str>) -> Document {
    let token_line = token.map_or(String::new(), |t| format!("x-amz-security-token:{t}\n"));
    let token_name = if token.is_some() {
        "x-amz-security-token;"
    } else {
        ""
    };
    let names = format!(
        "content-length;content-type;host;x-amz-date;{token_name}x-mongodb-gs2-cb-flag;x-mongodb-server-nonce"
    );
    let canonical = format!(
        "POST\n/\n\ncontent-length:43\ncontent-type:application/x-www-form-urlencoded\n\
         host:sts.amazonaws.com\nx-amz-date:{DATE}\n{token_line}x-mongodb-gs2-cb-flag:n\n\
         x-mongodb-server-nonce:{}\n\n{names}\n\
         ab821ae955788b0e33ebd34c208442ccfc2d406e2edc5e7a39bd6458fbb4f843",
        BASE64.encode(nonce)
    );
    let signature = signature(secret, DATE, "us-east-1", "sts", &canonical);
    let mut message = doc! {
        "a": format!(
            "AWS4-HMAC-SHA256 Credential={id}/20191107/us-east-1/sts/aws4_request, \
             SignedHeaders={names}, Signature={signature}"
        ),
        "d": DATE,
    };
    if let Some(token) = token {
        message.insert("t", token);
    }
    message
}

/// The `get-vanilla` case of AWS's SigV4 test suite.
#[test]
fn signatures_match_the_aws_test_suite() {
    let canonical = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n\
                     host;x-amz-date\n\
                     e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    assert_eq!(
        signature(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "20150830T123600Z",
            "us-east-1",
            "service",
            canonical
        ),
        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    );
    assert_eq!(
        hex(&Sha256::digest(STS_BODY)),
        "ab821ae955788b0e33ebd34c208442ccfc2d406e2edc5e7a39bd6458fbb4f843"
    );
}

#[test]
fn a_correct_signature_authenticates_as_the_keys_arn() {
    let (pending, nonce) = started(&[key()]);
    let message = signed(&nonce, "AKIDTEST", "secret/KEY", None);
    assert_eq!(
        verify_client_second(&pending, &bytes(&message)),
        Ok(ARN.into())
    );
    let temporary = key().with_session_token("tok");
    let (pending, nonce) = started(&[temporary]);
    let message = signed(&nonce, "AKIDTEST", "secret/KEY", Some("tok"));
    assert_eq!(
        verify_client_second(&pending, &bytes(&message)),
        Ok(ARN.into())
    );
}

#[test]
fn wrong_secrets_keys_tokens_nonces_and_scopes_fail_as_mongod_fails() {
    let (pending, nonce) = started(&[key()]);
    let mut other_nonce = nonce.clone();
    other_nonce[40] ^= 1;
    let mut wrong_region = signed(&nonce, "AKIDTEST", "secret/KEY", None);
    let header = wrong_region
        .get_str("a")
        .unwrap()
        .replace("us-east-1", "us-west-2");
    wrong_region.insert("a", header);
    let mut tampered = signed(&nonce, "AKIDTEST", "secret/KEY", None);
    let header = tampered
        .get_str("a")
        .unwrap()
        .replace("Signature=", "Signature=0");
    tampered.insert("a", header);
    for message in [
        signed(&nonce, "AKIDTEST", "wrong", None),
        signed(&nonce, "AKIDOTHER", "secret/KEY", None),
        signed(&nonce, "AKIDTEST", "secret/KEY", Some("unexpected")),
        signed(&other_nonce, "AKIDTEST", "secret/KEY", None),
        wrong_region,
        tampered,
    ] {
        assert_eq!(
            verify_client_second(&pending, &bytes(&message)),
            Err(AuthError::Failed),
            "{message}"
        );
    }
    let (pending, nonce) = started(&[key().with_session_token("tok")]);
    let without_token = signed(&nonce, "AKIDTEST", "secret/KEY", None);
    assert_eq!(
        verify_client_second(&pending, &bytes(&without_token)),
        Err(AuthError::Failed)
    );
}

#[test]
fn hostile_messages_get_typed_errors() {
    let mut rng = SmallRng::seed_from_u64(2);
    for first in [
        doc! { "r": bin(vec![1; 31]), "p": 110 },
        doc! { "r": "text", "p": 110 },
        doc! { "r": bin(vec![1; 32]), "p": 112 },
        doc! { "r": bin(vec![1; 32]) },
    ] {
        assert!(
            matches!(
                server_first(&bytes(&first), &[key()], &mut rng),
                Err(AuthError::Malformed(_))
            ),
            "{first}"
        );
    }
    assert!(matches!(
        server_first(b"\x05\x00\x00\x00", &[key()], &mut rng),
        Err(AuthError::Malformed(_))
    ));
    let (pending, _) = started(&[key()]);
    for second in [
        doc! { "a": 1, "d": DATE },
        doc! { "d": DATE },
        doc! { "a": "AWS4-HMAC-SHA256 Credential=x", "d": DATE },
        doc! { "a": "Basic abc", "d": DATE },
        doc! { "a": "AWS4-HMAC-SHA256 Credential=a/b, SignedHeaders=h, Signature=s", "d": DATE },
        doc! { "a": "x", "d": DATE, "t": 5 },
    ] {
        assert!(
            matches!(
                verify_client_second(&pending, &bytes(&second)),
                Err(AuthError::Malformed(_))
            ),
            "{second}"
        );
    }
    let bad_date = doc! {
        "a": "AWS4-HMAC-SHA256 Credential=AKIDTEST/2019/us-east-1/sts/aws4_request, SignedHeaders=h, Signature=s",
        "d": "2019",
    };
    assert_eq!(
        verify_client_second(&pending, &bytes(&bad_date)),
        Err(AuthError::Failed)
    );
}

/// The conversation through a connection's state, as `saslStart` / `saslContinue` run it.
mod through_a_connection {
    use super::*;
    use crate::auth::{ConnectionAuth, Users};

    fn start_command(payload: Vec<u8>) -> Document {
        doc! { "saslStart": 1, "mechanism": MECHANISM, "payload": bin(payload) }
    }

    fn first() -> Vec<u8> {
        bytes(&doc! { "r": bin(vec![1; 32]), "p": 110 })
    }

    #[test]
    fn a_signed_conversation_authenticates_the_arn_in_external() {
        let users = Users::default().with_aws_keys(vec![key()]);
        let mut auth = ConnectionAuth::default();
        let mut rng = SmallRng::seed_from_u64(3);
        let reply = auth.sasl_start(&users, "$external", &start_command(first()), &mut rng);
        assert_eq!(reply.get_bool("done").ok(), Some(false), "{reply}");
        let Some(Bson::Binary(payload)) = reply.get("payload") else {
            panic!("{reply}")
        };
        let server = Document::from_reader(payload.bytes.as_slice()).unwrap();
        let Some(Bson::Binary(nonce)) = server.get("s") else {
            panic!("{server}")
        };
        let wrong = signed(&nonce.bytes, "AKIDTEST", "wrong", None);
        let continue_with = |message: &Document| {
            doc! { "saslContinue": 1, "conversationId": 1, "payload": bin(bytes(message)) }
        };
        let refused = auth.sasl_continue(&continue_with(&wrong));
        assert_eq!(refused.get_i32("code").ok(), Some(18), "{refused}");
        assert!(!auth.is_authenticated());
        // The failure ended the conversation: a correct signature now has nothing to continue.
        let right = signed(&nonce.bytes, "AKIDTEST", "secret/KEY", None);
        let late = auth.sasl_continue(&continue_with(&right));
        assert_eq!(late.get_i32("code").ok(), Some(17), "{late}");
        let reply = auth.sasl_start(&users, "$external", &start_command(first()), &mut rng);
        let Some(Bson::Binary(payload)) = reply.get("payload") else {
            panic!("{reply}")
        };
        let server = Document::from_reader(payload.bytes.as_slice()).unwrap();
        let Some(Bson::Binary(nonce)) = server.get("s") else {
            panic!("{server}")
        };
        let right = signed(&nonce.bytes, "AKIDTEST", "secret/KEY", None);
        let done = auth.sasl_continue(&continue_with(&right));
        assert_eq!(done.get_bool("done").ok(), Some(true), "{done}");
        assert_eq!(auth.user(), Some(("$external", ARN)));
    }

    #[test]
    fn wrong_database_missing_keys_and_oversized_payloads_are_refused() {
        let users = Users::default().with_aws_keys(vec![key()]);
        let mut rng = SmallRng::seed_from_u64(4);
        let mut auth = ConnectionAuth::default();
        let reply = auth.sasl_start(&users, "admin", &start_command(first()), &mut rng);
        assert_eq!(reply.get_i32("code").ok(), Some(2), "{reply}");
        let reply = auth.sasl_start(
            &Users::default(),
            "$external",
            &start_command(first()),
            &mut rng,
        );
        assert_eq!(reply.get_i32("code").ok(), Some(334), "{reply}");
        let huge = start_command(vec![0; MAX_AWS_PAYLOAD_BYTES + 1]);
        let reply = auth.sasl_start(&users, "$external", &huge, &mut rng);
        assert_eq!(reply.get_i32("code").ok(), Some(2), "{reply}");
    }
}
