//! The ensemble's dynamic configuration: what `/zookeeper/config` holds
//! (ZooKeeper 3.5+), parsed into an [`EnsembleConfig`] and written back as the
//! server writes it.
//!
//! The node's data is one `server.<id>=<member>` line per member, then, for a
//! hierarchical quorum, `group.<id>=` and `weight.<id>=` lines, then a last
//! `version=<hex>` line without a trailing newline (`QuorumMaj.toString()`):
//!
//! ```text
//! server.1=127.0.0.1:25188:25191:participant;127.0.0.1:25185
//! server.2=127.0.0.1:25189:25192:participant;127.0.0.1:25186
//! server.3=127.0.0.1:25190:25193:participant;0.0.0.0:25187
//! version=100000000
//! ```
//!
//! A member is `host:quorumPort:electionPort[:role][;[clientHost:]clientPort]`
//! (`QuorumServer`): several `host:quorumPort:electionPort` addresses may be
//! joined by `|` (`zookeeper.multiAddress.enabled`), IPv6 hosts are written in
//! brackets, the role is `participant` (the default) or `observer`, and the
//! client address is there only when the server knows it from its dynamic
//! configuration (a client port given only as `clientPort` in the static
//! `zoo.cfg` is not published). A client part that is only a port
//! (`;2181`) means the wildcard address `0.0.0.0`.
//!
//! The config's version is its `version=` value, the zxid of the reconfig
//! that made it (the node's `Stat.mzxid`), never the node's `Stat.version`
//! (which stays -1 after a reconfig). Versions compare as numbers.
//!
//! [`EnsembleConfig::parse`] is a pure function over bytes: it never panics
//! and allocates at most a small multiple of its input, whatever the input
//! (a target for a fuzzer).
//!
//! # Examples
//!
//! ```
//! use zk_proto::config::{EnsembleConfig, Role};
//!
//! let data = b"server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
//!              server.2=127.0.0.1:2889:3889:observer\n\
//!              version=100000003";
//! let config = EnsembleConfig::parse(data)?;
//! assert_eq!(config.version(), 0x1_0000_0003);
//! assert_eq!(config.members().len(), 2);
//! let one = config.member(1).unwrap();
//! assert_eq!(one.role, Role::Participant);
//! assert_eq!(one.client.as_ref().map(|c| c.port), Some(2181));
//! assert_eq!(config.member(2).unwrap().client, None);
//! assert_eq!(config.to_string().as_bytes(), &data[..]);
//! # Ok::<(), zk_proto::config::ConfigError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

/// The path of the configuration node. It is absolute: a client's chroot (or
/// a managed client's namespace) never applies to it.
pub const CONFIG_NODE: &str = "/zookeeper/config";

/// The longest piece of the input an error quotes (the rest is cut, with `…`).
const QUOTE_MAX: usize = 80;

/// Why bytes are not an ensemble configuration.
///
/// # Examples
///
/// ```
/// use zk_proto::config::{ConfigError, EnsembleConfig};
/// assert_eq!(EnsembleConfig::parse(b""), Err(ConfigError::Empty));
/// assert_eq!(EnsembleConfig::parse(b"server.1=127.0.0.1:1:2"), Err(ConfigError::NoVersion));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The data is empty (or only blanks): what a standalone server (and an
    /// ensemble before 3.5) has in `/zookeeper/config`. There is no dynamic
    /// configuration to follow.
    Empty,
    /// The data is not UTF-8.
    NotUtf8,
    /// There is no `version=` line.
    NoVersion,
    /// The `version=` value is not a hexadecimal `u64`.
    BadVersion {
        /// The value (cut to 80 characters).
        value: String,
    },
    /// A line that is not `key=value` (nor blank, nor a `#` or `!` comment).
    BadLine {
        /// Its number, from 1.
        line: usize,
        /// The line (cut to 80 characters).
        text: String,
    },
    /// A `server.<id>` line that is not a member, or a `group.`/`weight.`
    /// line whose id is not a number.
    BadServer {
        /// The key (cut to 80 characters), e.g. `server.3`.
        key: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The same key twice (two `server.3` lines, two `version` lines).
    DuplicateKey {
        /// The key (cut to 80 characters).
        key: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Empty => f.write_str("empty configuration (a standalone server has no dynamic configuration)"),
            ConfigError::NotUtf8 => f.write_str("the configuration is not UTF-8"),
            ConfigError::NoVersion => f.write_str("the configuration has no version= line"),
            ConfigError::BadVersion { value } => write!(f, "bad configuration version {value:?} (not hexadecimal)"),
            ConfigError::BadLine { line, text } => write!(f, "configuration line {line} is not key=value: {text:?}"),
            ConfigError::BadServer { key, reason } => write!(f, "bad configuration entry {key}: {reason}"),
            ConfigError::DuplicateKey { key } => write!(f, "configuration key {key} appears twice"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A member's role in the quorum.
///
/// # Examples
///
/// ```
/// assert_eq!(zk_proto::config::Role::Observer.to_string(), "observer");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// A voter (`participant`): may lead, counts in quorums.
    #[default]
    Participant,
    /// A non-voting member (`observer`).
    Observer,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Participant => "participant",
            Role::Observer => "observer",
        })
    }
}

