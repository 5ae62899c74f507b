//! The operator's subcommands: `status` (who holds a lock and who waits),
//! `break` (delete the holder's node) and `wait` (until the lock is free,
//! without queueing); `services` and `partition` are `registry`'s, on
//! [`connected`]. They read the lock the way the locks judge it
//! (`zk_recipes::inspect`), for mutex, read/write and semaphore layouts,
//! Curator's included.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zk_framework::proto::path::{basename, join};
use zk_framework::CuratorFramework;
use zk_recipes::HolderIdentity;
use zk_recipes::{LockLayout, LockReport, Participant, ParticipantKind};

use crate::args::human;
use crate::args::{Op, OpOptions};
use crate::client::{build_client, start_embedded};
use crate::exit;
use crate::failure;

/// `status`: the lock is held.
pub const STATUS_HELD: i32 = 0;
/// `status`: the lock is free.
pub const STATUS_FREE: i32 = 1;
/// `break`: nothing was deleted (the lock is free, or `--node` names no
/// participant, or the node was already gone).
pub const NOTHING_BROKEN: i32 = 1;

/// Runs a subcommand and returns zk-lock's exit status.
pub fn run(opts: &OpOptions) -> i32 {
    connected(opts, |client| match &opts.op {
        Op::Status { group: true, .. } => group_status(client, opts),
        Op::Status { counter: true, .. } => counter_status(client, opts),
        Op::Status { leases, .. } => status(client, opts, *leases),
        Op::Break { node } => break_lock(client, opts, node.as_deref()),
        Op::Wait {
            timeout,
            timeout_exit_code,
        } => wait(client, opts, *timeout, *timeout_exit_code),
        // Run by `registry::run` (main dispatches them there).
        Op::Services { .. } | Op::Partition => exit::USAGE,
    })
}

/// Connects as `opts` say (the embedded server of `--embedded` started
/// first), runs `f` on the connected client, closes the client and returns
/// `f`'s exit status, or the failure's when the connection fails.
pub(crate) fn connected(opts: &OpOptions, f: impl FnOnce(&CuratorFramework) -> i32) -> i32 {
    let (_server, connect) = match start_embedded(&opts.conn) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let client = match build_client(&opts.conn, &connect, &opts.path) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let code = if let Err(e) = client.block_until_connected(opts.conn.connect_timeout) {
        failure::not_connected(&e, &connect, &opts.conn)
    } else {
        log::info!("connected to {connect} (session 0x{:x})", client.session_id());
        f(&client)
    };
    client.close();
    code
}

fn report(client: &CuratorFramework, path: &str, leases: Option<u32>) -> zk_recipes::Result<LockReport> {
    match leases {
        Some(n) => zk_recipes::inspect_lock_as(client, path, LockLayout::Semaphore { max_leases: Some(n) }),
        None => zk_recipes::inspect_lock(client, path),
    }
}

/// Reports an error reading the lock: 77 for a refusal, 69 otherwise (the
/// mapping of every mode, [`failure::report`]).
pub(crate) fn failed(client: &CuratorFramework, opts: &OpOptions, e: &zk_recipes::Error) -> i32 {
    let path = opts.path.as_str();
    failure::report(
        client,
        &opts.conn,
        path,
        failure::Doing::Reading,
        &format!("cannot read the lock at {path}"),
        e,
    )
}

fn status(client: &CuratorFramework, opts: &OpOptions, leases: Option<u32>) -> i32 {
    let r = match report(client, &opts.path, leases) {
        Ok(r) => r,
        Err(e) => return failed(client, opts, &e),
    };
    if opts.json {
        println!("{}", report_json(&r));
    } else {
        print!("{}", report_table(&r));
    }
    if r.is_held() {
        STATUS_HELD
    } else {
        STATUS_FREE
    }
}

