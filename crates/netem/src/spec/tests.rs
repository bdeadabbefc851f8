//! Tests of the spec grammar: times, sizes and percents as tc reads them, the grammar
//! parsed and printed back, and bad specs naming the token and what is allowed.

use super::*;

fn netem(text: &str) -> Netem {
    match Spec::parse(text).unwrap() {
        Spec::Netem(n) => n,
        other => panic!("not netem: {other:?}"),
    }
}

#[test]
fn times_follow_get_time() {
    assert_eq!(Time::parse("delay", "10ms").unwrap(), Time(10_000));
    assert_eq!(Time::parse("delay", "2.5ms").unwrap(), Time(2_500));
    assert_eq!(Time::parse("delay", "34us").unwrap(), Time(34));
    assert_eq!(Time::parse("delay", "5s").unwrap(), Time(5_000_000));
    assert_eq!(Time::parse("delay", "1.5").unwrap(), Time(1)); // truncated, as tc
    assert_eq!(Time::parse("delay", "7MSEC").unwrap(), Time(7_000));
    assert!(Time::parse("delay", "5m").is_err());
    assert!(Time::parse("delay", "ms").is_err());
    assert!(Time::parse("delay", "5000s").is_err());
}

#[test]
fn rates_follow_get_rate64() {
    assert_eq!(Rate::parse("rate", "100mbit").unwrap(), Rate(12_500_000));
    assert_eq!(Rate::parse("rate", "1gbit").unwrap(), Rate(125_000_000));
    assert_eq!(Rate::parse("rate", "32kbit").unwrap(), Rate(4_000));
    assert_eq!(Rate::parse("rate", "8000").unwrap(), Rate(1_000)); // bits
    assert_eq!(Rate::parse("rate", "1kbps").unwrap(), Rate(1_000)); // kilobytes
    assert_eq!(Rate::parse("rate", "1KiBps").unwrap(), Rate(1_024));
    assert_eq!(Rate::parse("rate", "1mibit").unwrap(), Rate(131_072));
    assert_eq!(Rate::parse("rate", "10Bps").unwrap(), Rate(10));
    assert_eq!(Rate::parse("rate", "1.5mbit").unwrap(), Rate(187_500));
    assert!(Rate::parse("rate", "0mbit").is_err());
    assert!(Rate::parse("rate", "5furlongs").is_err());
}

#[test]
fn sizes_follow_get_size() {
    assert_eq!(Size::parse("burst", "32kbit").unwrap(), Size(4096));
    assert_eq!(Size::parse("burst", "4kb").unwrap(), Size(4096));
    assert_eq!(Size::parse("burst", "1500").unwrap(), Size(1500));
    assert_eq!(Size::parse("burst", "1m").unwrap(), Size(1 << 20));
    assert!(Size::parse("burst", "4kb/8").is_err());
}

#[test]
fn percents_follow_set_percent() {
    assert_eq!(Percent::parse("loss", "0.5%").unwrap(), Percent(21_474_836));
    assert_eq!(Percent::parse("loss", "1%").unwrap(), Percent(42_949_673));
    assert_eq!(
        Percent::parse("loss", "25").unwrap(),
        Percent(1_073_741_824)
    );
    assert_eq!(Percent::parse("loss", "100%").unwrap(), Percent(u32::MAX));
    assert!(Percent::parse("loss", "101%").is_err());
    assert!(Percent::parse("loss", "5%%").is_err());
    for p in ["0.5%", "25%", "0.1%", "33.333%", "0.001%", "99.99%", "100%"] {
        let v = Percent::parse("loss", p).unwrap();
        assert_eq!(v.to_string(), p);
    }
    // Any raw value prints to a string that parses back to it.
    for raw in [1u32, 7, 12_884_902, 2_147_483_647, u32::MAX - 1] {
        let text = Percent(raw).to_string();
        assert_eq!(
            Percent::parse("loss", &text).unwrap(),
            Percent(raw),
            "{text}"
        );
    }
}

#[test]
fn parses_the_grammar() {
    let n = netem(
        "delay 10ms 2ms 25% distribution normal loss 0.3% 25% duplicate 1% reorder 10% 50% gap 5 corrupt 0.1% rate 1gbit limit 5000",
    );
    let d = n.delay.unwrap();
    assert_eq!(d.latency, Time(10_000));
    assert_eq!(d.jitter, Some(Time(2_000)));
    assert_eq!(d.correlation, Percent::from_percent(25.0));
    assert_eq!(d.distribution, Some(Distribution::Normal));
    assert_eq!(n.loss.unwrap().correlation, Percent::from_percent(25.0));
    assert_eq!(n.reorder.unwrap().gap, 5);
    assert_eq!(n.rate, Some(Rate(125_000_000)));
    assert_eq!(n.limit, 5000);
    assert_eq!(netem("netem delay 1ms"), netem("latency 1ms"));
    assert_eq!(netem("loss random 1%"), netem("drop 1%"));
    assert_eq!(
        Spec::parse("tbf rate 100mbit burst 32kbit latency 50ms").unwrap(),
        Spec::Tbf(Tbf {
            rate: Rate(12_500_000),
            burst: Size(4096),
            limit: TbfLimit::Latency(Time(50_000)),
        })
    );
    assert_eq!(
        Spec::parse("htb default 10").unwrap(),
        Spec::Htb(Htb {
            default_class: 0x10,
            r2q: 10
        })
    );
}

