//! Who holds a lock: the data our lock nodes carry, and how any lock node's
//! data is read back.
//!
//! Every lock node this crate creates without data of the caller's own
//! (`InterProcessMutex::with_data`, `InterProcessReadWriteLock::with_data`,
//! `InterProcessSemaphoreV2::with_node_data` and revocable locks keep theirs)
//! carries one line of JSON naming its creator:
//!
//! ```text
//! {"v":1,"host":"build-7","addr":"10.0.0.5","pid":4242,"name":"billing-worker","ts":1763937600123}
//! ```
//!
//! | field | meaning |
//! |---|---|
//! | `v` | format version (1) |
//! | `host` | the host name (`/proc/sys/kernel/hostname`) |
//! | `addr` | the client's default node data as text: Curator's (the host's IP address), unless the client was built with `default_data(..)` |
//! | `pid` | the process id |
//! | `name` | the process name (the client's [`set_process_name`], else the executable's file name) |
//! | `ts` | when the node was created (queued), in milliseconds since the Unix epoch, by this host's clock |
//!
//! Curator never reads lock node data for locking (only a revocation
//! compares it with `__REVOKE__`), so this stays interoperable. Curator's own
//! nodes carry the host address (`10.0.0.5`): [`HolderIdentity::parse`] reads
//! both, and anything else as [`HolderIdentity::Unknown`].

use std::fmt;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::RwLock;
use zk_framework::CuratorFramework;

/// The format version our lock nodes carry (`"v"`).
pub const IDENTITY_VERSION: u32 = 1;

/// The process that created a lock node (our JSON format).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ProcessIdentity {
    /// The host name.
    pub host: String,
    /// The client's default node data (Curator's: the host address).
    pub addr: String,
    /// The process id.
    pub pid: u32,
    /// The process name.
    pub name: String,
    /// When the node was created, in milliseconds since the Unix epoch (the
    /// creator's clock).
    pub created_ms: i64,
}

/// Who holds (or waits for) a lock, as far as its node's data tells.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HolderIdentity {
    /// A node of ours: host, process id, name and creation time.
    Process(ProcessIdentity),
    /// A node whose data is a host address, as Curator writes it (its
    /// default data: `InetAddress.getLocalHost().getHostAddress()`).
    Address(String),
    /// Anything else (empty data, a revocable lock's, an application's own).
    Unknown(Vec<u8>),
}

impl HolderIdentity {
    /// Reads a lock node's data: our JSON, Curator's address, or unknown.
    /// Never fails: data it cannot read is [`HolderIdentity::Unknown`].
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::identity::HolderIdentity;
    /// let ours = br#"{"v":1,"host":"h1","addr":"10.0.0.5","pid":42,"name":"worker","ts":1700000000000}"#;
    /// match HolderIdentity::parse(ours) {
    ///     HolderIdentity::Process(p) => assert_eq!((p.pid, p.name.as_str()), (42, "worker")),
    ///     other => panic!("{other:?}"),
    /// }
    /// assert_eq!(HolderIdentity::parse(b"10.0.0.7"), HolderIdentity::Address("10.0.0.7".into()));
    /// assert_eq!(HolderIdentity::parse(b""), HolderIdentity::Unknown(Vec::new()));
    /// ```
    pub fn parse(data: &[u8]) -> HolderIdentity {
        if let Some(p) = parse_process(data) {
            return HolderIdentity::Process(p);
        }
        if let Ok(text) = std::str::from_utf8(data) {
            if text.parse::<std::net::IpAddr>().is_ok() {
                return HolderIdentity::Address(text.to_string());
            }
        }
        HolderIdentity::Unknown(data.to_vec())
    }
}

impl fmt::Display for HolderIdentity {
    /// `worker[42]@h1 (10.0.0.5)`, `10.0.0.7 (address only)`, `unknown`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HolderIdentity::Process(p) => {
                write!(f, "{}[{}]@{}", p.name, p.pid, p.host)?;
                if !p.addr.is_empty() && p.addr != p.host {
                    write!(f, " ({})", p.addr)?;
                }
                Ok(())
            }
            HolderIdentity::Address(a) => write!(f, "{a} (address only)"),
            HolderIdentity::Unknown(d) if d.is_empty() => f.write_str("unknown"),
            HolderIdentity::Unknown(d) => match std::str::from_utf8(d) {
                Ok(t) if t.len() <= 64 && !t.chars().any(char::is_control) => write!(f, "unknown ({t:?})"),
                _ => write!(f, "unknown ({} bytes)", d.len()),
            },
        }
    }
}

