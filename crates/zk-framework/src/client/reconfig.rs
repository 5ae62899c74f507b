//! Dynamic reconfiguration (ZooKeeper 3.5+): reading the ensemble's
//! configuration (`/zookeeper/config`, never chrooted) and changing it
//! (`reconfig`, opcode 16), with the [`Reconfig`] builder.

use super::handle::Client;
use super::types::{WatchedEvent, Watcher};
use super::watches::{WatchMode, WatchReg};
use crate::error::{Error, Result};
use zk_proto::config::{EnsembleConfig, CONFIG_NODE};
use zk_proto::jute::Decode;
use zk_proto::{GetDataResponse, OpCode, PathWatchRequest, ReconfigRequest, Stat};

/// A change of the ensemble's membership, for [`Client::reconfig`] and
/// [`CuratorFramework::reconfig`](crate::CuratorFramework::reconfig).
///
/// Either incremental, [`add`](Reconfig::add) (servers joining, or existing
/// ids changed: each entry `server.<id>=host:quorumPort:electionPort[:role];[clientHost:]clientPort`,
/// the client port required) and/or [`remove`](Reconfig::remove) (ids
/// leaving); or non-incremental, [`members`](Reconfig::members) (the whole
/// new member list). [`from_config`](Reconfig::from_config) makes the change
/// conditional on the configuration's current version (its `version=` value,
/// [`EnsembleConfig::version`]): -1, the default, for none.
///
/// The entries are sent as given (joined by `,`); the server checks them
/// (`BadArguments` when one is not a member or lacks a client port).
/// [`Member`](zk_proto::config::Member)'s `to_string()` is such an entry.
///
/// # Examples
///
/// ```
/// use zk_framework::Reconfig;
/// let change = Reconfig::new()
///     .add(["server.4=127.0.0.1:2890:3890:participant;127.0.0.1:2184"])
///     .remove([1])
///     .from_config(0x1_0000_0000);
/// assert_eq!(change.version(), 0x1_0000_0000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a Reconfig does nothing until it is given to reconfig"]
pub struct Reconfig {
    joining: Vec<String>,
    leaving: Vec<u64>,
    members: Option<Vec<String>>,
    from_config: i64,
}

impl Default for Reconfig {
    fn default() -> Self {
        Reconfig::new()
    }
}

impl Reconfig {
    /// An empty change, unconditional (`from_config` -1).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::Reconfig::new().version(), -1);
    /// ```
    pub fn new() -> Reconfig {
        Reconfig {
            joining: Vec::new(),
            leaving: Vec::new(),
            members: None,
            from_config: -1,
        }
    }

    /// Servers to add, or to change (an entry whose id is a member replaces
    /// it: how a role or an address changes), as `server.<id>=<member>`
    /// entries with a client port. Adds to what earlier calls gave.
    ///
    /// # Examples
    ///
    /// ```
    /// let change = zk_framework::Reconfig::new().add(["server.5=10.0.0.5:2888:3888:observer;2181"]);
    /// # let _ = change;
    /// ```
    // zkCli's `reconfig -add`: a builder step, not arithmetic.
    #[allow(clippy::should_implement_trait)]
    pub fn add<S: Into<String>>(mut self, servers: impl IntoIterator<Item = S>) -> Reconfig {
        self.joining.extend(servers.into_iter().map(Into::into));
        self
    }

    /// Server ids to remove. Adds to what earlier calls gave.
    ///
    /// # Examples
    ///
    /// ```
    /// let change = zk_framework::Reconfig::new().remove([2, 3]);
    /// # let _ = change;
    /// ```
    pub fn remove(mut self, ids: impl IntoIterator<Item = u64>) -> Reconfig {
        self.leaving.extend(ids);
        self
    }

