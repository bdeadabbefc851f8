//! The column and tag specs of a custom super table, and the value generators compiled
//! from them: checked once, then each makes one column's values (or a tag's).

use std::borrow::Cow;

use rand_core::RngCore;
use tsload_core::ColumnValues;
use tsload_core::schema::{DataType, TagValue};

use crate::rng::{DeviceRng, below, unit};
use crate::shape::{DEFAULT_PERIOD_NS, Shape, gaussian};
use crate::{ColumnList, WorkloadError};

/// One entry of `columns` or `tags`: `count` columns of one type.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSpec {
    pub data_type: DataType,
    pub count: u32,
    /// Smallest value (numeric types); defaults to 0.
    pub min: Option<f64>,
    /// Largest value (numeric types); defaults to 100.
    pub max: Option<f64>,
    /// Values to pick from, as written in the scenario.
    pub values: Option<Vec<String>>,
    /// How the values move over time (numeric columns).
    pub shape: Shape,
    /// One cycle of a sine, square or sawtooth shape, ns.
    pub period_ns: i64,
    /// Gaussian noise on a shape: its standard deviation as a share of `max - min`.
    pub noise: f64,
}

impl ColumnSpec {
    pub fn new(data_type: DataType, count: u32) -> Self {
        ColumnSpec {
            data_type,
            count,
            min: None,
            max: None,
            values: None,
            shape: Shape::Random,
            period_ns: DEFAULT_PERIOD_NS,
            noise: 0.0,
        }
    }
}

/// A value parsed from a `values` list.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

/// How the values of one column are made.
#[derive(Debug, Clone)]
pub(super) enum ValueGen {
    Bool,
    /// Uniform integers in `lo..=lo+span-1`.
    Int {
        lo: i64,
        span: u64,
    },
    /// Uniform floats in `[lo, lo+span)`.
    Float {
        lo: f64,
        span: f64,
    },
    /// Random strings of `len` characters (multi-byte ones too for nchar).
    Str {
        len: u32,
        unicode: bool,
    },
    /// One of the listed values.
    Choice(Vec<CustomValue>),
    /// The row's own timestamp, in milliseconds.
    RowTime,
    /// A shape over time in `[lo, lo+span]`, with Gaussian noise of standard deviation
    /// `noise`; rounded for integers.
    Wave {
        lo: f64,
        span: f64,
        shape: Shape,
        period_ns: i64,
        noise: f64,
        int: bool,
    },
}

const ASCII: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const UNICODE: &[char] = &[
    'a', 'b', 'c', 'x', 'y', 'z', '0', '9', 'é', 'ü', 'ß', '中', '文', '数', '据', 'α',
];

impl ValueGen {
    fn compile(
        spec: &ColumnSpec,
        list: ColumnList,
        index: usize,
    ) -> Result<ValueGen, WorkloadError> {
        let name = match list {
            ColumnList::Columns => "columns",
            ColumnList::Tags => "tags",
        };
        let err = |field: &str, message: String| WorkloadError {
            key: format!("{name}[{index}].{field}"),
            message,
            column: Some((list, index)),
        };
        let ty = spec.data_type;
        let shaped = check_shape(spec, list, &err)?;
        if let Some(values) = &spec.values {
            if values.is_empty() {
                return Err(err("values", "must list at least one value".into()));
            }
            if spec.min.is_some() || spec.max.is_some() {
                return Err(err(
                    "values",
                    "give either values or min/max, not both".into(),
                ));
            }
            let parsed = values
                .iter()
                .map(|v| parse_value(ty, v).map_err(|m| err("values", m)))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(ValueGen::Choice(parsed));
        }
        match ty {
            DataType::Bool | DataType::Varchar(_) | DataType::NChar(_) => {
                if spec.min.is_some() || spec.max.is_some() {
                    let field = if spec.min.is_some() { "min" } else { "max" };
                    return Err(err(
                        field,
                        format!(
                            "min and max are for numeric types, not {ty}; use values to list the allowed values"
                        ),
                    ));
                }
                Ok(match ty {
                    DataType::Bool => ValueGen::Bool,
                    DataType::Varchar(len) => ValueGen::Str {
                        len,
                        unicode: false,
                    },
                    DataType::NChar(len) => ValueGen::Str { len, unicode: true },
                    _ => unreachable!(),
                })
            }
            DataType::Timestamp if spec.min.is_none() && spec.max.is_none() => {
                Ok(ValueGen::RowTime)
            }
            DataType::Float | DataType::Double => float_gen(spec, shaped, &err),
            _ => int_gen(spec, shaped, &err),
        }
    }

