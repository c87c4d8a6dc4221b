//! The date operators: part extractors, `$dateToString`, `$dateFromString`, `$dateToParts`,
//! `$dateFromParts`, `$dateAdd`/`$dateSubtract`, `$dateDiff` and `$dateTrunc`.

use bson::oid::ObjectId;
use bson::{Bson, Timestamp, doc};

use super::expr_eval::{date, eval_in, op, op_code, op_failure};

/// 2017-06-06T19:38:43.234Z, a Tuesday.
const JUNE_SIXTH: i64 = 1_496_777_923_234;

fn part(operator: &str, argument: Bson) -> Bson {
    op(operator, argument)
}

#[test]
fn part_extractors_in_utc() {
    let at = date(JUNE_SIXTH);
    let expected = [
        ("$year", 2017),
        ("$month", 6),
        ("$dayOfMonth", 6),
        ("$hour", 19),
        ("$minute", 38),
        ("$second", 43),
        ("$millisecond", 234),
        ("$dayOfYear", 157),
        ("$dayOfWeek", 3),
        ("$week", 23),
        ("$isoWeek", 23),
        ("$isoWeekYear", 2017),
        ("$isoDayOfWeek", 2),
    ];
    for (operator, value) in expected {
        assert_eq!(part(operator, at.clone()), Bson::Int32(value), "{operator}");
        // The one-element array and {date} forms mean the same.
        assert_eq!(
            part(operator, Bson::Array(vec![at.clone()])),
            Bson::Int32(value)
        );
        assert_eq!(
            part(operator, Bson::Document(doc! { "date": at.clone() })),
            Bson::Int32(value)
        );
    }
}

#[test]
fn part_extractors_in_time_zones() {
    let at = date(JUNE_SIXTH);
    let in_zone = |operator: &str, zone: &str| {
        part(
            operator,
            Bson::Document(doc! { "date": at.clone(), "timezone": zone }),
        )
    };
    assert_eq!(in_zone("$hour", "America/New_York"), Bson::Int32(15));
    assert_eq!(in_zone("$hour", "+05:30"), Bson::Int32(1));
    assert_eq!(in_zone("$minute", "+05:30"), Bson::Int32(8));
    assert_eq!(in_zone("$dayOfMonth", "+0530"), Bson::Int32(7));
    assert_eq!(in_zone("$hour", "-08"), Bson::Int32(11));
    assert_eq!(in_zone("$hour", "UTC"), Bson::Int32(19));
    // Winter in New York is five hours behind.
    let january = part(
        "$hour",
        Bson::Document(doc! { "date": date(1_483_228_800_000), "timezone": "America/New_York" }),
    );
    assert_eq!(january, Bson::Int32(19));
}

#[test]
fn iso_weeks_at_year_boundaries() {
    // 2016-01-01 is a Friday: ISO week 53 of 2015, and week 0 counting from Sundays.
    let new_year = date(1_451_606_400_000);
    assert_eq!(part("$isoWeek", new_year.clone()), Bson::Int32(53));
    assert_eq!(part("$isoWeekYear", new_year.clone()), Bson::Int32(2015));
    assert_eq!(part("$week", new_year.clone()), Bson::Int32(0));
    assert_eq!(part("$dayOfWeek", new_year), Bson::Int32(6));
}

#[test]
fn timestamps_and_object_ids_are_dates() {
    let timestamp = Bson::Timestamp(Timestamp {
        time: 1_496_777_923,
        increment: 5,
    });
    assert_eq!(part("$minute", timestamp), Bson::Int32(38));
    let id = ObjectId::parse_str("5936045300000000000000aa").expect("an object id");
    assert_eq!(part("$year", Bson::ObjectId(id)), Bson::Int32(2017));
}

#[test]
fn part_extractors_null_and_missing() {
    assert_eq!(part("$year", Bson::Null), Bson::Null);
    assert_eq!(part("$year", Bson::String("$nothing".into())), Bson::Null);
    let null_zone = Bson::Document(doc! { "date": date(0), "timezone": Bson::Null });
    assert_eq!(part("$month", null_zone), Bson::Null);
    let missing_zone = Bson::Document(doc! { "date": date(0), "timezone": "$nothing" });
    assert_eq!(part("$month", missing_zone), Bson::Null);
}

