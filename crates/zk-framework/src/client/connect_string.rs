//! Parsing of connect strings: `host:port[,host:port...][/chroot]`.

use std::net::{Ipv6Addr, SocketAddr, ToSocketAddrs};

use crate::error::{Error, Result};
use zk_proto::path::validate_path;

/// The port used when a host has none.
pub const DEFAULT_PORT: u16 = 2181;

/// One server of a connect string.
///
/// # Examples
///
/// ```
/// use zk_framework::ConnectString;
/// let cs = ConnectString::parse("[::1]:2182,zk1")?;
/// assert_eq!((cs.hosts[0].host.as_str(), cs.hosts[0].port), ("::1", 2182));
/// assert_eq!(cs.hosts[0].to_string(), "[::1]:2182");
/// assert_eq!(cs.hosts[1].to_string(), "zk1:2181");
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    /// A host name, an IPv4 literal or an IPv6 literal (without brackets).
    pub host: String,
    /// The client port.
    pub port: u16,
}

impl HostPort {
    /// Resolves the host now (DNS for names; literals resolve at once).
    pub(crate) fn resolve(&self) -> std::io::Result<Vec<SocketAddr>> {
        Ok((self.host.as_str(), self.port).to_socket_addrs()?.collect())
    }
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A parsed connect string: `host:port[,host:port...][/chroot]`, as
/// [`Client::connect`](crate::Client::connect) and the managed client's
/// builder read it (hosts as names, IPv4 or bracketed IPv6 literals, the port
/// 2181 when none is given; whitespace around hosts and the whole string
/// ignored). Its display is the canonical form: every port written, no
/// spaces, a chroot only when there is one; that form parses back to the same
/// value.
///
/// # Examples
///
/// ```
/// use zk_framework::ConnectString;
/// let cs = ConnectString::parse(" zk1:2181, zk2 ,[::1]:2183/app")?;
/// assert_eq!(cs.hosts.len(), 3);
/// assert_eq!(cs.chroot.as_deref(), Some("/app"));
/// assert_eq!(cs.to_string(), "zk1:2181,zk2:2181,[::1]:2183/app");
/// assert_eq!(ConnectString::parse(&cs.to_string())?, cs);
/// # Ok::<(), zk_framework::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    /// The servers, in the order given.
    pub hosts: Vec<HostPort>,
    /// The chroot (`None` for none or `/`), e.g. `/app`.
    pub chroot: Option<String>,
}

fn bad(input: &str, reason: impl Into<String>) -> Error {
    Error::InvalidConnectString {
        input: input.to_string(),
        reason: reason.into(),
    }
}

/// `"{s:?}: "` when `s` is a part of the input, nothing when it is all of it
/// (the error's display prints the input already).
fn which(input: &str, s: &str) -> String {
    if s == input.trim() {
        String::new()
    } else {
        format!("{s:?}: ")
    }
}

fn parse_port(input: &str, host: &str, p: &str) -> Result<u16> {
    if p.is_empty() {
        return Err(bad(input, format!("host {host:?} has an empty port after ':'")));
    }
    if !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(input, format!("port {p:?} is not a number")));
    }
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad(input, format!("port {p:?} is out of range 1..=65535"))),
        Ok(n) => Ok(n),
    }
}

/// Why `h` is not a host name, or `None` when it is one.
fn bad_host_name(input: &str, h: &str) -> Option<String> {
    let host = if h == input.trim() {
        "the host".to_string()
    } else {
        format!("host {h:?}")
    };
    if h.is_empty() {
        return Some("a host is empty (nothing before ':')".into());
    }
    if h.len() > 253 {
        return Some(format!("host name of {} bytes is longer than 253", h.len()));
    }
    if let Some(c) = h
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'))
    {
        return Some(format!("{host} contains {c:?}, which a host name cannot contain"));
    }
    if h.starts_with('.') || h.starts_with('-') || h.contains("..") {
        return Some(format!(
            "{host} is not a valid host name (it starts with '.' or '-', or has '..')"
        ));
    }
    None
}

fn parse_host(input: &str, s: &str) -> Result<HostPort> {
    if let Some(rest) = s.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return Err(bad(input, format!("{}'[' is never closed by ']'", which(input, s))));
        };
        let host = &rest[..end];
        if host.parse::<Ipv6Addr>().is_err() {
            return Err(bad(input, format!("{host:?} is not an IPv6 address")));
        }
        let after = &rest[end + 1..];
        let port = if after.is_empty() {
            DEFAULT_PORT
        } else if let Some(p) = after.strip_prefix(':') {
            parse_port(input, host, p)?
        } else {
            return Err(bad(input, format!("unexpected {after:?} after ']'")));
        };
        return Ok(HostPort {
            host: host.to_string(),
            port,
        });
    }
    let (host, port) = match s.split_once(':') {
        None => (s, DEFAULT_PORT),
        Some((h, p)) => {
            if p.contains(':') {
                return Err(bad(
                    input,
                    format!(
                        "{}more than one ':' (IPv6 addresses must be written as [addr]:port)",
                        which(input, s)
                    ),
                ));
            }
            (h, parse_port(input, h, p)?)
        }
    };
    if let Some(why) = bad_host_name(input, host) {
        return Err(bad(input, why));
    }
    Ok(HostPort {
        host: host.to_string(),
        port,
    })
}

