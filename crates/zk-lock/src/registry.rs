//! The operator's view of what the locks carry: `services` (a service
//! registry in Curator's discovery layout: its names, or one service's
//! instances with their nodes' owners) and `partition` (a set partitioner's
//! members and who holds each item), read with `zk_recipes::inspect_service`,
//! `service_names` and `inspect_partition`; no recipe runs.

use serde_json::{json, Value};
use zk_framework::CuratorFramework;
use zk_recipes::{InstanceNode, JsonMode, LockHolder, PartitionReport, ServiceReport};

use crate::args::{Op, OpOptions};
use crate::exit;
use crate::ops::{connected, failed, human_age, millis, participant_json};

/// `services`/`partition`: something was found (names, instances, members).
pub const FOUND: i32 = 0;
/// `services`/`partition`: nothing was found.
pub const NOTHING: i32 = 1;

/// Runs `services` or `partition` and returns zk-lock's exit status.
pub fn run(opts: &OpOptions) -> i32 {
    connected(opts, |client| match &opts.op {
        Op::Services { name } => services(client, opts, name.as_deref()),
        Op::Partition => partition(client, opts),
        // The lock's subcommands are `ops::run`'s (main dispatches them there).
        _ => exit::USAGE,
    })
}

/// How long ago `created_ms` was (the server's clock against ours).
fn age_of(created_ms: i64) -> std::time::Duration {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    std::time::Duration::from_millis(now.saturating_sub(created_ms).max(0) as u64)
}

/// `services BASE [NAME]`.
pub fn services(client: &CuratorFramework, opts: &OpOptions, name: Option<&str>) -> i32 {
    let base = opts.path.as_str();
    let Some(name) = name else {
        let names = match zk_recipes::service_names(client, base) {
            Ok(n) => n,
            Err(e) => return failed(client, opts, &e),
        };
        if opts.json {
            println!("{}", json!({"base": base, "services": names}));
        } else if names.is_empty() {
            println!("{base}: no services");
        } else {
            println!("{base}: {} service(s)", names.len());
            for n in &names {
                println!("  {n}");
            }
        }
        return if names.is_empty() { NOTHING } else { FOUND };
    };
    let r = match zk_recipes::inspect_service(client, base, name) {
        Ok(r) => r,
        Err(zk_recipes::Error::InvalidInstance { reason, .. }) => {
            eprintln!("zk-lock: invalid service NAME {name:?}: {reason}");
            return exit::USAGE;
        }
        Err(e) => return failed(client, opts, &e),
    };
    if opts.json {
        println!("{}", service_json(&r));
    } else {
        print!("{}", service_text(&r));
    }
    if r.instances.is_empty() {
        NOTHING
    } else {
        FOUND
    }
}

/// The JSON of `services BASE NAME --json` (one object): each instance as
/// Curator's JSON (every field, `enabled` included), or its error.
pub fn service_json(r: &ServiceReport) -> String {
    let instances: Vec<Value> = r.instances.iter().map(instance_json).collect();
    json!({
        "service": r.name,
        "path": r.path,
        "instances": instances,
    })
    .to_string()
}

fn instance_json(n: &InstanceNode) -> Value {
    let (instance, error) = match &n.instance {
        Ok(i) => (
            serde_json::from_str::<Value>(&i.to_json(JsonMode::Full)).unwrap_or(Value::Null),
            Value::Null,
        ),
        Err(e) => (Value::Null, Value::String(e.to_string())),
    };
    json!({
        "node": n.node,
        "path": n.path,
        "session": format!("0x{:x}", n.session_id),
        "session_id": n.session_id,
        "created_ms": n.created_ms,
        "age_ms": millis(age_of(n.created_ms)),
        "czxid": n.czxid,
        "instance": instance,
        "error": error,
    })
}

