//! Tests of the line-protocol parser: keys, fields, values, escapes, errors and the key hash.

use super::*;

fn fields(line: &str) -> Result<(Vec<(String, Value<'_>)>, i64), String> {
    let b = line.as_bytes();
    let end = key_end(b)?;
    let mut f = Fields::new(b, end);
    let mut out = Vec::new();
    while let Some(x) = f.next(b"")? {
        out.push((
            String::from_utf8(unescaped(x.key, TAG_SPECIALS).into_owned()).unwrap(),
            x.value,
        ));
    }
    Ok((out, f.timestamp()?))
}

#[test]
fn find2_matches_a_plain_search() {
    let hay: Vec<u8> = (0..300u32)
        .map(|i| (crate::rng::mix64(i as u64) % 7) as u8 * 37 + 1)
        .collect();
    for from in [0, 1, 5, 8, 13, 299, 300, 302] {
        for (a, b) in [(1u8, 38u8), (75, 112), (149, 186), (223, 0), (9, 10)] {
            let want = (from..hay.len())
                .find(|&i| hay[i] == a || hay[i] == b)
                .unwrap_or(hay.len());
            assert_eq!(find2(&hay, from, a, b), want, "from {from}, {a}/{b}");
        }
    }
    // Bytes with the high bit set (UTF-8) are no false matches.
    let s = "é ü,x".as_bytes();
    assert_eq!(find2(s, 0, b' ', b','), 2);
}

#[test]
fn find4_matches_a_plain_search() {
    let hay: Vec<u8> = (0..300u32)
        .map(|i| (crate::rng::mix64(i as u64) % 11) as u8 * 23 + 1)
        .collect();
    for from in [0, 1, 5, 8, 13, 299, 300, 302] {
        for set in [
            [1u8, 24, 47, 70],
            [93, 116, 139, 162],
            [185, 208, 231, 0],
            [9; 4],
        ] {
            let want = (from..hay.len())
                .find(|&i| set.contains(&hay[i]))
                .unwrap_or(hay.len());
            assert_eq!(find4(&hay, from, set), want, "from {from}, {set:?}");
        }
    }
    assert_eq!(find4("é ü,x=".as_bytes(), 0, FIELD_KEY_STOPS), 2);
    assert_eq!(find4(b"usage_guest_nice=1", 0, FIELD_KEY_STOPS), 16);
}

#[test]
fn a_hint_reads_the_same_fields_and_is_taken_only_when_it_is_the_key() {
    let lines = [
        "m a=1i,ab=2,b=t 5",
        "m ab=1,a=2 7",
        r"m a\=b=1i,a=2 3",
        r#"m s="a=b, c",a=1u 9"#,
        "m usage_guest=1i,usage_guest_nice=2i 11",
    ];
    let hints = [
        "a",
        "ab",
        "b",
        "s",
        "abc",
        "usage_guest",
        "usage_guest_nice",
        "x",
    ];
    for line in lines {
        let want = fields(line).unwrap();
        let b = line.as_bytes();
        let end = key_end(b).unwrap();
        for hint in hints {
            let mut f = Fields::new(b, end);
            let mut got = Vec::new();
            while let Some(x) = f.next(hint.as_bytes()).unwrap() {
                assert_eq!(x.hinted, x.key == hint.as_bytes(), "{line}, hint {hint}");
                got.push((
                    String::from_utf8(unescaped(x.key, TAG_SPECIALS).into_owned()).unwrap(),
                    x.value,
                ));
            }
            assert_eq!((got, f.timestamp().unwrap()), want, "{line}, hint {hint}");
        }
    }
    // A hint does not hide an error after it.
    let mut f = Fields::new(b"m a=,b=1 1", 1);
    assert!(f.next(b"a").unwrap_err().contains("field `a` has no value"));
}

#[test]
fn key_end_skips_escaped_spaces() {
    assert_eq!(key_end(b"a\\ b,t=x\\ y f=1i 1").unwrap(), 11);
    assert_eq!(key_end(b"cpu f=1 1").unwrap(), 3);
    assert!(key_end(b"cpu,host=a").unwrap_err().contains("no fields"));
    assert!(key_end(b" cpu f=1 1").is_err());
    assert!(key_end(b"cpu\\").is_err());
}

#[test]
fn series_keys_split_with_escapes() {
    let mut tags = Vec::new();
    let m = split_series_key(b"my\\ m\\,x,k\\ 1\\=a=v\\,1\\ 2,k2=C:\\dir\\\\", |k, v| {
        tags.push((
            unescaped(k, TAG_SPECIALS).into_owned(),
            unescaped(v, TAG_SPECIALS).into_owned(),
        ));
        Ok(())
    })
    .unwrap();
    assert_eq!(&*unescaped(m, MEASUREMENT_SPECIALS), b"my m,x");
    assert_eq!(
        tags,
        vec![
            (b"k 1=a".to_vec(), b"v,1 2".to_vec()),
            (b"k2".to_vec(), b"C:\\dir\\".to_vec()),
        ]
    );
    let ok = |_: &[u8], _: &[u8]| Ok(());
    assert!(split_series_key(b",a=b", ok).is_err());
    assert!(
        split_series_key(b"m,a", ok)
            .unwrap_err()
            .contains("no `=value`")
    );
    assert!(
        split_series_key(b"m,a=", ok)
            .unwrap_err()
            .contains("no value")
    );
    assert!(
        split_series_key(b"m,=b", ok)
            .unwrap_err()
            .contains("empty key")
    );
    assert!(split_series_key(b"m,a=b,,c=d", ok).is_err());
    assert!(
        split_series_key(b"m,a=b=c", ok)
            .unwrap_err()
            .contains("second `=`")
    );
    assert_eq!(split_series_key(b"m,a=b\\=c", ok).unwrap(), b"m");
}

#[test]
fn values_of_every_type() {
    let (f, ts) = fields(
        "m a=1i,b=-2i,c=3u,d=1.5,e=2,f=-1e3,g=t,h=FALSE,i=\"x \\\"y\\\", z\" 1700000000000000000",
    )
    .unwrap();
    assert_eq!(ts, 1_700_000_000_000_000_000);
    let values: Vec<Value> = f.iter().map(|(_, v)| *v).collect();
    assert_eq!(
        &values[..8],
        &[
            Value::Int(1),
            Value::Int(-2),
            Value::UInt(3),
            Value::Float(1.5),
            Value::Float(2.0),
            Value::Float(-1000.0),
            Value::Bool(true),
            Value::Bool(false),
        ]
    );
    let Value::Str { raw, escaped } = values[8] else {
        panic!("{:?}", values[8]);
    };
    assert!(escaped);
    let mut out = Vec::new();
    unescape_string(raw, escaped, &mut out);
    assert_eq!(out, b"x \"y\", z");
    assert_eq!(unescaped_string_len(raw, escaped), out.len());
    let names: Vec<&str> = f.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e", "f", "g", "h", "i"]);
}

#[test]
fn strings_keep_unknown_escapes_and_take_any_bytes() {
    let (f, _) = fields(r#"m s="a\b\\c\"d,e f=g",k\ 2\,x\=y=1i 5"#).unwrap();
    let Value::Str { raw, escaped } = f[0].1 else {
        panic!()
    };
    let mut out = Vec::new();
    unescape_string(raw, escaped, &mut out);
    assert_eq!(out, br#"a\b\c"d,e f=g"#);
    assert_eq!(unescaped_string_len(raw, escaped), out.len());
    assert_eq!(f[1].0, "k 2,x=y");
    assert_eq!(f[1].1, Value::Int(1));
}

#[test]
fn extremes_and_spacing() {
    let (f, ts) = fields("m a=-9223372036854775808i,b=9223372036854775807u   -5  ").unwrap();
    assert_eq!(f[0].1, Value::Int(i64::MIN));
    assert_eq!(f[1].1, Value::UInt(i64::MAX));
    assert_eq!(ts, -5);
}

#[test]
fn fields_are_counted_without_parsing_their_values() {
    fn count(line: &str) -> Result<(u64, &str), String> {
        let end = key_end(line.as_bytes()).unwrap();
        let plain = count_fields(line.as_bytes(), end, |_| &[]).map(|(n, at)| (n, &line[at..]));
        // Hints of every key of the line, of wrong keys and of prefixes count the same.
        for hints in [&["a", "b", "c", "d", "s", "x"][..], &["b", "a", "ab"]] {
            let hinted = count_fields(line.as_bytes(), end, |n| {
                hints.get(n).map_or(&b""[..], |h| h.as_bytes())
            });
            assert_eq!(
                hinted.map(|(n, at)| (n, &line[at..])),
                plain,
                "{line}, {hints:?}"
            );
        }
        plain
    }
    assert_eq!(count("m a=1i 10"), Ok((1, " 10")));
    assert_eq!(count("m,t=x a=1i,b=2.5,c=t 10"), Ok((3, " 10")));
    assert_eq!(count(r#"m s="a, b=c \" d",x=1 10"#), Ok((2, " 10")));
    assert_eq!(count(r"m a\ b\,c=1,d=2"), Ok((2, "")));
    assert_eq!(count("m  a=1 7"), Ok((1, " 7")));
    for bad in [
        "m a=1,",
        "m a=",
        "m =1",
        "m a",
        r#"m s="x 1"#,
        r#"m s="x"y 1"#,
        "m a=1,,b=2",
        "m a=1,=2",
        "m ,a=1",
    ] {
        assert!(count(bad).is_err(), "{bad}");
    }
    // The timestamp after them, as `Fields` reads it.
    assert_eq!(timestamp_at(b"m a=1 10", 5), Ok(10));
    assert!(timestamp_at(b"m a=1 10 x", 5).is_err());
    assert!(timestamp_at(b"m a=1", 5).is_err());
}

#[test]
fn malformed_lines_are_errors() {
    let err = |l: &str| fields(l).unwrap_err();
    assert!(err("cpu,host=a usage=").contains("field `usage` has no value"));
    assert!(err("cpu usage 1").contains("field `usage` has no `=value`"));
    assert!(err("cpu usage=1i").contains("no timestamp"));
    assert!(err("cpu usage=1i ").contains("no timestamp"));
    assert!(err("cpu s=\"abc 1").contains("no closing"));
    assert!(err("cpu s=\"abc\\\" 1").contains("no closing"));
    assert!(err("cpu s=\"abc\"x 1").contains("unexpected `x`"));
    assert!(err("cpu a=1i, 1").contains("a comma after field `a`"));
    assert!(err("cpu a=1i,,b=2i 1").contains("a comma after field `a`"));
    assert!(err("cpu =1i 1").contains("empty name"));
    assert!(err("cpu a=1i 1 2").contains("after the timestamp"));
    assert!(err("cpu a=1i 12x").contains("bad timestamp `12x`"));
    assert!(err("cpu a=1i 99999999999999999999").contains("bad timestamp"));
    assert!(err("cpu a=abc 1").contains("`abc` is not a value"));
    assert!(err("cpu a=inf 1").contains("not a value"));
    assert!(err("cpu a=NaN 1").contains("not a value"));
    assert!(err("cpu a=1.5i 1").contains("not an integer"));
    assert!(err("cpu a=9223372036854775808i 1").contains("does not fit"));
    assert!(err("cpu a=9223372036854775808u 1").contains("larger than the largest bigint"));
    assert!(err("cpu a=-1u 1").contains("not an unsigned integer"));
    assert!(err("cpu a=1e 1").contains("not a value"));
}

#[test]
fn hash_depends_on_every_byte_and_the_length() {
    let base = b"cpu,hostname=host_1,region=eu-west-1".to_vec();
    let h = hash_key(&base);
    for i in 0..base.len() {
        let mut other = base.clone();
        other[i] ^= 1;
        assert_ne!(hash_key(&other), h, "byte {i}");
    }
    assert_ne!(hash_key(b"ab"), hash_key(b"ab\0"));
}
