//! Network impairment for tsload: Linux tc qdiscs (netem, tbf, htb) programmed over
//! rtnetlink, without the `tc` binary.
//!
//! - [`spec`]: impairment specs in tc's grammar (`delay 10ms 2ms loss 0.5%`,
//!   `tbf rate 8mbit burst 32kbit latency 50ms`), parsed and printed back.
//! - [`encode`]: pure encoding of qdisc requests, byte for byte what iproute2 6.1's `tc`
//!   sends, and decoding of qdisc messages back into specs.
//! - [`mod@apply`]: async apply / show / clear on an interface, optionally inside a named
//!   network namespace.
//! - [`guard`]: applies an impairment and restores what was there before, on drop, panic,
//!   Ctrl-C / SIGTERM, and after a SIGKILL through a record file.
//! - [`netns`]: network namespaces and veth pairs for tests (this crate's and others').
//!
//! ```no_run
//! # async fn run() -> Result<(), tsload_netem::Error> {
//! use tsload_netem::{Guard, GuardOptions, Spec, Target};
//!
//! let spec: Spec = "delay 10ms 2ms loss 0.5%".parse()?;
//! let guard = Guard::apply(&Target::new("eth1"), &spec, &GuardOptions::default()).await?;
//! // ... run the load ...
//! guard.restore().await?; // or just drop it
//! # Ok(())
//! # }
//! ```

pub mod apply;
pub mod dist;
pub mod encode;
mod error;
pub mod guard;
pub mod netns;
pub mod spec;

pub use apply::{ApplyOptions, Qdisc, Replaced, Target, apply, clear, show};
pub use encode::{Psched, QdiscOp, QdiscRequest};
pub use error::Error;
pub use guard::{Guard, GuardOptions, Record, RestoreOutcome};
pub use spec::{Spec, SpecError};