#[test]
fn part_extractor_errors() {
    let (code, message) = op_failure("$year", Bson::String("2017".into()));
    assert_eq!(
        (code, message.as_str()),
        (16006, "can't convert from BSON type string to Date")
    );
    assert_eq!(
        op_code(
            "$year",
            Bson::Document(doc! { "date": date(0), "timezone": 5 })
        ),
        40517
    );
    let (code, message) = op_failure(
        "$year",
        Bson::Document(doc! { "date": date(0), "timezone": "Mars/Base" }),
    );
    assert_eq!(
        (code, message.as_str()),
        (40485, "unrecognized time zone identifier: \"Mars/Base\"")
    );
    // Olson names are case-sensitive, as in mongod.
    let lower = Bson::Document(doc! { "date": date(0), "timezone": "america/new_york" });
    assert_eq!(op_code("$hour", lower), 40485);
    assert_eq!(
        op_code(
            "$year",
            Bson::Document(doc! { "date": date(0), "zone": "UTC" })
        ),
        40535
    );
    assert_eq!(op_code("$year", Bson::Document(doc! {})), 40539);
    assert_eq!(op_code("$year", Bson::Array(vec![date(0), date(1)])), 40536);
    assert_eq!(op_code("$year", Bson::Array(vec![])), 40536);
}

fn to_string(spec: bson::Document) -> Bson {
    op("$dateToString", Bson::Document(spec))
}

#[test]
fn date_to_string_default_and_specifiers() {
    assert_eq!(
        to_string(doc! { "date": date(JUNE_SIXTH) }),
        Bson::String("2017-06-06T19:38:43.234Z".into())
    );
    // Outside UTC the default format has no Z.
    let local = to_string(doc! { "date": date(JUNE_SIXTH), "timezone": "America/New_York" });
    assert_eq!(local, Bson::String("2017-06-06T15:38:43.234".into()));
    let every = to_string(doc! {
        "date": date(JUNE_SIXTH),
        "format": "%Y|%m|%d|%H|%M|%S|%L|%j|%w|%u|%U|%V|%G|%z|%Z|%b|%B|%%",
        "timezone": "America/New_York",
    });
    assert_eq!(
        every,
        Bson::String("2017|06|06|15|38|43|234|157|3|2|23|23|2017|-0400|-240|Jun|June|%".into())
    );
    let kolkata =
        to_string(doc! { "date": date(0), "format": "%z %Z", "timezone": "Asia/Kolkata" });
    assert_eq!(kolkata, Bson::String("+0530 330".into()));
}

#[test]
fn date_to_string_null_handling() {
    assert_eq!(to_string(doc! { "date": Bson::Null }), Bson::Null);
    assert_eq!(
        to_string(doc! { "date": "$nothing", "onNull": "none" }),
        Bson::String("none".into())
    );
    // An onNull that is itself missing leaves the field out.
    let missing = eval_in(
        doc! {},
        Bson::Document(doc! { "$dateToString": { "date": "$nothing", "onNull": "$alsoNothing" } }),
    );
    assert_eq!(missing, None);
    assert_eq!(
        to_string(doc! { "date": date(0), "format": Bson::Null }),
        Bson::Null
    );
    assert_eq!(
        to_string(doc! { "date": date(0), "timezone": Bson::Null }),
        Bson::Null
    );
}

#[test]
fn date_to_string_errors() {
    let spec = |spec: bson::Document| Bson::Document(spec);
    assert_eq!(
        op_code("$dateToString", spec(doc! { "date": date(0), "format": 5 })),
        18533
    );
    assert_eq!(
        op_code(
            "$dateToString",
            spec(doc! { "date": date(0), "format": "%Y%" })
        ),
        18535
    );
    let (code, message) = op_failure(
        "$dateToString",
        spec(doc! { "date": date(0), "format": "%n" }),
    );
    assert_eq!(
        (code, message.as_str()),
        (18536, "Invalid format character '%n' in format string")
    );
    // The format is checked before a null date gives onNull.
    let checked_first = spec(doc! { "date": Bson::Null, "format": "%n", "onNull": 0 });
    assert_eq!(op_code("$dateToString", checked_first), 18536);
    assert_eq!(
        op_code(
            "$dateToString",
            spec(doc! { "date": date(253_402_300_800_000) })
        ),
        18537
    );
    assert_eq!(op_code("$dateToString", spec(doc! { "date": "x" })), 16006);
    assert_eq!(
        op_code("$dateToString", spec(doc! { "format": "%Y" })),
        18628
    );
    assert_eq!(
        op_code("$dateToString", spec(doc! { "date": date(0), "extra": 1 })),
        18534
    );
    assert_eq!(op_code("$dateToString", Bson::String("x".into())), 18629);
}

