use std::time::Duration;

use bson::{Bson, doc};
use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::*;

fn rng() -> SmallRng {
    SmallRng::seed_from_u64(7)
}

fn facts<'a>(name: &'a str, namespace: &'a str, app_name: Option<&'a str>) -> CommandFacts<'a> {
    CommandFacts {
        name,
        namespace,
        app_name,
        supports_write_concern: matches!(name, "insert" | "update" | "delete" | "findAndModify"),
    }
}

fn configured(command: bson::Document) -> FailPoints {
    let mut points = FailPoints::new();
    points
        .configure(&command)
        .expect("valid configureFailPoint");
    points
}

#[test]
fn mode_parses_every_form_and_rejects_bad_ones() {
    assert_eq!(
        FailPointMode::parse(&Bson::String("off".into())),
        Ok(FailPointMode::Off)
    );
    assert_eq!(
        FailPointMode::parse(&Bson::String("alwaysOn".into())),
        Ok(FailPointMode::AlwaysOn)
    );
    assert_eq!(
        FailPointMode::parse(&Bson::Document(doc! {"times": 2})),
        Ok(FailPointMode::Times(2))
    );
    assert_eq!(
        FailPointMode::parse(&Bson::Document(doc! {"skip": 3_i64})),
        Ok(FailPointMode::Skip(3))
    );
    assert_eq!(
        FailPointMode::parse(&Bson::Document(doc! {"activationProbability": 0.25})),
        Ok(FailPointMode::Probability(0.25))
    );
    let bad_string = FailPointMode::parse(&Bson::String("sometimes".into())).unwrap_err();
    assert_eq!(bad_string.code, 2);
    let negative = FailPointMode::parse(&Bson::Document(doc! {"times": -1})).unwrap_err();
    assert_eq!(negative.code, 2);
    let probability =
        FailPointMode::parse(&Bson::Document(doc! {"activationProbability": 1.5})).unwrap_err();
    assert_eq!(probability.code, 2);
    let wrong_type = FailPointMode::parse(&Bson::Int32(1)).unwrap_err();
    assert_eq!(wrong_type.code, 14);
    let unknown_key = FailPointMode::parse(&Bson::Document(doc! {"often": 1})).unwrap_err();
    assert_eq!(unknown_key.code, 2);
}

#[test]
fn the_legacy_hello_matches_by_either_of_its_names() {
    for (listed, sent) in [("ismaster", "isMaster"), ("isMaster", "ismaster")] {
        let mut points = configured(doc! {
            "configureFailPoint": "failCommand",
            "mode": "alwaysOn",
            "data": {"failCommands": [listed], "closeConnection": true},
        });
        let action = points.before_command(&facts(sent, "admin.$cmd", None), &mut rng());
        assert_eq!(
            action.map(|a| a.outcome),
            Some(FailOutcome::CloseConnection),
            "{listed} listed, {sent} sent"
        );
        // Other commands are still told apart by their exact name.
        assert!(
            points
                .before_command(&facts("hello", "admin.$cmd", None), &mut rng())
                .is_none()
        );
    }
}

#[test]
fn times_triggers_exactly_n_matching_commands_and_ignores_others() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": {"times": 2},
        "data": {"failCommands": ["insert"], "errorCode": 91},
    });
    let mut rng = rng();
    // A non-matching command never consumes the count.
    assert!(
        points
            .before_command(&facts("find", "db.c", None), &mut rng)
            .is_none()
    );
    for _ in 0..2 {
        let action = points
            .before_command(&facts("insert", "db.c", None), &mut rng)
            .expect("triggers");
        assert_eq!(
            action.outcome,
            FailOutcome::Error {
                code: 91,
                labels: None
            }
        );
        assert_eq!(action.block_for, None);
    }
    assert!(
        points
            .before_command(&facts("insert", "db.c", None), &mut rng)
            .is_none()
    );
    assert!(!points.any_active());
    // Reconfiguring reports how many times it triggered.
    let reply = points
        .configure(&doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .unwrap();
    assert_eq!(reply, doc! {"count": 2_i64, "ok": 1.0});
}

#[test]
fn count_accumulates_across_configurations() {
    let mut points = FailPoints::new();
    let mut rng = rng();
    let insert = facts("insert", "db.c", None);
    let always = doc! {
        "configureFailPoint": "failCommand",
        "mode": "alwaysOn",
        "data": {"failCommands": ["insert"], "errorCode": 2},
    };
    assert_eq!(
        points.configure(&always).unwrap().get_i64("count").ok(),
        Some(0)
    );
    for _ in 0..3 {
        points.before_command(&insert, &mut rng).unwrap();
    }
    assert_eq!(
        points.configure(&always).unwrap().get_i64("count").ok(),
        Some(3)
    );
    points.before_command(&insert, &mut rng).unwrap();
    let off = doc! {"configureFailPoint": "failCommand", "mode": "off"};
    assert_eq!(
        points.configure(&off).unwrap().get_i64("count").ok(),
        Some(4)
    );
    assert_eq!(
        points.configure(&off).unwrap().get_i64("count").ok(),
        Some(4)
    );
}

