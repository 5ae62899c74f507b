//! SASL on ZooKeeper's wire: the token record of opcode 102 ([`SaslToken`]) and
//! the DIGEST-MD5 mechanism (RFC 2831) as ZooKeeper uses it, for both sides: the
//! client's response to a challenge ([`DigestChallenge`], [`digest_response`])
//! and the server's check of it ([`DigestResponse`]).
//!
//! ZooKeeper fixes the names: service `zookeeper`, realm and server name
//! `zk-sasl-md5` ([`DIGEST_REALM`]), so the digest URI is
//! `zookeeper/zk-sasl-md5` whatever host is dialled; only `qop=auth` (no
//! security layer). The MD5 is the `md-5` crate's (RustCrypto), not written
//! here.
//!
//! Parsing never panics and allocates at most the size of its input.
//!
//! # Examples
//!
//! ```
//! use zk_proto::sasl::{digest_response, DigestChallenge, DigestInput};
//!
//! let c = DigestChallenge::parse(
//!     br#"realm="zk-sasl-md5",nonce="zrCKiC70i7qq7E35NGwrwHe/99SzDBXaVZ3swSSF",charset=utf-8,algorithm=md5-sess"#,
//! )
//! .unwrap();
//! let input = DigestInput {
//!     user: "bob",
//!     realm: "zk-sasl-md5",
//!     password: "secret",
//!     nonce: &c.nonce,
//!     cnonce: "yy2NRJJ7QAEwXkcLJ8/cEMLSOEFM+j/dZ7accSRG",
//!     nc: "00000001",
//!     digest_uri: "zookeeper/zk-sasl-md5",
//!     authzid: Some("bob"),
//! };
//! // The values a Java client and server computed for these inputs.
//! assert_eq!(digest_response(&input, true), "35e4c7fda556b9646854ae5c6bee6bf2");
//! assert_eq!(digest_response(&input, false), "edeec8f7755b53b713b819467fe3dc89");
//! ```

use std::fmt;

use md5::{Digest as _, Md5};

use crate::jute::{Decode, DecodeError, Encode, Reader};

/// The service (protocol) name of ZooKeeper's SASL server.
pub const SERVICE: &str = "zookeeper";
/// The realm and server name of ZooKeeper's DIGEST-MD5 server.
pub const DIGEST_REALM: &str = "zk-sasl-md5";
/// The digest URI a DIGEST-MD5 client sends: `zookeeper/zk-sasl-md5`.
pub const DIGEST_URI: &str = "zookeeper/zk-sasl-md5";
/// Longest directive list accepted (RFC 2831 says a challenge is at most 2048
/// bytes and a response at most 4096).
pub const MAX_DIRECTIVES: usize = 4096;

/// The body of a SASL request and of its reply (`GetSASLRequest`,
/// `SetSASLResponse`): one jute buffer; `None` is the null buffer (length -1)
/// a server sends when it has nothing more to say.
///
/// # Examples
///
/// ```
/// use zk_proto::jute::{Decode, Encode, Reader};
/// use zk_proto::sasl::SaslToken;
/// let t = SaslToken { token: Some(b"abc".to_vec()) };
/// let bytes = t.to_bytes();
/// assert_eq!(bytes, [0, 0, 0, 3, b'a', b'b', b'c']);
/// assert_eq!(SaslToken::decode(&mut Reader::new(&bytes)).unwrap(), t);
/// let null = SaslToken { token: None }.to_bytes();
/// assert_eq!(null, [0xff, 0xff, 0xff, 0xff]);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct SaslToken {
    /// The token; `None` for a null buffer.
    pub token: Option<Vec<u8>>,
}

impl fmt::Debug for SaslToken {
    /// The length only: a token may carry a credential's proof.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.token {
            Some(t) => write!(f, "SaslToken({} bytes)", t.len()),
            None => f.write_str("SaslToken(null)"),
        }
    }
}

impl Encode for SaslToken {
    fn encode(&self, out: &mut Vec<u8>) {
        self.token.encode(out);
    }
}

impl Decode for SaslToken {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(SaslToken {
            token: Option::<Vec<u8>>::decode(r)?,
        })
    }
}

/// Why a DIGEST-MD5 directive list could not be read.
///
/// # Examples
///
/// ```
/// use zk_proto::sasl::DigestChallenge;
/// let e = DigestChallenge::parse(b"realm=\"x\"").unwrap_err();
/// assert!(e.to_string().contains("nonce"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectiveError(String);

