//! Compares the embedded server with Apache ZooKeeper on this machine.
//!
//! ```text
//! cargo run --release -p zk-testing --bin zk-server-bench -- [--seconds N] [--backend embedded|apache|both]
//! ```
//!
//! For each backend it prints `key=value` lines: startup time, then
//! create+delete pairs/s and getChildren/s from 1, 4 and 16 sessions. Every
//! session is one raw connection issuing sequential requests, so the figures
//! measure the server, not a client library.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_proto::{CreateMode, CreateRequest, DeleteRequest, OpCode, PathRecord, PathWatchRequest};
use zk_testing::raw::RawConnection;
use zk_testing::{Backend, TestingServer};

fn usage() -> ! {
    eprintln!("usage: zk-server-bench [--seconds N] [--backend embedded|apache|both]");
    std::process::exit(2)
}

fn main() {
    let mut seconds = 3.0f64;
    let mut backends = vec![Backend::Embedded, Backend::Apache];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => seconds = args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
            "--backend" => {
                backends = match args.next().as_deref() {
                    Some("both") => vec![Backend::Embedded, Backend::Apache],
                    Some(b) => vec![Backend::parse(b).unwrap_or_else(|_| usage())],
                    None => usage(),
                }
            }
            "-h" | "--help" => {
                println!("usage: zk-server-bench [--seconds N] [--backend embedded|apache|both]");
                return;
            }
            _ => usage(),
        }
    }
    let run = Duration::from_secs_f64(seconds);
    for backend in backends {
        let name = match backend {
            Backend::Embedded => "embedded",
            Backend::Apache => "apache",
        };
        let t0 = Instant::now();
        let server = match TestingServer::start_backend(backend) {
            Ok(s) => s,
            Err(e) => {
                println!("{name}.error={e}");
                continue;
            }
        };
        // Ready = a session can be established.
        let (mut c, _) = RawConnection::connect(&server.connect_string(), 30_000, None).expect("connect");
        let startup = t0.elapsed();
        println!("{name}.startup_ms={:.1}", startup.as_secs_f64() * 1e3);
        let r = c
            .request(OpCode::Create, &req("/bench", CreateMode::Persistent))
            .expect("create /bench");
        assert_eq!(r.header.err, 0);
        for i in 0..10 {
            c.request(
                OpCode::Create,
                &req(&format!("/bench/child-{i}"), CreateMode::Persistent),
            )
            .unwrap();
        }
        for sessions in [1usize, 4, 16] {
            let rate = measure(&server, sessions, run, Workload::CreateDelete);
            println!("{name}.create_delete_pairs_per_s.sessions_{sessions}={rate:.0}");
            let rate = measure(&server, sessions, run, Workload::GetChildren);
            println!("{name}.get_children_per_s.sessions_{sessions}={rate:.0}");
        }
    }
}

fn req(path: &str, mode: CreateMode) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: vec![],
        acl: zk_proto::Acl::open_unsafe(),
        flags: mode.code(),
    }
}

#[derive(Clone, Copy)]
enum Workload {
    CreateDelete,
    GetChildren,
}

fn measure(server: &TestingServer, sessions: usize, run: Duration, w: Workload) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let start_gate = Arc::new(std::sync::Barrier::new(sessions + 1));
    let threads: Vec<_> = (0..sessions)
        .map(|t| {
            let cs = server.connect_string();
            let (stop, count, gate) = (stop.clone(), count.clone(), start_gate.clone());
            std::thread::spawn(move || {
                let (mut c, _) = RawConnection::connect(&cs, 30_000, None).expect("connect");
                c.request(OpCode::Sync, &PathRecord { path: "/".into() }).unwrap();
                gate.wait();
                let mut n = 0u64;
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    match w {
                        Workload::CreateDelete => {
                            let p = format!("/bench/s{t}-{i}");
                            i += 1;
                            let r = c.request(OpCode::Create, &req(&p, CreateMode::Ephemeral)).unwrap();
                            assert_eq!(r.header.err, 0);
                            let r = c
                                .request(OpCode::Delete, &DeleteRequest { path: p, version: -1 })
                                .unwrap();
                            assert_eq!(r.header.err, 0);
                        }
                        Workload::GetChildren => {
                            let r = c
                                .request(
                                    OpCode::GetChildren,
                                    &PathWatchRequest {
                                        path: "/bench".into(),
                                        watch: false,
                                    },
                                )
                                .unwrap();
                            assert_eq!(r.header.err, 0);
                        }
                    }
                    n += 1;
                }
                count.fetch_add(n, Ordering::Relaxed);
                let _ = c.close_session();
            })
        })
        .collect();
    start_gate.wait();
    let t0 = Instant::now();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    let elapsed = t0.elapsed();
    for t in threads {
        t.join().unwrap();
    }
    count.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64()
}
