//! Stamps: the `colibri.fmt` map of tensor name → format name, and TRUST-VERIFY-REFUSE.
//!
//! A shard may carry `__metadata__["colibri.fmt"]`, a JSON string whose *content* is a JSON
//! object `{"<tensor>": "<format name>", …}`. The container layer (which owns files and the
//! outer JSON) hands that content to [`Stamps::parse`] or [`Stamps::scan`]; this module is
//! `no_std` and allocation-free: a strict RFC 8259 scanner validates the whole document once,
//! then [`Stamps::iter`] walks the entries again, yielding [`JsonStr`]s — borrowed, still
//! escaped slices that unescape on demand ([`JsonStr::chars`], [`JsonStr::eq_str`], `Display`).
//!
//! # Strictness
//! - The document must be exactly one JSON value with optional whitespace around it; that value
//!   must be an object, and every entry's value a string. Syntax errors win over shape errors:
//!   a document that is not JSON at all is reported as such even if an earlier entry already
//!   held a number. Every refusal is [`StampError::Malformed`] with its byte offset and a
//!   [`MalformedReason`] (one class, `E_STAMP_MALFORMED`, as in `docs/int4-rans256-g0.md`).
//! - Escapes: `\" \\ \/ \b \f \n \r \t \uXXXX`; a `\u` high surrogate must be followed by a
//!   `\u` low surrogate (they combine into one character); a lone surrogate cannot be a Rust
//!   `char` and is refused (DECISION: JSON's grammar tolerates it, its meaning is undefined).
//!   Raw control characters (< U+0020) inside strings are refused.
//! - Nesting of non-string values is validated up to depth 128 (deeper is refused), without
//!   recursion, so no input can exhaust the stack.
//!
//! # Duplicates (DECISION)
//! JSON allows a key twice; colibrì's writers never emit it. A duplicate with the **same** format
//! collapses; a duplicate naming a **different** format is a conflict
//! ([`StampError::Conflict`]), exactly as two shards disagreeing would be. [`Stamps::parse`]
//! checks this pairwise with no allocation, so it first refuses objects of more than
//! [`MAX_STAMPS`] entries (bounding the work to `MAX_STAMPS²/2` comparisons);
//! [`Stamps::scan`] skips both checks (linear time) for callers that deduplicate themselves —
//! the `std` [`StampSet`] does, over a whole container, and caps *distinct* names instead.
//!
//! # Container level (`std` feature)
//! [`StampSet`] ingests every shard's value: conflicting claims are refused naming the tensor
//! and both claims (and shards); agreeing duplicates collapse; at most [`MAX_STAMPS`] distinct
//! names per container; [`StampSet::check_dangling`] reports a stamp naming a tensor the
//! container lacks. Its error, [`StampSetError`], carries owned names (`String`), so unlike the
//! `Copy` no_std errors it is `Clone` only — the names are the point of those refusals, and a
//! container is a `std` concept anyway.
//!
//! # Verify
//! [`verify`] is the last step of TRUST-VERIFY-REFUSE for one tensor: the stamp must name a
//! registered format and the resolved format must be that format; an unstamped tensor may
//! never resolve to a stamp-gated format (`int4-rans256-g0`, `int4-rans64-t1`). Its error
//! borrows the tensor name (`&str`), which keeps it `Copy` and allocation-free.

use core::fmt;

use crate::format::Format;
use crate::resolve::Resolved;

/// At most this many distinct stamped tensor names per container (and entries per object in
/// [`Stamps::parse`]).
pub const MAX_STAMPS: usize = 4096;

/// Maximum nesting depth of a non-string value the scanner validates.
const MAX_DEPTH: u32 = 128;

