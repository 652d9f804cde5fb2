//! UTC time helpers: ISO-8601 seconds, compact stamps, epoch arithmetic (no time zone database needed).

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now (0 if the clock is before 1970).
pub fn now_epoch() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)).unwrap_or(0)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for now.
pub fn now_iso() -> String {
    format_iso(now_epoch())
}

/// `YYYYmmdd-HHMMSS` for now (quarantine names).
pub fn stamp_compact_utc() -> String {
    let (y, mo, d, h, mi, s) = civil(now_epoch());
    format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}")
}

/// `YYYY-MM-DDTHH:MM:SSZ` for an epoch second.
pub fn format_iso(epoch: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(epoch);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `YYYY-MM-DDTHH:MM:SS.000Z` (the receiver's filter timestamps carry literal milliseconds).
pub fn format_iso_millis(epoch: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(epoch);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.000Z")
}

/// `HH:MM:SS` of an epoch second, UTC.
pub fn format_hms(epoch: i64) -> String {
    let (_, _, _, h, mi, s) = civil(epoch);
    format!("{h:02}:{mi:02}:{s:02}")
}

/// Parses exactly `YYYY-MM-DDTHH:MM:SSZ`; anything else (other offsets, fractions, bad ranges) is `None`.
pub fn parse_iso(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[19] != b'Z'
    {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = &text[range];
        digits.bytes().all(|c| c.is_ascii_digit()).then(|| digits.parse().ok()).flatten()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3_600 + mi * 60 + s)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (era-based arithmetic, valid for any year).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (m + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + d - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// (year, month, day, hour, minute, second) of an epoch second, UTC.
fn civil(epoch: i64) -> (i64, i64, i64, i64, i64, i64) {
    let days = epoch.div_euclid(86_400);
    let secs = epoch.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day, secs / 3_600, secs % 3_600 / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants_format_and_parse_back() {
        assert_eq!(format_iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_iso(1_764_424_991), "2025-11-29T14:03:11Z");
        assert_eq!(format_iso(951_782_400), "2000-02-29T00:00:00Z");
        for epoch in [0, 951_782_400, 1_764_424_991, 4_102_444_800, 978_307_200 - 1] {
            assert_eq!(parse_iso(&format_iso(epoch)), Some(epoch));
        }
    }

    #[test]
    fn every_day_of_several_years_round_trips() {
        let start = parse_iso("1999-12-31T23:59:59Z").unwrap();
        for day in 0..(366 * 6) {
            let epoch = start + day * 86_400 + 7;
            assert_eq!(parse_iso(&format_iso(epoch)), Some(epoch));
        }
    }

    #[test]
    fn malformed_iso_is_rejected() {
        for bad in [
            "",
            "2025-11-29T14:03:11",
            "2025-11-29 14:03:11Z",
            "2025-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2025-11-29T24:00:00Z",
            "2025-11-29T14:03:11.000Z",
            "+025-11-29T14:03:11Z",
            "2025-11-29T14:03:1xZ",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
    }

    #[test]
    fn millis_and_hms_forms() {
        assert_eq!(format_iso_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_hms(1_764_424_991), "14:03:11");
    }
}
