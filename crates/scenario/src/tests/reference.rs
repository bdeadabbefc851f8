//! The key reference against the parser: every key serde reads is listed, each stated
//! default and listed choice is what the parser takes, and the kinds' own keys.

use super::*;

/// docs/keys.md is the sections' own definitions rendered; when it is not, the test
/// writes the new rendering (commit it) and fails.
/// The reference is the full build's (this crate's tests register every kind).
#[test]
fn each_documented_default_is_what_the_parser_reads() {
    // The parser reads a left-out key's default from its definition, so each one must
    // read as TOML; a key without one has none there.
    for section in sections::SECTIONS.iter().filter(|s| !s.name.is_empty()) {
        for key in section.keys.iter().filter(|k| k.ty != "table") {
            let full = format!("{}.{}", section.name, key.name);
            let read = sections::documented_default(&full);
            match key.default {
                sections::KeyDefault::Toml(text) if section.name != "target" => {
                    assert!(read.is_some(), "{full}: {text} does not read as TOML")
                }
                _ => assert_eq!(read, None, "{full}"),
            }
        }
    }
    // And the value read is the value documented: a scenario that sets nothing gets the
    // defaults the reference shows.
    let plan = parse("s.toml", "[workload]\nkind = \"custom\"\n", &[]).unwrap();
    let WorkloadPlan::Custom { cfg, .. } = &plan.workload else {
        panic!("a custom workload")
    };
    assert_eq!(
        (cfg.seed, cfg.stable.as_str(), cfg.childtable_count),
        (123, "meters", 10_000)
    );
    assert_eq!(plan.load.batch, 1000);
}

#[test]
fn keys_reference_is_rendered_from_the_sections() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/keys.md");
    let rendered = keys_markdown();
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    if on_disk != rendered {
        // The reference itself, not an output of a run: written as rendered.
        #[allow(clippy::disallowed_methods)]
        std::fs::write(path, &rendered).expect("write docs/keys.md");
        panic!("docs/keys.md was not the sections' rendering; rewrote it: review and commit");
    }
}

/// serde names every key a section reads when it refuses an unknown one: they are
/// the keys the definitions list.
#[test]
fn the_sections_list_every_key_serde_reads() {
    // `[target]`'s keys are its kinds' own, not serde's: `unknown_target_keys_...` below.
    for section in sections::SECTIONS.iter().filter(|s| s.name != "target") {
        let text = if section.name.is_empty() {
            "zz_not_a_key = 1\n".to_string()
        } else {
            format!("[{}]\nzz_not_a_key = 1\n", section.name)
        };
        let e = err(&text);
        let mut read: Vec<&str> = e
            .message
            .split_once("expected")
            .map(|(_, rest)| rest.split(['(', ';']).next().unwrap())
            .map(|list| list.split('`').skip(1).step_by(2).collect())
            .unwrap_or_default();
        let mut listed: Vec<&str> = section.keys.iter().map(|k| k.name).collect();
        read.sort_unstable();
        listed.sort_unstable();
        assert_eq!(listed, read, "section [{}]", section.name);
    }
}

/// A `[target]` key that no kind reads is refused at its line, with the nearest key; one
/// that another kind reads names that kind and the chosen kind's keys.
#[test]
fn unknown_target_keys_are_refused_by_line_with_the_nearest_key() {
    let e = err("[target]\nkind = \"postgres\"\nurll = \"postgres://h/db\"\n");
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(3), Some("target.urll")),
        "{e}"
    );
    assert!(
        e.message.contains("unknown key `urll`") && e.message.contains("did you mean `url`"),
        "{e}"
    );
    let e = err("[target]\nkind = \"postgres\"\n\nbucket = \"b\"\n");
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(4), Some("target.bucket")),
        "{e}"
    );
    assert!(
        e.message
            .contains("not a setting of target kind \"postgres\" (only of influx v2)")
            && e.message.contains("its settings are: url, delivery,"),
        "{e}"
    );
    let e = err("[target]\nkind = \"influx\"\napi = \"v2\"\ndb = \"x\"\n");
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(4), Some("target.db")),
        "{e}"
    );
    assert!(
        e.message.contains(
            "not a setting of target kind \"influx\" with api \"v2\" (only of influx v1)"
        ),
        "{e}"
    );
    let e = err("[target]\nkind = 3\n");
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(2), Some("target.kind")),
        "{e}"
    );
    assert!(e.message.contains("expected a string"), "{e}");
}

