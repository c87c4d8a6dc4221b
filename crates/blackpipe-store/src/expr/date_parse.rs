//! `$dateFromString` and the date strings that `$convert`/`$toDate` read.
//!
//! mongod hands strings to timelib's `strtotime`, which reads a great many English phrasings.
//! blackpipe reads the forms the manual shows and drivers send: ISO 8601 (`2017-02-08`,
//! `2017-02-08T12:10:40.787`, with `Z` or an offset), `2017/02/08`, `02/08/2017` (month first)
//! and month names (`February 8, 2017`, `8 Feb 2017`), each with an optional time and zone
//! (`Z`, `UTC`, `GMT`, an offset or a North American abbreviation). Any other string fails with
//! ConversionFailure, as an unparsable string does in mongod (so `onError` applies). With a
//! `format`, every specifier mongod accepts is read.

use bson::Bson;

use super::args::is_absent;
use super::calendar::{self, MONTH_NAMES, MS_PER_DAY};
use super::date_format::{FROM_STRING_SPECIFIERS, validate};
use super::tz::{self, TimeZone};
use super::vars::Scope;
use super::{Expr, is_nullish};
use crate::code;
use crate::errors::{CommandError, StoreResult, format_value, type_name};

/// `Location40684`: a `$dateFromString` format that is not a string.
const FORMAT_NOT_STRING: i32 = 40684;

/// What a date string says: its local fields and, if it names one, its offset.
#[derive(Debug, Default, Clone, Copy)]
struct Fields {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    day_of_year: Option<i64>,
    iso_year: Option<i64>,
    iso_week: Option<i64>,
    iso_day: Option<i64>,
    hour: i64,
    minute: i64,
    second: i64,
    millisecond: i64,
    /// Seconds east of UTC, when the string carries a zone.
    offset: Option<i64>,
}

fn failure(text: &str, position: usize, reason: &str) -> CommandError {
    CommandError::new(
        code::CONVERSION_FAILURE,
        format!("Error parsing date string '{text}'; {position}: {reason}"),
    )
}

/// `$dateFromString` (`[dateString, timezone, format, onNull, onError]`).
pub(super) fn from_string(arguments: &[Expr], scope: &Scope) -> StoreResult<Option<Bson>> {
    let value = arguments[0].eval(scope)?;
    let format = if is_absent(&arguments[2]) {
        None
    } else {
        Some(arguments[2].eval(scope)?)
    };
    if let Some(Some(format)) = &format {
        match format {
            Bson::String(text) => validate(text, FROM_STRING_SPECIFIERS)?,
            Bson::Null | Bson::Undefined => {}
            other => {
                return Err(CommandError::new(
                    FORMAT_NOT_STRING,
                    format!(
                        "$dateFromString requires that 'format' be a string, found: {} with \
                         value {}",
                        type_name(other),
                        format_value(other)
                    ),
                ));
            }
        }
    }
    let zone = tz::evaluate(&arguments[1], scope)?;
    let Some(value) = value.filter(|value| !is_nullish(Some(value))) else {
        return if is_absent(&arguments[3]) {
            Ok(Some(Bson::Null))
        } else {
            arguments[3].eval(scope)
        };
    };
    match convert(&value, zone.as_ref(), format.as_ref()) {
        Err(error) if error.code == code::CONVERSION_FAILURE && !is_absent(&arguments[4]) => {
            arguments[4].eval(scope)
        }
        other => other,
    }
}

fn convert(
    value: &Bson,
    zone: Option<&TimeZone>,
    format: Option<&Option<Bson>>,
) -> StoreResult<Option<Bson>> {
    let Bson::String(text) = value else {
        return Err(CommandError::new(
            code::CONVERSION_FAILURE,
            format!(
                "$dateFromString requires that 'dateString' be a string, found: {} with value {}",
                type_name(value),
                format_value(value)
            ),
        ));
    };
    let Some(zone) = zone else {
        return Ok(Some(Bson::Null));
    };
    let millis = match format {
        None => parse_date(text, zone)?,
        Some(Some(Bson::String(format))) => parse_with_format(text, format, zone)?,
        Some(_) => return Ok(Some(Bson::Null)),
    };
    Ok(Some(super::dates::date(millis)))
}