    /// Appends one value to `out`, using `scratch` for strings; `phase` places a shape's
    /// wave for this device and column (0..1 of a period).
    #[inline]
    pub(super) fn push(
        &self,
        rng: &mut DeviceRng,
        ts_ns: i64,
        phase: f64,
        out: &mut ColumnValues,
        scratch: &mut String,
    ) {
        match (self, out) {
            (
                ValueGen::Wave {
                    lo,
                    span,
                    shape,
                    period_ns,
                    noise,
                    int,
                },
                out,
            ) => {
                let x = (ts_ns.rem_euclid(*period_ns) as f64 / *period_ns as f64 + phase).fract();
                let mut v = lo + span * shape.at(x);
                if *noise > 0.0 {
                    v += noise * gaussian(rng.next_u64());
                }
                let v = v.clamp(*lo, lo + span);
                match out {
                    ColumnValues::Int(o) if *int => o.push(v.round() as i64),
                    ColumnValues::Float(o) => o.push(v),
                    _ => unreachable!("a shape's column is numeric"),
                }
            }
            (ValueGen::Bool, ColumnValues::Bool(v)) => v.push(rng.next_u64() & 1 == 1),
            (ValueGen::Int { lo, span }, ColumnValues::Int(v)) => {
                v.push(lo.wrapping_add(below(rng.next_u64(), *span) as i64))
            }
            (ValueGen::RowTime, ColumnValues::Int(v)) => v.push(ts_ns.div_euclid(1_000_000)),
            (ValueGen::Float { lo, span }, ColumnValues::Float(v)) => {
                v.push(lo + unit(rng.next_u64()) * span)
            }
            (ValueGen::Str { len, unicode }, ColumnValues::Str(v)) => {
                random_string(rng, *len, *unicode, scratch);
                v.push(scratch);
            }
            (ValueGen::Choice(list), out) => {
                let pick = &list[below(rng.next_u64(), list.len() as u64) as usize];
                match (pick, out) {
                    (CustomValue::Bool(b), ColumnValues::Bool(v)) => v.push(*b),
                    (CustomValue::Int(i), ColumnValues::Int(v)) => v.push(*i),
                    (CustomValue::Float(f), ColumnValues::Float(v)) => v.push(*f),
                    (CustomValue::Str(s), ColumnValues::Str(v)) => v.push(s),
                    _ => unreachable!("values are parsed for their column's type"),
                }
            }
            _ => unreachable!("a column's generator matches its storage"),
        }
    }

    /// One value as a tag value.
    pub(super) fn tag(&self, rng: &mut DeviceRng) -> TagValue {
        match self {
            ValueGen::Bool => TagValue::Bool(rng.next_u64() & 1 == 1),
            ValueGen::Int { lo, span } => {
                TagValue::Int(lo.wrapping_add(below(rng.next_u64(), *span) as i64))
            }
            ValueGen::RowTime => TagValue::Int(0),
            // Refused for tags at compile: a tag has no time.
            ValueGen::Wave { lo, int: true, .. } => TagValue::Int(*lo as i64),
            ValueGen::Wave { lo, .. } => TagValue::Float(*lo),
            ValueGen::Float { lo, span } => TagValue::Float(lo + unit(rng.next_u64()) * span),
            ValueGen::Str { len, unicode } => {
                let mut s = String::new();
                random_string(rng, *len, *unicode, &mut s);
                TagValue::Str(Cow::Owned(s))
            }
            ValueGen::Choice(list) => {
                match &list[below(rng.next_u64(), list.len() as u64) as usize] {
                    CustomValue::Bool(b) => TagValue::Bool(*b),
                    CustomValue::Int(i) => TagValue::Int(*i),
                    CustomValue::Float(f) => TagValue::Float(*f),
                    CustomValue::Str(s) => TagValue::Str(Cow::Owned(s.clone())),
                }
            }
        }
    }
}

fn random_string(rng: &mut DeviceRng, len: u32, unicode: bool, out: &mut String) {
    out.clear();
    let mut bits = 0u64;
    for i in 0..len {
        // One draw gives ten 6-bit picks.
        if i % 10 == 0 {
            bits = rng.next_u64();
        }
        let pick = (bits & 63) as usize;
        bits >>= 6;
        if unicode {
            out.push(UNICODE[pick % UNICODE.len()]);
        } else {
            out.push(ASCII[pick % ASCII.len()] as char);
        }
    }
}

fn parse_value(ty: DataType, text: &str) -> Result<CustomValue, String> {
    let t = text.trim();
    match ty {
        DataType::Bool => match t.to_ascii_lowercase().as_str() {
            "true" => Ok(CustomValue::Bool(true)),
            "false" => Ok(CustomValue::Bool(false)),
            _ => Err(format!("\"{text}\" is not a bool; allowed: true, false")),
        },
        DataType::Float | DataType::Double => match t.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(CustomValue::Float(v)),
            _ => Err(format!("\"{text}\" is not a {ty} value")),
        },
        DataType::Varchar(len) if text.len() > len as usize => Err(format!(
            "\"{text}\" is {} bytes long; {ty} allows at most {len}",
            text.len()
        )),
        DataType::NChar(len) if text.chars().count() > len as usize => Err(format!(
            "\"{text}\" is {} characters long; {ty} allows at most {len}",
            text.chars().count()
        )),
        DataType::Varchar(_) | DataType::NChar(_) => Ok(CustomValue::Str(text.to_string())),
        _ => {
            let (lo, hi) = ty.int_range().unwrap_or((i64::MIN, i64::MAX));
            match t.parse::<i64>() {
                Ok(v) if (lo..=hi).contains(&v) => Ok(CustomValue::Int(v)),
                _ => Err(format!(
                    "\"{text}\" is not a {ty} value; allowed: whole numbers from {lo} to {hi}"
                )),
            }
        }
    }
}

