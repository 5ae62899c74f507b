use std::fmt;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::RwLock;
use serde_core::ser::{SerializeMap, Serializer};
use serde_json::ser::CharEscape;
use serde_json::Value;
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
///
/// # The identity a lock node carries
///
/// Who holds a lock: the data our lock nodes carry, and how any lock node's
/// data is read back.
///
/// Every lock node this crate creates without data of the caller's own
/// (`InterProcessMutex::with_data`, `InterProcessReadWriteLock::with_data`,
/// `InterProcessSemaphoreV2::with_node_data` and revocable locks keep theirs)
/// carries one line of JSON naming its creator:
///
/// ```text
/// {"v":1,"host":"build-7","addr":"10.0.0.5","pid":4242,"name":"billing-worker","ts":1763937600123}
/// ```
///
/// | field | meaning |
/// |---|---|
/// | `v` | format version (1) |
/// | `host` | the host name (`/proc/sys/kernel/hostname`) |
/// | `addr` | the client's default node data as text: Curator's (the host's IP address), unless the client was built with `default_data(..)` |
/// | `pid` | the process id |
/// | `name` | the process name (the client's [`set_process_name`], else the executable's file name) |
/// | `ts` | when the node was created (queued), in milliseconds since the Unix epoch, by this host's clock |
///
/// Curator never reads lock node data for locking (only a revocation
/// compares it with `__REVOKE__`), so this stays interoperable. Curator's own
/// nodes carry the host address (`10.0.0.5`): [`HolderIdentity::parse`] reads
/// both, and anything else as [`HolderIdentity::Unknown`].
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
    /// use zk_recipes::HolderIdentity;
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
/// zk_recipes::set_process_name(&client, "billing-worker");
/// assert_eq!(zk_recipes::process_name(&client), "billing-worker");
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub fn set_process_name(client: &CuratorFramework, name: impl Into<String>) {
    *client.recipe().extension(ProcessName::default).0.write() = Some(name.into());
}

/// The name `client` gives this process in its lock nodes.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// assert!(!zk_recipes::process_name(&client).is_empty());
/// # Ok::<(), zk_framework::Error>(())
/// ```
pub fn process_name(client: &CuratorFramework) -> String {
    match client.recipe().extension(ProcessName::default).0.read().as_ref() {
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
    /// let me = zk_recipes::ProcessIdentity::current("10.0.0.5");
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

    /// The node data (one line of JSON, see [`HolderIdentity`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::{HolderIdentity, ProcessIdentity};
    /// let me = ProcessIdentity::current("10.0.0.5");
    /// assert_eq!(HolderIdentity::parse(&me.to_json()), HolderIdentity::Process(me));
    /// ```
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(96);
        self.write_json(&mut out)
            .expect("serializing strings and integers into a Vec cannot fail");
        out
    }

    /// Writes the fields in the documented order (a `serde_json::Map` would
    /// sort them, or need its `preserve_order` feature, and with it
    /// `indexmap`, in every crate that uses this one).
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let mut ser = serde_json::Serializer::with_formatter(out, IdentityFormatter);
        let mut map = ser.serialize_map(Some(6))?;
        map.serialize_entry("v", &IDENTITY_VERSION)?;
        map.serialize_entry("host", &self.host)?;
        map.serialize_entry("addr", &self.addr)?;
        map.serialize_entry("pid", &self.pid)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("ts", &self.created_ms)?;
        map.end()
    }
}

/// `serde_json`'s compact output, except that backspace and form feed are
/// written `\u0008` and `\u000c` (not `\b` and `\f`), as this crate always
/// wrote them: the same identity gives the same bytes as before.
struct IdentityFormatter;

