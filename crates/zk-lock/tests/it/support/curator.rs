//! A Curator (Java) contender for the interop tests: compiled once with
//! `javac` against Debian's Curator jars, run as a holder or a contender.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use zk_testing::wait_until;

use super::*;

pub const JAVA: &str = "/usr/share/java";
pub const CURATOR_JARS: [&str; 8] = [
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-simple",
];

pub fn on_path(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Compiles scripts/interop/{CuratorMutexContender,CuratorLockHolder}.java
/// into `out` and returns the class path; `Err(reason)` when Java or Debian's
/// Curator jars are missing.
pub fn compile_curator_contender(out: &Path) -> Result<String, String> {
    let missing: Vec<_> = CURATOR_JARS
        .iter()
        .filter(|j| !Path::new(&format!("{JAVA}/{j}.jar")).exists())
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing jars in {JAVA}: {missing:?}"));
    }
    if !on_path("java") || !on_path("javac") {
        return Err("java or javac not found".into());
    }
    let jar = |j: &str| format!("{JAVA}/{j}.jar");
    let javac_cp = ["curator-recipes", "curator-framework", "curator-client", "zookeeper"]
        .map(jar)
        .join(":");
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/interop");
    let st = Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(out)
        .arg("-cp")
        .arg(&javac_cp)
        .arg(interop.join("CuratorMutexContender.java"))
        .arg(interop.join("CuratorLockHolder.java"))
        .status()
        .map_err(|e| format!("javac: {e}"))?;
    assert!(st.success(), "javac failed on {}", interop.display());
    let mut cp = vec![out.display().to_string()];
    cp.extend(CURATOR_JARS.map(jar));
    Ok(cp.join(":"))
}

/// Waits for a Java contender; on failure, shows its stderr (kept in a file:
/// the JVM warns noisily about sockets closed under it).
pub fn java_wait(mut java: Child, stderr: &Path) {
    let mut status = None;
    let done = wait_until(timing().wait() * 2, || {
        status = java.try_wait().unwrap();
        status.is_some()
    });
    if !done {
        let _ = java.kill();
        let _ = java.wait();
    }
    assert!(
        status.is_some_and(|s| s.success()),
        "the Curator contender failed ({status:?}):\n{}",
        std::fs::read_to_string(stderr).unwrap_or_default()
    );
}

pub const JAVA_OPTS: [&str; 4] = [
    "-Xmx64m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
];

/// A Curator mutex holder that releases when `release` appears.
pub fn java_holder(cp: &str, connect: &str, path: &str, name: &str, log: &Path, release: &Path) -> Command {
    let mut cmd = Command::new("java");
    cmd.args(JAVA_OPTS)
        .args(["-cp", cp, "CuratorLockHolder", connect, path, name])
        .arg(log)
        .arg(release)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd
}

pub fn java_contender(
    cp: &str,
    connect: &str,
    path: &str,
    name: &str,
    iterations: u32,
    hold_ms: u64,
    log: &Path,
) -> Command {
    let mut cmd = Command::new("java");
    cmd.args(JAVA_OPTS)
        .args(["-cp", cp, "CuratorMutexContender", connect, path, name])
        .args([iterations.to_string(), hold_ms.to_string()])
        .arg(log)
        .arg("mutex")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd
}