/// One quorum address of a member: the host, and the ports the servers talk
/// on (`quorumPort`: followers to the leader; `electionPort`: leader election).
///
/// # Examples
///
/// ```
/// let a = zk_proto::config::QuorumAddress { host: "::1".into(), quorum_port: 2888, election_port: 3888 };
/// assert_eq!(a.to_string(), "[::1]:2888:3888");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QuorumAddress {
    /// The host as written (a name or an IP literal, IPv6 without brackets).
    pub host: String,
    /// The port followers connect to the leader on.
    pub quorum_port: u16,
    /// The leader election port.
    pub election_port: u16,
}

impl fmt::Display for QuorumAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}",
            Bracketed(&self.host),
            self.quorum_port,
            self.election_port
        )
    }
}

/// Where clients reach a member.
///
/// # Examples
///
/// ```
/// let c = zk_proto::config::ClientAddress { host: "127.0.0.1".into(), port: 2181 };
/// assert_eq!(c.to_string(), "127.0.0.1:2181");
/// assert!(!c.is_wildcard());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientAddress {
    /// The host as written (IPv6 without brackets); `0.0.0.0` when the
    /// configuration gave only a port.
    pub host: String,
    /// The client port.
    pub port: u16,
}

impl ClientAddress {
    /// Whether the host is a wildcard (`0.0.0.0`, `::`, `0:0:0:0:0:0:0:0`):
    /// the server listens on every interface, and the address says nothing
    /// about where to reach it.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = zk_proto::config::ClientAddress { host: "0.0.0.0".into(), port: 2181 };
    /// assert!(c.is_wildcard());
    /// ```
    pub fn is_wildcard(&self) -> bool {
        match self.host.parse::<std::net::IpAddr>() {
            Ok(ip) => ip.is_unspecified(),
            Err(_) => false,
        }
    }
}

impl fmt::Display for ClientAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", Bracketed(&self.host), self.port)
    }
}

/// A host, in brackets when it is an IPv6 literal (has a `:`).
struct Bracketed<'a>(&'a str);

impl fmt::Display for Bracketed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.contains(':') {
            write!(f, "[{}]", self.0)
        } else {
            f.write_str(self.0)
        }
    }
}

/// One member of the ensemble (a `server.<id>=...` line).
///
/// `Display` writes the whole line, `server.<id>=<value>`, as the server
/// writes it and as [`reconfig`](crate::ReconfigRequest)'s joining list takes
/// it; [`Member::value`] is the part after `=`.
///
/// # Examples
///
/// ```
/// use zk_proto::config::{Member, Role};
///
/// let m = Member::parse("server.4=127.0.0.1:2890:3890;2184")?;
/// assert_eq!((m.id, m.role), (4, Role::Participant));
/// assert_eq!(m.to_string(), "server.4=127.0.0.1:2890:3890:participant;0.0.0.0:2184");
/// # Ok::<(), zk_proto::config::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Member {
    /// The server id (its `myid`).
    pub id: u64,
    /// Its quorum addresses (one, or several with multi-address), sorted by
    /// host as the server prints them.
    pub addresses: Vec<QuorumAddress>,
    /// Voter or observer.
    pub role: Role,
    /// Where clients reach it, when the configuration says.
    pub client: Option<ClientAddress>,
}

