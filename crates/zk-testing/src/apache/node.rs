//! One ZooKeeper JVM: its files and its process (spawn, wait for a mode, stop, kill, signal).

use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::config::ApacheConfig;
use super::files::{log_len, read_log_from, tail_lines};
use super::install::{find_java, JAVA_LIB, NETTY_JARS, SERVER_JARS};
use super::probe::{srvr_mode, POLL_INTERVAL};
use super::process::{send_signal, wait_all_threads_stopped, wait_port_free};

/// How long a SIGTERMed JVM gets to exit before it is SIGKILLed.
const STOP_GRACE: Duration = Duration::from_secs(15);

/// One ZooKeeper JVM: its files, its port and (while it runs) its process.
#[derive(Debug)]
pub(super) struct Node {
    pub(super) dir: PathBuf,
    pub(super) data_dir: PathBuf,
    cfg_path: PathBuf,
    pub(super) log_path: PathBuf,
    pub(super) client_port: u16,
    main_class: &'static str,
    config: ApacheConfig,
    java: PathBuf,
    child: Mutex<Option<Child>>,
}

impl Node {
    /// Creates the directory layout and writes `zoo.cfg` (`cfg` gets the common lines first,
    /// then `extra_cfg`). Does not start the process.
    pub(super) fn create(
        dir: PathBuf,
        client_port: u16,
        main_class: &'static str,
        config: &ApacheConfig,
        extra_cfg: &str,
        myid: Option<usize>,
    ) -> io::Result<Node> {
        let data_dir = dir.join("data");
        let mut cfg = config.common_cfg(&data_dir, client_port);
        cfg.push_str(extra_cfg);
        Self::create_with_cfg(dir, client_port, main_class, config, &cfg, myid)
    }

    /// As [`create`](Self::create), with the whole `zoo.cfg` given (`cfg`; its `dataDir`
    /// must be `dir/data`), for servers whose client port is not the static `clientPort`
    /// (a reconfigurable ensemble's, in its dynamic configuration file).
    pub(super) fn create_with_cfg(
        dir: PathBuf,
        client_port: u16,
        main_class: &'static str,
        config: &ApacheConfig,
        cfg: &str,
        myid: Option<usize>,
    ) -> io::Result<Node> {
        let java = find_java()
            .ok_or_else(|| io::Error::new(ErrorKind::NotFound, "no `java` executable on PATH or in $JAVA_HOME/bin"))?;
        let zk_jar = Path::new(JAVA_LIB).join("zookeeper.jar");
        if !zk_jar.is_file() {
            return Err(io::Error::new(
                ErrorKind::NotFound,
                format!("{} not found (install Debian's `zookeeper` package)", zk_jar.display()),
            ));
        }
        let data_dir = dir.join("data");
        fs::create_dir_all(&data_dir)?;
        if let Some(id) = myid {
            fs::write(data_dir.join("myid"), format!("{id}\n"))?;
        }
        let cfg_path = dir.join("zoo.cfg");
        fs::write(&cfg_path, cfg)?;
        Ok(Node {
            log_path: dir.join("server.log"),
            dir,
            data_dir,
            cfg_path,
            client_port,
            main_class,
            config: config.clone(),
            java,
            child: Mutex::new(None),
        })
    }

    pub(super) fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    pub(super) fn classpath(netty: bool) -> String {
        let netty_jars: &[&str] = if netty { NETTY_JARS } else { &[] };
        let jars: Vec<String> = SERVER_JARS
            .iter()
            .chain(netty_jars)
            .map(|j| Path::new(JAVA_LIB).join(j))
            .filter(|p| p.is_file())
            .map(|p| p.display().to_string())
            .collect();
        jars.join(":")
    }

    /// Spawns the JVM (if it is not running already). Returns the log length before the spawn,
    /// so that errors can quote only what this run logged.
    pub(super) fn spawn(&self) -> io::Result<u64> {
        let mut guard = self.child.lock();
        if let Some(child) = guard.as_mut() {
            if child.try_wait()?.is_none() {
                return Ok(log_len(&self.log_path));
            }
            *guard = None;
        }
        let log = OpenOptions::new().create(true).append(true).open(&self.log_path)?;
        let log_offset = log.metadata().map(|m| m.len()).unwrap_or(0);
        let log_err = log.try_clone()?;
        let c = &self.config;
        let mut cmd = Command::new(&self.java);
        cmd.arg(format!("-Xmx{}", c.heap))
            .arg("-XX:+UseSerialGC")
            .arg("-XX:TieredStopAtLevel=1")
            .arg("-Djava.net.preferIPv4Stack=true")
            .arg("-Dzookeeper.snapshot.trust.empty=true")
            .arg("-Dzookeeper.forceSync=no")
            .arg("-Dzookeeper.preAllocSize=1024")
            .arg("-Dzookeeper.admin.enableServer=false")
            .arg(format!(
                "-Dznode.container.checkIntervalMs={}",
                c.container_check_interval_ms
            ))
            .arg("-Dorg.slf4j.simpleLogger.showDateTime=true")
            .arg("-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS");
        if c.extended_types {
            cmd.arg("-Dzookeeper.extendedTypesEnabled=true");
        }
        if let Some(d) = &c.super_digest {
            cmd.arg(format!("-Dzookeeper.DigestAuthenticationProvider.superDigest={d}"));
        }
        if let Some(u) = &c.x509_super_user {
            cmd.arg(format!("-Dzookeeper.X509AuthenticationProvider.superUser={u}"));
        }
        if let Some(sasl) = &c.sasl {
            cmd.args(sasl.write_jvm_flags(&self.dir)?);
        }
        cmd.arg("-cp")
            .arg(Self::classpath(c.tls.is_some()))
            .arg(self.main_class)
            .arg(&self.cfg_path)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let child = cmd.spawn()?;
        log::debug!(
            "started ZooKeeper pid {} on port {} in {}",
            child.id(),
            self.client_port,
            self.dir.display()
        );
        *guard = Some(child);
        Ok(log_offset)
    }

