//! ConnectionString: parsing into the option types, display back to a string that parses to
//! the same value, and the errors.

use std::time::Duration;

use bson::{UuidRepresentation, doc};

use super::{ConnectionString, HostInfo};
use crate::client::{Compressor, Tls};
use crate::options::{
    Acknowledgment, AuthMechanism, ReadConcernLevel, ReadPreference, ServerAddress,
    ServerMonitoringMode,
};

fn round_trip(uri: &str) -> ConnectionString {
    let parsed = ConnectionString::parse(uri).expect("valid connection string");
    let shown = parsed.to_string();
    let again = ConnectionString::parse(&shown)
        .unwrap_or_else(|e| panic!("{shown} (from {uri}) does not parse: {e}"));
    assert_eq!(again, parsed, "{uri} displayed as {shown}");
    parsed
}

#[test]
fn hosts_database_and_plain_options() {
    let parsed = round_trip(
        "mongodb://db1,DB2:27018/shop?replicaSet=rs0&maxPoolSize=20&connectTimeoutMS=1500\
         &retryWrites=false&serverMonitoringMode=poll&appName=inventory",
    );
    assert_eq!(
        parsed.host_info,
        HostInfo::HostIdentifiers(vec![
            ServerAddress::parse("db1").unwrap(),
            ServerAddress::tcp("db2", 27018),
        ])
    );
    assert_eq!(parsed.default_database.as_deref(), Some("shop"));
    assert_eq!(parsed.replica_set.as_deref(), Some("rs0"));
    assert_eq!(parsed.max_pool_size, Some(20));
    assert_eq!(parsed.connect_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(parsed.retry_writes, Some(false));
    assert_eq!(
        parsed.server_monitoring_mode,
        Some(ServerMonitoringMode::Poll)
    );
    assert_eq!(parsed.app_name.as_deref(), Some("inventory"));
    assert_eq!(parsed.heartbeat_frequency, None);
    assert_eq!(parsed.credential, None);
    assert_eq!(parsed.tls, None);
}

#[test]
fn srv_string_keeps_the_dns_name() {
    let parsed = round_trip("mongodb+srv://cluster0.example.com/?srvMaxHosts=2&srvServiceName=db");
    assert_eq!(
        parsed.host_info,
        HostInfo::DnsRecord("cluster0.example.com".to_string())
    );
    assert_eq!(parsed.srv_max_hosts, Some(2));
    assert_eq!(parsed.srv_service_name.as_deref(), Some("db"));
    assert!(
        parsed
            .to_string()
            .starts_with("mongodb+srv://cluster0.example.com/?")
    );
}

#[test]
fn credentials_are_decoded_and_encoded_again() {
    let parsed = round_trip(
        "mongodb://us%3Aer:p%40ss%2Fw%25rd@host/admin?authMechanism=SCRAM-SHA-256&authSource=users",
    );
    let credential = parsed.credential.expect("a credential");
    assert_eq!(credential.username.as_deref(), Some("us:er"));
    assert_eq!(credential.password.as_deref(), Some("p@ss/w%rd"));
    assert_eq!(credential.source.as_deref(), Some("users"));
    assert_eq!(credential.mechanism, Some(AuthMechanism::ScramSha256));
    let properties = round_trip(
        "mongodb://user@host/?authMechanism=GSSAPI&authMechanismProperties=SERVICE_NAME:other,CANONICALIZE_HOST_NAME:true",
    );
    assert_eq!(
        properties.credential.unwrap().property("SERVICE_NAME"),
        Some("other")
    );
}

#[test]
fn concerns_preference_and_compressors() {
    let parsed = round_trip(
        "mongodb://h/?w=majority&wTimeoutMS=200&journal=true&readConcernLevel=local\
         &readPreference=secondaryPreferred&readPreferenceTags=dc:ny,rack:1&readPreferenceTags=\
         &maxStalenessSeconds=120&compressors=zlib,snappy&zlibCompressionLevel=4",
    );
    let concern = parsed.write_concern.expect("a write concern");
    assert_eq!(concern.w, Some(Acknowledgment::Majority));
    assert_eq!(concern.w_timeout, Some(Duration::from_millis(200)));
    assert_eq!(concern.journal, Some(true));
    assert_eq!(parsed.read_concern.unwrap().level, ReadConcernLevel::Local);
    let preference = parsed.read_preference.expect("a read preference");
    assert!(matches!(
        preference,
        ReadPreference::SecondaryPreferred { .. }
    ));
    assert_eq!(preference.tag_sets().len(), 2);
    assert_eq!(preference.max_staleness(), Some(Duration::from_secs(120)));
    assert_eq!(
        parsed.compressors,
        Some(vec![
            Compressor::Zlib { level: Some(4) },
            Compressor::Snappy
        ])
    );
}

#[test]
fn tls_proxy_uuid_and_steadfast_options() {
    let parsed = round_trip(
        "mongodb://h/?tls=true&tlsCAFile=%2Fetc%2Fca.pem&tlsInsecure=true&proxyHost=proxy.local\
         &proxyPort=1081&proxyUsername=u&proxyPassword=p%26w&uuidRepresentation=javaLegacy\
         &timeoutMS=900&waitQueueTimeoutMS=50",
    );
    let Some(Tls::Enabled(tls)) = &parsed.tls else {
        panic!("TLS on: {:?}", parsed.tls);
    };
    assert_eq!(tls.ca_file_path, Some("/etc/ca.pem".into()));
    assert_eq!(tls.allow_invalid_certificates, Some(true));
    assert_eq!(tls.allow_invalid_hostnames, Some(true));
    assert_eq!(parsed.tls_insecure(), Some(true));
    let proxy = parsed.socks5_proxy.as_ref().expect("a proxy");
    assert_eq!(proxy.host, "proxy.local");
    assert_eq!(
        proxy.authentication,
        Some(("u".to_string(), "p&w".to_string()))
    );
    assert_eq!(
        parsed.uuid_representation,
        Some(UuidRepresentation::JavaLegacy)
    );
    assert_eq!(parsed.timeout, Some(Duration::from_millis(900)));
    assert_eq!(parsed.wait_queue_timeout(), Some(Duration::from_millis(50)));
    let off = round_trip("mongodb://h/?tls=false");
    assert_eq!(off.tls, Some(Tls::Disabled));
}

#[test]
fn unix_socket_and_ipv6_hosts() {
    let parsed = round_trip("mongodb://%2Ftmp%2Fmongodb-27017.sock,[::1]:27019/db");
    let HostInfo::HostIdentifiers(hosts) = &parsed.host_info else {
        panic!("hosts");
    };
    assert_eq!(hosts.len(), 2);
    assert!(parsed.to_string().contains("%2Ftmp%2Fmongodb-27017.sock"));
    assert!(parsed.to_string().contains("[::1]:27019"));
}

#[test]
fn conversions_and_errors() {
    let uri = "mongodb://localhost/";
    let parsed: ConnectionString = uri.parse().unwrap();
    assert_eq!(ConnectionString::try_from(uri).unwrap(), parsed);
    assert_eq!(ConnectionString::try_from(uri.to_string()).unwrap(), parsed);
    assert_eq!(
        ConnectionString::try_from(&uri.to_string()).unwrap(),
        parsed
    );
    for bad in [
        "http://localhost",
        "mongodb://",
        "mongodb://h/?maxPoolSize",
        "mongodb://a,b/?directConnection=true",
        "mongodb+srv://a.example.com:27017",
    ] {
        let error = bad.parse::<ConnectionString>().unwrap_err();
        assert!(
            matches!(*error.kind, crate::error::ErrorKind::InvalidArgument { .. }),
            "{bad}: {error}"
        );
        assert!(ConnectionString::try_from(bad).is_err());
    }
    assert_eq!(
        ConnectionString::default().host_info,
        HostInfo::HostIdentifiers(vec![])
    );
}

#[test]
fn mongodb_cr_is_refused_with_a_clear_error() {
    let error =
        ConnectionString::parse("mongodb://user:pw@h/?authMechanism=MONGODB-CR").unwrap_err();
    assert!(error.to_string().contains("MONGODB-CR"), "{error}");
    assert!(error.to_string().contains("SCRAM"), "{error}");
    assert_eq!(
        "mongodb-cr".parse::<AuthMechanism>().unwrap(),
        AuthMechanism::MongoDbCr
    );
    let credential = crate::options::Credential::builder()
        .username("user".to_string())
        .password("pw".to_string())
        .build();
    let error = AuthMechanism::MongoDbCr
        .validate_credential(&credential)
        .unwrap_err();
    assert!(error.to_string().contains("MONGODB-CR"), "{error}");
    assert!(
        AuthMechanism::ScramSha256
            .validate_credential(&credential)
            .is_ok()
    );
    let no_password = crate::options::Credential::builder()
        .username("user".to_string())
        .build();
    assert!(
        AuthMechanism::Plain
            .validate_credential(&no_password)
            .is_err()
    );
    assert!("MONGODB-XYZ".parse::<AuthMechanism>().is_err());
}

#[test]
fn serde_forms() {
    let parsed = ConnectionString::parse(
        "mongodb://u:p@h:27018/?authSource=admin&heartbeatFrequencyMS=1000&tls=true&readPreference=nearest",
    )
    .unwrap();
    let written = bson::serialize_to_document(&parsed).unwrap();
    assert_eq!(
        written.get_document("hostInfo").unwrap(),
        &doc! { "HostIdentifiers": [{ "Tcp": { "host": "h", "port": 27018 } }] }
    );
    assert_eq!(written.get_i64("heartbeatFrequency").ok(), Some(1000));
    assert_eq!(
        written.get_document("credential").unwrap(),
        &doc! { "authsource": "admin", "authmechanism": null, "authmechanismproperties": null }
    );
    assert_eq!(written.get_document("tls").unwrap(), &doc! { "tls": true });
    assert_eq!(
        written.get_document("readPreference").unwrap(),
        &doc! { "mode": "nearest" }
    );
    assert!(!written.contains_key("maxPoolSize"));
    let read: ConnectionString =
        bson::deserialize_from_bson(bson::Bson::String(parsed.to_string())).unwrap();
    assert_eq!(read, parsed);
    assert!(
        bson::deserialize_from_bson::<ConnectionString>(bson::Bson::String("x".into())).is_err()
    );
}
