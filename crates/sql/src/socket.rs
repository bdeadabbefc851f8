//! The TCP socket of the targets' own wire connections ([`Socket`]): on tokio's reactor,
//! or, for a worker alone on its thread, blocking in `send` and `recv` as a sysbench
//! thread does.
//!
//! On the reactor a round trip takes three system calls: `send`, `epoll_wait` until the
//! answer comes, `recv` (tokio forgets a socket's readiness after a read that does not fill
//! the buffer, so the next read waits first). A blocking socket takes two: `send`, and a
//! `recv` that sleeps until the answer is there; the wake-up goes straight to the thread,
//! with no epoll callback between. On a 2-core machine where client and server share the
//! cores, that difference is a few percent of a point select's cost.
//!
//! A blocking wait must not shut the thread's runtime out, though: the worker's request
//! timeout and its interval hand-over are futures polled beside the request. So a blocking
//! `recv` or `send` gives up after [`BLOCKING_SLICE`] (`SO_RCVTIMEO`, `SO_SNDTIMEO`),
//! lets the runtime poll its driver and the other futures once
//! ([`tokio::task::yield_now`]), and tries again: a timeout still fires within a slice of
//! its time.

use std::future::Future as _;
use std::io::{self, Read as _, Write as _};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How long a blocking `recv` or `send` waits before it lets the thread's runtime look
/// at its timers and other futures.
pub const BLOCKING_SLICE: Duration = Duration::from_millis(10);

/// How a [`Socket`] waits for the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// On tokio's reactor, among the runtime's other tasks.
    Reactor,
    /// Blocking the thread, a slice at a time: only for a connection alone on its thread
    /// (a query worker's, [`tsload_core::QueryTarget::thread_per_worker`]), whose
    /// runtime has nothing else to run while it waits.
    Blocking,
}

/// A connected TCP socket (`TCP_NODELAY` set) that reads and writes as tokio's streams do.
#[derive(Debug)]
pub struct Socket(Inner);

#[derive(Debug)]
enum Inner {
    Reactor(tokio::net::TcpStream),
    Blocking(std::net::TcpStream),
}

impl Socket {
    /// Connects to `host:port` (on the reactor: the connect itself is awaited there, so a
    /// connect timeout around it works), then waits as `waiting` says.
    pub async fn connect(host: &str, port: u16, waiting: Waiting) -> io::Result<Socket> {
        let stream = tokio::net::TcpStream::connect((host, port)).await?;
        stream.set_nodelay(true)?;
        Ok(Socket(match waiting {
            Waiting::Reactor => Inner::Reactor(stream),
            Waiting::Blocking => {
                // into_std takes it off the reactor and leaves it non-blocking.
                let stream = stream.into_std()?;
                stream.set_nonblocking(false)?;
                stream.set_read_timeout(Some(BLOCKING_SLICE))?;
                stream.set_write_timeout(Some(BLOCKING_SLICE))?;
                Inner::Blocking(stream)
            }
        }))
    }

    /// How this socket waits.
    pub fn waiting(&self) -> Waiting {
        match self.0 {
            Inner::Reactor(_) => Waiting::Reactor,
            Inner::Blocking(_) => Waiting::Blocking,
        }
    }

    /// Writes what the socket takes now, never waiting (a goodbye on drop).
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match &self.0 {
            Inner::Reactor(s) => s.try_write(buf),
            Inner::Blocking(s) => {
                s.set_nonblocking(true)?;
                let mut s: &std::net::TcpStream = s;
                let written = s.write(buf);
                let _ = s.set_nonblocking(false);
                written
            }
        }
    }
}

/// What a blocking call's outcome means for the future that made it.
fn blocking<T>(cx: &mut Context<'_>, result: io::Result<T>) -> Option<Poll<io::Result<T>>> {
    match result {
        Ok(value) => Some(Poll::Ready(Ok(value))),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
        // A slice has passed (EAGAIN from SO_RCVTIMEO/SO_SNDTIMEO): let the runtime poll
        // its driver, then us again. yield_now's first poll asks for exactly that (a
        // deferred wake-up) and needs nothing kept after it.
        Err(e) if slice_ended(&e) => {
            let _ = pin!(tokio::task::yield_now()).poll(cx);
            Some(Poll::Pending)
        }
        Err(e) => Some(Poll::Ready(Err(e))),
    }
}

