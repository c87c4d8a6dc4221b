//! The capacity model on its own, with the time given as values: admission up to the rate and
//! the concurrency, what rejections cost, counters, and the admin command's parsing.

use std::time::{Duration, Instant};

use bson::{Bson, doc};

use crate::deployment::ControlError;
use crate::deployment::admin::{AdminRequest, MemberRef, parse_admin};
use crate::deployment::capacity::{
    Capacity, CapacityChange, DEFAULT_REJECT_COST, MemberCapacity, parse_change,
};

fn rate(ops_per_sec: f64, burst: Duration) -> Capacity {
    Capacity::unlimited()
        .with_ops_per_sec(ops_per_sec)
        .unwrap()
        .with_burst(burst)
        .unwrap()
}

/// Admits as many commands as it can at `now`, stopping at the first rejection (which is
/// counted); returns how many were admitted.
fn admit_until_rejected(capacity: &mut MemberCapacity, now: Instant) -> u64 {
    let mut admitted = 0;
    while capacity.admit(now).is_ok() {
        admitted += 1;
        assert!(admitted < 1_000_000, "never rejects");
    }
    admitted
}

#[test]
fn a_rate_admits_its_burst_then_what_the_clock_refills() {
    let start = Instant::now();
    // 100/s with a 100 ms burst: 10 at once, then one every 10 ms.
    let mut capacity = MemberCapacity::new(Some(rate(100.0, Duration::from_millis(100))), start);
    assert_eq!(admit_until_rejected(&mut capacity, start), 10);
    // 50 ms later: 5 tokens, minus the 0.05 the rejection cost: 4 admitted.
    let later = start + Duration::from_millis(50);
    assert_eq!(admit_until_rejected(&mut capacity, later), 4);
    // A long idle period refills to the burst, never beyond.
    let idle = later + Duration::from_secs(60);
    assert_eq!(admit_until_rejected(&mut capacity, idle), 10);
    let stats = capacity.stats();
    assert_eq!(stats.admitted, 24);
    assert_eq!(stats.rejected, 3);
    assert!((stats.rejection_cost - 3.0 * DEFAULT_REJECT_COST).abs() < 1e-9);
}

#[test]
fn over_one_second_a_saturated_member_admits_its_rate() {
    let start = Instant::now();
    let mut capacity = MemberCapacity::new(
        Some(
            rate(1000.0, Duration::from_millis(10))
                .with_reject_cost(0.0)
                .unwrap(),
        ),
        start,
    );
    // Offered 3000/s, one command every 1/3 ms, for one second.
    let admitted = (0..3000u32)
        .filter(|i| {
            let now = start + Duration::from_micros(u64::from(*i) * 1000 / 3);
            capacity.admit(now).is_ok()
        })
        .count();
    // The 10-command burst plus 1000/s over the 0.9997 s the arrivals span.
    assert!((1005..=1011).contains(&admitted), "{admitted}");
}

#[test]
fn rejections_cost_admitted_work() {
    let start = Instant::now();
    let offered = |cost: f64| {
        let limits = rate(1000.0, Duration::from_millis(10))
            .with_reject_cost(cost)
            .unwrap();
        let mut capacity = MemberCapacity::new(Some(limits), start);
        (0..10_000u32)
            .filter(|i| {
                // Offered 10,000/s for one second: nine rejections for each admission.
                let now = start + Duration::from_micros(u64::from(*i) * 100);
                capacity.admit(now).is_ok()
            })
            .count()
    };
    let free = offered(0.0);
    let costly = offered(0.05);
    // With 0.05 per rejection, about 9,000 rejections cost about 450 admissions.
    assert!(free > 1000, "{free}");
    assert!(costly < free - 300, "free {free}, costly {costly}");
    // A storm that costs more than the rate leaves nothing: the bucket's debt is bounded
    // by one burst, so admissions stop rather than the numbers growing without limit.
    assert!(offered(1.0) < 20, "{}", offered(1.0));
}

#[test]
fn a_concurrency_limit_counts_commands_until_their_place_is_dropped() {
    let now = Instant::now();
    let limits = Capacity::unlimited().with_concurrent(2).unwrap();
    let mut capacity = MemberCapacity::new(Some(limits), now);
    let first = capacity.admit(now).expect("one place taken");
    let second = capacity.admit(now).expect("two places taken");
    assert_eq!(capacity.stats().in_progress, 2);
    assert!(capacity.admit(now).is_err(), "no third place");
    drop(first);
    let third = capacity.admit(now).expect("a place was freed");
    drop((second, third));
    let stats = capacity.stats();
    assert_eq!(
        (stats.admitted, stats.rejected, stats.in_progress),
        (3, 1, 0)
    );
}

#[test]
fn a_limit_set_while_commands_run_sees_them() {
    let now = Instant::now();
    let mut capacity = MemberCapacity::new(None, now);
    let running = capacity.admit(now).expect("no capacity admits everything");
    capacity.configure(
        CapacityChange::Set(Capacity::unlimited().with_concurrent(1).unwrap()),
        now,
    );
    assert!(
        capacity.admit(now).is_err(),
        "the running command holds the only place"
    );
    drop(running);
    assert!(capacity.admit(now).is_ok());
}

