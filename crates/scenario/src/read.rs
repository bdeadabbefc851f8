//! The typed readers every section uses: integers, ratios, durations and times in their
//! allowed ranges, words from a list, and a left-out key's documented default, each
//! refusal naming the key and what is allowed.

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;
use tsload_core::engine::LoadMode;
use tsload_target::{DurationError, parse_duration};

use crate::sections::{self, SectionDoc};
use crate::{Ctx, ScenarioError};

impl Ctx<'_> {
    pub(crate) fn int(
        &self,
        v: &Spanned<i64>,
        key: &str,
        lo: i64,
        hi: i64,
    ) -> Result<i64, ScenarioError> {
        let x = *v.get_ref();
        if x < lo || x > hi {
            return Err(self.error(
                Some(&v.span()),
                key,
                format!("value {x} is out of range; allowed: {lo} to {hi}"),
            ));
        }
        Ok(x)
    }

    pub(crate) fn ratio(&self, v: &Spanned<f64>, key: &str, hi: f64) -> Result<f64, ScenarioError> {
        let x = *v.get_ref();
        if !(x.is_finite() && (0.0..=hi).contains(&x)) {
            return Err(self.error(
                Some(&v.span()),
                key,
                format!("value {x} is out of range; allowed: 0 to {hi}"),
            ));
        }
        Ok(x)
    }

    pub(crate) fn duration(
        &self,
        v: &Spanned<String>,
        key: &str,
        min: Duration,
    ) -> Result<Duration, ScenarioError> {
        let d = parse_duration(v.get_ref()).map_err(|e| {
            let message = match e {
                DurationError::Invalid(e) => format!(
                    "\"{}\" is not a duration ({e}); write e.g. \"10s\", \"500ms\", \"1h 30m\"",
                    v.get_ref()
                ),
                DurationError::TooLong => {
                    format!(
                        "\"{}\" is too long; allowed: at most 100 years",
                        v.get_ref()
                    )
                }
            };
            self.error(Some(&v.span()), key, message)
        })?;
        if d < min {
            return Err(self.error(
                Some(&v.span()),
                key,
                format!(
                    "\"{}\" is too short; allowed: at least {}",
                    v.get_ref(),
                    humantime::format_duration(min)
                ),
            ));
        }
        Ok(d)
    }

    /// A duration in nanoseconds for the workload's time grid, which counts in `i64`
    /// nanoseconds: at most about 292 years.
    pub(crate) fn duration_ns(
        &self,
        v: &Spanned<String>,
        key: &str,
        min: Duration,
    ) -> Result<i64, ScenarioError> {
        let d = self.duration(v, key, min)?;
        i64::try_from(d.as_nanos()).map_err(|_| {
            self.error(
                Some(&v.span()),
                key,
                format!(
                    "\"{}\" is too long; allowed: at most about 292 years (nanoseconds in \
                     64 bits)",
                    v.get_ref()
                ),
            )
        })
    }

    /// A UTC time: RFC 3339, or `now` / `now-DURATION` (`now-24h`): this minute's start,
    /// less the duration, so a data set can be placed where a server keeps it (inside
    /// its retention). Shards started in different minutes see different `now`s: give
    /// sharded runs absolute times.
    pub(crate) fn time_ns(&self, v: &Spanned<String>, key: &str) -> Result<i64, ScenarioError> {
        let raw = v.get_ref().trim();
        let relative = raw.strip_prefix("now").map(|rest| {
            let ago = match rest.trim().strip_prefix('-') {
                None if rest.trim().is_empty() => Ok(Duration::ZERO),
                None => Err(()),
                Some(d) => parse_duration(d.trim()).map_err(drop),
            };
            ago.and_then(|ago| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_err(drop)?;
                let minute = std::time::UNIX_EPOCH + Duration::from_secs(now.as_secs() / 60 * 60);
                minute.checked_sub(ago).ok_or(())
            })
        });
        let t = match relative {
            Some(t) => t,
            None => humantime::parse_rfc3339_weak(raw).map_err(drop),
        }
        .map_err(|()| {
            self.error(
                Some(&v.span()),
                key,
                format!(
                    "\"{}\" is not a UTC time; write RFC 3339, e.g. \"2016-01-01T00:00:00Z\", \
                     or \"now\" or \"now-DURATION\", e.g. \"now-24h\"",
                    v.get_ref()
                ),
            )
        })?;
        let since = t.duration_since(std::time::UNIX_EPOCH).map_err(|_| {
            self.error(
                Some(&v.span()),
                key,
                "times before 1970 are not supported".into(),
            )
        })?;
        i64::try_from(since.as_nanos())
            .map_err(|_| self.error(Some(&v.span()), key, "time is past year 2262".into()))
    }

    /// `v`, or else the default the key reference documents for `key`
    /// ([`sections::documented_default`]): the one place a scenario key's default is
    /// written. A documented default that is missing or does not read is a bug, said so.
    pub(crate) fn given_or_documented<'v, T>(
        &self,
        v: &'v Option<Spanned<T>>,
        key: &str,
    ) -> Result<std::borrow::Cow<'v, Spanned<T>>, ScenarioError>
    where
        T: serde::de::DeserializeOwned + Clone,
    {
        if let Some(v) = v {
            return Ok(std::borrow::Cow::Borrowed(v));
        }
        let bug = |why: String| self.error(None, key, format!("{why} (a bug in tsload)"));
        let value = sections::documented_default(key)
            .ok_or_else(|| bug("the key reference documents no default".into()))?;
        let value = T::deserialize(value)
            .map_err(|e| bug(format!("the documented default does not read: {e}")))?;
        Ok(std::borrow::Cow::Owned(Spanned::new(0..0, value)))
    }

    /// An integer in `lo..=hi`, or the documented default.
    pub(crate) fn int_or_default(
        &self,
        v: &Option<Spanned<i64>>,
        key: &str,
        lo: i64,
        hi: i64,
    ) -> Result<i64, ScenarioError> {
        self.int(&*self.given_or_documented(v, key)?, key, lo, hi)
    }

    /// A ratio in `0..=hi`, or the documented default.
    pub(crate) fn ratio_or_default(
        &self,
        v: &Option<Spanned<f64>>,
        key: &str,
        hi: f64,
    ) -> Result<f64, ScenarioError> {
        self.ratio(&*self.given_or_documented(v, key)?, key, hi)
    }

    /// A duration of at least `min`, or the documented default.
    pub(crate) fn duration_or_default(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
        min: Duration,
    ) -> Result<Duration, ScenarioError> {
        self.duration(&*self.given_or_documented(v, key)?, key, min)
    }

    /// A duration in nanoseconds ([`Self::duration_ns`]), or the documented default.
    pub(crate) fn duration_ns_or_default(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
        min: Duration,
    ) -> Result<i64, ScenarioError> {
        self.duration_ns(&*self.given_or_documented(v, key)?, key, min)
    }

    /// A UTC time in nanoseconds since the epoch, or the documented default.
    pub(crate) fn time_ns_or_default(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<i64, ScenarioError> {
        self.time_ns(&*self.given_or_documented(v, key)?, key)
    }

    /// A bool, or the documented default.
    pub(crate) fn flag_or_default(
        &self,
        v: &Option<Spanned<bool>>,
        key: &str,
    ) -> Result<bool, ScenarioError> {
        Ok(*self.given_or_documented(v, key)?.get_ref())
    }

    /// A string, or the documented default.
    pub(crate) fn text_or_default(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<String, ScenarioError> {
        Ok(self.given_or_documented(v, key)?.get_ref().clone())
    }

    /// An optional integer in `lo..=hi`.
    pub(crate) fn opt_int(
        &self,
        v: &Option<Spanned<i64>>,
        key: &str,
        lo: i64,
        hi: i64,
    ) -> Result<Option<i64>, ScenarioError> {
        v.as_ref().map(|v| self.int(v, key, lo, hi)).transpose()
    }

    /// An optional ratio in `0..=hi`.
    pub(crate) fn opt_ratio(
        &self,
        v: &Option<Spanned<f64>>,
        key: &str,
        hi: f64,
    ) -> Result<Option<f64>, ScenarioError> {
        v.as_ref().map(|v| self.ratio(v, key, hi)).transpose()
    }

    /// An optional duration of at least `min`.
    pub(crate) fn opt_duration(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
        min: Duration,
    ) -> Result<Option<Duration>, ScenarioError> {
        v.as_ref().map(|v| self.duration(v, key, min)).transpose()
    }

    /// Closed loop without a rate, open loop at a positive, finite rate (`unit` per
    /// second).
    pub(crate) fn load_mode(
        &self,
        rate: &Option<Spanned<f64>>,
        key: &str,
        unit: &str,
    ) -> Result<LoadMode, ScenarioError> {
        let Some(r) = rate else {
            return Ok(LoadMode::Closed);
        };
        let rate = *r.get_ref();
        if !(rate.is_finite() && rate > 0.0) {
            return Err(self.error(
                Some(&r.span()),
                key,
                format!(
                    "value {rate} is out of range; allowed: a positive number of {unit} per \
                     second (omit it for closed loop)"
                ),
            ));
        }
        Ok(LoadMode::Open { rate })
    }

    /// Refuses an open loop (`SECTION.rate`, `unit`s per second) that offers less than one
    /// request per worker within `SECTION.duration`. `per_round` is what all workers send
    /// with one request each (rows: batch x workers; requests: workers), `given` says
    /// where that comes from. Each worker sends one request every `per_round / rate` s: a
    /// run shorter than that, which cannot send part of a request, would achieve many
    /// times what was offered, or nothing.
    pub(crate) fn open_loop_fits(
        &self,
        rate: &Option<Spanned<f64>>,
        duration: Option<Duration>,
        section: &str,
        unit: &str,
        (per_round, given): (usize, &str),
    ) -> Result<(), ScenarioError> {
        let (Some(r), Some(duration)) = (rate, duration) else {
            return Ok(());
        };
        let (rate, seconds) = (*r.get_ref(), duration.as_secs_f64());
        let period = per_round as f64 / rate;
        if period <= seconds {
            return Ok(());
        }
        Err(self.error(
            Some(&r.span()),
            &format!("{section}.rate"),
            format!(
                "{rate} {unit}/s with {given} is one request per worker every {period:.3} s, \
                 longer than {section}.duration ({seconds:.3} s): the run would not offer a \
                 request per worker; allowed: a rate of at least {:.3} {unit}/s here, or fewer \
                 workers, smaller requests or a longer duration",
                per_round as f64 / seconds
            ),
        ))
    }

    /// Refuses a key that the section's `kind` does not read: another kind's keys are
    /// mistakes, not settings silently ignored. `what` names the kind in the message.
    pub(crate) fn check_kind_keys(
        &self,
        section: &SectionDoc,
        kind: &str,
        what: &str,
        present: Vec<(&str, Range<usize>)>,
    ) -> Result<(), ScenarioError> {
        let allowed = section.keys_of(kind);
        for (key, span) in present {
            if key == section.kind_key
                || allowed.contains(&key)
                || self.dropped_by_kind_override(section.name, key)
            {
                continue;
            }
            let owners = section.kinds_of(key).join(", ");
            let list = if allowed.is_empty() {
                "; it has no settings".to_string()
            } else {
                format!("; its settings are: {}", allowed.join(", "))
            };
            return Err(self.error(
                Some(&span),
                &format!("{}.{key}", section.name),
                format!("not a setting of {what} (only of {owners}){list}"),
            ));
        }
        Ok(())
    }

    pub(crate) fn choice<'v>(
        &self,
        v: &'v Spanned<String>,
        key: &str,
        allowed: &[&str],
    ) -> Result<&'v str, ScenarioError> {
        let s = v.get_ref().as_str();
        if allowed.contains(&s) {
            Ok(s)
        } else {
            Err(self.error(
                Some(&v.span()),
                key,
                format!("\"{s}\" is not allowed; allowed: {}", allowed.join(", ")),
            ))
        }
    }
}
