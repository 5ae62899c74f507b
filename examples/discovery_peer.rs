//! Our `ServiceDiscovery`, driven line by line from stdin, for the discovery interop proof
//! (`scripts/discovery-interop.sh`): the Rust twin of `scripts/interop/DiscoveryPeer.java`
//! (Curator 5.4's `ServiceDiscovery` with a POJO payload, `InteropDetails`), answering the
//! same commands with the same lines. Not a user example (CI does not run it on its own; the
//! script drives it).
//!
//! ```text
//! discovery_peer CONNECT BASE_PATH
//! ```
//!
//! `SESSION_MS` in the environment is the session timeout (default 10000). Prints `READY`
//! once connected and the discovery started. Then every stdin line is `SEQ COMMAND ARGS...`;
//! the answer is one final line `SEQ OK ...` or `SEQ ERR message`.
//!
//! * `SEQ register NAME ID ADDRESS PORT SSLPORT DESCRIPTION WEIGHT`: registers a DYNAMIC
//!   instance (uriSpec `{scheme}://{address}:{port}`, payload
//!   `{"@class":"InteropDetails","description":...,"weight":...}`), waits (10 s) until it is
//!   registered: `SEQ OK REGISTERED`.
//! * `SEQ update NAME ID PORT`: updates it with that port: `SEQ OK UPDATED`.
//! * `SEQ find NAME ID [PORT]`: waits (10 s) until `query_for_instance(NAME, ID)` is there
//!   (with PORT, when given): `SEQ OK FOUND FIELDS SAME|DIFF`, FIELDS the instance as
//!   `name|id|address|port|sslPort|registrationTimeUTC|serviceType|uri|payloadClass|description|weight|enabled`,
//!   SAME when our writer gives the node's bytes again exactly.
//! * `SEQ gone NAME ID [SECONDS]`: waits (SECONDS, default 10) until it is not there:
//!   `SEQ OK GONE`.
//! * `SEQ names`: `SEQ OK NAMES a,b`; `SEQ ids NAME`: `SEQ OK IDS a,b` (sorted).
//! * `SEQ unregister ID`: `SEQ OK UNREGISTERED`.
//!
//! Exits 0 at the end of stdin (closing the discovery).

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use zk_framework::{CuratorFramework, RetryNTimes};
use zk_recipes::{JsonMode, Payload, ServiceDiscovery, ServiceInstance, ServiceType, UriSpec};

type BoxError = Box<dyn std::error::Error>;

const WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(10);
const PAYLOAD_CLASS: &str = "InteropDetails";

fn out(line: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "null".to_string(), |v| v.to_string())
}

/// The instance's fields as the Java peer prints them.
fn fields(i: &ServiceInstance) -> String {
    let (class, description, weight) = match i.payload() {
        None => ("null".to_string(), "null".to_string(), "null".to_string()),
        Some(p) => {
            let v = p.value();
            (
                opt(p.class()),
                opt(v.get("description").and_then(|d| d.as_str()).map(str::to_string)),
                opt(v.get("weight").and_then(|w| w.as_i64())),
            )
        }
    };
    [
        i.name().to_string(),
        i.id().to_string(),
        opt(i.address()),
        opt(i.port()),
        opt(i.ssl_port()),
        i.registration_time_utc().to_string(),
        opt(i.service_type().map(ServiceType::as_json_name)),
        opt(i.build_uri()),
        class,
        description,
        weight,
        i.enabled().to_string(),
    ]
    .join("|")
}

struct Peer {
    client: CuratorFramework,
    base: String,
    discovery: ServiceDiscovery,
}

impl Peer {
    fn poll<T>(&self, what: &str, f: impl FnMut() -> Result<Option<T>, BoxError>) -> Result<T, BoxError> {
        self.poll_for(WAIT, what, f)
    }

    fn poll_for<T>(
        &self,
        wait: Duration,
        what: &str,
        mut f: impl FnMut() -> Result<Option<T>, BoxError>,
    ) -> Result<T, BoxError> {
        let end = Instant::now() + wait;
        loop {
            if let Some(v) = f()? {
                return Ok(v);
            }
            if Instant::now() > end {
                return Err(format!("{what} not within {wait:?}").into());
            }
            std::thread::sleep(POLL);
        }
    }