#[test]
fn skip_lets_the_first_n_pass_then_stays_on() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": {"skip": 2},
        "data": {"failCommands": ["find"], "closeConnection": true},
    });
    let mut rng = rng();
    let find = facts("find", "db.c", None);
    assert!(points.before_command(&find, &mut rng).is_none());
    assert!(points.before_command(&find, &mut rng).is_none());
    for _ in 0..5 {
        assert_eq!(
            points.before_command(&find, &mut rng).unwrap().outcome,
            FailOutcome::CloseConnection
        );
    }
}

#[test]
fn filters_check_app_name_and_namespace() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": "alwaysOn",
        "data": {"failCommands": ["insert"], "errorCode": 11600, "appName": "app", "namespace": "db.c"},
    });
    let mut rng = rng();
    assert!(
        points
            .before_command(&facts("insert", "db.c", None), &mut rng)
            .is_none()
    );
    assert!(
        points
            .before_command(&facts("insert", "db.c", Some("other")), &mut rng)
            .is_none()
    );
    assert!(
        points
            .before_command(&facts("insert", "db.d", Some("app")), &mut rng)
            .is_none()
    );
    assert!(
        points
            .before_command(&facts("insert", "db.c", Some("app")), &mut rng)
            .is_some()
    );
}

#[test]
fn configure_fail_point_itself_is_never_failed() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": "alwaysOn",
        "data": {"failCommands": ["configureFailPoint"], "errorCode": 2},
    });
    let command = facts("configureFailPoint", "admin.$cmd", None);
    assert!(points.before_command(&command, &mut rng()).is_none());
}

#[test]
fn close_wins_over_error_code_and_block_comes_first() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": "alwaysOn",
        "data": {
            "failCommands": ["ping"], "errorCode": 2, "closeConnection": true,
            "blockConnection": true, "blockTimeMS": 150,
        },
    });
    let action = points
        .before_command(&facts("ping", "admin.$cmd", None), &mut rng())
        .unwrap();
    assert_eq!(action.block_for, Some(Duration::from_millis(150)));
    assert_eq!(action.outcome, FailOutcome::CloseConnection);
}

#[test]
fn block_only_proceeds_after_the_block() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": {"times": 1},
        "data": {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 20},
    });
    let action = points
        .before_command(&facts("find", "db.c", None), &mut rng())
        .unwrap();
    assert_eq!(action.outcome, FailOutcome::Proceed);
    assert_eq!(action.block_for, Some(Duration::from_millis(20)));
}

#[test]
fn block_without_time_is_rejected() {
    let error = FailPoints::new()
        .configure(&doc! {
            "configureFailPoint": "failCommand",
            "mode": "alwaysOn",
            "data": {"failCommands": ["find"], "blockConnection": true},
        })
        .unwrap_err();
    assert_eq!(error.code, 72);
}

#[test]
fn error_labels_override_is_carried_even_when_empty() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": "alwaysOn",
        "data": {"failCommands": ["insert"], "errorCode": 10107, "errorLabels": []},
    });
    let action = points
        .before_command(&facts("insert", "db.c", None), &mut rng())
        .unwrap();
    assert_eq!(
        action.outcome,
        FailOutcome::Error {
            code: 10107,
            labels: Some(vec![])
        }
    );
}

#[test]
fn write_concern_error_is_counted_after_the_write_only() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": {"times": 1},
        "data": {
            "failCommands": ["insert"],
            "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"},
            "errorLabels": ["RetryableWriteError"],
        },
    });
    let mut rng = rng();
    let insert = facts("insert", "db.c", None);
    // A writeConcernError-only fail point does nothing before the command and keeps its count.
    assert!(points.before_command(&insert, &mut rng).is_none());
    let injection = points
        .after_write(&insert, &mut rng)
        .expect("triggers once");
    assert_eq!(
        injection.error,
        doc! {"code": 91, "errmsg": "Replication is being shut down"}
    );
    assert_eq!(
        injection.labels,
        Some(vec!["RetryableWriteError".to_string()])
    );
    assert!(points.after_write(&insert, &mut rng).is_none());
}

#[test]
fn write_concern_error_skips_commands_without_write_concern() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": "alwaysOn",
        "data": {"failCommands": ["find"], "writeConcernError": {"code": 64}},
    });
    assert!(
        points
            .after_write(&facts("find", "db.c", None), &mut rng())
            .is_none()
    );
}

#[test]
fn probability_zero_never_fires_and_one_always_fires() {
    let mut rng = rng();
    let mut never = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": {"activationProbability": 0.0},
        "data": {"failCommands": ["find"], "errorCode": 1},
    });
    let mut always = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": {"activationProbability": 1.0},
        "data": {"failCommands": ["find"], "errorCode": 1},
    });
    let find = facts("find", "db.c", None);
    for _ in 0..100 {
        assert!(never.before_command(&find, &mut rng).is_none());
        assert!(always.before_command(&find, &mut rng).is_some());
    }
}