/// What exactly is wrong with a malformed stamp document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MalformedReason {
    /// A byte that cannot start or continue the expected token.
    Unexpected,
    /// The document ended inside a value.
    UnexpectedEnd,
    /// Bytes after the top-level value.
    TrailingData,
    /// An invalid `\` escape or a malformed `\u` escape.
    BadEscape,
    /// A `\u` surrogate that is not part of a high/low pair.
    LoneSurrogate,
    /// A raw control character (< U+0020) inside a string.
    ControlChar,
    /// Nesting deeper than 128.
    TooDeep,
    /// Valid JSON, but the top-level value is not an object.
    NotAnObject,
    /// Valid JSON, but an entry's value is not a string.
    NonStringEntry,
}

impl MalformedReason {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Unexpected => "unexpected character",
            Self::UnexpectedEnd => "unexpected end of input",
            Self::TrailingData => "data after the object",
            Self::BadEscape => "invalid escape",
            Self::LoneSurrogate => "lone utf-16 surrogate escape",
            Self::ControlChar => "raw control character in a string",
            Self::TooDeep => "nesting deeper than 128",
            Self::NotAnObject => "top-level value is not an object",
            Self::NonStringEntry => "entry value is not a string",
        }
    }
}

impl fmt::Display for MalformedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a stamp document was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StampError {
    /// Not a JSON object of string → string.
    #[error(
        "stamp json is malformed at byte {offset}: {reason}, expected an object of string to string"
    )]
    Malformed {
        /// Byte offset of the fault.
        offset: usize,
        /// What is wrong.
        reason: MalformedReason,
    },
    /// One object names the same tensor twice with different formats.
    #[error(
        "stamp json names one tensor twice with different formats (keys at bytes {first} and {second})"
    )]
    Conflict {
        /// Byte offset of the first key's opening quote.
        first: usize,
        /// Byte offset of the conflicting key's opening quote.
        second: usize,
    },
    /// More entries than [`MAX_STAMPS`].
    #[error("stamp json has {got} entries, expected at most {cap}")]
    TooMany {
        /// Entries found (counting stops just past the cap).
        got: usize,
        /// The cap.
        cap: usize,
    },
}

impl StampError {
    /// Stable machine-readable class name of this refusal.
    pub const fn class(&self) -> &'static str {
        match self {
            Self::Malformed { .. } => "E_STAMP_MALFORMED",
            Self::Conflict { .. } => "E_STAMP_CONFLICT",
            Self::TooMany { .. } => "E_STAMP_CAP",
        }
    }
}

const fn malformed(offset: usize, reason: MalformedReason) -> StampError {
    StampError::Malformed { offset, reason }
}

