//! Curator 5.4 (Java, Kerberos from its JAAS `Client` section) and our
//! `InterProcessMutex` (Kerberos from a keytab, zk-framework's `gssapi`
//! feature) on one lock whose path's ACL names their two `sasl` ids, on
//! Apache ZooKeeper 3.8 with Kerberos and a throw-away MIT KDC: each queues
//! behind the other and gets the lock only after the other's release; a
//! client without SASL is refused. Behind the root package's `gssapi`
//! feature (`cargo test --features gssapi --test it curator_kerberos::`);
//! alone in its process (Kerberos reads `KRB5_CONFIG` from the
//! environment). Without the KDC, Java or Curator's jars it prints a line
//! and passes, unless `ZK_TEST_REQUIRE_KDC=1` / `ZK_TEST_REQUIRE_APACHE=1`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zk_framework::{perms, Acl, CuratorFramework, Error as ZkError, FixedAclProvider, GssapiConfig, SaslConfig};
use zk_recipes::{Error, InterProcessMutex};
use zk_testing::apache::{self, ApacheConfig, ApacheSasl};
use zk_testing::kdc::{self, Kdc};
use zk_testing::support::in_own_process;
use zk_testing::{wait_until, TestingServer};

const JAVA: &str = "/usr/share/java";
const JARS: [&str; 8] = [
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-simple",
];
const PATH: &str = "/locks/kerberos";
const WAIT: Duration = Duration::from_secs(60);

fn nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

fn append(log: &Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).create(true).open(log).unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// `(name, start, end)` of every section in the log.
fn sections(log: &Path) -> Vec<(String, u128, u128)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut starts = std::collections::HashMap::new();
    let mut out = Vec::new();
    for l in text.lines() {
        let p: Vec<&str> = l.split_whitespace().collect();
        if p.len() != 3 {
            continue;
        }
        let t: u128 = p[2].parse().unwrap();
        match p[1] {
            "START" => {
                starts.insert(p[0].to_string(), t);
            }
            "END" => out.push((p[0].to_string(), starts[p[0]], t)),
            _ => {}
        }
    }
    out
}

/// Compiles the Curator lock holder; `None` (said) when Java or the jars are missing.
fn compile(out: &Path) -> Option<String> {
    let missing = JARS.iter().any(|j| !Path::new(&format!("{JAVA}/{j}.jar")).exists());
    let javac = Command::new("javac").arg("-version").stderr(Stdio::null()).status();
    if missing || !javac.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var("ZK_TEST_REQUIRE_APACHE").as_deref() != Ok("1"),
            "ZK_TEST_REQUIRE_APACHE=1 but javac or Curator's jars are missing"
        );
        println!("curator_kerberos: skipped (javac or Curator's jars missing)");
        return None;
    }
    let jar = |j: &str| format!("{JAVA}/{j}.jar");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/interop/CuratorLockHolder.java");
    let st = Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(out)
        .arg("-cp")
        .arg(
            ["curator-recipes", "curator-framework", "curator-client", "zookeeper"]
                .map(jar)
                .join(":"),
        )
        .arg(src)
        .status()
        .unwrap();
    assert!(st.success(), "javac failed");
    let mut cp = vec![out.display().to_string()];
    cp.extend(JARS.map(jar));
    Some(cp.join(":"))
}

