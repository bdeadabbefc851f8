//! The number formats iputils prints with: C's `%g` (for the loss percentage), the
//! `%ld.%03ld` milliseconds of the `rtt` line, and the `time` figure rounded to ms.

use std::time::Duration;

/// C's `printf("%g", v)`: 6 significant digits, trailing zeros dropped, exponent form
/// when the exponent is below -4 or at least 6.
pub fn c_g(v: f64) -> String {
    const P: i32 = 6;
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".to_string()
        } else if v > 0.0 {
            "inf".to_string()
        } else {
            "-inf".to_string()
        };
    }
    // The exponent after rounding to P significant digits decides the style.
    let e_form = format!("{:.*e}", (P - 1) as usize, v);
    let (mantissa, exp) = e_form.split_once('e').unwrap_or((&e_form, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..P).contains(&exp) {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (P - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// iputils' `%ld.%03ld` of a microsecond count: milliseconds, 3 decimals, truncated.
pub fn ms3(us: i64) -> String {
    let sign = if us < 0 { "-" } else { "" };
    let a = us.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

/// iputils' `time` figure: whole milliseconds, rounded half up from the nanoseconds.
pub fn time_ms(d: Duration) -> u128 {
    (d.as_nanos() + 500_000) / 1_000_000
}

/// The same ms figure as the load report's table (`tsload_report::report`): 1, 2 or 3
/// decimals depending on size.
pub fn table_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_g_like_printf() {
        assert_eq!(c_g(0.0), "0");
        assert_eq!(c_g(100.0), "100");
        assert_eq!(c_g(25.0), "25");
        assert_eq!(c_g(12.5), "12.5");
        // iputils' loss for 1 of 3, a C float: 33.333332061767578 -> "33.3333".
        assert_eq!(c_g((100.0f64 / 3.0) as f32 as f64), "33.3333");
        assert_eq!(c_g((200.0f64 / 3.0) as f32 as f64), "66.6667");
        assert_eq!(c_g(0.1), "0.1");
        assert_eq!(c_g(0.01), "0.01");
        assert_eq!(c_g(0.0001), "0.0001");
        assert_eq!(c_g(0.00001), "1e-05");
        assert_eq!(c_g(0.000012345), "1.2345e-05");
        assert_eq!(c_g(123456.0), "123456");
        assert_eq!(c_g(1234567.0), "1.23457e+06");
        assert_eq!(c_g(999999.7), "1e+06");
        assert_eq!(c_g(99.999951), "100");
        assert_eq!(c_g(0.5), "0.5");
        assert_eq!(c_g(-2.5), "-2.5");
    }

    #[test]
    fn ms_with_three_decimals_truncated() {
        assert_eq!(ms3(21), "0.021");
        assert_eq!(ms3(0), "0.000");
        assert_eq!(ms3(1_234), "1.234");
        assert_eq!(ms3(212_999), "212.999");
        assert_eq!(ms3(-5), "-0.005");
    }

    #[test]
    fn time_rounds_to_ms() {
        assert_eq!(time_ms(Duration::from_micros(812_499)), 812);
        assert_eq!(time_ms(Duration::from_micros(812_500)), 813);
        assert_eq!(time_ms(Duration::ZERO), 0);
    }

    #[test]
    fn table_ms_like_core() {
        assert_eq!(table_ms(0.0214), "0.021");
        assert_eq!(table_ms(1.5), "1.50");
        assert_eq!(table_ms(123.45), "123.5");
    }
}