/// A validating cursor over the document's bytes.
struct Scanner<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn fail(&self) -> StampError {
        match self.peek() {
            None => malformed(self.pos, MalformedReason::UnexpectedEnd),
            Some(_) => malformed(self.pos, MalformedReason::Unexpected),
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), StampError> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.fail())
        }
    }

    fn hex4(&mut self) -> Result<u32, StampError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                Some(_) => return Err(malformed(self.pos, MalformedReason::BadEscape)),
                None => return Err(malformed(self.pos, MalformedReason::UnexpectedEnd)),
            };
            v = v << 4 | u32::from(d);
            self.pos += 1;
        }
        Ok(v)
    }

    /// Validates a string starting at `"`; returns the range of its raw (escaped) content.
    fn string(&mut self) -> Result<(usize, usize), StampError> {
        self.expect(b'"')?;
        let start = self.pos;
        loop {
            let at = self.pos;
            let Some(c) = self.peek() else {
                return Err(malformed(at, MalformedReason::UnexpectedEnd));
            };
            self.pos += 1;
            match c {
                b'"' => return Ok((start, at)),
                b'\\' => match self.peek() {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.pos += 1,
                    Some(b'u') => {
                        self.pos += 1;
                        let u = self.hex4()?;
                        if (0xDC00..0xE000).contains(&u) {
                            return Err(malformed(at, MalformedReason::LoneSurrogate));
                        }
                        if (0xD800..0xDC00).contains(&u) {
                            let low_ok = self.b.get(self.pos..self.pos + 2) == Some(b"\\u") && {
                                self.pos += 2;
                                let l = self.hex4()?;
                                (0xDC00..0xE000).contains(&l)
                            };
                            if !low_ok {
                                return Err(malformed(at, MalformedReason::LoneSurrogate));
                            }
                        }
                    }
                    Some(_) => return Err(malformed(at, MalformedReason::BadEscape)),
                    None => return Err(malformed(self.pos, MalformedReason::UnexpectedEnd)),
                },
                0x00..=0x1F => return Err(malformed(at, MalformedReason::ControlChar)),
                _ => {}
            }
        }
    }

    fn digits(&mut self) -> Result<(), StampError> {
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return Err(self.fail());
        }
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        Ok(())
    }

    fn number(&mut self) -> Result<(), StampError> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits()?,
            _ => return Err(self.fail()),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.digits()?;
        }
        Ok(())
    }

    fn literal(&mut self, lit: &[u8]) -> Result<(), StampError> {
        for &c in lit {
            self.expect(c)?;
        }
        Ok(())
    }

    /// `"key" ws : ws` (the key's content range).
    fn key(&mut self) -> Result<(usize, usize), StampError> {
        self.ws();
        let k = self.string()?;
        self.ws();
        self.expect(b':')?;
        self.ws();
        Ok(k)
    }

    /// Validates any JSON value, iteratively (a bit stack: 1 = object, 0 = array).
    fn value(&mut self) -> Result<(), StampError> {
        let mut stack: u128 = 0;
        let mut depth: u32 = 0;
        loop {
            // Expect one value.
            self.ws();
            let mut opened = false;
            match self.peek() {
                Some(open @ (b'{' | b'[')) => {
                    let is_obj = open == b'{';
                    self.pos += 1;
                    self.ws();
                    let close = if is_obj { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.pos += 1;
                    } else {
                        if depth >= MAX_DEPTH {
                            return Err(malformed(self.pos, MalformedReason::TooDeep));
                        }
                        stack = stack << 1 | u128::from(is_obj);
                        depth += 1;
                        if is_obj {
                            self.key()?;
                        }
                        opened = true;
                    }
                }
                Some(b'"') => {
                    self.string()?;
                }
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                _ => return Err(self.fail()),
            }
            if opened {
                continue;
            }
            // After a value: close containers or move to the next element.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                self.ws();
                let in_obj = stack & 1 == 1;
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        if in_obj {
                            self.key()?;
                        }
                        break;
                    }
                    Some(b'}') if in_obj => {}
                    Some(b']') if !in_obj => {}
                    _ => return Err(self.fail()),
                }
                self.pos += 1;
                stack >>= 1;
                depth -= 1;
            }
        }
    }
}

/// A JSON string's raw content (between the quotes, escapes intact), from a validated
/// document. Compare and print it without allocating.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct JsonStr<'a> {
    raw: &'a str,
}

impl<'a> JsonStr<'a> {
    /// The raw, still-escaped text.
    pub const fn raw(&self) -> &'a str {
        self.raw
    }

    /// Whether the raw text contains escapes (if not, [`Self::raw`] is the value itself).
    pub fn has_escapes(&self) -> bool {
        self.raw.as_bytes().contains(&b'\\')
    }

    /// The unescaped characters.
    pub fn chars(&self) -> JsonChars<'a> {
        JsonChars { s: self.raw.as_bytes(), rest: self.raw }
    }

    /// Whether the unescaped value equals `s`.
    pub fn eq_str(&self, s: &str) -> bool {
        if !self.has_escapes() {
            return self.raw == s;
        }
        self.chars().eq(s.chars())
    }

    /// Whether two values are equal after unescaping.
    pub fn eq_json(&self, other: &JsonStr<'_>) -> bool {
        if !self.has_escapes() && !other.has_escapes() {
            return self.raw == other.raw;
        }
        self.chars().eq(other.chars())
    }

    /// The registered format this value names, if any.
    pub fn format(&self) -> Option<Format> {
        Format::ALL.into_iter().find(|f| self.eq_str(f.name()))
    }
}

