//! Jute, ZooKeeper's record encoding: big-endian primitives, length-prefixed
//! buffers and strings, and count-prefixed vectors, with no tags or padding.

use std::fmt;

/// Why a byte sequence could not be decoded as a jute record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before the record did.
    UnexpectedEof {
        /// Bytes the decoder needed.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A length or count field was negative (other than -1) or larger than the input.
    BadLength(i32),
    /// A string that must not be null was null (-1).
    NullString,
    /// A field held a value that the record does not allow.
    InvalidValue(&'static str),
    /// A whole record was decoded but bytes were left over.
    TrailingBytes(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnexpectedEof { needed, remaining } => {
                write!(f, "unexpected end of record: needed {needed} bytes, {remaining} left")
            }
            DecodeError::BadLength(n) => write!(f, "bad length field {n}"),
            DecodeError::NullString => write!(f, "null string where one is required"),
            DecodeError::InvalidValue(what) => write!(f, "invalid value: {what}"),
            DecodeError::TrailingBytes(n) => write!(f, "{n} trailing bytes after record"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A cursor over a byte slice that reads jute primitives.
///
/// # Examples
///
/// ```
/// use zk_proto::jute::Reader;
/// let mut r = Reader::new(&[0, 0, 0, 7]);
/// assert_eq!(r.read_i32().unwrap(), 7);
/// assert!(r.is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = zk_proto::jute::Reader::new(b"abc");
    /// assert_eq!(r.remaining(), 3);
    /// ```
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = zk_proto::jute::Reader::new(&[1, 2]);
    /// assert_eq!(r.remaining(), 2);
    /// ```
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether every byte has been read.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_proto::jute::Reader::new(&[]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = zk_proto::jute::Reader::new(&[9]);
    /// assert_eq!(r.rest(), &[9]);
    /// ```
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::UnexpectedEof {
                needed: n,
                remaining: self.remaining(),
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads a big-endian `int`.
    ///
    /// # Errors
    ///
    /// [`DecodeError::UnexpectedEof`] when fewer than 4 bytes remain.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = zk_proto::jute::Reader::new(&[0xff, 0xff, 0xff, 0xfe]);
    /// assert_eq!(r.read_i32().unwrap(), -2);
    /// ```
    pub fn read_i32(&mut self) -> Result<i32, DecodeError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a big-endian `long`.
    ///
    /// # Errors
    ///
    /// [`DecodeError::UnexpectedEof`] when fewer than 8 bytes remain.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = zk_proto::jute::Reader::new(&[0, 0, 0, 0, 0, 0, 1, 0]);
    /// assert_eq!(r.read_i64().unwrap(), 256);
    /// ```
    pub fn read_i64(&mut self) -> Result<i64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// Reads a `boolean` (one byte; any non-zero byte is true, as Java reads it).
    ///
    /// # Errors
    ///
    /// [`DecodeError::UnexpectedEof`] when no byte remains.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = zk_proto::jute::Reader::new(&[1]);
    /// assert!(r.read_bool().unwrap());
    /// ```
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.take(1)?[0] != 0)
    }

    /// Reads a `buffer`: `None` for the null buffer (length -1).
    ///
    /// # Errors
    ///
    /// [`DecodeError::BadLength`] for a negative length other than -1 or one longer
    /// than the input.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = zk_proto::jute::Reader::new(&[0, 0, 0, 1, 42]);
    /// assert_eq!(r.read_buffer().unwrap(), Some(vec![42]));
    /// ```
    pub fn read_buffer(&mut self) -> Result<Option<Vec<u8>>, DecodeError> {
        let n = self.read_i32()?;
        if n == -1 {
            return Ok(None);
        }
        if n < 0 || n as usize > self.remaining() {
            return Err(DecodeError::BadLength(n));
        }
        Ok(Some(self.take(n as usize)?.to_vec()))
    }

    /// Reads a `ustring`: `None` for the null string. Invalid UTF-8 is replaced,
    /// as Java's decoder does.
    ///
    /// # Errors
    ///
    /// As [`Reader::read_buffer`].
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = zk_proto::jute::Reader::new(&[0, 0, 0, 2, b'/', b'a']);
    /// assert_eq!(r.read_ustring().unwrap().as_deref(), Some("/a"));
    /// ```
    pub fn read_ustring(&mut self) -> Result<Option<String>, DecodeError> {
        Ok(self
            .read_buffer()?
            .map(|b| String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())))
    }

    /// Reads a vector count: `None` for a null vector (-1).
    ///
    /// # Errors
    ///
    /// [`DecodeError::BadLength`] when the count is negative (other than -1) or
    /// larger than the bytes left (every element takes at least one byte).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = zk_proto::jute::Reader::new(&[0xff, 0xff, 0xff, 0xff]);
    /// assert_eq!(r.read_count().unwrap(), None);
    /// ```
    pub fn read_count(&mut self) -> Result<Option<usize>, DecodeError> {
        let n = self.read_i32()?;
        if n == -1 {
            return Ok(None);
        }
        if n < 0 || n as usize > self.remaining() {
            return Err(DecodeError::BadLength(n));
        }
        Ok(Some(n as usize))
    }
}

/// Appends jute primitives to a byte vector.
pub trait JuteWrite {
    /// Appends a big-endian `int`.
    fn put_i32(&mut self, v: i32);
    /// Appends a big-endian `long`.
    fn put_i64(&mut self, v: i64);
    /// Appends a `boolean` as 0 or 1.
    fn put_bool(&mut self, v: bool);
    /// Appends a `buffer` (`None` is written as length -1).
    fn put_buffer(&mut self, v: Option<&[u8]>);
}

impl JuteWrite for Vec<u8> {
    fn put_i32(&mut self, v: i32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_i64(&mut self, v: i64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_bool(&mut self, v: bool) {
        self.push(u8::from(v));
    }
    fn put_buffer(&mut self, v: Option<&[u8]>) {
        match v {
            None => self.put_i32(-1),
            Some(b) => {
                self.put_i32(b.len() as i32);
                self.extend_from_slice(b);
            }
        }
    }
}

/// A value with a jute encoding.
pub trait Encode {
    /// Appends the encoding of `self` to `out`.
    fn encode(&self, out: &mut Vec<u8>);

    /// The encoding of `self` as a new vector.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::jute::Encode;
    /// assert_eq!(5i32.to_bytes(), vec![0, 0, 0, 5]);
    /// ```
    fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}

/// A value that can be read from its jute encoding.
pub trait Decode: Sized {
    /// Reads one value from `r`.
    ///
    /// # Errors
    ///
    /// A [`DecodeError`] when the bytes are not a valid encoding.
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Decodes a value that must use up all of `bytes`.
    ///
    /// # Errors
    ///
    /// A [`DecodeError`], including [`DecodeError::TrailingBytes`] when bytes are
    /// left over.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::jute::Decode;
    /// assert_eq!(i32::from_bytes(&[0, 0, 0, 5]).unwrap(), 5);
    /// assert!(i32::from_bytes(&[0, 0, 0, 5, 0]).is_err());
    /// ```
    fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let v = Self::decode(&mut r)?;
        if !r.is_empty() {
            return Err(DecodeError::TrailingBytes(r.remaining()));
        }
        Ok(v)
    }
}

/// Marks the types that may be elements of a jute `vector` (everything except `u8`,
/// whose vector is a `buffer`). Borrowed elements (`&str`) encode only; owned ones
/// also decode.
pub trait Element: Encode {}

impl Encode for i32 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i32(*self);
    }
}
impl Decode for i32 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_i32()
    }
}
impl Encode for i64 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i64(*self);
    }
}
impl Decode for i64 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_i64()
    }
}
impl Encode for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_bool(*self);
    }
}
impl Decode for bool {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_bool()
    }
}