/// The Curator holder as `alice@EXAMPLE.TEST` (its keytab in its JAAS file),
/// asking for the server principal `zookeeper/127.0.0.1@EXAMPLE.TEST`.
fn java_holder(kdc: &Kdc, dir: &Path, cp: &str, cs: &str, name: &str, log: &Path, release: &Path) -> Command {
    let jaas = dir.join("jaas.conf");
    std::fs::write(
        &jaas,
        format!(
            "Client {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true keyTab=\"{}\" \
             storeKey=true useTicketCache=false\n  principal=\"alice@EXAMPLE.TEST\";\n}};\n",
            kdc.keytab("alice").display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new("java");
    cmd.arg(format!("-Djava.security.auth.login.config={}", jaas.display()))
        .arg(format!("-Djava.security.krb5.conf={}", kdc.krb5_conf().display()))
        .arg("-Dzookeeper.server.principal=zookeeper/127.0.0.1@EXAMPLE.TEST")
        .args([
            "-Xmx64m",
            "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        ])
        .args(["-cp", cp, "CuratorLockHolder", cs, PATH, name])
        .arg(log)
        .arg(release)
        .env("ZK_SASL_ACL", "alice@EXAMPLE.TEST,client@EXAMPLE.TEST")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd
}

#[test]
fn curator_with_kerberos_and_ours_share_a_lock_under_a_sasl_acl() {
    let name = "curator_kerberos::curator_with_kerberos_and_ours_share_a_lock_under_a_sasl_acl";
    if !kdc::available_or_skip(name) || !apache::available_or_skip(name) || in_own_process(name) {
        return;
    }
    let dir: PathBuf = std::env::temp_dir().join(format!("zk-curator-kerberos-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(cp) = compile(&dir) else { return };
    let kdc = Kdc::start().expect("start a KDC");
    kdc.add_principal("alice").unwrap();
    kdc.set_process_env(None);
    let s = TestingServer::apache_with(ApacheConfig {
        sasl: Some(ApacheSasl::kerberos(&kdc, "127.0.0.1")),
        ..ApacheConfig::default()
    })
    .expect("ZooKeeper with Kerberos");
    let cs = s.connect_string();
    let both = vec![
        Acl::sasl("alice@EXAMPLE.TEST", perms::ALL),
        Acl::sasl("client@EXAMPLE.TEST", perms::ALL),
    ];
    let ours = CuratorFramework::builder()
        .connect_string(cs.clone())
        .sasl(SaslConfig::gssapi(
            GssapiConfig::default().keytab(kdc.client_keytab(), "client@EXAMPLE.TEST"),
        ))
        .acl_provider(FixedAclProvider::new(both.clone()))
        .build()
        .unwrap();
    ours.block_until_connected(WAIT).unwrap();
    ours.create()
        .creating_parents_if_needed()
        .with_acl(both.clone())
        .for_path(PATH)
        .unwrap();
    let log = dir.join("sections.log");
    let has = |what: &str| std::fs::read_to_string(&log).unwrap_or_default().contains(what);
    let queue = || ours.get_children(PATH).unwrap_or_default().len();

    // 1. Curator holds; ours queues and gets the lock after Curator's release.
    let release = dir.join("release-1");
    let err1 = dir.join("java-1.err");
    let mut java = java_holder(&kdc, &dir, &cp, &cs, "curator-1", &log, &release)
        .stderr(std::fs::File::create(&err1).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(WAIT, || has("curator-1 START")),
        "Curator never got the lock: {}",
        std::fs::read_to_string(&err1).unwrap_or_default()
    );
    let held = ours.get_children(PATH).unwrap();
    let (acl, _) = ours.zookeeper_client().get_acl(&format!("{PATH}/{}", held[0])).unwrap();
    assert_eq!(acl, both);
    // Without SASL: refused.
    let anonymous = CuratorFramework::builder().connect_string(cs.clone()).build().unwrap();
    anonymous.block_until_connected(WAIT).unwrap();
    assert!(matches!(
        InterProcessMutex::new(&anonymous, PATH)
            .unwrap()
            .try_acquire_for(Duration::from_secs(5)),
        Err(Error::ZooKeeper(ZkError::NoAuth { .. }))
    ));
    let lock = InterProcessMutex::new(&ours, PATH).unwrap();
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let g = lock.acquire().unwrap();
            append(&log, &format!("ours-1 START {}", nanos()));
            append(&log, &format!("ours-1 END {}", nanos()));
            g.release().unwrap();
        });
        assert!(wait_until(WAIT, || queue() == 2), "ours did not queue behind Curator");
        assert!(!has("ours-1 START"));
        std::fs::write(&release, b"").unwrap();
        waiter.join().unwrap();
    });
    assert!(
        java.wait().unwrap().success(),
        "{}",
        std::fs::read_to_string(&err1).unwrap_or_default()
    );

    // 2. Ours holds; Curator queues and gets the lock after our release.
    let guard = lock.acquire().unwrap();
    append(&log, &format!("ours-2 START {}", nanos()));
    let release = dir.join("release-2");
    let err2 = dir.join("java-2.err");
    let mut java = java_holder(&kdc, &dir, &cp, &cs, "curator-2", &log, &release)
        .stderr(std::fs::File::create(&err2).unwrap())
        .spawn()
        .unwrap();
    assert!(
        wait_until(WAIT, || queue() == 2),
        "Curator did not queue behind ours: {}",
        std::fs::read_to_string(&err2).unwrap_or_default()
    );
    assert!(!has("curator-2 START"), "Curator got a lock we hold");
    append(&log, &format!("ours-2 END {}", nanos()));
    guard.release().unwrap();
    assert!(
        wait_until(WAIT, || has("curator-2 START")),
        "Curator never got the lock after ours"
    );
    std::fs::write(&release, b"").unwrap();
    assert!(
        java.wait().unwrap().success(),
        "{}",
        std::fs::read_to_string(&err2).unwrap_or_default()
    );

    // No two sections overlap.
    let all = sections(&log);
    assert_eq!(all.len(), 4, "{all:?}");
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert!(a.2 <= b.1 || b.2 <= a.1, "{a:?} overlaps {b:?}");
        }
    }
    for c in [ours, anonymous] {
        c.close();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