impl Member {
    /// Parses one `server.<id>=<value>` line (surrounding blanks ignored).
    ///
    /// # Errors
    ///
    /// [`ConfigError::BadLine`] when the line is not `key=value`,
    /// [`ConfigError::BadServer`] when the key is not `server.<id>` or the
    /// value is not a member.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::config::Member;
    /// let m = Member::parse("server.2=[::1]:2888:3888:observer;[::1]:2181")?;
    /// assert_eq!(m.addresses[0].host, "::1");
    /// assert!(Member::parse("server.2=localhost:2888").is_err());
    /// # Ok::<(), zk_proto::config::ConfigError>(())
    /// ```
    pub fn parse(line: &str) -> Result<Member, ConfigError> {
        let line = line.trim();
        let Some((key, value)) = line.split_once('=') else {
            return Err(ConfigError::BadLine {
                line: 1,
                text: quote(line),
            });
        };
        let key = key.trim();
        let Some(id) = key.strip_prefix("server.") else {
            return Err(ConfigError::BadServer {
                key: quote(key),
                reason: "not a server.<id> key",
            });
        };
        let id = parse_id(key, id)?;
        Member::parse_value(id, value.trim()).map_err(|reason| ConfigError::BadServer {
            key: quote(key),
            reason,
        })
    }

    /// Parses a member's value (`QuorumServer(long, String)`'s rules).
    fn parse_value(id: u64, value: &str) -> Result<Member, &'static str> {
        let mut parts = value.split(';');
        let server_part = parts.next().unwrap_or("");
        let client_part = parts.next();
        if parts.next().is_some() {
            return Err("more than one ';'");
        }
        let client = match client_part.map(str::trim) {
            None | Some("") => None,
            Some(c) => {
                let p = host_and_port(c)?;
                match p.as_slice() {
                    [port] => Some(ClientAddress {
                        host: "0.0.0.0".to_string(),
                        port: parse_port(port)?,
                    }),
                    [host, port] => Some(ClientAddress {
                        host: non_empty_host(host)?,
                        port: parse_port(port)?,
                    }),
                    _ => return Err("the client part is not [host:]port"),
                }
            }
        };
        let mut role = None;
        let mut addresses = Vec::new();
        for a in server_part.split('|') {
            let p = host_and_port(a.trim())?;
            let p = p.as_slice();
            if !(3..=4).contains(&p.len()) {
                return Err("a server address is not host:quorumPort:electionPort[:role]");
            }
            let address = QuorumAddress {
                host: non_empty_host(p[0])?,
                quorum_port: parse_port(p[1])?,
                election_port: parse_port(p[2])?,
            };
            if address.quorum_port == address.election_port {
                return Err("the quorum and election ports are the same");
            }
            if let Some(r) = p.get(3) {
                let r = match r.trim().to_ascii_lowercase().as_str() {
                    "participant" => Role::Participant,
                    "observer" => Role::Observer,
                    _ => return Err("the role is neither participant nor observer"),
                };
                if role.is_some_and(|old| old != r) {
                    return Err("its addresses have different roles");
                }
                role = Some(r);
            }
            addresses.push(address);
        }
        // As the server prints them (QuorumServer.toString sorts by host).
        addresses.sort_by(|a, b| a.host.cmp(&b.host));
        Ok(Member {
            id,
            addresses,
            role: role.unwrap_or_default(),
            client,
        })
    }

    /// The part after `server.<id>=`, as the server writes it: the addresses
    /// joined by `|`, the role, then `;` and the client address if known.
    ///
    /// # Examples
    ///
    /// ```
    /// let m = zk_proto::config::Member::parse("server.1=a:1:2|b:3:4;a:2181")?;
    /// assert_eq!(m.value(), "a:1:2|b:3:4:participant;a:2181");
    /// # Ok::<(), zk_proto::config::ConfigError>(())
    /// ```
    pub fn value(&self) -> String {
        let mut s = self
            .addresses
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("|");
        s.push(':');
        s.push_str(&self.role.to_string());
        if let Some(c) = &self.client {
            s.push(';');
            s.push_str(&c.to_string());
        }
        s
    }
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "server.{}={}", self.id, self.value())
    }
}

