//! Reading a `.msh` file's values with their place: ASCII words, or binary numbers (size_t of
//! the header's data size, 4-byte int, 8-byte double, in the file's byte order). Every failure
//! says what was expected and where: a line in a text file, a byte offset in a binary one.
//! Nothing here can panic on any input: reads are bounds-checked, and counts are checked
//! against what the rest of the file can hold before anything is allocated for them.

use crate::mesh::MeshError;

pub(super) struct Cursor<'a> {
    pub bytes: &'a [u8],
    pub pos: usize,
    /// Where the value read last began (for messages about it).
    pub last: usize,
    /// Binary numbers (MSH 4.1 binary) instead of ASCII words.
    pub binary: bool,
    /// Bytes of a binary size_t (4 or 8).
    pub size_t: usize,
    pub big_endian: bool,
    /// Words are read up to here: the end of the file, or of the line of a record (MSH 2.2).
    limit: usize,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// 1-based line number of byte `at`.
pub(super) fn line_of(bytes: &[u8], at: usize) -> usize {
    1 + bytes[..at.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// A word for a message: quoted, cut short, non-text bytes escaped.
pub(super) fn shown(w: &[u8]) -> String {
    let s = String::from_utf8_lossy(&w[..w.len().min(24)]);
    let more = if w.len() > 24 { "..." } else { "" };
    format!("`{}{more}`", s.escape_debug())
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor {
            bytes,
            pos: 0,
            last: 0,
            binary: false,
            size_t: 8,
            big_endian: false,
            limit: bytes.len(),
        }
    }

    /// Where byte `at` is: its line in a text file, its offset in a binary one.
    pub fn place(&self, at: usize) -> String {
        place(self.bytes, self.binary, at)
    }

    pub fn fail<T>(&self, at: usize, msg: impl std::fmt::Display) -> Result<T, MeshError> {
        Err(MeshError::new(format!("{}: {msg}", self.place(at))))
    }

    pub fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn skip_space(&mut self) {
        while self.pos < self.limit && is_space(self.bytes[self.pos]) {
            self.pos += 1;
        }
    }

    /// The next whitespace-separated word.
    pub fn word(&mut self, what: &str) -> Result<&'a [u8], MeshError> {
        self.skip_space();
        let at = self.pos;
        while self.pos < self.limit && !is_space(self.bytes[self.pos]) {
            self.pos += 1;
        }
        self.last = at;
        if at == self.pos {
            let ends = if self.limit < self.bytes.len() {
                "the line"
            } else {
                "the file"
            };
            return self.fail(at, format!("{ends} ends before {what}"));
        }
        Ok(&self.bytes[at..self.pos])
    }

    /// The next word as a number (`kind` says which, for messages).
    pub fn ascii<T: std::str::FromStr>(&mut self, what: &str, kind: &str) -> Result<T, MeshError> {
        let w = self.word(what)?;
        match std::str::from_utf8(w).ok().and_then(|s| s.parse().ok()) {
            Some(v) => Ok(v),
            None => self.fail(
                self.last,
                format!("expected {what} ({kind}), found {}", shown(w)),
            ),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], MeshError> {
        self.last = self.pos;
        if self.left() < n {
            return self.fail(
                self.pos,
                format!(
                    "the file ends inside {what} ({} of its {n} bytes)",
                    self.left()
                ),
            );
        }
        self.pos += n;
        Ok(&self.bytes[self.pos - n..self.pos])
    }

    fn uint(&self, b: &[u8]) -> u64 {
        let fold = |v: u64, &x: &u8| v << 8 | u64::from(x);
        if self.big_endian {
            b.iter().fold(0, fold)
        } else {
            b.iter().rev().fold(0, fold)
        }
    }

    pub fn size_t(&mut self, what: &str) -> Result<u64, MeshError> {
        if !self.binary {
            return self.ascii(what, "an integer from 0 to 2^64 - 1");
        }
        let b = self.take(self.size_t, what)?;
        Ok(self.uint(b))
    }

    pub fn int(&mut self, what: &str) -> Result<i32, MeshError> {
        if !self.binary {
            return self.ascii(what, "an integer from -2^31 to 2^31 - 1");
        }
        let b = self.take(4, what)?;
        Ok(self.uint(b) as u32 as i32)
    }

    pub fn double(&mut self, what: &str) -> Result<f64, MeshError> {
        if !self.binary {
            return self.ascii(what, "a number");
        }
        let b = self.take(8, what)?;
        Ok(f64::from_bits(self.uint(b)))
    }

    /// A coordinate: a finite double.
    pub fn coordinate(&mut self, what: &str) -> Result<f64, MeshError> {
        let x = self.double(what)?;
        if !x.is_finite() {
            return self.fail(self.last, format!("{what} is {x}"));
        }
        Ok(x)
    }

    /// `n` (the value just read) as a count of items of at least `bytes` bytes each (in a
    /// binary file; `words` words each in a text file): a count the rest of the file cannot
    /// hold is an error here, before anything is allocated for it.
    pub fn check_count(
        &self,
        n: u64,
        what: &str,
        bytes: usize,
        words: usize,
    ) -> Result<usize, MeshError> {
        // A word takes at least one character and one separator.
        let each = if self.binary { bytes } else { 2 * words };
        let left = self.left() as u64;
        if n.checked_mul(each as u64).is_none_or(|b| b > left) {
            return self.fail(
                self.last,
                format!("{what} is {n}, more than the rest of the file ({left} bytes) can hold"),
            );
        }
        Ok(n as usize)
    }

    /// A size_t count (see [`Cursor::check_count`]).
    pub fn count(&mut self, what: &str, bytes: usize, words: usize) -> Result<usize, MeshError> {
        let n = self.size_t(what)?;
        self.check_count(n, what, bytes, words)
    }

    /// Consumes the rest of a section tag's line, up to and including its newline (binary data
    /// starts right after it).
    pub fn line_end(&mut self) -> Result<(), MeshError> {
        while self.pos < self.bytes.len() && matches!(self.bytes[self.pos], b' ' | b'\t' | b'\r') {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            None => Ok(()),
            Some(b'\n') => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => {
                let at = self.pos;
                let w = self.word("the end of the line")?;
                self.fail(at, format!("unexpected {} after a section tag", shown(w)))
            }
        }
    }

    /// The next word is `$End<name>`, closing the section begun at `start`.
    pub fn end(&mut self, name: &str, start: usize) -> Result<(), MeshError> {
        let want = format!("$End{name}");
        let at = {
            self.skip_space();
            self.pos
        };
        match self.word(&want) {
            Ok(w) if w == want.as_bytes() => self.line_end(),
            Ok(w) => self.fail(
                at,
                format!(
                    "expected {want} (closing ${name} at {}), found {}: a count or the data of \
                     the section is wrong",
                    self.place(start),
                    shown(w)
                ),
            ),
            Err(_) => self.fail(
                at,
                format!(
                    "the file ends inside ${name} (begun at {})",
                    self.place(start)
                ),
            ),
        }
    }

    /// Skips a section this reader does not use, to the line after its `$End<name>`.
    pub fn skip_section(&mut self, name: &str, start: usize) -> Result<(), MeshError> {
        let want = format!("$End{name}");
        let from = self.pos;
        let found = self.bytes[from..]
            .windows(want.len())
            .enumerate()
            .find(|&(i, w)| {
                w == want.as_bytes() && (i + from == 0 || self.bytes[i + from - 1] == b'\n')
            });
        match found {
            Some((i, _)) => {
                self.pos = from + i + want.len();
                self.line_end()
            }
            None => self.fail(start, format!("${name} has no {want}")),
        }
    }

    /// Reads words only up to the end of the current line from here on (after skipping to the
    /// record's first word); [`Cursor::end_record`] checks the line holds nothing more.
    pub fn begin_record(&mut self) {
        self.skip_space();
        self.limit = self.bytes[self.pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(self.bytes.len(), |i| self.pos + i);
    }

    pub fn end_record(&mut self, after: &str) -> Result<(), MeshError> {
        self.skip_space();
        let rest = self.pos;
        self.limit = self.bytes.len();
        if self.bytes.get(rest).is_some_and(|&b| b != b'\n') {
            let w = self.word("more")?;
            return self.fail(rest, format!("unexpected {} after {after}", shown(w)));
        }
        Ok(())
    }
}

/// Where byte `at` of a file is: its line in a text file, its offset in a binary one.
pub(super) fn place(bytes: &[u8], binary: bool, at: usize) -> String {
    if binary {
        format!("byte {at}")
    } else {
        format!("line {}", line_of(bytes, at))
    }
}
