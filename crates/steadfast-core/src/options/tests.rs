//! Rules the official suites do not cover: SRV and TXT handling, defaults, redaction, the
//! credential rules, code-level validation and the wording of errors and warnings.

use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::*;
use crate::address::ServerAddress;
use crate::selection::read_preference::ReadPreferenceMode;

fn options(uri: &str) -> ClientOptions {
    match ClientOptions::parse(uri) {
        Ok(ParsedUri::Complete { options, .. }) => options,
        other => panic!("{uri}: expected complete options, got {other:?}"),
    }
}

fn error(uri: &str) -> OptionsError {
    match ConnectionString::parse(uri) {
        Err(e) => e,
        Ok(parsed) => panic!("{uri}: expected an error, parsed {parsed:?}"),
    }
}

fn warnings(uri: &str) -> Vec<String> {
    ConnectionString::parse(uri)
        .unwrap_or_else(|e| panic!("{uri}: {e}"))
        .warnings
}

fn srv(uri: &str) -> ConnectionString {
    let parsed = ConnectionString::parse(uri).unwrap_or_else(|e| panic!("{uri}: {e}"));
    assert!(parsed.is_srv());
    parsed
}

fn record(target: &str, port: u16) -> SrvRecord {
    SrvRecord {
        target: target.to_string(),
        port,
    }
}

fn lookup(targets: &[&str], txt: &[&[&str]]) -> SrvLookup {
    SrvLookup {
        srv_records: targets.iter().map(|t| record(t, 27017)).collect(),
        txt_records: txt
            .iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect(),
    }
}

#[test]
fn defaults_follow_the_specifications() {
    let o = options("mongodb://h");
    assert_eq!(o.connect_timeout, Some(Duration::from_secs(10)));
    assert_eq!(o.socket_timeout, None);
    assert_eq!(o.server_selection_timeout, Duration::from_secs(30));
    assert_eq!(o.heartbeat_frequency, Duration::from_secs(10));
    assert_eq!(o.local_threshold, Duration::from_millis(15));
    assert_eq!(
        (o.max_pool_size, o.min_pool_size, o.max_connecting),
        (100, 0, 2)
    );
    assert!(o.retry_reads && o.retry_writes);
    assert_eq!(o.max_adaptive_retries, 2);
    assert!(!o.enable_overload_retargeting);
    assert_eq!(o.server_monitoring_mode, ServerMonitoringMode::Auto);
    assert_eq!(o.timeout, None);
    assert!(!o.tls.enabled);
    assert!(o.credential.is_none());
    assert!(o.write_concern.is_empty());
}

#[test]
fn timeout_zero_is_distinct_from_unset_and_zero_means_no_limit_elsewhere() {
    assert_eq!(
        options("mongodb://h/?timeoutMS=0").timeout,
        Some(Duration::ZERO)
    );
    assert_eq!(
        options("mongodb://h/?timeoutMS=250").timeout,
        Some(Duration::from_millis(250))
    );
    let o = options("mongodb://h/?connectTimeoutMS=0&socketTimeoutMS=0&maxIdleTimeMS=0");
    assert_eq!(
        (o.connect_timeout, o.socket_timeout, o.max_idle_time),
        (None, None, None)
    );
    let o = options("mongodb://h/?connectTimeoutMS=20&maxIdleTimeMS=7");
    assert_eq!(o.connect_timeout, Some(Duration::from_millis(20)));
    assert_eq!(o.max_idle_time, Some(Duration::from_millis(7)));
}

