//! TLS: locks over TLS with flags and environment, and subcommands over TLS
//! refused by an x509 ACL, with TLS reasons.

use std::process::{Command, Stdio};
use std::time::Duration;

use zk_framework::CuratorFramework;
use zk_framework::ExponentialBackoffRetry;
use zk_recipes::InterProcessMutex;
use zk_testing::TestingServer;

use crate::support::*;

/// zk-lock over TLS with a client certificate (the server requires one): the
/// flags and the environment variables both work, a TLS holder excludes it,
/// a wrong CA is exit 69 within --connect-timeout, bad TLS options are exit 64.
#[test]
fn locks_over_tls_with_flags_and_environment() {
    use zk_testing::tls::TestPki;
    let _ = env_logger::builder().is_test(true).try_init();
    let pki = TestPki::new("zk-lock test CA").unwrap();
    let server = TestingServer::start_tls(pki.server_tls().unwrap().require_client_cert(pki.ca_pem())).unwrap();
    let dir = Scratch::new("tls");
    let ca = dir.path("ca.pem");
    std::fs::write(&ca, pki.ca_pem()).unwrap();
    let (cert, key) = pki
        .client_cert("zk-lock")
        .unwrap()
        .write_files(&dir.0, "client")
        .unwrap();
    let other_ca = dir.path("other-ca.pem");
    std::fs::write(&other_ca, TestPki::new("other").unwrap().ca_pem()).unwrap();
    let (ca, cert, key, other_ca) = (
        ca.to_str().unwrap(),
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        other_ca.to_str().unwrap(),
    );
    let cs = server.connect_string();
    let out = dir.path("node");
    let script = format!("echo \"$ZK_LOCK_NODE\" > {}", out.display());

    // Flags.
    let (code, stderr, _) = run(
        Some(&cs),
        &[
            "--tls-ca",
            ca,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
            "/tls/flags",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let node = std::fs::read_to_string(&out).unwrap();
    assert!(node.starts_with("/tls/flags/"), "{node}");
    assert!(!stderr.contains("PRIVATE KEY"), "{stderr}");

    // Environment variables instead of flags.
    let status = Command::new(zk_lock_bin())
        .args(["--connect", &cs, "/tls/env", "--", "true"])
        .env("ZK_LOCK_TLS_CA", ca)
        .env("ZK_LOCK_TLS_CERT", cert)
        .env("ZK_LOCK_TLS_KEY", key)
        .env_remove("ZK_CONNECT")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));

    // A holder connected over TLS excludes zk-lock (a non-blocking try: exit 1).
    let tls = zk_framework::TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem_files(cert, key)
        .build()
        .unwrap();
    let t = timing();
    let holder = CuratorFramework::builder()
        .connect_string(cs.clone())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .tls(tls)
        .build()
        .unwrap();
    holder.block_until_connected(t.wait()).unwrap();
    let lock = InterProcessMutex::new(&holder, "/tls/held").unwrap();
    let g = lock.acquire().unwrap();
    let tls_args = ["--tls-ca", ca, "--tls-cert", cert, "--tls-key", key];
    let mut args = tls_args.to_vec();
    // A 1 s try, not -n: a zero timeout's one round trip (20 ms of grace)
    // over TLS on a loaded machine is honestly "no answer" (69), not "held".
    let mut held_args = tls_args.to_vec();
    held_args.extend(["--timeout", "1s", "/tls/held", "--", "true"]);
    let (code, stderr, _) = run(Some(&cs), &held_args);
    assert_eq!(code, 1, "held elsewhere: {stderr}");
    args.extend(["-n", "/tls/held", "--", "true"]);
    g.release().unwrap();
    run_zero_timeout_until_acquired(&cs, &args, || false);

    // `--acl creator` with a client certificate and no --auth: the nodes belong
    // to the certificate's x509 identity; another certificate is refused (77).
    let gate = dir.path("x509-go");
    let ready = dir.path("x509-ready");
    let hold = format!(
        "touch '{ready}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done",
        ready = ready.display(),
        go = gate.display()
    );
    let mut args = tls_args.to_vec();
    args.extend(["--acl", "creator", "/tls/x509", "--", "sh", "-c", &hold]);
    let x509_holder = spawn(Some(&cs), &args);
    wait_for_file(&ready);
    let nodes = lock_nodes(&holder, "/tls/x509");
    assert_eq!(nodes.len(), 1, "{nodes:?}");
    let (acl, _) = holder
        .zookeeper_client()
        .get_acl(&format!("/tls/x509/{}", nodes[0]))
        .unwrap();
    let me = zk_framework::TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem_files(cert, key)
        .build()
        .unwrap()
        .client_x509_id()
        .expect("the client certificate's x509 id")
        .to_string();
    assert_eq!(acl, vec![zk_framework::Acl::x509(&me, zk_framework::perms::ALL)]);
    let (other_cert, other_key) = pki
        .client_cert("someone-else")
        .unwrap()
        .write_files(&dir.0, "other")
        .unwrap();
    let (code, stderr, _) = run(
        Some(&cs),
        &[
            "--tls-ca",
            ca,
            "--tls-cert",
            other_cert.to_str().unwrap(),
            "--tls-key",
            other_key.to_str().unwrap(),
            "--timeout",
            "2s",
            "/tls/x509",
            "--",
            "true",
        ],
    );
    assert_eq!(code, 77, "another certificate: {stderr}");
    std::fs::write(&gate, b"").unwrap();
    let (status, stderr) = x509_holder.finish(t.wait());
    assert_eq!(status.code(), Some(0), "{stderr}");

    // A wrong CA: exit 69, a TLS message, within the connect timeout.
    let (code, stderr, elapsed) = run(
        Some(&cs),
        &[
            "--connect-timeout",
            "2s",
            "--tls-ca",
            other_ca,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
            "/tls/wrong",
            "--",
            "true",
        ],
    );
    assert_eq!(code, 69, "{stderr}");
    assert!(
        stderr.contains("TLS") && stderr.contains("not signed by a trusted CA"),
        "{stderr}"
    );
    assert!(
        elapsed <= Duration::from_secs(2) + t.scale(Duration::from_secs(2)),
        "{elapsed:?}"
    );

    // Without a client certificate the server refuses: exit 69 saying so.
    let (code, stderr, _) = run(
        Some(&cs),
        &["--connect-timeout", "2s", "--tls-ca", ca, "/tls/nocert", "--", "true"],
    );
    assert_eq!(code, 69, "{stderr}");
    assert!(stderr.contains("requires a client certificate"), "{stderr}");

    // Bad TLS options: usage errors (64), nothing run.
    for (args, want) in [
        (
            vec!["--tls-ca", ca, "--tls-cert", cert, "/x", "--", "true"],
            "--tls-cert needs --tls-key",
        ),
        (
            vec!["--tls-cert", cert, "--tls-key", key, "/x", "--", "true"],
            "need --tls-ca",
        ),
        (
            vec!["--tls-ca", "/nonexistent/ca.pem", "/x", "--", "true"],
            "/nonexistent/ca.pem",
        ),
        (
            vec!["--tls-ca", ca, "--tls-cert", cert, "--tls-key", ca, "/x", "--", "true"],
            "private key",
        ),
    ] {
        let (code, stderr, _) = run(Some(&cs), &args);
        assert_eq!(code, 64, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

/// Over mutual TLS: the subcommands with a certificate an x509 ACL does not
/// name exit 77 with a certificate hint (never "--auth"), as a run does; a
/// TLS refusal while connecting names its reason in every mode (69).
#[test]
fn subcommands_over_tls_refused_by_an_x509_acl_and_tls_reasons() {
    use zk_testing::tls::TestPki;
    let pki = TestPki::new("zk-lock refusal CA").unwrap();
    let server = TestingServer::start_tls(pki.server_tls().unwrap().require_client_cert(pki.ca_pem())).unwrap();
    let cs = server.connect_string();
    let dir = Scratch::new("tls-refusals");
    let ca = dir.path("ca.pem");
    std::fs::write(&ca, pki.ca_pem()).unwrap();
    let (cert, key) = pki.client_cert("owner").unwrap().write_files(&dir.0, "owner").unwrap();
    let (other_cert, other_key) = pki
        .client_cert("someone-else")
        .unwrap()
        .write_files(&dir.0, "other")
        .unwrap();
    let (ca, cert, key, other_cert, other_key) = (
        ca.to_str().unwrap(),
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        other_cert.to_str().unwrap(),
        other_key.to_str().unwrap(),
    );
    let t = timing();
    let tls = zk_framework::TlsConfig::builder()
        .ca_pem(pki.ca_pem().as_bytes())
        .client_cert_pem_files(cert, key)
        .build()
        .unwrap();
    let owner = CuratorFramework::builder()
        .connect_string(cs.clone())
        .session_timeout(t.session())
        .connection_timeout(t.connection())
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .tls(tls)
        .acl_provider(zk_framework::FixedAclProvider::creator_all())
        .build()
        .unwrap();
    owner.block_until_connected(t.wait()).unwrap();
    let path = "/tls-acl/private";
    let lock = InterProcessMutex::new(&owner, path).unwrap();
    let g = lock.acquire().unwrap();

    let other = ["--tls-ca", ca, "--tls-cert", other_cert, "--tls-key", other_key];
    let ops: [&[&str]; 4] = [
        &["status", path],
        &["break", path, "--yes"],
        &["wait", path, "-w", "1s"],
        &["--timeout", "2s", path, "--", "true"],
    ];
    for op in ops {
        let mut args = other.to_vec();
        args.extend_from_slice(op);
        let (code, out, stderr) = run_out(Some(&cs), &args);
        assert_eq!(code, 77, "{op:?}: {out} {stderr}");
        assert!(
            stderr.contains("permission denied")
                && stderr.contains("client certificate's identity (x509 CN=someone-else")
                && stderr.contains("--tls-cert")
                && !stderr.contains("--auth"),
            "{op:?}: {stderr}"
        );
    }
    g.release().unwrap();

    // No client certificate: the server refuses the TLS handshake, and
    // status says so (as a run does), not just "could not connect".
    for op in [&["status", path][..], &["-n", path, "--", "true"]] {
        let mut args = vec!["--connect-timeout", "2s", "--tls-ca", ca];
        args.extend_from_slice(op);
        let (code, _, stderr) = run_out(Some(&cs), &args);
        assert_eq!(code, 69, "{op:?}: {stderr}");
        assert!(
            stderr.contains("TLS with") && stderr.contains("requires a client certificate"),
            "{op:?}: {stderr}"
        );
    }
    owner.close();
}
