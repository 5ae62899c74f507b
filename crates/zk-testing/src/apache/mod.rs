//! Real Apache ZooKeeper servers run as child processes, for tests that must run against the
//! reference implementation (and for fault injection: kill, stop, restart, pause).
//!
//! The servers come from Debian's `zookeeper` package (jars in `/usr/share/java`) and run
//! under the `java` found on `PATH` (or `$JAVA_HOME/bin/java`). Call [`available`] first and
//! skip the test when it returns `false`.
//!
//! Every server gets a fresh temporary directory (under [`std::env::temp_dir`]) that holds its
//! `zoo.cfg`, its data directory and its log (stdout and stderr of the JVM). Dropping an
//! [`ApacheServer`] or an [`ApacheCluster`] kills the JVMs and removes that directory, unless
//! the environment variable `ZK_TEST_KEEP_DIRS` is set (to anything), which keeps it for
//! post-mortem debugging.
//!
//! Servers listen on `127.0.0.1` only, on ports picked at random (free at the time they are
//! picked). Readiness is judged with the `srvr` four-letter word: a server is ready when the
//! answer has a `Mode:` line (`standalone`, `leader`, `follower`). `ruok` is not used because
//! it answers `imok` before the server accepts sessions.

// The rooms: `install` finds Java and the ZooKeeper jars, `config` writes `zoo.cfg`, `node`
// runs one JVM, `server` is the standalone server and `cluster` the ensemble built on it,
// `probe` asks a server its mode (`srvr`), `files` keeps the temporary directories and reads
// the logs, and `process` picks ports and sends signals; `links` are the partitionable
// ensemble's server-to-server proxies, `router` the clients' proxies in front of the servers,
// `lag` a follower held behind its leader (and the lost-reply scenario built on both),
// `reconfig` the ensemble that `reconfig` changes (servers added, removed, replaced), and
// `sasl` the JAAS file and the SASL switches.

mod cluster;
mod config;
mod files;
mod install;
mod lag;
mod links;
mod node;
mod probe;
mod process;
mod reconfig;
mod router;
mod sasl;
mod server;

pub use cluster::ApacheCluster;
pub use config::ApacheConfig;
pub use install::{available, available_or_skip};
pub use lag::{AfterLoss, Backlog, BacklogWritten, FollowerHold, LagReport, LagRound, LaggingFollower, BACKLOG_PATH};
pub use reconfig::{ReconfigurableEnsemble, SUPER_AUTH};
pub use router::{ClientRouter, ConnectionRecord, LostReply, NewSession, ReplySeen, Routes};
pub use sasl::{ApacheSasl, ServerMechanism};
pub use server::ApacheServer;