#[test]
fn debug_output_redacts_every_secret() {
    let uri = "mongodb://alice:s3cr3tpw@h/?tlsCertificateKeyFile=k.pem\
               &tlsCertificateKeyFilePassword=k3ypw";
    let parsed = ConnectionString::parse(uri).unwrap();
    let o = options(uri);
    for shown in [
        format!("{parsed:?}"),
        format!("{o:?}"),
        format!("{:?}", o.credential),
    ] {
        assert!(!shown.contains("s3cr3tpw"), "{shown}");
        assert!(!shown.contains("k3ypw"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
    assert!(format!("{:?}", o.credential).contains("password: <redacted>"));
    assert!(format!("{:?}", o.tls).contains("cert_key_password: <redacted>"));
    let nothing = Credential {
        username: Some("u".into()),
        ..Credential::default()
    };
    assert!(format!("{nothing:?}").contains("password: None"));
}

#[test]
fn errors_name_the_offending_part_without_leaking_secrets() {
    let e = error("mongo://user:hunter2@h").to_string();
    assert!(e.contains("\"mongo\"") && !e.contains("hunter2"), "{e}");
    let e = error("mongodb://a,b:70000").to_string();
    assert!(e.contains("b:70000"), "{e}");
    let e = error("mongodb+srv://c.example.com:27018").to_string();
    assert!(
        e.contains("c.example.com:27018") && e.contains("port"),
        "{e}"
    );
    let e = error("mongodb://h/?authMechanism=MONGODB-CR").to_string();
    assert!(
        e.contains("authMechanism") && e.contains("MONGODB-CR"),
        "{e}"
    );
    let e = error("mongodb://h/?tlsInsecure=true&tlsAllowInvalidHostnames=true").to_string();
    assert!(
        e.contains("tlsInsecure") && e.contains("tlsAllowInvalidHostnames"),
        "{e}"
    );
    let e = error("mongodb://h/my$db").to_string();
    assert!(e.contains("my$db") && e.contains('$'), "{e}");
    let e = error("mongodb:///tmp/m.sock/?tlsCertificateKeyFilePassword=k3ypw").to_string();
    assert!(e.contains("URL encoded") && !e.contains("k3ypw"), "{e}");
    assert_eq!(
        error("mongodb://alice:foo/bar@localhost/db"),
        OptionsError::InvalidUserInfo(
            "it contains an unescaped '/' or '?' (or, without credentials, an '@' follows the hosts)"
        )
    );
    let e = error("mongodb://h/?authSource=").to_string();
    assert!(e.contains("authSource"), "{e}");
}

#[test]
fn user_info_errors_echo_no_fragment_of_the_password() {
    // Each password splits into two distinctive halves around a character that must be
    // escaped; a numeric password makes `user:1234` a valid host and `5678@h` a valid option
    // key or database, so only an up-front check keeps them out of the message.
    let cases = [
        ("mongodb://user:k7?zq@h", ["k7", "zq"]),
        ("mongodb://user:k7/zq@h", ["k7", "zq"]),
        ("mongodb://user:k7@zq@h", ["k7", "zq"]),
        ("mongodb://user:k7%zzq@h", ["k7", "zzq"]),
        ("mongodb://user:1234?5678@h", ["1234", "5678"]),
        ("mongodb://user:1234/5678@h", ["1234", "5678"]),
        ("mongodb://user:1234?a=5678@h", ["1234", "5678"]),
        ("mongodb+srv://user:k7?zq@c.example.com", ["k7", "zq"]),
        ("mongodb+srv://user:k7/zq@c.example.com", ["k7", "zq"]),
    ];
    for (uri, fragments) in cases {
        let error = ConnectionString::parse(uri).expect_err(uri);
        let shown = format!("{error} {error:?}");
        for fragment in fragments {
            assert!(!shown.contains(fragment), "{uri}: {shown}");
        }
        assert!(
            matches!(error, OptionsError::InvalidUserInfo(_)),
            "{uri}: {shown}"
        );
    }
    // Without credentials, an '@' after the hosts is refused even where it could have parsed
    // (%40 is fine); after credentials it belongs to the options.
    assert!(ConnectionString::parse("mongodb://h/?appName=a%40b").is_ok());
    assert!(ConnectionString::parse("mongodb://u:p@h/?appName=a@b").is_ok());
}

#[test]
fn warnings_name_the_option() {
    let w = warnings("mongodb://h/?connectMS=5");
    assert!(w.len() == 1 && w[0].contains("connectMS"), "{w:?}");
    let w = warnings("mongodb://h/?journal=yes");
    assert!(
        w.len() == 1 && w[0].contains("journal") && w[0].contains("yes"),
        "{w:?}"
    );
    let w = warnings("mongodb://h/?compressors=zlib,lz4");
    assert!(w.len() == 1 && w[0].contains("lz4"), "{w:?}");
    let w = warnings("mongodb://h/?appName=a&APPNAME=b");
    assert!(w.len() == 1 && w[0].contains("repeated"), "{w:?}");
    // Lists are built from repeated keys and must not warn.
    assert!(
        warnings("mongodb://h/?readPreference=nearest&readPreferenceTags=a:1&readPreferenceTags=")
            .is_empty()
    );
    assert!(!warnings("mongodb://h/?heartbeatFrequencyMS=499").is_empty());
    assert!(!warnings("mongodb+srv://c.example.com/?srvServiceName=-bad-").is_empty());
}

#[test]
fn a_negative_w_is_rejected() {
    assert!(ConnectionString::parse("mongodb://h/?w=-1").is_err());
    assert!(ConnectionString::parse("mongodb://h/?w=0").is_ok());
}

#[test]
fn option_values_are_typed() {
    let o = options(
        "mongodb://h/?readPreference=secondaryPreferred&readPreferenceTags=dc:ny,rack:1\
         &readPreferenceTags=&maxStalenessSeconds=120&w=majority&wTimeoutMS=5&journal=true\
         &readConcernLevel=snapshot&compressors=zstd,snappy,zstd&zlibCompressionLevel=3\
         &serverMonitoringMode=poll&maxAdaptiveRetries=0&enableOverloadRetargeting=true",
    );
    assert_eq!(
        o.read_preference.mode(),
        ReadPreferenceMode::SecondaryPreferred
    );
    assert_eq!(o.read_preference.tag_sets().len(), 2);
    assert_eq!(o.read_preference.tag_sets()[0]["rack"], "1");
    assert!(o.read_preference.tag_sets()[1].is_empty());
    assert_eq!(
        o.read_preference.max_staleness(),
        Some(Duration::from_secs(120))
    );
    assert_eq!(o.write_concern.w, Some(Acknowledgment::Majority));
    assert_eq!(o.write_concern.w_timeout, Some(Duration::from_millis(5)));
    assert_eq!(o.write_concern.journal, Some(true));
    assert_eq!(
        o.read_concern,
        Some(ReadConcern::new(ReadConcernLevel::Snapshot))
    );
    assert_eq!(o.compressors, vec![Compressor::Zstd, Compressor::Snappy]);
    assert_eq!(o.zlib_compression_level, Some(3));
    assert_eq!(o.server_monitoring_mode, ServerMonitoringMode::Poll);
    assert_eq!(o.max_adaptive_retries, 0);
    assert!(o.enable_overload_retargeting);
    let o = options("mongodb://h/?w=0");
    assert!(o.write_concern.is_unacknowledged());
}

#[test]
fn read_preference_rules() {
    // -1 means "no maximum" and is therefore fine with primary.
    let o = options("mongodb://h/?maxStalenessSeconds=-1");
    assert_eq!(o.read_preference.max_staleness(), None);
    // The 90 s minimum depends on the topology (mongos checks it itself), so it is enforced
    // at selection time, not here.
    let o = options("mongodb://h/?readPreference=secondary&maxStalenessSeconds=30");
    assert_eq!(
        o.read_preference.max_staleness(),
        Some(Duration::from_secs(30))
    );
    assert!(!warnings("mongodb://h/?maxStalenessSeconds=-2").is_empty());
    for bad in [
        "mongodb://h/?maxStalenessSeconds=120",
        "mongodb://h/?readPreference=primary&readPreferenceTags=dc:ny",
    ] {
        assert!(
            matches!(error(bad), OptionsError::InvalidOption { .. }),
            "{bad}"
        );
    }
}

#[test]
fn write_concern_rules() {
    assert!(matches!(
        error("mongodb://h/?w=0&journal=true"),
        OptionsError::Conflict {
            first: "w",
            second: "journal",
            ..
        }
    ));
    assert_eq!(Acknowledgment::parse("3"), Some(Acknowledgment::Nodes(3)));
    assert_eq!(Acknowledgment::parse("-1"), None);
    assert_eq!(
        Acknowledgment::parse("dcs"),
        Some(Acknowledgment::Custom("dcs".into()))
    );
}

#[test]
fn tls_is_enabled_explicitly_implicitly_or_by_srv() {
    assert!(options("mongodb://h/?tls=true").tls.enabled);
    assert!(options("mongodb://h/?ssl=true").tls.enabled);
    assert!(options("mongodb://h/?tlsCAFile=ca.pem").tls.enabled);
    let insecure = options("mongodb://h/?tlsInsecure=true").tls;
    assert!(insecure.accepts_invalid_certificates() && insecure.accepts_invalid_hostnames());
    assert!(matches!(
        error("mongodb://h/?tls=false&tlsCAFile=ca.pem"),
        OptionsError::Conflict { first: "tls", .. }
    ));
    assert!(matches!(
        error("mongodb://h/?tls=true&ssl=false"),
        OptionsError::Conflict { .. }
    ));
    let mut rng = SmallRng::seed_from_u64(1);
    let on = srv("mongodb+srv://c.example.com")
        .resolve_srv(&lookup(&["a.example.com"], &[]), &mut rng)
        .unwrap();
    assert!(on.options.tls.enabled);
    let off = srv("mongodb+srv://c.example.com/?tls=false")
        .resolve_srv(&lookup(&["a.example.com"], &[]), &mut rng)
        .unwrap();
    assert!(!off.options.tls.enabled);
    let code = Tls {
        insecure: true,
        allow_invalid_certificates: true,
        ..Tls::default()
    };
    assert!(code.validate().is_err());
}

#[test]
fn credentials_follow_the_auth_specification() {
    // Neither a database nor authSource alone asks for authentication.
    assert!(
        options("mongodb://h/db?authSource=other")
            .credential
            .is_none()
    );
    let c = options("mongodb://u:p@h/db").credential.unwrap();
    assert_eq!(c.source.as_deref(), Some("db"));
    assert_eq!(c.mechanism, None);
    let c = options("mongodb://u:p@h").credential.unwrap();
    assert_eq!(c.source.as_deref(), Some("admin"));
    let c = options("mongodb://u:p@h/db?authMechanism=PLAIN")
        .credential
        .unwrap();
    assert_eq!(c.source.as_deref(), Some("db"));
    let c = options("mongodb://u:p@h/?authMechanism=PLAIN")
        .credential
        .unwrap();
    assert_eq!(c.source.as_deref(), Some("$external"));
    let c = options("mongodb://h/db?authMechanism=MONGODB-X509")
        .credential
        .unwrap();
    assert_eq!(c.source.as_deref(), Some("$external"));
    assert_eq!(c.username, None);
    let c = options("mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure,TOKEN_RESOURCE:api://x").credential.unwrap();
    assert_eq!(c.property("token_resource"), Some("api://x"));
    let c = options("mongodb://u@h/?authMechanism=GSSAPI&authMechanismProperties=service_name:alt")
        .credential
        .unwrap();
    assert_eq!(c.property("SERVICE_NAME"), Some("alt"));
    for bad in [
        "mongodb://@h",
        "mongodb://:p@h",
        "mongodb://u@h/?authMechanism=SCRAM-SHA-256",
        "mongodb://u:p@h/?authMechanism=MONGODB-X509",
        "mongodb://h/?authMechanism=MONGODB-X509&authSource=admin",
        "mongodb://u:p@h/?authMechanism=SCRAM-SHA-1&authMechanismProperties=SERVICE_NAME:x",
        "mongodb://u@h/?authMechanism=GSSAPI&authMechanismProperties=CANONICALIZE_HOST_NAME:sideways",
        "mongodb://u@h/?authMechanism=GSSAPI&authMechanismProperties=REALM:x",
        "mongodb://h/?authMechanism=GSSAPI",
        "mongodb://u@h/?authMechanism=MONGODB-AWS",
        "mongodb://:p@h/?authMechanism=MONGODB-AWS",
        "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:t",
        "mongodb://u:p@h/?authMechanism=MONGODB-AWS&authMechanismProperties=SERVICE_NAME:x",
        "mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:azure",
        "mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:k8s,TOKEN_RESOURCE:x",
        "mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:moon",
        "mongodb://u:p@h/?authMechanism=MONGODB-OIDC",
    ] {
        assert!(
            matches!(error(bad), OptionsError::InvalidCredential { .. }),
            "{bad}"
        );
    }
}

#[test]
fn code_level_validation() {
    let valid = ClientOptions::default();
    assert_eq!(valid.validate(), Ok(()));
    let check = |edit: &dyn Fn(&mut ClientOptions), option: &str| {
        let mut o = ClientOptions::default();
        edit(&mut o);
        let e = o.validate().expect_err(option).to_string();
        assert!(e.contains(option), "{option}: {e}");
    };
    check(
        &|o| o.heartbeat_frequency = Duration::from_millis(499),
        "heartbeatFrequencyMS",
    );
    check(
        &|o| {
            o.max_pool_size = 5;
            o.min_pool_size = 6
        },
        "minPoolSize",
    );
    check(&|o| o.max_connecting = 0, "maxConnecting");
    check(
        &|o| o.zlib_compression_level = Some(10),
        "zlibCompressionLevel",
    );
    check(&|o| o.app_name = Some("x".repeat(129)), "appname");
    check(&|o| o.srv_max_hosts = Some(2), "srvMaxHosts");
    check(
        &|o| {
            o.hosts.push(ServerAddress::tcp("b", 1));
            o.direct_connection = Some(true);
        },
        "directConnection",
    );
    let unlimited = ClientOptions {
        max_pool_size: 0,
        min_pool_size: 50,
        ..ClientOptions::default()
    };
    assert_eq!(unlimited.validate(), Ok(()));
    let mut none = ClientOptions::default();
    none.hosts.clear();
    assert_eq!(none.validate(), Err(OptionsError::MissingHost));
}

#[test]
fn topology_combinations() {
    for (bad, option) in [
        ("mongodb://a,b/?directConnection=true", "directConnection"),
        ("mongodb://a,b/?loadBalanced=true", "loadBalanced"),
        ("mongodb://a/?loadBalanced=true&replicaSet=rs", "replicaSet"),
        (
            "mongodb+srv://c.example.com/?directConnection=true",
            "directConnection",
        ),
        (
            "mongodb+srv://c.example.com/?srvMaxHosts=1&replicaSet=rs",
            "replicaSet",
        ),
        ("mongodb://a/?srvServiceName=svc", "srvServiceName"),
    ] {
        let e = error(bad).to_string();
        assert!(e.contains(option), "{bad}: {e}");
    }
    assert!(srv("mongodb+srv://c.example.com/?directConnection=false").is_srv());
}

#[test]
fn srv_host_names_and_domains() {
    let three = SrvHost::parse("Cluster0.Example.COM.").unwrap();
    assert_eq!(three.hostname(), "cluster0.example.com");
    assert_eq!(three.domain(), "example.com");
    assert_eq!(
        three.srv_query_name("mongodb"),
        "_mongodb._tcp.cluster0.example.com"
    );
    assert_eq!(
        SrvHost::parse("mongodb.local").unwrap().domain(),
        "mongodb.local"
    );
    assert_eq!(SrvHost::parse("localhost").unwrap().domain(), "localhost");
    for bad in [
        "a.example.com:27017",
        "a.example.com,b.example.com",
        "[::1]",
        "a..com",
        "%2Fx.sock",
    ] {
        assert!(
            matches!(
                SrvHost::parse(bad),
                Err(OptionsError::InvalidSrvHost { .. })
            ),
            "{bad}"
        );
    }
    let parsed = srv("mongodb+srv://c.example.com/?srvServiceName=custom");
    assert_eq!(
        parsed.srv_query_name().as_deref(),
        Some("_custom._tcp.c.example.com")
    );
    assert_eq!(
        options("mongodb://h").effective_srv_service_name(),
        "mongodb"
    );
}

#[test]
fn srv_targets_must_stay_inside_the_domain() {
    let three = SrvHost::parse("c.example.com").unwrap();
    assert_eq!(
        three.check_target(&record("Node1.Example.com.", 27018)),
        Ok(ServerAddress::tcp("node1.example.com", 27018))
    );
    for outside in ["node.evil.com", "example.com", "node.notexample.com"] {
        assert!(
            matches!(
                three.check_target(&record(outside, 27017)),
                Err(OptionsError::SrvTargetOutsideDomain { .. })
            ),
            "{outside}"
        );
    }
    // Names of one or two labels: targets must be one level deeper than the name itself.
    let short = SrvHost::parse("mongodb.local").unwrap();
    assert!(short.check_target(&record("a.mongodb.local", 1)).is_ok());
    assert!(short.check_target(&record("mongodb.local", 1)).is_err());
    assert!(short.check_target(&record("evilmongodb.local", 1)).is_err());
    let single = SrvHost::parse("localhost").unwrap();
    assert!(single.check_target(&record("test.localhost", 1)).is_ok());
    assert!(single.check_target(&record("localhost", 1)).is_err());
    assert!(matches!(
        three.check_target(&record("a.example.com", 0)),
        Err(OptionsError::InvalidHost { .. })
    ));
    assert_eq!(
        three.check_targets(&[]),
        Err(OptionsError::NoSrvRecords("c.example.com".into()))
    );
    let e = three
        .check_targets(&[record("a.example.com", 1), record("b.other.org", 1)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("b.other.org") && e.contains("example.com"),
        "{e}"
    );
}

#[test]
fn txt_records_add_only_allowed_options_and_the_string_wins() {
    let mut rng = SmallRng::seed_from_u64(7);
    let resolved = srv("mongodb+srv://u:p@c.example.com/?authSource=fromuri")
        .resolve_srv(
            &lookup(
                &["a.example.com", "b.example.com"],
                &[&["replicaSet=rs0&auth", "Source=fromtxt"]],
            ),
            &mut rng,
        )
        .unwrap();
    assert_eq!(resolved.options.replica_set.as_deref(), Some("rs0"));
    let credential = resolved.options.credential.unwrap();
    assert_eq!(credential.source.as_deref(), Some("fromuri"));
    assert_eq!(resolved.options.hosts.len(), 2);
    assert_eq!(
        resolved.options.srv_host.unwrap().hostname(),
        "c.example.com"
    );

    let parsed = srv("mongodb+srv://c.example.com");
    let one = ["a.example.com"];
    assert_eq!(
        parsed
            .resolve_srv(&lookup(&one, &[&["a=1"], &["b=2"]]), &mut rng)
            .unwrap_err(),
        OptionsError::MultipleTxtRecords(2)
    );
    assert_eq!(
        parsed
            .resolve_srv(&lookup(&one, &[&["ssl=false"]]), &mut rng)
            .unwrap_err(),
        OptionsError::TxtOptionNotAllowed("ssl".into())
    );
    assert!(matches!(
        parsed.resolve_srv(&lookup(&one, &[&["replicaSet"]]), &mut rng),
        Err(OptionsError::OptionWithoutValue(_))
    ));
    // Validation runs on the combined options: loadBalanced from TXT with two targets.
    let two = ["a.example.com", "b.example.com"];
    assert!(
        parsed
            .resolve_srv(&lookup(&two, &[&["loadBalanced=true"]]), &mut rng)
            .is_err()
    );
    assert!(
        parsed
            .resolve_srv(&lookup(&one, &[&["loadBalanced=true"]]), &mut rng)
            .unwrap()
            .options
            .load_balanced
    );
    let limited = srv("mongodb+srv://c.example.com/?srvMaxHosts=1");
    assert!(
        limited
            .resolve_srv(&lookup(&two, &[&["replicaSet=rs"]]), &mut rng)
            .is_err()
    );
    let w = parsed
        .resolve_srv(&lookup(&one, &[&["loadBalanced=maybe"]]), &mut rng)
        .unwrap()
        .warnings;
    assert!(w.iter().any(|w| w.contains("loadBalanced")), "{w:?}");
    let plain = ConnectionString::parse("mongodb://h").unwrap();
    assert_eq!(
        plain.resolve_srv(&lookup(&one, &[]), &mut rng).unwrap_err(),
        OptionsError::NotSrv
    );
}

#[test]
fn srv_max_hosts_picks_a_random_subset() {
    let hosts: Vec<ServerAddress> = (0..5)
        .map(|i| ServerAddress::tcp(format!("h{i}"), 1))
        .collect();
    let mut rng = SmallRng::seed_from_u64(42);
    assert_eq!(srv::choose_hosts(hosts.clone(), None, &mut rng), hosts);
    assert_eq!(srv::choose_hosts(hosts.clone(), Some(0), &mut rng), hosts);
    assert_eq!(srv::choose_hosts(hosts.clone(), Some(5), &mut rng), hosts);
    let mut chosen_ever = std::collections::HashSet::new();
    for _ in 0..200 {
        let chosen = srv::choose_hosts(hosts.clone(), Some(2), &mut rng);
        assert_eq!(chosen.len(), 2);
        assert_ne!(chosen[0], chosen[1]);
        assert!(chosen.iter().all(|h| hosts.contains(h)));
        chosen_ever.extend(chosen);
    }
    // A fair shuffle reaches every host; a broken one (always the first two) would not.
    assert_eq!(chosen_ever.len(), 5);
    let resolved = srv("mongodb+srv://c.example.com/?srvMaxHosts=2")
        .resolve_srv(
            &lookup(&["a.example.com", "b.example.com", "c.example.com"], &[]),
            &mut rng,
        )
        .unwrap();
    assert_eq!(resolved.options.hosts.len(), 2);
    assert_eq!(resolved.options.srv_max_hosts, Some(2));
}

#[test]
fn client_options_parse_routes_by_scheme() {
    match ClientOptions::parse("mongodb://h/?foo=1").unwrap() {
        ParsedUri::Complete { warnings, .. } => assert_eq!(warnings.len(), 1),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ClientOptions::parse("mongodb+srv://c.example.com").unwrap(),
        ParsedUri::NeedsSrv(_)
    ));
}

#[test]
fn aws_takes_a_key_pair_with_an_optional_session_token_or_nothing() {
    let c = options(
        "mongodb://AKID:secret@h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:tok",
    )
    .credential
    .unwrap();
    assert_eq!(c.username.as_deref(), Some("AKID"));
    assert_eq!(c.password.as_deref(), Some("secret"));
    assert_eq!(c.property("AWS_SESSION_TOKEN"), Some("tok"));
    assert_eq!(c.resolved_source(), "$external");
    let bare = options("mongodb://h/?authMechanism=MONGODB-AWS")
        .credential
        .unwrap();
    assert_eq!(bare.username, None);
}

#[test]
fn an_auth_source_without_credentials_is_kept_but_asks_for_no_authentication() {
    let mut rng = SmallRng::seed_from_u64(3);
    let parsed = srv("mongodb+srv://c.example.com/");
    let resolved = parsed
        .resolve_srv(
            &lookup(&["a.example.com"], &[&["authSource=fromtxt"]]),
            &mut rng,
        )
        .unwrap()
        .options;
    assert_eq!(resolved.auth_source.as_deref(), Some("fromtxt"));
    assert_eq!(resolved.credential, None);

    let overridden = srv("mongodb+srv://c.example.com/?authSource=fromuri")
        .resolve_srv(
            &lookup(&["a.example.com"], &[&["authSource=fromtxt"]]),
            &mut rng,
        )
        .unwrap()
        .options;
    assert_eq!(overridden.auth_source.as_deref(), Some("fromuri"));

    let plain = options("mongodb://h/?authSource=db");
    assert_eq!(plain.auth_source.as_deref(), Some("db"));
    assert_eq!(plain.credential, None);
    assert_eq!(options("mongodb://h").auth_source, None);
}