/// `status --group`: the members of a group, by id.
fn group_status(client: &CuratorFramework, opts: &OpOptions) -> i32 {
    let members = match zk_recipes::group_members(client, &opts.path) {
        Ok(m) => m,
        Err(e) => return failed(client, opts, &e),
    };
    if opts.json {
        let items: Vec<Value> = members
            .iter()
            .map(|m| {
                json!({
                    "id": m.id,
                    "data": String::from_utf8_lossy(&m.data),
                    "session": format!("0x{:x}", m.session_id),
                    "session_id": m.session_id,
                    "created_ms": m.created_ms,
                })
            })
            .collect();
        println!("{}", json!({"path": opts.path, "members": items}));
    } else {
        println!("{}: group of {} member(s)", opts.path, members.len());
        for m in &members {
            println!(
                "  {}  {}  session 0x{:x}",
                m.id,
                String::from_utf8_lossy(&m.data),
                m.session_id
            );
        }
    }
    if members.is_empty() {
        STATUS_FREE
    } else {
        STATUS_HELD
    }
}

/// `status --counter`: a counter's value, as a long and as an int.
fn counter_status(client: &CuratorFramework, opts: &OpOptions) -> i32 {
    let c = match zk_recipes::read_counter(client, &opts.path) {
        Ok(c) => c,
        Err(e) => return failed(client, opts, &e),
    };
    if opts.json {
        println!(
            "{}",
            json!({
                "path": opts.path,
                "exists": c.version.is_some(),
                "long": c.long,
                "int": c.int,
                "bytes": c.bytes.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                "version": c.version,
                "modified_ms": c.modified_ms,
            })
        );
    } else if c.version.is_none() {
        println!("{}: no counter node (reads as 0)", opts.path);
    } else {
        let show = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        println!(
            "{}: long {}, int {}, {} byte(s), version {}",
            opts.path,
            show(c.long.map(|v| v.to_string())),
            show(c.int.map(|v| v.to_string())),
            c.bytes.len(),
            show(c.version.map(|v| v.to_string()))
        );
    }
    if c.version.is_some() {
        STATUS_HELD
    } else {
        STATUS_FREE
    }
}

fn break_lock(client: &CuratorFramework, opts: &OpOptions, node: Option<&str>) -> i32 {
    let path = opts.path.as_str();
    let r = match report(client, path, None) {
        Ok(r) => r,
        Err(e) => return failed(client, opts, &e),
    };
    let targets: Vec<&Participant> = match node {
        Some(n) => match r.participants.iter().find(|p| p.node == n || basename(&p.node) == n) {
            Some(p) => vec![p],
            None => {
                eprintln!("zk-lock: no node {n:?} among the participants of {path} (see zk-lock status {path})");
                return NOTHING_BROKEN;
            }
        },
        None => {
            let holders: Vec<&Participant> = r.holders().collect();
            match holders[..] {
                [] => {
                    eprintln!("zk-lock: nothing to break: {path} is free");
                    return NOTHING_BROKEN;
                }
                [h] => {
                    let mut t = vec![h];
                    // Our one-lease semaphore holder keeps the internal mutex
                    // while it holds the lease: break both, or the next
                    // contender still waits for that mutex.
                    if h.kind == ParticipantKind::Lease {
                        t.extend(r.participants.iter().find(|p| {
                            p.kind == ParticipantKind::LeaseQueue && p.position == 0 && p.session_id == h.session_id
                        }));
                    }
                    t
                }
                _ => {
                    eprintln!(
                        "zk-lock: {path} has {} holders; choose one with --node NAME (zk-lock status {path} lists them)",
                        holders.len()
                    );
                    return exit::USAGE;
                }
            }
        }
    };
    let mut deleted = Vec::new();
    // Several nodes (a lease and its internal-mutex node) go in one
    // transaction: the holder, told at the first deletion, cannot race us.
    if targets.len() > 1 {
        let ops = targets
            .iter()
            .map(|p| zk_framework::Op::delete(client.recipe().fix_path(&p.node), None))
            .collect();
        if client.zookeeper_client().multi(ops).is_ok() {
            deleted.extend(targets.iter().copied());
        }
    }
    let left: Vec<&Participant> = if deleted.is_empty() { targets } else { Vec::new() };
    for p in left {
        match client.delete().for_path(&p.node) {
            Ok(()) => deleted.push(p),
            Err(zk_framework::Error::NoNode { .. }) => {
                eprintln!("zk-lock: {} is already gone", p.node);
            }
            Err(e) => {
                return failure::report_zk(
                    client,
                    &opts.conn,
                    path,
                    failure::Doing::Deleting,
                    &format!("cannot delete {}", p.node),
                    &e,
                );
            }
        }
    }
    if opts.json {
        let items: Vec<Value> = deleted.iter().map(|p| participant_json(p)).collect();
        println!("{}", json!({"path": path, "deleted": items}));
    } else {
        for p in &deleted {
            println!(
                "deleted {} ({}, {}, held by {}, session 0x{:x}, fencing token {}, age {})",
                p.node,
                p.kind.name(),
                if p.holds { "holding" } else { "waiting" },
                p.identity,
                p.session_id,
                p.fencing_token,
                human_age(p.age())
            );
        }
    }
    if deleted.is_empty() {
        NOTHING_BROKEN
    } else {
        exit::OK
    }
}