#[test]
fn prints_and_parses_back() {
    for text in [
        "delay 10ms",
        "delay 10ms 2ms",
        "delay 10ms 2ms 25%",
        "delay 100ms 20ms distribution normal",
        "delay 100ms 20ms 5% distribution paretonormal",
        "delay 34us",
        "delay 5s",
        "delay 1500us 250us",
        "loss 0.5%",
        "loss 0.3% 25%",
        "delay 1ms 1ms 5% duplicate 1% 10%",
        "loss 0% 0% duplicate 1% 10%",
        "corrupt 0.1%",
        "delay 10ms reorder 25% 50%",
        "delay 10ms reorder 25% gap 3",
        "rate 100mbit",
        "rate 1500kbit",
        "rate 12344bit",
        "delay 1ms limit 10000",
        "delay 10ms 2ms 25% loss 0.5% duplicate 1% reorder 10% corrupt 0.1% rate 1gbit limit 5000",
        "netem",
        "tbf rate 100mbit burst 4kb latency 50ms",
        "tbf rate 8mbit burst 1500b limit 64kb",
        "htb",
        "htb default 10",
        "htb default 1f r2q 5",
    ] {
        let spec = Spec::parse(text).unwrap();
        assert_eq!(spec.to_string(), text, "printing {text:?}");
        assert_eq!(Spec::parse(&spec.to_string()).unwrap(), spec);
    }
    // Other spellings print canonically, and the canonical text parses to the same.
    for (text, canonical) in [
        ("netem delay 10ms", "delay 10ms"),
        ("delay 10ms distribution uniform", "delay 10ms"),
        ("delay 0.5s 1000us 0%", "delay 500ms 1ms"),
        ("loss random 1% 0%", "loss 1%"),
        ("loss 0%", "netem"),
        // tc 6.1 sends a duplicate correlation only beside another correlation.
        ("duplicate 1% 10%", "duplicate 1%"),
        ("duplicate 1% 10% delay 1ms", "delay 1ms duplicate 1%"),
        (
            "duplicate 1% 10% corrupt 1% 0%",
            "loss 0% 0% duplicate 1% 10% corrupt 1%",
        ),
        (
            "duplicate 1% 10% reorder 1% 5% delay 1ms",
            "delay 1ms duplicate 1% 10% reorder 1% 5%",
        ),
        ("delay 10ms reorder 5% gap 1", "delay 10ms reorder 5%"),
        ("limit 1000 delay 2ms", "delay 2ms"),
        (
            "tbf rate 100Mbit buffer 32kbit latency 50ms",
            "tbf rate 100mbit burst 4kb latency 50ms",
        ),
        ("rate 1kbps", "rate 8kbit"),
        ("rate 12345bit", "rate 12344bit"), // whole bytes per second, as tc
    ] {
        let spec = Spec::parse(text).unwrap();
        assert_eq!(spec.to_string(), canonical, "printing {text:?}");
        assert_eq!(Spec::parse(canonical).unwrap(), spec);
    }
}

#[test]
fn bad_specs_name_the_token_and_what_is_allowed() {
    let err = |t: &str| Spec::parse(t).unwrap_err().to_string();
    assert!(err("").contains("empty impairment spec"));
    let e = err("delay 10ms jitterbug 5ms");
    assert!(
        e.contains("\"jitterbug\"") && e.contains("allowed: delay"),
        "{e}"
    );
    let e = err("delay 10xs");
    assert!(
        e.contains("\"10xs\"") && e.contains("`delay`") && e.contains("10ms"),
        "{e}"
    );
    let e = err("loss 150%");
    assert!(e.contains("\"150%\"") && e.contains("0 to 100"), "{e}");
    let e = err("rate 100mbits");
    assert!(e.contains("\"100mbits\"") && e.contains("kbit"), "{e}");
    let e = err("delay");
    assert!(e.contains("`delay` needs a value"), "{e}");
    let e = err("loss 1% loss 2%");
    assert!(e.contains("given twice"), "{e}");
    let e = err("reorder 25%");
    assert!(e.contains("reordering needs a delay"), "{e}");
    let e = err("delay 10ms gap 5");
    assert!(e.contains("`gap` needs a reorder"), "{e}");
    let e = err("delay 10ms distribution normal");
    assert!(e.contains("needs a delay and a jitter"), "{e}");
    let e = err("delay 10ms 2ms distribution gaussian");
    assert!(
        e.contains("\"gaussian\"") && e.contains("paretonormal"),
        "{e}"
    );
    let e = err("tbf rate 1mbit");
    assert!(e.contains("`burst`") && e.contains("`latency`"), "{e}");
    let e = err("tbf rate 1mbit burst 10kb latency 5ms limit 10kb");
    assert!(e.contains("not both"), "{e}");
    let e = err("tbf rate 1mbit burst 10kb latency 5ms peakrate 2mbit");
    assert!(
        e.contains("\"peakrate\"") && e.contains("allowed: rate, burst"),
        "{e}"
    );
    let e = err("htb default zz");
    assert!(e.contains("\"zz\"") && e.contains("hexadecimal"), "{e}");
    let e = err("delay 10ms tbf");
    assert!(e.contains("must come first"), "{e}");
    let e = err("loss state 1%");
    assert!(e.contains("not supported"), "{e}");
    let e = err("rate 1mbit 20");
    assert!(e.contains("not supported"), "{e}");
}
