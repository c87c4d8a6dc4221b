//! The latency window and the "power of two random choices" inside it.

use std::time::Duration;

use rand::Rng;

/// Keeps the servers whose average RTT is within `local_threshold` of the fastest one.
///
/// `rtt` reads a server's average round-trip time. A server without one (a load balancer, which
/// is never monitored) cannot be compared with the others, so it neither anchors the window nor
/// is excluded from it. The order of `servers` is kept.
pub fn within_latency_window<T>(
    servers: Vec<T>,
    rtt: impl Fn(&T) -> Option<Duration>,
    local_threshold: Duration,
) -> Vec<T> {
    let Some(fastest) = servers.iter().filter_map(&rtt).min() else {
        return servers;
    };
    let limit = fastest.saturating_add(local_threshold);
    servers
        .into_iter()
        .filter(|s| rtt(s).is_none_or(|r| r <= limit))
        .collect()
}

/// Chooses one server from those in the latency window: two distinct servers are drawn at
/// random and the one with fewer operations in flight wins (a tie goes to the first drawn, which
/// is itself random). Returns `None` only when `in_window` is empty.
///
/// Drawing two rather than taking the global minimum keeps a newly discovered, idle server from
/// receiving every operation at once (server-selection.md, "operationCount-based selection").
pub fn choose_in_window<'a, T>(
    in_window: &'a [T],
    operation_count: impl Fn(&T) -> u32,
    rng: &mut impl Rng,
) -> Option<&'a T> {
    match in_window.len() {
        0 => None,
        1 => in_window.first(),
        n => {
            let first = rng.random_range(0..n);
            // Draw from the n - 1 other positions so the two choices are always distinct.
            let mut second = rng.random_range(0..n - 1);
            if second >= first {
                second += 1;
            }
            let (a, b) = (&in_window[first], &in_window[second]);
            if operation_count(b) < operation_count(a) {
                Some(b)
            } else {
                Some(a)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn window_is_anchored_at_the_fastest_and_inclusive() {
        let servers = vec![("a", Some(ms(20))), ("b", Some(ms(5))), ("c", Some(ms(21)))];
        let kept = within_latency_window(servers, |s| s.1, ms(15));
        let names: Vec<_> = kept.iter().map(|s| s.0).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn zero_threshold_keeps_only_the_fastest_ties() {
        let servers = vec![("a", Some(ms(7))), ("b", Some(ms(7))), ("c", Some(ms(8)))];
        let kept = within_latency_window(servers, |s| s.1, Duration::ZERO);
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn servers_without_rtt_stay_and_do_not_anchor() {
        let servers = vec![("lb", None), ("a", Some(ms(40))), ("b", Some(ms(100)))];
        let kept = within_latency_window(servers, |s| s.1, ms(15));
        let names: Vec<_> = kept.iter().map(|s| s.0).collect();
        assert_eq!(names, ["lb", "a"]);
    }

    #[test]
    fn single_candidate_needs_no_randomness() {
        let mut rng = StdRng::seed_from_u64(1);
        assert_eq!(choose_in_window(&[9u32], |_| 0, &mut rng), Some(&9));
        assert_eq!(choose_in_window::<u32>(&[], |_| 0, &mut rng), None);
    }

    #[test]
    fn busiest_server_is_never_chosen_among_three() {
        // Every pair contains a server less busy than the busiest one, so it can never win.
        let servers = [("a", 1u32), ("b", 2), ("c", 50)];
        let mut rng = StdRng::seed_from_u64(7);
        let mut counts = [0usize; 3];
        for _ in 0..3000 {
            let chosen = choose_in_window(&servers, |s| s.1, &mut rng).map(|s| s.0);
            match chosen {
                Some("a") => counts[0] += 1,
                Some("b") => counts[1] += 1,
                _ => counts[2] += 1,
            }
        }
        assert_eq!(counts[2], 0);
        // a wins two of the three equally likely pairs, b one.
        assert!(counts[0] > counts[1] * 3 / 2, "{counts:?}");
    }

    #[test]
    fn two_distinct_servers_are_always_drawn() {
        // With two servers and distinct draws, the idle one must win every time.
        let servers = [("idle", 0u32), ("busy", 1)];
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..500 {
            let chosen = choose_in_window(&servers, |s| s.1, &mut rng);
            assert_eq!(chosen.map(|s| s.0), Some("idle"));
        }
    }
}
