#!/usr/bin/env python3
"""Captures the netlink request iproute2's tc sends, as in iproute2-6.1.json.

Run as root with tc and strace installed, after `ip netns add tsprop0` and
`ip -n tsprop0 link add v0 type veth peer name v1`:
  capture-tc.py "tc qdisc add dev DEV root netem duplicate 1% 10%" ...  (prints JSON vectors)
  capture-tc.py --check iproute2-6.1.json  (re-captures every vector and compares)
nlmsg_seq and nlmsg_pid are zeroed and tcm_ifindex set to 7, as in the data file.
"""
import json, re, subprocess, sys
NS = "tsprop0"
def capture(tc):
    words = tc.split()
    assert words[:2] == ["tc", "qdisc"]
    args = ["v0" if w == "DEV" else w for w in words[1:]]
    p = subprocess.run(["ip", "netns", "exec", NS, "strace", "-e", "trace=sendmsg", "-e", "write=3",
                        "-s", "100000", "tc"] + args, capture_output=True, text=True)
    out = p.stderr
    dumps = []
    cur = None
    said = []
    for line in out.splitlines():
        if re.match(r"^ \* \d+ bytes in buffer", line):
            cur = bytearray(); dumps.append(cur); continue
        m = re.match(r"^ \| [0-9a-f]{5}  (.{48})", line)
        if m and cur is not None:
            cur.extend(bytes.fromhex(m.group(1).replace(" ", "")))
            continue
        if not line.startswith(("sendmsg", "+++", " |", " *", "---")):
            said.append(line)
    assert len(dumps) == 1, (tc, out)
    b = dumps[0]
    assert int.from_bytes(b[0:4], "little") == len(b)
    b[8:16] = bytes(8)          # nlmsg_seq, nlmsg_pid
    b[20:24] = (7).to_bytes(4, "little")  # tcm_ifindex
    return {"tc": tc, "hex": b.hex(), "len": len(b), "kernel_said": "\n".join(said).strip()}
if __name__ == "__main__":
    if sys.argv[1] == "--check":
        d = json.load(open(sys.argv[2]))
        bad = 0
        for v in d["vectors"]:
            c = capture(v["tc"])
            ok = c["hex"] == v["hex"]
            bad += not ok
            print("OK " if ok else "BAD", v["tc"], "|", c["kernel_said"], "| was:", v["kernel_said"])
        print("mismatches", bad)
    else:
        out = [capture(t) for t in sys.argv[1:]]
        print(json.dumps(out, indent=1))
