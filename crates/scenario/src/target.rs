//! `[target]`: where the rows go. The section's keys are checked against the chosen kind's
//! own list, then the kind parses its section itself; its errors are located here.

use std::ops::Range;

use super::sections::{TARGET, TargetSection, target_kinds, target_selector};
use super::{Ctx, ScenarioError};
use crate::plan::TargetPlan;

impl Ctx<'_> {
    pub(super) fn target(&self, t: &TargetSection) -> Result<TargetPlan, ScenarioError> {
        let kind = match t.0.get("kind") {
            None => crate::kinds().default_kind,
            Some(v) => self.word(v, "target.kind", &target_kinds())?,
        };
        if let Some(why) = crate::kinds()
            .not_built
            .iter()
            .find(|k| k.name == kind)
            .map(|k| k.why)
        {
            let span = t.0.get("kind").map(|k| k.span());
            return Err(self.error(
                span.as_ref(),
                "target.kind",
                format!("\"{kind}\" is not in this build of tsload ({why})"),
            ));
        }
        let registered = crate::kinds()
            .kind(kind)
            .expect("target_kinds lists registered kinds only");
        let chooser = registered.key_sets().map(|sets| sets.chooser);
        let chosen = match chooser.and_then(|c| t.0.get(c).map(|v| (c, v))) {
            Some((c, v)) => {
                let values: Vec<&str> = registered
                    .key_sets()
                    .map(|s| s.sets.iter().map(|(v, _)| *v).collect())
                    .unwrap_or_default();
                Some(self.word(v, &format!("target.{c}"), &values)?)
            }
            None => None,
        };
        let selector = target_selector(registered, chosen);
        let what = match (chooser, selector.split_once(' ')) {
            (Some(c), Some((name, value))) => {
                format!("target kind \"{name}\" with {c} \"{value}\"")
            }
            _ => format!("target kind \"{kind}\""),
        };
        let present = t.present();
        self.check_unknown_target_keys(&present)?;
        self.check_kind_keys(&TARGET, &selector, &what, present.clone())?;
        self.registered_target(registered, t, &present)
    }

    /// A key no registered kind reads: a misspelling, named with the nearest key.
    fn check_unknown_target_keys(
        &self,
        present: &[(&str, Range<usize>)],
    ) -> Result<(), ScenarioError> {
        let known: Vec<&str> = TARGET.keys.iter().map(|k| k.name).collect();
        for (key, span) in present {
            if known.contains(key) {
                continue;
            }
            let hint = super::closest(key, &known)
                .map(|k| format!("; did you mean `{k}`?"))
                .unwrap_or_default();
            return Err(self.error(
                Some(span),
                &format!("target.{key}"),
                format!(
                    "unknown key `{key}` in [target]: no target kind of this build reads it{hint}"
                ),
            ));
        }
        Ok(())
    }

    /// A string value that must be one of `allowed`.
    fn word<'v>(
        &self,
        v: &'v toml::Spanned<toml::Value>,
        key: &str,
        allowed: &[&str],
    ) -> Result<&'v str, ScenarioError> {
        match v.get_ref() {
            toml::Value::String(s) if allowed.contains(&s.as_str()) => Ok(s),
            toml::Value::String(s) => Err(self.error(
                Some(&v.span()),
                key,
                format!("\"{s}\" is not allowed; allowed: {}", allowed.join(", ")),
            )),
            other => Err(self.error(
                Some(&v.span()),
                key,
                format!(
                    "invalid type: {} `{other}`, expected a string; allowed: {}",
                    other.type_str(),
                    allowed.join(", ")
                ),
            )),
        }
    }

    /// A kind defined in its own crate: its section's values (the keys it reads) parsed
    /// by the kind itself; its error located here, by key.
    fn registered_target(
        &self,
        kind: &dyn tsload_target::TargetKind,
        t: &TargetSection,
        present: &[(&str, Range<usize>)],
    ) -> Result<TargetPlan, ScenarioError> {
        let reads: Vec<&str> = kind.keys().iter().map(|k| k.name).collect();
        let values =
            t.0.iter()
                .filter(|(k, _)| reads.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.get_ref().clone()))
                .collect();
        let section = tsload_target::Section::new("target", values);
        let target = kind.parse(&section).map_err(|e| {
            let short = e.key.strip_prefix("target.").unwrap_or(&e.key);
            let span = present.iter().find(|(k, _)| *k == short).map(|(_, s)| s);
            let mut error = self.error(span, &e.key, e.message.clone());
            if e.says_no_value && error.file != "--set" {
                error.message = e.message;
            }
            if self.dropped_by_kind_override("target", short) {
                // The file's value, written for the kind it names, not for the one
                // `--set target.kind` chose.
                error.message.push_str(&format!(
                    " (the file sets it for its own target kind; give target kind \"{}\" \
                     its own with --set target.{short}=...)",
                    kind.name()
                ));
            }
            error
        })?;
        Ok(TargetPlan(target))
    }
}