impl fmt::Display for DirectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DirectiveError {}

fn bad(msg: impl Into<String>) -> DirectiveError {
    DirectiveError(msg.into())
}

/// Splits `a=b,c="d, \"e\""` into pairs (RFC 2831 §7.1: tokens, quoted strings
/// with `\` escapes, empty elements allowed). Keys are lower-cased.
///
/// # Errors
///
/// [`DirectiveError`] for a list over [`MAX_DIRECTIVES`] bytes, not UTF-8, an
/// element without `=`, an unterminated quoted string or junk after one.
///
/// # Examples
///
/// ```
/// let d = zk_proto::sasl::parse_directives(br#"a=b, C="x,\"y""#).unwrap();
/// assert_eq!(d, vec![("a".to_string(), "b".to_string()), ("c".to_string(), "x,\"y".to_string())]);
/// ```
pub fn parse_directives(input: &[u8]) -> Result<Vec<(String, String)>, DirectiveError> {
    if input.len() > MAX_DIRECTIVES {
        return Err(bad(format!(
            "a directive list of {} bytes (at most {MAX_DIRECTIVES})",
            input.len()
        )));
    }
    let s = std::str::from_utf8(input).map_err(|_| bad("a directive list that is not UTF-8"))?;
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ',' {
                break;
            }
            key.push(c);
            chars.next();
        }
        let key = key.trim().to_ascii_lowercase();
        if chars.next() != Some('=') || key.is_empty() {
            return Err(bad(format!("a directive without a value: {key:?}")));
        }
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some(e) => value.push(e),
                        None => break,
                    },
                    '"' => {
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                return Err(bad(format!("the value of {key:?} has no closing quote")));
            }
            while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                chars.next();
            }
            if chars.peek().is_some_and(|c| *c != ',') {
                return Err(bad(format!("junk after the quoted value of {key:?}")));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
            value = value.trim_end().to_string();
        }
        out.push((key, value));
    }
}

fn single<'a>(d: &'a [(String, String)], key: &str) -> Result<Option<&'a str>, DirectiveError> {
    let mut it = d.iter().filter(|(k, _)| k == key);
    let first = it.next().map(|(_, v)| v.as_str());
    if it.next().is_some() {
        return Err(bad(format!("the directive {key:?} appears twice")));
    }
    Ok(first)
}

/// A server's DIGEST-MD5 challenge (RFC 2831 §2.1.1), as a client reads it.
///
/// # Examples
///
/// ```
/// let c = zk_proto::sasl::DigestChallenge::parse(br#"realm="zk-sasl-md5",nonce="n1",charset=utf-8,algorithm=md5-sess"#).unwrap();
/// assert_eq!((c.realm.as_deref(), c.nonce.as_str(), c.utf8), (Some("zk-sasl-md5"), "n1", true));
/// assert!(c.offers_auth());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestChallenge {
    /// The realm the server offers (the first, if several); ZooKeeper's is
    /// [`DIGEST_REALM`].
    pub realm: Option<String>,
    /// The server's nonce.
    pub nonce: String,
    /// The qop values offered (`["auth"]` when the directive is absent).
    pub qop: Vec<String>,
    /// Whether `charset=utf-8` was given.
    pub utf8: bool,
}

impl DigestChallenge {
    /// Reads a challenge.
    ///
    /// # Errors
    ///
    /// [`DirectiveError`] when the list does not parse, when `nonce` or
    /// `algorithm=md5-sess` is missing or repeated, or for a `charset` other
    /// than `utf-8`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::sasl::DigestChallenge;
    /// assert!(DigestChallenge::parse(b"nonce=\"n\",algorithm=md5-sess").is_ok());
    /// assert!(DigestChallenge::parse(b"nonce=\"n\"").is_err());
    /// ```
    pub fn parse(token: &[u8]) -> Result<DigestChallenge, DirectiveError> {
        let d = parse_directives(token)?;
        let nonce = single(&d, "nonce")?.ok_or_else(|| bad("the challenge has no nonce"))?;
        if nonce.is_empty() {
            return Err(bad("the challenge's nonce is empty"));
        }
        match single(&d, "algorithm")? {
            Some(a) if a.eq_ignore_ascii_case("md5-sess") => {}
            Some(a) => return Err(bad(format!("the challenge's algorithm is {a:?}, not md5-sess"))),
            None => return Err(bad("the challenge has no algorithm (md5-sess)")),
        }
        let utf8 = match single(&d, "charset")? {
            None => false,
            Some(c) if c.eq_ignore_ascii_case("utf-8") => true,
            Some(c) => return Err(bad(format!("the challenge's charset is {c:?}, not utf-8"))),
        };
        let qop = match single(&d, "qop")? {
            None => vec!["auth".to_string()],
            Some(q) => q.split(',').map(|s| s.trim().to_string()).collect(),
        };
        let realm = d.iter().find(|(k, _)| k == "realm").map(|(_, v)| v.clone());
        Ok(DigestChallenge {
            realm,
            nonce: nonce.to_string(),
            qop,
            utf8,
        })
    }

