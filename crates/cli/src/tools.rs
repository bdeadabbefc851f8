//! `tsload proxy` (the user-space delay proxy on its own, with optional fault injection:
//! `--fault SPEC`, see [`tsload_proxy::FAULT_SPEC_HELP`]) and `tsload probe icmp|tcp|app`
//! (RTT measurements printed as iputils prints them, plus HDR percentiles).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use tsload_probe::{AppOptions, IcmpOptions, Pacing, ProbeError, ProbeReport, TcpOptions};

use tsload_proxy::{Direction, Fault, Proxy, ProxyConfig};

#[derive(Args)]
pub struct ProxyArgs {
    /// Address to listen on, e.g. 127.0.0.1:15432 (port 0 picks a free one).
    #[arg(long)]
    listen: SocketAddr,
    /// Address every connection is forwarded to, e.g. 127.0.0.1:5432.
    #[arg(long)]
    upstream: SocketAddr,
    /// Delay added to the round trip (to each direction with `--direction both`), e.g. 1ms.
    #[arg(long, value_parser = parse_duration, default_value = "0ms")]
    delay: Duration,
    /// Each chunk's delay varies uniformly by +- this much (never reordering bytes).
    #[arg(long, value_parser = parse_duration, default_value = "0ms")]
    jitter: Duration,
    /// Bandwidth limit of each delayed direction in tc's words, e.g. 100mbit or 10mbps.
    #[arg(long, value_parser = parse_rate_bits)]
    rate: Option<u64>,
    /// Which direction is delayed: up (client to server, like netem on the client),
    /// down, or both (netem on both ends: the round trip grows by twice the delay).
    #[arg(long, value_enum, default_value = "up")]
    direction: DirectionArg,
    /// Print the proxy's counters this often (0: only at the end).
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    stats_every: Duration,
    /// Close a connection that moved no byte either way for this long, bytes held by the
    /// delay counting as moving (0: never).
    #[arg(long, value_parser = parse_duration, default_value = "5m")]
    idle_timeout: Duration,
    /// The most connections open at once: one more is reset at once and logged (0: no
    /// cap).
    #[arg(long, default_value_t = tsload_proxy::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Reset a client whose upstream does not accept the connection within this long (0:
    /// the system's own timeout, about two minutes).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    connect_timeout: Duration,
    /// A fault to inject at an exact byte or moment, repeatable: ACTION[:OPTION,...],
    /// e.g. reset:after_bytes=1000,stream=down, stall:after_bytes=4096, blackhole,
    /// reset_on_reply:after_pattern=COMMIT,occurrence=3 (see --help).
    #[arg(
        long = "fault",
        value_name = "SPEC",
        value_parser = parse_fault,
        long_help = tsload_proxy::FAULT_SPEC_HELP
    )]
    faults: Vec<Fault>,
}

#[derive(Clone, Copy, ValueEnum)]
enum DirectionArg {
    Up,
    Down,
    Both,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    use tsload_scenario::DurationError;
    tsload_scenario::parse_duration(s).map_err(|e| match e {
        DurationError::Invalid(e) => {
            format!("\"{s}\" is not a duration ({e}); write e.g. 1ms, 500us, 0.2ms")
        }
        DurationError::TooLong => format!("\"{s}\" is too long; allowed: at most 100 years"),
    })
}

fn parse_fault(s: &str) -> Result<Fault, String> {
    s.parse::<Fault>().map_err(|e| e.to_string())
}

fn parse_rate_bits(s: &str) -> Result<u64, String> {
    match tsload_netem::Spec::parse(&format!("rate {s}")) {
        Ok(tsload_netem::Spec::Netem(n)) => match n.rate.map(|r| r.bits_per_sec()) {
            Some(0) | None => Err(format!("\"{s}\": a rate of 0 would send nothing")),
            Some(b) => Ok(b),
        },
        Ok(_) => Err(format!("\"{s}\" is not a rate")),
        Err(e) => Err(e.to_string()),
    }
}

