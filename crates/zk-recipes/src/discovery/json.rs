//! The JSON underneath: a scanner that finds an object's members as raw
//! text (so that a payload and unknown fields are kept byte for byte, in
//! their order), and Jackson's way of writing a string.

use std::fmt::Write as _;

/// How deep a value may nest before it is refused (a bound on the scanner's
/// recursion: bad input never overflows the stack).
const MAX_DEPTH: usize = 256;

/// A scan failure: where (a byte offset) and what.
#[derive(Debug)]
pub(crate) struct ScanError {
    pub(crate) offset: usize,
    pub(crate) reason: String,
}

/// The members of the JSON object `text` (its first value, as Jackson reads
/// it: a leading BOM and whitespace skipped, anything after the object
/// ignored), each as its key and its value's raw text, in order.
pub(crate) fn object_members(text: &str) -> Result<Vec<(String, &str)>, ScanError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    s.ws();
    if s.i >= s.b.len() {
        return Err(s.err("no content (empty input)"));
    }
    if s.b[s.i] != b'{' {
        return Err(s.err("not a JSON object"));
    }
    s.i += 1;
    let mut members = Vec::new();
    s.ws();
    if s.peek() == Some(b'}') {
        return Ok(members);
    }
    loop {
        s.ws();
        let k0 = s.i;
        if s.peek() != Some(b'"') {
            return Err(s.err("a member's name must be a double-quoted string"));
        }
        s.string()?;
        let key: String = serde_json::from_str(&text[k0..s.i]).map_err(|e| ScanError {
            offset: k0,
            reason: format!("a member's name: {e}"),
        })?;
        s.ws();
        if s.peek() != Some(b':') {
            return Err(s.err("expected ':'"));
        }
        s.i += 1;
        s.ws();
        let v0 = s.i;
        s.value(1)?;
        members.push((key, &text[v0..s.i]));
        s.ws();
        match s.peek() {
            Some(b',') => s.i += 1,
            Some(b'}') => return Ok(members),
            _ => return Err(s.err("expected ',' or '}'")),
        }
    }
}

/// Whether `text` is one JSON value (whitespace around allowed).
pub(crate) fn check_value(text: &str) -> Result<(), ScanError> {
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    s.ws();
    s.value(0)?;
    s.ws();
    if s.i != s.b.len() {
        return Err(s.err("more after the value"));
    }
    Ok(())
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn err(&self, reason: &str) -> ScanError {
        ScanError {
            offset: self.i,
            reason: reason.to_string(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<(), ScanError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deep"));
        }
        match self.peek() {
            None => Err(self.err("unexpected end of input")),
            Some(b'"') => self.string(),
            Some(b'{') => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    if self.peek() != Some(b'"') {
                        return Err(self.err("a member's name must be a double-quoted string"));
                    }
                    self.string()?;
                    self.ws();
                    if self.peek() != Some(b':') {
                        return Err(self.err("expected ':'"));
                    }
                    self.i += 1;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return Err(self.err("expected ',' or '}'")),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return Err(self.err("expected ',' or ']'")),
                    }
                }
            }
            Some(b't') => self.literal("true"),
            Some(b'f') => self.literal("false"),
            Some(b'n') => self.literal("null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("not a JSON value")),
        }
    }

    fn literal(&mut self, lit: &str) -> Result<(), ScanError> {
        if self.b[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            Ok(())
        } else {
            Err(self.err("not a JSON value"))
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<(), ScanError> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("a number needs a digit")),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(self.err("a fraction needs a digit"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(self.err("an exponent needs a digit"));
            }
        }
        Ok(())
    }

    fn string(&mut self) -> Result<(), ScanError> {
        // At the opening quote.
        self.i += 1;
        loop {
            match self.peek() {
                None => return Err(self.err("a string is not closed")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                        Some(b'u') => {
                            self.i += 1;
                            for _ in 0..4 {
                                if !matches!(self.peek(), Some(c) if c.is_ascii_hexdigit()) {
                                    return Err(self.err("a \\u escape needs 4 hex digits"));
                                }
                                self.i += 1;
                            }
                        }
                        _ => return Err(self.err("an unknown escape")),
                    }
                }
                Some(c) if c < 0x20 => return Err(self.err("a control character in a string")),
                Some(_) => self.i += 1,
            }
        }
    }
}

/// Writes `s` as a JSON string the way Jackson does: `"` and `\` escaped,
/// `\b \t \n \f \r` in their short form, the other control characters as
/// `\u00XX` (upper-case hex), everything else (`/`, non-ASCII, U+2028) as is.
pub(crate) fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{0c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `s` as a JSON string, Jackson's way.
pub(crate) fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_str(&mut out, s);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_their_raw_text_and_order() {
        let m = object_members("\u{feff} {\"b\": [1, 2.50] ,\"a\":{\"z\":1,\"@class\":\"x\"}} trailing").unwrap();
        assert_eq!(
            m,
            vec![("b".into(), "[1, 2.50]"), ("a".into(), "{\"z\":1,\"@class\":\"x\"}")]
        );
        assert!(object_members("{}").unwrap().is_empty());
    }

    #[test]
    fn what_jackson_rejects_is_refused() {
        for bad in [
            "",
            "   ",
            "null",
            "[1]",
            "{'a':1}",
            "{/*c*/}",
            "{\"a\":}",
            "{\"a\":1",
            "{\"a\":\"\u{1}\"}",
            "{\"a\":01x}",
        ] {
            assert!(object_members(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(10_000);
        assert!(check_value(&deep).is_err());
    }

    #[test]
    fn strings_are_escaped_as_jackson_does() {
        assert_eq!(
            quoted("a\"b\\c/d\n\t\u{1}\u{1f}é\u{2028}"),
            "\"a\\\"b\\\\c/d\\n\\t\\u0001\\u001Fé\u{2028}\""
        );
    }
}
