//! SASL on an embedded ZooKeeper that speaks DIGEST-MD5 and requires it (as a
//! ZooKeeper 3.8 with a `DigestLoginModule` JAAS `Server` section and
//! `sessionRequireClientSASLAuth=true`):
//!
//! * two services, `deployer` and `auditor`, authenticate with SASL and take
//!   turns on a lock whose path's ACL names their two `sasl` ids;
//! * a third identity the ACL does not name is refused (`NoAuth`);
//! * a wrong password is refused with its reason at once (`Error::Sasl`,
//!   `Rejected`), and the client stops rather than reconnect forever;
//! * a client without SASL is told the server requires it (`Required`);
//! * the password never appears in what is printed.
//!
//! ```text
//! cargo run --example sasl
//! ```
//!
//! It needs the embedded server (it configures its SASL users): with
//! `ZK_CONNECT` set it explains and exits 0. Exits 1 if something it shows
//! did not happen.

use std::time::{Duration, Instant};

use zk_framework::{perms, Acl, CuratorFramework, Error as ZkError, FixedAclProvider, SaslConfig, SaslErrorKind};
use zk_recipes::{Error, InterProcessMutex};
use zk_testing::embedded::{EmbeddedServer, ServerConfig, ServerSasl};

type BoxError = Box<dyn std::error::Error>;

const LOCK: &str = "/examples/sasl/deploy";

fn client(connect: &str, sasl: Option<SaslConfig>, acl: Vec<Acl>) -> Result<CuratorFramework, BoxError> {
    let mut b = CuratorFramework::builder()
        .connect_string(connect.to_string())
        .connection_timeout(Duration::from_secs(5))
        .acl_provider(FixedAclProvider::new(acl));
    if let Some(s) = sasl {
        b = b.sasl(s);
    }
    Ok(b.build()?)
}

fn main() -> Result<(), BoxError> {
    env_logger::init();
    if std::env::var("ZK_CONNECT").is_ok() {
        println!(
            "this example configures the SASL users of its own embedded server; a real ZooKeeper needs a JAAS \
             Server section (see the security chapter of the guide): run it without ZK_CONNECT"
        );
        return Ok(());
    }
    let t0 = Instant::now();
    let server = EmbeddedServer::start(ServerConfig {
        sasl: Some(
            ServerSasl::digest(&[
                ("deployer", "dep-s3cret"),
                ("auditor", "aud-s3cret"),
                ("intern", "int-s3cret"),
            ])
            .required(true),
        ),
        ..ServerConfig::default()
    })?;
    let cs = server.connect_string();
    let both = vec![Acl::sasl("deployer", perms::ALL), Acl::sasl("auditor", perms::ALL)];

    // Two services on one lock under an ACL naming both.
    let deployer = client(
        &cs,
        Some(SaslConfig::digest_md5("deployer", "dep-s3cret")?),
        both.clone(),
    )?;
    let auditor = client(
        &cs,
        Some(SaslConfig::digest_md5("auditor", "aud-s3cret")?),
        both.clone(),
    )?;
    println!(
        "deployer's settings: {:?}",
        SaslConfig::digest_md5("deployer", "dep-s3cret")?
    );
    for (name, c) in [("deployer", &deployer), ("auditor", &auditor)] {
        c.block_until_connected(Duration::from_secs(10))?;
        let lock = InterProcessMutex::new(c, LOCK)?;
        let guard = lock.acquire()?;
        let (acl, _) = c.zookeeper_client().get_acl(&guard.holding().lock_path())?;
        println!(
            "[{:6.3}s] {name} holds {LOCK} as sasl:{name}; the node's ACL: {acl:?}",
            t0.elapsed().as_secs_f64()
        );
        if acl != both {
            return Err(format!("unexpected ACL {acl:?}").into());
        }
    }

    // An identity the ACL does not name.
    let intern = client(&cs, Some(SaslConfig::digest_md5("intern", "int-s3cret")?), both.clone())?;
    intern.block_until_connected(Duration::from_secs(10))?;
    match InterProcessMutex::new(&intern, LOCK)?.try_acquire_for(Duration::from_secs(5)) {
        Err(Error::ZooKeeper(ZkError::NoAuth { .. })) => {
            println!(
                "[{:6.3}s] intern: NoAuth (the ACL names deployer and auditor)",
                t0.elapsed().as_secs_f64()
            )
        }
        other => return Err(format!("intern was not refused: {other:?}").into()),
    }

    // A wrong password: refused at once, with its reason; nothing printed shows it.
    let wrong = client(
        &cs,
        Some(SaslConfig::digest_md5("deployer", "guess-123")?),
        both.clone(),
    )?;
    let t1 = Instant::now();
    match wrong.block_until_connected(Duration::from_secs(30)) {
        Err(ZkError::Sasl(e)) if e.kind() == SaslErrorKind::Rejected => {
            let text = e.to_string();
            if text.contains("guess-123") {
                return Err("the password was printed".into());
            }
            println!(
                "[{:6.3}s] wrong password: {text} (after {:?})",
                t0.elapsed().as_secs_f64(),
                t1.elapsed()
            );
        }
        other => return Err(format!("a wrong password was not refused: {other:?}").into()),
    }

    // No SASL at all on a server that requires it.
    let anonymous = client(&cs, None, Acl::open_unsafe())?;
    anonymous.block_until_connected(Duration::from_secs(10))?;
    match anonymous.get_children("/") {
        Err(ZkError::Sasl(e)) if e.kind() == SaslErrorKind::Required => {
            println!("[{:6.3}s] without SASL: {e}", t0.elapsed().as_secs_f64())
        }
        other => return Err(format!("a client without SASL was not refused: {other:?}").into()),
    }
    for c in [deployer, auditor, intern, wrong, anonymous] {
        c.close();
    }
    println!("ok");
    Ok(())
}
