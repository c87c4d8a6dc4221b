use std::sync::Arc;

use bson::{Bson, doc};
use steadfast_wire::Compressor;

use super::*;
use crate::conn::config::{AuthSettings, ServerApi};

fn config() -> ConnectionConfig {
    ConnectionConfig {
        metadata: doc! { "driver": { "name": "steadfast", "version": "0" } },
        appended_metadata: Default::default(),
        compressors: Vec::new(),
        connect_timeout: None,
        socket_timeout: None,
        tls: None,
        auth: None,
        server_api: None,
        load_balanced: false,
        host_resolver: Default::default(),
        proxy: None,
    }
}

fn with_auth(mechanism: MechanismChoice) -> ConnectionConfig {
    ConnectionConfig {
        auth: Some(Arc::new(AuthSettings {
            username: "u,1".into(),
            password: "secret".into(),
            source: "admin".into(),
            mechanism,
            cache: Arc::default(),
            aws: None,
            oidc: None,
        })),
        ..config()
    }
}

#[test]
fn legacy_hello_with_hello_ok_backpressure_metadata_and_empty_compression() {
    let command = handshake_command(&config(), None);
    assert_eq!(command.keys().next().map(String::as_str), Some("isMaster"));
    assert_eq!(command.get_bool("helloOk").ok(), Some(true));
    assert_eq!(command.get_str("backpressure").ok(), Some("2"));
    assert_eq!(
        command.get_document("client").unwrap(),
        &doc! { "driver": { "name": "steadfast", "version": "0" } }
    );
    assert_eq!(
        command.get_array("compression").unwrap(),
        &Vec::<Bson>::new()
    );
    for absent in [
        "loadBalanced",
        "saslSupportedMechs",
        "speculativeAuthenticate",
        "apiVersion",
    ] {
        assert!(!command.contains_key(absent), "{absent} should be absent");
    }
}

#[test]
fn compressors_are_offered_in_configured_order() {
    let mut c = config();
    c.compressors = vec![Compressor::Zstd { level: None }, Compressor::Snappy];
    let command = handshake_command(&c, None);
    assert_eq!(
        command.get_array("compression").unwrap(),
        &vec![Bson::from("zstd"), Bson::from("snappy")]
    );
}

#[test]
fn stable_api_and_load_balancing_use_hello() {
    let mut c = config();
    c.server_api = Some(ServerApi::v1().strict(true));
    let command = handshake_command(&c, None);
    assert_eq!(command.keys().next().map(String::as_str), Some("hello"));
    assert!(!command.contains_key("helloOk"));
    assert_eq!(command.get_str("apiVersion").ok(), Some("1"));
    assert_eq!(command.get_bool("apiStrict").ok(), Some(true));

    let mut c = config();
    c.load_balanced = true;
    let command = handshake_command(&c, None);
    assert_eq!(command.keys().next().map(String::as_str), Some("hello"));
    assert_eq!(command.get_bool("loadBalanced").ok(), Some(true));
}

#[test]
fn negotiation_and_speculative_authentication_without_a_mechanism() {
    let c = with_auth(MechanismChoice::Negotiate);
    let variant = speculative_variant(MechanismChoice::Negotiate).unwrap();
    assert_eq!(variant, ScramVariant::Sha256);
    let first = ClientFirst::new(variant, "u,1", "nonce");
    let command = handshake_command(&c, Some(&first));
    // The username goes unmodified (not escaped, not SASLprepped) into saslSupportedMechs.
    assert_eq!(
        command.get_str("saslSupportedMechs").ok(),
        Some("admin.u,1")
    );
    let spec = command.get_document("speculativeAuthenticate").unwrap();
    assert_eq!(spec.get_i32("saslStart").ok(), Some(1));
    assert_eq!(spec.get_str("mechanism").ok(), Some("SCRAM-SHA-256"));
    assert_eq!(spec.get_str("db").ok(), Some("admin"));
    assert_eq!(
        spec.get_document("options").unwrap(),
        &doc! { "skipEmptyExchange": true }
    );
    match spec.get("payload") {
        Some(Bson::Binary(b)) => assert_eq!(b.bytes, b"n,,n=u=2C1,r=nonce"),
        other => panic!("payload should be binary, got {other:?}"),
    }
}

#[test]
fn explicit_mechanism_skips_negotiation() {
    let choice = MechanismChoice::Scram(ScramVariant::Sha1);
    let c = with_auth(choice);
    let first = ClientFirst::new(speculative_variant(choice).unwrap(), "u,1", "n");
    let command = handshake_command(&c, Some(&first));
    assert!(!command.contains_key("saslSupportedMechs"));
    let spec = command.get_document("speculativeAuthenticate").unwrap();
    assert_eq!(spec.get_str("mechanism").ok(), Some("SCRAM-SHA-1"));
}

#[test]
fn mechanism_choice_from_sasl_supported_mechs() {
    use crate::auth::choose_variant;
    let both = ["SCRAM-SHA-1".to_string(), "SCRAM-SHA-256".to_string()];
    let sha1 = ["SCRAM-SHA-1".to_string()];
    let unknown = ["PLAIN".to_string(), "FOO".to_string()];
    assert_eq!(
        choose_variant(MechanismChoice::Negotiate, Some(&both)),
        ScramVariant::Sha256
    );
    assert_eq!(
        choose_variant(MechanismChoice::Negotiate, Some(&sha1)),
        ScramVariant::Sha1
    );
    assert_eq!(
        choose_variant(MechanismChoice::Negotiate, Some(&unknown)),
        ScramVariant::Sha1
    );
    assert_eq!(
        choose_variant(MechanismChoice::Negotiate, None),
        ScramVariant::Sha1
    );
    assert_eq!(
        choose_variant(MechanismChoice::Scram(ScramVariant::Sha1), Some(&both)),
        ScramVariant::Sha1,
        "an explicit mechanism is honoured"
    );
}

#[test]
fn auth_settings_debug_redacts_the_password() {
    let c = with_auth(MechanismChoice::Negotiate);
    let text = format!("{:?}", c.auth.unwrap());
    assert!(!text.contains("secret"), "{text}");
    assert!(text.contains("<redacted>"));
}