/// The ensemble's configuration as `/zookeeper/config` holds it: its members
/// (sorted by id, ids unique), a hierarchical quorum's `group`/`weight`
/// entries if any, and its version. `Display` (`to_string()`) writes what the
/// server writes.
///
/// # Examples
///
/// ```
/// use zk_proto::config::{EnsembleConfig, Member};
///
/// let members = vec![Member::parse("server.2=h2:1:2;h2:2181")?, Member::parse("server.1=h1:1:2;h1:2181")?];
/// let config = EnsembleConfig::new(members, 0x100000000)?;
/// assert_eq!(
///     config.to_string(),
///     "server.1=h1:1:2:participant;h1:2181\nserver.2=h2:1:2:participant;h2:2181\nversion=100000000"
/// );
/// assert_eq!(EnsembleConfig::parse(config.to_string().as_bytes())?, config);
/// # Ok::<(), zk_proto::config::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsembleConfig {
    members: Vec<Member>,
    groups: BTreeMap<u64, String>,
    weights: BTreeMap<u64, String>,
    version: u64,
}

impl EnsembleConfig {
    /// A configuration of `members` (any order) at `version`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::DuplicateKey`] when two members have the same id.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::config::{EnsembleConfig, Member};
    /// let m = Member::parse("server.1=127.0.0.1:2888:3888")?;
    /// assert!(EnsembleConfig::new(vec![m.clone(), m], 1).is_err());
    /// # Ok::<(), zk_proto::config::ConfigError>(())
    /// ```
    pub fn new(mut members: Vec<Member>, version: u64) -> Result<EnsembleConfig, ConfigError> {
        members.sort_by_key(|m| m.id);
        if let Some(w) = members.windows(2).find(|w| w[0].id == w[1].id) {
            return Err(ConfigError::DuplicateKey {
                key: format!("server.{}", w[0].id),
            });
        }
        Ok(EnsembleConfig {
            members,
            groups: BTreeMap::new(),
            weights: BTreeMap::new(),
            version,
        })
    }

    /// Parses `/zookeeper/config`'s data, as Java's `Properties` would read
    /// it for `QuorumMaj`: `key=value` lines (blanks around keys and values,
    /// blank lines, `\r`, and `#`/`!` comment lines ignored); `server.<id>`
    /// lines are members, `group.<id>` and `weight.<id>` lines are kept for
    /// [`to_string`](ToString::to_string), `version` is the version (hex),
    /// and any other key is ignored. A configuration with no member parses
    /// (the caller decides what to make of it).
    ///
    /// A pure function: it never panics, whatever the bytes.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Empty`] for empty data (a standalone server's),
    /// [`ConfigError::NotUtf8`], [`ConfigError::NoVersion`],
    /// [`ConfigError::BadVersion`], [`ConfigError::BadLine`],
    /// [`ConfigError::BadServer`], [`ConfigError::DuplicateKey`].
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_proto::config::{ConfigError, EnsembleConfig};
    /// let c = EnsembleConfig::parse(b"server.3=10.0.0.3:2888:3888:participant;2181\nversion=a")?;
    /// assert_eq!((c.version(), c.members()[0].id), (10, 3));
    /// assert!(matches!(EnsembleConfig::parse(b"garbage\nversion=1"), Err(ConfigError::BadLine { line: 1, .. })));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn parse(data: &[u8]) -> Result<EnsembleConfig, ConfigError> {
        let text = std::str::from_utf8(data).map_err(|_| ConfigError::NotUtf8)?;
        if text.trim().is_empty() {
            return Err(ConfigError::Empty);
        }
        let mut members: BTreeMap<u64, Member> = BTreeMap::new();
        let mut groups = BTreeMap::new();
        let mut weights = BTreeMap::new();
        let mut version = None;
        for (n, line) in text.split('\n').enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(ConfigError::BadLine {
                    line: n + 1,
                    text: quote(line),
                });
            };
            let (key, value) = (key.trim(), value.trim());
            let duplicate = || ConfigError::DuplicateKey { key: quote(key) };
            if key == "version" {
                if version.is_some() {
                    return Err(duplicate());
                }
                let v = if value.starts_with(['+', '-']) {
                    None
                } else {
                    u64::from_str_radix(value, 16).ok()
                };
                version = Some(v.ok_or_else(|| ConfigError::BadVersion { value: quote(value) })?);
            } else if let Some(id) = key.strip_prefix("server.") {
                let id = parse_id(key, id)?;
                let m = Member::parse_value(id, value).map_err(|reason| ConfigError::BadServer {
                    key: quote(key),
                    reason,
                })?;
                if members.insert(id, m).is_some() {
                    return Err(duplicate());
                }
            } else if let Some(id) = key.strip_prefix("group.") {
                if groups.insert(parse_id(key, id)?, value.to_string()).is_some() {
                    return Err(duplicate());
                }
            } else if let Some(id) = key.strip_prefix("weight.") {
                if weights.insert(parse_id(key, id)?, value.to_string()).is_some() {
                    return Err(duplicate());
                }
            }
        }
        Ok(EnsembleConfig {
            members: members.into_values().collect(),
            groups,
            weights,
            version: version.ok_or(ConfigError::NoVersion)?,
        })
    }

    /// The members, sorted by id.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = zk_proto::config::EnsembleConfig::parse(b"server.2=b:1:2\nserver.1=a:1:2\nversion=1")?;
    /// assert_eq!(c.members().iter().map(|m| m.id).collect::<Vec<_>>(), [1, 2]);
    /// # Ok::<(), zk_proto::config::ConfigError>(())
    /// ```
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The member with server id `id`, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = zk_proto::config::EnsembleConfig::parse(b"server.7=h:1:2\nversion=1")?;
    /// assert!(c.member(7).is_some() && c.member(1).is_none());
    /// # Ok::<(), zk_proto::config::ConfigError>(())
    /// ```
    pub fn member(&self, id: u64) -> Option<&Member> {
        self.members
            .binary_search_by_key(&id, |m| m.id)
            .ok()
            .map(|i| &self.members[i])
    }

    /// The version: the `version=` value, the zxid of the reconfig that made
    /// this configuration (equal to the node's `Stat.mzxid`). A later
    /// configuration has a larger version.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = zk_proto::config::EnsembleConfig::parse(b"version=20000000a")?;
    /// assert_eq!(c.version(), 0x2_0000_000a);
    /// # Ok::<(), zk_proto::config::ConfigError>(())
    /// ```
    pub fn version(&self) -> u64 {
        self.version
    }

    /// A hierarchical quorum's `group.<id>` and then `weight.<id>` entries,
    /// `(key, value)` in the order `to_string` writes them; empty for a
    /// majority quorum.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = zk_proto::config::EnsembleConfig::parse(b"server.1=h:1:2\ngroup.1=1\nweight.1=1\nversion=1")?;
    /// assert_eq!(c.hierarchy(), [("group.1".to_string(), "1".to_string()), ("weight.1".into(), "1".into())]);
    /// # Ok::<(), zk_proto::config::ConfigError>(())
    /// ```
    pub fn hierarchy(&self) -> Vec<(String, String)> {
        let groups = self.groups.iter().map(|(id, v)| (format!("group.{id}"), v.clone()));
        let weights = self.weights.iter().map(|(id, v)| (format!("weight.{id}"), v.clone()));
        groups.chain(weights).collect()
    }
}

