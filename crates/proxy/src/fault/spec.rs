//! The `--fault SPEC` grammar: parsing a spec into a [`Fault`] (naming the part that is
//! wrong and what is allowed) and writing a fault back as its canonical spec.

use std::fmt;
use std::str::FromStr;

use super::{Fault, FaultAction, FaultTrigger, Stream};

/// The `--fault SPEC` grammar, for command-line help.
pub const FAULT_SPEC_HELP: &str = "\
A fault to inject, repeatable: ACTION[:OPTION,OPTION...]
  ACTION   reset | stall | blackhole | reset_on_reply
           (or ACTION_after_bytes=N / ACTION_after_pattern=P as shorthand, e.g.
           reset_after_bytes=1000)
  OPTION   after_bytes=N              fire once N bytes of the stream were forwarded
           after_pattern=TEXT|hex:HEX fire once the pattern was forwarded in full
           occurrence=K               ... its K-th occurrence (default 1)
           stream=up|down             the stream watched (default up: client to server)
           immediately                fire on accept (the default with no trigger)
           connection=K               only the K-th accepted connection (from 0)
           max_fires=N                fire at most N times in all
  reset: reset both sockets; stall: stop forwarding, keep both open; blackhole: read
  and discard both ways; reset_on_reply: forward nothing more to the client and reset
  both once the server's next answer arrives (the request reached the server, the
  answer was lost). Text patterns cannot hold ',': use hex:.
  e.g. reset:after_bytes=1000,stream=down  stall:after_bytes=4096  blackhole
       reset_on_reply:after_pattern=COMMIT,occurrence=3,connection=0";

/// Why a fault spec does not parse: names the part that is wrong and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FaultSpecError(String);

const ACTIONS: &str = "reset, stall, blackhole, reset_on_reply (or ACTION_after_bytes=N, \
                       ACTION_after_pattern=P)";
const OPTIONS: &str = "after_bytes=N, after_pattern=TEXT|hex:HEX, occurrence=K, \
                       stream=up|down, immediately, connection=K, max_fires=N";

/// Keywords are matched with `-` and `_` alike.
fn keyword(s: &str) -> String {
    s.replace('-', "_")
}

fn parse_action(word: &str) -> Result<FaultAction, FaultSpecError> {
    match keyword(word).as_str() {
        "reset" => Ok(FaultAction::Reset),
        "stall" => Ok(FaultAction::Stall),
        "blackhole" => Ok(FaultAction::Blackhole),
        "reset_on_reply" => Ok(FaultAction::ResetOnReply),
        "" => Err(FaultSpecError(format!(
            "the action is missing; allowed: {ACTIONS}"
        ))),
        _ => Err(FaultSpecError(format!(
            "`{word}` is not a fault action; allowed: {ACTIONS}"
        ))),
    }
}

fn action_name(action: FaultAction) -> &'static str {
    match action {
        FaultAction::Reset => "reset",
        FaultAction::Stall => "stall",
        FaultAction::Blackhole => "blackhole",
        FaultAction::ResetOnReply => "reset_on_reply",
    }
}

fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

/// The options of a spec, each at most once.
#[derive(Default)]
struct Options {
    after_bytes: Option<u64>,
    after_pattern: Option<Vec<u8>>,
    immediately: bool,
    stream: Option<Stream>,
    occurrence: Option<u64>,
    connection: Option<u64>,
    max_fires: Option<u64>,
    seen: Vec<String>,
}

impl Options {
    fn set(&mut self, option: &str) -> Result<(), FaultSpecError> {
        let fail = |why: String| Err(FaultSpecError(format!("`{option}`: {why}")));
        if option.is_empty() {
            return Err(FaultSpecError(format!(
                "an option is empty (a stray ',' or ':'?); allowed: {OPTIONS}"
            )));
        }
        let (key, value) = match option.split_once('=') {
            Some((k, v)) => (keyword(k), Some(v)),
            None => (keyword(option), None),
        };
        if self.seen.contains(&key) {
            return fail(format!("`{key}` is given twice"));
        }
        let number = |what: &str| -> Result<u64, FaultSpecError> {
            match value {
                None => Err(FaultSpecError(format!(
                    "`{key}` needs a value, e.g. {key}=1"
                ))),
                Some(v) => v.parse::<u64>().map_err(|_| {
                    FaultSpecError(format!(
                        "`{option}`: `{v}` is not {what} (a whole number from 0 to {})",
                        u64::MAX
                    ))
                }),
            }
        };
        match key.as_str() {
            "after_bytes" => self.after_bytes = Some(number("a byte count")?),
            "after_pattern" => {
                let Some(v) = value else {
                    return fail("needs a pattern, e.g. after_pattern=COMMIT or hex:00ff".into());
                };
                let pattern = match v.strip_prefix("hex:") {
                    Some(hex) => match parse_hex(hex) {
                        Some(bytes) => bytes,
                        None => {
                            return fail(format!("`{hex}` is not hex (pairs of digits 0-9, a-f)"));
                        }
                    },
                    None => v.as_bytes().to_vec(),
                };
                if pattern.is_empty() {
                    return fail("the pattern is empty: it would match everywhere".into());
                }
                self.after_pattern = Some(pattern);
            }
            "immediately" => {
                if value.is_some() {
                    return fail("`immediately` takes no value".into());
                }
                self.immediately = true;
            }
            "stream" => {
                self.stream = Some(match value.map(keyword).as_deref() {
                    Some("up") => Stream::Up,
                    Some("down") => Stream::Down,
                    _ => return fail("allowed: stream=up (client to server), stream=down".into()),
                })
            }
            "occurrence" => {
                let k = number("an occurrence")?;
                if k == 0 {
                    return fail("occurrences count from 1".into());
                }
                self.occurrence = Some(k);
            }
            "connection" => self.connection = Some(number("a connection number")?),
            "max_fires" => {
                let n = number("a count")?;
                if n == 0 {
                    return fail("0 would never fire; leave max_fires out for no limit".into());
                }
                self.max_fires = Some(n);
            }
            _ => {
                return Err(FaultSpecError(format!(
                    "`{option}` is not an option; allowed: {OPTIONS}"
                )));
            }
        }
        self.seen.push(key);
        Ok(())
    }

