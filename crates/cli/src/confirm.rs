//! The confirmation asked before a run drops tables on a server that is not this machine
//! (`target.drop_existing = true` against a host other than loopback): on a terminal a
//! y/N question, elsewhere `--yes` or a refusal.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use tsload_scenario::plan::Plan;

/// The host whose data `plan` drops, when that host is not this machine (the host its
/// kind connects to: [`tsload_target::Target::address`]).
pub fn remote_drop_host(plan: &Plan) -> Option<String> {
    if !plan.target.drops_existing() {
        return None;
    }
    let host = plan.target.address()?.host;
    (!is_loopback(&host)).then_some(host)
}

/// Loopback by its spelling alone (no name lookup): `localhost`, 127.0.0.0/8, ::1.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback())
}

/// Asks before dropping tables on another machine, unless `yes`. `Err` says why the run
/// must not start.
pub fn confirm_drop(plan: &Plan, yes: bool) -> Result<(), String> {
    confirm_drops([plan], yes)
}

/// [`confirm_drop`] for several plans (a sweep's points): every host they would drop
/// tables on, asked about once.
pub fn confirm_drops<'a>(
    plans: impl IntoIterator<Item = &'a Plan>,
    yes: bool,
) -> Result<(), String> {
    let mut hosts: Vec<String> = plans.into_iter().filter_map(remote_drop_host).collect();
    hosts.sort();
    hosts.dedup();
    if hosts.is_empty() || yes {
        return Ok(());
    }
    let host = hosts.join(", ");
    let what = format!(
        "target.drop_existing = true drops the tables this scenario writes on {host}, which \
         is not this machine"
    );
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(format!(
            "{what}; pass --yes to confirm (there is no terminal to ask)"
        ));
    }
    err!("{what}. Drop them? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    stdin
        .lock()
        .read_line(&mut answer)
        .map_err(|e| format!("reading the answer: {e}"))?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        Err("not confirmed: nothing was dropped".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_drop_on_another_host_needs_confirming() {
        crate::install_kinds();
        let plan = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            tsload_scenario::parse("s.toml", "", &sets).unwrap()
        };
        let pg = "target.kind=postgres";
        for (url, drop, remote) in [
            ("postgres://u@127.0.0.1:5432/d", true, None),
            ("postgres://u@localhost/d", true, None),
            ("postgres://u@[::1]:5432/d", true, None),
            ("postgres://u@db.example:5432/d", true, Some("db.example")),
            ("postgres://u@10.1.2.3/d", true, Some("10.1.2.3")),
            ("postgres://u@10.1.2.3/d", false, None),
        ] {
            let p = plan(&[
                pg,
                &format!("target.url=\"{url}\""),
                &format!("target.drop_existing={drop}"),
            ]);
            assert_eq!(remote_drop_host(&p).as_deref(), remote, "{url} {drop}");
            assert_eq!(confirm_drop(&p, true), Ok(()));
        }
        let p = plan(&["target.kind=sqlite", "target.drop_existing=true"]);
        assert_eq!(remote_drop_host(&p), None);
        // A host given as a parameter counts, before the URL's own (sqlx connects to
        // it); a socket directory is this machine.
        for (url, remote) in [
            (
                "postgres://u@localhost/d?host=db.example",
                Some("db.example"),
            ),
            ("postgres://u@db.example/d?host=/var/run/postgresql", None),
        ] {
            let p = plan(&[
                pg,
                &format!("target.url=\"{url}\""),
                "target.drop_existing=true",
            ]);
            assert_eq!(remote_drop_host(&p).as_deref(), remote, "{url}");
        }
        // A sweep's points: every remote host counts, and --yes confirms them all.
        let a = plan(&[
            pg,
            "target.url=\"postgres://u@10.0.0.1/d\"",
            "target.drop_existing=true",
        ]);
        let b = plan(&[
            pg,
            "target.url=\"postgres://u@10.0.0.2/d\"",
            "target.drop_existing=true",
        ]);
        let local = plan(&[
            pg,
            "target.url=\"postgres://u@127.0.0.1/d\"",
            "target.drop_existing=true",
        ]);
        assert_eq!(confirm_drops([&local, &a, &b], true), Ok(()));
        assert_eq!(confirm_drops([&local], false), Ok(()));
    }
}
