//! Our `CuratorCache` following a subtree, and a writer, for the cache interop proof
//! (`scripts/cache-interop.sh`): Curator 5.4's `CuratorCache`
//! (`scripts/interop/CuratorCacheFollower.java`) and ours follow the same subtree while Java,
//! Python and Rust writers change it; `scripts/interop/check_cache.py` compares the two.
//!
//! ```text
//! cache_follower [CONNECT] follow PATH   our cache of PATH, one line per event
//! cache_follower [CONNECT] write         a writer: one command per stdin line
//! cache_follower [CONNECT] proxy CONTROL a fault proxy to CONNECT (for the cut phase)
//! cache_follower                         a short demo of both on an embedded server
//! ```
//!
//! CONNECT defaults to the `ZK_CONNECT` environment variable; `SESSION_MS` (default 10000)
//! is the session timeout.
//!
//! follow: one line per event on stdout, flushed, in the format of the Java follower:
//! `CREATED path czxid mzxid hex`, `CHANGED path czxid mzxid hex` (the new data),
//! `DELETED path czxid mzxid hex` (the data the cache held), `INITIALIZED`, and ours only:
//! `FRESHNESS current|resyncing|stale LAST_ZXID`, `FAILED error`. hex is the data in
//! lower-case hex, `-` when empty. A `dump` line on stdin, and the end of stdin, print the
//! view (`VIEW path czxid mzxid hex` per node, sorted, then `VIEW-END count`); at the end of
//! stdin the cache closes and the process exits 0.
//!
//! write: `ID OP ARGS` per stdin line, answered by `ACK ID ok RESULT` or `ACK ID err MESSAGE`:
//! `create PATH HEX` (parents created, empty), `create_eph PATH HEX`, `create_seq PATH HEX`
//! (RESULT: the path created), `set PATH HEX`, `delete PATH`, `delete_rec PATH`,
//! `recreate PATH HEX` (a delete, then a create), `txn OP ARGS...` (one multi of
//! `create PATH HEX`, `set PATH HEX`, `delete PATH`). Exits 0 at the end of stdin.
//!
//! proxy: prints `PROXY connect-string` (a `zk_testing::proxy::FaultProxy` to CONNECT); while
//! the file CONTROL.cut exists its connections are cut and new ones refused (it prints `CUT`,
//! then `HEALED` when the file is gone); it exits 0 when CONTROL.stop appears.
//!
//! Without arguments it starts an embedded server, follows `/examples/cache_follower` while
//! the writer creates, changes, deletes and re-creates nodes there, prints the lines, checks
//! the view against the server, and exits 0.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use zk_framework::{Acl, CreateMode, CuratorFramework, ExponentialBackoffRetry, Op};
use zk_recipes::{CacheEvent, ChildData, CuratorCache, Freshness};

type BoxError = Box<dyn std::error::Error>;

const USAGE: &str =
    "usage: cache_follower [CONNECT] follow PATH | [CONNECT] write | [CONNECT] proxy CONTROL | (no arguments: a demo)";

fn connect(cs: &str) -> Result<CuratorFramework, BoxError> {
    let session_ms: u64 = std::env::var("SESSION_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let c = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_millis(session_ms))
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 5))
        .build()?;
    c.block_until_connected(Duration::from_secs(30))?;
    Ok(c)
}

fn hex(data: Option<&[u8]>) -> String {
    match data {
        None | Some([]) => "-".to_string(),
        Some(d) => d.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

fn unhex(s: &str) -> Result<Vec<u8>, BoxError> {
    if s == "-" {
        return Ok(Vec::new());
    }
    if s.len() % 2 != 0 {
        return Err(format!("odd hex {s}").into());
    }
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|e| e.into()))
        .collect()
}

fn node(d: &ChildData) -> String {
    format!("{} {} {} {}", d.path(), d.stat().czxid, d.stat().mzxid, hex(d.data()))
}

/// The line of an event (the Java follower's format, plus FRESHNESS and FAILED).
fn event_line(ev: &CacheEvent) -> String {
    match ev {
        CacheEvent::Created(d) => format!("CREATED {}", node(d)),
        CacheEvent::Changed { new, .. } => format!("CHANGED {}", node(new)),
        CacheEvent::Deleted(d) => format!("DELETED {}", node(d)),
        CacheEvent::Initialized => "INITIALIZED".to_string(),
        CacheEvent::Freshness(Freshness::Current) => "FRESHNESS current".to_string(),
        CacheEvent::Freshness(Freshness::Resyncing) => "FRESHNESS resyncing".to_string(),
        CacheEvent::Freshness(Freshness::Stale { last_zxid, .. }) => format!("FRESHNESS stale {last_zxid}"),
        CacheEvent::Failed(e) => format!("FAILED {}", e.to_string().replace('\n', " ")),
        other => format!("OTHER {}", format!("{other:?}").replace('\n', " ")),
    }
}

