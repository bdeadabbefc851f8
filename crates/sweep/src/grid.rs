//! The sweep grid: the `[sweep]` table's lists of values, validated, expanded into the
//! cartesian product of points in a stable order.
//!
//! Order: the first key is the outermost loop, the last key the innermost, each key's
//! values in the order they were written. For `delay = ["0ms", "1ms"]`, `workers = [1, 16]`
//! the points are `(0ms, 1)`, `(0ms, 16)`, `(1ms, 1)`, `(1ms, 16)`: the same order as
//! nested `for` loops written in the table's order. The caller must hand the keys over in
//! the order of the scenario file (note that `toml::Table` sorts its keys unless the `toml`
//! crate's `preserve_order` feature is on; `toml_edit` keeps them).

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The most points one sweep may have. Each point is a whole load run (plus an impairment
/// change and an RTT probe), so a grid past this size is almost surely a typo.
pub const MAX_POINTS: usize = 10_000;

/// One value of a swept key, as written in the scenario (TOML integer, float, boolean or
/// string; strings are e.g. durations such as `"0.5ms"`, parsed by the caller).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SweepValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl SweepValue {
    /// The kind's name, as used in error messages: `integer`, `float`, `boolean`, `string`.
    pub fn type_name(&self) -> &'static str {
        match self {
            SweepValue::Int(_) => "integer",
            SweepValue::Float(_) => "float",
            SweepValue::Bool(_) => "boolean",
            SweepValue::Str(_) => "string",
        }
    }

    /// The value as a number: integers and floats as they are, anything else `None`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            SweepValue::Int(v) => Some(*v as f64),
            SweepValue::Float(v) => Some(*v),
            SweepValue::Bool(_) | SweepValue::Str(_) => None,
        }
    }

    /// The value as milliseconds: a number as it is, a string through
    /// [`parse_duration_ms`] (`"0.5ms"` -> 0.5). Used to place a point on an axis.
    pub fn as_ms(&self) -> Option<f64> {
        match self {
            SweepValue::Str(s) => parse_duration_ms(s),
            other => other.as_f64(),
        }
    }

    /// Which values may share one list: integers and floats are both numbers.
    fn family(&self) -> &'static str {
        match self {
            SweepValue::Int(_) | SweepValue::Float(_) => "number",
            SweepValue::Bool(_) => "boolean",
            SweepValue::Str(_) => "string",
        }
    }
}

impl fmt::Display for SweepValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepValue::Int(v) => write!(f, "{v}"),
            SweepValue::Float(v) => write!(f, "{v}"),
            SweepValue::Bool(v) => write!(f, "{v}"),
            SweepValue::Str(v) => f.write_str(v),
        }
    }
}

impl From<i64> for SweepValue {
    fn from(v: i64) -> Self {
        SweepValue::Int(v)
    }
}

impl From<f64> for SweepValue {
    fn from(v: f64) -> Self {
        SweepValue::Float(v)
    }
}

impl From<bool> for SweepValue {
    fn from(v: bool) -> Self {
        SweepValue::Bool(v)
    }
}

impl From<&str> for SweepValue {
    fn from(v: &str) -> Self {
        SweepValue::Str(v.to_string())
    }
}

impl From<String> for SweepValue {
    fn from(v: String) -> Self {
        SweepValue::Str(v)
    }
}

/// A duration string as milliseconds: a decimal number followed by `ns`, `us`, `µs`, `ms`
/// or `s` (`"0ms"`, `"0.5ms"`, `"250us"`, `"1.5s"`); a bare `"0"` is zero. Anything else
/// (negative, several parts, other units) is `None`. Only used to place points on a plot
/// axis; the CLI parses the scenario's durations itself.
pub fn parse_duration_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    if s == "0" {
        return Some(0.0);
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    if number.is_empty() {
        return None;
    }
    let n: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "ns" => 1e-6,
        "us" | "µs" => 1e-3,
        "ms" => 1.0,
        "s" => 1e3,
        _ => return None,
    };
    let ms = n * scale;
    ms.is_finite().then_some(ms)
}

