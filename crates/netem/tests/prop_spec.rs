//! Property tests of the spec grammar and the qdisc encoding: no input may panic, and
//! every spec that parses encodes, decodes back to an equal spec (tbf: to one that
//! encodes to the same bytes, since decode picks the shortest of equivalent limits) and
//! prints to text that parses back equal.
//!
//! Budgets are fixed (`cases`) so that each property takes well under a few seconds in
//! the debug build; proptest prints the shrunk (minimal) failing input.

use proptest::prelude::*;
use proptest::test_runner::Config;
use tsload_netem::encode::{
    QdiscOp, QdiscRequest, decode_options, decode_tc_message, dumped_options_for_request,
    encode_options, parse_ext_ack,
};
use tsload_netem::spec::{
    Chance, Delay, Distribution, Htb, Netem, Percent, Rate, Reorder, Size, Spec, Tbf, TbfLimit,
    Time,
};
use tsload_netem::{Psched, SpecError};

fn config(cases: u32) -> Config {
    Config {
        cases,
        // Shrinking stays bounded, so a failure reports quickly.
        max_shrink_iters: 4096,
        ..Config::default()
    }
}

/// The words of the grammar (all three kinds, and the ones refused with a message).
const WORDS: &[&str] = &[
    "netem",
    "tbf",
    "htb",
    "delay",
    "latency",
    "distribution",
    "uniform",
    "normal",
    "pareto",
    "paretonormal",
    "loss",
    "drop",
    "random",
    "state",
    "gemodel",
    "duplicate",
    "reorder",
    "gap",
    "corrupt",
    "rate",
    "limit",
    "burst",
    "buffer",
    "maxburst",
    "default",
    "r2q",
    "ecn",
    "slot",
];

/// Value-like words: numbers with and without units, at and past every bound.
fn value_word() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        (0u64..5000).prop_map(|n| n.to_string()),
        any::<u32>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        (0.0f64..200.0).prop_map(|f| format!("{f}")),
        Just("1e400".to_string()),
        Just("1e-400".to_string()),
        Just(".5".to_string()),
        Just("5.".to_string()),
        Just("-1".to_string()),
        Just("+1".to_string()),
        Just("0x10".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("4294967296".to_string()),
        Just("18446744073709551616".to_string()),
        Just("2e3".to_string()),
        Just("1E+2".to_string()),
        Just("1e".to_string()),
    ];
    let unit = prop_oneof![
        Just(""),
        Just("%"),
        Just("%%"),
        Just("ms"),
        Just("us"),
        Just("s"),
        Just("sec"),
        Just("usecs"),
        Just("MSEC"),
        Just("bit"),
        Just("kbit"),
        Just("mbit"),
        Just("gbit"),
        Just("tbit"),
        Just("tibps"),
        Just("bps"),
        Just("kbps"),
        Just("b"),
        Just("k"),
        Just("kb"),
        Just("mb"),
        Just("gb"),
        Just("/8"),
        Just("x"),
        Just("é"),
    ];
    (number, unit).prop_map(|(n, u)| format!("{n}{u}"))
}

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(WORDS).prop_map(str::to_string),
        3 => value_word(),
        1 => "[a-f0-9]{1,9}",
        1 => "\\PC{0,6}",
    ]
}

/// Parses, and for a spec that parses: encodes (which may refuse, never panic), decodes
/// what was encoded, and checks printing and parsing back.
fn check_parsed(text: &str) -> Result<(), TestCaseError> {
    let Ok(spec) = Spec::parse(text) else {
        return Ok(());
    };
    check_spec(&spec)
}