    /// Whether `qop=auth` (authentication without a security layer, the only
    /// one ZooKeeper uses) is offered.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = zk_proto::sasl::DigestChallenge::parse(b"nonce=n,qop=\"auth-conf\",algorithm=md5-sess").unwrap();
    /// assert!(!c.offers_auth());
    /// ```
    pub fn offers_auth(&self) -> bool {
        self.qop.iter().any(|q| q == "auth")
    }

    /// Encodes a challenge as ZooKeeper's server sends it (for a server).
    ///
    /// # Examples
    ///
    /// ```
    /// let t = zk_proto::sasl::DigestChallenge::server("n1");
    /// assert_eq!(t, br#"realm="zk-sasl-md5",nonce="n1",charset=utf-8,algorithm=md5-sess"#.to_vec());
    /// ```
    pub fn server(nonce: &str) -> Vec<u8> {
        format!(r#"realm="{DIGEST_REALM}",nonce="{nonce}",charset=utf-8,algorithm=md5-sess"#).into_bytes()
    }
}

/// The inputs of a DIGEST-MD5 response value (RFC 2831 §2.1.2.1).
///
/// `Debug` hides the password.
///
/// # Examples
///
/// ```
/// let i = zk_proto::sasl::DigestInput {
///     user: "bob", realm: "zk-sasl-md5", password: "hunter2", nonce: "n", cnonce: "c",
///     nc: "00000001", digest_uri: "zookeeper/zk-sasl-md5", authzid: None,
/// };
/// assert!(!format!("{i:?}").contains("hunter2"));
/// ```
#[derive(Clone, Copy)]
pub struct DigestInput<'a> {
    /// The user name.
    pub user: &'a str,
    /// The realm.
    pub realm: &'a str,
    /// The password.
    pub password: &'a str,
    /// The server's nonce.
    pub nonce: &'a str,
    /// The client's nonce.
    pub cnonce: &'a str,
    /// The nonce count, 8 hex digits.
    pub nc: &'a str,
    /// The digest URI.
    pub digest_uri: &'a str,
    /// The authorization id, if sent.
    pub authzid: Option<&'a str>,
}

impl fmt::Debug for DigestInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DigestInput")
            .field("user", &self.user)
            .field("realm", &self.realm)
            .field("nonce", &self.nonce)
            .field("cnonce", &self.cnonce)
            .field("nc", &self.nc)
            .field("digest_uri", &self.digest_uri)
            .field("authzid", &self.authzid)
            .finish_non_exhaustive()
    }
}

/// The bytes a string is hashed as under `charset=utf-8` (RFC 2831 §2.1.2.1):
/// ISO-8859-1 when every character fits in it, UTF-8 otherwise.
fn latin1_or_utf8(s: &str) -> Vec<u8> {
    if s.chars().all(|c| (c as u32) < 0x100) {
        s.chars().map(|c| c as u32 as u8).collect()
    } else {
        s.as_bytes().to_vec()
    }
}

fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn hex(b: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(HEX[(x >> 4) as usize] as char);
        s.push(HEX[(x & 15) as usize] as char);
    }
    s
}

/// The 32-hex-digit `response` value a client sends (`authenticate = true`,
/// `A2 = "AUTHENTICATE:" digest-uri`), or the `rspauth` a server answers with
/// (`false`, `A2 = ":" digest-uri`); `qop` is `auth`.
///
/// # Examples
///
/// See the [module](self) example (the RFC's test values as ZooKeeper's
/// Java client and server computed them).
pub fn digest_response(i: &DigestInput<'_>, authenticate: bool) -> String {
    let inner = md5(&[
        &latin1_or_utf8(i.user),
        b":",
        &latin1_or_utf8(i.realm),
        b":",
        &latin1_or_utf8(i.password),
    ]);
    let mut a1: Vec<u8> = Vec::with_capacity(64);
    a1.extend_from_slice(&inner);
    a1.extend_from_slice(b":");
    a1.extend_from_slice(i.nonce.as_bytes());
    a1.extend_from_slice(b":");
    a1.extend_from_slice(i.cnonce.as_bytes());
    if let Some(z) = i.authzid {
        a1.extend_from_slice(b":");
        a1.extend_from_slice(z.as_bytes());
    }
    let ha1 = hex(&md5(&[&a1]));
    let a2 = if authenticate {
        format!("AUTHENTICATE:{}", i.digest_uri)
    } else {
        format!(":{}", i.digest_uri)
    };
    let ha2 = hex(&md5(&[a2.as_bytes()]));
    hex(&md5(&[
        ha1.as_bytes(),
        b":",
        i.nonce.as_bytes(),
        b":",
        i.nc.as_bytes(),
        b":",
        i.cnonce.as_bytes(),
        b":auth:",
        ha2.as_bytes(),
    ]))
}