/// Why a `[sweep]` table cannot be expanded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GridError {
    #[error(
        "the sweep has no keys: give at least one key with a list of values, e.g. workers = [1, 16]"
    )]
    NoKeys,
    #[error("sweep key #{position} has an empty name")]
    EmptyKeyName { position: usize },
    #[error("sweep key `{key}` has an empty list: give at least one value")]
    EmptyList { key: String },
    #[error("sweep key `{key}` is given twice: each key may appear once")]
    DuplicateKey { key: String },
    #[error(
        "sweep key `{key}` mixes value types: value #{index} is a {found} but the first is a {expected}; \
         all values of one key must be numbers, or all strings, or all booleans"
    )]
    MixedTypes {
        key: String,
        index: usize,
        expected: &'static str,
        found: &'static str,
    },
    #[error("sweep key `{key}` has a non-finite value (#{index}): only finite numbers are allowed")]
    NonFinite { key: String, index: usize },
    #[error("sweep key `{key}` lists the value {value} twice: each value may appear once")]
    DuplicateValue { key: String, value: String },
    #[error(
        "the sweep has {points} points (the product of the list lengths: {lengths}); at most {max} are allowed"
    )]
    TooManyPoints {
        points: u128,
        lengths: String,
        max: usize,
    },
}

/// One swept key and its values, in the order written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub key: String,
    pub values: Vec<SweepValue>,
}

impl Axis {
    /// Whether this key takes more than one value (a key with one value is a constant).
    pub fn varies(&self) -> bool {
        self.values.len() > 1
    }
}

/// A validated sweep grid. Build it with [`Grid::new`], expand it with [`Grid::points`].
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    axes: Vec<Axis>,
}

impl Grid {
    /// Validates the keys and their lists, in the scenario's order.
    ///
    /// Rules: at least one key; no empty key names; no empty lists; no key twice; within
    /// a list all numbers (integers and floats may mix: then all become floats, so that
    /// `[1, 1.5]` is `[1.0, 1.5]`), or all strings, or all booleans; numbers finite; no
    /// value twice in one list; at most [`MAX_POINTS`] points in all.
    pub fn new<K, V>(keys: impl IntoIterator<Item = (K, V)>) -> Result<Grid, GridError>
    where
        K: Into<String>,
        V: IntoIterator<Item = SweepValue>,
    {
        let mut axes: Vec<Axis> = Vec::new();
        for (position, (key, values)) in keys.into_iter().enumerate() {
            let key: String = key.into();
            if key.trim().is_empty() {
                return Err(GridError::EmptyKeyName {
                    position: position + 1,
                });
            }
            if axes.iter().any(|a| a.key == key) {
                return Err(GridError::DuplicateKey { key });
            }
            let values = validate_values(&key, values.into_iter().collect())?;
            axes.push(Axis { key, values });
        }
        if axes.is_empty() {
            return Err(GridError::NoKeys);
        }
        let points = axes
            .iter()
            .fold(1u128, |acc, a| acc.saturating_mul(a.values.len() as u128));
        if points > MAX_POINTS as u128 {
            let lengths = axes
                .iter()
                .map(|a| format!("{} {}", a.key, a.values.len()))
                .collect::<Vec<_>>()
                .join(" x ");
            return Err(GridError::TooManyPoints {
                points,
                lengths,
                max: MAX_POINTS,
            });
        }
        Ok(Grid { axes })
    }

    /// The keys and their (validated) values, in the scenario's order.
    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// The number of points: the product of the list lengths (at most [`MAX_POINTS`]).
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    /// Always false: a valid grid has at least one point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All points, first key outermost, last key innermost (see the module docs).
    pub fn points(&self) -> Vec<Point> {
        let n = self.len();
        let mut out = Vec::with_capacity(n);
        for index in 0..n {
            // Mixed-radix digits of `index`, the last key being the fastest digit.
            let mut rest = index;
            let mut values = vec![None; self.axes.len()];
            for (slot, axis) in self.axes.iter().enumerate().rev() {
                let len = axis.values.len();
                values[slot] = Some(axis.values[rest % len].clone());
                rest /= len;
            }
            let values = self
                .axes
                .iter()
                .zip(values)
                .filter_map(|(axis, v)| v.map(|v| (axis.key.clone(), v)))
                .collect();
            out.push(Point { values });
        }
        out
    }
}