    pub(super) fn pid(&self) -> Option<u32> {
        let mut guard = self.child.lock();
        let child = guard.as_mut()?;
        match child.try_wait() {
            Ok(None) => Some(child.id()),
            _ => None,
        }
    }

    pub(super) fn is_running(&self) -> bool {
        self.pid().is_some()
    }

    /// Returns `Some(exit description)` if the process was started and has exited.
    pub(super) fn exited(&self) -> Option<String> {
        let mut guard = self.child.lock();
        let child = guard.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown status ({e})")),
        }
    }

    /// SIGKILL, then reap. A no-op if the process is not running.
    pub(super) fn kill(&self) -> io::Result<()> {
        let mut guard = self.child.lock();
        if let Some(mut child) = guard.take() {
            if child.try_wait()?.is_none() {
                // A paused (SIGSTOPped) JVM dies on SIGKILL too.
                match child.kill() {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::InvalidInput => {} // already exited
                    Err(e) => {
                        *guard = Some(child);
                        return Err(e);
                    }
                }
            }
            child.wait()?;
        }
        Ok(())
    }

    /// SIGTERM, wait up to [`STOP_GRACE`] for the exit, then SIGKILL. A no-op if the process is
    /// not running.
    pub(super) fn stop(&self) -> io::Result<()> {
        let mut guard = self.child.lock();
        let Some(mut child) = guard.take() else {
            return Ok(());
        };
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        // A paused JVM cannot handle SIGTERM: let it continue first.
        let _ = send_signal(child.id(), "CONT");
        if send_signal(child.id(), "TERM").is_ok() {
            let deadline = Instant::now() + STOP_GRACE;
            while Instant::now() < deadline {
                if child.try_wait()?.is_some() {
                    return Ok(());
                }
                thread::sleep(Duration::from_millis(50));
            }
            log::warn!(
                "ZooKeeper pid {} ignored SIGTERM for {:?}; killing it",
                child.id(),
                STOP_GRACE
            );
        }
        let _ = child.kill();
        child.wait()?;
        Ok(())
    }

    pub(super) fn signal(&self, sig: &str) -> io::Result<()> {
        let pid = self
            .pid()
            .ok_or_else(|| io::Error::new(ErrorKind::NotConnected, "the ZooKeeper server is not running"))?;
        send_signal(pid, sig)?;
        if sig == "STOP" {
            // kill(2) returns before every thread has stopped: wait until they all have, so
            // that the caller can rely on the server answering nothing from now on.
            wait_all_threads_stopped(pid, Instant::now() + Duration::from_secs(10));
        }
        Ok(())
    }

    /// The `Mode:` value of `srvr`, if the server answers and is serving.
    pub(super) fn mode(&self) -> Option<String> {
        srvr_mode(&self.addr())
    }

    /// Spawns the JVM and waits until `srvr` shows one of `modes`. If the JVM exits early
    /// because its ports are still taken, tries again until `deadline`.
    pub(super) fn start_and_wait(&self, modes: &[&str], deadline: Instant) -> io::Result<()> {
        loop {
            wait_port_free(self.client_port, deadline);
            let log_offset = self.spawn()?;
            match self.wait_mode(modes, deadline, log_offset) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    let exited = self.exited().is_some();
                    let new_log = read_log_from(&self.log_path, log_offset);
                    if exited
                        && new_log.contains("Address already in use")
                        && Instant::now() + Duration::from_secs(1) < deadline
                    {
                        log::info!(
                            "ZooKeeper on port {} hit a port still in use; retrying",
                            self.client_port
                        );
                        self.kill()?;
                        thread::sleep(Duration::from_millis(250));
                        continue;
                    }
                    let _ = self.kill();
                    return Err(e);
                }
            }
        }
    }

    /// Polls `srvr` until its `Mode:` is one of `modes`, the process exits, or `deadline`.
    pub(super) fn wait_mode(&self, modes: &[&str], deadline: Instant, log_offset: u64) -> io::Result<()> {
        let mut last = None;
        loop {
            if let Some(mode) = self.mode() {
                if modes.contains(&mode.as_str()) {
                    return Ok(());
                }
                last = Some(mode);
            }
            if let Some(status) = self.exited() {
                return Err(self.error(
                    ErrorKind::Other,
                    &format!("exited ({status}) before serving"),
                    log_offset,
                ));
            }
            if Instant::now() >= deadline {
                return Err(self.error(
                    ErrorKind::TimedOut,
                    &format!(
                        "did not reach mode {modes:?} in time (last mode: {})",
                        last.as_deref().unwrap_or("none")
                    ),
                    log_offset,
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    pub(super) fn error(&self, kind: ErrorKind, what: &str, log_offset: u64) -> io::Error {
        let log = read_log_from(&self.log_path, log_offset);
        let tail = tail_lines(&log, 40);
        let mut msg = format!(
            "ZooKeeper ({}) on 127.0.0.1:{} {what}; log {} (removed on drop unless ZK_TEST_KEEP_DIRS is set)",
            self.main_class.rsplit('.').next().unwrap_or(self.main_class),
            self.client_port,
            self.log_path.display()
        );
        if !tail.is_empty() {
            let _ = write!(msg, ", last lines:\n{tail}");
        }
        io::Error::new(kind, msg)
    }
}