#[test]
fn rejections_carry_the_backoff_hint_and_off_admits_everything_keeping_counters() {
    let now = Instant::now();
    let limits = rate(1.0, Duration::from_secs(1)).with_base_backoff_ms(75);
    let mut capacity = MemberCapacity::new(Some(limits), now);
    assert!(capacity.admit(now).is_ok());
    let rejection = capacity.admit(now).unwrap_err();
    let reply = rejection.to_reply();
    assert_eq!(reply.get_i32("code").unwrap(), 462);
    assert_eq!(reply.get_i64("baseBackoffMS").unwrap(), 75);
    capacity.configure(CapacityChange::Off, now);
    assert_eq!(admit_until_rejected_or(&mut capacity, now, 100), 100);
    let stats = capacity.stats();
    assert_eq!(
        (stats.admitted, stats.rejected),
        (1, 1),
        "counters kept, not grown"
    );
    // A new capacity starts its counters and its bucket afresh.
    capacity.configure(CapacityChange::Set(limits), now);
    assert_eq!(capacity.stats().admitted, 0);
    assert!(capacity.admit(now).is_ok());
}

fn admit_until_rejected_or(capacity: &mut MemberCapacity, now: Instant, most: u64) -> u64 {
    (0..most)
        .take_while(|_| capacity.admit(now).is_ok())
        .count() as u64
}

#[test]
fn the_admin_command_parses_every_field_and_targets_all_members_by_default() {
    let command = doc! {
        "blackpipe": "capacity", "opsPerSec": 500, "concurrent": 8_i64, "rejectCost": 0.1,
        "burstSecs": 0.5, "baseBackoffMS": 20, "$db": "admin", "lsid": {"id": 1},
    };
    let Ok(AdminRequest::Capacity { member, change }) = parse_admin(&command) else {
        panic!("a capacity command");
    };
    assert_eq!(member, None, "absent member: every data-bearing member");
    let CapacityChange::Set(capacity) = change else {
        panic!("a capacity");
    };
    assert_eq!(capacity.ops_per_sec(), Some(500.0));
    assert_eq!(capacity.concurrent(), Some(8));
    assert_eq!(capacity.reject_cost(), 0.1);
    assert_eq!(capacity.burst(), Duration::from_millis(500));
    assert_eq!(capacity.base_backoff_ms(), Some(20));
    let defaults = parse_change(&doc! { "blackpipe": "capacity", "opsPerSec": 0 }).unwrap();
    assert_eq!(defaults, CapacityChange::Set(Capacity::unlimited()));
    let off = doc! { "blackpipe": "capacity", "member": 1, "off": true };
    let Ok(AdminRequest::Capacity { member, change }) = parse_admin(&off) else {
        panic!("a capacity command");
    };
    assert_eq!(
        (member, change),
        (Some(MemberRef::Index(1)), CapacityChange::Off)
    );
    assert!(matches!(
        parse_admin(&doc! { "blackpipe": "capacityStats" }),
        Ok(AdminRequest::CapacityStats { member: None })
    ));
}

#[test]
fn hostile_capacity_values_are_typed_errors() {
    let hostile: Vec<(&str, Bson)> = vec![
        ("opsPerSec", Bson::Double(-1.0)),
        ("opsPerSec", Bson::Double(f64::NAN)),
        ("opsPerSec", Bson::Double(f64::INFINITY)),
        ("opsPerSec", Bson::Double(1e300)),
        ("opsPerSec", Bson::String("fast".into())),
        ("concurrent", Bson::Int32(-1)),
        ("concurrent", Bson::Double(1.5)),
        ("concurrent", Bson::Int64(i64::MAX)),
        ("concurrent", Bson::Double(f64::NAN)),
        ("rejectCost", Bson::Double(-0.1)),
        ("rejectCost", Bson::Double(1.5)),
        ("rejectCost", Bson::Double(f64::NAN)),
        ("rejectCost", Bson::Boolean(true)),
        ("burstSecs", Bson::Double(0.0)),
        ("burstSecs", Bson::Double(-1.0)),
        ("burstSecs", Bson::Double(f64::NAN)),
        ("burstSecs", Bson::Double(1e30)),
        ("baseBackoffMS", Bson::Int64(-5)),
        ("baseBackoffMS", Bson::Int64(i64::MAX)),
        ("baseBackoffMS", Bson::Double(f64::INFINITY)),
        ("off", Bson::String("yes".into())),
        ("opsPerSecond", Bson::Int32(10)),
    ];
    for (field, value) in hostile {
        let mut command = doc! { "blackpipe": "capacity" };
        command.insert(field, value.clone());
        match parse_admin(&command) {
            Err(error @ ControlError::BadArgument(_)) => assert_eq!(error.code(), 2),
            other => panic!("{field}: {value} gave {other:?}"),
        }
    }
    assert!(matches!(
        parse_admin(&doc! { "blackpipe": "capacity", "member": -1 }),
        Err(ControlError::BadArgument(_))
    ));
}