impl fmt::Display for EnsembleConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for m in &self.members {
            writeln!(f, "{m}")?;
        }
        for (k, v) in self.hierarchy() {
            writeln!(f, "{k}={v}")?;
        }
        write!(f, "version={:x}", self.version)
    }
}

/// The id of a `server.`/`group.`/`weight.` key.
fn parse_id(key: &str, id: &str) -> Result<u64, ConfigError> {
    if id.starts_with('+') {
        return Err(bad_id(key));
    }
    id.parse::<u64>().map_err(|_| bad_id(key))
}

fn bad_id(key: &str) -> ConfigError {
    ConfigError::BadServer {
        key: quote(key),
        reason: "the id is not a number",
    }
}

/// `ConfigUtils.getHostAndPort`: `[v6]:a:b...` or `host:a:b...`, split on `:`,
/// up to four parts (a member's address has at most four; more is an error),
/// without allocating.
fn host_and_port(s: &str) -> Result<Parts<'_>, &'static str> {
    let mut parts = Parts::default();
    let rest = if let Some(rest) = s.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return Err("'[' without ']'");
        };
        parts.push(&rest[..end])?;
        let after = &rest[end + 1..];
        if after.is_empty() {
            return Ok(parts);
        }
        after.strip_prefix(':').ok_or("no ':' after ']'")?
    } else {
        s
    };
    for p in rest.split(':') {
        parts.push(p)?;
    }
    Ok(parts)
}

/// The parts of an address (at most four).
#[derive(Default)]
struct Parts<'a> {
    parts: [&'a str; 4],
    len: usize,
}