/// A free-form date string read in `zone`, as `$dateFromString` without a format and
/// `$convert` to a date read it.
///
/// # Errors
/// ConversionFailure for a string blackpipe does not read.
pub(super) fn parse_date(text: &str, zone: &TimeZone) -> StoreResult<i64> {
    let mut cursor = Cursor::new(text);
    let mut fields = read_date(&mut cursor)?;
    read_time_and_zone(&mut cursor, &mut fields)?;
    if !cursor.at_end() {
        return Err(cursor.error("Unexpected data found."));
    }
    resolve(text, &fields, zone)
}

/// The instant the fields name.
fn resolve(text: &str, fields: &Fields, zone: &TimeZone) -> StoreResult<i64> {
    let days = if let Some(year) = fields.iso_year {
        calendar::iso_year_start(year)
            + (fields.iso_week.unwrap_or(1) - 1) * 7
            + (fields.iso_day.unwrap_or(1) - 1)
    } else {
        let Some(year) = fields.year else {
            return Err(failure(
                text,
                0,
                "an incomplete date/time string has been found, with elements missing: \"year\"",
            ));
        };
        if let Some(day_of_year) = fields.day_of_year {
            calendar::days_from_civil(year, 1, day_of_year)
        } else {
            let month = fields.month.unwrap_or(1);
            let day = fields.day.unwrap_or(1);
            let month = u32::try_from(month).ok().filter(|m| (1..=12).contains(m));
            let valid = month
                .is_some_and(|m| (1..=i64::from(calendar::days_in_month(year, m))).contains(&day));
            let Some(month) = month.filter(|_| valid) else {
                return Err(failure(text, 0, "The parsed date was invalid"));
            };
            calendar::days_from_civil(year, month, day)
        }
    };
    if fields.hour > 24 || fields.minute > 59 || fields.second > 60 {
        return Err(failure(text, 0, "The parsed time was invalid"));
    }
    let local = days * MS_PER_DAY
        + fields.hour * 3_600_000
        + fields.minute * 60_000
        + fields.second * 1000
        + fields.millisecond;
    match fields.offset {
        Some(_) if !zone.is_utc() => Err(CommandError::new(
            code::CONVERSION_FAILURE,
            format!(
                "you cannot pass in a date/time string with time zone information ('{text}') \
                 together with a timezone argument"
            ),
        )),
        Some(offset) => Ok(local - offset * 1000),
        None => Ok(zone.to_utc(local)),
    }
}

/// A byte cursor over the string being read.
struct Cursor<'a> {
    text: &'a str,
    position: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Cursor<'a> {
        Cursor { text, position: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.position..]
    }

    fn at_end(&self) -> bool {
        self.position >= self.text.len()
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.position).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.position += 1;
            true
        } else {
            false
        }
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.position += 1;
        }
    }

    /// Between `min` and `max` ASCII digits.
    fn digits(&mut self, min: usize, max: usize) -> Option<i64> {
        let count = self
            .rest()
            .bytes()
            .take(max)
            .take_while(u8::is_ascii_digit)
            .count();
        if count < min {
            return None;
        }
        let value = self.rest()[..count].parse().ok()?;
        self.position += count;
        Some(value)
    }

    /// A run of ASCII letters.
    fn word(&mut self) -> &'a str {
        let count = self
            .rest()
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        let word = &self.rest()[..count];
        self.position += count;
        word
    }

    fn error(&self, reason: &str) -> CommandError {
        failure(self.text, self.position, reason)
    }
}

/// A month named in full or by its first three letters, case-insensitively.
fn month_number(word: &str) -> Option<i64> {
    MONTH_NAMES
        .iter()
        .position(|name| {
            name.eq_ignore_ascii_case(word)
                || (word.len() == 3 && name[..3].eq_ignore_ascii_case(word))
        })
        .and_then(|index| i64::try_from(index + 1).ok())
}

