//! The proleptic Gregorian calendar over the whole range of BSON dates: civil dates from day
//! numbers and back (Howard Hinnant's algorithms, exact in `i64`), ISO weeks and the names of
//! months. Everything here works on local wall-clock milliseconds; time zones are `tz.rs`.

/// Milliseconds in a day.
pub(super) const MS_PER_DAY: i64 = 86_400_000;

/// Full month names, for `%B`.
pub(super) const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The civil date `(year, month, day)` of a day number (days since 1970-01-01).
pub(super) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both are small by construction (1..=31 and 1..=12).
    (year, small(month), small(day))
}

/// The day number of a civil date; `month` in 1..=12, `day` may run past the month (it
/// simply counts on).
pub(super) fn days_from_civil(year: i64, month: u32, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let month = i64::from(month);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 + (day - 1)
}

/// Whether `year` is a leap year.
pub(super) fn is_leap(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

/// The number of days in a month.
pub(super) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn small(value: i64) -> u32 {
    u32::try_from(value).unwrap_or_default()
}

/// The broken-down local time of an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Parts {
    pub(super) year: i64,
    pub(super) month: u32,
    pub(super) day: u32,
    pub(super) hour: u32,
    pub(super) minute: u32,
    pub(super) second: u32,
    pub(super) millisecond: u32,
    /// Days since 1970-01-01 (local).
    pub(super) days: i64,
}

impl Parts {
    /// The parts of local wall-clock milliseconds.
    pub(super) fn of(local: i64) -> Parts {
        let days = local.div_euclid(MS_PER_DAY);
        let in_day = local.rem_euclid(MS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        Parts {
            year,
            month,
            day,
            hour: small(in_day / 3_600_000),
            minute: small(in_day / 60_000 % 60),
            second: small(in_day / 1000 % 60),
            millisecond: small(in_day % 1000),
            days,
        }
    }

    /// The day of the week, 1 (Sunday) to 7 (Saturday), as `$dayOfWeek` counts.
    pub(super) fn day_of_week(&self) -> u32 {
        small((self.days + 4).rem_euclid(7)) + 1
    }

    /// The ISO day of the week, 1 (Monday) to 7 (Sunday).
    pub(super) fn iso_day_of_week(&self) -> u32 {
        small((self.days + 3).rem_euclid(7)) + 1
    }

    /// The day of the year, 1 to 366.
    pub(super) fn day_of_year(&self) -> u32 {
        small(self.days - days_from_civil(self.year, 1, 1)) + 1
    }

    /// The week of the year, 0 to 53: weeks start on Sunday, and the days before the year's
    /// first Sunday are in week 0 (`$week`, `%U`).
    pub(super) fn week(&self) -> u32 {
        (self.day_of_year() - 1 + 7 - (self.day_of_week() - 1)) / 7
    }

    /// The ISO 8601 week-numbering year and week (1 to 53).
    pub(super) fn iso_week(&self) -> (i64, u32) {
        // The ISO week belongs to the year of its Thursday.
        let thursday = self.days + 4 - i64::from(self.iso_day_of_week());
        let (year, _, _) = civil_from_days(thursday);
        let week = (thursday - days_from_civil(year, 1, 1)) / 7 + 1;
        (year, small(week))
    }
}

/// The day number of the Monday that starts ISO week 1 of `iso_year`.
pub(super) fn iso_year_start(iso_year: i64) -> i64 {
    let january_fourth = days_from_civil(iso_year, 1, 4);
    let iso_day = (january_fourth + 3).rem_euclid(7) + 1;
    january_fourth - (iso_day - 1)
}
