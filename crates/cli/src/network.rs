//! The impairment of one run: starts the user-space delay proxy (and points the target at
//! it) or installs a netem qdisc under a restoring guard, probes the real RTT to the
//! target, and undoes everything after the run.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tsload_netem::{Guard, GuardOptions, Target};
use tsload_probe::{AppOptions, IcmpOptions, Pacing, ProbeError, ProbeReport, TcpOptions};
use tsload_proxy::{Proxy, ProxyConfig, ProxyHandle};

use tsload_scenario::plan::{NetworkBackend, NetworkPlan, ProbeChoice, TargetPlan};

/// An impairment in place; [`ActiveNetwork::finish`] takes it away.
pub struct ActiveNetwork {
    proxy: Option<ProxyHandle>,
    guard: Option<Guard>,
    /// What is in place, in words (for the report).
    pub description: String,
}

/// Sends the target's connections to the proxy at `local`. An address in the URL is
/// replaced by the proxy's; but TLS checks the server's certificate against the URL's
/// host, so a server named by host name whose kind can be told where to connect
/// ([`tsload_target::Target::connect_via`]: the HTTP kinds) keeps its URL and is
/// connected to at `local` instead, and a verified TLS connection to a named SQL server
/// (which cannot be told where else to connect) is refused. Returns the host name kept,
/// if one was.
fn point_at_proxy(
    target: &mut TargetPlan,
    url: &str,
    local: SocketAddr,
) -> anyhow::Result<Option<String>> {
    let parsed =
        url::Url::parse(url).map_err(|e| anyhow::anyhow!("cannot parse the target URL: {e}"))?;
    if let Some(name) = tsload_target::sql_tls::host_name(&parsed) {
        // A kind that can be told where to connect keeps the name (TLS checks the
        // certificate against it); reqwest's resolve override keeps the URL's port, so the
        // URL names the proxy's.
        let mut via = parsed.clone();
        via.set_port(Some(local.port()))
            .map_err(|()| anyhow::anyhow!("cannot set the port of the target URL"))?;
        let mut text = via.to_string();
        if !url.ends_with('/') && text.ends_with('/') && via.path() == "/" {
            text.pop();
        }
        if target.connect_via(text, local) {
            return Ok(Some(name.to_string()));
        }
        if let Some(host) = tsload_target::sql_tls::name_checked_host(url) {
            // Refused when the scenario was read too; the environment may have changed.
            anyhow::bail!(
                "{}",
                tsload_scenario::proxy_refusal(&host, &local.to_string())
            );
        }
    }
    target.set_url(url_with_addr(url, local)?);
    Ok(None)
}

/// The socket address `target` connects to ([`tsload_target::Target::address`], the
/// kind's default port included).
pub fn target_addr(target: &TargetPlan) -> anyhow::Result<SocketAddr> {
    let address = target.address().with_context(|| {
        format!(
            "the {} target has no TCP host and port to impair or probe (an embedded \
             target, a Unix socket, or a URL without a host)",
            target.kind()
        )
    })?;
    resolve(&address.host, address.port)
}

/// `host`'s address for `port`. A name like `localhost` may give ::1 first while the
/// server listens on 127.0.0.1 only: the first address that accepts a connection, else
/// the first.
fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve the target host {host}"))?
        .collect();
    let first = *addrs
        .first()
        .with_context(|| format!("the target host {host} has no address"))?;
    if addrs.len() == 1 {
        return Ok(first);
    }
    Ok(addrs
        .iter()
        .copied()
        .find(|a| std::net::TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
        .unwrap_or(first))
}

/// `raw` with its host and port replaced by `addr`.
fn url_with_addr(raw: &str, addr: SocketAddr) -> anyhow::Result<String> {
    let mut url =
        url::Url::parse(raw).map_err(|e| anyhow::anyhow!("cannot parse the target URL: {e}"))?;
    url.set_ip_host(addr.ip())
        .map_err(|()| anyhow::anyhow!("cannot set the host of the target URL"))?;
    url.set_port(Some(addr.port()))
        .map_err(|()| anyhow::anyhow!("cannot set the port of the target URL"))?;
    let mut out = url.to_string();
    // `Url` writes an empty path as "/"; keep the user's form (sinks append their paths).
    if !raw.ends_with('/') && out.ends_with('/') && url.path() == "/" && url.query().is_none() {
        out.pop();
    }
    Ok(out)
}