fn check_spec(spec: &Spec) -> Result<(), TestCaseError> {
    let psched = Psched::KERNEL;
    // Printing gives a spec that parses back equal.
    let printed = spec.to_string();
    let reparsed = Spec::parse(&printed);
    prop_assert_eq!(
        reparsed.as_ref().ok(),
        Some(spec),
        "printed as {:?}",
        printed
    );

    let Ok(options) = encode_options(spec, &psched) else {
        return Ok(());
    };
    let req = QdiscRequest::root(QdiscOp::Replace, 3, 0x0001_0000, spec, &psched)
        .map_err(|e| TestCaseError::fail(format!("root() refused what encode took: {e}")))?;
    let bytes = req.to_bytes();
    let msg = decode_tc_message(&bytes)
        .map_err(|e| TestCaseError::fail(format!("{printed}: own message: {e}")))?;
    prop_assert_eq!(msg.options.as_ref(), Some(&options));
    let back = msg
        .spec(&psched)
        .map_err(|e| TestCaseError::fail(format!("{printed}: decode: {e}")))?;
    match spec {
        // A byte limit may come back as a latency (or another latency) giving the same
        // bytes; decode picks the shortest. Then decode is stable.
        Spec::Tbf(_) => {
            let again = encode_options(&back, &psched)
                .map_err(|e| TestCaseError::fail(format!("{back}: {e}")))?;
            prop_assert_eq!(&again, &options, "{} decoded as {}", printed, back);
            let twice = decode_options("tbf", &again, &psched)
                .map_err(|e| TestCaseError::fail(format!("{back}: {e}")))?;
            prop_assert_eq!(twice, back);
        }
        _ => {
            prop_assert_eq!(&back, spec, "{} decoded as {}", printed, back);
            let again = encode_options(&back, &psched)
                .map_err(|e| TestCaseError::fail(format!("{back}: {e}")))?;
            prop_assert_eq!(&again, &options);
        }
    }
    // The kernel dump path accepts what was encoded as a request again.
    let dumped = dumped_options_for_request(spec.kind(), &options);
    prop_assert_eq!(dumped, options);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Structured specs: what the parser can produce (normalised: no zero correlations, no
// zero probabilities, a distribution only with a delay and jitter...).

fn percent() -> impl Strategy<Value = Percent> {
    prop_oneof![
        (1u32..=u32::MAX).prop_map(Percent),
        Just(Percent(u32::MAX)),
        Just(Percent(1)),
        (1u32..=100).prop_map(|p| Percent::from_percent(f64::from(p)).unwrap()),
    ]
}

/// Times the kernel's 32-bit psched ticks hold (tc's limit: 274877906 us), and some
/// beyond, which encoding must refuse.
fn time() -> impl Strategy<Value = Time> {
    prop_oneof![
        4 => (1u32..=274_877_906).prop_map(Time),
        1 => (1u32..=10_000).prop_map(|ms| Time(ms * 1000)),
        1 => (274_877_907u32..=4_294_967_295).prop_map(Time),
    ]
}

fn chance() -> impl Strategy<Value = Chance> {
    (percent(), proptest::option::of(percent())).prop_map(|(probability, correlation)| Chance {
        probability,
        correlation,
    })
}

fn netem() -> impl Strategy<Value = Netem> {
    let delay = proptest::option::of((
        time(),
        proptest::option::of(time()),
        proptest::option::of(percent()),
        proptest::option::of(proptest::sample::select(Distribution::ALL.to_vec())),
    ));
    (
        any::<u32>(),
        delay,
        proptest::option::of(chance()),
        proptest::option::of(chance()),
        proptest::option::of((percent(), proptest::option::of(percent()), 1u32..100)),
        proptest::option::of(chance()),
        proptest::option::of(1u64..(1u64 << 50)),
    )
        .prop_map(|(limit, delay, loss, duplicate, reorder, corrupt, rate)| {
            let delay = delay.map(|(latency, jitter, correlation, distribution)| Delay {
                latency,
                jitter,
                correlation,
                distribution: distribution.filter(|_| jitter.is_some()),
            });
            Netem {
                limit,
                delay,
                loss,
                duplicate,
                // Reordering needs a delay.
                reorder: reorder.filter(|_| delay.is_some()).map(
                    |(probability, correlation, gap)| Reorder {
                        probability,
                        correlation,
                        gap,
                    },
                ),
                corrupt,
                rate: rate.map(Rate),
            }
        })
}

fn tbf() -> impl Strategy<Value = Tbf> {
    (
        prop_oneof![1u64..1_000_000_000, 1u64..(1u64 << 40)],
        1u32..(1 << 26),
        prop_oneof![
            time().prop_map(TbfLimit::Latency),
            (1u32..u32::MAX).prop_map(|b| TbfLimit::Bytes(Size(b))),
        ],
    )
        .prop_map(|(rate, burst, limit)| Tbf {
            rate: Rate(rate),
            burst: Size(burst),
            limit,
        })
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        6 => netem().prop_map(Spec::Netem),
        2 => tbf().prop_map(Spec::Tbf),
        1 => (any::<u32>(), any::<u32>())
            .prop_map(|(default_class, r2q)| Spec::Htb(Htb { default_class, r2q })),
    ]
}

/// The same spec written in tc's grammar with its words in a random order.
fn shuffled_text() -> impl Strategy<Value = String> {
    netem().prop_flat_map(|n| {
        let text = Spec::Netem(n).to_string();
        // Split into keyword groups and shuffle the groups.
        let mut groups: Vec<String> = Vec::new();
        for word in text.split_whitespace() {
            let starts_group = matches!(
                word,
                "delay" | "loss" | "duplicate" | "reorder" | "corrupt" | "rate" | "limit"
            );
            match groups.last_mut() {
                Some(g) if !starts_group => {
                    g.push(' ');
                    g.push_str(word);
                }
                _ => groups.push(word.to_string()),
            }
        }
        Just(groups).prop_shuffle().prop_map(|g| g.join(" "))
    })
}

proptest! {
    #![proptest_config(config(3000))]

    /// Any text: an error or a spec, never a panic.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,40}") {
        check_parsed(&text)?;
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// Sequences of the grammar's own words and value-like words.
    #[test]
    fn grammar_words_never_panic(tokens in proptest::collection::vec(token(), 0..14)) {
        let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
        if let Ok(spec) = Spec::parse_tokens(&refs) {
            check_spec(&spec)?;
        }
        // Joined with spaces, it parses the same way (words holding whitespace aside).
        if tokens.iter().all(|t| !t.chars().any(char::is_whitespace) && !t.is_empty()) {
            let joined = tokens.join(" ");
            let a = Spec::parse_tokens(&refs);
            let b = Spec::parse(&joined);
            prop_assert_eq!(a, b, "{:?}", joined);
        }
    }
}

proptest! {
    #![proptest_config(config(1500))]

    /// Every spec the parser can produce prints, parses back, encodes and decodes back.
    #[test]
    fn specs_round_trip(spec in spec()) {
        check_spec(&spec)?;
    }

    /// The keyword groups of a netem spec may come in any order.
    #[test]
    fn netem_keyword_order_does_not_matter(text in shuffled_text()) {
        let spec = Spec::parse(&text);
        prop_assert!(spec.is_ok(), "{:?}: {:?}", text, spec);
        if let Ok(spec) = spec {
            check_spec(&spec)?;
        }
    }
}

/// A field value: mostly the edges (0, 1, all ones) and small numbers.
fn word() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(u32::MAX),
        0u32..2000,
        any::<u32>(),
    ]
}