impl fmt::Display for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.has_escapes() {
            return f.write_str(self.raw);
        }
        for c in self.chars() {
            fmt::Write::write_char(f, c)?;
        }
        Ok(())
    }
}

impl fmt::Debug for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.raw)
    }
}

/// Iterator over the unescaped characters of a [`JsonStr`].
#[derive(Debug, Clone)]
pub struct JsonChars<'a> {
    s: &'a [u8],
    rest: &'a str,
}

impl JsonChars<'_> {
    fn hex4(&mut self) -> u32 {
        let mut v = 0u32;
        for _ in 0..4 {
            let (d, tail) = match self.s.split_first() {
                Some((&c, tail)) => (char::from(c).to_digit(16).unwrap_or(0), tail),
                None => (0, self.s),
            };
            v = v << 4 | d;
            self.s = tail;
        }
        v
    }
}

impl Iterator for JsonChars<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        // `rest` mirrors `s` for multi-byte characters; both advance together.
        let (&first, tail) = self.s.split_first()?;
        if first != b'\\' {
            let off = self.rest.len() - self.s.len();
            let c = self.rest.get(off..)?.chars().next()?;
            self.s = &self.s[c.len_utf8()..];
            return Some(c);
        }
        self.s = tail;
        let (&e, tail) = self.s.split_first()?;
        self.s = tail;
        let c = match e {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4();
                if (0xD800..0xDC00).contains(&hi) {
                    // Validated: a `\uXXXX` low surrogate follows.
                    self.s = self.s.get(2..).unwrap_or(&[]);
                    let lo = self.hex4();
                    let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF);
                    char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER)
                } else {
                    char::from_u32(hi).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
            }
            other => char::from(other), // `"`, `\`, `/`
        };
        Some(c)
    }
}

/// One `"tensor": "format"` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The tensor name.
    pub tensor: JsonStr<'a>,
    /// The format name (maybe not a registered one: [`JsonStr::format`] tells).
    pub format: JsonStr<'a>,
    /// Byte offset of the key's opening quote in the document.
    pub offset: usize,
}

/// A validated `colibri.fmt` document: a JSON object of string → string.
#[derive(Debug, Clone, Copy)]
pub struct Stamps<'a> {
    json: &'a str,
    len: usize,
}

impl<'a> Stamps<'a> {
    /// Validates syntax and shape only (linear time; no duplicate check, no cap).
    ///
    /// # Errors
    /// [`StampError::Malformed`] with the first fault.
    pub fn scan(json: &'a str) -> Result<Self, StampError> {
        let mut sc = Scanner { b: json.as_bytes(), pos: 0 };
        sc.ws();
        if sc.peek() != Some(b'{') {
            // Not an object: is it JSON at all?
            let start = sc.pos;
            sc.value()?;
            sc.ws();
            if sc.pos != sc.b.len() {
                return Err(malformed(sc.pos, MalformedReason::TrailingData));
            }
            return Err(malformed(start, MalformedReason::NotAnObject));
        }
        sc.pos += 1;
        sc.ws();
        let mut len = 0usize;
        let mut non_string: Option<usize> = None;
        if sc.peek() == Some(b'}') {
            sc.pos += 1;
        } else {
            loop {
                sc.key()?;
                len += 1;
                if sc.peek() == Some(b'"') {
                    sc.string()?;
                } else {
                    non_string.get_or_insert(sc.pos);
                    sc.value()?;
                }
                sc.ws();
                match sc.peek() {
                    Some(b',') => sc.pos += 1,
                    Some(b'}') => {
                        sc.pos += 1;
                        break;
                    }
                    _ => return Err(sc.fail()),
                }
            }
        }
        sc.ws();
        if sc.pos != sc.b.len() {
            return Err(malformed(sc.pos, MalformedReason::TrailingData));
        }
        if let Some(at) = non_string {
            return Err(malformed(at, MalformedReason::NonStringEntry));
        }
        Ok(Self { json, len })
    }