/// Input that is not a connect string at all, recognised before parsing so
/// that the error names it: a URL scheme (`http://`, `zk://`), or a host
/// separator other than `,`.
fn check_shape(input: &str, trimmed: &str) -> Result<()> {
    if let Some(i) = trimmed.find("://") {
        let scheme = &trimmed[..i];
        let is_scheme = !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.');
        if is_scheme {
            return Err(bad(
                input,
                format!("a connect string has no scheme ({scheme}://); write host:port[,host:port...][/chroot]"),
            ));
        }
    }
    let hosts_part = trimmed.find('/').map_or(trimmed, |i| &trimmed[..i]);
    if let Some(c) = hosts_part.chars().find(|&c| matches!(c, ';' | '|')) {
        return Err(bad(input, format!("unexpected {c:?}: hosts are separated by ','")));
    }
    Ok(())
}

/// Parses `host:port[,host:port...][/chroot]`.
///
/// Hosts are trimmed; empty entries (`a:1,,b:2`) are skipped as ZooKeeper does.
/// A missing port is 2181. IPv6 literals need brackets. The chroot (everything
/// from the first `/`) must be a valid path; `/` means no chroot. The error's
/// reason says what is wrong without repeating the whole input (its display
/// prints the input once).
impl ConnectString {
    /// Parses a connect string, without resolving any host.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConnectString`] with the input and what is wrong with
    /// it: empty, no host, a scheme (`zk://`), a separator other than `,`, a
    /// space inside a host, an empty, non-numeric or out-of-range port (0,
    /// over 65535), an unbracketed IPv6 address, a bad host name, a chroot
    /// that is not a valid path.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_framework::{ConnectString, Error};
    /// assert_eq!(ConnectString::parse("127.0.0.1")?.hosts[0].port, 2181);
    /// assert!(matches!(ConnectString::parse("host:0"), Err(Error::InvalidConnectString { .. })));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn parse(input: &str) -> Result<ConnectString> {
        parse(input)
    }
}

impl std::fmt::Display for ConnectString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, h) in self.hosts.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{h}")?;
        }
        if let Some(c) = &self.chroot {
            f.write_str(c)?;
        }
        Ok(())
    }
}

