//! The demo: many threads contend for two keys, each holding its lock for a few
//! hundred milliseconds. It prints a timeline and checks that no two holders of
//! one key ever overlapped.
//!
//! ```text
//! cargo run --example demo                      # on an embedded ZooKeeper, nothing to install
//! ZK_CONNECT=127.0.0.1:2181 cargo run --example demo   # on a real server
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use zk_framework::{CuratorFramework, ExponentialBackoffRetry};
use zk_recipes::InterProcessMutex;
use zk_testing::TestingServer;

const KEYS: [&str; 2] = ["/demo/locks/key-a", "/demo/locks/key-b"];
const THREADS: usize = 8;
const ROUNDS: usize = 3;
const HOLD: Duration = Duration::from_millis(200);

#[derive(Clone)]
struct Section {
    key: &'static str,
    worker: usize,
    start: Duration,
    end: Duration,
    token: i64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::init();
    // An embedded ZooKeeper unless ZK_CONNECT names a real one.
    let (_server, connect) = match std::env::var("ZK_CONNECT") {
        Ok(cs) => (None, cs),
        Err(_) => {
            let s = TestingServer::start_backend(zk_testing::Backend::Embedded)?;
            let cs = s.connect_string();
            (Some(s), cs)
        }
    };
    println!("ZooKeeper at {connect}: {THREADS} threads, {ROUNDS} rounds each, two keys, {HOLD:?} per hold\n");

    let t0 = Instant::now();
    let log: Arc<Mutex<Vec<Section>>> = Arc::default();
    std::thread::scope(|scope| -> Result<(), Box<dyn std::error::Error>> {
        let mut handles = Vec::new();
        for worker in 0..THREADS {
            let key = KEYS[worker % KEYS.len()];
            let (connect, log) = (connect.clone(), log.clone());
            handles.push(scope.spawn(move || -> Result<(), String> {
                // One client (one ZooKeeper session) per worker, as separate
                // services would have.
                let client = CuratorFramework::builder()
                    .connect_string(connect)
                    .session_timeout(Duration::from_secs(10))
                    .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
                    .build()
                    .map_err(|e| e.to_string())?;
                client
                    .block_until_connected(Duration::from_secs(10))
                    .map_err(|e| e.to_string())?;
                let lock = InterProcessMutex::new(&client, key).map_err(|e| e.to_string())?;
                for _ in 0..ROUNDS {
                    let guard = lock.acquire().map_err(|e| e.to_string())?;
                    let start = t0.elapsed();
                    println!(
                        "[{:7.3}s] {key}  worker-{worker} acquired (fencing token {})",
                        start.as_secs_f64(),
                        guard.fencing_token()
                    );
                    std::thread::sleep(HOLD);
                    let end = t0.elapsed();
                    println!("[{:7.3}s] {key}  worker-{worker} releases", end.as_secs_f64());
                    log.lock().push(Section {
                        key,
                        worker,
                        start,
                        end,
                        token: guard.fencing_token(),
                    });
                    drop(guard);
                }
                client.close();
                Ok(())
            }));
        }
        for h in handles {
            h.join().map_err(|_| "a worker panicked")??;
        }
        Ok(())
    })?;

    let mut sections = log.lock().clone();
    sections.sort_by_key(|s| (s.key, s.start));
    let mut overlaps = 0;
    for w in sections.windows(2) {
        if w[0].key == w[1].key && w[1].start < w[0].end {
            overlaps += 1;
            println!(
                "OVERLAP on {}: worker-{} [{:?}..{:?}] and worker-{} [{:?}..{:?}]",
                w[0].key, w[0].worker, w[0].start, w[0].end, w[1].worker, w[1].start, w[1].end
            );
        }
        if w[0].key == w[1].key && w[1].token <= w[0].token {
            overlaps += 1;
            println!("fencing tokens out of order on {}", w[0].key);
        }
    }
    println!(
        "\n{} critical sections on {} keys in {:.2}s; overlapping holders: {overlaps}",
        sections.len(),
        KEYS.len(),
        t0.elapsed().as_secs_f64()
    );
    if overlaps > 0 {
        return Err("mutual exclusion was violated".into());
    }
    println!("OK: no two holders of one key overlapped.");
    Ok(())
}