    /// The whole new member list (a non-incremental change): every
    /// `server.<id>=<member>` entry of the new configuration. Adds to what
    /// earlier calls gave. Cannot be combined with [`add`](Reconfig::add) or
    /// [`remove`](Reconfig::remove).
    ///
    /// # Examples
    ///
    /// ```
    /// let change = zk_framework::Reconfig::new().members([
    ///     "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181",
    ///     "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182",
    /// ]);
    /// # let _ = change;
    /// ```
    pub fn members<S: Into<String>>(mut self, servers: impl IntoIterator<Item = S>) -> Reconfig {
        self.members
            .get_or_insert_with(Vec::new)
            .extend(servers.into_iter().map(Into::into));
        self
    }

    /// Applies the change only if the configuration's version is still
    /// `version` (the `version=` value of `/zookeeper/config`,
    /// [`EnsembleConfig::version`]); -1 for no check. Versions are zxids, so
    /// every real one fits in an `i64`.
    ///
    /// # Examples
    ///
    /// ```
    /// let change = zk_framework::Reconfig::new().remove([3]).from_config(0x2_0000_0004);
    /// assert_eq!(change.version(), 0x2_0000_0004);
    /// ```
    pub fn from_config(mut self, version: i64) -> Reconfig {
        self.from_config = version;
        self
    }

    /// The version the change is conditional on (-1: none).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zk_framework::Reconfig::new().from_config(7).version(), 7);
    /// ```
    pub fn version(&self) -> i64 {
        self.from_config
    }

    /// Whether the change is conditional on a version (so that a copy of it
    /// sent twice could be refused with `BadVersion` when the first was
    /// applied).
    pub(crate) fn is_conditional(&self) -> bool {
        self.from_config != -1
    }

    /// The request, or why it cannot be sent.
    pub(crate) fn request(&self) -> Result<ReconfigRequest> {
        let bad = |why: &str| Err(Error::InvalidArgument(format!("reconfig: {why}")));
        if self.from_config < -1 {
            return bad("from_config must be a configuration version or -1");
        }
        let join = |v: &[String]| (!v.is_empty()).then(|| v.join(","));
        match &self.members {
            Some(_) if !self.joining.is_empty() || !self.leaving.is_empty() => {
                bad("a new member list (members) cannot be combined with add or remove")
            }
            Some(m) if m.is_empty() => bad("an empty member list"),
            Some(m) => Ok(ReconfigRequest {
                joining_servers: None,
                leaving_servers: None,
                new_members: join(m),
                cur_config_id: self.from_config,
            }),
            None if self.joining.is_empty() && self.leaving.is_empty() => bad("nothing to add, remove or set"),
            None => Ok(ReconfigRequest {
                joining_servers: join(&self.joining),
                leaving_servers: (!self.leaving.is_empty())
                    .then(|| self.leaving.iter().map(u64::to_string).collect::<Vec<_>>().join(",")),
                new_members: None,
                cur_config_id: self.from_config,
            }),
        }
    }
}

/// The user's watcher of the configuration node: its events name the node by
/// its absolute path, whatever the chroot (a client chrooted at `/zookeeper`
/// would otherwise be told `/config`).
struct ConfigWatcher(Box<dyn Watcher>);

impl Watcher for ConfigWatcher {
    fn process(self: Box<Self>, mut event: WatchedEvent) {
        if event.path.is_some() {
            event.path = Some(CONFIG_NODE.to_string());
        }
        self.0.process(event)
    }

    fn only_signals(&self) -> bool {
        self.0.only_signals()
    }
}

/// Parses a configuration the server sent.
fn parse(r: GetDataResponse) -> Result<(EnsembleConfig, Stat)> {
    let config = EnsembleConfig::parse(&r.data).map_err(Error::Config)?;
    Ok((config, r.stat))
}

impl Client {
    fn get_config_inner(&self, watcher: Option<Box<dyn Watcher>>) -> Result<(EnsembleConfig, Stat)> {
        let watch = watcher.map(|w| WatchReg {
            mode: WatchMode::Data,
            server_path: CONFIG_NODE.to_string(),
            watcher: Box::new(ConfigWatcher(w)),
        });
        let req = PathWatchRequest {
            path: CONFIG_NODE.to_string(),
            watch: watch.is_some(),
        };
        let reply = self.send(OpCode::GetData, &req, watch)?;
        parse(self.finish(reply, CONFIG_NODE, GetDataResponse::decode)?)
    }