/// The view: `VIEW ...` lines sorted by path, then `VIEW-END count`.
fn view_lines(cache: &CuratorCache) -> String {
    let view: BTreeMap<String, String> = cache
        .snapshot()
        .iter()
        .map(|d| (d.path().to_string(), node(d)))
        .collect();
    let mut s = String::new();
    for n in view.values() {
        s.push_str(&format!("VIEW {n}\n"));
    }
    s.push_str(&format!("VIEW-END {}", view.len()));
    s
}

/// One line to stdout, flushed.
fn emit(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{s}");
    let _ = out.flush();
}

/// A writer command (`ID` removed): what it did, or why not.
fn apply(c: &CuratorFramework, a: &[&str]) -> Result<String, BoxError> {
    let arg = |i: usize| a.get(i).copied().ok_or_else(|| format!("{}: too few arguments", a[0]));
    match a[0] {
        "create" => Ok(c
            .create()
            .creating_parents_if_needed()
            .with_data(unhex(arg(2)?)?)
            .for_path(arg(1)?)?),
        "create_eph" => Ok(c
            .create()
            .creating_parents_if_needed()
            .with_mode(CreateMode::Ephemeral)
            .with_data(unhex(arg(2)?)?)
            .for_path(arg(1)?)?),
        "create_seq" => Ok(c
            .create()
            .creating_parents_if_needed()
            .with_mode(CreateMode::PersistentSequential)
            .with_data(unhex(arg(2)?)?)
            .for_path(arg(1)?)?),
        "set" => {
            c.set_data(arg(1)?, unhex(arg(2)?)?, None)?;
            Ok(arg(1)?.to_string())
        }
        "delete" => {
            c.delete().for_path(arg(1)?)?;
            Ok(arg(1)?.to_string())
        }
        "delete_rec" => {
            c.delete().deleting_children_if_needed().for_path(arg(1)?)?;
            Ok(arg(1)?.to_string())
        }
        "recreate" => {
            c.delete().for_path(arg(1)?)?;
            Ok(c.create().with_data(unhex(arg(2)?)?).for_path(arg(1)?)?)
        }
        "txn" => {
            let mut ops = Vec::new();
            let mut i = 1;
            while i < a.len() {
                match a[i] {
                    "create" => {
                        ops.push(Op::create(
                            arg(i + 1)?,
                            unhex(arg(i + 2)?)?,
                            Acl::open_unsafe(),
                            CreateMode::Persistent,
                        ));
                        i += 3;
                    }
                    "set" => {
                        ops.push(Op::set_data(arg(i + 1)?, unhex(arg(i + 2)?)?, None));
                        i += 3;
                    }
                    "delete" => {
                        ops.push(Op::delete(arg(i + 1)?, None));
                        i += 2;
                    }
                    other => return Err(format!("txn: unknown op {other}").into()),
                }
            }
            c.multi_results(ops)?;
            Ok("-".to_string())
        }
        other => Err(format!("unknown op {other}").into()),
    }
}

/// Follows `path`, printing every event, until the end of stdin.
fn follow(cs: &str, path: &str) -> Result<(), BoxError> {
    let client = connect(cs)?;
    let cache = CuratorCache::builder(&client, path).build()?;
    let events = cache.events();
    // (Detached: the process ends after the last dump whatever the channel does.)
    std::thread::spawn(move || {
        for ev in events.iter() {
            emit(&event_line(&ev));
        }
    });
    cache.start()?;
    for line in std::io::stdin().lock().lines() {
        if line?.trim() == "dump" {
            emit(&view_lines(&cache));
        }
    }
    emit(&view_lines(&cache));
    cache.close();
    client.close();
    Ok(())
}

/// Applies stdin's commands until its end.
fn write(cs: &str) -> Result<(), BoxError> {
    let client = connect(cs)?;
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let a: Vec<&str> = line.split_whitespace().collect();
        if a.len() < 2 {
            continue;
        }
        match apply(&client, &a[1..]) {
            Ok(res) => emit(&format!("ACK {} ok {res}", a[0])),
            Err(e) => emit(&format!("ACK {} err {}", a[0], e.to_string().replace('\n', " "))),
        }
    }
    client.close();
    Ok(())
}