impl ActiveNetwork {
    /// Puts the impairment in place. With the proxy backend, `target`'s URL is rewritten
    /// to go through the proxy.
    pub async fn start(net: &NetworkPlan, target: &mut TargetPlan) -> anyhow::Result<Self> {
        let url = target
            .url()
            .context("the target is not reached over the network; nothing to impair")?
            .to_string();
        match &net.backend {
            NetworkBackend::Proxy { direction } => {
                let upstream = target_addr(target)?;
                let listen = if upstream.is_ipv4() {
                    SocketAddr::from(([127, 0, 0, 1], 0))
                } else {
                    SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 0))
                };
                // Only this run's own connections come here, as many as its workers open,
                // idle as long as their pools keep them: a cap or an idle timeout would fail
                // what a direct connection would not. The memory bounds and the connect
                // timeout (the SQL targets' own default, 10 s) hold.
                let config = ProxyConfig {
                    delay: net.delay,
                    jitter: net.jitter,
                    rate: net.rate_bits.map(|b| (b / 8).max(1)),
                    direction: *direction,
                    idle_timeout: None,
                    max_connections: None,
                    ..ProxyConfig::new(listen, upstream)
                };
                let proxy = Proxy::start(config)
                    .await
                    .context("cannot start the delay proxy")?;
                let local = proxy.local_addr();
                let kept = point_at_proxy(target, &url, local)?;
                let description = format!(
                    "proxy {local} -> {upstream}: delay {}{}{} ({}){}",
                    humantime::format_duration(net.delay),
                    if net.jitter.is_zero() {
                        String::new()
                    } else {
                        format!(" jitter {}", humantime::format_duration(net.jitter))
                    },
                    net.rate_bits
                        .map(|b| format!(" rate {b} bit/s"))
                        .unwrap_or_default(),
                    match direction {
                        tsload_proxy::Direction::Up => "client to server",
                        tsload_proxy::Direction::Down => "server to client",
                        tsload_proxy::Direction::Both => "both directions",
                    },
                    kept.map(|name| {
                        format!(
                            ", the name {name} kept (TLS to the name {name} where the URL is https)"
                        )
                    })
                    .unwrap_or_default()
                );
                Ok(ActiveNetwork {
                    proxy: Some(proxy),
                    guard: None,
                    description,
                })
            }
            NetworkBackend::Netem {
                dev,
                netns,
                allow_default_route,
            } => {
                let spec = net.spec.as_ref().context("no qdisc spec was built")?;
                let mut t = Target::new(dev);
                if let Some(ns) = netns {
                    t = t.in_netns(ns);
                }
                let options = GuardOptions {
                    allow_default_route: *allow_default_route,
                    ..GuardOptions::default()
                };
                let guard = Guard::apply(&t, spec, &options)
                    .await
                    .with_context(|| format!("cannot apply `{spec}` to {t}"))?;
                Ok(ActiveNetwork {
                    proxy: None,
                    guard: Some(guard),
                    description: format!("netem on {t}: {spec}"),
                })
            }
        }
    }

    /// Takes the impairment away: stops the proxy, restores the previous qdisc.
    pub async fn finish(self) -> anyhow::Result<()> {
        if let Some(p) = self.proxy {
            p.shutdown().await;
        }
        if let Some(g) = self.guard {
            g.restore().await.context(
                "cannot restore the interface's previous qdisc (run `tsload netem restore`)",
            )?;
        }
        Ok(())
    }
}

