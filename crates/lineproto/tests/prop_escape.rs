//! Property tests of the escaping and float formatting: any text escapes to bytes with no
//! raw newline and no unescaped special character (so a name or value never ends early),
//! unescaping by line protocol's rules gives the text back (a newline as `\n`), and any
//! finite float is written without an exponent and parses back to the same bits.
//!
//! The end-to-end round trip (encoder, then file replay's parser) is in
//! `crates/workload/tests/prop_lineproto.rs`. Budgets are fixed (`cases`); proptest prints
//! the shrunk (minimal) failing input.

use proptest::prelude::*;
use proptest::test_runner::Config;
use tsload_lineproto::{
    escape_field_key, escape_measurement, escape_tag, write_float, write_string_field,
};

fn config(cases: u32) -> Config {
    Config {
        cases,
        max_shrink_iters: 2048,
        ..Config::default()
    }
}

/// Text made mostly of the characters line protocol cares about.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::collection::vec(
            proptest::sample::select(vec![
                'a', ' ', ',', '=', '"', '\\', '\n', '\t', '\r', '#', 'n', 'é', '𝄞',
            ]),
            0..16,
        )
        .prop_map(|c| c.into_iter().collect()),
        1 => any::<String>(),
    ]
}

/// Splits escaped bytes at the first byte of `stops` that no backslash escapes, and
/// unescapes the part before it by line protocol's rules (`\x` is `x` for a special `x`;
/// any other backslash stays). Returns (unescaped, rest).
fn read_until(escaped: &[u8], specials: &[u8], stops: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut out = Vec::new();
    let mut i = 0;
    while i < escaped.len() {
        let b = escaped[i];
        if b == b'\\'
            && let Some(&next) = escaped.get(i + 1)
        {
            if specials.contains(&next) {
                out.push(next);
            } else {
                out.extend_from_slice(&[b, next]);
            }
            i += 2;
            continue;
        }
        if stops.contains(&b) {
            return (out, escaped[i..].to_vec());
        }
        out.push(b);
        i += 1;
    }
    (out, Vec::new())
}

fn lossy(s: &str) -> Vec<u8> {
    s.replace('\n', "\\n").into_bytes()
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn measurements_escape_and_read_back(s in text()) {
        let mut out = Vec::new();
        escape_measurement(&s, &mut out);
        prop_assert!(!out.contains(&b'\n'));
        // A measurement ends at the first unescaped comma or space.
        out.extend_from_slice(b",t=v");
        let (name, rest) = read_until(&out, b", \\", b", ");
        prop_assert_eq!(name, lossy(&s));
        prop_assert_eq!(rest, b",t=v".to_vec());
    }

    #[test]
    fn tags_and_field_keys_escape_and_read_back(s in text()) {
        for escape in [escape_tag, escape_field_key] {
            let mut out = Vec::new();
            escape(&s, &mut out);
            prop_assert!(!out.contains(&b'\n'));
            // A tag key ends at `=`; a value at a comma or space.
            out.extend_from_slice(b"=x");
            let (name, rest) = read_until(&out, b",= \\", b",= ");
            prop_assert_eq!(name, lossy(&s));
            prop_assert_eq!(rest, b"=x".to_vec());
        }
    }

    #[test]
    fn string_fields_quote_and_read_back(s in text()) {
        let mut out = Vec::new();
        write_string_field(&s, &mut out);
        prop_assert!(!out.contains(&b'\n'));
        prop_assert_eq!(out.first(), Some(&b'"'));
        // The value ends at the first unescaped quote after the opening one, which is the
        // last byte.
        let (value, rest) = read_until(&out[1..], b"\"\\", b"\"");
        prop_assert_eq!(value, lossy(&s));
        prop_assert_eq!(rest, b"\"".to_vec());
    }

    #[test]
    fn finite_floats_round_trip_without_exponent(bits in any::<u64>(), v in any::<f64>()) {
        for v in [f64::from_bits(bits), v] {
            let mut out = Vec::new();
            let written = write_float(v, &mut out);
            prop_assert_eq!(written, v.is_finite());
            if !written {
                prop_assert!(out.is_empty());
                continue;
            }
            let text = String::from_utf8(out).unwrap();
            prop_assert!(
                text.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'-'),
                "{}",
                text
            );
            prop_assert!(!text.ends_with(".0") && !text.ends_with('.'), "{}", text);
            let back: f64 = text.parse().unwrap();
            prop_assert_eq!(back.to_bits(), v.to_bits(), "{}", text);
        }
    }
}
