use super::*;

fn metadata(app_name: Option<&str>, env: &Environment) -> Result<Document> {
    client_metadata(app_name, env, &[])
}

fn env(vars: &[(&str, &str)]) -> Environment {
    Environment {
        os_type: "Linux".into(),
        os_name: Some("linux".into()),
        architecture: Some("x86_64".into()),
        variables: vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        docker: false,
    }
}

#[test]
fn required_fields_are_present() {
    let client = metadata(Some("my-app"), &env(&[])).unwrap();
    assert_eq!(
        client
            .get_document("application")
            .unwrap()
            .get_str("name")
            .ok(),
        Some("my-app")
    );
    let driver = client.get_document("driver").unwrap();
    assert_eq!(driver.get_str("name").ok(), Some("steadfast"));
    assert_eq!(
        driver.get_str("version").ok(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    let os = client.get_document("os").unwrap();
    assert_eq!(os.get_str("type").ok(), Some("Linux"));
    assert_eq!(os.get_str("architecture").ok(), Some("x86_64"));
    assert!(client.get_str("platform").unwrap().starts_with("Rust"));
    assert!(
        !client.contains_key("env"),
        "no env document without detections"
    );
}

#[test]
fn no_application_without_app_name_and_long_names_are_rejected() {
    let client = metadata(None, &env(&[])).unwrap();
    assert!(!client.contains_key("application"));
    let long = "x".repeat(MAX_APP_NAME_SIZE + 1);
    let err = metadata(Some(&long), &env(&[])).unwrap_err();
    assert!(err.to_string().contains("appName"), "{err}");
    assert!(metadata(Some(&"x".repeat(MAX_APP_NAME_SIZE)), &env(&[])).is_ok());
}

#[test]
fn aws_lambda_is_detected_with_its_fields() {
    let client = metadata(
        None,
        &env(&[
            ("AWS_EXECUTION_ENV", "AWS_Lambda_java8"),
            ("AWS_REGION", "us-east-2"),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024"),
        ]),
    )
    .unwrap();
    let e = client.get_document("env").unwrap();
    assert_eq!(e.get_str("name").ok(), Some("aws.lambda"));
    assert_eq!(e.get_str("region").ok(), Some("us-east-2"));
    assert_eq!(e.get_i32("memory_mb").ok(), Some(1024));
}

#[test]
fn wrongly_typed_values_are_omitted_silently() {
    let client = metadata(
        None,
        &env(&[
            ("AWS_LAMBDA_RUNTIME_API", "x"),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "big"),
        ]),
    )
    .unwrap();
    let e = client.get_document("env").unwrap();
    assert_eq!(e.get_str("name").ok(), Some("aws.lambda"));
    assert!(!e.contains_key("memory_mb"));
}

#[test]
fn aws_execution_env_must_have_the_lambda_prefix() {
    let client = metadata(None, &env(&[("AWS_EXECUTION_ENV", "EC2")])).unwrap();
    assert!(!client.contains_key("env"));
}

#[test]
fn gcp_and_azure_and_vercel() {
    let gcp = metadata(
        None,
        &env(&[
            ("K_SERVICE", "svc"),
            ("FUNCTION_MEMORY_MB", "1024"),
            ("FUNCTION_TIMEOUT_SEC", "60"),
            ("FUNCTION_REGION", "us-central1"),
        ]),
    )
    .unwrap();
    let e = gcp.get_document("env").unwrap();
    assert_eq!(e.get_str("name").ok(), Some("gcp.func"));
    assert_eq!(e.get_i32("timeout_sec").ok(), Some(60));
    assert_eq!(e.get_str("region").ok(), Some("us-central1"));
    let azure = metadata(None, &env(&[("FUNCTIONS_WORKER_RUNTIME", "node")])).unwrap();
    assert_eq!(
        azure.get_document("env").unwrap().get_str("name").ok(),
        Some("azure.func")
    );
    // vercel wins over aws; any other combination omits the FaaS fields.
    let both = metadata(
        None,
        &env(&[
            ("AWS_LAMBDA_RUNTIME_API", "x"),
            ("VERCEL", "1"),
            ("VERCEL_REGION", "cdg1"),
        ]),
    )
    .unwrap();
    let e = both.get_document("env").unwrap();
    assert_eq!(e.get_str("name").ok(), Some("vercel"));
    assert_eq!(e.get_str("region").ok(), Some("cdg1"));
    let conflicting = metadata(
        None,
        &env(&[
            ("AWS_LAMBDA_RUNTIME_API", "x"),
            ("FUNCTIONS_WORKER_RUNTIME", "node"),
        ]),
    )
    .unwrap();
    assert!(!conflicting.contains_key("env"));
}

#[test]
fn container_runtime_and_orchestrator() {
    let mut e = env(&[
        ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
        ("FUNCTIONS_WORKER_RUNTIME", "n"),
    ]);
    e.docker = true;
    let client = metadata(None, &e).unwrap();
    let env_doc = client.get_document("env").unwrap();
    assert_eq!(
        env_doc.get_str("name").ok(),
        Some("azure.func"),
        "FaaS and container together"
    );
    let container = env_doc.get_document("container").unwrap();
    assert_eq!(container.get_str("runtime").ok(), Some("docker"));
    assert_eq!(container.get_str("orchestrator").ok(), Some("kubernetes"));
}

#[test]
fn truncation_drops_env_fields_first_then_os_fields() {
    let region = "r".repeat(400);
    let client = metadata(
        Some("app"),
        &env(&[("VERCEL", "1"), ("VERCEL_REGION", region.as_str())]),
    )
    .unwrap();
    assert!(encoded_len(&client) <= MAX_METADATA_SIZE);
    let e = client.get_document("env").unwrap();
    assert_eq!(e.get_str("name").ok(), Some("vercel"));
    assert!(!e.contains_key("region"));
    assert!(
        client.get_document("os").unwrap().contains_key("name"),
        "os untouched when enough"
    );

    let mut big_os = env(&[("VERCEL", "1")]);
    big_os.os_name = Some("n".repeat(450));
    let client = metadata(Some("app"), &big_os).unwrap();
    assert!(encoded_len(&client) <= MAX_METADATA_SIZE);
    let os = client.get_document("os").unwrap();
    assert_eq!(os.keys().collect::<Vec<_>>(), ["type"]);
    assert_eq!(
        client.get_document("env").unwrap().get_str("name").ok(),
        Some("vercel")
    );
}

#[test]
fn truncation_finally_cuts_the_platform() {
    let mut huge = env(&[("VERCEL", "1")]);
    huge.os_type = "t".repeat(250);
    let client = metadata(Some(&"a".repeat(MAX_APP_NAME_SIZE)), &huge).unwrap();
    assert!(encoded_len(&client) <= MAX_METADATA_SIZE);
    assert!(!client.contains_key("env"));
    let platform = client.get_str("platform").unwrap();
    assert!(platform.len() < super::platform().len());
    assert!(super::platform().starts_with(platform));
}

#[test]
fn wrapping_libraries_are_appended_with_a_delimiter() {
    let wrappers = [
        DriverInfo::new("odm")
            .version("2.0")
            .platform("odm-platform"),
        DriverInfo::new("framework").version(""),
    ];
    let client = client_metadata(None, &env(&[]), &wrappers).unwrap();
    let driver = client.get_document("driver").unwrap();
    assert_eq!(driver.get_str("name").ok(), Some("steadfast|odm|framework"));
    assert_eq!(
        driver.get_str("version").ok(),
        Some(format!("{}|2.0", env!("CARGO_PKG_VERSION")).as_str()),
        "an empty version is not appended"
    );
    assert!(
        client
            .get_str("platform")
            .unwrap()
            .ends_with("|odm-platform")
    );
}

#[test]
fn driver_info_rules() {
    assert!(DriverInfo::new("a|b").validate().is_err());
    assert!(DriverInfo::new("a").version("1|2").validate().is_err());
    assert!(DriverInfo::new("a").platform("x|").validate().is_err());
    assert!(DriverInfo::new("a").version("1").validate().is_ok());
    assert_eq!(
        DriverInfo::new("a").version("").normalized(),
        DriverInfo::new("a").normalized(),
        "an empty field is the same as an unset one"
    );
}
