//! Length-prefixed framing: every message after TCP connect is `int32 len` followed
//! by `len` bytes.

use std::io::{self, Read};

use super::jute::{Encode, JuteWrite};
use super::records::{ReplyHeader, RequestHeader};

/// ZooKeeper's default `jute.maxbuffer`: the largest frame either side accepts.
pub const DEFAULT_MAX_FRAME: usize = 0xfffff;

/// Builds one frame: reserves the length prefix, lets `body` append the payload,
/// then patches the length.
///
/// # Examples
///
/// ```
/// use zk_proto::frame::frame;
/// use zk_proto::jute::JuteWrite;
/// let f = frame(|out| out.put_i32(7));
/// assert_eq!(f, vec![0, 0, 0, 4, 0, 0, 0, 7]);
/// ```
pub fn frame(body: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.put_i32(0);
    body(&mut out);
    let len = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&len.to_be_bytes());
    out
}

/// A request frame: header plus optional body.
///
/// # Examples
///
/// ```
/// use zk_proto::{frame::request_frame, OpCode, PathRecord};
/// let f = request_frame(1, OpCode::Sync, Some(&PathRecord { path: "/".into() }));
/// assert_eq!(f.len(), 4 + 8 + 4 + 1);
/// ```
pub fn request_frame(xid: i32, op: super::OpCode, body: Option<&dyn EncodeDyn>) -> Vec<u8> {
    frame(|out| {
        RequestHeader { xid, op: op.code() }.encode(out);
        if let Some(b) = body {
            b.encode_dyn(out);
        }
    })
}

/// A reply frame: header plus optional body.
///
/// # Examples
///
/// ```
/// use zk_proto::{frame::reply_frame, ReplyHeader};
/// let f = reply_frame(&ReplyHeader { xid: -2, zxid: 5, err: 0 }, None);
/// assert_eq!(f.len(), 4 + 16);
/// ```
pub fn reply_frame(header: &ReplyHeader, body: Option<&dyn EncodeDyn>) -> Vec<u8> {
    frame(|out| {
        header.encode(out);
        if let Some(b) = body {
            b.encode_dyn(out);
        }
    })
}

/// Object-safe form of [`Encode`], so that frames can take any record.
pub trait EncodeDyn {
    /// Appends the encoding of `self`.
    fn encode_dyn(&self, out: &mut Vec<u8>);
}

impl<T: Encode> EncodeDyn for T {
    fn encode_dyn(&self, out: &mut Vec<u8>) {
        self.encode(out);
    }
}

/// Why a frame could not be taken from the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The length prefix was negative or over the limit.
    BadLength(i32),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::BadLength(n) => write!(f, "frame length {n} is negative or over the limit"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Accumulates bytes as they arrive and cuts them into frames; frames may be
/// split or merged across reads.
///
/// # Examples
///
/// ```
/// use zk_proto::frame::FrameBuffer;
/// let mut fb = FrameBuffer::new(1024);
/// fb.extend(&[0, 0, 0, 2, 9]);
/// assert_eq!(fb.next_frame().unwrap(), None);
/// fb.extend(&[8, 0, 0]);
/// assert_eq!(fb.next_frame().unwrap(), Some(vec![9, 8]));
/// ```
#[derive(Debug)]
pub struct FrameBuffer {
    buf: Vec<u8>,
    start: usize,
    max: usize,
}

impl FrameBuffer {
    /// An empty buffer that refuses frames longer than `max` bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let fb = zk_proto::frame::FrameBuffer::new(16);
    /// assert_eq!(fb.buffered(), 0);
    /// ```
    pub fn new(max: usize) -> Self {
        FrameBuffer {
            buf: Vec::new(),
            start: 0,
            max,
        }
    }

    /// Appends received bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut fb = zk_proto::frame::FrameBuffer::new(16);
    /// fb.extend(&[1, 2]);
    /// assert_eq!(fb.buffered(), 2);
    /// ```
    pub fn extend(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 64 * 1024 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes received and not yet returned as frames.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_proto::frame::FrameBuffer::new(1).buffered(), 0);
    /// ```
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The first 4 buffered bytes, if there are 4 (for four-letter-word detection).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut fb = zk_proto::frame::FrameBuffer::new(1);
    /// fb.extend(b"ruok");
    /// assert_eq!(fb.peek4(), Some(*b"ruok"));
    /// ```
    pub fn peek4(&self) -> Option<[u8; 4]> {
        let b = &self.buf[self.start..];
        (b.len() >= 4).then(|| [b[0], b[1], b[2], b[3]])
    }

    /// The next complete frame's payload, if one is buffered.
    ///
    /// # Errors
    ///
    /// [`FrameError::BadLength`] when the length prefix is negative or over the
    /// limit; the stream cannot be resynchronised and should be closed.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut fb = zk_proto::frame::FrameBuffer::new(4);
    /// fb.extend(&[0, 0, 0, 5]);
    /// assert!(fb.next_frame().is_err());
    /// ```
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let Some(p) = self.peek4() else { return Ok(None) };
        let len = i32::from_be_bytes(p);
        if len < 0 || len as usize > self.max {
            return Err(FrameError::BadLength(len));
        }
        let len = len as usize;
        if self.buffered() < 4 + len {
            return Ok(None);
        }
        let s = self.start + 4;
        let out = self.buf[s..s + len].to_vec();
        self.start = s + len;
        Ok(Some(out))
    }
}

