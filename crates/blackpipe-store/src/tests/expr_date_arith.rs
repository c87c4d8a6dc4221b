//! `$dateAdd`/`$dateSubtract`, `$dateDiff` and `$dateTrunc`, and dates at the ends of the
//! BSON range.

use bson::{Bson, Timestamp, doc};

use super::expr_eval::{date, eval, op, op_code, op_failure, settles};

/// 2020-10-31T10:10:05Z.
const HALLOWEEN: i64 = 1_604_139_005_000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

fn add(operator: &str, spec: bson::Document) -> Bson {
    op(operator, Bson::Document(spec))
}

#[test]
fn date_add_and_subtract() {
    let start = date(HALLOWEEN);
    assert_eq!(
        add(
            "$dateAdd",
            doc! { "startDate": start.clone(), "unit": "month", "amount": 1 }
        ),
        date(HALLOWEEN + 30 * DAY)
    );
    assert_eq!(
        add(
            "$dateAdd",
            doc! { "startDate": start.clone(), "unit": "hour", "amount": -1 }
        ),
        date(HALLOWEEN - HOUR)
    );
    // A week back in Amsterdam crosses the end of summer time: one more hour.
    let amsterdam = doc! { "startDate": start.clone(), "unit": "day", "amount": -7, "timezone": "Europe/Amsterdam" };
    assert_eq!(
        add("$dateAdd", amsterdam),
        date(HALLOWEEN - (7 * 24 + 1) * HOUR)
    );
    assert_eq!(
        add(
            "$dateSubtract",
            doc! { "startDate": start.clone(), "unit": "month", "amount": 1 }
        ),
        date(HALLOWEEN - 31 * DAY)
    );
    assert_eq!(
        add(
            "$dateSubtract",
            doc! { "startDate": start.clone(), "unit": "month", "amount": -1 }
        ),
        date(HALLOWEEN + 30 * DAY)
    );
    // January 31 plus a month is the last day of February.
    let leap = doc! { "startDate": date(1_580_472_000_000), "unit": "month", "amount": 1 };
    assert_eq!(add("$dateAdd", leap), date(1_582_977_600_000));
    let quarter = doc! { "startDate": date(1_580_472_000_000), "unit": "quarter", "amount": 1 };
    assert_eq!(add("$dateAdd", quarter), date(1_588_248_000_000));
    let timestamp = Bson::Timestamp(Timestamp {
        time: 1_605_001_115,
        increment: 0,
    });
    assert_eq!(
        add(
            "$dateAdd",
            doc! { "startDate": timestamp, "unit": "second", "amount": 1 }
        ),
        date(1_605_001_116_000)
    );
    assert_eq!(
        add(
            "$dateAdd",
            doc! { "startDate": start.clone(), "unit": "day", "amount": 2.0 }
        ),
        date(HALLOWEEN + 2 * DAY)
    );
    assert_eq!(
        add(
            "$dateAdd",
            doc! { "startDate": Bson::Null, "unit": "day", "amount": 1 }
        ),
        Bson::Null
    );
    assert_eq!(
        add(
            "$dateAdd",
            doc! { "startDate": start.clone(), "unit": "day", "amount": "$nothing" }
        ),
        Bson::Null
    );
    assert_eq!(
        add(
            "$dateAdd",
            doc! { "startDate": start, "unit": "day", "amount": 1, "timezone": Bson::Null }
        ),
        Bson::Null
    );
}

#[test]
fn date_add_errors() {
    let start = date(HALLOWEEN);
    let code = |spec: bson::Document| op_code("$dateAdd", Bson::Document(spec));
    assert_eq!(
        code(doc! { "startDate": start.clone(), "unit": "day" }),
        5166402
    );
    assert_eq!(
        code(doc! { "startDate": start.clone(), "timeUnit": "day", "amount": 1 }),
        5166401
    );
    assert_eq!(
        code(doc! { "startDate": "myDate", "unit": "day", "amount": 1 }),
        5166403
    );
    assert_eq!(
        code(doc! { "startDate": start.clone(), "unit": 123, "amount": 1 }),
        5439013
    );
    assert_eq!(
        code(doc! { "startDate": start.clone(), "unit": "decade", "amount": 1 }),
        9
    );
    assert_eq!(
        code(doc! { "startDate": start.clone(), "unit": "day", "amount": 1.789 }),
        5166405
    );
    assert_eq!(
        code(doc! { "startDate": start.clone(), "unit": "day", "amount": 5, "timezone": 12 }),
        40517
    );
    assert_eq!(
        code(
            doc! { "startDate": start.clone(), "unit": "day", "amount": 5, "timezone": "Unknown" }
        ),
        40485
    );
    assert_eq!(
        code(doc! { "startDate": start.clone(), "unit": "year", "amount": i64::MAX }),
        5976500
    );
    let minimum = doc! { "startDate": start, "unit": "day", "amount": i64::MIN };
    assert_eq!(op_code("$dateSubtract", Bson::Document(minimum)), 6045000);
    assert_eq!(op_code("$dateAdd", Bson::Int32(1)), 5166400);
}