/// The name a client gives its process in lock nodes, once set (kept by the
/// client).
#[derive(Default)]
struct ProcessName(RwLock<Option<String>>);

/// Names this process in the lock nodes `client` creates from now on
/// (default: the executable's file name). `zk-lock` uses it to show its
/// COMMAND. Per client: another client of the process keeps its own name.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// zk_recipes::identity::set_process_name(&client, "billing-worker");
/// assert_eq!(zk_recipes::identity::process_name(&client), "billing-worker");
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub fn set_process_name(client: &CuratorFramework, name: impl Into<String>) {
    *client.extension(ProcessName::default).0.write() = Some(name.into());
}

/// The name `client` gives this process in its lock nodes.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// assert!(!zk_recipes::identity::process_name(&client).is_empty());
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub fn process_name(client: &CuratorFramework) -> String {
    match client.extension(ProcessName::default).0.read().as_ref() {
        Some(n) => n.clone(),
        None => executable_name().to_string(),
    }
}

/// The executable's file name (`unknown` if it has none).
fn executable_name() -> &'static str {
    static EXE: OnceLock<String> = OnceLock::new();
    EXE.get_or_init(|| {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "unknown".to_string())
    })
}

fn host_name() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .map(|h| h.trim().to_string())
            .unwrap_or_default()
    })
}

impl ProcessIdentity {
    /// This process, with `addr` as its address (the client's default data)
    /// and the executable's file name as its name.
    ///
    /// # Examples
    ///
    /// ```
    /// let me = zk_recipes::identity::ProcessIdentity::current("10.0.0.5");
    /// assert_eq!(me.addr, "10.0.0.5");
    /// ```
    pub fn current(addr: &str) -> ProcessIdentity {
        ProcessIdentity {
            host: host_name().to_string(),
            addr: addr.to_string(),
            pid: std::process::id(),
            name: executable_name().to_string(),
            created_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        }
    }

    /// The node data (one line of JSON, see the [module](self) docs).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::identity::{HolderIdentity, ProcessIdentity};
    /// let me = ProcessIdentity::current("10.0.0.5");
    /// assert_eq!(HolderIdentity::parse(&me.to_json()), HolderIdentity::Process(me));
    /// ```
    pub fn to_json(&self) -> Vec<u8> {
        let mut s = String::with_capacity(96);
        s.push_str("{\"v\":");
        s.push_str(&IDENTITY_VERSION.to_string());
        s.push_str(",\"host\":");
        push_json_string(&mut s, &self.host);
        s.push_str(",\"addr\":");
        push_json_string(&mut s, &self.addr);
        s.push_str(",\"pid\":");
        s.push_str(&self.pid.to_string());
        s.push_str(",\"name\":");
        push_json_string(&mut s, &self.name);
        s.push_str(",\"ts\":");
        s.push_str(&self.created_ms.to_string());
        s.push('}');
        s.into_bytes()
    }
}

/// The data of a lock node `client` creates now.
pub(crate) fn node_data(client: &CuratorFramework) -> Vec<u8> {
    let addr = String::from_utf8_lossy(client.default_data());
    ProcessIdentity {
        name: process_name(client),
        ..ProcessIdentity::current(&addr)
    }
    .to_json()
}

fn push_json_string(out: &mut String, s: &str) {
    out.push_str(&json_string(s));
}

/// `s` as a JSON string literal, quotes included: the escaping the identity
/// data uses, for tools that print participants as JSON (`zk-lock status
/// --json`).
///
/// # Examples
///
/// ```
/// assert_eq!(zk_recipes::identity::json_string("a\"b\n"), r#""a\"b\n""#);
/// ```
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A flat JSON object's value: a string or an integer.
enum Value {
    Str(String),
    Int(i64),
}

