//! Finding the ZooKeeper distribution (Debian's jars) and the `java` to run it with.

use std::fs;
use std::path::{Path, PathBuf};

/// Directory that holds Debian's ZooKeeper jars.
pub(super) const JAVA_LIB: &str = "/usr/share/java";
/// Jars put on the server's class path (the ones that exist). `zookeeper.jar`'s manifest
/// `Class-Path` pulls in the rest (netty, jetty, commons-*, ...).
pub(super) const SERVER_JARS: &[&str] = &[
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
];
/// What the Netty connection factory (TLS) needs besides `SERVER_JARS`: Debian does not
/// put Netty on zookeeper.jar's class path.
pub(super) const NETTY_JARS: &[&str] = &[
    "netty-buffer.jar",
    "netty-codec.jar",
    "netty-common.jar",
    "netty-handler.jar",
    "netty-resolver.jar",
    "netty-transport.jar",
    "netty-transport-native-unix-common.jar",
    "netty-transport-native-epoll.jar",
];

/// Says whether a real Apache ZooKeeper can be started on this machine: that
/// `/usr/share/java/zookeeper.jar` exists and a `java` executable is found (on `PATH` or in
/// `$JAVA_HOME/bin`).
///
/// Tests that need a real server should print a line and return early when this is `false`,
/// so that `cargo test` passes on a machine with only Rust installed.
///
/// # Errors
///
/// None: any problem (missing file, unreadable `PATH`) makes it return `false`.
///
/// # Examples
///
/// ```no_run
/// use zk_testing::apache;
///
/// if !apache::available() {
///     eprintln!("skipping: Java or Apache ZooKeeper is not installed");
///     return;
/// }
/// let server = apache::ApacheServer::start(apache::ApacheConfig::default()).unwrap();
/// # drop(server);
/// ```
pub fn available() -> bool {
    Path::new(JAVA_LIB).join("zookeeper.jar").is_file() && find_java().is_some()
}

/// For a test that needs Apache ZooKeeper whatever the backend: `true` when it
/// can run; otherwise prints that `test` is skipped and returns `false`, unless
/// `ZK_TEST_REQUIRE_APACHE` is set (not empty, not `0`), as CI sets it: then a
/// missing Java or ZooKeeper is a failure.
///
/// # Panics
///
/// When `ZK_TEST_REQUIRE_APACHE` asks for Apache ZooKeeper and it is missing.
///
/// # Examples
///
/// ```no_run
/// if !zk_testing::apache::available_or_skip("my_ensemble_test") {
///     return;
/// }
/// ```
pub fn available_or_skip(test: &str) -> bool {
    if available() {
        return true;
    }
    let required = std::env::var("ZK_TEST_REQUIRE_APACHE").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{test}: ZK_TEST_REQUIRE_APACHE is set but Java or /usr/share/java/zookeeper.jar is missing"
    );
    println!("{test}: skipped (Java or Apache ZooKeeper not installed)");
    false
}

pub(super) fn find_java() -> Option<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("java");
            if is_exec(&candidate) {
                return Some(candidate);
            }
        }
    }
    let home = std::env::var_os("JAVA_HOME")?;
    let candidate = PathBuf::from(home).join("bin").join("java");
    is_exec(&candidate).then_some(candidate)
}
