//! Parsing of connect strings: `host:port[,host:port...][/chroot]`.

use std::net::{Ipv6Addr, SocketAddr, ToSocketAddrs};

use crate::error::{Error, Result};
use crate::proto::path::validate_path;

/// The port used when a host has none.
pub const DEFAULT_PORT: u16 = 2181;

/// One server of a connect string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPort {
    /// A host name, an IPv4 literal or an IPv6 literal (without brackets).
    pub host: String,
    /// The client port.
    pub port: u16,
}

impl HostPort {
    /// Resolves the host now (DNS for names; literals resolve at once).
    pub fn resolve(&self) -> std::io::Result<Vec<SocketAddr>> {
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

/// A parsed connect string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnectString {
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

fn parse_port(input: &str, p: &str) -> Result<u16> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(input, format!("bad port {p:?}")));
    }
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad(input, format!("port {p:?} is out of range 1..=65535"))),
        Ok(n) => Ok(n),
    }
}

fn valid_host_name(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
        && !h.starts_with('.')
        && !h.starts_with('-')
        && !h.contains("..")
}

fn parse_host(input: &str, s: &str) -> Result<HostPort> {
    if let Some(rest) = s.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return Err(bad(input, format!("unclosed '[' in {s:?}")));
        };
        let host = &rest[..end];
        if host.parse::<Ipv6Addr>().is_err() {
            return Err(bad(input, format!("{host:?} is not an IPv6 address")));
        }
        let after = &rest[end + 1..];
        let port = if after.is_empty() {
            DEFAULT_PORT
        } else if let Some(p) = after.strip_prefix(':') {
            parse_port(input, p)?
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
                    format!("{s:?}: IPv6 addresses must be written as [addr]:port"),
                ));
            }
            (h, parse_port(input, p)?)
        }
    };
    if !valid_host_name(host) {
        return Err(bad(input, format!("bad host {host:?}")));
    }
    Ok(HostPort {
        host: host.to_string(),
        port,
    })
}

/// Parses `host:port[,host:port...][/chroot]`.
///
/// Hosts are trimmed; empty entries (`a:1,,b:2`) are skipped as ZooKeeper does.
/// A missing port is 2181. IPv6 literals need brackets. The chroot (everything
/// from the first `/`) must be a valid path; `/` means no chroot.
pub(crate) fn parse(input: &str) -> Result<ConnectString> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(bad(input, "empty connect string"));
    }
    let (hosts_part, chroot) = match trimmed.find('/') {
        None => (trimmed, None),
        Some(i) => (&trimmed[..i], Some(&trimmed[i..])),
    };
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
        hosts.push(parse_host(input, part)?);
    }
    if hosts.is_empty() {
        return Err(bad(input, "no host"));
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

    #[test]
    fn bad_strings() {
        for s in [
            "",
            "   ",
            ",",
            "/chroot",
            "host:",
            "host:0",
            "host:65536",
            "host:-1",
            "host:12ab",
            "host:1:2",
            "::1:2181",
            "[::1",
            "[nothex]:1",
            "[::1]x",
            "ho st:1",
            "h!:1",
            "a:1/bad/",
            "a:1//x",
            "a:1/x/../y",
            ".a:1",
            "a..b:1",
            "garbage!!",
        ] {
            match parse(s) {
                Err(Error::InvalidConnectString { .. }) => {}
                other => panic!("{s:?} gave {other:?}"),
            }
        }
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
