//! Prints the connection states the managed client reports, for
//! `scripts/compare-states.sh` (which runs the same fault script against this
//! probe and Curator's, `scripts/interop/CuratorStates.java`).
//!
//! ```text
//! states_probe CONNECT SESSION_MS LIFETIME_S
//! states_probe expire CONNECT 0xSESSION_ID PASSWORD_HEX
//! ```
//!
//! The first form prints, one line each, `<ms since start> STATE <NAME>` for
//! every state, and after every connected state `<ms> SESSION 0x<id>
//! <password hex>`, so that a script can end the session from outside. It runs
//! for LIFETIME_S seconds, then closes the client and prints `<ms> CLOSED`.
//!
//! The second form ends a session on the server, the way the server itself
//! would (server-side expiry, the same for every client): it attaches a raw
//! connection with that id and password and sends closeSession, then attaches
//! again to check that the server now reports the session expired (a client
//! that reattaches at once can win the race with the closeSession, so this is
//! repeated until it sticks).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use zk_framework::{CuratorFramework, ExponentialBackoffRetry};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Closes the session `id` on the server at `cs`; true once the server reports
/// it expired.
fn expire(cs: &str, id: i64, password: &[u8]) -> bool {
    use zk_testing::raw::RawConnection;
    for _ in 0..20 {
        match RawConnection::connect(cs, 30_000, Some((id, password))) {
            Ok((_, resp)) if resp.timeout <= 0 => {
                println!("expired 0x{id:x}");
                return true;
            }
            Ok((mut c, _)) => {
                if let Err(e) = c.close_session() {
                    eprintln!("closeSession of 0x{id:x}: {e} (retrying)");
                }
            }
            Err(e) => eprintln!("attach to 0x{id:x}: {e} (retrying)"),
        }
    }
    false
}

fn main() -> ExitCode {
    env_logger::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [cmd, cs, id, pw] = args.as_slice() {
        if cmd == "expire" {
            let id = u64::from_str_radix(id.trim_start_matches("0x"), 16)
                .ok()
                .map(|v| v as i64);
            let (Some(id), Some(pw)) = (id, unhex(pw)) else {
                eprintln!("usage: states_probe expire CONNECT 0xSESSION_ID PASSWORD_HEX");
                return ExitCode::from(2);
            };
            return if expire(cs, id, &pw) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            };
        }
    }
    let parsed = match args.as_slice() {
        [cs, ms, life] => ms
            .parse::<u64>()
            .ok()
            .zip(life.parse::<u64>().ok())
            .map(|(ms, life)| (cs.clone(), ms, life)),
        _ => None,
    };
    let Some((cs, session_ms, lifetime_s)) = parsed else {
        eprintln!("usage: states_probe CONNECT SESSION_MS LIFETIME_S\n       states_probe expire CONNECT 0xSESSION_ID PASSWORD_HEX");
        return ExitCode::from(2);
    };
    let t0 = Instant::now();
    let ms = move || t0.elapsed().as_millis();
    let (tx, rx) = crossbeam_channel::unbounded();
    let built = CuratorFramework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_millis(session_ms))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_secs(1), 3))
        .connection_state_listener(move |s| {
            // stdout is line-buffered: one write per line.
            println!("{} STATE {s}", ms());
            let _ = tx.send(s);
        })
        .build();
    let client = match built {
        Ok(c) => c,
        Err(e) => {
            eprintln!("states_probe: {e}");
            return ExitCode::from(1);
        }
    };
    let end = t0 + Duration::from_secs(lifetime_s);
    while let Ok(state) = rx.recv_deadline(end) {
        if state.is_connected() {
            let zk = client.zookeeper_client();
            println!(
                "{} SESSION 0x{:x} {}",
                ms(),
                zk.session_id(),
                hex(&zk.session_password())
            );
        }
    }
    client.close();
    println!("{} CLOSED", ms());
    ExitCode::SUCCESS
}
