//! Our `DistributedAtomicLong`, `GroupMember` and `DistributedDoubleBarrier`, driven line by
//! line from stdin, for the recipes interop proof (`scripts/recipes-interop.sh`, see
//! `docs/recipes-interop.md`): the Rust twin of `scripts/interop/RecipesPeer.java` (Curator
//! 5.4), answering the same commands with the same lines. Not a user example (CI does not run
//! it on its own; the script drives it).
//!
//! ```text
//! recipes_peer CONNECT ROOT ID
//! ```
//!
//! `SESSION_MS` in the environment is the session timeout (default 10000). Prints `READY`
//! once connected. Then every stdin line is `SEQ COMMAND ARGS...`; the answer is one final
//! line `SEQ OK ...` or `SEQ ERR message`, with progress lines `SEQ TAG ...` before it. Times
//! are microseconds since the epoch (this machine's clock, as the Java peer's).
//!
//! * `SEQ atomic N [PAUSE_MS]`: N increments of `ROOT/counter` (`RetryNTimes(10, 10 ms)`, as
//!   the Java peer's; PAUSE_MS, default 0, between two), `SEQ INC true|false|unknown PRE POST TRIES` each (`Outcome::Applied`,
//!   `NotApplied`, `Unknown`; `SEQ INC error MESSAGE` for an error), then
//!   `SEQ OK ATOMIC applied notapplied unknown errors`.
//! * `SEQ read`: `SEQ OK READ VALUE HEX`, the counter's `get()` and its node's bytes.
//! * `SEQ join HEX`: a `GroupMember` ID of `ROOT/group` with payload HEX, started and
//!   registered: `SEQ OK JOINED`.
//! * `SEQ await-member X HEX`: waits (10 s) until the member view holds X with payload HEX:
//!   `SEQ OK SEES VIEW` (VIEW: `id=hex,...` sorted by id).
//! * `SEQ await-gone X`: waits (10 s) until the member view lacks X: `SEQ OK GONE VIEW`.
//! * `SEQ leave`: closes the `GroupMember`: `SEQ OK LEFT`.
//! * `SEQ await-in PATH K`: waits (10 s) until PATH has K member nodes (children but `ready`):
//!   `SEQ OK IN K`.
//! * `SEQ children PATH`: `SEQ OK CHILDREN a,b` (sorted; `-`: none; `no-node`: no PATH).
//! * `SEQ enter PATH`: a `DistributedDoubleBarrier(PATH, 2)`: `SEQ ENTERING T`, enter (20 s),
//!   `SEQ OK ENTERED T`.
//! * `SEQ barrier-leave`: `SEQ LEAVING T`, leave (20 s) of the last entered barrier,
//!   `SEQ OK LEFT-BARRIER T`.
//!
//! Exits 0 at the end of stdin.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_framework::{CuratorFramework, RetryNTimes};
use zk_recipes::GroupMember;
use zk_recipes::{DistributedAtomicLong, DistributedDoubleBarrier, Outcome};

type BoxError = Box<dyn std::error::Error>;

const WAIT: Duration = Duration::from_secs(10);
const BARRIER_WAIT: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(10);

fn out(line: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

fn hex(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".into();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(h: &str) -> Result<Vec<u8>, BoxError> {
    if h == "-" {
        return Ok(Vec::new());
    }
    if h.len() % 2 != 0 {
        return Err(format!("odd hex {h}").into());
    }
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).map_err(|e| e.into()))
        .collect()
}

fn view_of(m: &BTreeMap<String, Vec<u8>>) -> String {
    if m.is_empty() {
        return "-".into();
    }
    m.iter()
        .map(|(k, v)| format!("{k}={}", hex(v)))
        .collect::<Vec<_>>()
        .join(",")
}

struct Peer {
    client: CuratorFramework,
    root: String,
    id: String,
    member: Option<GroupMember>,
    barrier: Option<DistributedDoubleBarrier>,
}

impl Peer {
    fn counter(&self) -> Result<DistributedAtomicLong, BoxError> {
        Ok(DistributedAtomicLong::new(
            &self.client,
            &format!("{}/counter", self.root),
            RetryNTimes::new(10, Duration::from_millis(10)),
        )?)
    }

    fn member(&self) -> Result<&GroupMember, BoxError> {
        self.member.as_ref().ok_or_else(|| "not a group member".into())
    }

    /// Waits (WAIT) until `done` holds for the member view; the view's line, or an error
    /// saying `what`.
    fn await_view(&self, what: &str, done: impl Fn(&BTreeMap<String, Vec<u8>>) -> bool) -> Result<String, BoxError> {
        let m = self.member()?;
        let end = Instant::now() + WAIT;
        loop {
            let v = m.members();
            if done(&v) {
                return Ok(view_of(&v));
            }
            if Instant::now() > end {
                return Err(format!("{what} within {WAIT:?}; view: {}", view_of(&v)).into());
            }
            std::thread::sleep(POLL);
        }
    }

