//! Answers to the four-letter words, read off the state.

use std::fmt::Write as _;
use std::time::Instant;

use super::clock::now_ms;
use super::conn::ConnId;
use super::state::State;

/// The version string `srvr`, `mntr` and `envi` report.
pub(crate) const VERSION: &str = "3.8.0-embedded, built on 2022-02-25 08:49 UTC";

/// Java's `Date.toString()` in UTC: `Sat Nov 21 05:23:49 UTC 2026`, by jiff
/// (already built here for env_logger). Outside jiff's years (-9999 to 9999),
/// which a wall clock does not reach, the milliseconds as they are.
fn java_date(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => t.strftime("%a %b %d %H:%M:%S UTC %Y").to_string(),
        Err(_) => ms.to_string(),
    }
}

/// A latency average as Java's `Double.toString` prints it after rounding to 4 places:
/// `0.0`, `1.5`, `1.6645`.
fn java_double(x: f64) -> String {
    let s = format!("{x:.4}");
    let t = s.trim_end_matches('0');
    if t.ends_with('.') {
        format!("{t}0")
    } else {
        t.to_string()
    }
}

fn conn_line(st: &State, cid: ConnId, brief: bool, out: &mut String) {
    let Some(e) = st.conns.get(&cid) else { return };
    let ops = if e.session.is_some() { "1" } else { "0" };
    let _ = write!(
        out,
        " /{}:{}[{ops}](queued=0,recved={},sent={}",
        e.peer.ip(),
        e.peer.port(),
        e.recved,
        e.sent
    );
    if !brief {
        if let Some(sid) = e.session {
            let to = st.sessions.get(&sid).map_or(0, |s| s.timeout);
            let _ = write!(
                out,
                ",sid=0x{sid:x},lop={},est={},to={to},lcxid=0x{:x},lzxid=0x{:x},lresp={},llat={},minlat={},avglat={},maxlat={}",
                e.last_op,
                e.established,
                e.lcxid,
                e.lzxid,
                e.lresp,
                e.lat.last,
                e.lat.min,
                e.lat.sum.checked_div(e.lat.count).unwrap_or(0),
                e.lat.max
            );
        }
    }
    out.push_str(")\n");
}

fn live_conns(st: &State) -> Vec<ConnId> {
    let mut v: Vec<ConnId> = st
        .conns
        .iter()
        .filter(|(_, e)| !e.shared.is_closing())
        .map(|(c, _)| *c)
        .collect();
    v.sort_unstable();
    v
}

fn server_lines(st: &State, out: &mut String) {
    let l = st.stats.lat;
    let _ = write!(
        out,
        "Latency min/avg/max: {}/{}/{}\nReceived: {}\nSent: {}\nConnections: {}\nOutstanding: 0\nZxid: 0x{:x}\nMode: standalone\nNode count: {}\n",
        l.min,
        java_double(l.avg()),
        l.max,
        st.stats.received,
        st.stats.sent,
        live_conns(st).len(),
        st.zxid,
        st.tree.len() + 1
    );
}