    fn into_fault(self, action: FaultAction) -> Result<Fault, FaultSpecError> {
        let triggers = usize::from(self.after_bytes.is_some())
            + usize::from(self.after_pattern.is_some())
            + usize::from(self.immediately);
        if triggers > 1 {
            return Err(FaultSpecError(
                "give one trigger only: after_bytes=N, after_pattern=P or immediately".into(),
            ));
        }
        if self.after_pattern.is_none()
            && let Some(k) = self.occurrence
        {
            return Err(FaultSpecError(format!(
                "`occurrence={k}` needs after_pattern=P"
            )));
        }
        let stream = self.stream.unwrap_or(Stream::Up);
        let trigger = if let Some(bytes) = self.after_bytes {
            FaultTrigger::AfterBytes { stream, bytes }
        } else if let Some(pattern) = self.after_pattern {
            FaultTrigger::AfterPattern {
                stream,
                pattern,
                occurrence: self.occurrence.unwrap_or(1),
            }
        } else {
            if let Some(s) = self.stream {
                return Err(FaultSpecError(format!(
                    "`stream={}` needs after_bytes=N or after_pattern=P",
                    stream_name(s)
                )));
            }
            FaultTrigger::Immediately
        };
        Ok(Fault {
            connection: self.connection,
            trigger,
            action,
            max_fires: self.max_fires,
        })
    }
}

fn stream_name(stream: Stream) -> &'static str {
    match stream {
        Stream::Up => "up",
        Stream::Down => "down",
    }
}

impl FromStr for Fault {
    type Err = FaultSpecError;

    /// Parses `ACTION[:OPTION,...]` or `ACTION_after_bytes=N[,OPTION...]` (see
    /// [`FAULT_SPEC_HELP`]).
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        if spec.is_empty() {
            return Err(FaultSpecError(
                "the fault spec is empty; write e.g. reset:after_bytes=1000,stream=down".into(),
            ));
        }
        let mut options = Options::default();
        let head_end = spec.find([':', ',', '=']).unwrap_or(spec.len());
        let (action, rest) = if spec[head_end..].starts_with('=') {
            // The shorthand ACTION_after_bytes=N / ACTION_after_pattern=P: its value runs
            // to the first ','.
            let end = spec.find(',').unwrap_or(spec.len());
            let key = keyword(&spec[..head_end]);
            let (action, trigger) = if let Some(a) = key.strip_suffix("_after_bytes") {
                (a, "after_bytes")
            } else if let Some(a) = key.strip_suffix("_after_pattern") {
                (a, "after_pattern")
            } else {
                return Err(FaultSpecError(format!(
                    "`{}` is not a fault action; allowed: {ACTIONS}",
                    &spec[..end]
                )));
            };
            let action = parse_action(action)?;
            options.set(&format!("{trigger}{}", &spec[head_end..end]))?;
            (action, spec.get(end + 1..))
        } else {
            let action = parse_action(&spec[..head_end])?;
            (action, spec.get(head_end + 1..))
        };
        if let Some(rest) = rest {
            for option in rest.split(',') {
                options.set(option)?;
            }
        }
        options.into_fault(action)
    }
}

/// Whether a pattern can be written as text in a spec (and read back the same).
fn is_text(pattern: &[u8]) -> bool {
    !pattern.is_empty()
        && !pattern.starts_with(b"hex:")
        && pattern
            .iter()
            .all(|&b| (0x20..=0x7e).contains(&b) && b != b',')
}

impl fmt::Display for Fault {
    /// The canonical spec, which [`Fault::from_str`] reads back to the same fault.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(action_name(self.action))?;
        let mut options = Vec::new();
        match &self.trigger {
            FaultTrigger::Immediately => {}
            FaultTrigger::AfterBytes { stream, bytes } => {
                options.push(format!("after_bytes={bytes}"));
                options.push(format!("stream={}", stream_name(*stream)));
            }
            FaultTrigger::AfterPattern {
                stream,
                pattern,
                occurrence,
            } => {
                if is_text(pattern) {
                    // Checked above: printable ASCII.
                    options.push(format!(
                        "after_pattern={}",
                        String::from_utf8_lossy(pattern)
                    ));
                } else {
                    let hex: String = pattern.iter().map(|b| format!("{b:02x}")).collect();
                    options.push(format!("after_pattern=hex:{hex}"));
                }
                options.push(format!("stream={}", stream_name(*stream)));
                if *occurrence != 1 {
                    options.push(format!("occurrence={occurrence}"));
                }
            }
        }
        if let Some(c) = self.connection {
            options.push(format!("connection={c}"));
        }
        if let Some(n) = self.max_fires {
            options.push(format!("max_fires={n}"));
        }
        if !options.is_empty() {
            write!(f, ":{}", options.join(","))?;
        }
        Ok(())
    }
}
