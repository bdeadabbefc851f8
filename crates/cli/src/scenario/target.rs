//! `[target]`: where the rows go, each kind's keys checked and defaulted, TLS and secrets
//! included.

use super::sections::{TARGET, TARGET_KINDS, TargetSection};
use super::{Ctx, ScenarioError};
use crate::plan::TargetPlan;

impl Ctx<'_> {
    pub(super) fn target(&self, t: &TargetSection) -> Result<TargetPlan, ScenarioError> {
        let kind = match &t.kind {
            None => "sqlite",
            Some(k) => self.choice(k, "target.kind", TARGET_KINDS)?,
        };
        let api = match (&t.api, kind) {
            (Some(a), "influx") => self.choice(a, "target.api", &["v1", "v2"])?,
            _ => "v1",
        };
        let (selector, what) = match kind {
            "influx" => (
                format!("influx {api}"),
                format!("target kind \"influx\" with api \"{api}\""),
            ),
            _ => (kind.to_string(), format!("target kind \"{kind}\"")),
        };
        self.check_kind_keys(&TARGET, &selector, &what, t.present())?;
        if let Some(registered) = crate::targets::kind(kind) {
            return self.registered_target(registered, t);
        }
        match kind {
            #[cfg(not(feature = "tdengine"))]
            "tdengine" => Err(self.error(
                t.kind.as_ref().map(|k| k.span()).as_ref(),
                "target.kind",
                "\"tdengine\" is not in this build of tsload (it was built without the cargo \
                 feature `tdengine`); rebuild with default features, e.g. \
                 `cargo install --path crates/cli`"
                    .into(),
            )),
            other => Err(self.error(
                t.kind.as_ref().map(|k| k.span()).as_ref(),
                "target.kind",
                format!("\"{other}\" is not a kind this build knows"),
            )),
        }
    }

    /// A kind defined in its own crate: its section's values (the keys it reads) parsed
    /// by the kind itself; its error located here, by key.
    fn registered_target(
        &self,
        kind: &dyn tsload_target::TargetKind,
        t: &TargetSection,
    ) -> Result<TargetPlan, ScenarioError> {
        let table = self
            .text
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut doc| match doc.remove("target") {
                Some(toml::Value::Table(t)) => Some(t),
                _ => None,
            })
            .unwrap_or_default();
        let reads: Vec<&str> = kind.keys().iter().map(|k| k.name).collect();
        let values = table
            .into_iter()
            .filter(|(k, _)| reads.contains(&k.as_str()))
            .collect();
        let section = tsload_target::Section::new("target", values);
        let target = kind.parse(&section).map_err(|e| {
            let short = e.key.strip_prefix("target.").unwrap_or(&e.key);
            let span = t
                .present()
                .into_iter()
                .find(|(k, _)| *k == short)
                .map(|(_, s)| s);
            let mut error = self.error(span.as_ref(), &e.key, e.message.clone());
            if e.says_no_value && error.file != "--set" {
                error.message = e.message;
            }
            error
        })?;
        Ok(TargetPlan(target))
    }
}
