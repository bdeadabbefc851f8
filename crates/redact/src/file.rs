//! Files tsload writes, redacted on the way: every byte goes through [`crate::text`] after
//! its control characters are made visible ([`crate::printable`]: a server's error text may
//! hold ESC sequences or NULs). The binary and the outputs crate create files only here.

use std::io::Write;
use std::path::Path;

/// `text` as tsload shows it anywhere: control characters made visible (a server's error
/// text may hold ESC sequences or NULs), secrets hidden.
pub fn shown(text: &str) -> String {
    crate::text(&crate::printable(text))
}

/// Writes a text file (report, table, CSV, SVG, scenario) with its secrets hidden.
pub fn write_text(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, shown(text))
}

/// Writes a new file at `path` that nothing else can redirect: whatever `path` held (a
/// file, or a symbolic link planted in a shared directory) is removed, and the file is
/// created with `O_EXCL`, which does not follow a link. For temporary files in
/// directories other processes write to (the shards' barrier).
pub fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(shown(text).as_bytes())?;
    f.sync_all()
}

/// Creates a file whose text is written line by line (CSV, NDJSON), each line redacted.
pub fn create_text(path: &Path) -> std::io::Result<TextFile> {
    let file = std::fs::File::create(path)?;
    Ok(TextFile {
        inner: std::io::BufWriter::new(file),
        line: Vec::new(),
    })
}

/// Creates a file for bytes that are not text (interval logs, gzip): the caller puts only
/// redacted text in it.
pub fn create_binary(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::create(path)
}

/// A text file whose every line is redacted before it is written: the bytes of a line are
/// kept until its newline (or a flush), so a secret that `write!` hands over in pieces is
/// still seen whole.
#[derive(Debug)]
pub struct TextFile {
    inner: std::io::BufWriter<std::fs::File>,
    line: Vec<u8>,
}

impl TextFile {
    fn write_lines(&mut self, all: bool) -> std::io::Result<()> {
        let end = if all {
            self.line.len()
        } else {
            match self.line.iter().rposition(|b| *b == b'\n') {
                Some(i) => i + 1,
                None => return Ok(()),
            }
        };
        let text = String::from_utf8_lossy(&self.line[..end]).into_owned();
        self.inner.write_all(shown(&text).as_bytes())?;
        self.line.drain(..end);
        Ok(())
    }
}

impl Write for TextFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        if buf.contains(&b'\n') {
            self.write_lines(false)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.write_lines(true)?;
        self.inner.flush()
    }
}

impl Drop for TextFile {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_is_not_written_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        write_text(&victim, "keep me\n").unwrap();
        let tmp = dir.path().join(".start.shard-0.tmp");
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        write_new(&tmp, "1700000000\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
        assert!(!std::fs::symlink_metadata(&tmp).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&tmp).unwrap(), "1700000000\n");
    }

    #[test]
    fn text_files_redact_lines_written_in_pieces() {
        crate::register("PieceSecret42");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        {
            let mut f = create_text(&p).unwrap();
            write!(f, "a,Piece").unwrap();
            write!(f, "Secret42,b\npassword=").unwrap();
            writeln!(f, "x1").unwrap();
        }
        let got = std::fs::read_to_string(&p).unwrap();
        assert_eq!(got, "a,***,b\npassword=***\n");
    }
}
