//! One test-server API over both backends, a timing multiplier, and condition
//! waits with deadlines.
//!
//! `ZK_TEST_SERVER=embedded|apache` selects the backend for every test that does
//! not need a specific one (default: `embedded`). `ZK_TEST_TIMING` (a float,
//! default 1) stretches every test timeout, like Curator's `Timing`.

use std::io;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::apache::{self, ApacheConfig, ApacheServer};
use crate::embedded::{EmbeddedServer, ServerConfig, ServerSasl};
use crate::raw::RawConnection;
use crate::tls::ServerTls;

/// Which server implementation a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The in-process server of this crate.
    Embedded,
    /// Apache ZooKeeper (Debian's package) as a child process.
    Apache,
}

impl Backend {
    /// The backend named by `ZK_TEST_SERVER` (`embedded` when unset).
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a value other than `embedded` or `apache`.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_testing::Backend;
    /// let b = Backend::from_env().unwrap();
    /// assert!(matches!(b, Backend::Embedded | Backend::Apache));
    /// ```
    pub fn from_env() -> io::Result<Backend> {
        match std::env::var("ZK_TEST_SERVER") {
            Err(_) => Ok(Backend::Embedded),
            Ok(v) => Backend::parse(&v),
        }
    }

    /// Parses `embedded` or `apache` (case-insensitive; empty means embedded).
    ///
    /// # Errors
    ///
    /// `InvalidInput` for anything else.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_testing::Backend;
    /// assert_eq!(Backend::parse("apache").unwrap(), Backend::Apache);
    /// assert!(Backend::parse("etcd").is_err());
    /// ```
    pub fn parse(v: &str) -> io::Result<Backend> {
        match v.trim().to_ascii_lowercase().as_str() {
            "" | "embedded" => Ok(Backend::Embedded),
            "apache" | "real" | "zookeeper" => Ok(Backend::Apache),
            other => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("ZK_TEST_SERVER={other:?}: expected `embedded` or `apache`"),
            )),
        }
    }
}

/// Scales test timeouts by one multiplier (`ZK_TEST_TIMING`), so a slow machine
/// can stretch them all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    multiple: f64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing::from_env()
    }
}

impl Timing {
    /// The multiplier from `ZK_TEST_TIMING` (1.0 when unset or invalid).
    ///
    /// # Examples
    ///
    /// ```
    /// let t = zk_testing::Timing::from_env();
    /// assert!(t.multiple() > 0.0);
    /// ```
    pub fn from_env() -> Timing {
        let multiple = std::env::var("ZK_TEST_TIMING")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|m| m.is_finite() && *m > 0.0)
            .unwrap_or(1.0);
        Timing { multiple }
    }

    /// A timing with an explicit multiplier (values ≤ 0 become 1).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = zk_testing::Timing::with_multiple(2.0);
    /// assert_eq!(t.scale(Duration::from_secs(1)), Duration::from_secs(2));
    /// ```
    pub fn with_multiple(multiple: f64) -> Timing {
        Timing {
            multiple: if multiple.is_finite() && multiple > 0.0 {
                multiple
            } else {
                1.0
            },
        }
    }

    /// The multiplier.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_testing::Timing::with_multiple(3.0).multiple(), 3.0);
    /// ```
    pub fn multiple(&self) -> f64 {
        self.multiple
    }

    /// `d` times the multiplier.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(zk_testing::Timing::with_multiple(1.0).scale(Duration::from_millis(5)), Duration::from_millis(5));
    /// ```
    pub fn scale(&self, d: Duration) -> Duration {
        d.mul_f64(self.multiple)
    }

    /// The session timeout tests use by default: 4 s, scaled.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_testing::Timing::with_multiple(1.0).session() >= std::time::Duration::from_secs(1));
    /// ```
    pub fn session(&self) -> Duration {
        self.scale(Duration::from_secs(4))
    }

    /// The connection timeout tests use by default: 2 s, scaled.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(zk_testing::Timing::with_multiple(1.0).connection() > std::time::Duration::ZERO);
    /// ```
    pub fn connection(&self) -> Duration {
        self.scale(Duration::from_secs(2))
    }

    /// How long a test waits for something that should happen: 30 s, scaled.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_testing::Timing::with_multiple(1.0).wait(), std::time::Duration::from_secs(30));
    /// ```
    pub fn wait(&self) -> Duration {
        self.scale(Duration::from_secs(30))
    }

    /// A deadline `d` (scaled) from now.
    ///
    /// # Examples
    ///
    /// ```
    /// let dl = zk_testing::Timing::with_multiple(1.0).deadline(std::time::Duration::from_secs(1));
    /// assert!(dl > std::time::Instant::now());
    /// ```
    pub fn deadline(&self, d: Duration) -> Instant {
        Instant::now() + self.scale(d)
    }
}

