//! Specs printed back in tc's grammar, as text that parses to the same spec.

use std::fmt;

use super::values::Time;
use super::{Chance, Htb, NETEM_DEFAULT_LIMIT, Netem, Spec, Tbf, TbfLimit};

impl fmt::Display for Netem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(d) = self.delay {
            let mut s = format!("delay {}", d.latency);
            if d.jitter.is_some() || d.correlation.is_some() {
                s += &format!(" {}", d.jitter.unwrap_or(Time(0)));
            }
            if let Some(c) = d.correlation {
                s += &format!(" {c}");
            }
            if let Some(dist) = d.distribution {
                s += &format!(" distribution {}", dist.name());
            }
            parts.push(s);
        }
        let chance = |name: &str, c: &Chance| match c.correlation {
            Some(corr) => format!("{name} {} {corr}", c.probability),
            None => format!("{name} {}", c.probability),
        };
        // A duplicate correlation reaches the kernel only with TCA_NETEM_CORR, which tc
        // sends only for another correlation: a 0% loss correlation carries it.
        let dup_needs_carrier = self.duplicate.and_then(|c| c.correlation).is_some()
            && self.delay.and_then(|d| d.correlation).is_none()
            && self.loss.and_then(|c| c.correlation).is_none()
            && self.reorder.and_then(|r| r.correlation).is_none()
            && self.corrupt.and_then(|c| c.correlation).is_none();
        match (&self.loss, dup_needs_carrier) {
            (Some(c), false) => parts.push(chance("loss", c)),
            (Some(c), true) => parts.push(format!("loss {} 0%", c.probability)),
            (None, true) => parts.push("loss 0% 0%".to_string()),
            (None, false) => {}
        }
        if let Some(c) = &self.duplicate {
            parts.push(chance("duplicate", c));
        }
        if let Some(r) = &self.reorder {
            let mut s = chance(
                "reorder",
                &Chance {
                    probability: r.probability,
                    correlation: r.correlation,
                },
            );
            if r.gap != 1 {
                s += &format!(" gap {}", r.gap);
            }
            parts.push(s);
        }
        if let Some(c) = &self.corrupt {
            parts.push(chance("corrupt", c));
        }
        if let Some(r) = self.rate {
            parts.push(format!("rate {r}"));
        }
        if self.limit != NETEM_DEFAULT_LIMIT {
            parts.push(format!("limit {}", self.limit));
        }
        if parts.is_empty() {
            f.write_str("netem")
        } else {
            f.write_str(&parts.join(" "))
        }
    }
}

impl fmt::Display for Tbf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tbf rate {} burst {}", self.rate, self.burst)?;
        match self.limit {
            TbfLimit::Latency(t) => write!(f, " latency {t}"),
            TbfLimit::Bytes(b) => write!(f, " limit {b}"),
        }
    }
}

impl fmt::Display for Htb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("htb")?;
        if self.default_class != 0 {
            write!(f, " default {:x}", self.default_class)?;
        }
        if self.r2q != 10 {
            write!(f, " r2q {}", self.r2q)?;
        }
        Ok(())
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spec::Netem(n) => n.fmt(f),
            Spec::Tbf(t) => t.fmt(f),
            Spec::Htb(h) => h.fmt(f),
        }
    }
}