/// Reads exactly one frame from a blocking reader.
///
/// # Errors
///
/// I/O errors, and `InvalidData` for a length that is negative or over `max`.
///
/// # Examples
///
/// ```
/// let mut input: &[u8] = &[0, 0, 0, 1, 42];
/// let f = zk_proto::frame::read_frame(&mut input, 1024).unwrap();
/// assert_eq!(f, vec![42]);
/// ```
pub fn read_frame<R: Read>(r: &mut R, max: usize) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = i32::from_be_bytes(len);
    if len < 0 || len as usize > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, FrameError::BadLength(len)));
    }
    let mut buf = vec![0u8; len as usize];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

/// The four-letter words a server recognises as the first 4 bytes of a connection.
pub const FOUR_LETTER_WORDS: &[&str] = &[
    "ruok", "srvr", "stat", "mntr", "wchs", "wchc", "wchp", "cons", "conf", "envi", "dump", "dirs", "srst", "crst",
    "isro", "gtmk", "stmk",
];

/// The four-letter word spelled by `first4`, if it is one.
///
/// # Examples
///
/// ```
/// use zk_proto::frame::four_letter_word;
/// assert_eq!(four_letter_word(*b"srvr"), Some("srvr"));
/// assert_eq!(four_letter_word([0, 0, 0, 45]), None);
/// ```
pub fn four_letter_word(first4: [u8; 4]) -> Option<&'static str> {
    FOUR_LETTER_WORDS.iter().copied().find(|w| w.as_bytes() == first4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_and_merged() {
        let a = frame(|o| o.extend_from_slice(b"hello"));
        let b = frame(|o| o.extend_from_slice(b""));
        let c = frame(|o| o.extend_from_slice(b"xyz"));
        let all: Vec<u8> = [a, b, c].concat();
        for chunk in 1..all.len() {
            let mut fb = FrameBuffer::new(100);
            let mut got = Vec::new();
            for piece in all.chunks(chunk) {
                fb.extend(piece);
                while let Some(f) = fb.next_frame().unwrap() {
                    got.push(f);
                }
            }
            assert_eq!(got, vec![b"hello".to_vec(), vec![], b"xyz".to_vec()]);
            assert_eq!(fb.buffered(), 0);
        }
    }

    #[test]
    fn oversized_and_negative_lengths_are_errors() {
        let mut fb = FrameBuffer::new(DEFAULT_MAX_FRAME);
        fb.extend(&(DEFAULT_MAX_FRAME as i32 + 1).to_be_bytes());
        assert!(fb.next_frame().is_err());
        let mut fb = FrameBuffer::new(DEFAULT_MAX_FRAME);
        fb.extend(&(-5i32).to_be_bytes());
        assert_eq!(fb.next_frame(), Err(FrameError::BadLength(-5)));
        let mut input: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut input, 10).is_err());
    }
}