fn from_string(spec: bson::Document) -> Bson {
    op("$dateFromString", Bson::Document(spec))
}

#[test]
fn date_from_string_iso_forms() {
    assert_eq!(
        from_string(doc! { "dateString": "2017-07-04T13:09:57Z" }),
        date(1_499_173_797_000)
    );
    let london = doc! { "dateString": "2017-07-04T13:09:57", "timezone": "Europe/London" };
    assert_eq!(from_string(london), date(1_499_170_197_000));
    let offset = doc! { "dateString": "2017-07-28T10:47:52.912", "timezone": "-01:00" };
    assert_eq!(from_string(offset), date(1_501_242_472_912));
    assert_eq!(
        from_string(doc! { "dateString": "2017-07-28T11:47:52.912+00:00" }),
        date(1_501_242_472_912)
    );
    assert_eq!(
        from_string(doc! { "dateString": "2017-07-28 12:47:52.912+01:00" }),
        date(1_501_242_472_912)
    );
    assert_eq!(
        from_string(doc! { "dateString": "2017-01-01" }),
        date(1_483_228_800_000)
    );
    assert_eq!(
        from_string(doc! { "dateString": "1/1/2017" }),
        date(1_483_228_800_000)
    );
    assert_eq!(
        from_string(doc! { "dateString": "January 1, 2017" }),
        date(1_483_228_800_000)
    );
}

#[test]
fn date_from_string_with_formats() {
    let format = doc! {
        "dateString": "2017-07-04T13:09:57",
        "format": "%Y-%m-%dT%H:%M:%S",
        "timezone": "Europe/London",
    };
    assert_eq!(from_string(format), date(1_499_170_197_000));
    let iso = doc! { "dateString": "Day 7 Week 53 Year 2017", "format": "Day %u Week %V Year %G" };
    assert_eq!(from_string(iso), date(1_515_283_200_000));
    let escaped = doc! { "dateString": "2017 % 01 % 01", "format": "%Y %% %m %% %d" };
    assert_eq!(from_string(escaped), date(1_483_228_800_000));
    let with_offset = doc! {
        "dateString": "10:47:52.912 on 7/28/2017",
        "format": "%H:%M:%S.%L on %m/%d/%Y",
        "timezone": "-01:00",
    };
    assert_eq!(from_string(with_offset), date(1_501_242_472_912));
    let names = doc! { "dateString": "4 Jul 2017", "format": "%d %b %Y" };
    assert_eq!(from_string(names), date(1_499_126_400_000));
}

#[test]
fn date_from_string_null_and_errors() {
    assert_eq!(from_string(doc! { "dateString": Bson::Null }), Bson::Null);
    assert_eq!(
        from_string(doc! { "dateString": "$nothing", "onNull": 1 }),
        Bson::Int32(1)
    );
    assert_eq!(
        from_string(doc! { "dateString": "1/1/2017", "format": Bson::Null }),
        Bson::Null
    );
    for bad in [
        "60.Monday1770/06:59",
        "July 4th",
        "12:50:53",
        "2017, 12:50:53",
        "2017-02-30",
    ] {
        let spec = doc! { "dateString": bad, "onError": "bad" };
        assert_eq!(from_string(spec), Bson::String("bad".into()), "{bad}");
        assert_eq!(
            op_code(
                "$dateFromString",
                Bson::Document(doc! { "dateString": bad })
            ),
            241
        );
    }
    for format in ["%Y", "%Y/%m/%d:%H", "Y/m/d"] {
        let spec = doc! { "dateString": "2018/02/06", "format": format, "onError": "bad" };
        assert_eq!(from_string(spec), Bson::String("bad".into()), "{format}");
    }
    let zone_twice = doc! { "dateString": "2017-07-14T15:24:38Z", "timezone": "Europe/London" };
    assert_eq!(op_code("$dateFromString", Bson::Document(zone_twice)), 241);
    let not_string = doc! { "dateString": 5, "onError": "caught" };
    assert_eq!(from_string(not_string), Bson::String("caught".into()));
    // Format and zone errors are not conversion failures: onError does not catch them.
    let format = doc! { "dateString": "x", "format": 5, "onError": 1 };
    assert_eq!(op_code("$dateFromString", Bson::Document(format)), 40684);
    let zone = doc! { "dateString": Bson::Null, "timezone": 5, "onNull": 1 };
    assert_eq!(op_code("$dateFromString", Bson::Document(zone)), 40517);
    assert_eq!(
        op_code("$dateFromString", Bson::Document(doc! { "format": "%Y" })),
        40542
    );
    assert_eq!(op_code("$dateFromString", Bson::Int32(1)), 40540);
}

