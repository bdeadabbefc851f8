//! When received bytes reached the proxy, and what a hop through it costs.
//!
//! On Linux the proxy's sockets have `SO_TIMESTAMPNS` set, and reads go through
//! `recvmsg`, which returns with the data the kernel's receive time of the newest segment
//! read. A delay line delays bytes from that instant rather than from the moment the task
//! got round to reading them, which takes the proxy's wake-up out of the delay.
//!
//! The undelayed direction of a connection delayed one way costs a hop that a direct
//! connection does not have: from the bytes' arrival until the write that forwards them
//! returns (a task wake-up, a read and a write; 15 to 50 microseconds on a virtual
//! machine). Copy lanes measure it and keep its running median in [`hop`]; the delayed
//! direction takes it off its delay, so that the round trip grows by the delay, not by
//! the delay and the hop. (The delayed direction's own write is not taken off: the part of
//! it before the bytes reach the receiver is left, a few microseconds.)
//!
//! Elsewhere reads are plain reads and no arrival time is known.

use std::io;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;
use tsload_timer::RunningMedian;

/// Running median of the undelayed hop, process-wide (a property of the machine and the
/// runtime, not of a connection); more than 100 us means a busy machine, not the proxy's
/// cost.
static HOP: RunningMedian = RunningMedian::new(Duration::from_nanos(500), MAX_HOP);

/// The cap on [`hop`]'s estimate.
pub(crate) const MAX_HOP: Duration = Duration::from_micros(100);

/// The estimated cost of an undelayed hop through the proxy.
pub(crate) fn hop() -> Duration {
    HOP.get()
}

/// Adds one measured hop to the running median.
pub(crate) fn learn_hop(measured: Duration) {
    HOP.learn(measured);
}

/// A reader of one socket that knows when the bytes it returns arrived.
#[derive(Debug)]
pub(crate) struct StampedReader {
    #[cfg(target_os = "linux")]
    cmsg: Vec<u8>,
}

impl StampedReader {
    /// Turns on receive timestamps on `stream` (best effort: without them reads return no
    /// arrival time).
    pub(crate) fn new(stream: &TcpStream) -> Self {
        #[cfg(target_os = "linux")]
        {
            let _ = nix::sys::socket::setsockopt(
                stream,
                nix::sys::socket::sockopt::ReceiveTimestampns,
                &true,
            );
            StampedReader {
                cmsg: nix::cmsg_space!(nix::sys::time::TimeSpec),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = stream;
            StampedReader {}
        }
    }

    /// Reads into `buf`: the byte count (0 at EOF) and, where known, when the newest of the
    /// bytes arrived.
    #[cfg(test)]
    pub(crate) async fn read(
        &mut self,
        stream: &TcpStream,
        buf: &mut [u8],
    ) -> io::Result<(usize, Option<Instant>)> {
        loop {
            stream.readable().await?;
            match self.try_read(stream, buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                result => return result,
            }
        }
    }

    /// Reads into `buf` without waiting: the byte count (0 at EOF) and, where known, when
    /// the newest of the bytes arrived; `WouldBlock` when tokio does not know the socket
    /// to be readable, or it is not (then tokio learns so).
    pub(crate) fn try_read(
        &mut self,
        stream: &TcpStream,
        buf: &mut [u8],
    ) -> io::Result<(usize, Option<Instant>)> {
        stream.try_io(tokio::io::Interest::READABLE, || self.read_now(stream, buf))
    }

    #[cfg(target_os = "linux")]
    fn read_now(
        &mut self,
        stream: &TcpStream,
        buf: &mut [u8],
    ) -> io::Result<(usize, Option<Instant>)> {
        use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
        use std::os::fd::AsRawFd;

        let mut iov = [io::IoSliceMut::new(buf)];
        let msg = recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(&mut self.cmsg),
            MsgFlags::empty(),
        )?;
        let mut arrival = None;
        if let Ok(cmsgs) = msg.cmsgs() {
            for cmsg in cmsgs {
                if let ControlMessageOwned::ScmTimestampns(ts) = cmsg {
                    arrival = arrival_instant(ts.tv_sec(), ts.tv_nsec());
                }
            }
        }
        Ok((msg.bytes, arrival))
    }

    #[cfg(not(target_os = "linux"))]
    fn read_now(
        &mut self,
        stream: &TcpStream,
        buf: &mut [u8],
    ) -> io::Result<(usize, Option<Instant>)> {
        stream.try_read(buf).map(|n| (n, None))
    }
}

/// The [`Instant`] of a CLOCK_REALTIME timestamp (the kernel stamps received packets on
/// the wall clock), through the age of the timestamp now. Ages outside [0, 1 s] mean the
/// wall clock was stepped: no arrival time then.
#[cfg(target_os = "linux")]
fn arrival_instant(sec: i64, nsec: i64) -> Option<Instant> {
    let now = Instant::now();
    let wall = std::time::SystemTime::now();
    let at =
        std::time::UNIX_EPOCH + Duration::new(u64::try_from(sec).ok()?, u32::try_from(nsec).ok()?);
    let age = wall.duration_since(at).ok()?;
    if age > Duration::from_secs(1) {
        return None;
    }
    now.checked_sub(age)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn reads_come_with_a_recent_arrival_time() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let mut reader = StampedReader::new(&server);
        // The kernel turns receive timestamps on for the whole stack lazily (a deferred
        // static key) when the first socket asks: until then segments come unstamped, and
        // reads return no arrival time (the proxy then uses the read time).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let before = Instant::now();
        client.write_all(b"hello").await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut buf = [0u8; 16];
        let (n, arrival) = reader.read(&server, &mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"hello");
        if cfg!(target_os = "linux") {
            let arrival = arrival.expect("an arrival time");
            // It arrived right after the write, well before the read 20 ms later
            // (the clocks are read a few microseconds apart: allow some slack).
            assert!(
                arrival + Duration::from_micros(100) >= before,
                "{:?}",
                before - arrival
            );
            assert!(
                arrival < before + Duration::from_millis(10),
                "{:?}",
                arrival - before
            );
        }
        drop(client);
        assert_eq!(reader.read(&server, &mut buf).await.unwrap().0, 0);
    }
}
