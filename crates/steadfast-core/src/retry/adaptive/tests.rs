use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;

const MS: Duration = Duration::from_millis(1);

fn config(k: f64) -> AdaptiveConfig {
    AdaptiveConfig {
        accept_multiplier: k,
        ..AdaptiveConfig::default()
    }
}

#[test]
fn probability_follows_the_sre_formula() {
    assert_eq!(refusal_probability(0, 0, 2.0), 0.0);
    assert_eq!(refusal_probability(100, 50, 2.0), 0.0);
    // (300 - 2 × 100) / 301
    let p = refusal_probability(300, 100, 2.0);
    assert!((p - 100.0 / 301.0).abs() < 1e-12, "{p}");
    // Nothing accepted: almost certain refusal, never certainty.
    let p = refusal_probability(99, 0, 2.0);
    assert!((p - 0.99).abs() < 1e-12, "{p}");
}

#[test]
fn a_server_that_sheds_nothing_is_never_refused_even_with_requests_in_flight() {
    let now = Instant::now();
    let mut throttle = AdaptiveThrottle::new(config(1.0));
    // 1000 requests sent before any reply: in flight, not yet counted.
    for _ in 0..1000 {
        assert_eq!(throttle.admit(now, 0.0), Admission::Send);
    }
    for _ in 0..1000 {
        throttle.record_reply(now, false);
    }
    assert_eq!(throttle.admit(now, 0.0), Admission::Send);
    assert_eq!(throttle.refusal_probability(now), 0.0);
}

#[test]
fn errors_that_are_not_overload_count_as_accepts() {
    let now = Instant::now();
    let mut throttle = AdaptiveThrottle::new(config(2.0));
    // The caller reports a duplicate-key error as `shed: false`: 100 accepts.
    for _ in 0..100 {
        throttle.record_reply(now, false);
    }
    assert_eq!(throttle.refusal_probability(now), 0.0);
}

#[test]
fn shedding_beyond_k_turns_refusals_on_and_the_window_forgets_it() {
    let start = Instant::now();
    let mut throttle = AdaptiveThrottle::new(config(2.0));
    for _ in 0..100 {
        throttle.record_reply(start, false);
    }
    for _ in 0..300 {
        throttle.record_reply(start, true);
    }
    // 400 requests, 100 accepts: (400 - 200) / 401.
    let p = throttle.refusal_probability(start);
    assert!((p - 200.0 / 401.0).abs() < 1e-12, "{p}");
    assert!(matches!(
        throttle.admit(start, 0.1),
        Admission::Refuse { .. }
    ));
    assert_eq!(throttle.admit(start, 0.9), Admission::Send);
    let later = start + AdaptiveConfig::default().window;
    assert_eq!(throttle.refusal_probability(later), 0.0);
    assert!(throttle.is_idle(later));
}

#[test]
fn local_refusals_keep_the_probability_up_while_the_server_stays_overloaded() {
    let now = Instant::now();
    let mut throttle = AdaptiveThrottle::new(config(2.0));
    for _ in 0..10 {
        throttle.record_reply(now, false);
    }
    for _ in 0..30 {
        throttle.record_reply(now, true);
    }
    let before = throttle.refusal_probability(now);
    assert!(matches!(throttle.admit(now, 0.0), Admission::Refuse { .. }));
    assert!(throttle.refusal_probability(now) > before);
}

#[test]
fn overload_retries_stay_within_the_ratio_of_first_attempts() {
    let now = Instant::now();
    let mut throttle = AdaptiveThrottle::new(AdaptiveConfig {
        retry_ratio: 0.1,
        ..AdaptiveConfig::default()
    });
    assert!(!throttle.try_retry(now), "no first attempt, no retry");
    for _ in 0..100 {
        assert_eq!(throttle.admit(now, 0.5), Admission::Send);
    }
    let granted = (0..50).filter(|_| throttle.try_retry(now)).count();
    assert_eq!(granted, 10);
    // A window later the old first attempts no longer pay for retries.
    let later = now + AdaptiveConfig::default().window + MS;
    assert!(!throttle.try_retry(later));
}

#[test]
fn a_multiplier_below_one_acts_as_one() {
    let now = Instant::now();
    let mut throttle = AdaptiveThrottle::new(config(0.1));
    for _ in 0..50 {
        throttle.record_reply(now, false);
    }
    assert_eq!(throttle.refusal_probability(now), 0.0);
    let mut nan = AdaptiveThrottle::new(config(f64::NAN));
    nan.record_reply(now, false);
    assert_eq!(nan.refusal_probability(now), 0.0);
}

#[test]
fn servers_are_throttled_apart_and_their_number_is_bounded() {
    let now = Instant::now();
    let mut throttles = AdaptiveThrottles::new(config(1.0));
    let primary = ServerAddress::tcp("primary", 27017);
    let secondary = ServerAddress::tcp("secondary", 27017);
    for _ in 0..100 {
        throttles
            .server(&primary, now)
            .expect("tracked")
            .record_reply(now, true);
    }
    let secondary_p = throttles
        .server(&secondary, now)
        .expect("tracked")
        .refusal_probability(now);
    assert_eq!(secondary_p, 0.0);
    for port in 0..MAX_TRACKED_SERVERS {
        let address = ServerAddress::tcp("busy", u16::try_from(port).expect("small"));
        if let Some(throttle) = throttles.server(&address, now) {
            throttle.record_reply(now, false);
        }
    }
    assert_eq!(throttles.len(), MAX_TRACKED_SERVERS);
    // Every tracked server is busy: a new one is not tracked, and nothing is refused for it.
    assert!(
        throttles
            .server(&ServerAddress::tcp("new", 1), now)
            .is_none()
    );
    // Once the window passes, idle servers make room.
    let later = now + AdaptiveConfig::default().window;
    assert!(
        throttles
            .server(&ServerAddress::tcp("new", 1), later)
            .is_some()
    );
    assert_eq!(throttles.len(), 1);
}

proptest! {
    #[test]
    fn probability_is_a_probability_and_zero_without_excess(
        requests in 0u64..1_000_000,
        accepts in 0u64..1_000_000,
        k in 1.0f64..10.0,
    ) {
        let p = refusal_probability(requests, accepts, k);
        prop_assert!((0.0..1.0).contains(&p), "{p}");
        if requests as f64 <= k * accepts as f64 {
            prop_assert_eq!(p, 0.0);
        }
    }

    #[test]
    fn probability_grows_with_requests_and_falls_with_accepts(
        requests in 0u64..1_000_000,
        accepts in 0u64..1_000_000,
        k in 1.0f64..10.0,
    ) {
        let p = refusal_probability(requests, accepts, k);
        prop_assert!(refusal_probability(requests + 1, accepts, k) >= p);
        prop_assert!(refusal_probability(requests, accepts + 1, k) <= p);
    }

    #[test]
    fn a_throttle_that_never_saw_a_rejection_never_refuses(
        events in proptest::collection::vec((0u64..50, any::<bool>(), 0.0f64..1.0), 1..200),
    ) {
        let start = Instant::now();
        let mut throttle = AdaptiveThrottle::new(config(1.0));
        let mut now = start;
        for (step, reply, draw) in events {
            now += MS * u32::try_from(step).expect("small");
            if reply {
                throttle.record_reply(now, false);
            } else {
                prop_assert_eq!(throttle.admit(now, draw), Admission::Send);
            }
        }
    }
}