/// `n` native-endian u32 words.
fn words(n: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(word(), n)
        .prop_map(|w| w.iter().flat_map(|x| x.to_ne_bytes()).collect())
}

/// An attribute payload: whole words (what the structs are made of) or any bytes.
fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => words(0..=12),
        1 => proptest::collection::vec(any::<u8>(), 0..48),
    ]
}

proptest! {
    #![proptest_config(config(2500))]

    /// Decoding bytes from the kernel (or anywhere): an error or a spec, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic_the_decoder(
        kind in proptest::sample::select(vec!["netem", "tbf", "htb", "fq_codel", ""]),
        bytes in proptest::collection::vec(any::<u8>(), 0..160),
        flags in any::<u16>(),
    ) {
        let psched = Psched::KERNEL;
        let _ = decode_options(kind, &bytes, &psched);
        let _ = dumped_options_for_request(kind, &bytes);
        let _ = decode_tc_message(&bytes).map(|m| m.spec(&psched));
        let _ = parse_ext_ack(flags, &bytes);
        let _ = Psched::parse(&String::from_utf8_lossy(&bytes));
    }

    /// Well-formed attribute lists with random payloads, so that decoding gets past the
    /// framing and into every attribute's payload.
    #[test]
    fn random_attributes_never_panic_the_decoder(
        kind in proptest::sample::select(vec!["netem", "tbf", "htb"]),
        qopt in words(6..=6),
        attrs in proptest::collection::vec((0u16..16, payload()), 0..6),
    ) {
        let mut options = if kind == "netem" { qopt } else { Vec::new() };
        for (ty, payload) in &attrs {
            let len = u16::try_from(4 + payload.len()).unwrap();
            options.extend_from_slice(&len.to_ne_bytes());
            options.extend_from_slice(&ty.to_ne_bytes());
            options.extend_from_slice(payload);
            while options.len() % 4 != 0 {
                options.push(0);
            }
        }
        let psched = Psched::KERNEL;
        if let Ok(spec) = decode_options(kind, &options, &psched) {
            // Whatever decodes prints as text that parses back.
            let text = spec.to_string();
            let back = Spec::parse(&text);
            prop_assert!(back.is_ok(), "{:?} printed as {:?}: {:?}", spec, text, back);
        }
        let _ = dumped_options_for_request(kind, &options);
    }
}

#[test]
fn spec_errors_are_errors_not_panics_at_the_bounds() {
    // A few fixed bounds the generators may miss.
    for text in [
        "delay 4294s",
        "delay 4295s",
        "delay 274877906us",
        "delay 274877907us",
        "rate 18446744073709551615bit",
        "rate 2305843009213693951bps",
        "tbf rate 1bit burst 1 latency 1",
        "tbf rate 8bit burst 4gb latency 4294s",
        "tbf rate 1tibps burst 1 limit 1",
        "limit 4294967296",
        "htb default 100000000",
        "reorder 1% gap 4294967295 delay 1us",
        "delay 1us 1us 100% distribution paretonormal",
    ] {
        match Spec::parse(text) {
            Ok(spec) => {
                let _ = encode_options(&spec, &Psched::KERNEL);
            }
            Err(SpecError::Empty) => panic!("{text}: empty?"),
            Err(_) => {}
        }
    }
}
