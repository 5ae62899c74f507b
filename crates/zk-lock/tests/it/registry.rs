//! `zk-lock services` (a service registry in Curator's discovery layout: its
//! names, a service's instances with every field and their nodes' owners,
//! an unreadable instance shown with why) and `zk-lock partition` (a set
//! partitioner's members and each item's holder, a session outside the party
//! named as such), in text and `--json`, with their exit statuses.

use std::time::Duration;

use serde_json::Value;
use zk_recipes::{InterProcessMutex, JsonMode, ServiceDiscovery, ServiceInstance, SetPartitioner};
use zk_testing::{wait_until, TestingServer};

use crate::support::*;

fn parse(out: &str) -> Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"))
}

#[test]
fn services_lists_names_and_a_services_instances_with_their_owners() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let (c, admin) = (client(&server), client(&server));
    let base = "/reg/services";

    let (code, out, err) = run_out(Some(&cs), &["services", base]);
    assert_eq!((code, out.trim()), (1, "/reg/services: no services"), "{err}");
    let (code, out, _) = run_out(Some(&cs), &["services", base, "api", "--json"]);
    assert_eq!(code, 1);
    assert_eq!(parse(&out)["instances"], Value::Array(vec![]));

    // Full JSON: `enabled: false` is written (Curator's default mode drops it).
    let d = ServiceDiscovery::builder(&c, base)
        .json_mode(JsonMode::Full)
        .build()
        .unwrap();
    d.start().unwrap();
    let i = ServiceInstance::builder("api")
        .id("a1")
        .address("10.0.0.5")
        .port(8080)
        .enabled(false)
        .build()
        .unwrap();
    d.register(&i).unwrap();
    assert!(d.wait_registered_for("a1", timing().wait()).unwrap());
    admin
        .create()
        .with_data(b"not json".to_vec())
        .for_path(&format!("{base}/api/broken"))
        .unwrap();

    let (code, out, err) = run_out(Some(&cs), &["services", base]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "/reg/services: 1 service(s)\n  api\n");
    let (code, out, _) = run_out(Some(&cs), &["services", "--json", base]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), r#"{"base":"/reg/services","services":["api"]}"#);

    // Text: one line per child, the unreadable one with why.
    let (code, out, err) = run_out(Some(&cs), &["services", base, "api"]);
    assert_eq!(code, 0, "{err}");
    println!("{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "/reg/services/api: 2 instance(s), 1 unreadable");
    assert!(lines[1].starts_with("  a1  http://10.0.0.5:8080  DYNAMIC  "), "{out}");
    assert!(lines[1].contains(&format!("session 0x{:x}", c.session_id())), "{out}");
    assert!(lines[1].ends_with("DISABLED"), "{out}");
    assert!(
        lines[2].starts_with("  broken  UNREADABLE (service instance JSON of /reg/services/api/broken"),
        "{out}"
    );
    assert!(lines[2].contains("persistent"), "{out}");

    // JSON: every field of the instance, as Curator's JSON with `enabled`.
    let (code, out, _) = run_out(Some(&cs), &["services", base, "api", "--json"]);
    assert_eq!(code, 0);
    let v = parse(&out);
    assert_eq!(v["service"], "api");
    assert_eq!(v["path"], "/reg/services/api");
    let a1 = &v["instances"][0];
    assert_eq!(a1["node"], "a1");
    assert_eq!(a1["session_id"], c.session_id());
    assert_eq!(a1["session"], format!("0x{:x}", c.session_id()));
    assert_eq!(
        a1["czxid"],
        admin.check_exists("/reg/services/api/a1").unwrap().unwrap().czxid
    );
    assert_eq!(a1["error"], Value::Null);
    assert_eq!(a1["instance"], parse(&i.to_json(JsonMode::Full)));
    assert_eq!(a1["instance"]["enabled"], false);
    let broken = &v["instances"][1];
    assert_eq!(broken["instance"], Value::Null);
    assert!(
        broken["error"].as_str().unwrap().contains("/reg/services/api/broken"),
        "{broken}"
    );
    assert_eq!(broken["session_id"], 0);

    // Bad input: a usage error before anything is read.
    let (code, _, err) = run_out(Some(&cs), &["services", "relative"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("BASE"), "{err}");
    let (code, _, err) = run_out(Some(&cs), &["services", base, "a//b"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("invalid service NAME"), "{err}");
    let (code, out, _) = run_out(None, &["services", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("EXIT STATUS"), "{out}");
    d.close().unwrap();
}

#[test]
fn partition_shows_members_and_each_items_holder() {
    let server = TestingServer::start().unwrap();
    let cs = server.connect_string();
    let (c, outsider) = (client(&server), client(&server));
    let path = "/reg/part";

    let (code, out, err) = run_out(Some(&cs), &["partition", path]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        out.trim(),
        "/reg/part: set partitioner, 0 member(s), 0 item(s) locked, 0 held"
    );

    // "y" is held by a process outside the party: the member waits for it.
    let foreign = InterProcessMutex::new(&outsider, "/reg/part/locks/y").unwrap();
    let g = foreign.acquire().unwrap();
    let p = SetPartitioner::builder(&c, path, ["x", "y"])
        .identifier("w1")
        .time_boundary(timing().scale(Duration::from_millis(300)))
        .build()
        .unwrap();
    p.start().unwrap();
    let mut last = Value::Null;
    assert!(
        wait_until(timing().wait() * 2, || {
            let (_, out, _) = run_out(Some(&cs), &["partition", path, "--json"]);
            last = parse(&out);
            last["items"].as_array().is_some_and(|items| {
                items.len() == 2 && items[0]["holder"]["member"] == "w1" && items[1]["waiters"][0]["member"] == "w1"
            })
        }),
        "{last}"
    );
    let v = last;
    assert_eq!(v["path"], path);
    assert_eq!(v["members"][0]["id"], "w1");
    assert_eq!(v["members"][0]["session_id"], c.session_id());
    assert_eq!(v["items"][0]["item"], "x");
    assert_eq!(v["items"][0]["lock_path"], "/reg/part/locks/x");
    let y = &v["items"][1];
    assert_eq!(y["holder"]["member"], Value::Null);
    assert_eq!(y["holder"]["session_id"], outsider.session_id());
    assert_eq!(y["fencing_token"], g.fencing_token());
    assert_eq!(y["participants"].as_array().unwrap().len(), 2);
    assert_eq!(v["shares"]["w1"], serde_json::json!(["x"]));

    let (code, out, err) = run_out(Some(&cs), &["partition", path]);
    assert_eq!(code, 0, "{err}");
    println!("{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "/reg/part: set partitioner, 1 member(s), 2 item(s) locked, 2 held"
    );
    assert!(lines[1].starts_with("  member w1  session 0x"), "{out}");
    assert!(lines[1].ends_with("holds [x]"), "{out}");
    assert!(lines[2].starts_with("  item x  held by member \"w1\""), "{out}");
    assert!(
        lines[3].starts_with(&format!(
            "  item y  held by session 0x{:x}, not a member of the party",
            outsider.session_id()
        )),
        "{out}"
    );
    assert!(
        lines[3].contains(&format!("waiting: member \"w1\" (session 0x{:x})", c.session_id())),
        "{out}"
    );

    let (code, _, err) = run_out(Some(&cs), &["partition", "/"]);
    assert_eq!(code, 64, "{err}");
    p.close().unwrap();
    g.release().unwrap();
}
