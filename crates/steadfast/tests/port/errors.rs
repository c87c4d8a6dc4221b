//! Error handling written as code for the official driver does it: matching on `*error.kind`
//! (binding by reference and by value), reading the payloads' fields, and asking for labels
//! with `contains_label`. Each program runs against an embedded blackpipe deployment.

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use steadfast::error::{
    ErrorKind, Outcome, PartialBulkWriteResult, RETRYABLE_WRITE_ERROR, WriteFailure,
};
use steadfast::{Client, InsertOneModel, WriteModel};

/// The server's code for a unique index violation.
const DUPLICATE_KEY: i32 = 11000;

async fn standalone(query: &str) -> (Deployment, Client) {
    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("the deployment starts");
    let uri = format!("{}{query}", deployment.uri());
    let client = Client::with_uri_str(&uri)
        .await
        .expect("valid connection string");
    (deployment, client)
}

#[tokio::test]
async fn a_duplicate_key_is_a_write_error_matched_through_the_boxed_kind() {
    let (_deployment, client) = standalone("").await;
    let coll = client.database("port").collection::<Document>("dup");
    coll.insert_one(doc! { "_id": 1 }).await.unwrap();
    let error = coll.insert_one(doc! { "_id": 1 }).await.unwrap_err();

    let code = match *error.kind {
        ErrorKind::Write(WriteFailure::WriteError(ref e)) => e.code,
        ref other => panic!("expected a write error, got {other:?}"),
    };
    assert_eq!(code, DUPLICATE_KEY);
    assert!(!error.contains_label(RETRYABLE_WRITE_ERROR));

    // Moving the payload out of the box, as `match *e.kind` allows on an owned error.
    let write_error = match *error.kind {
        ErrorKind::Write(WriteFailure::WriteError(write_error)) => write_error,
        other => panic!("expected a write error, got {other:?}"),
    };
    assert!(
        write_error.message.contains("duplicate key"),
        "{write_error:?}"
    );
}

#[tokio::test]
async fn an_unknown_command_is_a_command_error() {
    let (_deployment, client) = standalone("").await;
    let error = client
        .database("port")
        .run_command(doc! { "noSuchCommand": 1 })
        .await
        .unwrap_err();
    match error.kind.as_ref() {
        ErrorKind::Command(command_error) => {
            assert_eq!(command_error.code, 59);
            assert_eq!(command_error.code_name, "CommandNotFound");
            assert!(command_error.message.contains("noSuchCommand"));
        }
        other => panic!("expected a command error, got {other:?}"),
    }
    // The whole reply travels with the error, for the fields `CommandError` does not model.
    let response = error
        .server_response()
        .expect("a command error keeps the server's reply");
    assert_eq!(response.get_str("codeName").ok(), Some("CommandNotFound"));
}

#[tokio::test]
async fn insert_many_with_a_duplicate_reports_the_refused_index_and_the_inserted_ids() {
    let (_deployment, client) = standalone("").await;
    let coll = client.database("port").collection::<Document>("many");
    coll.insert_one(doc! { "_id": 2 }).await.unwrap();
    let error = coll
        .insert_many(vec![
            doc! { "_id": 1 },
            doc! { "_id": 2 },
            doc! { "_id": 3 },
        ])
        .ordered(false)
        .await
        .unwrap_err();

    let ErrorKind::InsertMany(ref failure) = *error.kind else {
        panic!("expected an insert_many failure, got {error:?}");
    };
    let write_errors = failure.write_errors.as_ref().expect("one document refused");
    assert_eq!(write_errors.len(), 1);
    assert_eq!(
        (write_errors[0].index, write_errors[0].code),
        (1, DUPLICATE_KEY)
    );
    assert!(failure.write_concern_error.is_none());
    // A steadfast addition: the official driver keeps these private.
    let mut inserted: Vec<usize> = failure.inserted_ids.keys().copied().collect();
    inserted.sort_unstable();
    assert_eq!(inserted, [0, 2]);
}

#[tokio::test]
async fn a_bulk_write_failure_names_the_refused_model() {
    let (_deployment, client) = standalone("").await;
    let coll = client.database("port").collection::<Document>("bulk");
    let models: Vec<WriteModel<Document>> = vec![
        WriteModel::InsertOne(InsertOneModel::new(doc! { "_id": 1 })),
        WriteModel::InsertOne(InsertOneModel::new(doc! { "_id": 1 })),
        WriteModel::InsertOne(InsertOneModel::new(doc! { "_id": 2 })),
    ];
    let error = coll.bulk_write(models).await.unwrap_err();

    match *error.kind {
        ErrorKind::BulkWrite(ref failure) => {
            assert_eq!(failure.write_errors.len(), 1);
            assert_eq!(failure.write_errors[&1].code, DUPLICATE_KEY);
            assert!(failure.write_concern_errors.is_empty());
            let Some(PartialBulkWriteResult::Summary(ref applied)) = failure.partial_result else {
                panic!("model 0 was applied: {:?}", failure.partial_result);
            };
            assert_eq!(applied.inserted_count, 1);
        }
        ref other => panic!("expected a bulk write failure, got {other:?}"),
    }
}

#[tokio::test]
async fn no_reachable_server_is_a_server_selection_error() {
    // Port 1 refuses connections; the selection timeout bounds the wait.
    let client = Client::with_uri_str("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100")
        .await
        .expect("valid connection string");
    let error = client
        .database("port")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_err();
    assert!(
        matches!(*error.kind, ErrorKind::ServerSelection { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_retryable_write_error_label_is_found_with_contains_label() {
    // Without retries, the labelled error reaches the application.
    let (_deployment, client) = standalone("?retryWrites=false").await;
    client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": { "times": 1 },
            "data": {
                "failCommands": ["insert"],
                "errorCode": 91,
                "errorLabels": [RETRYABLE_WRITE_ERROR],
            },
        })
        .await
        .unwrap();
    let coll = client.database("port").collection::<Document>("labels");
    let error = coll.insert_one(doc! { "_id": 1 }).await.unwrap_err();

    assert!(error.contains_label(RETRYABLE_WRITE_ERROR), "{error:?}");
    let from_config = String::from("RetryableWriteError");
    assert!(error.contains_label(&from_config));
    assert!(error.labels().contains("RetryableWriteError"));
    assert!(!error.contains_label("TransientTransactionError"));
    let listed: Vec<String> = error.labels().iter().map(String::from).collect();
    assert_eq!(listed, [RETRYABLE_WRITE_ERROR]);
    match *error.kind {
        ErrorKind::Command(ref command_error) => assert_eq!(command_error.code, 91),
        ref other => panic!("expected a command error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_closed_connection_is_an_io_error() {
    let (_deployment, client) = standalone("?retryWrites=false").await;
    client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": { "times": 1 },
            "data": { "failCommands": ["insert"], "closeConnection": true },
        })
        .await
        .unwrap();
    let coll = client.database("port").collection::<Document>("closed");
    let error = coll.insert_one(doc! { "_id": 1 }).await.unwrap_err();

    match *error.kind {
        ErrorKind::Io(ref io_error) => {
            assert_ne!(io_error.kind(), std::io::ErrorKind::TimedOut, "{io_error}");
        }
        ref other => panic!("expected an I/O error, got {other:?}"),
    }
    // What steadfast adds: the request was sent and no reply came, so the write may have
    // been applied.
    assert!(error.is_network_error() && !error.is_timeout());
    assert_eq!(error.outcome(), Outcome::Ambiguous);
}