pub(crate) fn parse(input: &str) -> Result<ConnectString> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(bad(input, "the connect string is empty"));
    }
    check_shape(input, trimmed)?;
    let (hosts_part, chroot) = match trimmed.find('/') {
        None => (trimmed, None),
        Some(i) => (&trimmed[..i], Some(&trimmed[i..])),
    };
    if hosts_part.trim().is_empty() {
        return Err(bad(
            input,
            if chroot.is_some() {
                "no host before the chroot"
            } else {
                "no host"
            },
        ));
    }
    let chroot = match chroot {
        None | Some("/") => None,
        Some(c) => {
            validate_path(c, false).map_err(|e| bad(input, format!("bad chroot: {}", e.reason)))?;
            Some(c.to_string())
        }
    };
    let mut hosts = Vec::new();
    for part in hosts_part.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if part.contains(char::is_whitespace) {
            // `a:1 b:2` is a list with the wrong separator; `a: 1` is a stray space.
            let words: Vec<&str> = part.split_whitespace().collect();
            let a_list = words.iter().all(|w| !w.starts_with(':') && !w.ends_with(':'));
            let hint = if a_list { ": hosts are separated by ','" } else { "" };
            return Err(bad(input, format!("{}unexpected space{hint}", which(input, part))));
        }
        hosts.push(parse_host(input, part)?);
    }
    if hosts.is_empty() {
        return Err(bad(input, "no host, only ','"));
    }
    Ok(ConnectString { hosts, chroot })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(h: &str, p: u16) -> HostPort {
        HostPort {
            host: h.into(),
            port: p,
        }
    }

    #[test]
    fn good_strings() {
        let c = parse("127.0.0.1:2181").unwrap();
        assert_eq!(c.hosts, vec![hp("127.0.0.1", 2181)]);
        assert_eq!(c.chroot, None);
        let c = parse("a:1, b ,[::1]:3/app/x").unwrap();
        assert_eq!(c.hosts, vec![hp("a", 1), hp("b", 2181), hp("::1", 3)]);
        assert_eq!(c.chroot.as_deref(), Some("/app/x"));
        let c = parse("localhost/").unwrap();
        assert_eq!(c.chroot, None);
        let c = parse("[::1]").unwrap();
        assert_eq!(c.hosts, vec![hp("::1", 2181)]);
        assert_eq!(c.hosts[0].to_string(), "[::1]:2181");
        assert_eq!(parse("h_1.example-2.com:65535").unwrap().hosts[0].port, 65535);
    }

    /// Each malformed string, and the words its error must contain: the reason
    /// says what is wrong, and the display prints the input exactly once.
    #[test]
    fn bad_strings_say_what_is_wrong() {
        let table: &[(&str, &str)] = &[
            ("", "the connect string is empty"),
            ("   ", "the connect string is empty"),
            (",", "no host, only ','"),
            (",,,", "no host, only ','"),
            (" , , ", "no host, only ','"),
            ("/chroot", "no host before the chroot"),
            (
                "127.0.0.1:2181;127.0.0.1:2182",
                "unexpected ';': hosts are separated by ','",
            ),
            ("a:1;b:2/app", "unexpected ';': hosts are separated by ','"),
            ("a:1|b:2", "unexpected '|': hosts are separated by ','"),
            ("http://127.0.0.1:2181", "a connect string has no scheme (http://)"),
            ("zk://127.0.0.1:2181/app", "a connect string has no scheme (zk://)"),
            ("zookeeper://a:1", "a connect string has no scheme (zookeeper://)"),
            ("  https://a  ", "a connect string has no scheme (https://)"),
            (
                "127.0.0.1:2181 127.0.0.1:2182",
                "unexpected space: hosts are separated by ','",
            ),
            ("ho st:1", "unexpected space"),
            ("a:1, b:2 c:3", "\"b:2 c:3\": unexpected space"),
            ("a:1,\tb:2 c", "unexpected space"),
            ("host:", "host \"host\" has an empty port after ':'"),
            (":2181", "a host is empty"),
            ("host:0", "port \"0\" is out of range 1..=65535"),
            ("host:65536", "port \"65536\" is out of range 1..=65535"),
            ("host:99999999999", "out of range 1..=65535"),
            ("host:-1", "port \"-1\" is not a number"),
            ("host:12ab", "port \"12ab\" is not a number"),
            ("host: 1", "unexpected space"),
            ("host :1", "unexpected space"),
            (
                "host:1:2",
                "more than one ':' (IPv6 addresses must be written as [addr]:port)",
            ),
            ("::1:2181", "IPv6 addresses must be written as [addr]:port"),
            ("a:1,::1:2181", "\"::1:2181\": more than one ':'"),
            ("[::1", "'[' is never closed by ']'"),
            ("[nothex]:1", "\"nothex\" is not an IPv6 address"),
            ("[::1]x", "unexpected \"x\" after ']'"),
            ("[::1]:0", "out of range"),
            ("h!:1", "host \"h!\" contains '!'"),
            ("a:1/bad/", "bad chroot"),
            ("a:1//x", "bad chroot"),
            ("a:1/x/../y", "bad chroot"),
            (".a:1", "host \".a\" is not a valid host name"),
            ("a..b:1", "host \"a..b\" is not a valid host name"),
            ("garbage!!", "the host contains '!'"),
        ];
        for &(s, want) in table {
            match parse(s) {
                Err(e @ Error::InvalidConnectString { .. }) => {
                    let Error::InvalidConnectString { input, reason } = &e else {
                        unreachable!()
                    };
                    assert_eq!(input, s);
                    assert!(reason.contains(want), "{s:?}: reason {reason:?} does not say {want:?}");
                    let shown = e.to_string();
                    let quoted = format!("{s:?}");
                    assert_eq!(
                        shown.matches(&quoted).count(),
                        1,
                        "{s:?}: the input is not printed once: {shown}"
                    );
                }
                other => panic!("{s:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn a_semicolon_is_not_reported_as_ipv6() {
        let e = parse("127.0.0.1:2181;127.0.0.1:2182").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid connect string \"127.0.0.1:2181;127.0.0.1:2182\": unexpected ';': hosts are separated by ','"
        );
        assert!(!e.to_string().contains("IPv6"));
    }

    #[test]
    fn a_scheme_is_not_reported_as_a_bad_chroot() {
        let e = parse("http://127.0.0.1:2181").unwrap_err();
        assert!(
            e.to_string().contains("a connect string has no scheme (http://)"),
            "{e}"
        );
        assert!(!e.to_string().contains("chroot\":"), "{e}");
        // A chroot that merely contains ':' and '/' is still judged as a chroot.
        let e = parse("a:1/x://y").unwrap_err();
        assert!(e.to_string().contains("bad chroot"), "{e}");
    }

    #[test]
    fn garbage_never_panics() {
        let alphabet: Vec<char> = "ab1:/[],. \u{0}9%\u{e9}-_\u{1F600}".chars().collect();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let len = (x % 14) as usize;
            let s: String = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            x = x.wrapping_add(1);
            if let Ok(c) = parse(&s) {
                assert!(!c.hosts.is_empty());
                assert!(c.hosts.iter().all(|h| h.port != 0 && !h.host.is_empty()));
            }
        }
    }
}