/// The `--set`s that make a scenario of `kind` of `section` (`None`: the section
/// has no kinds), complete enough to parse.
fn scenario_of(section: &str, kind: Option<&str>, key: &str) -> Vec<String> {
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match (section, kind) {
        ("workload", Some("file")) => set(&["workload.kind=\"file\"", "workload.path=\"x.lp\""]),
        ("workload", Some(k)) => vec![format!("workload.kind=\"{k}\"")],
        ("target", Some("influx v1")) => set(&["target.kind=\"influx\""]),
        ("target", Some("influx v2")) => set(&["target.kind=\"influx\"", "target.api=\"v2\""]),
        ("target", Some(k)) => vec![format!("target.kind=\"{k}\"")],
        ("network", Some("proxy")) => {
            set(&["network.backend=\"proxy\"", "target.kind=\"postgres\""])
        }
        ("network", Some(_)) => set(&[
            "network.backend=\"netem\"",
            "network.dev=\"veth0\"",
            "target.kind=\"postgres\"",
        ]),
        ("query", Some(k)) => {
            let target = match key {
                "dialect" => "influx",
                "mysql_storage_engine" => "mysql",
                _ => "postgres",
            };
            vec![
                format!("query.kind=\"{k}\""),
                format!("target.kind=\"{target}\""),
            ]
        }
        ("monitor", _) => set(&["monitor.pid=1"]),
        _ => Vec::new(),
    }
}

/// The kinds of `section` under which `key` is tried (`None`: the section has no kinds,
/// or the key picks the kind); TDengine only with its feature.
fn kinds_reading(
    section: &sections::SectionDoc,
    key: &sections::KeyDoc,
) -> Vec<Option<&'static str>> {
    if key.name == section.kind_key || section.kinds.is_empty() {
        vec![None]
    } else if key.name == "api" {
        // `api` picks influx's set of keys: its default is the v1 set.
        vec![Some("influx v1")]
    } else {
        // This row's kinds: a key with another type or default under another kind
        // (`precision`) has a row of its own.
        let kinds = if key.kinds.is_empty() {
            section.kinds
        } else {
            key.kinds
        };
        kinds.iter().map(|k| Some(*k)).collect()
    }
}

/// `section.key` as `--set` spells it (a top-level key alone).
fn dotted(section: &sections::SectionDoc, key: &sections::KeyDoc) -> String {
    if section.name.is_empty() {
        key.name.to_string()
    } else {
        format!("{}.{}", section.name, key.name)
    }
}