    fn run(&mut self, seq: &str, a: &[&str]) -> Result<String, BoxError> {
        let arg = |i: usize| a.get(i).copied().ok_or_else(|| format!("{} needs argument {i}", a[1]));
        match a[1] {
            "atomic" => {
                let n: usize = arg(2)?.parse()?;
                let pause = Duration::from_millis(a.get(3).map(|p| p.parse()).transpose()?.unwrap_or(0));
                let counter = self.counter()?;
                let (mut applied, mut not_applied, mut unknown, mut errors) = (0, 0, 0, 0);
                for i in 0..n {
                    if i > 0 && !pause.is_zero() {
                        std::thread::sleep(pause);
                    }
                    match counter.increment() {
                        Ok(r) => {
                            let what = match r.outcome() {
                                Outcome::Applied { .. } => {
                                    applied += 1;
                                    "true"
                                }
                                Outcome::NotApplied => {
                                    not_applied += 1;
                                    "false"
                                }
                                // Unknown, or an outcome this peer does not know.
                                _ => {
                                    unknown += 1;
                                    "unknown"
                                }
                            };
                            out(&format!(
                                "{seq} INC {what} {} {} {}",
                                r.pre_value(),
                                r.post_value(),
                                r.stats().optimistic_tries
                            ));
                        }
                        Err(e) => {
                            errors += 1;
                            out(&format!("{seq} INC error {e}"));
                        }
                    }
                }
                Ok(format!("ATOMIC {applied} {not_applied} {unknown} {errors}"))
            }
            "read" => {
                let value = self.counter()?.get()?;
                let (bytes, _) = self.client.get_data(&format!("{}/counter", self.root))?;
                Ok(format!("READ {value} {}", hex(&bytes)))
            }
            "join" => {
                let m = GroupMember::new(&self.client, &format!("{}/group", self.root), &self.id, unhex(arg(2)?)?)?;
                m.start()?;
                if !m.wait_for_registration_for(WAIT)? {
                    return Err(format!("not registered within {WAIT:?}: {:?}", m.registration()).into());
                }
                self.member = Some(m);
                Ok("JOINED".into())
            }
            "await-member" => {
                let (x, h) = (arg(2)?, arg(3)?);
                let want = unhex(h)?;
                let v = self.await_view(&format!("no {x}={h} in the member view"), |v| v.get(x) == Some(&want))?;
                Ok(format!("SEES {v}"))
            }
            "await-gone" => {
                let x = arg(2)?;
                let v = self.await_view(&format!("{x} still in the member view"), |v| !v.contains_key(x))?;
                Ok(format!("GONE {v}"))
            }
            "leave" => {
                let m = self.member.take().ok_or("not a group member")?;
                m.close()?;
                Ok("LEFT".into())
            }
            "await-in" => {
                let (path, k): (&str, usize) = (arg(2)?, arg(3)?.parse()?);
                let end = Instant::now() + WAIT;
                loop {
                    let n = match self.client.get_children(path) {
                        Ok(kids) => kids.iter().filter(|c| *c != "ready").count(),
                        Err(zk_framework::Error::NoNode { .. }) => 0,
                        Err(e) => return Err(e.into()),
                    };
                    if n >= k {
                        return Ok(format!("IN {n}"));
                    }
                    if Instant::now() > end {
                        return Err(format!("{path} has {n} member nodes after {WAIT:?}").into());
                    }
                    std::thread::sleep(POLL);
                }
            }
            "children" => match self.client.get_children(arg(2)?) {
                Ok(mut kids) => {
                    kids.sort();
                    Ok(format!(
                        "CHILDREN {}",
                        if kids.is_empty() { "-".into() } else { kids.join(",") }
                    ))
                }
                Err(zk_framework::Error::NoNode { .. }) => Ok("CHILDREN no-node".into()),
                Err(e) => Err(e.into()),
            },
            "enter" => {
                let b = DistributedDoubleBarrier::new(&self.client, arg(2)?, 2)?;
                out(&format!("{seq} ENTERING {}", now_us()));
                if !b.enter_for(BARRIER_WAIT)? {
                    return Err(format!("enter timed out after {BARRIER_WAIT:?}").into());
                }
                let t = now_us();
                self.barrier = Some(b);
                Ok(format!("ENTERED {t}"))
            }
            "barrier-leave" => {
                let b = self.barrier.take().ok_or("not in a barrier")?;
                out(&format!("{seq} LEAVING {}", now_us()));
                if !b.leave_for(BARRIER_WAIT)? {
                    return Err(format!("leave timed out after {BARRIER_WAIT:?}").into());
                }
                Ok(format!("LEFT-BARRIER {}", now_us()))
            }
            other => Err(format!("unknown command {other}").into()),
        }
    }
}

fn main() -> Result<(), BoxError> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() != 3 {
        eprintln!("usage: recipes_peer CONNECT ROOT ID");
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
    let mut peer = Peer {
        client,
        root: a[1].clone(),
        id: a[2].clone(),
        member: None,
        barrier: None,
    };
    out("READY");
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 2 {
            continue;
        }
        match peer.run(words[0], &words) {
            Ok(s) => out(&format!("{} OK {s}", words[0])),
            Err(e) => out(&format!("{} ERR {}", words[0], e.to_string().replace('\n', " "))),
        }
    }
    if let Some(m) = peer.member.take() {
        m.close()?;
    }
    peer.client.close();
    Ok(())
}