/// A `ustring` that must not be null.
impl Encode for String {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_buffer(Some(self.as_bytes()));
    }
}
impl Decode for String {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_ustring()?.ok_or(DecodeError::NullString)
    }
}
impl Element for String {}
/// A borrowed `ustring` element: a server lists children without copying them.
impl Element for &str {}

/// A `buffer`; null is read as empty.
impl Encode for Vec<u8> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_buffer(Some(self));
    }
}
impl Decode for Vec<u8> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(r.read_buffer()?.unwrap_or_default())
    }
}

/// A borrowed `ustring` (never null): the same bytes as [`String`].
impl Encode for str {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_buffer(Some(self.as_bytes()));
    }
}

/// A borrowed `buffer` (never null): the same bytes as `Vec<u8>`.
impl Encode for [u8] {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_buffer(Some(self));
    }
}

/// A borrowed `vector`: the same bytes as `Vec<T>`.
impl<T: Element> Encode for [T] {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i32(self.len() as i32);
        for e in self {
            e.encode(out);
        }
    }
}

/// A reference encodes as what it points to (the borrowed forms of the records).
impl<T: Encode + ?Sized> Encode for &T {
    fn encode(&self, out: &mut Vec<u8>) {
        (**self).encode(out);
    }
}

/// A `buffer` that keeps null apart from empty (`None` is length -1), as a server
/// must store it.
impl Encode for Option<Vec<u8>> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_buffer(self.as_deref());
    }
}
/// A borrowed nullable `buffer`: the same bytes as `Option<Vec<u8>>`.
impl Encode for Option<&[u8]> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_buffer(*self);
    }
}
impl Decode for Option<Vec<u8>> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_buffer()
    }
}

/// A `ustring` that may be null (`None` is length -1).
impl Encode for Option<String> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_buffer(self.as_deref().map(str::as_bytes));
    }
}
impl Decode for Option<String> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_ustring()
    }
}

/// A `vector`; null is read as empty.
impl<T: Element> Encode for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_i32(self.len() as i32);
        for e in self {
            e.encode(out);
        }
    }
}
impl<T: Element + Decode> Decode for Vec<T> {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.read_count()?.unwrap_or(0);
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            v.push(T::decode(r)?);
        }
        Ok(v)
    }
}