/// The text answer to `cmd`, asked on connection `me`.
pub(crate) fn answer(st: &mut State, cmd: &str, me: ConnId) -> String {
    if !st.cfg.four_letter_words && cmd != "srvr" {
        return format!("{cmd} is not executed because it is not in the whitelist.\n");
    }
    let mut out = String::new();
    match cmd {
        "ruok" => out.push_str("imok"),
        "isro" => out.push_str("rw"),
        "gtmk" | "stmk" => out.push_str("306"),
        "srvr" => {
            let _ = writeln!(out, "Zookeeper version: {VERSION}");
            server_lines(st, &mut out);
        }
        "stat" => {
            let _ = writeln!(out, "Zookeeper version: {VERSION}");
            out.push_str("Clients:\n");
            for c in live_conns(st) {
                conn_line(st, c, true, &mut out);
            }
            out.push('\n');
            server_lines(st, &mut out);
        }
        "cons" => {
            for c in live_conns(st) {
                conn_line(st, c, false, &mut out);
            }
            out.push('\n');
        }
        "wchs" => {
            let t = &st.watches.data;
            let _ = write!(
                out,
                "{} connections watching {} paths\nTotal watches:{}\n",
                t.conns().len(),
                t.paths(),
                t.count()
            );
        }
        "wchc" => {
            let mut by_conn: std::collections::BTreeMap<ConnId, Vec<String>> = Default::default();
            for (p, cs) in st.watches.data.by_path() {
                for c in cs {
                    by_conn.entry(c).or_default().push(p.clone());
                }
            }
            for (c, paths) in by_conn {
                let sid = st.conns.get(&c).and_then(|e| e.session).unwrap_or(0);
                let _ = writeln!(out, "0x{sid:x}");
                for p in paths {
                    let _ = writeln!(out, "\t{p}");
                }
            }
            out.push('\n');
        }
        "wchp" => {
            for (p, cs) in st.watches.data.by_path() {
                let _ = writeln!(out, "{p}");
                for c in cs {
                    let sid = st.conns.get(&c).and_then(|e| e.session).unwrap_or(0);
                    let _ = writeln!(out, "\t0x{sid:x}");
                }
            }
            out.push('\n');
        }
        "mntr" => {
            let l = st.stats.lat;
            let watches = st.watches.data.count() + st.watches.child.count();
            let uptime = now_ms() - st.started_ms;
            let lines: [(&str, String); 16] = [
                ("zk_version", VERSION.to_string()),
                ("zk_server_state", "standalone".into()),
                ("zk_ephemerals_count", st.tree.ephemeral_count().to_string()),
                ("zk_num_alive_connections", live_conns(st).len().to_string()),
                ("zk_avg_latency", java_double(l.avg())),
                ("zk_outstanding_requests", "0".into()),
                ("zk_znode_count", (st.tree.len() + 1).to_string()),
                ("zk_global_sessions", st.sessions.len().to_string()),
                ("zk_packets_sent", st.stats.sent.to_string()),
                ("zk_packets_received", st.stats.received.to_string()),
                ("zk_watch_count", watches.to_string()),
                ("zk_min_latency", l.min.to_string()),
                ("zk_max_latency", l.max.to_string()),
                ("zk_approximate_data_size", st.tree.approximate_size().to_string()),
                ("zk_local_sessions", "0".into()),
                ("zk_uptime", uptime.to_string()),
            ];
            for (k, v) in lines {
                let _ = writeln!(out, "{k}\t{v}");
            }
        }
        "conf" => {
            let _ = write!(
                out,
                "clientPort={}\nsecureClientPort=-1\ndataDir=/embedded/in-memory\ndataDirSize=0\ndataLogDir=/embedded/in-memory\ndataLogSize=0\ntickTime={}\nmaxClientCnxns=0\nminSessionTimeout={}\nmaxSessionTimeout={}\nclientPortListenBacklog=-1\nserverId=0\n",
                st.port,
                st.cfg.tick.as_millis(),
                st.cfg.min_session_timeout.as_millis(),
                st.cfg.max_session_timeout.as_millis()
            );
        }
        "envi" => {
            let _ =
                write!(
                out,
                "Environment:\nzookeeper.version={VERSION}\nhost.name=localhost\nos.name={}\nos.arch={}\nuser.dir={}\n",
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default()
            );
        }
        "dirs" => out.push_str("datadir_size: 0\nlogdir_size: 0\n"),
        "srst" => {
            st.stats.lat = Default::default();
            st.stats.received = 0;
            st.stats.sent = 0;
            out.push_str("Server stats reset.\n");
        }
        "crst" => {
            for e in st.conns.values_mut() {
                e.lat = Default::default();
                e.recved = 0;
                e.sent = 0;
            }
            out.push_str("Connection stats reset.\n");
        }
        "dump" => {
            let now = Instant::now();
            let wall = now_ms();
            let to_wall = |t: Instant| wall + t.saturating_duration_since(now).as_millis() as i64;
            let mut buckets: std::collections::BTreeMap<Instant, Vec<i64>> = Default::default();
            for (id, s) in st.sessions.iter() {
                buckets.entry(s.deadline).or_default().push(*id);
            }
            out.push_str("SessionTracker dump:\n");
            let _ = writeln!(out, "Session Sets ({})/({}):", buckets.len(), st.sessions.len());
            for (d, mut ids) in buckets {
                ids.sort_unstable();
                let _ = writeln!(out, "{} expire at {}:", ids.len(), java_date(to_wall(d)));
                for id in ids {
                    let _ = writeln!(out, "\t0x{id:x}");
                }
            }
            out.push_str("ephemeral nodes dump:\n");
            let mut eph: Vec<(&i64, &std::collections::BTreeSet<String>)> = st.tree.ephemerals.iter().collect();
            eph.sort();
            let _ = writeln!(out, "Sessions with Ephemerals ({}):", eph.len());
            for (sid, paths) in eph {
                let _ = writeln!(out, "0x{sid:x}:");
                for p in paths {
                    let _ = writeln!(out, "\t{p}");
                }
            }
            out.push_str("Connections dump:\n");
            let conns = live_conns(st);
            let _ = writeln!(out, "Connections Sets (1)/({}):", conns.len());
            let _ = writeln!(out, "{} expire at {}:", conns.len(), java_date(wall + 10_000));
            for c in conns {
                if let Some(e) = st.conns.get(&c) {
                    let _ = writeln!(
                        out,
                        "\tip: /{}:{} sessionId: 0x{:x}",
                        e.peer.ip(),
                        e.peer.port(),
                        e.session.unwrap_or(0)
                    );
                }
            }
        }
        _ => {}
    }
    let _ = me;
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn java_doubles() {
        assert_eq!(super::java_double(0.0), "0.0");
        assert_eq!(super::java_double(1.5), "1.5");
        assert_eq!(super::java_double(1.66449), "1.6645");
        assert_eq!(super::java_double(14.0), "14.0");
    }

    #[test]
    fn java_dates() {
        assert_eq!(super::java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(super::java_date(1_795_238_629_000), "Sat Nov 21 05:23:49 UTC 2026");
    }
}
