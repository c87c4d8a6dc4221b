//! MONGODB-AWS unit tests: SigV4 against AWS's published examples, the conversation's checks,
//! the region table of the auth specification, dates, credential documents and the cache.

mod endpoints;

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc};

use super::conversation::{self, ServerFirst};
use super::credentials::{
    AwsCredential, CredentialCache, SecretKey, parse_endpoint_credentials,
    parse_web_identity_credentials,
};
use super::sigv4::{self, SignableRequest, SigningScope};

const EXAMPLE_KEY_ID: &str = "AKIDEXAMPLE";
const EXAMPLE_SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const EXAMPLE_DATE: &str = "20150830T123600Z";

fn example_scope(service: &'static str) -> SigningScope<'static> {
    SigningScope {
        access_key_id: EXAMPLE_KEY_ID,
        secret_access_key: EXAMPLE_SECRET,
        date: EXAMPLE_DATE,
        region: "us-east-1",
        service,
    }
}

/// The `get-vanilla` case of AWS's SigV4 test suite.
#[test]
fn sigv4_matches_the_aws_test_suite_get_vanilla() {
    let request = SignableRequest {
        method: "GET",
        path: "/",
        query: "",
        headers: &[
            ("host", "example.amazonaws.com"),
            ("x-amz-date", EXAMPLE_DATE),
        ],
        body: b"",
    };
    assert_eq!(
        sigv4::authorization_header(&request, &example_scope("service")),
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
         SignedHeaders=host;x-amz-date, \
         Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    );
}

/// The IAM `ListUsers` example of AWS's SigV4 documentation (the one the auth specification
/// shows as a finished header).
#[test]
fn sigv4_matches_the_aws_documentation_iam_example() {
    let request = SignableRequest {
        method: "GET",
        path: "/",
        query: "Action=ListUsers&Version=2010-05-08",
        headers: &[
            (
                "content-type",
                "application/x-www-form-urlencoded; charset=utf-8",
            ),
            ("host", "iam.amazonaws.com"),
            ("x-amz-date", EXAMPLE_DATE),
        ],
        body: b"",
    };
    assert_eq!(
        sigv4::authorization_header(&request, &example_scope("iam")),
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
         SignedHeaders=content-type;host;x-amz-date, \
         Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
    );
}

#[test]
fn amz_dates_and_utc_timestamps_round_trip() {
    assert_eq!(sigv4::amz_date(0), "19700101T000000Z");
    // 2015-08-30T12:36:00Z, the examples' date.
    assert_eq!(sigv4::amz_date(1_440_938_160), EXAMPLE_DATE);
    assert_eq!(sigv4::amz_date(951_782_400), "20000229T000000Z");
    assert_eq!(
        sigv4::parse_utc_timestamp("2015-08-30T12:36:00Z"),
        Some(1_440_938_160)
    );
    assert_eq!(
        sigv4::parse_utc_timestamp("2000-02-29T00:00:00.123Z"),
        Some(951_782_400)
    );
    for bad in [
        "",
        "2015-08-30",
        "2015-08-30T12:36:00",
        "2015-13-30T12:36:00Z",
        "1969-12-31T23:59:59Z",
        "x-08-30T12:36:00Z",
        "2015-08-30T25:00:00Z",
    ] {
        assert_eq!(sigv4::parse_utc_timestamp(bad), None, "{bad:?}");
    }
}

/// The auth specification's region table.
#[test]
fn regions_follow_the_specification_table() {
    for (host, region) in [
        ("sts.amazonaws.com", "us-east-1"),
        ("sts.us-west-2.amazonaws.com", "us-west-2"),
        ("sts.us-west-2.amazonaws.com.ch", "us-west-2"),
        ("example.com", "com"),
        ("localhost", "us-east-1"),
    ] {
        assert_eq!(conversation::region(host).unwrap(), region, "{host}");
    }
    let long = "a".repeat(256);
    for bad in [
        "sts..com",
        ".amazonaws.com",
        "sts.amazonaws.",
        "",
        long.as_str(),
    ] {
        assert!(conversation::region(bad).is_err(), "{bad:?}");
    }
    // A hostile server's over-long name is not copied into the error.
    let huge = "a".repeat(1 << 20);
    let message = conversation::region(&huge).unwrap_err().to_string();
    assert!(message.len() < 200, "{} bytes", message.len());
}

fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

fn bytes_of(document: &Document) -> Vec<u8> {
    bson::RawDocumentBuf::try_from(document)
        .unwrap()
        .into_bytes()
}

#[test]
fn the_client_first_message_carries_the_nonce_and_no_channel_binding() {
    let nonce = [7u8; 32];
    let message =
        Document::from_reader(conversation::client_first(&nonce).unwrap().as_slice()).unwrap();
    assert_eq!(message, doc! { "r": binary(nonce.to_vec()), "p": 110 });
}

#[test]
fn the_server_nonce_and_host_are_checked() {
    let client = [1u8; 32];
    let mut good = client.to_vec();
    good.extend([2u8; 32]);
    let parsed = conversation::parse_server_first(
        &bytes_of(&doc! { "s": binary(good.clone()), "h": "sts.us-west-2.amazonaws.com" }),
        &client,
    )
    .unwrap();
    assert_eq!(parsed.region, "us-west-2");
    let mut foreign = [9u8; 32].to_vec();
    foreign.extend([2u8; 32]);
    for bad in [
        doc! { "s": binary(good[..63].to_vec()), "h": "sts.amazonaws.com" },
        doc! { "s": binary(foreign), "h": "sts.amazonaws.com" },
        doc! { "s": binary(good.clone()), "h": "sts..amazonaws.com" },
        doc! { "s": binary(good.clone()) },
        doc! { "s": "text", "h": "sts.amazonaws.com" },
        doc! { "h": "sts.amazonaws.com" },
    ] {
        assert!(
            conversation::parse_server_first(&bytes_of(&bad), &client).is_err(),
            "{bad}"
        );
    }
    assert!(conversation::parse_server_first(b"\x05\x00", &client).is_err());
}

fn credential(token: Option<&str>) -> AwsCredential {
    AwsCredential {
        access_key_id: EXAMPLE_KEY_ID.into(),
        secret_access_key: SecretKey::new(EXAMPLE_SECRET.into()),
        session_token: token.map(str::to_owned),
        expiration: None,
    }
}

#[test]
fn the_client_second_message_signs_the_spec_headers() {
    let server = ServerFirst {
        nonce: vec![3u8; 64],
        host: "sts.amazonaws.com".into(),
        region: "us-east-1".into(),
    };
    let plain = Document::from_reader(
        conversation::client_second(&server, &credential(None), EXAMPLE_DATE)
            .unwrap()
            .as_slice(),
    )
    .unwrap();
    let header = plain.get_str("a").unwrap();
    assert!(header.starts_with(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/sts/aws4_request, \
         SignedHeaders=content-length;content-type;host;x-amz-date;x-mongodb-gs2-cb-flag;\
         x-mongodb-server-nonce, Signature="
    ));
    assert_eq!(plain.get_str("d").unwrap(), EXAMPLE_DATE);
    assert!(!plain.contains_key("t"));
    let temporary = Document::from_reader(
        conversation::client_second(&server, &credential(Some("tok")), EXAMPLE_DATE)
            .unwrap()
            .as_slice(),
    )
    .unwrap();
    assert!(
        temporary
            .get_str("a")
            .unwrap()
            .contains("x-amz-date;x-amz-security-token;x-mongodb-gs2-cb-flag")
    );
    assert_eq!(temporary.get_str("t").unwrap(), "tok");
}

#[test]
fn endpoint_documents_parse_with_either_token_name_and_expiration_form() {
    let ecs = parse_endpoint_credentials(
        r#"{"AccessKeyId":"A","SecretAccessKey":"S","Token":"T","Expiration":"2030-01-01T00:00:00Z","RoleArn":"r"}"#,
        "ECS",
    )
    .unwrap();
    assert_eq!(ecs.session_token.as_deref(), Some("T"));
    assert_eq!(ecs.expiration, Some(1_893_456_000));
    let sts = parse_web_identity_credentials(
        r#"{"AssumeRoleWithWebIdentityResponse":{"AssumeRoleWithWebIdentityResult":{"Credentials":{"AccessKeyId":"A","SecretAccessKey":"S","SessionToken":"T","Expiration":1.893456E9}}}}"#,
    )
    .unwrap();
    assert_eq!(sts.session_token.as_deref(), Some("T"));
    assert_eq!(sts.expiration, Some(1_893_456_000));
    for bad in [
        "",
        "[]",
        r#"{"AccessKeyId":"A"}"#,
        r#"{"AccessKeyId":"","SecretAccessKey":"S"}"#,
        r#"{"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"soon"}"#,
        r#"{"AccessKeyId":"A","SecretAccessKey":"S","Expiration":-1}"#,
    ] {
        assert!(parse_endpoint_credentials(bad, "ECS").is_err(), "{bad:?}");
    }
}

#[test]
fn cached_credentials_are_dropped_five_minutes_before_expiry_and_on_clear() {
    let cache = CredentialCache::default();
    let expiring = AwsCredential {
        expiration: Some(10_000),
        ..credential(Some("t"))
    };
    cache.put(expiring.clone());
    assert_eq!(cache.get(10_000 - 301), Some(expiring));
    assert_eq!(cache.get(10_000 - 300), None);
    cache.put(credential(None));
    assert!(cache.get(u64::MAX).is_some(), "no expiration: kept");
    cache.clear();
    assert_eq!(cache.get(0), None);
}

#[test]
fn the_secret_key_never_shows_in_debug_output() {
    let shown = format!("{:?}", credential(Some("tok")));
    assert!(!shown.contains(EXAMPLE_SECRET), "{shown}");
}