/// Measures the RTT to `target` as the plan asks (`None` when it asks for no probe).
pub async fn probe(net: &NetworkPlan, target: &TargetPlan) -> anyhow::Result<Option<ProbeReport>> {
    target
        .url()
        .context("the target has no network address to probe")?;
    let report = match net.probe {
        ProbeChoice::None => return Ok(None),
        ProbeChoice::Tcp => {
            let mut o = TcpOptions::new(target_addr(target)?, net.probe_count);
            o.interval = Duration::ZERO;
            o.timeout = Duration::from_secs(5);
            tsload_probe::connect_rtt(&o).await?
        }
        ProbeChoice::Icmp => {
            let mut o = IcmpOptions::new(target_addr(target)?.ip(), net.probe_count);
            o.pacing = Pacing::Flood;
            o.timeout = Duration::from_secs(2);
            tsload_probe::icmp::ping(&o).await?
        }
        ProbeChoice::App => {
            let mut o = AppOptions::new(net.probe_count);
            o.interval = Duration::ZERO;
            o.timeout = Duration::from_secs(10);
            app_probe(target, &net.probe_path, &o).await?
        }
    };
    if report.received == 0 {
        bail!(
            "the RTT probe got no answer ({} sent); is the target up?\n{}",
            report.transmitted,
            report.render_text()
        );
    }
    Ok(Some(report))
}

/// The target's own ping: HTTP GET of `path` for line-protocol servers, `SELECT 1` for SQL.
pub async fn app_probe(
    target: &TargetPlan,
    path: &str,
    opts: &AppOptions,
) -> anyhow::Result<ProbeReport> {
    let probe = target.app_probe();
    if probe == tsload_target::AppProbe::None {
        bail!("target kind \"{}\" has no application probe", target.kind());
    }
    Ok(run_app_probe(probe, path, opts).await?)
}

/// Runs `probe`: a GET of `path` under an HTTP endpoint, `SELECT 1` over a SQL URL.
pub async fn run_app_probe(
    probe: tsload_target::AppProbe,
    path: &str,
    opts: &AppOptions,
) -> Result<ProbeReport, ProbeError> {
    match probe {
        tsload_target::AppProbe::Sql { url } => tsload_probe::sql_rtt(url.expose(), opts).await,
        tsload_target::AppProbe::Http(endpoint) => {
            let url = if path.is_empty() {
                endpoint.url
            } else {
                format!("{}{path}", endpoint.url.trim_end_matches('/'))
            };
            let mut opts = opts.clone();
            opts.tls = endpoint.tls;
            opts.connect_to = endpoint.connect_to;
            tsload_probe::http_rtt(&url, &opts).await
        }
        tsload_target::AppProbe::None => Err(ProbeError::InvalidOptions(
            "the target has no application probe".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run-time guard behind the scenario's own refusal: a SQL target named by host
    /// with its certificate's name checked is never pointed at the proxy; by address it is.
    #[test]
    fn a_name_checked_sql_target_is_not_pointed_at_the_proxy() {
        crate::install_kinds();
        let local: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let plan = |url: &str| {
            tsload_scenario::parse(
                "s.toml",
                "",
                &[
                    "target.kind=\"postgres\"".into(),
                    format!("target.url=\"{url}\""),
                ],
            )
            .unwrap()
            .target
        };
        let named = "postgres://u@db.example:5432/x?sslmode=verify-full";
        let mut target = plan(named);
        let e = point_at_proxy(&mut target, named, local).unwrap_err();
        assert!(e.to_string().contains("instead of db.example"), "{e}");
        assert_eq!(target.url(), Some(named), "left as it was");
        let by_address = "postgres://u@127.0.0.1:5432/x?sslmode=verify-full";
        let mut target = plan(by_address);
        assert_eq!(
            point_at_proxy(&mut target, by_address, local).unwrap(),
            None
        );
        assert!(target.url().unwrap().contains("127.0.0.1:40000"));
    }

    #[test]
    fn urls_resolve_and_are_rewritten() {
        let to = "127.0.0.1:40000".parse().unwrap();
        assert_eq!(
            url_with_addr("mysql://root:s%40cret@localhost:3306/tsload?x=1", to).unwrap(),
            "mysql://root:s%40cret@127.0.0.1:40000/tsload?x=1"
        );
        assert_eq!(
            url_with_addr("http://127.0.0.1:8086/", to).unwrap(),
            "http://127.0.0.1:40000/"
        );
        assert_eq!(
            url_with_addr("http://127.0.0.1:8086", to).unwrap(),
            "http://127.0.0.1:40000"
        );
        // `localhost` resolves to the address that is listening.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(
            resolve("localhost", port).unwrap(),
            SocketAddr::from(([127, 0, 0, 1], port))
        );
    }
}
