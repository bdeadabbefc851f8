//! Replays answers captured from a kernel (tests/data/kernel-6.18-answers.json): the
//! extended ack of a refused netem, and a qdisc dump, decoded both by hand and through
//! netlink-packet-core/-route (the path rtnetlink's answers take).

use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use netlink_packet_route::RouteNetlinkMessage;
use serde_json::Value;
use tsload_netem::apply::kernel_error_for;
use tsload_netem::encode::{self, Psched, TcMsg, decode_tc_message, parse_ext_ack};
use tsload_netem::{Error, Spec, Target};

fn answer(name: &str) -> Vec<u8> {
    let json: Value = serde_json::from_str(include_str!("data/kernel-6.18-answers.json")).unwrap();
    let hex = json["answers"][name].as_str().unwrap();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn messages(mut bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while bytes.len() >= 16 {
        let len = u32::from_ne_bytes(bytes[..4].try_into().unwrap()) as usize;
        out.push(&bytes[..len]);
        bytes = &bytes[len.next_multiple_of(4).min(bytes.len())..];
    }
    out
}

#[test]
fn the_kernels_netem_refusal_becomes_the_specific_error() {
    let bytes = answer("netem-add-unknown-kind");
    // By hand: nlmsghdr, errno, capped echo, TLVs.
    let flags = u16::from_ne_bytes([bytes[6], bytes[7]]);
    let code = i32::from_ne_bytes(bytes[16..20].try_into().unwrap());
    assert_eq!(code, -2);
    let ack = parse_ext_ack(flags, &bytes[20..]);
    assert_eq!(
        ack.message.as_deref(),
        Some("Specified qdisc kind is unknown")
    );
    // Through netlink-packet-core, as rtnetlink's stream hands it over.
    let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes).unwrap();
    let NetlinkPayload::Error(e) = &msg.payload else {
        panic!("not an error: {msg:?}")
    };
    assert_eq!(e.raw_code(), -2);
    let ack2 = parse_ext_ack(msg.header.flags, &e.header);
    assert_eq!(ack2, ack);
    let target = Target::new("eth0");
    let err = kernel_error_for("add", &target, Some("netem"), 2, ack.message.clone());
    assert!(matches!(err, Error::NetemUnavailable { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("modprobe sch_netem") && text.contains("`proxy`"),
        "{text}"
    );
    assert!(text.contains("Specified qdisc kind is unknown"), "{text}");
}

#[test]
fn a_kernel_dump_decodes_to_the_applied_spec() {
    let bytes = answer("dump-tbf");
    let msgs = messages(&bytes);
    assert_eq!(msgs.len(), 3, "lo, veth0, NLMSG_DONE");
    let psched = Psched::KERNEL;
    let mut kinds = Vec::new();
    for raw in &msgs[..2] {
        let by_hand = decode_tc_message(raw).unwrap();
        assert_eq!(by_hand.message_type, encode::RTM_NEWQDISC);
        assert_eq!(by_hand.parent, encode::TC_H_ROOT);
        let parsed = NetlinkMessage::<RouteNetlinkMessage>::deserialize(raw).unwrap();
        let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewQueueDiscipline(tc)) =
            &parsed.payload
        else {
            panic!("not a qdisc: {parsed:?}")
        };
        let via = TcMsg::from_rtnl(encode::RTM_NEWQDISC, parsed.header.flags, tc);
        assert_eq!(via.kind, by_hand.kind);
        assert_eq!(via.options, by_hand.options);
        assert_eq!(via.handle, by_hand.handle);
        kinds.push(by_hand.kind.clone().unwrap());
        if by_hand.kind.as_deref() == Some("tbf") {
            assert_eq!(
                by_hand.spec(&psched).unwrap(),
                Spec::parse("tbf rate 8mbit burst 32kbit latency 50ms").unwrap()
            );
            assert_eq!(by_hand.handle & 0xffff, 0, "a qdisc handle has no minor");
            assert_ne!(by_hand.handle >> 16, 0, "tbf is not a default qdisc");
        }
    }
    assert_eq!(kinds, ["noqueue", "tbf"]);
    let done = msgs[2];
    assert_eq!(u16::from_ne_bytes([done[4], done[5]]), 3);
}