/// Quotes a value for a directive list (RFC 2831 `quoted-string`).
fn quote(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        if c == '"' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

/// A client's DIGEST-MD5 response (RFC 2831 §2.1.2): written by a client
/// ([`DigestResponse::encode`]), read and checked by a server
/// ([`DigestResponse::parse`], [`DigestResponse::verify`]).
///
/// `Debug` prints every field but the response value.
///
/// # Examples
///
/// ```
/// use zk_proto::sasl::DigestResponse;
/// let r = DigestResponse::client("bob", "secret", "n1", "c1");
/// let back = DigestResponse::parse(&r.encode()).unwrap();
/// assert_eq!(back, r);
/// assert!(back.verify("secret", "n1").is_some());
/// assert!(back.verify("wrong", "n1").is_none());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct DigestResponse {
    /// The user name.
    pub username: String,
    /// The realm.
    pub realm: String,
    /// The server's nonce, echoed.
    pub nonce: String,
    /// The client's nonce.
    pub cnonce: String,
    /// The nonce count.
    pub nc: String,
    /// The digest URI.
    pub digest_uri: String,
    /// The 32-hex-digit response value.
    pub response: String,
    /// The authorization id, if sent.
    pub authzid: Option<String>,
}

impl fmt::Debug for DigestResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DigestResponse")
            .field("username", &self.username)
            .field("realm", &self.realm)
            .field("nonce", &self.nonce)
            .field("cnonce", &self.cnonce)
            .field("nc", &self.nc)
            .field("digest_uri", &self.digest_uri)
            .field("authzid", &self.authzid)
            .finish_non_exhaustive()
    }
}

impl DigestResponse {
    /// The response ZooKeeper's Java client sends for `user` and `password` to
    /// the challenge's `nonce` (realm [`DIGEST_REALM`], URI [`DIGEST_URI`],
    /// `nc=00000001`, the user as authzid).
    ///
    /// # Examples
    ///
    /// ```
    /// let r = zk_proto::sasl::DigestResponse::client("bob", "secret", "n", "c");
    /// assert_eq!(r.authzid.as_deref(), Some("bob"));
    /// assert_eq!(r.response.len(), 32);
    /// ```
    pub fn client(user: &str, password: &str, nonce: &str, cnonce: &str) -> DigestResponse {
        let input = DigestInput {
            user,
            realm: DIGEST_REALM,
            password,
            nonce,
            cnonce,
            nc: "00000001",
            digest_uri: DIGEST_URI,
            authzid: Some(user),
        };
        DigestResponse {
            username: user.to_string(),
            realm: DIGEST_REALM.to_string(),
            nonce: nonce.to_string(),
            cnonce: cnonce.to_string(),
            nc: "00000001".to_string(),
            digest_uri: DIGEST_URI.to_string(),
            response: digest_response(&input, true),
            authzid: Some(user.to_string()),
        }
    }