fn diff(spec: bson::Document) -> Bson {
    op("$dateDiff", Bson::Document(spec))
}

#[test]
fn date_diff_counts_boundaries() {
    let hours = doc! { "startDate": date(1_604_255_016_000), "endDate": date(1_604_260_800_000), "unit": "hour", "timezone": "GMT" };
    assert_eq!(diff(hours), Bson::Int64(2));
    let minutes = doc! {
        "startDate": Bson::Timestamp(Timestamp { time: 1_604_255_016, increment: 0 }),
        "endDate": Bson::Timestamp(Timestamp { time: 1_604_260_800, increment: 0 }),
        "unit": "minute",
    };
    assert_eq!(diff(minutes), Bson::Int64(97));
    // Sunday to Monday: a week boundary only when weeks start on Monday.
    let monday = doc! { "startDate": date(1_611_446_400_000), "endDate": date(1_611_532_800_000), "unit": "week", "startOfWeek": "Monday" };
    assert_eq!(diff(monday), Bson::Int64(1));
    let sunday = doc! { "startDate": date(1_611_446_400_000), "endDate": date(1_611_532_800_000), "unit": "week" };
    assert_eq!(diff(sunday), Bson::Int64(0));
    let saturday = doc! { "startDate": date(1_611_360_000_000), "endDate": date(1_611_446_400_000), "unit": "week" };
    assert_eq!(diff(saturday), Bson::Int64(1));
    assert_eq!(
        diff(doc! { "startDate": date(0), "endDate": date(31_571_873_000), "unit": "year" }),
        Bson::Int64(1)
    );
    assert_eq!(
        diff(doc! { "startDate": date(0), "endDate": date(31_571_873_000), "unit": "quarter" }),
        Bson::Int64(4)
    );
    assert_eq!(
        diff(doc! { "startDate": date(31_571_873_000), "endDate": date(0), "unit": "month" }),
        Bson::Int64(-12)
    );
    assert_eq!(
        diff(doc! { "startDate": date(0), "endDate": date(1500), "unit": "millisecond" }),
        Bson::Int64(1500)
    );
    // startOfWeek is ignored for other units.
    assert_eq!(
        diff(
            doc! { "startDate": date(0), "endDate": date(0), "unit": "day", "startOfWeek": "INVALID" }
        ),
        Bson::Int64(0)
    );
    assert_eq!(
        diff(
            doc! { "startDate": date(0), "endDate": date(0), "unit": "week", "startOfWeek": Bson::Null }
        ),
        Bson::Null
    );
    assert_eq!(
        diff(doc! { "startDate": Bson::Null, "endDate": date(0), "unit": "day" }),
        Bson::Null
    );
    assert_eq!(
        diff(doc! { "startDate": date(0), "endDate": date(0), "unit": Bson::Null }),
        Bson::Null
    );
}

#[test]
fn date_diff_errors() {
    let failure = |spec: bson::Document| op_failure("$dateDiff", Bson::Document(spec));
    let (code, message) = failure(doc! { "startDate": "date", "endDate": date(0), "unit": "hour" });
    assert_eq!(
        (code, message.as_str()),
        (
            5166307,
            "$dateDiff requires 'startDate' to be a date, but got string"
        )
    );
    let (code, message) = failure(doc! { "startDate": date(0), "endDate": date(0), "unit": 2 });
    assert_eq!(
        (code, message.as_str()),
        (
            5439013,
            "$dateDiff requires 'unit' to be a string, but got int"
        )
    );
    assert_eq!(
        failure(doc! { "startDate": date(0), "endDate": date(0), "unit": "century" }).0,
        9
    );
    let (code, message) = failure(
        doc! { "startDate": date(0), "endDate": date(0), "unit": "hour", "timezone": "INVALID" },
    );
    assert_eq!(
        (code, message.as_str()),
        (
            40485,
            "$dateDiff parameter 'timezone' value parsing failed :: caused by :: unrecognized time zone identifier: \"INVALID\""
        )
    );
    assert_eq!(
        failure(
            doc! { "startDate": date(0), "endDate": date(0), "unit": "week", "startOfWeek": 1 }
        )
        .0,
        5439015
    );
    assert_eq!(failure(doc! { "startDate": date(0), "endDate": date(0), "unit": "week", "startOfWeek": "Satur" }).0, 5439016);
    assert_eq!(
        failure(doc! { "endDate": date(0), "unit": "day" }).0,
        5166303
    );
    assert_eq!(
        failure(doc! { "startDate": date(0), "unit": "day" }).0,
        5166304
    );
    assert_eq!(
        failure(doc! { "startDate": date(0), "endDate": date(0) }).0,
        5166305
    );
    assert_eq!(
        failure(doc! { "startDate": date(0), "endDate": date(0), "unit": "day", "timeGone": 1 }).0,
        5166302
    );
}

