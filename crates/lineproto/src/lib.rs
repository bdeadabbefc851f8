//! tsload-lineproto: pure InfluxDB line-protocol encoding of tsload [`Batch`]es (no I/O),
//! byte-compatible with the `--format=influx` files of TSBS's `tsbs_generate_data`.
//!
//! One line per row:
//!
//! ```text
//! measurement,tag1=v1,tag2=v2 numtag=2000,field1=58i,field2=1.5,field3=true,field4="s" 1451606400000000000
//! ```
//!
//! - Tags come in the table's tag order. A [`TagValue::Str`] tag is written as a tag; a
//!   [`TagValue::Null`] or empty-string tag is left out; a numeric or boolean tag
//!   ([`TagValue::Int`], [`TagValue::Float`], [`TagValue::Bool`]) is written as one of the
//!   first fields of the line instead, as TSBS does for the float tags of `iot`.
//! - Fields: integers as `123i`, floats as Go's `strconv.FormatFloat(v, 'f', -1, 64)`
//!   (shortest round-trip digits, no exponent, no trailing `.0`), booleans as
//!   `true`/`false`, strings quoted with `"`, `\` and newlines escaped. Null fields and
//!   non-finite floats (which line protocol cannot carry) are skipped.
//! - A row left without any field gets no line at all, since line protocol needs at least
//!   one field; tsload's generators never produce such rows.
//! - The timestamp is the row's nanoseconds converted to the [`Precision`] by flooring
//!   division.
//!
//! [`Batch`]: tsload_core::Batch
//! [`TagValue::Str`]: tsload_core::TagValue::Str
//! [`TagValue::Null`]: tsload_core::TagValue::Null
//! [`TagValue::Int`]: tsload_core::TagValue::Int
//! [`TagValue::Float`]: tsload_core::TagValue::Float
//! [`TagValue::Bool`]: tsload_core::TagValue::Bool

mod encoder;
mod escape;
mod put;

pub use encoder::LineEncoder;
pub use escape::{
    escape_field_key, escape_measurement, escape_tag, write_float, write_string_field,
};

/// Unit of the timestamps written at the end of each line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// Nanoseconds (line protocol's default).
    #[default]
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl Precision {
    /// The name InfluxDB's `precision` query parameter uses: `ns`, `us`, `ms` or `s`.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Ns => "ns",
            Precision::Us => "us",
            Precision::Ms => "ms",
            Precision::S => "s",
        }
    }

    /// Nanoseconds per unit.
    pub fn divisor(self) -> i64 {
        match self {
            Precision::Ns => 1,
            Precision::Us => 1_000,
            Precision::Ms => 1_000_000,
            Precision::S => 1_000_000_000,
        }
    }

    /// Converts nanoseconds since the epoch to this unit, rounding towards negative
    /// infinity (so that times before 1970 keep their order).
    pub fn convert(self, ns: i64) -> i64 {
        ns.div_euclid(self.divisor())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_names_and_conversion() {
        let all = [Precision::Ns, Precision::Us, Precision::Ms, Precision::S];
        let names: Vec<_> = all.iter().map(|p| p.as_str()).collect();
        assert_eq!(names, ["ns", "us", "ms", "s"]);
        assert_eq!(Precision::default(), Precision::Ns);
        assert_eq!(Precision::Ns.convert(-1), -1);
        assert_eq!(Precision::Us.convert(1_999), 1);
        assert_eq!(Precision::Ms.convert(-1), -1);
        assert_eq!(Precision::S.convert(-1_000_000_000), -1);
        assert_eq!(Precision::S.convert(-1_000_000_001), -2);
    }
}
