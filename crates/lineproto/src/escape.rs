//! Escaping of names and values, and formatting of field values, for line protocol. Every
//! function appends to `out`; none allocates beyond growing `out`.
//!
//! A backslash precedes each special character. A newline, which would end the line,
//! becomes a backslash followed by `n` wherever it appears.

use std::io::Write as _;

/// Appends `s` to `out` with a backslash before every byte for which `special` holds, and
/// newlines written as `\n`. Every special byte is ASCII, so UTF-8 stays intact.
#[inline]
fn escape_into(s: &[u8], out: &mut Vec<u8>, special: impl Fn(u8) -> bool) {
    let mut rest = s;
    while let Some(i) = rest.iter().position(|&b| special(b)) {
        out.extend_from_slice(&rest[..i]);
        let b = rest[i];
        out.push(b'\\');
        out.push(if b == b'\n' { b'n' } else { b });
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
}

/// Appends a measurement name, escaping `,`, space, `\` and newline.
pub fn escape_measurement(s: &str, out: &mut Vec<u8>) {
    escape_into(s.as_bytes(), out, |b| {
        matches!(b, b',' | b' ' | b'\\' | b'\n')
    });
}

/// Appends a tag key or tag value, escaping `,`, `=`, space, `\` and newline.
pub fn escape_tag(s: &str, out: &mut Vec<u8>) {
    escape_into(s.as_bytes(), out, |b| {
        matches!(b, b',' | b'=' | b' ' | b'\\' | b'\n')
    });
}

/// Appends a field key, escaping `,`, `=`, space, `\` and newline.
pub fn escape_field_key(s: &str, out: &mut Vec<u8>) {
    // Same special set as tags.
    escape_tag(s, out);
}

/// Appends a string field value: quoted, with `"`, `\` and newline escaped.
pub fn write_string_field(s: &str, out: &mut Vec<u8>) {
    write_string_bytes(s.as_bytes(), out);
}

/// [`write_string_field`] over the bytes of a valid UTF-8 string.
#[inline]
pub(crate) fn write_string_bytes(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    escape_into(s, out, |b| matches!(b, b'"' | b'\\' | b'\n'));
    out.push(b'"');
}

/// Appends a float field value the way Go's `strconv.FormatFloat(v, 'f', -1, 64)` writes
/// it: shortest digits that round-trip, never an exponent, no trailing `.0` (`2000`, `0.1`,
/// `-3.25`). Returns `false` and appends nothing when `v` is NaN or infinite, which line
/// protocol cannot carry.
#[inline]
pub fn write_float(v: f64, out: &mut Vec<u8>) -> bool {
    if !v.is_finite() {
        return false;
    }
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(v).as_bytes();
    if s.contains(&b'e') {
        // ryu switched to scientific notation (very large or very small magnitude);
        // `Display` writes the same shortest digits in positional notation. Writing to a
        // `Vec` cannot fail.
        let _ = write!(out, "{v}");
    } else {
        // ryu always writes a fraction; Go leaves `.0` out.
        out.extend_from_slice(s.strip_suffix(b".0").unwrap_or(s));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(f: impl Fn(&mut Vec<u8>)) -> String {
        let mut out = b"<".to_vec();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn measurement_escapes_comma_space_backslash() {
        assert_eq!(with(|o| escape_measurement("cpu", o)), "<cpu");
        assert_eq!(
            with(|o| escape_measurement(r"a,b c=d\e", o)),
            r"<a\,b\ c=d\\e"
        );
        assert_eq!(with(|o| escape_measurement("a\nb", o)), r"<a\nb");
        assert_eq!(with(|o| escape_measurement("", o)), "<");
    }

    #[test]
    fn tags_and_field_keys_escape_comma_equals_space_backslash() {
        for f in [escape_tag, escape_field_key] {
            assert_eq!(with(|o| f("host_0", o)), "<host_0");
            assert_eq!(with(|o| f(r#"a,b c=d\e"f"#, o)), r#"<a\,b\ c\=d\\e"f"#);
            assert_eq!(with(|o| f(",,", o)), r"<\,\,");
            assert_eq!(with(|o| f("é =ü", o)), r"<é\ \=ü");
            assert_eq!(with(|o| f("x\ny", o)), r"<x\ny");
        }
    }

    #[test]
    fn string_fields_are_quoted_and_escaped() {
        assert_eq!(with(|o| write_string_field("", o)), r#"<"""#);
        assert_eq!(
            with(|o| write_string_field(r#"a "b" c\d, e=f"#, o)),
            r#"<"a \"b\" c\\d, e=f""#
        );
        let s = with(|o| write_string_field("line1\nline2", o));
        assert_eq!(s, r#"<"line1\nline2""#);
        assert!(!s.contains('\n'));
    }

    fn float(v: f64) -> String {
        let mut out = Vec::new();
        assert!(write_float(v, &mut out));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_match_go_format_float_f_minus_one() {
        assert_eq!(float(2000.0), "2000");
        assert_eq!(float(15.5), "15.5");
        assert_eq!(float(0.0), "0");
        assert_eq!(float(-0.0), "-0");
        assert_eq!(float(-3.25), "-3.25");
        assert_eq!(float(0.1), "0.1");
        assert_eq!(float(72.45258), "72.45258");
        assert_eq!(float(15.607654908671975), "15.607654908671975");
        assert_eq!(float(84.39234509132802), "84.39234509132802");
        assert_eq!(float(1e20), "100000000000000000000");
        assert_eq!(float(1e16), "10000000000000000");
        assert_eq!(float(1.5e300).len(), 301);
        assert_eq!(float(1e-7), "0.0000001");
        assert_eq!(float(-1.25e-10), "-0.000000000125");
        assert_eq!(float(f64::MIN_POSITIVE).len(), "0.".len() + 307 + 17);
        assert_eq!(float(9007199254740993.0), "9007199254740992");
    }

    #[test]
    fn floats_round_trip() {
        let mut x = 0.3f64;
        for _ in 0..2000 {
            x = x * 1.37 + 1e-3;
            for v in [x, -x, 1.0 / x] {
                let s = float(v);
                assert!(!s.contains('e') && !s.ends_with(".0"), "{s}");
                assert_eq!(s.parse::<f64>().unwrap(), v, "{s}");
            }
        }
    }

    #[test]
    fn non_finite_floats_write_nothing() {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut out = b"x".to_vec();
            assert!(!write_float(v, &mut out));
            assert_eq!(out, b"x");
        }
    }
}