    fn run(&mut self, w: &[&str]) -> Result<String, BoxError> {
        let arg = |n: usize| -> Result<&str, BoxError> { w.get(n).copied().ok_or_else(|| "missing argument".into()) };
        match w[1] {
            "register" => {
                let payload = Payload::from_json(&format!(
                    "{{\"@class\":\"{PAYLOAD_CLASS}\",\"description\":\"{}\",\"weight\":{}}}",
                    arg(7)?,
                    arg(8)?.parse::<i32>()?
                ))?;
                let i = ServiceInstance::builder(arg(2)?)
                    .id(arg(3)?)
                    .address(arg(4)?)
                    .port(arg(5)?.parse()?)
                    .ssl_port(arg(6)?.parse()?)
                    .payload(payload)
                    .service_type(ServiceType::Dynamic)
                    .uri_spec(UriSpec::parse("{scheme}://{address}:{port}")?)
                    .build()?;
                self.discovery.register(&i)?;
                if !self.discovery.wait_registered_for(i.id(), WAIT)? {
                    return Err(
                        format!("not registered within 10 s: {:?}", self.discovery.registration(i.id())).into(),
                    );
                }
                Ok("REGISTERED".into())
            }
            "update" => {
                let id = arg(3)?;
                let old = self
                    .discovery
                    .registered()
                    .into_iter()
                    .find(|i| i.id() == id)
                    .ok_or_else(|| format!("not registered here: {id}"))?;
                self.discovery
                    .update(&old.to_builder().port(arg(4)?.parse()?).build()?)?;
                Ok("UPDATED".into())
            }
            "find" => {
                let (name, id) = (arg(2)?, arg(3)?);
                let port: Option<i32> = w.get(4).map(|p| p.parse()).transpose()?;
                let i = self.poll("the instance", || {
                    Ok(self
                        .discovery
                        .query_for_instance(name, id)?
                        .filter(|i| port.is_none() || i.port() == port))
                })?;
                let (raw, _) = self.client.get_data(&format!("{}/{name}/{id}", self.base))?;
                let again = i.to_json(JsonMode::Compatible).into_bytes();
                let same = if raw == again {
                    "SAME".to_string()
                } else {
                    format!(
                        "DIFF raw={} again={}",
                        String::from_utf8_lossy(&raw),
                        String::from_utf8_lossy(&again)
                    )
                };
                Ok(format!("FOUND {} {same}", fields(&i)))
            }
            "gone" => {
                let (name, id) = (arg(2)?, arg(3)?);
                let secs: u64 = w.get(4).map(|s| s.parse()).transpose()?.unwrap_or(10);
                self.poll_for(Duration::from_secs(secs), "its absence", || {
                    Ok(self.discovery.query_for_instance(name, id)?.is_none().then_some(()))
                })?;
                Ok("GONE".into())
            }
            "names" => {
                let n = self.discovery.query_for_names()?;
                Ok(format!("NAMES {}", if n.is_empty() { "-".into() } else { n.join(",") }))
            }
            "ids" => {
                let mut ids = Vec::new();
                for r in self.discovery.query_for_instances(arg(2)?)? {
                    ids.push(r.instance?.id().to_string());
                }
                ids.sort();
                Ok(format!(
                    "IDS {}",
                    if ids.is_empty() { "-".into() } else { ids.join(",") }
                ))
            }
            "unregister" => {
                if !self.discovery.unregister(arg(2)?)? {
                    return Err("not registered here".into());
                }
                Ok("UNREGISTERED".into())
            }
            other => Err(format!("unknown command {other}").into()),
        }
    }
}

fn main() -> Result<(), BoxError> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() != 2 {
        eprintln!("usage: discovery_peer CONNECT BASE_PATH");
        std::process::exit(2);
    }
    let session_ms: u64 = std::env::var("SESSION_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let client = CuratorFramework::builder()
        .connect_string(&a[0])
        .session_timeout(Duration::from_millis(session_ms))
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(RetryNTimes::new(10, Duration::from_millis(100)))
        .build()?;
    client.block_until_connected(Duration::from_secs(30))?;
    let discovery = ServiceDiscovery::builder(&client, &a[1]).build()?;
    discovery.start()?;
    let mut peer = Peer {
        client,
        base: a[1].trim_end_matches('/').to_string(),
        discovery,
    };
    out("READY");
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 2 {
            continue;
        }
        match peer.run(&words) {
            Ok(s) => out(&format!("{} OK {s}", words[0])),
            Err(e) => out(&format!("{} ERR {}", words[0], e.to_string().replace('\n', " "))),
        }
    }
    peer.discovery.close()?;
    peer.client.close();
    Ok(())
}