#[test]
fn probability_half_fires_roughly_half_the_time_with_a_fixed_seed() {
    let mut points = configured(doc! {
        "configureFailPoint": "failCommand",
        "mode": {"activationProbability": 0.5},
        "data": {"failCommands": ["find"], "errorCode": 1},
    });
    let mut rng = rng();
    let find = facts("find", "db.c", None);
    let fired = (0..1000)
        .filter(|_| points.before_command(&find, &mut rng).is_some())
        .count();
    assert!((350..650).contains(&fired), "fired {fired} of 1000");
}

#[test]
fn transactional_write_defaults_to_close_after_commit() {
    let mut points = configured(doc! {
        "configureFailPoint": "onPrimaryTransactionalWrite",
        "mode": {"times": 1},
    });
    let mut rng = rng();
    assert_eq!(
        points.transactional_write(&mut rng),
        TransactionalWriteAction::CloseAfterCommit
    );
    assert_eq!(
        points.transactional_write(&mut rng),
        TransactionalWriteAction::Proceed
    );
}

#[test]
fn transactional_write_can_fail_before_commit() {
    let mut points = configured(doc! {
        "configureFailPoint": "onPrimaryTransactionalWrite",
        "mode": "alwaysOn",
        "data": {"failBeforeCommitExceptionCode": 1, "closeConnection": false},
    });
    assert_eq!(
        points.transactional_write(&mut rng()),
        TransactionalWriteAction::FailBeforeCommit { code: 1 }
    );
}

#[test]
fn transactional_write_fails_before_commit_by_closing_the_connection_by_default() {
    let mut points = configured(doc! {
        "configureFailPoint": "onPrimaryTransactionalWrite",
        "mode": {"times": 1},
        "data": {"failBeforeCommitExceptionCode": 1},
    });
    let mut rng = rng();
    assert_eq!(
        points.transactional_write(&mut rng),
        TransactionalWriteAction::CloseBeforeCommit
    );
    assert_eq!(
        points.transactional_write(&mut rng),
        TransactionalWriteAction::Proceed
    );
}

#[test]
fn unknown_fail_point_and_missing_mode_are_errors() {
    let mut points = FailPoints::new();
    let unknown = points
        .configure(&doc! {"configureFailPoint": "noSuchThing", "mode": "alwaysOn"})
        .unwrap_err();
    assert_eq!(unknown.code, 2);
    let no_mode = points
        .configure(&doc! {"configureFailPoint": "failCommand"})
        .unwrap_err();
    assert_eq!(no_mode.code, 20);
    assert_eq!(no_mode.to_reply().get_i32("code").ok(), Some(20));
}

#[test]
fn overload_rejects_with_labels_and_backoff() {
    let mut overload = Overload::parse(&doc! {"mode": {"times": 1}, "baseBackoffMS": 250}).unwrap();
    let mut rng = rng();
    let error = overload.evaluate(&mut rng).expect("first command rejected");
    let reply = error.to_reply();
    assert_eq!(reply.get_i32("code").ok(), Some(OVERLOAD_CODE));
    assert_eq!(reply.get_i64("baseBackoffMS").ok(), Some(250));
    let labels = reply.get_array("errorLabels").unwrap();
    assert_eq!(labels.len(), 2);
    assert!(overload.evaluate(&mut rng).is_none());
    assert_eq!(overload.rejected(), 1);
    assert!(!overload.is_active());
}

#[test]
fn block_time_beyond_an_int32_is_a_bad_value() {
    let configure = |millis: i64| {
        FailPoints::new().configure(&doc! {
            "configureFailPoint": "failCommand",
            "mode": "alwaysOn",
            "data": {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": millis},
        })
    };
    assert_eq!(configure(i64::MAX).unwrap_err().code, 2);
    assert_eq!(configure(i64::from(i32::MAX) + 1).unwrap_err().code, 2);
    assert!(configure(i64::from(i32::MAX)).is_ok());
}

#[test]
fn get_more_after_checkout_turns_off_without_an_error_code() {
    let mut points = configured(doc! {
        "configureFailPoint": "failGetMoreAfterCursorCheckout",
        "mode": "alwaysOn",
        "data": { "errorCode": 43 },
    });
    assert_eq!(points.get_more_after_checkout(&mut rng()), Some(43));
    let off = doc! { "configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": "off" };
    points.configure(&off).expect("off needs no data");
    assert_eq!(points.get_more_after_checkout(&mut rng()), None);
    let on_without_code = doc! {
        "configureFailPoint": "failGetMoreAfterCursorCheckout",
        "mode": "alwaysOn",
    };
    assert!(points.configure(&on_without_code).is_err());
}
