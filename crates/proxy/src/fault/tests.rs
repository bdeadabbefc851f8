//! The fault tests: the spec grammar and its errors, faults' problems, and the machinery
//! (byte and pattern triggers across chunk splits, fire limits, reset_on_reply, immediate
//! faults and connection filters).

use super::*;

fn parse(spec: &str) -> Fault {
    spec.parse()
        .unwrap_or_else(|e| panic!("`{spec}` does not parse: {e}"))
}

fn error(spec: &str) -> String {
    match spec.parse::<Fault>() {
        Ok(f) => panic!("`{spec}` parsed as {f:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_grammar() {
    assert_eq!(
        parse("reset"),
        Fault::new(FaultTrigger::Immediately, FaultAction::Reset)
    );
    assert_eq!(
        parse("blackhole:immediately"),
        Fault::new(FaultTrigger::Immediately, FaultAction::Blackhole)
    );
    assert_eq!(
        parse("reset:after_bytes=1000,stream=down"),
        Fault::new(
            FaultTrigger::AfterBytes {
                stream: Stream::Down,
                bytes: 1000
            },
            FaultAction::Reset
        )
    );
    assert_eq!(
        parse("stall:after_bytes=4096"),
        Fault::new(
            FaultTrigger::AfterBytes {
                stream: Stream::Up,
                bytes: 4096
            },
            FaultAction::Stall
        )
    );
    assert_eq!(
        parse("reset_after_bytes=1000"),
        parse("reset:after_bytes=1000")
    );
    assert_eq!(
        parse("reset_after_bytes=7,stream=down,max_fires=2"),
        parse("reset:after_bytes=7,stream=down,max_fires=2")
    );
    assert_eq!(parse("stall-after-bytes=9"), parse("stall:after_bytes=9"));
    assert_eq!(
        parse("reset_on_reply_after_pattern=hex:434f,occurrence=2"),
        parse("reset_on_reply:after_pattern=CO,occurrence=2")
    );
    let f = parse(
        "reset_on_reply:after_pattern=COMMIT,stream=up,occurrence=3,connection=2,max_fires=5",
    );
    assert_eq!(
        f,
        Fault {
            connection: Some(2),
            trigger: FaultTrigger::AfterPattern {
                stream: Stream::Up,
                pattern: b"COMMIT".to_vec(),
                occurrence: 3
            },
            action: FaultAction::ResetOnReply,
            max_fires: Some(5),
        }
    );
    assert_eq!(
        parse("reset:after_pattern=hex:00FF0a").trigger,
        FaultTrigger::AfterPattern {
            stream: Stream::Up,
            pattern: vec![0, 0xff, 0x0a],
            occurrence: 1
        }
    );
    // A text pattern keeps its spaces and colons.
    assert_eq!(
        parse("stall:after_pattern=a b:c").trigger,
        FaultTrigger::AfterPattern {
            stream: Stream::Up,
            pattern: b"a b:c".to_vec(),
            occurrence: 1
        }
    );
}

#[test]
fn display_reads_back() {
    for spec in [
        "reset",
        "stall:connection=3",
        "blackhole:after_bytes=0,stream=down,max_fires=1",
        "reset_on_reply:after_pattern=COMMIT,stream=up,occurrence=3",
        "reset:after_pattern=hex:2c00ff,stream=down",
        "reset:after_pattern=hex:6865783a41,stream=up",
        "stall:after_pattern=a b,stream=up",
    ] {
        let f = parse(spec);
        assert_eq!(f.to_string(), spec);
        assert_eq!(parse(&f.to_string()), f);
    }
    // Patterns that cannot be text are written in hex.
    let f = Fault::new(
        FaultTrigger::AfterPattern {
            stream: Stream::Down,
            pattern: b"hex:x".to_vec(),
            occurrence: 1,
        },
        FaultAction::Reset,
    );
    assert_eq!(parse(&f.to_string()), f);
}

#[test]
fn errors_name_the_part_and_what_is_allowed() {
    for (spec, expect) in [
        ("", "empty"),
        (
            "explode",
            "`explode` is not a fault action; allowed: reset, stall",
        ),
        (":after_bytes=1", "the action is missing"),
        (
            "reset_after_lunch=3",
            "`reset_after_lunch=3` is not a fault action",
        ),
        ("explode_after_bytes=3", "`explode` is not a fault action"),
        (
            "reset:after_bytes=abc",
            "`after_bytes=abc`: `abc` is not a byte count",
        ),
        ("reset:after_bytes=-1", "`-1` is not a byte count"),
        ("reset:after_bytes", "`after_bytes` needs a value"),
        (
            "reset:after_bytes=1,after_bytes=2",
            "`after_bytes` is given twice",
        ),
        (
            "reset:after_pattern=",
            "`after_pattern=`: the pattern is empty",
        ),
        ("reset:after_pattern=hex:", "the pattern is empty"),
        ("reset:after_pattern=hex:zz", "`zz` is not hex"),
        ("reset:after_pattern=hex:abc", "`abc` is not hex"),
        (
            "reset:after_pattern=X,occurrence=0",
            "`occurrence=0`: occurrences count from 1",
        ),
        ("reset:occurrence=2", "`occurrence=2` needs after_pattern=P"),
        ("reset:max_fires=0", "`max_fires=0`: 0 would never fire"),
        (
            "reset:stream=down",
            "`stream=down` needs after_bytes=N or after_pattern=P",
        ),
        (
            "reset:after_bytes=1,stream=sideways",
            "`stream=sideways`: allowed: stream=up",
        ),
        ("reset:after_bytes=1,after_pattern=x", "one trigger only"),
        ("reset:immediately,after_bytes=1", "one trigger only"),
        ("reset:immediately=yes", "`immediately` takes no value"),
        (
            "reset:colour=red",
            "`colour=red` is not an option; allowed: after_bytes=N",
        ),
        ("reset:", "an option is empty"),
        ("reset:after_bytes=1,", "an option is empty"),
        ("reset:connection=x", "`x` is not a connection number"),
        (
            "reset:after_bytes=99999999999999999999",
            "is not a byte count",
        ),
    ] {
        let e = error(spec);
        assert!(e.contains(expect), "`{spec}`: expected `{expect}` in: {e}");
    }
}

#[test]
fn problems() {
    let mut f = Fault::new(
        FaultTrigger::AfterPattern {
            stream: Stream::Up,
            pattern: Vec::new(),
            occurrence: 1,
        },
        FaultAction::Reset,
    );
    assert!(f.problem().unwrap().contains("empty"));
    f.trigger = FaultTrigger::AfterPattern {
        stream: Stream::Up,
        pattern: b"x".to_vec(),
        occurrence: 0,
    };
    assert!(f.problem().unwrap().contains("occurrence 0"));
    f.trigger = FaultTrigger::Immediately;
    f.max_fires = Some(0);
    assert!(f.problem().unwrap().contains("max_fires 0"));
    f.max_fires = Some(1);
    assert_eq!(f.problem(), None);
}

/// The offset right after the `occurrence`-th non-overlapping match, the slow way.
fn naive(data: &[u8], pattern: &[u8], occurrence: u64) -> Option<usize> {
    let mut seen = 0;
    let mut i = 0;
    while i + pattern.len() <= data.len() {
        if &data[i..i + pattern.len()] == pattern {
            seen += 1;
            i += pattern.len();
            if seen == occurrence {
                return Some(i);
            }
        } else {
            i += 1;
        }
    }
    None
}

/// Feeds `data` to a watcher in the given chunks; the offset where it fired.
fn fired_at(armed: &Armed, data: &[u8], cuts: &[usize]) -> Option<usize> {
    let mut w = Watcher::new(
        armed,
        Progress::Pattern {
            matched: 0,
            seen: 0,
        },
    );
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&data.len())) {
        match w.scan(&data[start..end]) {
            Scan::Fire(at) => return Some(start + at),
            Scan::End(after) => w.progress = after,
        }
        start = end;
    }
    None
}