fn validate_values(key: &str, values: Vec<SweepValue>) -> Result<Vec<SweepValue>, GridError> {
    let Some(first) = values.first() else {
        return Err(GridError::EmptyList {
            key: key.to_string(),
        });
    };
    let expected = first.family();
    for (i, v) in values.iter().enumerate() {
        if v.family() != expected {
            return Err(GridError::MixedTypes {
                key: key.to_string(),
                index: i + 1,
                expected: first.type_name(),
                found: v.type_name(),
            });
        }
        if let SweepValue::Float(f) = v
            && !f.is_finite()
        {
            return Err(GridError::NonFinite {
                key: key.to_string(),
                index: i + 1,
            });
        }
    }
    let any_float = values.iter().any(|v| matches!(v, SweepValue::Float(_)));
    let values: Vec<SweepValue> = if any_float {
        values
            .into_iter()
            .map(|v| match v {
                SweepValue::Int(i) => SweepValue::Float(i as f64),
                other => other,
            })
            .collect()
    } else {
        values
    };
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(GridError::DuplicateValue {
                key: key.to_string(),
                value: shown_value(key, &v.to_string()),
            });
        }
    }
    Ok(values)
}

/// One point of the grid: every key with one of its values, in the grid's key order.
/// Serialized as a JSON object whose members keep that order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Point {
    values: Vec<(String, SweepValue)>,
}

impl Point {
    /// A point from (key, value) pairs, in order (for tests and for reading results back).
    pub fn new(values: Vec<(String, SweepValue)>) -> Point {
        Point { values }
    }