fn wait(client: &CuratorFramework, opts: &OpOptions, timeout: Option<Duration>, timeout_code: i32) -> i32 {
    let path = opts.path.as_str();
    let started = Instant::now();
    let deadline = timeout.and_then(|t| started.checked_add(t));
    // Any connection-state change wakes the wait: watches may have been lost.
    let (state_tx, states) = crossbeam_channel::bounded::<()>(1);
    let _listener = client.add_listener(move |_| {
        let _ = state_tx.try_send(());
    });
    loop {
        let layout = match zk_recipes::detect_lock_layout(client, path) {
            Ok(l) => l,
            Err(e) => return failed(client, opts, &e),
        };
        // A release deletes a node of the lock's queue (a semaphore's lease):
        // watch that listing, then look, so that no release is missed.
        let watched = match layout {
            LockLayout::Semaphore { .. } => join(path, "leases"),
            _ => path.to_string(),
        };
        let (tx, rx) = crossbeam_channel::bounded::<()>(1);
        match client.get_children_w(&watched, move |_| {
            let _ = tx.try_send(());
        }) {
            Ok(_) | Err(zk_framework::Error::NoNode { .. }) => {}
            Err(e) => return failed(client, opts, &zk_recipes::Error::ZooKeeper(e)),
        }
        let r = match zk_recipes::lock_participants(client, path, layout) {
            Ok(p) => p,
            Err(e) => return failed(client, opts, &e),
        };
        let holders = r.iter().filter(|p| p.holds).count();
        if holders == 0 {
            let waited = started.elapsed();
            if opts.json {
                println!("{}", json!({"path": path, "free": true, "waited_ms": millis(waited)}));
            } else {
                println!("{path} is free (waited {})", human(waited));
            }
            return exit::OK;
        }
        log::info!("{path} has {holders} holder(s); waiting");
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left == Some(Duration::ZERO) {
            if opts.json {
                println!(
                    "{}",
                    json!({"path": path, "free": false, "waited_ms": millis(started.elapsed())})
                );
            } else {
                eprintln!(
                    "zk-lock: {path} is still held after {}",
                    human(timeout.unwrap_or_default())
                );
            }
            return timeout_code;
        }
        crossbeam_channel::select! {
            recv(rx) -> _ => {}
            recv(states) -> _ => {}
            default(left.unwrap_or(Duration::from_secs(60))) => {}
        }
    }
}

// ---- output ---------------------------------------------------------------------------------------

/// `850ms`, `12.3s`, `4m05s`, `2h03m`.
pub(crate) fn human_age(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, (ms / 60_000) % 60)
    }
}