/// Expands column specs into one generator per column.
pub(super) fn compile(
    list: &[ColumnSpec],
    which: ColumnList,
) -> Result<Vec<(DataType, ValueGen)>, WorkloadError> {
    let mut out = Vec::new();
    for (i, spec) in list.iter().enumerate() {
        let g = ValueGen::compile(spec, which, i)?;
        for _ in 0..spec.count {
            out.push((spec.data_type, g.clone()));
        }
    }
    Ok(out)
}

/// A column's noise, period and shape checked (a shape only for numeric columns, not tags
/// or values lists); whether it is shaped.
fn check_shape(
    spec: &ColumnSpec,
    list: ColumnList,
    err: &dyn Fn(&str, String) -> WorkloadError,
) -> Result<bool, WorkloadError> {
    let ty = spec.data_type;
    let shaped = spec.shape != Shape::Random;
    if !spec.noise.is_finite() || spec.noise < 0.0 {
        return Err(err(
            "noise",
            format!(
                "{} is not a share of max - min; allowed: 0 or more",
                spec.noise
            ),
        ));
    }
    if spec.noise != 0.0 && !shaped {
        return Err(err(
            "noise",
            "is for a shape (constant, sine, square, sawtooth), not random values".into(),
        ));
    }
    if spec.period_ns <= 0 {
        return Err(err("period", "must be positive".into()));
    }
    let numeric = matches!(
        ty,
        DataType::TinyInt
            | DataType::SmallInt
            | DataType::Int
            | DataType::BigInt
            | DataType::Float
            | DataType::Double
    );
    if shaped && (spec.values.is_some() || !numeric || list == ColumnList::Tags) {
        let what = if list == ColumnList::Tags {
            "a tag (a device's own, fixed value)".to_string()
        } else if spec.values.is_some() {
            "a values list".to_string()
        } else {
            ty.to_string()
        };
        return Err(err(
            "shape",
            format!(
                "{} is for numeric columns (tinyint, smallint, int, bigint, float, \
                 double), not {what}",
                spec.shape.name()
            ),
        ));
    }
    Ok(shaped)
}

/// A float or double column's generator: uniform in [min, max], or a shape between them.
fn float_gen(
    spec: &ColumnSpec,
    shaped: bool,
    err: &dyn Fn(&str, String) -> WorkloadError,
) -> Result<ValueGen, WorkloadError> {
    let ty = spec.data_type;
    let lo = spec.min.unwrap_or(0.0);
    let hi = spec.max.unwrap_or(lo.max(0.0) + 100.0);
    for (field, v) in [("min", lo), ("max", hi)] {
        if !v.is_finite() || (ty == DataType::Float && v.abs() > f32::MAX as f64) {
            return Err(err(field, format!("{v} is not a finite {ty}")));
        }
    }
    if lo > hi {
        return Err(err("min", format!("min {lo} is greater than max {hi}")));
    }
    if shaped && !(hi - lo).is_finite() {
        return Err(err(
            "max",
            format!("max - min ({hi} - {lo}) is beyond a double: a shape needs less"),
        ));
    }
    if shaped {
        return Ok(ValueGen::Wave {
            lo,
            span: hi - lo,
            shape: spec.shape,
            period_ns: spec.period_ns,
            noise: spec.noise * (hi - lo),
            int: false,
        });
    }
    Ok(ValueGen::Float { lo, span: hi - lo })
}

/// An integer column's generator: uniform in [min, max] within its type, or a shape.
fn int_gen(
    spec: &ColumnSpec,
    shaped: bool,
    err: &dyn Fn(&str, String) -> WorkloadError,
) -> Result<ValueGen, WorkloadError> {
    let ty = spec.data_type;
    let (tlo, thi) = ty.int_range().unwrap_or((i64::MIN, i64::MAX));
    let int = |field: &str, v: f64| -> Result<i64, WorkloadError> {
        if v.fract() != 0.0 || v < tlo as f64 || v > thi as f64 {
            return Err(err(
                field,
                format!("{v} is not a {ty} value; allowed: whole numbers from {tlo} to {thi}"),
            ));
        }
        Ok(v as i64)
    };
    let lo = int("min", spec.min.unwrap_or(0.0))?;
    let hi = match spec.max {
        Some(m) => int("max", m)?,
        None => lo.saturating_add(100).min(thi),
    };
    if lo > hi {
        return Err(err("min", format!("min {lo} is greater than max {hi}")));
    }
    if shaped {
        return Ok(ValueGen::Wave {
            lo: lo as f64,
            span: (hi as f64) - (lo as f64),
            shape: spec.shape,
            period_ns: spec.period_ns,
            noise: spec.noise * ((hi as f64) - (lo as f64)),
            int: true,
        });
    }
    let span = (hi as i128 - lo as i128 + 1).min(u64::MAX as i128) as u64;
    Ok(ValueGen::Int { lo, span })
}