impl serde_json::ser::Formatter for IdentityFormatter {
    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> std::io::Result<()> {
        match char_escape {
            CharEscape::Backspace => writer.write_all(b"\\u0008"),
            CharEscape::FormFeed => writer.write_all(b"\\u000c"),
            other => serde_json::ser::CompactFormatter.write_char_escape(writer, other),
        }
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

/// Reads our format: a JSON object with `"v":1` whose values are all strings
/// or integers (as before: a float, a boolean, a null, an array or a nested
/// object, even under an unknown key, makes the data not ours). Unknown keys
/// are ignored (later versions may add fields). Parsing is `serde_json`'s,
/// which returns an error, never panics, on any bytes (nesting is limited).
fn parse_process(data: &[u8]) -> Option<ProcessIdentity> {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(data) else {
        return None;
    };
    if !fields.values().all(|v| v.is_string() || v.is_i64()) {
        return None;
    }
    let int = |k: &str| fields.get(k).and_then(Value::as_i64);
    let string = |k: &str| fields.get(k).and_then(Value::as_str).map(str::to_string);
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
    fn writes_the_same_bytes_as_before() {
        // The bytes the hand-written writer produced for these fields: keys in
        // order, no spaces, `\"` `\\` `\n` `\r` `\t`, other control characters
        // as `\u00xx` (backspace and form feed too), everything else as is.
        let p = ProcessIdentity {
            host: "h\u{8}1".into(),
            addr: "10.0.0.5".into(),
            pid: 42,
            name: "a\"b\\c\nd\r\te\u{1}\u{c}\u{1f}\u{7f}/ü☃".into(),
            created_ms: -3,
        };
        let expected = concat!(
            r#"{"v":1,"host":"h\u00081","addr":"10.0.0.5","pid":42,"#,
            r#""name":"a\"b\\c\nd\r\te\u0001\u000c\u001f"#,
            "\u{7f}", // DEL is no control character to JSON: written as is
            r#"/ü☃","ts":-3}"#
        );
        assert_eq!(String::from_utf8(p.to_json()).unwrap(), expected);
        // The escaping `json_string` documented: `a"b<newline>` as `"a\"b\n"`.
        let q = ProcessIdentity {
            name: "a\"b\n".into(),
            ..p
        };
        let json = String::from_utf8(q.to_json()).unwrap();
        assert!(json.contains(r#","name":"a\"b\n","#), "{json}");
    }

    #[test]
    fn parse_never_panics() {
        // Truncations and byte changes of a valid identity, deep nesting, and
        // pseudo-random bytes: each is read as something, never a panic.
        let valid = br#"{"v":1,"host":"h1","addr":"10.0.0.5","pid":42,"name":"w\u00e9\n","ts":1700000000000}"#;
        assert!(matches!(HolderIdentity::parse(valid), HolderIdentity::Process(_)));
        for end in 0..valid.len() {
            let _ = HolderIdentity::parse(&valid[..end]);
        }
        for i in 0..valid.len() {
            for b in [0u8, b'"', b'\\', b'{', b'}', b'9', b'-', 0x80, 0xff] {
                let mut d = valid.to_vec();
                d[i] = b;
                let _ = HolderIdentity::parse(&d);
            }
        }
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(matches!(
            HolderIdentity::parse(deep.as_bytes()),
            HolderIdentity::Unknown(_)
        ));
        let alphabet = b"{}[]\":,-0123456789eE.tfnul\\ \x01\xc3\xa9v";
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..2000 {
            let d: Vec<u8> = (0..len % 97)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            let _ = HolderIdentity::parse(&d);
        }
    }

    #[test]
    fn only_strings_and_integers_as_before() {
        // A value of another type, under any key, makes the data not ours.
        for other in [
            r#""extra":1.5"#,
            r#""extra":true"#,
            r#""extra":null"#,
            r#""extra":[1]"#,
            r#""extra":{}"#,
        ] {
            let d = format!(r#"{{"v":1,"host":"h","pid":1,"name":"n","ts":1,{other}}}"#);
            assert!(
                matches!(HolderIdentity::parse(d.as_bytes()), HolderIdentity::Unknown(_)),
                "{d}"
            );
        }
        // An `addr` that is not a string reads as none, as before.
        let d = br#"{"v":1,"host":"h","addr":5,"pid":1,"name":"n","ts":1}"#;
        assert!(matches!(HolderIdentity::parse(d), HolderIdentity::Process(p) if p.addr.is_empty()));
        // Escapes are decoded: `\/`, `\b`, `\f`, `\u` (a surrogate pair too).
        let d = br#"{"v":1,"host":"a\/b","pid":1,"name":"\b\f\u00e9\ud83d\ude00","ts":1}"#;
        match HolderIdentity::parse(d) {
            HolderIdentity::Process(p) => assert_eq!((p.host.as_str(), p.name.as_str()), ("a/b", "\u{8}\u{c}é😀")),
            other => panic!("{other:?}"),
        }
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