    /// Validates syntax and shape, refuses more than [`MAX_STAMPS`] entries, and refuses a
    /// tensor named twice with different formats (agreeing duplicates collapse).
    ///
    /// # Errors
    /// [`StampError::Malformed`], [`StampError::TooMany`] or [`StampError::Conflict`].
    ///
    /// # Examples
    /// ```
    /// use tetrad_quant::{stamp::Stamps, Format};
    /// let s = Stamps::parse(r#"{"a.weight": "int4-row", "b\u002eweight": "mxfp4"}"#)?;
    /// assert_eq!(s.get("b.weight").and_then(|v| v.format()), Some(Format::Mxfp4));
    /// # Ok::<(), tetrad_quant::stamp::StampError>(())
    /// ```
    pub fn parse(json: &'a str) -> Result<Self, StampError> {
        let s = Self::scan(json)?;
        if s.len > MAX_STAMPS {
            return Err(StampError::TooMany { got: s.len, cap: MAX_STAMPS });
        }
        for (j, b) in s.iter().enumerate() {
            for a in s.iter().take(j) {
                if a.tensor.eq_json(&b.tensor) {
                    if !a.format.eq_json(&b.format) {
                        return Err(StampError::Conflict { first: a.offset, second: b.offset });
                    }
                    break;
                }
            }
        }
        Ok(s)
    }

    /// Entries in document order (duplicates included).
    pub fn iter(&self) -> Entries<'a> {
        let b = self.json.as_bytes();
        let pos = b.iter().position(|&c| c == b'{').map_or(b.len(), |p| p + 1);
        Entries { json: self.json, pos }
    }

    /// Number of entries (duplicates included).
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the object is empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The format name stamped on `tensor` (its first entry), if any.
    pub fn get(&self, tensor: &str) -> Option<JsonStr<'a>> {
        self.iter().find(|e| e.tensor.eq_str(tensor)).map(|e| e.format)
    }
}

impl<'a> IntoIterator for &Stamps<'a> {
    type Item = Entry<'a>;
    type IntoIter = Entries<'a>;
    fn into_iter(self) -> Entries<'a> {
        self.iter()
    }
}

/// Iterator over the entries of a validated [`Stamps`] document.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    json: &'a str,
    pos: usize,
}

impl<'a> Entries<'a> {
    fn skip_ws_and(&mut self, also: u8) {
        while let Some(&c) = self.json.as_bytes().get(self.pos) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') || c == also {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// The string starting at `self.pos` (a validated `"`), advancing past it.
    fn string(&mut self) -> Option<(usize, JsonStr<'a>)> {
        let b = self.json.as_bytes();
        let open = self.pos;
        if b.get(open) != Some(&b'"') {
            return None;
        }
        let mut p = open + 1;
        loop {
            match b.get(p)? {
                b'\\' => p += 2,
                b'"' => break,
                _ => p += 1,
            }
        }
        self.pos = p + 1;
        Some((open, JsonStr { raw: self.json.get(open + 1..p)? }))
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        // The document was validated by `Stamps::scan`: every entry is `"k" : "v"`.
        self.skip_ws_and(b',');
        let (offset, tensor) = self.string()?;
        self.skip_ws_and(b':');
        let (_, format) = self.string()?;
        Some(Entry { tensor, format, offset })
    }
}

/// Why [`verify`] refused a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError<'a> {
    /// The stamp names no registered format.
    #[error("tensor {tensor:?} is stamped {stamp:?}, which is not a registered format name")]
    UnknownFormat {
        /// The tensor.
        tensor: &'a str,
        /// The stamp text.
        stamp: &'a str,
    },
    /// The resolved format is not the stamped one.
    #[error("tensor {tensor:?} is stamped {stamped} but resolves to {resolved}")]
    Mismatch {
        /// The tensor.
        tensor: &'a str,
        /// What the stamp says.
        stamped: Format,
        /// What resolution found.
        resolved: Format,
    },
    /// A format that only a stamp can select was resolved for an unstamped tensor.
    #[error("tensor {tensor:?} resolves to {format} without a stamp, expected a stamp naming it")]
    Unstamped {
        /// The tensor.
        tensor: &'a str,
        /// The stamp-gated format.
        format: Format,
    },
}