fn trunc(spec: bson::Document) -> Bson {
    op("$dateTrunc", Bson::Document(spec))
}

#[test]
fn date_trunc_bins() {
    assert_eq!(
        trunc(
            doc! { "date": date(1_612_137_600_000), "unit": "year", "binSize": 1_i64, "timezone": "GMT" }
        ),
        date(1_609_459_200_000)
    );
    // 2021-01-13T15:07Z, a Wednesday.
    let at = date(1_610_550_420_000);
    assert_eq!(
        trunc(doc! { "date": at.clone(), "unit": "hour" }),
        date(1_610_550_000_000)
    );
    assert_eq!(
        trunc(doc! { "date": at.clone(), "unit": "week", "startOfWeek": "mon" }),
        date(1_610_323_200_000)
    );
    assert_eq!(
        trunc(doc! { "date": at.clone(), "unit": "week" }),
        date(1_610_236_800_000)
    );
    assert_eq!(
        trunc(doc! { "date": at.clone(), "unit": "month", "binSize": 6 }),
        date(1_609_459_200_000)
    );
    assert_eq!(
        trunc(doc! { "date": at.clone(), "unit": "quarter" }),
        date(1_609_459_200_000)
    );
    assert_eq!(
        trunc(doc! { "date": at.clone(), "unit": "minute", "binSize": 15 }),
        date(1_610_550_000_000)
    );
    // Bins count from 2000-01-01 in the zone: seven-day bins in Kolkata start at local midnight.
    let kolkata = doc! { "date": date(947_246_400_000), "unit": "day", "binSize": 7, "timezone": "Asia/Kolkata" };
    assert_eq!(trunc(kolkata), date(946_665_000_000));
    assert_eq!(
        trunc(doc! { "date": Bson::Null, "unit": "day" }),
        Bson::Null
    );
    assert_eq!(
        trunc(doc! { "date": at, "unit": "day", "binSize": Bson::Null }),
        Bson::Null
    );
}

#[test]
fn date_trunc_errors() {
    let code = |spec: bson::Document| op_code("$dateTrunc", Bson::Document(spec));
    assert_eq!(
        code(doc! { "date": date(0), "unit": "day", "binSize": 1.5 }),
        5439017
    );
    assert_eq!(
        code(doc! { "date": date(0), "unit": "day", "binSize": 0 }),
        5439018
    );
    assert_eq!(code(doc! { "date": "x", "unit": "day" }), 5166307);
    assert_eq!(code(doc! { "date": date(0), "unit": "eon" }), 9);
    assert_eq!(code(doc! { "unit": "day" }), 5439009);
    assert_eq!(code(doc! { "date": date(0) }), 5439010);
    assert_eq!(
        code(doc! { "date": date(0), "unit": "day", "size": 1 }),
        5439008
    );
    assert_eq!(op_code("$dateTrunc", Bson::Int32(1)), 5439007);
}

#[test]
fn extreme_dates_do_not_panic() {
    for millis in [i64::MIN, i64::MAX, -62_135_596_800_001] {
        let at = date(millis);
        for operator in ["$year", "$isoWeek", "$week", "$dayOfYear"] {
            let _ = eval(Bson::Document(
                doc! { operator: { "date": at.clone(), "timezone": "America/New_York" } },
            ));
        }
        settles(Bson::Document(
            doc! { "$dateToString": { "date": at.clone() } },
        ));
        for unit in [
            "year",
            "quarter",
            "month",
            "week",
            "day",
            "hour",
            "millisecond",
        ] {
            settles(Bson::Document(
                doc! { "$dateTrunc": { "date": at.clone(), "unit": unit, "binSize": i64::MAX } },
            ));
            settles(Bson::Document(
                doc! { "$dateDiff": { "startDate": date(i64::MIN), "endDate": at.clone(), "unit": unit } },
            ));
            settles(Bson::Document(
                doc! { "$dateAdd": { "startDate": at.clone(), "unit": unit, "amount": i64::MAX / 2 } },
            ));
        }
        settles(Bson::Document(
            doc! { "$dateFromParts": { "year": 9999, "second": i64::MAX, "millisecond": i64::MIN } },
        ));
    }
}