    /// The value of `key`, if the point has it.
    pub fn get(&self, key: &str) -> Option<&SweepValue> {
        self.values.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The (key, value) pairs in the grid's key order.
    pub fn values(&self) -> &[(String, SweepValue)] {
        &self.values
    }

    /// `delay=1ms workers=16`: for progress lines and logs. A secret key's value is shown
    /// as `***`, a URL's secrets hidden.
    pub fn label(&self) -> String {
        self.values
            .iter()
            .map(|(k, v)| format!("{k}={}", shown_value(k, &v.to_string())))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `value` of sweep key `key` as it may be shown: `***` for a secret key, a URL with its
/// secrets hidden otherwise.
pub fn shown_value(key: &str, value: &str) -> String {
    if tsload_redact::is_secret_key(key) {
        tsload_redact::MASK.to_string()
    } else {
        tsload_redact::url(value)
    }
}

impl Serialize for Point {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.values.len()))?;
        for (k, v) in &self.values {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Point {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Point, D::Error> {
        struct PointVisitor;
        impl<'de> Visitor<'de> for PointVisitor {
            type Value = Point;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of sweep key -> value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Point, A::Error> {
                let mut values = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, SweepValue>()? {
                    if values
                        .iter()
                        .any(|(seen, _): &(String, SweepValue)| *seen == k)
                    {
                        return Err(de::Error::custom(format!("key `{k}` appears twice")));
                    }
                    values.push((k, v));
                }
                Ok(Point { values })
            }
        }
        deserializer.deserialize_map(PointVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Vec<SweepValue> {
        v.iter().map(|&i| SweepValue::Int(i)).collect()
    }

    fn strs(v: &[&str]) -> Vec<SweepValue> {
        v.iter().map(|&s| SweepValue::from(s)).collect()
    }

    #[test]
    fn first_key_is_outermost() {
        let grid = Grid::new(vec![
            ("delay", strs(&["0ms", "1ms"])),
            ("workers", ints(&[1, 16, 50])),
        ])
        .unwrap();
        let labels: Vec<String> = grid.points().iter().map(Point::label).collect();
        assert_eq!(
            labels,
            [
                "delay=0ms workers=1",
                "delay=0ms workers=16",
                "delay=0ms workers=50",
                "delay=1ms workers=1",
                "delay=1ms workers=16",
                "delay=1ms workers=50",
            ]
        );
        assert_eq!(grid.len(), 6);
    }

    #[test]
    fn three_keys_order_and_count() {
        let grid = Grid::new(vec![
            ("a", ints(&[1, 2])),
            ("b", ints(&[10, 20, 30])),
            ("c", strs(&["x", "y"])),
        ])
        .unwrap();
        let pts = grid.points();
        assert_eq!(pts.len(), 12);
        assert_eq!(pts[0].label(), "a=1 b=10 c=x");
        assert_eq!(pts[1].label(), "a=1 b=10 c=y");
        assert_eq!(pts[2].label(), "a=1 b=20 c=x");
        assert_eq!(pts[11].label(), "a=2 b=30 c=y");
        assert_eq!(pts[7].get("b"), Some(&SweepValue::Int(10)));
        // Every combination exactly once.
        for i in 0..pts.len() {
            for j in 0..i {
                assert_ne!(pts[i], pts[j]);
            }
        }
    }

    #[test]
    fn errors() {
        assert_eq!(
            Grid::new(Vec::<(String, Vec<SweepValue>)>::new()),
            Err(GridError::NoKeys)
        );
        assert_eq!(
            Grid::new(vec![("workers", ints(&[]))]),
            Err(GridError::EmptyList {
                key: "workers".into()
            })
        );
        assert_eq!(
            Grid::new(vec![("workers", ints(&[1])), ("workers", ints(&[2]))]),
            Err(GridError::DuplicateKey {
                key: "workers".into()
            })
        );
        let mixed = Grid::new(vec![(
            "batch",
            vec![SweepValue::Int(1), SweepValue::from("50")],
        )]);
        assert_eq!(
            mixed,
            Err(GridError::MixedTypes {
                key: "batch".into(),
                index: 2,
                expected: "integer",
                found: "string"
            })
        );
        let msg = mixed.unwrap_err().to_string();
        assert!(msg.contains("`batch`") && msg.contains("string"), "{msg}");
        assert_eq!(
            Grid::new(vec![("w", ints(&[1, 2, 1]))]),
            Err(GridError::DuplicateValue {
                key: "w".into(),
                value: "1".into()
            })
        );
        assert_eq!(
            Grid::new(vec![("x", vec![SweepValue::Float(f64::NAN)])]),
            Err(GridError::NonFinite {
                key: "x".into(),
                index: 1
            })
        );
        assert_eq!(
            Grid::new(vec![(" ", ints(&[1]))]),
            Err(GridError::EmptyKeyName { position: 1 })
        );
    }

    #[test]
    fn too_many_points() {
        let hundred: Vec<i64> = (0..100).collect();
        let ok = Grid::new(vec![("a", ints(&hundred)), ("b", ints(&hundred))]).unwrap();
        assert_eq!(ok.len(), MAX_POINTS);
        let err = Grid::new(vec![
            ("a", ints(&hundred)),
            ("b", ints(&hundred)),
            ("c", ints(&[1, 2])),
        ])
        .unwrap_err();
        assert_eq!(
            err,
            GridError::TooManyPoints {
                points: 20_000,
                lengths: "a 100 x b 100 x c 2".into(),
                max: MAX_POINTS
            }
        );
        assert!(err.to_string().contains("at most 10000"));
    }

    #[test]
    fn ints_and_floats_mix_as_floats() {
        let grid = Grid::new(vec![(
            "loss",
            vec![SweepValue::Int(1), SweepValue::Float(1.5)],
        )])
        .unwrap();
        assert_eq!(
            grid.axes()[0].values,
            vec![SweepValue::Float(1.0), SweepValue::Float(1.5)]
        );
        // 1 and 1.0 are the same value once promoted.
        assert!(matches!(
            Grid::new(vec![(
                "loss",
                vec![SweepValue::Int(1), SweepValue::Float(1.0)]
            )]),
            Err(GridError::DuplicateValue { .. })
        ));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("0ms"), Some(0.0));
        assert_eq!(parse_duration_ms("0.5ms"), Some(0.5));
        assert_eq!(parse_duration_ms("250us"), Some(0.25));
        assert_eq!(parse_duration_ms("1.5s"), Some(1500.0));
        assert_eq!(parse_duration_ms("0"), Some(0.0));
        assert_eq!(parse_duration_ms("5"), None);
        assert_eq!(parse_duration_ms("-1ms"), None);
        assert_eq!(parse_duration_ms("1m"), None);
        assert_eq!(parse_duration_ms("ms"), None);
    }

    #[test]
    fn point_json_keeps_key_order() {
        let p = Point::new(vec![
            ("workers".into(), SweepValue::Int(16)),
            ("delay".into(), SweepValue::from("1ms")),
            ("ratio".into(), SweepValue::Float(0.5)),
        ]);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, r#"{"workers":16,"delay":"1ms","ratio":0.5}"#);
        let back: Point = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
    }
}