    /// The ensemble's configuration: `/zookeeper/config` read (getData) and
    /// parsed, with the node's Stat. The path is absolute: the chroot of the
    /// connect string never applies to it.
    ///
    /// The configuration's version is [`EnsembleConfig::version`] (the
    /// `version=` line, equal to `Stat.mzxid`), not `Stat.version`, which a
    /// reconfig leaves at -1. A follower may answer with a configuration
    /// older than the leader's: call [`Client::sync`] first to read the
    /// newest.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the data is not a configuration:
    /// [`ConfigError::Empty`](zk_proto::config::ConfigError::Empty) on a
    /// standalone server (it has none), another
    /// [`ConfigError`](zk_proto::config::ConfigError) for data that does not
    /// parse; the connection errors of [`Client`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// let zk = Client::connect("127.0.0.1:2181/app", ClientConfig::default())?;
    /// zk.sync("/")?;
    /// let (config, stat) = zk.get_config()?;
    /// for m in config.members() {
    ///     println!("server.{} {:?} clients at {:?}", m.id, m.role, m.client);
    /// }
    /// assert_eq!(config.version() as i64, stat.mzxid);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_config(&self) -> Result<(EnsembleConfig, Stat)> {
        self.get_config_inner(None)
    }

    /// As [`Client::get_config`], leaving a one-shot data watch on
    /// `/zookeeper/config` (only on success): it fires NodeDataChanged at the
    /// next reconfig, with the path `/zookeeper/config` whatever the chroot.
    /// While the leader is being replaced the connection may be lost
    /// instead; the watch is set again on the next connection, as every
    /// watch is.
    ///
    /// # Errors
    ///
    /// As [`Client::get_config`]; a watch is left when the read succeeded,
    /// even if the data did not parse ([`Error::Config`]), as the server set
    /// it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
    /// let (config, _) = zk.get_config_w(tx)?;
    /// let changed = rx.recv().unwrap();
    /// assert_eq!(changed.path.as_deref(), Some("/zookeeper/config"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_config_w(&self, watcher: impl Watcher) -> Result<(EnsembleConfig, Stat)> {
        self.get_config_inner(Some(Box::new(watcher)))
    }

    /// Changes the ensemble's membership (reconfig, opcode 16) and returns
    /// the new configuration and the Stat of `/zookeeper/config`.
    ///
    /// The servers need `reconfigEnabled=true`, and the caller WRITE on
    /// `/zookeeper/config`: a super user (`addauth digest super:...` with the
    /// server's `superDigest`), or a server with `skipACL=yes`. A change
    /// that removes the leader makes it give up leadership: every client of
    /// the ensemble loses its connection for an election, and the call may
    /// fail with [`Error::ConnectionLoss`] though the change was made (read
    /// the configuration again to know).
    ///
    /// # Errors
    ///
    /// Before anything is sent, [`Error::InvalidArgument`]: nothing to
    /// change, [`Reconfig::members`] combined with add or remove, an empty
    /// member list, a version below -1. From the server, in the order it
    /// checks: `Error::Keeper { code: ReconfigDisabled }` (-123, the server
    /// has `reconfigEnabled=false`), `Keeper { code: Unimplemented }` (a
    /// standalone server), `Keeper { code: ReconfigInProgress }` (-14,
    /// another change is being made), [`Error::BadVersion`] (the
    /// configuration is no longer at [`Reconfig::from_config`]'s version),
    /// [`Error::BadArguments`] (an entry that is not a member or has no
    /// client port, or too few voters left), `Keeper { code:
    /// NewConfigNoQuorum }` (-13, a quorum of the new configuration is not
    /// connected and in sync with the leader), [`Error::NoAuth`] (the caller
    /// may not write `/zookeeper/config`); every error names the path
    /// `/zookeeper/config`. [`Error::Config`] if the server's answer does not
    /// parse (the change was made). The connection errors of [`Client`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig, Error, Reconfig};
    /// use zk_framework::proto::ErrorCode;
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.add_auth("digest", b"super:test")?;
    /// let (current, _) = zk.get_config()?;
    /// let change = Reconfig::new()
    ///     .add(["server.4=127.0.0.1:2890:3890:participant;127.0.0.1:2184"])
    ///     .from_config(current.version() as i64);
    /// match zk.reconfig(change) {
    ///     Ok((new, _stat)) => assert!(new.member(4).is_some()),
    ///     Err(Error::BadVersion { .. }) => println!("someone changed it first"),
    ///     Err(e) if e.code() == Some(ErrorCode::ReconfigDisabled) => println!("the servers do not allow it"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn reconfig(&self, change: Reconfig) -> Result<(EnsembleConfig, Stat)> {
        let req = change.request()?;
        let reply = self.send(OpCode::Reconfig, &req, None)?;
        parse(self.finish(reply, CONFIG_NODE, GetDataResponse::decode)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_makes_the_request_with_null_for_what_is_absent() {
        let r = Reconfig::new()
            .add(["server.4=a:1:2;3", "server.5=b:1:2;3"])
            .remove([1, 2])
            .remove([7])
            .request()
            .unwrap();
        assert_eq!(
            r,
            ReconfigRequest {
                joining_servers: Some("server.4=a:1:2;3,server.5=b:1:2;3".into()),
                leaving_servers: Some("1,2,7".into()),
                new_members: None,
                cur_config_id: -1
            }
        );
        let r = Reconfig::new().remove([3]).from_config(0x100000005).request().unwrap();
        assert_eq!((r.joining_servers, r.new_members), (None, None));
        assert_eq!(r.cur_config_id, 0x100000005);
        let r = Reconfig::new()
            .members(["server.1=a:1:2;3"])
            .members(["server.2=b:1:2;3"])
            .request()
            .unwrap();
        assert_eq!(r.new_members.as_deref(), Some("server.1=a:1:2;3,server.2=b:1:2;3"));
        assert_eq!((r.joining_servers, r.leaving_servers), (None, None));
        assert_eq!(Reconfig::default(), Reconfig::new());
    }

    #[test]
    fn a_change_that_cannot_be_sent_is_refused_before_it_is() {
        for change in [
            Reconfig::new(),
            Reconfig::new().add(Vec::<String>::new()),
            Reconfig::new().members(Vec::<String>::new()),
            Reconfig::new().members(["server.1=a:1:2;3"]).add(["server.2=a:1:2;3"]),
            Reconfig::new().members(["server.1=a:1:2;3"]).remove([1]),
            Reconfig::new().remove([1]).from_config(-2),
        ] {
            assert!(matches!(change.request(), Err(Error::InvalidArgument(_))), "{change:?}");
        }
        assert!(Reconfig::new().remove([1]).from_config(0).is_conditional());
        // The server's refusals of a reconfig: typed by their code, none retried.
        for code in [
            zk_proto::ErrorCode::ReconfigDisabled,
            zk_proto::ErrorCode::ReconfigInProgress,
            zk_proto::ErrorCode::NewConfigNoQuorum,
            zk_proto::ErrorCode::BadVersion,
            zk_proto::ErrorCode::NoAuth,
        ] {
            let e = Error::from_code(code, CONFIG_NODE);
            assert_eq!(e.code(), Some(code));
            assert!(!e.is_retryable() && !e.may_have_applied(), "{e}");
        }
        let e = Error::Config(zk_proto::config::ConfigError::Empty);
        assert!(!e.is_retryable() && e.code().is_none());
        assert!(e.to_string().starts_with("ensemble configuration: empty"), "{e}");
        assert!(!Reconfig::new().remove([1]).is_conditional());
    }
}