pub fn cmd_proxy(args: ProxyArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let config = ProxyConfig {
            listen: args.listen,
            upstream: args.upstream,
            delay: args.delay,
            jitter: args.jitter,
            rate: args.rate.map(|b| (b / 8).max(1)),
            direction: match args.direction {
                DirectionArg::Up => Direction::Up,
                DirectionArg::Down => Direction::Down,
                DirectionArg::Both => Direction::Both,
            },
            faults: args.faults.clone(),
            idle_timeout: Some(args.idle_timeout).filter(|d| !d.is_zero()),
            max_connections: Some(args.max_connections).filter(|&n| n > 0),
            connect_timeout: Some(args.connect_timeout).filter(|d| !d.is_zero()),
            log: tsload_proxy::Log::to(|line| errln!("{line}")),
            ..ProxyConfig::new(args.listen, args.upstream)
        };
        let proxy = match Proxy::start(config).await {
            Ok(p) => p,
            Err(e) => {
                errln!("error: {e}");
                return Ok(ExitCode::from(crate::exit::EXIT_USAGE));
            }
        };
        outln!(
            "tsload proxy: listening on {}, forwarding to {}, delay {} jitter {} {}{} (Ctrl-C to stop)",
            proxy.local_addr(),
            args.upstream,
            humantime::format_duration(args.delay),
            humantime::format_duration(args.jitter),
            match args.direction {
                DirectionArg::Up => "client->server",
                DirectionArg::Down => "server->client",
                DirectionArg::Both => "both directions",
            },
            args.rate.map(|b| format!(", rate {b} bit/s")).unwrap_or_default()
        );
        for (i, fault) in args.faults.iter().enumerate() {
            outln!("fault {}: {fault}", i + 1);
        }
        let show = |s: tsload_proxy::ProxyStats| {
            outln!(
                "connections {} (open {}), upstream connect errors {}, i/o errors {}, bytes up {}, down {}, faults fired {}",
                s.connections,
                s.active,
                s.connect_errors,
                s.io_errors,
                s.bytes_up,
                s.bytes_down,
                s.faults_fired
            );
        };
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        if args.stats_every.is_zero() {
            ctrl_c.await.context("cannot wait for Ctrl-C")?;
        } else {
            let mut tick = tokio::time::interval(args.stats_every);
            tick.tick().await;
            loop {
                tokio::select! {
                    r = &mut ctrl_c => { r.context("cannot wait for Ctrl-C")?; break; }
                    _ = tick.tick() => show(proxy.stats()),
                }
            }
        }
        show(proxy.stats());
        proxy.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

#[derive(Subcommand)]
pub enum ProbeCommand {
    /// ICMP echo (like `ping`; `--flood` like `ping -f`).
    Icmp(IcmpArgs),
    /// TCP connect() round trips to ADDR:PORT.
    Tcp(TcpArgs),
    /// The server's own ping over one connection: HTTP GET of the URL (http://...), or
    /// `SELECT 1` (postgres://..., mysql://...).
    App(AppArgs),
}

#[derive(Args)]
pub struct CommonProbeArgs {
    /// Probes to send.
    #[arg(short, long, default_value_t = 10)]
    count: u64,
    /// Time from one probe to the next (0: back to back); ignored with --flood.
    #[arg(short, long, value_parser = parse_duration, default_value = "1s")]
    interval: Duration,
    /// How long to wait for each answer.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    timeout: Duration,
    /// Probe from inside this network namespace (`ip netns` name or a path).
    #[arg(long)]
    netns: Option<String>,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Args)]
pub struct IcmpArgs {
    /// The address to ping.
    target: std::net::IpAddr,
    /// Next request on each reply or every 10 ms, whichever comes first (`ping -f`).
    #[arg(short, long)]
    flood: bool,
    /// Payload bytes (`ping -s`).
    #[arg(short, long, default_value_t = tsload_probe::icmp::DEFAULT_PAYLOAD)]
    size: usize,
    #[command(flatten)]
    common: CommonProbeArgs,
}