/// Polls `cond` until it is true or `timeout` passes; returns its last value.
/// Polls start at 1 ms and back off to 50 ms, so fast events are seen quickly.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// let start = Instant::now();
/// assert!(zk_testing::wait_until(Duration::from_secs(5), || start.elapsed() > Duration::from_millis(20)));
/// assert!(!zk_testing::wait_until(Duration::from_millis(20), || false));
/// ```
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        if cond() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

enum Inner {
    Embedded(EmbeddedServer),
    Apache(Box<Mutex<ApacheServer>>),
}

/// A ZooKeeper server for tests: the embedded one or real Apache ZooKeeper,
/// behind one API. Faults that only the embedded server can inject return
/// `Unsupported` on Apache.
pub struct TestingServer {
    inner: Inner,
    /// The port clients connect to (the secure port of a TLS server).
    port: u16,
    tls: bool,
}

impl std::fmt::Debug for TestingServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestingServer")
            .field("backend", &self.backend())
            .field("port", &self.port)
            .field("tls", &self.tls)
            .finish()
    }
}

fn unsupported(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what} is only available on the embedded server"),
    )
}

fn unsupported_tls(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{what} need a plain port, and an embedded TLS server has none"),
    )
}

impl TestingServer {
    /// Starts a server on the backend chosen by `ZK_TEST_SERVER`.
    ///
    /// # Errors
    ///
    /// A bad `ZK_TEST_SERVER` value, or the server failing to start (for Apache:
    /// Java or the ZooKeeper package missing).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = zk_testing::TestingServer::start().unwrap();
    /// assert!(server.connect_string().starts_with("127.0.0.1:"));
    /// ```
    pub fn start() -> io::Result<TestingServer> {
        TestingServer::start_backend(Backend::from_env()?)
    }

    /// Starts a server on the given backend with default settings (session
    /// timeouts 1–60 s, container sweep every 100 ms).
    ///
    /// # Errors
    ///
    /// The server failing to start.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_testing::{Backend, TestingServer};
    /// let s = TestingServer::start_backend(Backend::Embedded).unwrap();
    /// assert_eq!(s.backend(), Backend::Embedded);
    /// ```
    pub fn start_backend(backend: Backend) -> io::Result<TestingServer> {
        match backend {
            Backend::Embedded => TestingServer::embedded_with(ServerConfig::default()),
            Backend::Apache => TestingServer::apache_with(ApacheConfig::default()),
        }
    }

    /// Starts the embedded server with a given configuration.
    ///
    /// # Errors
    ///
    /// Binding the port fails.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::embedded_with(Default::default()).unwrap();
    /// assert!(s.embedded().is_some());
    /// ```
    pub fn embedded_with(config: ServerConfig) -> io::Result<TestingServer> {
        let tls = config.tls.is_some();
        let s = EmbeddedServer::start(config)?;
        let port = s.port();
        Ok(TestingServer {
            inner: Inner::Embedded(s),
            port,
            tls,
        })
    }