#[test]
fn date_to_parts() {
    let parts = op(
        "$dateToParts",
        Bson::Document(doc! { "date": date(JUNE_SIXTH), "timezone": "Europe/London" }),
    );
    assert_eq!(
        parts,
        Bson::Document(doc! {
            "year": 2017, "month": 6, "day": 6, "hour": 20, "minute": 38, "second": 43, "millisecond": 234,
        })
    );
    let iso = op(
        "$dateToParts",
        Bson::Document(doc! { "date": date(1_451_606_400_000), "iso8601": true }),
    );
    assert_eq!(
        iso,
        Bson::Document(doc! {
            "isoWeekYear": 2015, "isoWeek": 53, "isoDayOfWeek": 5, "hour": 0, "minute": 0, "second": 0,
            "millisecond": 0,
        })
    );
    assert_eq!(
        op("$dateToParts", Bson::Document(doc! { "date": Bson::Null })),
        Bson::Null
    );
    assert_eq!(
        op_code(
            "$dateToParts",
            Bson::Document(doc! { "date": date(0), "iso8601": 1 })
        ),
        40521
    );
    assert_eq!(
        op_code("$dateToParts", Bson::Document(doc! { "timezone": "UTC" })),
        40522
    );
}

fn from_parts(spec: bson::Document) -> Bson {
    op("$dateFromParts", Bson::Document(spec))
}

#[test]
fn date_from_parts_carries_out_of_range_values() {
    assert_eq!(
        from_parts(doc! { "year": 2017, "month": -1 }),
        date(1_477_958_400_000)
    );
    assert_eq!(
        from_parts(doc! { "year": 2017, "day": -1 }),
        date(1_483_056_000_000)
    );
    assert_eq!(
        from_parts(doc! { "year": 2017, "hour": 25 }),
        date(1_483_318_800_000)
    );
    assert_eq!(
        from_parts(doc! { "year": 2017, "minute": 61 }),
        date(1_483_232_460_000)
    );
    assert_eq!(
        from_parts(doc! { "year": 2017, "second": 61 }),
        date(1_483_228_861_000)
    );
    assert_eq!(
        from_parts(doc! { "year": 2016, "month": 14, "day": 1 }),
        date(1_485_907_200_000)
    );
}

#[test]
fn date_from_parts_zones_iso_and_nulls() {
    let london = doc! { "year": 2017, "month": 7, "day": 4, "hour": 14, "minute": 9, "second": 57, "timezone": "Europe/London" };
    assert_eq!(from_parts(london), date(1_499_173_797_000));
    assert_eq!(
        from_parts(doc! { "isoWeekYear": 2017, "isoWeek": 53, "isoDayOfWeek": 7 }),
        date(1_515_283_200_000)
    );
    assert_eq!(
        from_parts(doc! { "year": 2017, "month": Bson::Null }),
        Bson::Null
    );
    assert_eq!(
        from_parts(doc! { "year": 2017, "timezone": Bson::Null }),
        Bson::Null
    );
    assert_eq!(
        from_parts(doc! { "year": 2017.0, "month": 2_i64 }),
        date(1_485_907_200_000)
    );
}

#[test]
fn date_from_parts_errors() {
    let code = |spec: bson::Document| op_code("$dateFromParts", Bson::Document(spec));
    assert_eq!(code(doc! { "month": 1 }), 40516);
    assert_eq!(code(doc! { "year": 2017, "isoWeek": 1 }), 40489);
    assert_eq!(code(doc! { "isoWeekYear": 2017, "month": 1 }), 40525);
    assert_eq!(code(doc! { "year": 2017, "era": 1 }), 40518);
    let (code_value, message) =
        op_failure("$dateFromParts", Bson::Document(doc! { "year": 2017.5 }));
    assert_eq!(
        (code_value, message.as_str()),
        (
            40515,
            "'year' must evaluate to an integer, found double with value 2017.5"
        )
    );
    assert_eq!(code(doc! { "year": 2017, "month": 40000 }), 31034);
    assert_eq!(code(doc! { "year": 10000 }), 40523);
    assert_eq!(code(doc! { "isoWeekYear": 0 }), 31095);
    assert_eq!(code(doc! { "year": 2017, "timezone": "Nowhere" }), 40485);
    assert_eq!(op_code("$dateFromParts", Bson::Int32(2017)), 40519);
}