impl<'a> Parts<'a> {
    fn push(&mut self, p: &'a str) -> Result<(), &'static str> {
        let slot = self.parts.get_mut(self.len).ok_or("too many ':'")?;
        *slot = p;
        self.len += 1;
        Ok(())
    }

    fn as_slice(&self) -> &[&'a str] {
        &self.parts[..self.len]
    }
}

fn parse_port(s: &str) -> Result<u16, &'static str> {
    let s = s.trim();
    if s.starts_with('+') {
        return Err("a port is not a number in 0..=65535");
    }
    s.parse().map_err(|_| "a port is not a number in 0..=65535")
}

fn non_empty_host(h: &str) -> Result<String, &'static str> {
    let h = h.trim();
    if h.is_empty() {
        return Err("an empty host");
    }
    Ok(h.to_string())
}

/// `s`, cut to [`QUOTE_MAX`] characters (`…` marks a cut).
fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE_MAX) {
        None => s.to_string(),
        Some((i, _)) => format!("{}…", &s[..i]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a 3-node 3.8.0 ensemble on loopback published (spec §1.1), 192 bytes.
    const OBSERVED: &str = "server.1=127.0.0.1:25188:25191:participant;127.0.0.1:25185\n\
                            server.2=127.0.0.1:25189:25192:participant;127.0.0.1:25186\n\
                            server.3=127.0.0.1:25190:25193:participant;0.0.0.0:25187\n\
                            version=100000000";

    #[test]
    fn the_servers_text_parses_and_is_written_back_byte_for_byte() {
        assert_eq!(OBSERVED.len(), 192);
        let c = EnsembleConfig::parse(OBSERVED.as_bytes()).unwrap();
        assert_eq!(c.version(), 0x1_0000_0000);
        assert_eq!(c.members().len(), 3);
        let m3 = c.member(3).unwrap();
        assert_eq!(
            m3.addresses,
            [QuorumAddress {
                host: "127.0.0.1".into(),
                quorum_port: 25190,
                election_port: 25193
            }]
        );
        assert!(m3.client.as_ref().unwrap().is_wildcard());
        assert!(!c.member(1).unwrap().client.as_ref().unwrap().is_wildcard());
        assert_eq!(c.to_string(), OBSERVED);
    }

    #[test]
    fn the_input_forms_the_server_accepts_are_read() {
        let c = EnsembleConfig::parse(
            b"# a comment\r\n\
              ! another\n\
              \n\
              server.10 = [fe80::1]:2888:3888:Observer;[::1]:2181 \r\n\
              server.2=host-b:1:2|host-a:3:4\n\
              server.3=h:5:6;7\n\
              clientPort=2181\n\
              dynamicConfigFile=/x\n\
              version = 1F\n",
        )
        .unwrap();
        assert_eq!(c.version(), 0x1f);
        let ids: Vec<u64> = c.members().iter().map(|m| m.id).collect();
        assert_eq!(ids, [2, 3, 10]);
        let m10 = c.member(10).unwrap();
        assert_eq!((m10.role, m10.addresses[0].host.as_str()), (Role::Observer, "fe80::1"));
        assert_eq!(
            m10.client,
            Some(ClientAddress {
                host: "::1".into(),
                port: 2181
            })
        );
        let m2 = c.member(2).unwrap();
        assert_eq!(m2.client, None);
        assert_eq!(m2.addresses[0].host, "host-a", "sorted by host as printed");
        assert_eq!(c.member(3).unwrap().client.as_ref().unwrap().host, "0.0.0.0");
        assert_eq!(
            c.to_string(),
            "server.2=host-a:3:4|host-b:1:2:participant\n\
             server.3=h:5:6:participant;0.0.0.0:7\n\
             server.10=[fe80::1]:2888:3888:observer;[::1]:2181\n\
             version=1f"
        );
        assert_eq!(EnsembleConfig::parse(c.to_string().as_bytes()).unwrap(), c);
    }

    #[test]
    fn a_hierarchical_quorum_keeps_its_groups_and_weights() {
        let text = "server.1=a:1:2\nserver.2=b:1:2\ngroup.1=1:2\nweight.1=1\nweight.2=1\nversion=5";
        let c = EnsembleConfig::parse(text.as_bytes()).unwrap();
        assert_eq!(c.hierarchy().len(), 3);
        assert_eq!(
            c.to_string(),
            "server.1=a:1:2:participant\nserver.2=b:1:2:participant\ngroup.1=1:2\nweight.1=1\nweight.2=1\nversion=5"
        );
    }

    #[test]
    fn bad_configurations_are_typed_errors() {
        let cases: &[(&[u8], ConfigError)] = &[
            (b"", ConfigError::Empty),
            (b" \n\r\n", ConfigError::Empty),
            (b"\xff\xfe", ConfigError::NotUtf8),
            (b"server.1=a:1:2", ConfigError::NoVersion),
            (b"# only a comment", ConfigError::NoVersion),
            (b"version=xyz", ConfigError::BadVersion { value: "xyz".into() }),
            (b"version=", ConfigError::BadVersion { value: "".into() }),
            (b"version=-1", ConfigError::BadVersion { value: "-1".into() }),
            (
                b"version=10000000000000000",
                ConfigError::BadVersion {
                    value: "10000000000000000".into(),
                },
            ),
            (
                b"version=1\nsome thing",
                ConfigError::BadLine {
                    line: 2,
                    text: "some thing".into(),
                },
            ),
            (
                b"version=1\nversion=2",
                ConfigError::DuplicateKey { key: "version".into() },
            ),
            (
                b"server.1=a:1:2\nserver.1=b:1:2\nversion=1",
                ConfigError::DuplicateKey { key: "server.1".into() },
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                EnsembleConfig::parse(input).as_ref(),
                Err(want),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
        for member in [
            "server.x=a:1:2",
            "server.-1=a:1:2",
            "server.+1=a:1:2",
            "server.=a:1:2",
            "server.1=",
            "server.1=a:1",
            "server.1=a:1:2:3:4",
            "server.1=a:1:1",
            "server.1=a:1:99999",
            "server.1=a:x:2",
            "server.1=:1:2",
            "server.1=a:1:2:leader",
            "server.1=a:1:2:observer|b:1:2:participant",
            "server.1=a:1:2;b:c:3",
            "server.1=a:1:2;x",
            "server.1=a:1:2;1;2",
            "server.1=[::1:1:2",
            "server.1=[::1]x:1:2",
            "group.x=1",
        ] {
            let input = format!("{member}\nversion=1");
            assert!(
                matches!(
                    EnsembleConfig::parse(input.as_bytes()),
                    Err(ConfigError::BadServer { .. })
                ),
                "{member}: {:?}",
                EnsembleConfig::parse(input.as_bytes())
            );
        }
    }

    #[test]
    fn errors_quote_at_most_80_characters_and_cut_on_a_char_boundary() {
        let long = format!("{}\nversion=1", "é".repeat(500));
        let Err(ConfigError::BadLine { text, .. }) = EnsembleConfig::parse(long.as_bytes()) else {
            panic!("not a bad line")
        };
        assert_eq!(text.chars().count(), 81);
        assert!(text.ends_with('…'));
        for e in [
            ConfigError::Empty,
            ConfigError::NotUtf8,
            ConfigError::NoVersion,
            ConfigError::BadVersion { value: "q".into() },
            ConfigError::BadLine {
                line: 3,
                text: "t".into(),
            },
            ConfigError::BadServer {
                key: "server.1".into(),
                reason: "r",
            },
            ConfigError::DuplicateKey { key: "k".into() },
        ] {
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn a_member_line_parses_alone_and_the_wildcard_is_recognised() {
        let m = Member::parse("  server.4=127.0.0.1:2890:3890:participant;127.0.0.1:2184 ").unwrap();
        assert_eq!(m.to_string(), "server.4=127.0.0.1:2890:3890:participant;127.0.0.1:2184");
        assert!(matches!(Member::parse("4=a:1:2"), Err(ConfigError::BadServer { .. })));
        assert!(matches!(Member::parse("nothing"), Err(ConfigError::BadLine { .. })));
        for (host, wild) in [
            ("0.0.0.0", true),
            ("::", true),
            ("0:0:0:0:0:0:0:0", true),
            ("localhost", false),
        ] {
            let c = ClientAddress {
                host: host.into(),
                port: 1,
            };
            assert_eq!(c.is_wildcard(), wild, "{host}");
        }
    }

    #[test]
    fn cut_inputs_never_panic() {
        let bytes = OBSERVED.as_bytes();
        for cut in 0..bytes.len() {
            let _ = EnsembleConfig::parse(&bytes[..cut]);
            let _ = EnsembleConfig::parse(&bytes[cut..]);
        }
    }
}
