//! Timestamps as query text: RFC 3339 (`2016-01-01T00:00:00Z`) and the SQL wall-clock
//! form (`2016-01-01 00:00:00`), both UTC, from nanoseconds since the Unix epoch, without
//! a date library.

use std::fmt::Write as _;

const NS_PER_SEC: i64 = 1_000_000_000;

/// Year, month (1-12), day (1-31) of the day `days` after 1970-01-01 (proleptic
/// Gregorian; Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Appends `YYYY-MM-DD<sep>HH:MM:SS[.fffffffff]` (the fraction only when not zero, without
/// trailing zeros).
fn push_datetime(out: &mut String, ns: i64, sep: char) {
    let secs = ns.div_euclid(NS_PER_SEC);
    let frac = ns.rem_euclid(NS_PER_SEC);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}{sep}{:02}:{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    );
    if frac != 0 {
        let digits = format!("{frac:09}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

/// Appends RFC 3339 in UTC: `2016-01-01T00:00:00Z` (`2016-01-01T00:00:00.5Z` with a
/// fraction).
pub fn push_rfc3339(out: &mut String, ns: i64) {
    push_datetime(out, ns, 'T');
    out.push('Z');
}

/// RFC 3339 in UTC, as [`push_rfc3339`] writes it.
pub fn rfc3339(ns: i64) -> String {
    let mut s = String::with_capacity(20);
    push_rfc3339(&mut s, ns);
    s
}

/// Appends the UTC wall clock as SQL `DATETIME` text: `2016-01-01 00:00:00`.
pub fn push_sql_datetime(out: &mut String, ns: i64) {
    push_datetime(out, ns, ' ');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_451_606_400 * NS_PER_SEC), "2016-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(1_451_606_400 * NS_PER_SEC + 3_723 * NS_PER_SEC + 500_000_000),
            "2016-01-01T01:02:03.5Z"
        );
        assert_eq!(rfc3339(951_782_400 * NS_PER_SEC), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(rfc3339(4_102_444_799 * NS_PER_SEC), "2099-12-31T23:59:59Z");
        let mut s = String::new();
        push_sql_datetime(&mut s, 1_456_704_000 * NS_PER_SEC + 1_000);
        assert_eq!(s, "2016-02-29 00:00:00.000001");
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_previous_one() {
        let mut prev = civil_from_days(-1);
        assert_eq!(prev, (1969, 12, 31));
        for d in 0..146_097 {
            let (y, m, day) = civil_from_days(d);
            let (py, pm, pd) = prev;
            let next_day = (y, m, day) == (py, pm, pd + 1);
            let next_month = day == 1 && ((y == py && m == pm + 1) || (y == py + 1 && m == 1));
            assert!(next_day || next_month, "{prev:?} -> {:?}", (y, m, day));
            prev = (y, m, day);
        }
        assert_eq!(prev, (2369, 12, 31));
    }
}