/// The human table `status` prints.
pub fn report_table(r: &LockReport) -> String {
    let holders = r.holders().count();
    let waiting = r.participants.len() - holders;
    let mut out = String::new();
    if r.participants.is_empty() {
        out.push_str(&format!("{}: free (no lock node)\n", r.path));
        return out;
    }
    let election = r.layout == LockLayout::LeaderLatch;
    if election {
        let leader = r
            .holders()
            .next()
            .map_or("nobody".to_string(), |p| p.identity.to_string());
        out.push_str(&format!(
            "{}: leader latch election, led by {leader}, {waiting} queued\n",
            r.path
        ));
    } else {
        let state = if holders == 0 {
            "free".to_string()
        } else {
            format!("held by {holders}")
        };
        out.push_str(&format!(
            "{}: {} lock, {state}, {waiting} waiting\n",
            r.path,
            r.layout.name()
        ));
    }
    if let LockLayout::Semaphore { max_leases: None } = r.layout {
        out.push_str("(number of leases unknown: every lease counts as holding; --semaphore N tells)\n");
    }
    let header = ["POS", "STATE", "KIND", "AGE", "TOKEN", "SESSION", "HOLDER", "NODE"];
    let rows: Vec<[String; 8]> = r
        .participants
        .iter()
        .map(|p| {
            [
                p.position.to_string(),
                match (p.holds, election) {
                    (true, true) => "leads",
                    (false, true) => "queued",
                    (true, false) => "holds",
                    (false, false) => "waits",
                }
                .to_string(),
                p.kind.name().to_string(),
                human_age(p.age()),
                p.fencing_token.to_string(),
                format!("0x{:x}", p.session_id),
                p.identity.to_string(),
                basename(&p.node).to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<w$}  "));
            }
        }
        l.trim_end().to_string() + "\n"
    };
    out.push_str(&line(header.to_vec()));
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// Milliseconds as a JSON number (`Duration::as_millis` is a `u128`).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The JSON `status --json` prints (one object). The keys keep their order
/// here (serde_json's `preserve_order` feature, see Cargo.toml).
pub fn report_json(r: &LockReport) -> String {
    let items: Vec<Value> = r.participants.iter().map(participant_json).collect();
    json!({
        "path": r.path,
        "layout": r.layout.name(),
        "held": r.is_held(),
        "holders": r.holders().count(),
        "participants": items,
    })
    .to_string()
}

pub(crate) fn participant_json(p: &Participant) -> Value {
    json!({
        "node": p.node,
        "name": basename(&p.node),
        "kind": p.kind.name(),
        "position": p.position,
        "holds": p.holds,
        "session": format!("0x{:x}", p.session_id),
        "session_id": p.session_id,
        "fencing_token": p.fencing_token,
        "created_ms": p.created_ms,
        "age_ms": millis(p.age()),
        "holder": holder_json(&p.identity),
    })
}

fn holder_json(identity: &HolderIdentity) -> Value {
    match identity {
        HolderIdentity::Process(id) => json!({
            "type": "process",
            "host": id.host,
            "addr": id.addr,
            "pid": id.pid,
            "name": id.name,
            "ts": id.created_ms,
        }),
        HolderIdentity::Address(a) => json!({"type": "address", "addr": a}),
        HolderIdentity::Unknown(d) => json!({"type": "unknown", "data": String::from_utf8_lossy(d)}),
        _ => json!({"type": "unknown"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_well() {
        assert_eq!(human_age(Duration::from_millis(850)), "850ms");
        assert_eq!(human_age(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(human_age(Duration::from_secs(245)), "4m05s");
        assert_eq!(human_age(Duration::from_secs(7380)), "2h03m");
    }

    #[test]
    fn json_strings_are_escaped() {
        let holder = holder_json(&HolderIdentity::Unknown(b"a\"b\\c\nd\x01".to_vec())).to_string();
        assert_eq!(holder, r#"{"type":"unknown","data":"a\"b\\c\nd\u0001"}"#);
        let data = holder
            .strip_prefix(r#"{"type":"unknown","data":"#)
            .unwrap()
            .strip_suffix('}')
            .unwrap();
        assert_eq!(data, "\"a\\\"b\\\\c\\nd\\u0001\"");
    }

    #[test]
    fn holders_keep_their_key_order() {
        let id = HolderIdentity::parse(br#"{"v":1,"host":"h1","addr":"10.0.0.5","pid":42,"name":"w","ts":7}"#);
        assert_eq!(
            holder_json(&id).to_string(),
            r#"{"type":"process","host":"h1","addr":"10.0.0.5","pid":42,"name":"w","ts":7}"#
        );
        assert_eq!(
            holder_json(&HolderIdentity::parse(b"10.0.0.7")).to_string(),
            r#"{"type":"address","addr":"10.0.0.7"}"#
        );
    }
}
