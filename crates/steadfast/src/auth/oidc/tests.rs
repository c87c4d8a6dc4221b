use std::collections::BTreeMap;

use futures_util::FutureExt as _;
use steadfast_core::options::oidc::{Callback, IdpServerResponse};
use steadfast_core::options::{AuthMechanism, Credential};

use super::*;

fn machine() -> Callback {
    Callback::machine(|_| {
        async { Ok(IdpServerResponse::builder().access_token("t").build()) }.boxed()
    })
}

fn oidc(environment: Option<&str>, callback: Callback) -> Credential {
    let properties: BTreeMap<String, String> = environment
        .map(|e| ("ENVIRONMENT".to_owned(), e.to_owned()))
        .into_iter()
        .collect();
    Credential::builder()
        .mechanism(AuthMechanism::MongoDbOidc)
        .mechanism_properties(properties)
        .oidc_callback(callback)
        .build()
}

#[test]
fn a_token_source_is_required_and_must_be_unique() {
    assert!(OidcAuthenticator::from_credential(&oidc(None, machine())).is_ok());
    assert!(OidcAuthenticator::from_credential(&oidc(Some("test"), Callback::default())).is_ok());
    for (credential, says) in [
        (oidc(None, Callback::default()), "needs an OIDC callback"),
        (oidc(Some("test"), machine()), "not both"),
        (
            oidc(
                None,
                Callback::human(|_| {
                    async { Ok(IdpServerResponse::builder().access_token("t").build()) }.boxed()
                }),
            ),
            "human",
        ),
    ] {
        let error = OidcAuthenticator::from_credential(&credential).unwrap_err();
        assert!(error.to_string().contains(says), "{error}");
    }
}

#[test]
fn the_jwt_step_carries_the_token_as_a_bson_payload() {
    let command = jwt_step_command("abcd1234");
    assert_eq!(command.get_str("mechanism").unwrap(), "MONGODB-OIDC");
    let payload = command.get_binary_generic("payload").unwrap();
    // The example of auth.md's one-step conversation, byte for byte.
    let expected = [
        0x17, 0, 0, 0, 2, b'j', b'w', b't', 0, 9, 0, 0, 0, b'a', b'b', b'c', b'd', b'1', b'2',
        b'3', b'4', 0, 0,
    ];
    assert_eq!(payload.as_slice(), expected.as_slice());
}

#[tokio::test]
async fn a_callback_error_of_the_driver_comes_back_unchanged() {
    let callback = Callback::machine(|_| {
        async { Err(Error::invalid_argument("from the callback").into()) }.boxed()
    });
    let authenticator = OidcAuthenticator::from_credential(&oidc(None, callback)).unwrap();
    let error = authenticator
        .token(IoLimit::SocketTimeout(None))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error.kind(),
            crate::error::ErrorKind::InvalidArgument { .. }
        ),
        "{error:?}"
    );
    let other = Callback::machine(|_| async { Err("io trouble".into()) }.boxed());
    let authenticator = OidcAuthenticator::from_credential(&oidc(None, other)).unwrap();
    let error = authenticator
        .token(IoLimit::SocketTimeout(None))
        .await
        .unwrap_err();
    assert!(error.is_authentication_error(), "{error:?}");
    assert!(error.to_string().contains("io trouble"), "{error}");
}
