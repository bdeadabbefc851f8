//! Golden vectors: every request iproute2 6.1's `tc` sent (captured with strace) is
//! encoded byte for byte, both by the hand encoder and through rtnetlink's message types,
//! and decodes back to the spec it came from.

use netlink_packet_core::NetlinkMessage;
use netlink_packet_route::RouteNetlinkMessage;
use serde_json::Value;
use tsload_netem::encode::{self, Psched, QdiscOp, QdiscRequest, TcMsg, decode_tc_message};
use tsload_netem::spec::Spec;

struct Vector {
    tc: String,
    hex: String,
}

fn load() -> (Psched, Vec<Vector>) {
    let text = include_str!("data/iproute2-6.1.json");
    let json: Value = serde_json::from_str(text).unwrap();
    let psched_words: Vec<String> = json["proc_net_psched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    let psched = Psched::parse(&psched_words.join(" ")).unwrap();
    let vectors = json["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| Vector {
            tc: v["tc"].as_str().unwrap().to_string(),
            hex: v["hex"].as_str().unwrap().to_string(),
        })
        .collect();
    (psched, vectors)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// `tc qdisc OP dev DEV root [handle H:] SPEC...` -> (op, handle, spec words).
fn parse_command(tc: &str) -> (QdiscOp, u32, Vec<&str>) {
    let words: Vec<&str> = tc.split_whitespace().collect();
    assert_eq!(&words[..2], ["tc", "qdisc"], "{tc}");
    let op = match words[2] {
        "add" => QdiscOp::Add,
        "replace" => QdiscOp::Replace,
        "change" => QdiscOp::Change,
        "del" => QdiscOp::Delete,
        other => panic!("unknown op {other}"),
    };
    assert_eq!(&words[3..6], ["dev", "DEV", "root"], "{tc}");
    let mut rest = &words[6..];
    let mut handle = 0;
    if rest.first() == Some(&"handle") {
        let h = rest[1].trim_end_matches(':');
        handle = u32::from_str_radix(h, 16).unwrap() << 16;
        rest = &rest[2..];
    }
    (op, handle, rest.to_vec())
}

fn request(v: &Vector, psched: &Psched) -> (QdiscRequest, Option<Spec>) {
    let (op, handle, words) = parse_command(&v.tc);
    if op == QdiscOp::Delete {
        assert!(words.is_empty());
        return (QdiscRequest::delete_root(7), None);
    }
    let spec = Spec::parse_tokens(&words).unwrap_or_else(|e| panic!("{}: {e}", v.tc));
    let req = QdiscRequest::root(op, 7, handle, &spec, psched).unwrap();
    (req, Some(spec))
}

#[test]
fn every_vector_encodes_byte_for_byte() {
    let (psched, vectors) = load();
    assert_eq!(vectors.len(), 35);
    let mut exact = 0;
    let mut failures = Vec::new();
    for v in &vectors {
        let (req, _) = request(v, &psched);
        let mine = hex(&req.to_bytes());
        if mine == v.hex {
            exact += 1;
        } else {
            failures.push(format!("{}\n  want {}\n  got  {}", v.tc, v.hex, mine));
        }
    }
    assert!(
        failures.is_empty(),
        "{exact}/{} exact; mismatches:\n{}",
        vectors.len(),
        failures.join("\n")
    );
    assert_eq!(exact, vectors.len());
}

/// The `TCA_NETEM_CORR` attribute (type 1, after the 24-byte `tc_netem_qopt`) of a
/// netem vector, if tc sent one: (delay_corr, loss_corr, dup_corr).
fn netem_corr(bytes: &[u8]) -> Option<[u32; 3]> {
    // nlmsghdr (16) + tcmsg (20) + TCA_KIND "netem" (12) + TCA_OPTIONS header (4) + qopt.
    let mut at = 16 + 20 + 12 + 4 + 24;
    while at + 4 <= bytes.len() {
        let len = usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
        let ty = u16::from_le_bytes([bytes[at + 2], bytes[at + 3]]);
        if ty == 1 {
            let word = |i: usize| {
                let b = &bytes[at + 4 + 4 * i..at + 8 + 4 * i];
                u32::from_le_bytes([b[0], b[1], b[2], b[3]])
            };
            return Some([word(0), word(1), word(2)]);
        }
        at += len.next_multiple_of(4);
    }
    None
}

#[test]
fn tc_sends_the_duplicate_correlation_only_beside_another() {
    let (_, vectors) = load();
    let corr_of = |tc_spec: &str| {
        let v = vectors
            .iter()
            .find(|v| v.tc.ends_with(&format!("root netem {tc_spec}")))
            .unwrap_or_else(|| panic!("no vector for {tc_spec}"));
        netem_corr(&unhex(&v.hex))
    };
    let pct = |p: f64| tsload_netem::spec::Percent::from_percent(p).unwrap().0;
    // A duplicate correlation alone: no TCA_NETEM_CORR at all.
    assert_eq!(corr_of("duplicate 1% 10%"), None);
    assert_eq!(corr_of("duplicate 1% 10% delay 10ms 2ms"), None);
    // Each other position makes tc send it (reorder's and corrupt's values travel in
    // their own attributes), and then dup_corr rides along.
    assert_eq!(corr_of("delay 10ms 2ms 25%"), Some([pct(25.0), 0, 0]));
    assert_eq!(corr_of("loss 0.3% 25%"), Some([0, pct(25.0), 0]));
    assert_eq!(corr_of("loss random 0.3% 25%"), Some([0, pct(25.0), 0]));
    assert_eq!(corr_of("corrupt 0.1% 5%"), Some([0, 0, 0]));
    assert_eq!(corr_of("delay 10ms reorder 25% 50%"), Some([0, 0, 0]));
    assert_eq!(
        corr_of("duplicate 1% 10% corrupt 0.1% 5%"),
        Some([0, 0, pct(10.0)])
    );
    assert_eq!(
        corr_of("duplicate 1% 10% reorder 5% 20% delay 1ms"),
        Some([0, 0, pct(10.0)])
    );
    assert_eq!(
        corr_of("loss 1% 20% duplicate 2% 30%"),
        Some([0, pct(20.0), pct(30.0)])
    );
    // A written 0% correlation is enough.
    assert_eq!(
        corr_of("duplicate 1% 10% loss 0% 0%"),
        Some([0, 0, pct(10.0)])
    );
    assert_eq!(
        corr_of("delay 10ms 2ms 0% duplicate 1% 10%"),
        Some([0, 0, pct(10.0)])
    );
}

#[test]
fn correlation_vectors_print_and_parse_back() {
    // What a vector's spec prints makes tc send the same bytes: it parses back equal.
    let (psched, vectors) = load();
    for v in &vectors {
        let (_, Some(spec)) = request(v, &psched) else {
            continue;
        };
        let text = spec.to_string();
        assert_eq!(Spec::parse(&text).unwrap(), spec, "{} -> {text}", v.tc);
    }
    let printed = |t: &str| Spec::parse(t).unwrap().to_string();
    assert_eq!(printed("duplicate 1% 10%"), "duplicate 1%");
    assert_eq!(
        printed("duplicate 1% 10% loss 0% 0%"),
        "loss 0% 0% duplicate 1% 10%"
    );
    assert_eq!(
        printed("loss 1% 0% duplicate 1% 10%"),
        "loss 1% 0% duplicate 1% 10%"
    );
    assert_eq!(
        printed("delay 10ms 2ms 25% duplicate 1% 10%"),
        "delay 10ms 2ms 25% duplicate 1% 10%"
    );
}

#[test]
fn rtnetlink_messages_serialise_to_the_same_bytes() {
    let (psched, vectors) = load();
    for v in &vectors {
        let (req, _) = request(v, &psched);
        let msg = req.to_netlink();
        let mut buf = vec![0; msg.buffer_len()];
        msg.serialize(&mut buf);
        assert_eq!(hex(&buf), v.hex, "{}", v.tc);
    }
}

#[test]
fn vectors_decode_back_to_their_specs() {
    let (psched, vectors) = load();
    for v in &vectors {
        let bytes = unhex(&v.hex);
        let (req, spec) = request(v, &psched);
        let msg = decode_tc_message(&bytes).unwrap();
        assert_eq!(msg.ifindex, 7);
        assert_eq!(msg.handle, req.handle);
        assert_eq!(msg.parent, encode::TC_H_ROOT);
        assert_eq!(msg.message_type, req.op.message_type());
        assert_eq!(msg.flags, req.op.flags());
        let Some(spec) = spec else { continue };
        assert_eq!(msg.spec(&psched).unwrap(), spec, "{}", v.tc);
        // Through netlink-packet-route's parser too (the path dumps take).
        let parsed = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes).unwrap();
        let netlink_packet_core::NetlinkPayload::InnerMessage(
            RouteNetlinkMessage::NewQueueDiscipline(tc),
        ) = &parsed.payload
        else {
            panic!("{}: not a qdisc message", v.tc)
        };
        let via = TcMsg::from_rtnl(encode::RTM_NEWQDISC, parsed.header.flags, tc);
        assert_eq!(via.options, msg.options, "{}", v.tc);
        assert_eq!(via.spec(&psched).unwrap(), spec, "{}", v.tc);
    }
}