    /// The directive list, as the Java client orders it.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = zk_proto::sasl::DigestResponse::client("bob", "secret", "n", "c");
    /// let t = String::from_utf8(r.encode()).unwrap();
    /// assert!(t.starts_with(r#"charset=utf-8,username="bob",realm="zk-sasl-md5",nonce="n",nc=00000001,cnonce="c","#));
    /// assert!(t.ends_with(r#"qop=auth,authzid="bob""#));
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!(
            "charset=utf-8,username={},realm={},nonce={},nc={},cnonce={},digest-uri={},maxbuf=65536,response={},qop=auth",
            quote(&self.username),
            quote(&self.realm),
            quote(&self.nonce),
            self.nc,
            quote(&self.cnonce),
            quote(&self.digest_uri),
            self.response
        );
        if let Some(z) = &self.authzid {
            s.push_str(",authzid=");
            s.push_str(&quote(z));
        }
        s.into_bytes()
    }

    /// Reads a client's response (for a server).
    ///
    /// # Errors
    ///
    /// [`DirectiveError`] when the list does not parse, or a required
    /// directive (`username`, `nonce`, `cnonce`, `nc`, `digest-uri`,
    /// `response`) is missing or repeated, or `qop` is not `auth`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_proto::sasl::DigestResponse::parse(b"username=\"bob\"").is_err());
    /// ```
    pub fn parse(token: &[u8]) -> Result<DigestResponse, DirectiveError> {
        let d = parse_directives(token)?;
        let need = |k: &str| -> Result<String, DirectiveError> {
            single(&d, k)?
                .map(str::to_string)
                .ok_or_else(|| bad(format!("the response has no {k}")))
        };
        match single(&d, "qop")? {
            None | Some("auth") => {}
            Some(q) => return Err(bad(format!("the response asks for qop {q:?}, not auth"))),
        }
        Ok(DigestResponse {
            username: need("username")?,
            realm: single(&d, "realm")?.unwrap_or("").to_string(),
            nonce: need("nonce")?,
            cnonce: need("cnonce")?,
            nc: need("nc")?,
            digest_uri: need("digest-uri")?,
            response: need("response")?,
            authzid: single(&d, "authzid")?.map(str::to_string),
        })
    }

    /// Checks the response against the user's `password` and the `nonce` the
    /// server sent (and the digest URI ZooKeeper's server expects): the
    /// `rspauth=...` token to answer with when it matches, `None` when it
    /// does not.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = zk_proto::sasl::DigestResponse::client("bob", "secret", "n", "c");
    /// let ok = r.verify("secret", "n").unwrap();
    /// assert!(ok.starts_with(b"rspauth="));
    /// assert!(r.verify("secret", "another nonce").is_none());
    /// ```
    pub fn verify(&self, password: &str, nonce: &str) -> Option<Vec<u8>> {
        if self.nonce != nonce || self.digest_uri != DIGEST_URI {
            return None;
        }
        let input = DigestInput {
            user: &self.username,
            realm: &self.realm,
            password,
            nonce,
            cnonce: &self.cnonce,
            nc: &self.nc,
            digest_uri: &self.digest_uri,
            authzid: self.authzid.as_deref(),
        };
        if digest_response(&input, true) != self.response.to_ascii_lowercase() {
            return None;
        }
        Some(format!("rspauth={}", digest_response(&input, false)).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_java_test_vector() {
        let i = DigestInput {
            user: "bob",
            realm: "zk-sasl-md5",
            password: "secret",
            nonce: "zrCKiC70i7qq7E35NGwrwHe/99SzDBXaVZ3swSSF",
            cnonce: "yy2NRJJ7QAEwXkcLJ8/cEMLSOEFM+j/dZ7accSRG",
            nc: "00000001",
            digest_uri: "zookeeper/zk-sasl-md5",
            authzid: Some("bob"),
        };
        assert_eq!(digest_response(&i, true), "35e4c7fda556b9646854ae5c6bee6bf2");
        assert_eq!(digest_response(&i, false), "edeec8f7755b53b713b819467fe3dc89");
    }

    #[test]
    fn latin1_and_utf8_passwords_hash_as_the_rfc_says() {
        assert_eq!(latin1_or_utf8("é"), vec![0xe9]);
        assert_eq!(latin1_or_utf8("€"), "€".as_bytes().to_vec());
    }

    #[test]
    fn directive_lists_that_are_not() {
        for bad in [
            &b"a"[..],
            b"a=\"x",
            b"a=\"x\"y",
            b"=x",
            b"nonce=a,nonce=b,algorithm=md5-sess",
            &[0xff, 0xfe],
        ] {
            assert!(
                parse_directives(bad).is_err() || DigestChallenge::parse(bad).is_err(),
                "{bad:?}"
            );
        }
        assert!(parse_directives(&vec![b'a'; MAX_DIRECTIVES + 1]).is_err());
        assert_eq!(parse_directives(b"").unwrap(), vec![]);
        assert_eq!(parse_directives(b" , ,").unwrap(), vec![]);
    }

    #[test]
    fn quoting_round_trips() {
        let r = DigestResponse::client("a\"b\\c", "p", "n", "c");
        assert_eq!(DigestResponse::parse(&r.encode()).unwrap(), r);
    }
}