fn read_date(cursor: &mut Cursor<'_>) -> StoreResult<Fields> {
    let mut fields = Fields::default();
    if cursor.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
        // `February 8, 2017`
        let month = month_number(cursor.word())
            .ok_or_else(|| cursor.error("The timezone could not be found in the database"))?;
        cursor.skip_spaces();
        let day = cursor
            .digits(1, 2)
            .ok_or_else(|| cursor.error("Unexpected character"))?;
        cursor.eat(b',');
        cursor.skip_spaces();
        let year = cursor
            .digits(4, 4)
            .ok_or_else(|| cursor.error("Unexpected character"))?;
        (fields.year, fields.month, fields.day) = (Some(year), Some(month), Some(day));
        return Ok(fields);
    }
    let start = cursor.position;
    let first = cursor
        .digits(1, 4)
        .ok_or_else(|| cursor.error("Unexpected character"))?;
    let width = cursor.position - start;
    match (width, cursor.peek()) {
        (4, Some(separator @ (b'-' | b'/'))) => {
            // `2017-02-08` or `2017/02/08`
            cursor.position += 1;
            let month = cursor
                .digits(1, 2)
                .ok_or_else(|| cursor.error("Unexpected character"))?;
            if !cursor.eat(separator) {
                return Err(cursor.error("Unexpected character"));
            }
            let day = cursor
                .digits(1, 2)
                .ok_or_else(|| cursor.error("Unexpected character"))?;
            (fields.year, fields.month, fields.day) = (Some(first), Some(month), Some(day));
        }
        (1 | 2, Some(b'/')) => {
            // `02/08/2017`, month first
            cursor.position += 1;
            let day = cursor
                .digits(1, 2)
                .ok_or_else(|| cursor.error("Unexpected character"))?;
            if !cursor.eat(b'/') {
                return Err(cursor.error("Unexpected character"));
            }
            let year = cursor
                .digits(4, 4)
                .ok_or_else(|| cursor.error("Unexpected character"))?;
            (fields.year, fields.month, fields.day) = (Some(year), Some(first), Some(day));
        }
        (1 | 2, Some(b' ')) => {
            // `8 Feb 2017`
            cursor.skip_spaces();
            let month =
                month_number(cursor.word()).ok_or_else(|| cursor.error("Unexpected character"))?;
            cursor.skip_spaces();
            let year = cursor
                .digits(4, 4)
                .ok_or_else(|| cursor.error("Unexpected character"))?;
            (fields.year, fields.month, fields.day) = (Some(year), Some(month), Some(first));
        }
        _ => return Err(cursor.error("Unexpected character")),
    }
    Ok(fields)
}

fn read_time_and_zone(cursor: &mut Cursor<'_>, fields: &mut Fields) -> StoreResult<()> {
    let before = cursor.position;
    if cursor.eat(b'T') || cursor.eat(b' ') {
        cursor.skip_spaces();
        if let Some(hour) = cursor.digits(1, 2) {
            if !cursor.eat(b':') {
                return Err(cursor.error("Unexpected character"));
            }
            fields.hour = hour;
            fields.minute = cursor
                .digits(2, 2)
                .ok_or_else(|| cursor.error("Unexpected character"))?;
            if cursor.eat(b':') {
                fields.second = cursor
                    .digits(2, 2)
                    .ok_or_else(|| cursor.error("Unexpected character"))?;
                if cursor.eat(b'.') {
                    fields.millisecond = fraction_ms(cursor)?;
                }
            }
        } else {
            // A space before a zone, not a time.
            cursor.position = before;
        }
    }
    cursor.skip_spaces();
    if !cursor.at_end() {
        fields.offset = Some(read_zone(cursor)?);
    }
    Ok(())
}

/// Fractional seconds as milliseconds (digits past the third are dropped).
fn fraction_ms(cursor: &mut Cursor<'_>) -> StoreResult<i64> {
    let digits: String = cursor
        .rest()
        .bytes()
        .take_while(u8::is_ascii_digit)
        .map(char::from)
        .collect();
    if digits.is_empty() {
        return Err(cursor.error("Unexpected character"));
    }
    cursor.position += digits.len();
    let mut padded = digits.chars().take(3).collect::<String>();
    while padded.len() < 3 {
        padded.push('0');
    }
    Ok(padded.parse().unwrap_or_default())
}