/// Parses our format: a flat object of strings and integers with `"v":1`.
/// Unknown keys are ignored (later versions may add fields).
fn parse_process(data: &[u8]) -> Option<ProcessIdentity> {
    let text = std::str::from_utf8(data).ok()?;
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    p.ws();
    p.eat(b'{')?;
    let mut fields: Vec<(String, Value)> = Vec::new();
    p.ws();
    if p.peek() == Some(b'}') {
        p.i += 1;
    } else {
        loop {
            p.ws();
            let key = p.string()?;
            p.ws();
            p.eat(b':')?;
            p.ws();
            let value = match p.peek()? {
                b'"' => Value::Str(p.string()?),
                _ => Value::Int(p.int()?),
            };
            fields.push((key, value));
            p.ws();
            match p.next()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
    }
    p.ws();
    if p.i != p.s.len() {
        return None;
    }
    let get = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let int = |k: &str| match get(k) {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    };
    let string = |k: &str| match get(k) {
        Some(Value::Str(s)) => Some(s.clone()),
        _ => None,
    };
    if int("v")? != i64::from(IDENTITY_VERSION) {
        return None;
    }
    Some(ProcessIdentity {
        host: string("host")?,
        addr: string("addr").unwrap_or_default(),
        pid: u32::try_from(int("pid")?).ok()?,
        name: string("name")?,
        created_ms: int("ts")?,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn int(&mut self) -> Option<i64> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).ok()?.parse().ok()
    }

    fn string(&mut self) -> Option<String> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            match self.next()? {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let c = match self.next()? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hex = std::str::from_utf8(self.s.get(self.i..self.i + 4)?).ok()?;
                            self.i += 4;
                            char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
                        }
                        _ => return None,
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                b if b < 0x20 => return None,
                b => out.push(b),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_awkward_names() {
        for name in [
            "plain",
            "with \"quotes\" and \\",
            "tab\tnew\nline",
            "ünïcødé ☃",
            "\u{1}ctl",
            "",
        ] {
            let p = ProcessIdentity {
                host: "h".into(),
                addr: String::new(),
                pid: 7,
                name: name.into(),
                created_ms: 1,
            };
            assert_eq!(HolderIdentity::parse(&p.to_json()), HolderIdentity::Process(p.clone()));
        }
    }

    #[test]
    fn reads_curator_data_and_rejects_junk() {
        assert_eq!(
            HolderIdentity::parse(b"127.0.0.1"),
            HolderIdentity::Address("127.0.0.1".into())
        );
        assert_eq!(HolderIdentity::parse(b"::1"), HolderIdentity::Address("::1".into()));
        for junk in [
            &b"__REVOKE__"[..],
            b"{",
            b"{\"v\":2,\"host\":\"h\",\"pid\":1,\"name\":\"n\",\"ts\":1}",
            b"{\"v\":1,\"host\":\"h\",\"pid\":-1,\"name\":\"n\",\"ts\":1}",
            b"{\"v\":1,\"host\":\"h\",\"pid\":1,\"name\":\"n\"}",
            b"{\"v\":1,\"host\":\"h\",\"pid\":1,\"name\":\"n\",\"ts\":1} trailing",
            b"\xff\xfe",
            b"{\"v\":1,\"host\":\"h\\q\",\"pid\":1,\"name\":\"n\",\"ts\":1}",
        ] {
            assert!(
                matches!(HolderIdentity::parse(junk), HolderIdentity::Unknown(_)),
                "{:?}",
                String::from_utf8_lossy(junk)
            );
        }
        // Unknown keys and whitespace are fine.
        let spaced = br#" { "v" : 1 , "host" : "h" , "pid" : 3 , "name" : "n" , "ts" : 5 , "extra" : "x" } "#;
        assert!(matches!(HolderIdentity::parse(spaced), HolderIdentity::Process(p) if p.pid == 3));
    }

    #[test]
    fn displays_for_operators() {
        let p = HolderIdentity::parse(br#"{"v":1,"host":"h1","addr":"10.0.0.5","pid":42,"name":"w","ts":0}"#);
        assert_eq!(p.to_string(), "w[42]@h1 (10.0.0.5)");
        assert_eq!(
            HolderIdentity::parse(b"10.0.0.7").to_string(),
            "10.0.0.7 (address only)"
        );
        assert_eq!(HolderIdentity::parse(b"").to_string(), "unknown");
        assert_eq!(HolderIdentity::parse(b"job-7").to_string(), "unknown (\"job-7\")");
    }
}
