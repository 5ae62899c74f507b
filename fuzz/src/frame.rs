//! The frame reader's check (`frame`): `zk_proto::frame::FrameBuffer`, as
//! the client's and the embedded server's readers use it, and the blocking
//! `read_frame`.

use zk_proto::frame::{four_letter_word, read_frame, FrameBuffer, DEFAULT_MAX_FRAME};

use crate::alloc::largest_during;
use crate::Outcome;

/// The frame limits the first byte picks from (`jute.maxbuffer`'s default
/// last).
pub const MAXES: &[usize] = &[0, 1, 4, 16, 100, 1024, 65536, DEFAULT_MAX_FRAME];

/// The `frame` target. The first byte picks the limit ([`MAXES`]), the
/// second how the rest (the stream) is cut into the pieces the buffer is fed
/// (pieces of 1 to 256 bytes, in turn). Checked: no frame over the limit
/// comes out; a length over the limit (or negative) is refused before
/// anything is allocated (no allocation at all in the call that refuses it,
/// and again on a second call), and so is every later call; taking a frame
/// allocates that frame's bytes only, never its declared length ahead of the
/// bytes; the buffer never holds more than it was fed; the frames are the
/// ones `read_frame` reads from the same stream, and the two refuse at the
/// same frame; `read_frame` allocates at most the limit; a four-letter word
/// is named only for its own bytes.
///
/// # Errors
///
/// The property that failed.
///
/// # Examples
///
/// ```
/// # #[global_allocator] static A: zk_fuzz::alloc::Probe = zk_fuzz::alloc::Probe;
/// # fn main() {
/// // Limit 16: a frame of 2 bytes, then a length of 2^31-1, refused.
/// let input = [3, 0, 0, 0, 0, 2, 9, 8, 0x7f, 0xff, 0xff, 0xff];
/// assert!(zk_fuzz::frame::frame(&input).is_ok());
/// # }
/// ```
pub fn frame(input: &[u8]) -> Outcome {
    let [pick, cut, stream @ ..] = input else {
        return Ok(());
    };
    let max = MAXES[*pick as usize % MAXES.len()];
    let mut fb = FrameBuffer::new(max);
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut refused = false;
    let mut fed = 0;
    let size = 1 + (*cut as usize % 16) * (*cut as usize / 16 + 1);
    'feed: for piece in (Pieces { rest: stream, size }) {
        fb.extend(piece);
        fed += piece.len();
        if let Some(w) = fb.peek4() {
            // A four-letter word is named only for its own four bytes.
            if four_letter_word(w).is_some_and(|word| word.as_bytes() != w) {
                return Err(format!("{w:?} named as a four-letter word it does not spell"));
            }
        }
        loop {
            let (next, largest) = largest_during(|| fb.next_frame());
            match next {
                Ok(Some(f)) => {
                    if f.len() > max {
                        return Err(format!("a frame of {} bytes came out (limit {max})", f.len()));
                    }
                    if largest > f.len() {
                        return Err(format!("taking a frame of {} bytes allocated {largest}", f.len()));
                    }
                    got.push(f);
                }
                Ok(None) => {
                    if largest > 0 {
                        return Err(format!("waiting for a frame's bytes allocated {largest}"));
                    }
                    break;
                }
                Err(e) => {
                    if largest > 0 {
                        return Err(format!("refusing a frame ({e}) allocated {largest} bytes"));
                    }
                    let (again, largest) = largest_during(|| fb.next_frame());
                    if again.is_ok() || largest > 0 {
                        return Err(format!(
                            "a refused frame was taken or allocated on a second call ({largest} bytes)"
                        ));
                    }
                    let _ = e.to_string();
                    refused = true;
                    break 'feed;
                }
            }
        }
        if fb.buffered() > fed {
            return Err(format!("the buffer holds {} bytes of {fed} fed", fb.buffered()));
        }
    }
    // The blocking reader on the same stream: the same frames, refused at
    // the same point (or the stream ends inside a frame).
    let mut cursor: &[u8] = stream;
    let mut read = Vec::new();
    let read_refused = loop {
        let (r, largest) = largest_during(|| read_frame(&mut cursor, max));
        if largest > max.max(64) {
            return Err(format!("read_frame allocated {largest} bytes (limit {max})"));
        }
        match r {
            Ok(f) => read.push(f),
            Err(e) => break e.kind() == std::io::ErrorKind::InvalidData,
        }
    };
    if read != got {
        return Err(format!(
            "the frame buffer took {} frames, read_frame {} (or other bytes)",
            got.len(),
            read.len()
        ));
    }
    if read_refused != refused {
        return Err(format!(
            "the frame buffer refused: {refused}, read_frame: {read_refused}"
        ));
    }
    Ok(())
}

/// A stream cut into pieces of 1 to 256 bytes, the size changing each time.
struct Pieces<'a> {
    rest: &'a [u8],
    size: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let n = self.size.clamp(1, self.rest.len());
        let (piece, rest) = self.rest.split_at(n);
        self.rest = rest;
        self.size = (self.size * 7 + 3) % 256 + 1;
        Some(piece)
    }
}