/// Whether a blocking call gave up because its slice ended (EAGAIN on Linux).
fn slice_ended(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Inner::Reactor(s) => Pin::new(s).poll_read(cx, buf),
            Inner::Blocking(s) => loop {
                let read = s.read(buf.initialize_unfilled());
                if let Some(poll) = blocking(cx, read) {
                    return poll.map_ok(|n| buf.advance(n));
                }
            },
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            Inner::Reactor(s) => Pin::new(s).poll_write(cx, buf),
            Inner::Blocking(s) => loop {
                if let Some(poll) = blocking(cx, s.write(buf)) {
                    return poll;
                }
            },
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Inner::Reactor(s) => Pin::new(s).poll_flush(cx),
            Inner::Blocking(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Inner::Reactor(s) => Pin::new(s).poll_shutdown(cx),
            Inner::Blocking(s) => Poll::Ready(s.shutdown(std::net::Shutdown::Write)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A one-connection echo server on loopback that answers each write after `delay`.
    fn echo_server(delay: Duration) -> (u16, std::thread::JoinHandle<()>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 64];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        std::thread::sleep(delay);
                        if s.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        (port, handle)
    }

    /// Runs `test` on a runtime as a query worker's (current-thread, I/O only, no time
    /// driver) on a thread of its own, and fails if it has not ended within 20 s: a
    /// blocked wait that never asks to be polled again hangs instead of failing.
    fn on_worker_runtime(test: impl Future<Output = ()> + Send + 'static) {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
                .unwrap();
            rt.block_on(test);
            let _ = done_tx.send(());
        });
        match done_rx.recv_timeout(Duration::from_secs(20)) {
            Ok(()) => thread.join().unwrap(),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                // It panicked: show why.
                std::panic::resume_unwind(thread.join().unwrap_err())
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("the test hung for 20 s")
            }
        }
    }

    #[test]
    fn both_ways_of_waiting_carry_the_same_bytes() {
        for waiting in [Waiting::Reactor, Waiting::Blocking] {
            let (port, server) = echo_server(Duration::ZERO);
            on_worker_runtime(async move {
                let mut s = Socket::connect("127.0.0.1", port, waiting).await.unwrap();
                assert_eq!(s.waiting(), waiting);
                for round in 0..100u8 {
                    let sent = [round; 7];
                    s.write_all(&sent).await.unwrap();
                    let mut got = [0u8; 7];
                    s.read_exact(&mut got).await.unwrap();
                    assert_eq!(got, sent, "{waiting:?}, round {round}");
                }
                assert_eq!(s.try_write(b"x").unwrap(), 1);
                s.shutdown().await.unwrap();
            });
            server.join().unwrap();
        }
    }

    #[test]
    fn a_blocked_read_asks_to_be_polled_again_after_each_slice() {
        // The answer comes after 300 ms, with no timer or other wake-up on the runtime:
        // the read completes only if each slice that ends empty-handed arranges its own
        // next poll. Counting the polls shows it waited in slices, not in one long block.
        let (port, server) = echo_server(Duration::from_millis(300));
        on_worker_runtime(async move {
            let mut s = Socket::connect("127.0.0.1", port, Waiting::Blocking)
                .await
                .unwrap();
            s.write_all(b"ping").await.unwrap();
            let mut polls = 0u32;
            let mut got = [0u8; 4];
            let mut read = pin!(s.read_exact(&mut got));
            std::future::poll_fn(|cx| {
                polls += 1;
                read.as_mut().poll(cx)
            })
            .await
            .unwrap();
            assert_eq!(&got, b"ping");
            assert!(polls >= 3, "polled {polls} times in 300 ms of 10 ms slices");
        });
        server.join().unwrap();
    }

    #[test]
    fn a_timeout_beside_a_blocked_read_fires_long_before_the_answer() {
        // As the query engine's request timeout: a timerfd on the reactor around a read
        // whose answer takes 3 s.
        let (port, server) = echo_server(Duration::from_secs(3));
        on_worker_runtime(async move {
            let mut s = Socket::connect("127.0.0.1", port, Waiting::Blocking)
                .await
                .unwrap();
            s.write_all(b"ping").await.unwrap();
            let mut got = [0u8; 4];
            let started = Instant::now();
            let timed = tsload_timer::timeout(Duration::from_millis(100), s.read_exact(&mut got))
                .await
                .unwrap();
            let took = started.elapsed();
            assert!(timed.is_none(), "the read ended before its timeout");
            assert!(
                took < Duration::from_secs(2),
                "the timeout fired after {took:?}"
            );
            drop(s);
        });
        server.join().unwrap();
    }
}
