//! Durations as scenarios write them: humantime's `1h 30m`, `500ms`, or one decimal
//! number with a unit as tc writes it (`0.5ms`), at most 100 years.

use std::time::Duration;

/// A duration as humantime reads it (`1h 30m`, `500ms`), or a decimal number with one
/// unit as tc writes it (`0.5ms`, `1.5s`), which humantime refuses.
///
/// Anything longer than [`MAX_DURATION`] (100 years) is refused: clocks add durations to
/// instants, and a sum past what the clock can hold would otherwise panic mid-run.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let d = parse_duration_unbounded(s).map_err(DurationError::Invalid)?;
    if d > MAX_DURATION {
        return Err(DurationError::TooLong);
    }
    Ok(d)
}

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum DurationError {
    /// Not a duration at all; the parser's reason.
    Invalid(String),
    /// Longer than [`MAX_DURATION`].
    TooLong,
}

/// The longest duration any key or flag takes: 100 years (of 365.25 days, as humantime
/// counts `1y`).
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 31_557_600);

fn parse_duration_unbounded(s: &str) -> Result<Duration, String> {
    let whole = humantime::parse_duration(s).map_err(|e| e.to_string());
    if whole.is_ok() {
        return whole;
    }
    let t = s.trim();
    let Some(split) = t.find(|c: char| c.is_ascii_alphabetic()) else {
        return whole;
    };
    let (number, unit) = (t[..split].trim(), t[split..].trim());
    let scale = match unit {
        "s" | "sec" | "secs" => 1.0,
        "ms" | "msec" => 1e-3,
        "us" | "usec" | "µs" => 1e-6,
        "ns" | "nsec" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return whole,
    };
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale < 1e12 => {
            Ok(Duration::from_nanos((v * scale * 1e9).round() as u64))
        }
        _ => whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humantime_and_tc_forms_parse_and_the_cap_holds() {
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0.5ms"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("101y"), Err(DurationError::TooLong));
        assert!(matches!(
            parse_duration("soon"),
            Err(DurationError::Invalid(_))
        ));
    }
}