    /// Starts Apache ZooKeeper with a given configuration.
    ///
    /// # Errors
    ///
    /// `NotFound` when Java or the ZooKeeper jars are missing; start failures.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let s = zk_testing::TestingServer::apache_with(Default::default()).unwrap();
    /// assert!(s.embedded().is_none());
    /// ```
    pub fn apache_with(config: ApacheConfig) -> io::Result<TestingServer> {
        if !apache::available() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "Apache ZooKeeper is not installed (apt-get install zookeeper) or java is missing",
            ));
        }
        let s = ApacheServer::start(config)?;
        let port = s.secure_port().unwrap_or(s.port());
        Ok(TestingServer {
            tls: s.secure_port().is_some(),
            inner: Inner::Apache(Box::new(Mutex::new(s))),
            port,
        })
    }

    /// Starts a TLS server on the backend chosen by `ZK_TEST_SERVER`: the
    /// embedded server serving TLS on its port, or Apache ZooKeeper with a
    /// `secureClientPort`. [`TestingServer::connect_string`] is then the TLS
    /// address. Both register the `x509` auth scheme, as ZooKeeper 3.8 does with
    /// a `secureClientPort`: when `tls` requires client certificates, a client's
    /// certificate gives its connection the identity `x509:<subject>` (RFC 2253,
    /// e.g. `CN=app`), which `x509` ACL entries match.
    ///
    /// # Errors
    ///
    /// As [`TestingServer::start`]; `InvalidInput` for TLS settings that cannot
    /// be used.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_testing::{tls::TestPki, TestingServer};
    /// let pki = TestPki::new("ca")?;
    /// let s = TestingServer::start_backend_tls(zk_testing::Backend::Embedded, pki.server_tls()?)?;
    /// assert!(s.is_tls());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_tls(tls: ServerTls) -> io::Result<TestingServer> {
        TestingServer::start_backend_tls(Backend::from_env()?, tls)
    }

    /// [`TestingServer::start_tls`] on the given backend.
    ///
    /// # Errors
    ///
    /// As [`TestingServer::start_tls`].
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_testing::{tls::TestPki, Backend, TestingServer};
    /// let pki = TestPki::new("ca")?;
    /// let s = TestingServer::start_backend_tls(Backend::Embedded, pki.server_tls()?)?;
    /// assert_eq!(s.plain_connect_string(), None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_backend_tls(backend: Backend, tls: ServerTls) -> io::Result<TestingServer> {
        match backend {
            Backend::Embedded => TestingServer::embedded_with(ServerConfig {
                tls: Some(tls),
                // ZooKeeper 3.8 registers the x509 provider with a secureClientPort.
                x509_auth: true,
                ..ServerConfig::default()
            }),
            Backend::Apache => TestingServer::apache_with(ApacheConfig {
                tls: Some(tls),
                ..ApacheConfig::default()
            }),
        }
    }

    /// A server speaking SASL DIGEST-MD5 with `sasl`'s users (and, when
    /// asked, requiring it) on the backend `ZK_TEST_SERVER` selects: the
    /// embedded server, or Apache ZooKeeper 3.8 with a `DigestLoginModule`
    /// JAAS `Server` section and the `sasl` auth provider.
    ///
    /// # Errors
    ///
    /// As [`TestingServer::start`].
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_testing::{embedded::ServerSasl, Backend, TestingServer};
    /// let s = TestingServer::start_backend_sasl(Backend::Embedded, ServerSasl::digest(&[("bob", "pw")]))?;
    /// assert!(!s.is_tls());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_sasl(sasl: ServerSasl) -> io::Result<TestingServer> {
        TestingServer::start_backend_sasl(Backend::from_env()?, sasl)
    }

    /// [`TestingServer::start_sasl`] on the given backend.
    ///
    /// # Errors
    ///
    /// As [`TestingServer::start`].
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_testing::{embedded::ServerSasl, Backend, TestingServer};
    /// let s = TestingServer::start_backend_sasl(Backend::Embedded, ServerSasl::digest(&[("bob", "pw")]).required(true))?;
    /// assert!(s.connect_string().starts_with("127.0.0.1:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_backend_sasl(backend: Backend, sasl: ServerSasl) -> io::Result<TestingServer> {
        match backend {
            Backend::Embedded => TestingServer::embedded_with(ServerConfig {
                sasl: Some(sasl),
                ..ServerConfig::default()
            }),
            Backend::Apache => {
                let users: Vec<(&str, &str)> = sasl.users.iter().map(|(u, p)| (u.as_str(), p.as_str())).collect();
                let mut apache = apache::ApacheSasl::digest_md5(&users);
                if sasl.required {
                    apache = apache.requiring_client_sasl();
                }
                if let Some(s) = &sasl.super_user {
                    apache = apache.with_super_user(s);
                }
                TestingServer::apache_with(ApacheConfig {
                    sasl: Some(apache),
                    ..ApacheConfig::default()
                })
            }
        }
    }

    /// Whether clients must connect with TLS.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// assert!(!s.is_tls());
    /// ```
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// A plain-TCP address of the server, if it has one: the connect string of a
    /// plain server, the `clientPort` of an Apache TLS server, `None` for an
    /// embedded TLS server (one port, TLS only).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// assert_eq!(s.plain_connect_string(), Some(s.connect_string()));
    /// ```
    pub fn plain_connect_string(&self) -> Option<String> {
        match &self.inner {
            Inner::Apache(s) => Some(s.lock().connect_string()),
            Inner::Embedded(_) if self.tls => None,
            Inner::Embedded(_) => Some(self.connect_string()),
        }
    }

    /// Which backend this is.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// assert_eq!(s.backend(), zk_testing::Backend::Embedded);
    /// ```
    pub fn backend(&self) -> Backend {
        match self.inner {
            Inner::Embedded(_) => Backend::Embedded,
            Inner::Apache(_) => Backend::Apache,
        }
    }

    /// The client port (the secure port of a TLS server).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// assert!(s.port() > 0);
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`: where clients connect (TLS for a TLS server).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// assert_eq!(s.connect_string(), format!("127.0.0.1:{}", s.port()));
    /// ```
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The embedded server, for faults and counters only it has.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// assert!(s.embedded().unwrap().is_running());
    /// ```
    pub fn embedded(&self) -> Option<&EmbeddedServer> {
        match &self.inner {
            Inner::Embedded(s) => Some(s),
            Inner::Apache(_) => None,
        }
    }

    /// Stops the server; data and sessions are kept for [`TestingServer::restart`].
    ///
    /// # Errors
    ///
    /// Stopping the process fails (Apache).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// s.stop().unwrap();
    /// s.restart().unwrap();
    /// ```
    pub fn stop(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Embedded(s) => {
                s.stop();
                Ok(())
            }
            Inner::Apache(s) => s.lock().stop(),
        }
    }

    /// Starts the server again on the same port with the same data and sessions.
    ///
    /// # Errors
    ///
    /// The port cannot be bound again, or the process fails to start.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// s.restart().unwrap();
    /// ```
    pub fn restart(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Embedded(s) => s.restart(),
            Inner::Apache(s) => s.lock().restart(),
        }
    }

    /// Kills the server like a crash (Apache: SIGKILL; embedded: the same as
    /// stop, since its state lives in this process).
    ///
    /// # Errors
    ///
    /// Killing the process fails.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// s.kill().unwrap();
    /// ```
    pub fn kill(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Embedded(s) => {
                s.stop();
                Ok(())
            }
            Inner::Apache(s) => s.lock().kill(),
        }
    }

    /// Expires a session the way the server itself would: its ephemerals go, and
    /// its client learns of the expiry when it reconnects. On Apache this
    /// attaches a second connection with the same id and password and closes
    /// the session. The server closes the client's connection when the second
    /// one attaches, and a client that reconnects at once takes the session
    /// back, closing the second connection in turn: the closeSession or its
    /// reply is then lost, so this attaches again (for up to 30 s) until the
    /// session is closed or the server says it is gone (seen under load: a
    /// lock-contract expiry test failed with `UnexpectedEof`).
    ///
    /// # Errors
    ///
    /// Apache: the connection or closeSession error (for a connection the
    /// server closed: the last one, when the session could not be closed
    /// within 30 s); `NotFound` when the embedded server does not know the
    /// session.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// let (_c, resp) = zk_testing::raw::RawConnection::connect(&s.connect_string(), 4000, None).unwrap();
    /// s.expire_session(resp.session_id, &resp.passwd).unwrap();
    /// ```
    pub fn expire_session(&self, session_id: i64, password: &[u8]) -> io::Result<()> {
        match &self.inner {
            Inner::Embedded(s) => {
                if s.expire_session(session_id) {
                    Ok(())
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("no session 0x{session_id:x}"),
                    ))
                }
            }
            Inner::Apache(_) => {
                let plain = self.plain_connect_string().unwrap_or_else(|| self.connect_string());
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let err = match RawConnection::connect(&plain, 30_000, Some((session_id, password))) {
                        // The server does not know the session: expired, or
                        // closed by an earlier round whose reply was lost.
                        Ok((_, resp)) if resp.timeout <= 0 => return Ok(()),
                        Ok((mut c, _)) => match c.close_session() {
                            Ok(_) => return Ok(()),
                            Err(e) => e,
                        },
                        Err(e) => e,
                    };
                    // Only a connection the server closed or dropped under us
                    // is the race above; anything else (no server) fails at
                    // once. A connection the server dropped can also stay open
                    // unanswered: its read times out (`WouldBlock`, 2 of 50
                    // loaded runs of the eager-client conformance test), and
                    // that is the same race, tried again within the deadline.
                    let closed = matches!(
                        err.kind(),
                        io::ErrorKind::UnexpectedEof
                            | io::ErrorKind::ConnectionReset
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::BrokenPipe
                            | io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                    );
                    if !closed || Instant::now() >= deadline {
                        return Err(err);
                    }
                    log::debug!("closing session {session_id:#x}: {err}; its client took it back? again");
                }
            }
        }
    }

    /// Closes every client connection; sessions survive (embedded only).
    ///
    /// # Errors
    ///
    /// `Unsupported` on Apache.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// s.drop_connections().unwrap();
    /// ```
    pub fn drop_connections(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Embedded(s) => {
                s.drop_connections();
                Ok(())
            }
            Inner::Apache(_) => Err(unsupported("drop_connections")),
        }
    }

    /// Stops answering (connections stay open, clients time out). Apache:
    /// SIGSTOP.
    ///
    /// # Errors
    ///
    /// Signalling the process fails.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// s.pause().unwrap();
    /// s.resume().unwrap();
    /// ```
    pub fn pause(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Embedded(s) => {
                s.pause();
                Ok(())
            }
            Inner::Apache(s) => s.lock().pause(),
        }
    }

    /// Ends a [`TestingServer::pause`]. Apache: SIGCONT.
    ///
    /// # Errors
    ///
    /// Signalling the process fails.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// s.resume().unwrap();
    /// ```
    pub fn resume(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Embedded(s) => {
                s.resume();
                Ok(())
            }
            Inner::Apache(s) => s.lock().resume(),
        }
    }

    /// Sends a four-letter word and returns the text.
    ///
    /// # Errors
    ///
    /// Connection or read failures; `Unsupported` on an embedded TLS server (it
    /// has no plain port).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded).unwrap();
    /// assert_eq!(s.four_letter_word("ruok").unwrap(), "imok");
    /// ```
    pub fn four_letter_word(&self, cmd: &str) -> io::Result<String> {
        let plain = self
            .plain_connect_string()
            .ok_or_else(|| unsupported_tls("four-letter words"))?;
        crate::fourlw::four_letter_word(&plain, cmd, Duration::from_secs(5))
    }
}
