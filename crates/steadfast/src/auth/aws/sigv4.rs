//! AWS Signature Version 4 over one request, and the UTC date forms SigV4 and the credential
//! endpoints use.
//!
//! Pure: the caller gives the date, the credentials and the request. The signing is written
//! here rather than taken from `aws-sigv4`: that crate (1.6) brings about 50 crates into the
//! build, among them second major versions of `sha2`, `hmac` and `digest`, to compute what is
//! four HMACs over strings this module builds; the published SigV4 test vectors check it.

use std::fmt::Write as _;

use hmac::{Hmac, Mac};
use sha2::{Digest as _, Sha256};

/// The only algorithm MONGODB-AWS uses.
pub(crate) const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// A request to sign. `headers` are lower-case names with trimmed values, sorted by name (the
/// canonical order); `query` is already in canonical form.
pub(crate) struct SignableRequest<'a> {
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    pub(crate) query: &'a str,
    pub(crate) headers: &'a [(&'a str, &'a str)],
    pub(crate) body: &'a [u8],
}

/// Who signs, when and for what: `date` is the `X-Amz-Date` value (`YYYYMMDDTHHMMSSZ`).
pub(crate) struct SigningScope<'a> {
    pub(crate) access_key_id: &'a str,
    pub(crate) secret_access_key: &'a str,
    pub(crate) date: &'a str,
    pub(crate) region: &'a str,
    pub(crate) service: &'a str,
}

/// The `Authorization` header value for `request` signed as `scope` says.
pub(crate) fn authorization_header(
    request: &SignableRequest<'_>,
    scope: &SigningScope<'_>,
) -> String {
    let signed_headers = request
        .headers
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(";");
    let canonical = canonical_request(request, &signed_headers);
    let day = scope.date.get(..8).unwrap_or(scope.date);
    let credential_scope = format!("{day}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "{ALGORITHM}\n{}\n{credential_scope}\n{}",
        scope.date,
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let mut key = hmac(
        format!("AWS4{}", scope.secret_access_key).as_bytes(),
        day.as_bytes(),
    );
    for part in [scope.region, scope.service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex(&hmac(&key, string_to_sign.as_bytes()));
    format!(
        "{ALGORITHM} Credential={}/{credential_scope}, SignedHeaders={signed_headers}, Signature={signature}",
        scope.access_key_id
    )
}

fn canonical_request(request: &SignableRequest<'_>, signed_headers: &str) -> String {
    let mut canonical = format!("{}\n{}\n{}\n", request.method, request.path, request.query);
    for (name, value) in request.headers {
        // Writing to a String cannot fail.
        let _ = writeln!(canonical, "{name}:{value}");
    }
    let _ = write!(
        canonical,
        "\n{signed_headers}\n{}",
        hex(&Sha256::digest(request.body))
    );
    canonical
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length, so `new_from_slice` cannot fail; the fallback keeps
    // this function total without a panic path (a wrong signature, which the server refuses).
    match <Hmac<Sha256> as Mac>::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// Seconds since the Unix epoch as SigV4's `X-Amz-Date` (`YYYYMMDDTHHMMSSZ`, UTC).
pub(crate) fn amz_date(unix_seconds: u64) -> String {
    let days = unix_seconds / 86_400;
    let rest = unix_seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Parses an ISO 8601 UTC timestamp (`2019-11-07T00:26:07Z`, fractional seconds allowed) into
/// seconds since the Unix epoch; `None` for anything else.
pub(crate) fn parse_utc_timestamp(text: &str) -> Option<u64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date_parts = date.splitn(3, '-').map(|p| p.parse::<u64>().ok());
    let (year, month, day) = (
        date_parts.next()??,
        date_parts.next()??,
        date_parts.next()??,
    );
    let time = time.split_once('.').map_or(time, |(whole, _)| whole);
    let mut time_parts = time.splitn(3, ':').map(|p| p.parse::<u64>().ok());
    let (hour, minute, second) = (
        time_parts.next()??,
        time_parts.next()??,
        time_parts.next()??,
    );
    let valid = (1970..=9999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 61;
    if !valid {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's `days_from_civil`), for
/// years from 1970 on.
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let year_of_era = year - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of day `days` since 1970-01-01 (Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}