impl VerifyError<'_> {
    /// Stable machine-readable class name of this refusal (the same refusals as
    /// [`ResolveError`](crate::ResolveError)'s stamp classes, seen at the verify stage).
    pub const fn class(&self) -> &'static str {
        match self {
            Self::UnknownFormat { .. } => "E_STAMP_UNKNOWN",
            Self::Mismatch { .. } => "E_STAMP_MISMATCH",
            Self::Unstamped { .. } => "E_STAMP_MISSING",
        }
    }
}

/// TRUST-VERIFY-REFUSE for one tensor: `stamp` (its `colibri.fmt` entry, if any) must name a
/// registered format, and `resolved` (normally from [`resolve()`](crate::resolve()) with that
/// stamp) must be exactly that format. Unstamped, anything but a stamp-gated format passes.
///
/// # Errors
/// [`VerifyError`], naming the tensor.
pub fn verify<'a>(
    tensor: &'a str,
    stamp: Option<&'a str>,
    resolved: &Resolved,
) -> Result<(), VerifyError<'a>> {
    match stamp {
        None if resolved.format.status() == crate::format::Status::StampGated => {
            Err(VerifyError::Unstamped { tensor, format: resolved.format })
        }
        None => Ok(()),
        Some(s) => {
            let stamped =
                Format::from_name(s).ok_or(VerifyError::UnknownFormat { tensor, stamp: s })?;
            if stamped == resolved.format {
                Ok(())
            } else {
                Err(VerifyError::Mismatch { tensor, stamped, resolved: resolved.format })
            }
        }
    }
}

#[cfg(feature = "std")]
pub use set::{StampSet, StampSetError};

#[cfg(feature = "std")]
mod set {
    use std::collections::BTreeMap;
    use std::string::{String, ToString};

    use super::{MAX_STAMPS, StampError, Stamps};