#[test]
fn the_normal_table_is_iproute2s() {
    let (_, vectors) = load();
    let v = vectors
        .iter()
        .find(|v| v.tc.contains("distribution normal"))
        .unwrap();
    let bytes = unhex(&v.hex);
    // TCA_NETEM_DELAY_DIST is the last attribute: 4 + 4096 * 2 bytes.
    let table = &bytes[bytes.len() - 8192..];
    let mine: Vec<u8> = tsload_netem::dist::table(tsload_netem::spec::Distribution::Normal)
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(hex(table), hex(&mine));
}

#[test]
fn decode_of_encode_is_identity() {
    let psched = Psched::KERNEL;
    for text in [
        "delay 10ms",
        "delay 0us 5ms",
        "delay 100ms 20ms 5% distribution pareto",
        "delay 100ms 20ms distribution paretonormal",
        "delay 1ms 1us",
        "delay 274s",
        "loss 0.0001% 99.9999%",
        "duplicate 50% 10%",
        "corrupt 0.1% 5%",
        "delay 10ms reorder 25% 50% gap 7",
        "rate 8bit",
        "rate 40gbit",
        "rate 123456789bit",
        "limit 0",
        "limit 4294967295",
        "delay 10ms 2ms 25% loss 0.5% 5% duplicate 1% 2% reorder 10% 3% gap 2 corrupt 0.1% 4% rate 1gbit limit 5000",
        "netem",
        "tbf rate 8mbit burst 32kbit latency 50ms",
        "tbf rate 8mbit burst 1500b latency 20ms",
        "tbf rate 1gbit burst 1mb latency 1ms",
        "tbf rate 100gbit burst 10mb latency 1ms",
        "tbf rate 8mbit burst 4kb limit 64kb",
        "tbf rate 10mbit burst 9000b limit 100000b",
        "htb",
        "htb default 10",
        "htb default ffff r2q 100",
    ] {
        let spec = Spec::parse(text).unwrap();
        for op in [QdiscOp::Add, QdiscOp::Replace, QdiscOp::Change] {
            let req = QdiscRequest::root(op, 3, 0x7473_0000, &spec, &psched).unwrap();
            let bytes = req.to_bytes();
            let msg = decode_tc_message(&bytes).unwrap();
            let back = msg.spec(&psched).unwrap();
            assert_eq!(back, spec, "{text}");
            // And the decoded spec encodes to the same bytes.
            let again = QdiscRequest::root(op, 3, 0x7473_0000, &back, &psched).unwrap();
            assert_eq!(again.to_bytes(), bytes, "{text}");
        }
    }
}

#[test]
fn oversized_values_are_refused_at_encoding() {
    let psched = Psched::KERNEL;
    let spec = Spec::parse("tbf rate 1bit burst 4gb latency 1ms")
        .unwrap_or_else(|_| Spec::parse("tbf rate 8bit burst 1000000000b latency 1ms").unwrap());
    let e = QdiscRequest::root(QdiscOp::Add, 1, 0, &spec, &psched).unwrap_err();
    assert!(e.to_string().contains("tbf burst"), "{e}");
}