#[derive(Args)]
pub struct TcpArgs {
    /// ADDR:PORT to connect to.
    target: SocketAddr,
    #[command(flatten)]
    common: CommonProbeArgs,
}

#[derive(Args)]
pub struct AppArgs {
    /// http(s)://HOST:PORT/PATH, postgres://USER@HOST:PORT/DB or mysql://USER@HOST:PORT/DB
    /// (TLS for SQL: sslmode=verify-full&sslrootcert=CA.pem, ssl-mode=VERIFY_IDENTITY&ssl-ca=CA.pem).
    url: String,
    /// Verify the server against the CA certificates of this PEM file (https: besides
    /// Mozilla's roots; SQL: sslmode=verify-full / ssl-mode=VERIFY_IDENTITY with it).
    #[arg(long, value_name = "FILE")]
    ca_file: Option<std::path::PathBuf>,
    /// Encrypt without checking the certificate (https, or SQL with sslmode=require /
    /// ssl-mode=REQUIRED).
    #[arg(long, conflicts_with = "ca_file")]
    insecure_skip_verify: bool,
    #[command(flatten)]
    common: CommonProbeArgs,
}

pub fn cmd_probe(command: ProbeCommand) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (report, json) = runtime.block_on(async {
        let r: Result<(ProbeReport, Option<PathBuf>), tsload_probe::ProbeError> = match command {
            ProbeCommand::Icmp(a) => {
                let mut o = IcmpOptions::new(a.target, a.common.count);
                o.pacing = if a.flood {
                    Pacing::Flood
                } else {
                    Pacing::Interval(a.common.interval)
                };
                o.timeout = a.common.timeout;
                o.payload_size = a.size;
                o.netns = a.common.netns.clone();
                tsload_probe::icmp::ping(&o)
                    .await
                    .map(|r| (r, a.common.json))
            }
            ProbeCommand::Tcp(a) => {
                let mut o = TcpOptions::new(a.target, a.common.count);
                o.interval = a.common.interval;
                o.timeout = a.common.timeout;
                o.netns = a.common.netns.clone();
                tsload_probe::connect_rtt(&o)
                    .await
                    .map(|r| (r, a.common.json))
            }
            ProbeCommand::App(a) => {
                let mut o = AppOptions::new(a.common.count);
                o.interval = a.common.interval;
                o.timeout = a.common.timeout;
                o.netns = a.common.netns.clone();
                let tls = tsload_tls::TlsOptions {
                    ca_file: a.ca_file.clone(),
                    insecure_skip_verify: a.insecure_skip_verify,
                };
                let r = match tsload_target::AppProbe::of_url(a.url.clone(), &tls) {
                    Ok(probe) => crate::network::run_app_probe(probe, "", &o).await,
                    Err(why) => Err(ProbeError::InvalidOptions(why)),
                };
                r.map(|r| (r, a.common.json))
            }
        };
        r
    })?;
    out!("{}", report.render_text());
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report)?;
        crate::out::write_text(&path, &(text + "\n"))
            .with_context(|| format!("cannot write the JSON report {}", path.display()))?;
    }
    Ok(if report.received == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_rates_parse_like_tc() {
        assert_eq!(parse_duration("1ms").unwrap(), Duration::from_millis(1));
        assert_eq!(parse_duration("0.5ms").unwrap(), Duration::from_micros(500));
        assert!(parse_duration("fast").is_err());
        assert_eq!(parse_rate_bits("100mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate_bits("1mbps").unwrap(), 8_000_000);
        assert!(parse_rate_bits("0bit").is_err());
        assert!(parse_rate_bits("lots").is_err());
    }

    #[test]
    fn fault_specs_parse_and_name_what_is_wrong() {
        let f = parse_fault("reset_after_bytes=10,stream=down").unwrap();
        assert_eq!(f.to_string(), "reset:after_bytes=10,stream=down");
        let e = parse_fault("reset:after_bytes=ten").unwrap_err();
        assert!(e.contains("`after_bytes=ten`"), "{e}");
    }
}