#[test]
fn find_byte_finds_the_first() {
    let hay: Vec<u8> = (0..40u8).map(|i| i % 13).collect();
    for start in 0..hay.len() {
        for byte in 0..15u8 {
            let expect = hay[start..].iter().position(|&b| b == byte);
            assert_eq!(find_byte(&hay[start..], byte), expect, "{start} {byte}");
        }
    }
    // Bytes just above the one looked for (borrows) and 0x80 do not confuse it.
    assert_eq!(find_byte(&[0x81, 0x01, 0x80, 0x00, 0x01], 0x00), Some(3));
    assert_eq!(find_byte(&[2, 2, 2, 2, 2, 2, 2, 1, 2, 1], 1), Some(7));
    assert_eq!(find_byte(&[0xff; 17], 0xfe), None);
}

#[test]
fn byte_counts_fire_exactly() {
    let armed = Armed::new(Fault::new(
        FaultTrigger::AfterBytes {
            stream: Stream::Down,
            bytes: 10,
        },
        FaultAction::Reset,
    ));
    let w = Watcher::new(&armed, Progress::Bytes { left: 10 });
    assert_eq!(w.scan(&[0; 9]), Scan::End(Progress::Bytes { left: 1 }));
    assert_eq!(w.scan(&[0; 10]), Scan::Fire(10));
    assert_eq!(w.scan(&[0; 11]), Scan::Fire(10));
    let w = Watcher::new(&armed, Progress::Bytes { left: u64::MAX });
    assert_eq!(
        w.scan(&[0; 5]),
        Scan::End(Progress::Bytes { left: u64::MAX - 5 })
    );
}

