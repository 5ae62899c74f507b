//! The ensemble's configuration on [`CuratorFramework`]: read it (with or
//! without a watch) and change it, on the absolute path `/zookeeper/config`
//! (the namespace never applies to it).

use super::handle::CuratorFramework;
#[cfg(doc)]
use crate::client::Client;
use crate::client::{Reconfig, Watcher};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use zk_proto::config::EnsembleConfig;
use zk_proto::Stat;

/// Dynamic reconfiguration (ZooKeeper 3.5+).
impl CuratorFramework {
    /// The ensemble's configuration and the Stat of `/zookeeper/config`
    /// (Curator's `getConfig().forEnsemble()`), with retries. The namespace
    /// (and the connect string's chroot) never applies to the node. See
    /// [`Client::get_config`]: a follower may answer with an older
    /// configuration than the leader's; sync first
    /// (`zookeeper_client().sync("/")`) to read the newest.
    ///
    /// # Errors
    ///
    /// As [`Client::get_config`] ([`Error::Config`] on a standalone
    /// server, which has no dynamic configuration), or the last retryable
    /// error when retries are exhausted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("app").build()?;
    /// let (config, _stat) = c.get_config()?; // /zookeeper/config, not /app/zookeeper/config
    /// println!("{} members at version {:x}", config.members().len(), config.version());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_config(&self) -> Result<(EnsembleConfig, Stat)> {
        self.retry(|c| c.get_config())
    }

    /// As [`get_config`](Self::get_config), leaving a one-shot data watch on
    /// `/zookeeper/config`: it fires NodeDataChanged at the next reconfig,
    /// with the path `/zookeeper/config` (the namespace is not taken off).
    ///
    /// # Errors
    ///
    /// As [`get_config`](Self::get_config).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded::<zk_framework::WatchedEvent>(1);
    /// let (config, _) = c.get_config_w(tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_config_w(&self, watcher: impl Watcher) -> Result<(EnsembleConfig, Stat)> {
        let slot = self.watch_slot_absolute(watcher);
        self.retry(|c| c.get_config_w(slot.attempt()))
    }

    /// Changes the ensemble's membership (Curator's `reconfig()`) and
    /// returns the new configuration; see [`Client::reconfig`] for what the
    /// servers and the caller need (a super user: the builder's
    /// `authorization("digest", b"super:...")`).
    ///
    /// An unconditional change ([`Reconfig::from_config`] -1) goes through
    /// the retry loop: sent again after a connection loss, it makes the same
    /// membership (an id added is replaced by the same entry, an id removed
    /// stays removed). A conditional one is sent once, as
    /// [`multi_results`](Self::multi_results) is: had a first attempt been
    /// made before the connection broke, a second would be refused with
    /// `BadVersion` though the change was made; its
    /// [`Error::ConnectionLoss`] says the outcome is unknown (read the
    /// configuration to know). Bounded by this handle's deadline.
    ///
    /// # Errors
    ///
    /// As [`Client::reconfig`]; for an unconditional change, the last
    /// retryable error when retries are exhausted.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{CuratorFramework, Reconfig};
    /// let c = CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .authorization("digest", b"super:test")
    ///     .build()?;
    /// let (config, _) = c.reconfig(Reconfig::new().remove([3]))?;
    /// assert!(config.member(3).is_none());
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn reconfig(&self, change: Reconfig) -> Result<(EnsembleConfig, Stat)> {
        if change.is_conditional() {
            return self.zookeeper_client().with_deadline(self.deadline).reconfig(change);
        }
        self.retry(|c| c.reconfig(change.clone()))
    }
}