/// A zone written in the string, as seconds east of UTC.
fn read_zone(cursor: &mut Cursor<'_>) -> StoreResult<i64> {
    if let Some(sign) = cursor.peek().filter(|b| *b == b'+' || *b == b'-') {
        cursor.position += 1;
        let hours = cursor
            .digits(1, 2)
            .ok_or_else(|| cursor.error("Unexpected character"))?;
        cursor.eat(b':');
        let minutes = cursor.digits(2, 2).unwrap_or(0);
        let seconds = hours * 3600 + minutes * 60;
        return Ok(if sign == b'-' { -seconds } else { seconds });
    }
    let word = cursor.word();
    let hours = match word {
        "Z" | "z" | "UTC" | "GMT" | "UT" => 0,
        "EST" => -5,
        "EDT" | "CST" => {
            if word == "EDT" {
                -4
            } else {
                -6
            }
        }
        "CDT" => -5,
        "MST" => -7,
        "MDT" => -6,
        "PST" => -8,
        "PDT" => -7,
        _ => return Err(cursor.error("The timezone could not be found in the database")),
    };
    Ok(hours * 3600)
}

/// A date string read with a format of `%` specifiers (already validated).
fn parse_with_format(text: &str, format: &str, zone: &TimeZone) -> StoreResult<i64> {
    let mut cursor = Cursor::new(text);
    let mut fields = Fields::default();
    let mut specifiers = format.chars();
    while let Some(c) = specifiers.next() {
        if c != '%' {
            let mut buffer = [0u8; 4];
            let literal = c.encode_utf8(&mut buffer);
            if !cursor.rest().starts_with(&*literal) {
                return Err(cursor.error("The format separator does not match"));
            }
            cursor.position += literal.len();
            continue;
        }
        let Some(specifier) = specifiers.next() else {
            break;
        };
        read_specifier(&mut cursor, specifier, &mut fields)?;
    }
    if !cursor.at_end() {
        return Err(cursor.error("Trailing data"));
    }
    resolve(text, &fields, zone)
}

fn read_specifier(
    cursor: &mut Cursor<'_>,
    specifier: char,
    fields: &mut Fields,
) -> StoreResult<()> {
    let number = |cursor: &mut Cursor<'_>, min: usize, max: usize| {
        cursor
            .digits(min, max)
            .ok_or_else(|| cursor.error("A two digit number could not be found"))
    };
    match specifier {
        'Y' => fields.year = Some(number(cursor, 4, 4)?),
        'm' => fields.month = Some(number(cursor, 1, 2)?),
        'd' => fields.day = Some(number(cursor, 1, 2)?),
        'j' => fields.day_of_year = Some(number(cursor, 1, 3)?),
        'H' => fields.hour = number(cursor, 1, 2)?,
        'M' => fields.minute = number(cursor, 1, 2)?,
        'S' => fields.second = number(cursor, 1, 2)?,
        'L' => fields.millisecond = number(cursor, 1, 3)?,
        'G' => fields.iso_year = Some(number(cursor, 4, 4)?),
        'V' => fields.iso_week = Some(number(cursor, 1, 2)?),
        'u' => fields.iso_day = Some(number(cursor, 1, 1)?),
        // `%w` counts from Sunday (1) to Saturday (7).
        'w' => fields.iso_day = Some((number(cursor, 1, 1)? + 5) % 7 + 1),
        'z' => fields.offset = Some(read_zone(cursor)?),
        'Z' => {
            let negative = cursor.eat(b'-');
            if !negative {
                cursor.eat(b'+');
            }
            let minutes = number(cursor, 1, 4)?;
            fields.offset = Some(if negative { -minutes } else { minutes } * 60);
        }
        'b' | 'B' => {
            let word = cursor.word();
            let month = month_number(word)
                .filter(|_| (specifier == 'b') == (word.len() == 3))
                .ok_or_else(|| cursor.error("A textual month could not be found"))?;
            fields.month = Some(month);
        }
        _ => {
            if !cursor.eat(b'%') {
                return Err(cursor.error("The escaped character could not be found"));
            }
        }
    }
    Ok(())
}