/// Defines a jute record: a struct whose fields are encoded in declaration order.
///
/// With type parameters (`Name<P, D> { path: P, data: D, .. }`) one field list
/// serves several representations of the same record: owned for decoding,
/// borrowed for encoding without copies, nullable where a server must keep null
/// apart from empty. Each representation is a type alias of the generic record.
macro_rules! record {
    ($(#[$m:meta])* $name:ident $(< $($g:ident),+ >)? { $( $(#[$fm:meta])* $f:ident : $t:ty ),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name $(< $($g),+ >)? {
            $( $(#[$fm])* pub $f: $t, )*
        }
        impl $(< $($g: $crate::jute::Encode),+ >)? $crate::jute::Encode for $name $(< $($g),+ >)? {
            #[allow(unused_variables)]
            fn encode(&self, out: &mut Vec<u8>) {
                $( $crate::jute::Encode::encode(&self.$f, out); )*
            }
        }
        impl $(< $($g: $crate::jute::Decode),+ >)? $crate::jute::Decode for $name $(< $($g),+ >)? {
            #[allow(unused_variables)]
            fn decode(r: &mut $crate::jute::Reader<'_>) -> Result<Self, $crate::jute::DecodeError> {
                Ok($name { $( $f: $crate::jute::Decode::decode(r)?, )* })
            }
        }
    };
}
pub(crate) use record;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_round_trip() {
        for v in [0i32, 1, -1, i32::MIN, i32::MAX] {
            assert_eq!(i32::from_bytes(&v.to_bytes()).unwrap(), v);
        }
        for v in [0i64, -1, i64::MIN, i64::MAX] {
            assert_eq!(i64::from_bytes(&v.to_bytes()).unwrap(), v);
        }
        for v in [true, false] {
            assert_eq!(bool::from_bytes(&v.to_bytes()).unwrap(), v);
        }
        let s = "/a/ü".to_string();
        assert_eq!(String::from_bytes(&s.to_bytes()).unwrap(), s);
        let b = vec![1u8, 2, 3];
        assert_eq!(Vec::<u8>::from_bytes(&b.to_bytes()).unwrap(), b);
        let v = vec!["a".to_string(), String::new()];
        assert_eq!(Vec::<String>::from_bytes(&v.to_bytes()).unwrap(), v);
    }

    #[test]
    fn borrowed_and_nullable_forms_write_the_owned_bytes() {
        assert_eq!("/a".encode_to_vec(), "/a".to_string().to_bytes());
        assert_eq!([1u8, 2][..].encode_to_vec(), vec![1u8, 2].to_bytes());
        let v = vec!["a".to_string()];
        assert_eq!(v[..].encode_to_vec(), v.to_bytes());
        assert_eq!(Some(vec![3u8]).to_bytes(), vec![3u8].to_bytes());
        assert_eq!(Option::<Vec<u8>>::None.to_bytes(), vec![0xff; 4]);
        assert_eq!(Option::<Vec<u8>>::from_bytes(&[0xff; 4]).unwrap(), None);
        assert_eq!(Option::<Vec<u8>>::from_bytes(&[0, 0, 0, 0]).unwrap(), Some(vec![]));
        assert_eq!(Option::<String>::from_bytes(&[0xff; 4]).unwrap(), None);
        assert_eq!(Some("/a".to_string()).to_bytes(), "/a".to_string().to_bytes());
        assert_eq!(Some(&b"x"[..]).to_bytes(), Some(b"x".to_vec()).to_bytes());
        assert_eq!(Option::<&[u8]>::None.to_bytes(), vec![0xff; 4]);
        assert_eq!(
            vec!["a", "b"].to_bytes(),
            vec!["a".to_string(), "b".to_string()].to_bytes()
        );
    }

    trait EncodeToVec {
        fn encode_to_vec(&self) -> Vec<u8>;
    }
    impl<T: Encode + ?Sized> EncodeToVec for T {
        fn encode_to_vec(&self) -> Vec<u8> {
            let mut v = Vec::new();
            self.encode(&mut v);
            v
        }
    }

    #[test]
    fn null_and_bad_lengths() {
        assert_eq!(Vec::<u8>::from_bytes(&[0xff; 4]).unwrap(), Vec::<u8>::new());
        assert_eq!(String::from_bytes(&[0xff; 4]), Err(DecodeError::NullString));
        assert_eq!(
            Vec::<u8>::from_bytes(&[0xff, 0xff, 0xff, 0xfe]),
            Err(DecodeError::BadLength(-2))
        );
        assert_eq!(Vec::<u8>::from_bytes(&[0, 0, 0, 9, 1]), Err(DecodeError::BadLength(9)));
        assert!(Vec::<String>::from_bytes(&[0x7f, 0xff, 0xff, 0xff]).is_err());
        assert!(matches!(
            i64::from_bytes(&[1, 2]),
            Err(DecodeError::UnexpectedEof { .. })
        ));
        // Java reads any non-zero byte as true.
        assert!(bool::from_bytes(&[7]).unwrap());
        // Invalid UTF-8 is replaced, never an error.
        assert_eq!(String::from_bytes(&[0, 0, 0, 1, 0xff]).unwrap(), "\u{fffd}");
    }
}