/// The text of `services BASE NAME`.
pub fn service_text(r: &ServiceReport) -> String {
    let bad = r.unreadable().count();
    let mut out = format!("{}: {} instance(s)", r.path, r.instances.len());
    if bad > 0 {
        out.push_str(&format!(", {bad} unreadable"));
    }
    out.push('\n');
    for n in &r.instances {
        let owner = if n.session_id == 0 {
            "persistent".to_string()
        } else {
            format!("session 0x{:x}", n.session_id)
        };
        let age = human_age(age_of(n.created_ms));
        match &n.instance {
            Ok(i) => {
                let at = i
                    .endpoint()
                    .map(|e| e.to_string())
                    .or_else(|| i.address().map(str::to_string))
                    .unwrap_or_else(|| "-".into());
                let kind = i.service_type().map_or("-", |t| t.as_json_name());
                let enabled = if i.enabled() { "" } else { "  DISABLED" };
                out.push_str(&format!("  {}  {at}  {kind}  {owner}  age {age}{enabled}\n", i.id()));
            }
            Err(e) => out.push_str(&format!("  {}  UNREADABLE ({e})  {owner}  age {age}\n", n.node)),
        }
    }
    out
}

/// `partition PATH`.
pub fn partition(client: &CuratorFramework, opts: &OpOptions) -> i32 {
    let r = match zk_recipes::inspect_partition(client, &opts.path) {
        Ok(r) => r,
        Err(e) => return failed(client, opts, &e),
    };
    if opts.json {
        println!("{}", partition_json(&r));
    } else {
        print!("{}", partition_text(&r));
    }
    if r.members.is_empty() {
        NOTHING
    } else {
        FOUND
    }
}

fn holder_json(h: &LockHolder) -> Value {
    match h {
        LockHolder::Member { identifier, session } => json!({
            "member": identifier,
            "session": format!("0x{session:x}"),
            "session_id": session,
        }),
        LockHolder::NotAMember { session } => json!({
            "member": null,
            "session": format!("0x{session:x}"),
            "session_id": session,
        }),
        _ => json!({"member": null, "session": null, "session_id": null}),
    }
}

/// The JSON of `partition PATH --json` (one object).
pub fn partition_json(r: &PartitionReport) -> String {
    let members: Vec<Value> = r
        .members
        .iter()
        .map(|m| {
            json!({
                "id": m.id,
                "session": format!("0x{:x}", m.session_id),
                "session_id": m.session_id,
                "created_ms": m.created_ms,
            })
        })
        .collect();
    let items: Vec<Value> = r
        .items
        .iter()
        .map(|i| {
            json!({
                "item": i.item,
                "lock_path": i.lock_path,
                "holder": i.holder.as_ref().map_or(Value::Null, holder_json),
                "fencing_token": i.fencing_token(),
                "waiters": i.waiters.iter().map(holder_json).collect::<Vec<_>>(),
                "participants": i.participants.iter().map(participant_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "path": r.path,
        "members": members,
        "items": items,
        "shares": r.shares(),
    })
    .to_string()
}

/// The text of `partition PATH`.
pub fn partition_text(r: &PartitionReport) -> String {
    let held = r.items.iter().filter(|i| i.holder.is_some()).count();
    let mut out = format!(
        "{}: set partitioner, {} member(s), {} item(s) locked, {held} held\n",
        r.path,
        r.members.len(),
        r.items.len()
    );
    let shares = r.shares();
    for m in &r.members {
        let share = shares.get(&m.id).map(|s| s.join(",")).unwrap_or_default();
        out.push_str(&format!(
            "  member {}  session 0x{:x}  age {}  holds [{share}]\n",
            m.id,
            m.session_id,
            human_age(age_of(m.created_ms))
        ));
    }
    for i in &r.items {
        let holder = match &i.holder {
            Some(h) => format!("held by {h}"),
            None => "free".to_string(),
        };
        let token = i
            .fencing_token()
            .map(|t| format!(", fencing token {t}"))
            .unwrap_or_default();
        out.push_str(&format!("  item {}  {holder}{token}", i.item));
        if !i.waiters.is_empty() {
            let w: Vec<String> = i.waiters.iter().map(ToString::to_string).collect();
            out.push_str(&format!(", waiting: {}", w.join("; ")));
        }
        out.push('\n');
    }
    out
}