    /// One tensor's claim: the format name and the shard that made it first.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Claim {
        format: String,
        shard: String,
    }

    /// Every stamp of one container, ingested shard by shard (`std` feature).
    #[derive(Debug, Clone, Default)]
    pub struct StampSet {
        map: BTreeMap<String, Claim>,
    }

    /// Why a container's stamps were refused (owned names; see the module docs).
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    #[non_exhaustive]
    pub enum StampSetError {
        /// A shard's `colibri.fmt` is not a JSON object of string → string.
        #[error("shard {shard}: {error}")]
        Malformed {
            /// The shard.
            shard: String,
            /// The parse refusal.
            error: StampError,
        },
        /// One tensor is stamped with two different formats.
        #[error(
            "tensor {tensor:?} is stamped {first:?} (shard {first_shard}) and {second:?} \
             (shard {second_shard}), expected one format"
        )]
        Conflict {
            /// The tensor.
            tensor: String,
            /// The first claim.
            first: String,
            /// The shard of the first claim.
            first_shard: String,
            /// The conflicting claim.
            second: String,
            /// The shard of the conflicting claim.
            second_shard: String,
        },
        /// More distinct stamped names than [`MAX_STAMPS`].
        #[error("shard {shard}: container has more than {cap} distinct stamped tensors")]
        TooMany {
            /// The shard whose stamps crossed the cap.
            shard: String,
            /// The cap.
            cap: usize,
        },
        /// A stamp names a tensor the container does not hold.
        #[error(
            "tensor {tensor:?} is stamped {format:?} (shard {shard}) but absent from the container"
        )]
        Dangling {
            /// The tensor.
            tensor: String,
            /// Its stamp.
            format: String,
            /// The shard whose stamp named it.
            shard: String,
        },
    }

    impl StampSetError {
        /// Stable machine-readable class name of this refusal.
        pub const fn class(&self) -> &'static str {
            match self {
                Self::Malformed { .. } => "E_STAMP_MALFORMED",
                Self::Conflict { .. } => "E_STAMP_CONFLICT",
                Self::TooMany { .. } => "E_STAMP_CAP",
                Self::Dangling { .. } => "E_STAMP_DANGLING",
            }
        }
    }

    impl StampSet {
        /// An empty set.
        pub fn new() -> Self {
            Self::default()
        }

        /// Ingests one shard's `colibri.fmt` value (`None`: the key is missing, which is fine).
        /// All-or-nothing: on a refusal the set is unchanged.
        ///
        /// # Errors
        /// [`StampSetError::Malformed`], [`StampSetError::Conflict`] (within the shard or
        /// against an earlier one), [`StampSetError::TooMany`].
        pub fn ingest(&mut self, shard: &str, value: Option<&str>) -> Result<(), StampSetError> {
            let Some(json) = value else { return Ok(()) };
            let stamps = Stamps::scan(json)
                .map_err(|error| StampSetError::Malformed { shard: shard.to_string(), error })?;
            let mut fresh: BTreeMap<String, String> = BTreeMap::new();
            for e in &stamps {
                let tensor = e.tensor.to_string();
                let format = e.format.to_string();
                let earlier = self
                    .map
                    .get(&tensor)
                    .map(|c| (c.format.as_str(), c.shard.as_str()))
                    .or_else(|| fresh.get(&tensor).map(|f| (f.as_str(), shard)));
                match earlier {
                    Some((f, _)) if f == format => {}
                    Some((f, s)) => {
                        return Err(StampSetError::Conflict {
                            tensor,
                            first: f.to_string(),
                            first_shard: s.to_string(),
                            second: format,
                            second_shard: shard.to_string(),
                        });
                    }
                    None => {
                        fresh.insert(tensor, format);
                        if self.map.len() + fresh.len() > MAX_STAMPS {
                            return Err(StampSetError::TooMany {
                                shard: shard.to_string(),
                                cap: MAX_STAMPS,
                            });
                        }
                    }
                }
            }
            for (tensor, format) in fresh {
                self.map.insert(tensor, Claim { format, shard: shard.to_string() });
            }
            Ok(())
        }

        /// The format name stamped on `tensor`, if any.
        pub fn get(&self, tensor: &str) -> Option<&str> {
            self.map.get(tensor).map(|c| c.format.as_str())
        }

        /// Distinct stamped tensors.
        pub fn len(&self) -> usize {
            self.map.len()
        }

        /// Whether nothing is stamped.
        pub fn is_empty(&self) -> bool {
            self.map.is_empty()
        }

        /// `(tensor, format name)` in sorted tensor order.
        pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
            self.map.iter().map(|(t, c)| (t.as_str(), c.format.as_str()))
        }

        /// Refuses the first stamp (in sorted order) naming a tensor for which `present`
        /// returns false.
        ///
        /// # Errors
        /// [`StampSetError::Dangling`].
        pub fn check_dangling(&self, present: impl Fn(&str) -> bool) -> Result<(), StampSetError> {
            match self.map.iter().find(|(t, _)| !present(t)) {
                Some((t, c)) => Err(StampSetError::Dangling {
                    tensor: t.clone(),
                    format: c.format.clone(),
                    shard: c.shard.clone(),
                }),
                None => Ok(()),
            }
        }
    }
}
