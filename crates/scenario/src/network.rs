//! `[network]`: the impairment during the run (delay proxy or netem) and the RTT probe
//! before it.

use std::time::Duration;

use toml::Spanned;

use super::sections::{NETWORK, NETWORK_BACKENDS, NetworkSection};
use super::{Ctx, ScenarioError};
use crate::plan::{NetworkBackend, NetworkPlan, ProbeChoice, TargetPlan};

impl Ctx<'_> {
    pub(super) fn network(
        &self,
        section: &Spanned<NetworkSection>,
        target: &TargetPlan,
    ) -> Result<NetworkPlan, ScenarioError> {
        let n = section.get_ref();
        let backend = match &n.backend {
            None => {
                return Err(self.error(
                    Some(&section.span()),
                    "network.backend",
                    "missing; allowed: \"proxy\" (user space, works everywhere) or \"netem\" (tc qdisc on an interface)".into(),
                ));
            }
            Some(b) => self.choice(b, "network.backend", NETWORK_BACKENDS)?,
        };
        let delay = self.duration_or_default(&n.delay, "network.delay", Duration::ZERO)?;
        let jitter = self.duration_or_default(&n.jitter, "network.jitter", Duration::ZERO)?;
        let tc_word = |v: &Spanned<String>, key: &str, word: &str| {
            tsload_netem::Spec::parse(&format!("{word} {}", v.get_ref()))
                .map_err(|e| self.error(Some(&v.span()), key, e.to_string()))
        };
        let rate_bits = match &n.rate {
            None => None,
            Some(v) => match tc_word(v, "network.rate", "rate")? {
                tsload_netem::Spec::Netem(netem) => netem.rate.map(|r| r.bits_per_sec()),
                _ => None,
            },
        };
        if rate_bits == Some(0) {
            let v = n.rate.as_ref().expect("rate was given");
            return Err(self.error(
                Some(&v.span()),
                "network.rate",
                "a rate of 0 would send nothing; leave it out for no limit".into(),
            ));
        }
        let loss = match &n.loss {
            None => None,
            Some(v) => match tc_word(v, "network.loss", "loss")? {
                tsload_netem::Spec::Netem(netem) => netem.loss.map(|c| c.probability.as_percent()),
                _ => None,
            },
        };
        self.check_impairable(section, target)?;
        // The other backend's keys, after the values and the target are checked.
        self.check_kind_keys(
            &NETWORK,
            backend,
            &format!("backend \"{backend}\""),
            n.present(),
        )?;
        let (backend, spec, default_probe) =
            self.backend(section, backend, delay, jitter, target)?;
        let probe = self.probe(section, &backend, default_probe, target)?;
        let probe_count =
            self.int_or_default(&n.probe_count, "network.probe_count", 1, 1_000_000)? as u64;
        let path = self.given_or_documented(&n.probe_path, "network.probe_path")?;
        if !path.get_ref().starts_with('/') {
            return Err(self.error(
                Some(&path.span()),
                "network.probe_path",
                format!(
                    "\"{}\" must start with /, e.g. \"/ping\" or \"/health\"",
                    path.get_ref()
                ),
            ));
        }
        let probe_path = path.get_ref().clone();
        Ok(NetworkPlan {
            backend,
            delay,
            jitter,
            loss,
            rate_bits,
            spec,
            probe,
            probe_count,
            probe_path,
        })
    }

    /// A target the impairment can stand in front of: reached over TCP at the URL's own
    /// host and port.
    fn check_impairable(
        &self,
        section: &Spanned<NetworkSection>,
        target: &TargetPlan,
    ) -> Result<(), ScenarioError> {
        let addressable = target.url().is_some();
        if !addressable {
            return Err(self.error(
                Some(&section.span()),
                "network.backend",
                format!(
                    "target kind \"{}\" is not reached over the network, so there is nothing to impair; use a server target (influx, postgres, mysql, tdengine)",
                    target.kind()
                ),
            ));
        }
        if let Some(url) = target.url()
            && let Some(family) = tsload_target::sql_tls::SqlFamily::of_url(url)
            && let Some((key, value)) = tsload_target::sql_tls::endpoint_key_in_url(url, family)
        {
            return Err(self.error(
                Some(&section.span()),
                "network.backend",
                format!(
                    "target.url sets `{key}={value}` in its query, and the SQL driver connects \
                     there instead of to the URL's host and port, which are what the network \
                     impairment puts itself in front of and probes; put the server's host and \
                     port in the URL itself ({}://USER@HOST:PORT/DATABASE){}",
                    url.split_once("://").map_or("postgres", |(s, _)| s),
                    if key == "socket" || value.starts_with('/') {
                        ", over TCP: a Unix socket cannot be impaired"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Ok(())
    }

    /// The backend's settings, the netem spec it applies (`None` for the proxy), and the
    /// probe it takes by default.
    fn backend(
        &self,
        section: &Spanned<NetworkSection>,
        backend: &str,
        delay: Duration,
        jitter: Duration,
        target: &TargetPlan,
    ) -> Result<(NetworkBackend, Option<tsload_netem::Spec>, ProbeChoice), ScenarioError> {
        let n = section.get_ref();
        Ok(if backend == "proxy" {
            if let Some(host) = target
                .url()
                .and_then(tsload_target::sql_tls::name_checked_host)
            {
                return Err(self.error(
                    n.backend.as_ref().map(|b| b.span()).as_ref(),
                    "network.backend",
                    proxy_refusal(&host, "the proxy's address"),
                ));
            }
            let direction = self.given_or_documented(&n.direction, "network.direction")?;
            let direction =
                match self.choice(&direction, "network.direction", &["up", "down", "both"])? {
                    "down" => tsload_proxy::Direction::Down,
                    "both" => tsload_proxy::Direction::Both,
                    _ => tsload_proxy::Direction::Up,
                };
            (NetworkBackend::Proxy { direction }, None, ProbeChoice::App)
        } else {
            let dev = n.dev.as_ref().ok_or_else(|| {
                self.error(
                    Some(&section.span()),
                    "network.dev",
                    "missing: the interface to impair, e.g. \"veth0\" (the client's egress toward the target)".into(),
                )
            })?;
            let mut words = format!("delay {}us", delay.as_micros());
            if !jitter.is_zero() {
                words.push_str(&format!(" {}us", jitter.as_micros()));
            }
            if let Some(l) = &n.loss {
                words.push_str(&format!(" loss {}", l.get_ref()));
            }
            if let Some(r) = &n.rate {
                words.push_str(&format!(" rate {}", r.get_ref()));
            }
            let spec = tsload_netem::Spec::parse(&words).map_err(|e| {
                self.error(Some(&section.span()), "network", format!("`{words}`: {e}"))
            })?;
            (
                NetworkBackend::Netem {
                    dev: dev.get_ref().clone(),
                    netns: n.netns.as_ref().map(|v| v.get_ref().clone()),
                    allow_default_route: self
                        .flag_or_default(&n.allow_default_route, "network.allow_default_route")?,
                },
                Some(spec),
                ProbeChoice::Tcp,
            )
        })
    }

    /// How the RTT is measured: `network.probe`, else the backend's default; one that
    /// cannot measure this backend's delay or reach this target is refused.
    fn probe(
        &self,
        section: &Spanned<NetworkSection>,
        backend: &NetworkBackend,
        default_probe: ProbeChoice,
        target: &TargetPlan,
    ) -> Result<ProbeChoice, ScenarioError> {
        let n = section.get_ref();
        let probe = match &n.probe {
            None => default_probe,
            Some(p) => match self.choice(p, "network.probe", &["none", "tcp", "icmp", "app"])? {
                "none" => ProbeChoice::None,
                "tcp" | "icmp" if matches!(backend, NetworkBackend::Proxy { .. }) => {
                    return Err(self.error(
                        Some(&p.span()),
                        "network.probe",
                        format!(
                            "\"{}\" measures the kernel's path, which the proxy's delay is not on (the proxy delays the bytes of a connection, not packets); use \"app\"",
                            p.get_ref()
                        ),
                    ));
                }
                "tcp" => ProbeChoice::Tcp,
                "icmp" => ProbeChoice::Icmp,
                _ => ProbeChoice::App,
            },
        };
        if probe == ProbeChoice::App && target.app_probe() == tsload_target::AppProbe::None {
            let span = n.probe.as_ref().map_or(section.span(), |p| p.span());
            return Err(self.error(
                Some(&span),
                "network.probe",
                format!(
                    "target kind \"{}\" has no application probe here; use \"tcp\" or \"none\"",
                    target.kind()
                ),
            ));
        }
        Ok(probe)
    }
}

/// Why `network.backend = "proxy"` cannot stand between tsload and `host`: a verified TLS
/// connection to a named SQL server, which its driver cannot be told to make elsewhere.
pub fn proxy_refusal(host: &str, proxy: &str) -> String {
    format!(
        "network.backend = \"proxy\" would connect to {proxy} instead of {host}, which the \
         server's certificate names (sslmode=verify-full, PGSSLMODE=verify-full or \
         ssl-mode=VERIFY_IDENTITY), and the SQL driver cannot be told to connect to one and \
         check the other: use backend = \"netem\", or connect by address"
    )
}
