//! `tsload netem apply|show|clear|restore`: tc's qdisc commands for network impairment,
//! over rtnetlink (no `tc` binary), with `--dry-run`/`--hex` to see the exact request.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use tsload_netem::guard::DEFAULT_RECORD_DIR;
use tsload_netem::{ApplyOptions, Guard, Psched, QdiscOp, QdiscRequest, Replaced, Spec, Target};

#[derive(Subcommand)]
pub enum NetemCommand {
    /// Install an impairment as the root qdisc of an interface (stays until cleared).
    ///
    /// The root qdisc becomes exactly SPEC: a new qdisc (handle 7461: or the next free
    /// one) is swapped in atomically for whatever was there, so an option SPEC does not
    /// name has its default (`loss 1%` after `delay 10ms reorder 5%` leaves no delay and no
    /// reorder). `--merge` changes a qdisc of the same kind in place instead, as
    /// `tc qdisc replace` does: options SPEC does not name keep their old values.
    Apply(ApplyArgs),
    /// Print the root qdisc of an interface, decoded.
    Show(DevArgs),
    /// Remove the root qdisc of an interface (back to the kernel's default).
    Clear(DevArgs),
    /// Restore interfaces that a killed tsload run left impaired (records under /run/tsload).
    Restore,
}

#[derive(Args)]
pub struct DevArgs {
    /// The interface, e.g. eth0 or veth0.
    #[arg(long)]
    dev: String,
    /// Run inside this network namespace (`ip netns` name or path).
    #[arg(long)]
    netns: Option<String>,
}

impl DevArgs {
    fn target(&self) -> Target {
        let t = Target::new(&self.dev);
        match &self.netns {
            Some(ns) => t.in_netns(ns),
            None => t,
        }
    }
}

#[derive(Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    dev: DevArgs,
    /// Fail if a root qdisc is already there (tc's `add`) instead of replacing it.
    #[arg(long, conflicts_with = "merge")]
    add: bool,
    /// Change a root qdisc of the same kind in place (tc's `replace`): the options SPEC
    /// does not name keep their current values. Without it the root becomes exactly SPEC.
    #[arg(long)]
    merge: bool,
    /// Impair the interface that carries the default route (it may cut your own session).
    #[arg(long)]
    allow_default_route: bool,
    /// Print the request instead of sending it.
    #[arg(long)]
    dry_run: bool,
    /// With --dry-run: print the request's exact bytes in hex (interface index 0 unless
    /// the interface exists here).
    #[arg(long)]
    hex: bool,
    /// The impairment in tc's words, e.g. `delay 10ms 2ms loss 0.5%` or
    /// `tbf rate 100mbit burst 32kbit latency 50ms`.
    #[arg(last = true, required = true, value_name = "SPEC")]
    spec: Vec<String>,
}

pub fn cmd_netem(command: NetemCommand) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        match command {
            NetemCommand::Apply(args) => apply(args).await,
            NetemCommand::Show(args) => {
                let target = args.target();
                match tsload_netem::show(&target).await? {
                    None => outln!("{target}: the kernel's default root qdisc"),
                    Some(q) => outln!("{target}: {q}"),
                }
                Ok(ExitCode::SUCCESS)
            }
            NetemCommand::Clear(args) => {
                let target = args.target();
                if tsload_netem::clear(&target).await? {
                    outln!("{target}: root qdisc removed");
                } else {
                    outln!("{target}: nothing to clear (default root qdisc)");
                }
                Ok(ExitCode::SUCCESS)
            }
            NetemCommand::Restore => restore().await,
        }
    })
}

async fn apply(args: ApplyArgs) -> anyhow::Result<ExitCode> {
    let text = args.spec.join(" ");
    let spec: Spec = match text.parse() {
        Ok(s) => s,
        Err(e) => {
            errln!("error: netem spec `{text}`: {e}");
            return Ok(ExitCode::from(crate::exit::EXIT_USAGE));
        }
    };
    let target = args.dev.target();
    let op = if args.add {
        QdiscOp::Add
    } else {
        QdiscOp::Replace
    };
    if args.dry_run {
        // The interface's index and qdiscs, when it exists here (else index 0, none).
        let (ifindex, qdiscs) =
            match tsload_netem::apply::Netlink::open(target.netns.as_deref()).await {
                Ok(nl) => match nl.ifindex(&target.ifname).await {
                    Ok(i) => (i, nl.qdiscs(i).await.unwrap_or_default()),
                    Err(_) => (0, Vec::new()),
                },
                Err(_) => (0, Vec::new()),
            };
        // What apply would send: an exact replace goes under a handle the interface lacks.
        let handle = if op == QdiscOp::Replace && !args.merge {
            tsload_netem::apply::fresh_handle(&qdiscs).unwrap_or(0)
        } else {
            0
        };
        let request = QdiscRequest::root(op, ifindex as i32, handle, &spec, &Psched::read())
            .with_context(|| format!("encoding `{spec}`"))?;
        let bytes = request.to_bytes();
        // tbf and htb name themselves; netem's options do not.
        let shown = spec.to_string();
        let shown = if shown.split_whitespace().next() == Some(spec.kind()) {
            shown
        } else {
            format!("{} {shown}", spec.kind())
        };
        let handle_note = if handle == 0 {
            String::new()
        } else {
            format!(" handle {:x}:", handle >> 16)
        };
        outln!(
            "{}{handle_note} root qdisc of {target} (ifindex {ifindex}): {shown} ({} bytes)",
            op.name(),
            bytes.len()
        );
        if args.hex {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            outln!("{hex}");
        }
        let root = qdiscs
            .iter()
            .find(|q| q.parent == tsload_netem::encode::TC_H_ROOT);
        if op == QdiscOp::Replace
            && tsload_netem::apply::mixes_duplicating_netems(spec.kind(), spec.duplicates(), root)
            && let Some(root) = root
        {
            outln!(
                "note: the root is {root}: a duplicating netem cannot replace another netem or \
                 be replaced by one on kernels since 2025 (EINVAL), so where the kernel refuses, \
                 apply deletes the root and adds {shown}, and puts {root} back if that add fails"
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let options = ApplyOptions {
        op,
        merge: args.merge,
        allow_default_route: args.allow_default_route,
        ..ApplyOptions::default()
    };
    match tsload_netem::apply(&target, &spec, &options).await? {
        Replaced::AsRequested => outln!("{target}: {spec}"),
        Replaced::DeletedAndAdded => outln!(
            "{target}: {spec} (the kernel refused to replace a netem with or by a duplicating \
             one: the root was deleted and this one added)"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

async fn restore() -> anyhow::Result<ExitCode> {
    let records = Guard::pending_records(Path::new(DEFAULT_RECORD_DIR))?;
    if records.is_empty() {
        outln!("nothing to restore: no records under {DEFAULT_RECORD_DIR}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = false;
    for record in records {
        let target = record.target();
        if record.owner_alive() {
            outln!("{target}: still held by a running tsload (pid alive): left alone");
            continue;
        }
        match Guard::restore_from_record(&record).await {
            Ok(outcome) => outln!("{target}: {outcome}"),
            Err(e) => {
                errln!("error: {target}: {e}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