/// A fault proxy to `cs`, cut while `CONTROL.cut` exists, until `CONTROL.stop` appears.
fn proxy(cs: &str, control: &str) -> Result<(), BoxError> {
    let proxy = zk_testing::proxy::FaultProxy::start(cs)?;
    emit(&format!("PROXY {}", proxy.connect_string()));
    let (cut_file, stop_file) = (format!("{control}.cut"), format!("{control}.stop"));
    let mut cut = false;
    while !std::path::Path::new(&stop_file).exists() {
        let want = std::path::Path::new(&cut_file).exists();
        if want && !cut {
            proxy.refuse(true);
            proxy.cut();
            emit("CUT");
        } else if !want && cut {
            proxy.refuse(false);
            emit("HEALED");
        }
        cut = want;
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// The server's subtree as `VIEW` lines (the same format as [`view_lines`]).
fn server_lines(c: &CuratorFramework, root: &str) -> Result<String, BoxError> {
    let mut view = BTreeMap::new();
    let mut todo = vec![root.to_string()];
    while let Some(p) = todo.pop() {
        let (data, st) = c.get_data(&p)?;
        view.insert(p.clone(), format!("{p} {} {} {}", st.czxid, st.mzxid, hex(Some(&data))));
        for k in c.get_children(&p)? {
            todo.push(format!("{p}/{k}"));
        }
    }
    let mut s: String = view.values().map(|n| format!("VIEW {n}\n")).collect();
    s.push_str(&format!("VIEW-END {}", view.len()));
    Ok(s)
}

/// Without arguments: the follower and the writer in one process, on an embedded server.
fn demo() -> Result<(), BoxError> {
    const ROOT: &str = "/examples/cache_follower";
    let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    let writer = connect(&server.connect_string())?;
    let reader = connect(&server.connect_string())?;
    writer
        .create()
        .creating_parents_if_needed()
        .with_data(b"v0".to_vec())
        .for_path(&format!("{ROOT}/cfg"))?;
    let cache = CuratorCache::builder(&reader, ROOT).build()?;
    let events = cache.events();
    cache.start()?;
    // Each step and the node events it must give (kind and path).
    let steps: [(&str, &[(&str, &str)]); 5] = [
        (
            "create /examples/cache_follower/svc/a 31",
            &[("CREATED", "/svc"), ("CREATED", "/svc/a")],
        ),
        ("set /examples/cache_follower/cfg 7631", &[("CHANGED", "/cfg")]),
        (
            "recreate /examples/cache_follower/svc/a 32",
            &[("DELETED", "/svc/a"), ("CREATED", "/svc/a")],
        ),
        (
            "txn create /examples/cache_follower/t 74 set /examples/cache_follower/cfg 7632",
            &[("CREATED", "/t"), ("CHANGED", "/cfg")],
        ),
        (
            "delete_rec /examples/cache_follower/svc",
            &[("DELETED", "/svc/a"), ("DELETED", "/svc")],
        ),
    ];
    let end = Instant::now() + Duration::from_secs(10);
    let next_line = || -> Result<String, BoxError> {
        let ev = events
            .recv_deadline(end)
            .map_err(|e| format!("waiting for an event: {e}"))?;
        let l = event_line(&ev);
        println!("  {l}");
        Ok(l)
    };
    while next_line()? != "INITIALIZED" {}
    for (cmd, want) in steps {
        println!("{cmd}");
        let a: Vec<&str> = cmd.split_whitespace().collect();
        apply(&writer, &a)?;
        for (kind, path) in want {
            let mut l = next_line()?;
            while l.starts_with("FRESHNESS") {
                l = next_line()?;
            }
            let got: Vec<&str> = l.split(' ').take(2).collect();
            if got != [*kind, &format!("{ROOT}{path}")[..]] {
                return Err(format!("{cmd}: expected {kind} {ROOT}{path}, got {l}").into());
            }
        }
    }
    let (ours, theirs) = (view_lines(&cache), server_lines(&writer, ROOT)?);
    println!("{ours}");
    if ours != theirs {
        return Err(format!("the view is not the server's:\n{theirs}").into());
    }
    cache.close();
    println!("the cache's events and view match the server");
    Ok(())
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let env = std::env::var("ZK_CONNECT").ok();
    let (cs, rest) = match a.first().map(String::as_str) {
        None => {
            if let Err(e) = demo() {
                eprintln!("demo: {e}");
                std::process::exit(1);
            }
            return;
        }
        Some("follow" | "write" | "proxy") => (env, &a[..]),
        Some(_) => (Some(a[0].clone()), &a[1..]),
    };
    let Some(cs) = cs else {
        eprintln!("{USAGE} (no CONNECT and no ZK_CONNECT)");
        std::process::exit(2);
    };
    let r = match rest.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["follow", path] => follow(&cs, path),
        ["write"] => write(&cs),
        ["proxy", control] => proxy(&cs, control),
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("cache_follower: {e}");
        std::process::exit(1);
    }
}