#[test]
fn patterns_match_across_every_chunk_split() {
    let cases: [(&[u8], &[u8]); 6] = [
        (b"xxCOMMITyyCOMCOMMITzzCOMMIT", b"COMMIT"),
        (b"aaaaaaa", b"aa"),
        (b"abababcabababc", b"ababc"),
        (b"aabaabaaab", b"aab"),
        (b"\0\0\x01\0\0\x01", b"\0\x01"),
        (b"no match here", b"zz"),
    ];
    for (data, pattern) in cases {
        for occurrence in 1..=4 {
            let armed = Armed::new(Fault::new(
                FaultTrigger::AfterPattern {
                    stream: Stream::Up,
                    pattern: pattern.to_vec(),
                    occurrence,
                },
                FaultAction::Reset,
            ));
            let expect = naive(data, pattern, occurrence);
            assert_eq!(fired_at(&armed, data, &[]), expect);
            for a in 0..=data.len() {
                assert_eq!(fired_at(&armed, data, &[a]), expect, "cut at {a}");
                for b in a..=data.len() {
                    assert_eq!(fired_at(&armed, data, &[a, b]), expect, "cuts {a} {b}");
                }
            }
            // One byte at a time.
            let cuts: Vec<usize> = (1..data.len()).collect();
            assert_eq!(fired_at(&armed, data, &cuts), expect);
        }
    }
}

#[test]
fn the_earliest_trigger_fires_and_max_fires_holds() {
    let total = AtomicU64::new(0);
    let faults = [
        Armed::new(Fault::new(
            FaultTrigger::AfterBytes {
                stream: Stream::Up,
                bytes: 10,
            },
            FaultAction::Stall,
        )),
        Armed::new(Fault {
            max_fires: Some(1),
            ..Fault::new(
                FaultTrigger::AfterPattern {
                    stream: Stream::Up,
                    pattern: b"x".to_vec(),
                    occurrence: 1,
                },
                FaultAction::Reset,
            )
        }),
    ];
    for (round, expect) in [
        (0, Step::Fire(4, FaultAction::Reset)),
        (1, Step::Fire(10, FaultAction::Stall)),
    ] {
        let Plan::Watch { up, down, .. } = plan(&faults, round, &total) else {
            panic!("not watched");
        };
        assert!(down.is_empty());
        let ctl = Ctl::default();
        let mut watch = Watch::new(Stream::Up, &ctl, up, &total);
        assert_eq!(watch.step(b"abcxdefghijkl"), expect, "round {round}");
        // Once fired, the lane waits for the connection to be taken over.
        assert_eq!(watch.step(b"more"), Step::Park);
    }
    assert_eq!((faults[0].fires(), faults[1].fires()), (1, 1));
    assert_eq!(total.load(Ordering::Relaxed), 2);
}

#[test]
fn reset_on_reply_lets_the_request_through_and_discards_the_answer() {
    let total = AtomicU64::new(0);
    let faults = [Armed::new(Fault::new(
        FaultTrigger::AfterPattern {
            stream: Stream::Up,
            pattern: b"COMMIT".to_vec(),
            occurrence: 1,
        },
        FaultAction::ResetOnReply,
    ))];
    let Plan::Watch { up, down, .. } = plan(&faults, 0, &total) else {
        panic!("not watched");
    };
    let ctl = Ctl::default();
    let mut up = Watch::new(Stream::Up, &ctl, up, &total);
    let mut down = Watch::new(Stream::Down, &ctl, down, &total);
    assert_eq!(down.step(b"ok"), Step::Forward(2));
    assert!(!down.reply_due());
    assert_eq!(
        up.step(b"BEGIN;COMMIT;\n"),
        Step::Fire(12, FaultAction::ResetOnReply)
    );
    assert_eq!(up.step(b";\n"), Step::Forward(2));
    assert_eq!(down.step(b"ok"), Step::Discard);
    assert!(down.reply_due());
    assert!(!up.reply_due());
}

#[test]
fn immediate_faults_and_connection_filters() {
    let total = AtomicU64::new(0);
    let faults = [Armed::new(Fault {
        connection: Some(1),
        max_fires: Some(1),
        ..Fault::new(FaultTrigger::Immediately, FaultAction::Stall)
    })];
    assert!(matches!(plan(&faults, 0, &total), Plan::Plain));
    assert!(matches!(
        plan(&faults, 1, &total),
        Plan::Act(FaultAction::Stall)
    ));
    // Spent.
    assert!(matches!(plan(&faults, 1, &total), Plan::Plain));
    let faults = [Armed::new(Fault::new(
        FaultTrigger::AfterBytes {
            stream: Stream::Down,
            bytes: 0,
        },
        FaultAction::ResetOnReply,
    ))];
    let Plan::Watch {
        reply_fired: true, ..
    } = plan(&faults, 5, &total)
    else {
        panic!("not fired at once");
    };
    assert_eq!(total.load(Ordering::Relaxed), 2);
}