/// Every default the reference states as a value is the parser's: setting the key to
/// it gives the same plan as leaving it out, for each kind that reads the key.
#[test]
fn stated_defaults_are_the_parsers_defaults() {
    let mut checked = 0;
    for section in sections::SECTIONS.iter() {
        for key in section.keys {
            let sections::KeyDefault::Toml(value) = key.default else {
                continue;
            };
            let (kinds, dotted) = (kinds_reading(section, key), dotted(section, key));
            for kind in kinds {
                let base = scenario_of(section.name, kind, key.name);
                let without = parse("s.toml", "", &base)
                    .unwrap_or_else(|e| panic!("{dotted} for {kind:?}: the base scenario: {e}"));
                let mut with = base.clone();
                with.push(format!("{dotted}={value}"));
                let mut with = parse("s.toml", "", &with)
                    .unwrap_or_else(|e| panic!("{dotted} = {value} for {kind:?}: {e}"));
                // Which keys `--set` gave differs by the one stated; the plans may not.
                with.set_keys.pop();
                assert_eq!(
                    with, without,
                    "{dotted} = {value} for {kind:?} is not the same as leaving it out"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 80, "only {checked} defaults checked");
}

/// The values a choice key's type label lists (`` `a` | `b` ``), or `None` for a type
/// that is not a list of choices.
fn listed_choices(ty: &str) -> Option<Vec<&str>> {
    ty.split(" | ")
        .map(|v| v.strip_prefix('`')?.strip_suffix('`'))
        .collect::<Option<Vec<_>>>()
        .filter(|v| v.len() > 1 && v.iter().all(|w| !w.contains('`')))
}

/// Each choice key's allowed values are written twice: in its type label in the section's
/// definition (what `tsload keys` and docs/keys.md show) and in the parser's `choice`
/// call. The parser must accept every listed value and list exactly those when refusing
/// another.
#[test]
fn choice_keys_accept_exactly_the_values_their_reference_lists() {
    let mut checked = 0;
    for section in sections::SECTIONS.iter() {
        for key in section.keys {
            let Some(listed) = listed_choices(key.ty) else {
                continue;
            };
            let (kinds, dotted) = (kinds_reading(section, key), dotted(section, key));
            for kind in kinds {
                let base = scenario_of(section.name, kind, key.name);
                // Another key's value (the rest of the scenario a value needs) may still
                // be missing, and is said under this key ("mode \"query\" needs a
                // [query] section"); the value itself must not be refused as a choice.
                for value in &listed {
                    let mut with = base.clone();
                    with.retain(|s| !s.starts_with(&format!("{dotted}=")));
                    with.push(format!("{dotted}=\"{value}\""));
                    if let Err(e) = parse("s.toml", "", &with) {
                        assert!(
                            !(e.key.as_deref() == Some(dotted.as_str())
                                && e.message.contains("allowed")),
                            "{dotted} = {value:?} ({kind:?}) is listed but refused: {e}"
                        );
                    }
                }
                let mut with = base.clone();
                with.retain(|s| !s.starts_with(&format!("{dotted}=")));
                with.push(format!("{dotted}=\"not-a-choice\""));
                let e = parse("s.toml", "", &with)
                    .expect_err(&format!("{dotted} = \"not-a-choice\" ({kind:?}) was taken"));
                assert_eq!(e.key.as_deref(), Some(dotted.as_str()), "{e}");
                let allowed = e
                    .message
                    .split_once("allowed: ")
                    .map(|(_, rest)| rest)
                    .unwrap_or_else(|| panic!("{dotted}: no `allowed:` in {e}"));
                let list = allowed.split(['(', ';', '\n']).next().unwrap_or_default();
                let mut said: Vec<&str> = list
                    .split(',')
                    .map(|w| w.trim().trim_matches(|c: char| c == '"' || c == '.'))
                    .collect();
                let mut want = listed.clone();
                said.sort_unstable();
                want.sort_unstable();
                assert_eq!(said, want, "{dotted} ({kind:?}): the parser said: {e}");
                checked += 1;
            }
        }
    }
    assert!(checked > 25, "only {checked} choice keys checked");
}

/// What the TDengine sink would refuse when the run starts is refused when the scenario
/// is read: `mode = "stmt2"` (with the mode to use instead), a DSN naming another
/// database than `database`.
#[test]
fn tdengine_settings_the_sink_refuses_are_refused_at_validation() {
    let base = |extra: &[&str]| {
        let mut v = vec![
            "target.kind=\"tdengine\"".to_string(),
            "target.url=\"ws://127.0.0.1:6041\"".to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    parse("s.toml", "", &base(&[])).unwrap();
    let e = parse("s.toml", "", &base(&["target.mode=\"stmt2\""])).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("target.mode"), "{e}");
    assert!(e.message.contains("use mode = \"stmt\""), "{e}");
    let e = parse(
        "s.toml",
        "",
        &[
            "target.kind=\"tdengine\"".to_string(),
            "target.url=\"ws://127.0.0.1:6041/one\"".to_string(),
            "target.database=\"two\"".to_string(),
        ],
    )
    .unwrap_err();
    assert!(
        e.message.contains("\"one\"") && e.message.contains("\"two\""),
        "{e}"
    );
}

/// The OLTP kinds read sysbench's options as tsload-oltp lists them, plus `prepare`
/// and `loaders`.
#[test]
fn oltp_keys_are_the_oltp_crates_options() {
    for kind in tsload_oltp::OltpKind::ALL {
        let name = kind.to_string();
        let mut from_sections: Vec<&str> = sections::QUERY
            .keys_of(&name)
            .into_iter()
            .filter(|k| !sections::QUERY.keys_of("tsbs").contains(k))
            .filter(|k| !["prepare", "loaders"].contains(k))
            .collect();
        let mut options: Vec<&str> = kind
            .options()
            .iter()
            .copied()
            .filter(|o| *o != "seed")
            .collect();
        from_sections.sort_unstable();
        options.sort_unstable();
        assert_eq!(from_sections, options, "{name}");
    }
}

#[test]
fn the_sweep_short_names_set_their_full_keys() {
    for (short, full) in SWEEP_SHORT_KEYS {
        let text = format!("[sweep]\n{short} = [1, 2]\n");
        let p = parse("s.toml", &text, &[]).unwrap();
        assert_eq!(p.sweep.len(), 1);
        assert_eq!(
            (p.sweep[0].key.as_str(), p.sweep[0].full_key.as_str()),
            (*short, *full)
        );
    }
}
