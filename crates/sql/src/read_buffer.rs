//! The read buffer of the SQL targets' own wire connections (tsload-sink-mysql's and
//! tsload-sink-postgres's `lean.rs`): bytes read from the socket in large reads, handed out
//! as frames in place (a result row is counted where it lies, never copied), and the part
//! of a `scheme://user:password@host/db` URL both connections decode alike.

use std::io;
use std::ops::Range;

use tokio::io::{AsyncRead, AsyncReadExt as _};

/// When less room than this is left after the unread bytes, they move to the front before
/// the next read, so reads stay large.
const MIN_ROOM: usize = 4096;

/// The largest message (PostgreSQL) or packet (MySQL, its 16 MiB parts joined) a
/// connection reads. A server declares a message's length before its bytes; without a cap
/// one that declares 2 GB and sends nothing more makes the buffer that large (4.2 GB for two
/// workers, measured). PostgreSQL allows 1 GB per message; tsload's answers (a result row,
/// an error, a COPY acknowledgement) are bytes to kilobytes: a longer one is refused as
/// the server's fault, the connection dropped, the buffer never grown past this.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Bytes read and not yet consumed: `buf[start..end]`.
#[derive(Debug)]
pub struct ReadBuffer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// What the buffer grew by past its first size, counted against the process's answer
    /// budget (`tsload_core::answer_budget`) while the connection lives.
    grown: tsload_core::answer_budget::Held,
}

impl ReadBuffer {
    pub fn with_capacity(capacity: usize) -> Self {
        ReadBuffer {
            buf: vec![0; capacity.max(MIN_ROOM)],
            start: 0,
            end: 0,
            grown: Default::default(),
        }
    }

    /// Reads from `stream` until at least `n` unread bytes are held; `UnexpectedEof` when
    /// the peer closes first. Grows the buffer when `n` is larger than it; `InvalidData`,
    /// reading nothing, when `n` is over [`MAX_MESSAGE_BYTES`].
    pub async fn fill<S: AsyncRead + Unpin>(&mut self, stream: &mut S, n: usize) -> io::Result<()> {
        if self.end - self.start >= n {
            return Ok(());
        }
        if n > MAX_MESSAGE_BYTES {
            return Err(too_long(n));
        }
        if self.start + n > self.buf.len() || self.buf.len() - self.end < MIN_ROOM {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if n > self.buf.len() {
                let len = n.next_power_of_two();
                self.grown
                    .grow(len - self.buf.len())
                    .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
                self.buf.resize(len, 0);
            }
        }
        while self.end - self.start < n {
            let read = stream.read(&mut self.buf[self.end..]).await?;
            if read == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
            self.end += read;
        }
        Ok(())
    }

    /// Every unread byte: where a caller looks for a whole frame before it awaits a
    /// [`ReadBuffer::fill`] (most answers come in one read, so most frames are there).
    pub fn unread(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The next `n` unread bytes (after [`ReadBuffer::fill`] of at least `n`).
    pub fn peek(&self, n: usize) -> &[u8] {
        &self.buf[self.start..self.start + n]
    }

    /// Consumes `n` unread bytes and returns where they lie, for [`ReadBuffer::get`]; valid
    /// until the next `fill`.
    pub fn consume(&mut self, n: usize) -> Range<usize> {
        let at = self.start..self.start + n;
        self.start += n;
        at
    }

    /// Bytes at `range`, as [`ReadBuffer::consume`] returned it.
    pub fn get(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }
}

/// The error for a message of `bytes` bytes, over [`MAX_MESSAGE_BYTES`].
pub fn too_long(bytes: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "the server sent a message of {bytes} bytes; tsload reads at most {MAX_MESSAGE_BYTES} \
             bytes (64 MiB) in one message"
        ),
    )
}

/// A percent-encoded part of a URL (user, password, database) as text; `None` when it is
/// not UTF-8.
pub fn decode_url_part(part: &str) -> Option<String> {
    percent_encoding::percent_decode_str(part)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hands_out_frames_across_reads_and_grows_for_large_ones() {
        // Frames of 3 and 10,000 bytes, read through a 4,096-byte buffer in small pieces.
        let mut data = vec![1u8, 2, 3];
        data.extend(std::iter::repeat_n(9u8, 10_000));
        data.push(7);
        let mut stream: &[u8] = &data;
        let mut b = ReadBuffer::with_capacity(16);
        b.fill(&mut stream, 3).await.unwrap();
        assert_eq!(b.peek(3), [1, 2, 3]);
        let at = b.consume(3);
        assert_eq!(b.get(at), [1, 2, 3]);
        b.fill(&mut stream, 10_000).await.unwrap();
        let at = b.consume(10_000);
        assert!(b.get(at).iter().all(|&x| x == 9));
        b.fill(&mut stream, 1).await.unwrap();
        assert_eq!(b.peek(1), [7]);
        b.consume(1);
        let eof = b.fill(&mut stream, 1).await.unwrap_err();
        assert_eq!(eof.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(decode_url_part("p%40ss").as_deref(), Some("p@ss"));
    }

    #[tokio::test]
    async fn a_declared_length_over_the_cap_is_refused_before_any_read_or_growth() {
        // A stream that would block forever: fill must not wait on it, nor allocate.
        let (mut silent, _peer) = tokio::io::duplex(64);
        let mut b = ReadBuffer::with_capacity(16);
        let e = b
            .fill(&mut silent, MAX_MESSAGE_BYTES + 1)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("67108865 bytes"), "{e}");
        assert_eq!(b.buf.len(), MIN_ROOM);
        // The cap itself is allowed: a buffer of exactly that much.
        let data = vec![5u8; MAX_MESSAGE_BYTES];
        let mut stream: &[u8] = &data;
        b.fill(&mut stream, MAX_MESSAGE_BYTES).await.unwrap();
        assert_eq!(b.unread().len(), MAX_MESSAGE_BYTES);
        assert_eq!(decode_url_part("%FF"), None);
    }
}
