//! The operations on nodes: create, read, write, delete, list, ACLs and sync,
//! each one request and its reply.

use std::time::Duration;

use super::handle::Client;
use super::inner::Reply;
use super::request::check_ttl;
use super::types::Watcher;
use super::watches::{WatchMode, WatchReg};
use crate::error::{Error, Result};
use zk_proto::jute::Decode;
use zk_proto::{
    Acl, CreateMode, CreateRequestRef, CreateTtlRequestRef, DeleteRequest, ErrorCode, GetAclResponse,
    GetChildren2Response, GetChildrenResponse, GetDataResponse, OpCode, PathRecord, PathWatchRequest, SetAclRequestRef,
    SetDataRequestRef, Stat,
};

impl Client {
    /// Creates a node and returns its actual path (with the sequence suffix for
    /// sequential modes), relative to the chroot.
    ///
    /// `Container` goes out as createContainer (opcode 19); other non-TTL modes as
    /// create (opcode 1). TTL modes need [`Client::create_ttl`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] (a trailing `/` is allowed for sequential modes),
    /// [`Error::DataTooLarge`], [`Error::InvalidArgument`] for a TTL mode,
    /// [`Error::InvalidAcl`] for an empty ACL (nothing sent); from the server
    /// [`Error::NodeExists`], [`Error::NoNode`] (no parent),
    /// [`Error::NoChildrenForEphemerals`], [`Error::NoAuth`], ...; and the
    /// connection errors of [`Client`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let p = zk.create("/queue/item-", b"x", &Acl::open_unsafe(), CreateMode::PersistentSequential)?;
    /// assert!(p.starts_with("/queue/item-"));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn create(&self, path: &str, data: &[u8], acl: &[Acl], mode: CreateMode) -> Result<String> {
        if mode.is_ttl() {
            return Err(Error::InvalidArgument(format!("{mode:?} needs create_ttl")));
        }
        let sp = self.server_path(path, mode.is_sequential())?;
        self.check_data(data)?;
        Self::check_acl(acl, path)?;
        let container = mode.is_container();
        let req = CreateRequestRef {
            path: &sp,
            data,
            acl,
            flags: mode.code(),
        };
        let op = if container {
            OpCode::CreateContainer
        } else {
            OpCode::Create
        };
        let reply = self.send(op, &req, None)?;
        let created = self.finish(reply, path, |r| {
            if container {
                zk_proto::Create2Response::decode(r).map(|c| c.path)
            } else {
                String::decode(r)
            }
        })?;
        Ok(self.inner().client_path(&created))
    }

    /// Creates a node and returns its actual path and its Stat (create2, opcode
    /// 15; containers use createContainer, opcode 19).
    ///
    /// # Errors
    ///
    /// As [`Client::create`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zk_framework::{Client, ClientConfig};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (path, stat) = zk.create2("/a", b"", &Acl::open_unsafe(), CreateMode::Persistent)?;
    /// assert_eq!(stat.version, 0);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn create2(&self, path: &str, data: &[u8], acl: &[Acl], mode: CreateMode) -> Result<(String, Stat)> {
        if mode.is_ttl() {
            return Err(Error::InvalidArgument(format!("{mode:?} needs create_ttl")));
        }
        let sp = self.server_path(path, mode.is_sequential())?;
        self.check_data(data)?;
        Self::check_acl(acl, path)?;
        let req = CreateRequestRef {
            path: &sp,
            data,
            acl,
            flags: mode.code(),
        };
        let op = if mode.is_container() {
            OpCode::CreateContainer
        } else {
            OpCode::Create2
        };
        let reply = self.send(op, &req, None)?;
        let c = self.finish(reply, path, zk_proto::Create2Response::decode)?;
        Ok((self.inner().client_path(&c.path), c.stat))
    }

    /// Creates a TTL node (createTTL, opcode 21): `mode` must be
    /// `PersistentWithTtl` or `PersistentSequentialWithTtl`. The server must have
    /// TTL nodes enabled (`zookeeper.extendedTypesEnabled`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a non-TTL mode or a TTL outside
    /// 1 ms ..= 2^40 − 1 ms; `Keeper { Unimplemented }` when the server has TTLs
    /// disabled; otherwise as [`Client::create`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use zk_framework::{Client, ClientConfig};
    /// use zk_framework::proto::{Acl, CreateMode};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (path, _stat) =
    ///     zk.create_ttl("/t", b"", &Acl::open_unsafe(), CreateMode::PersistentWithTtl, Duration::from_secs(60))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn create_ttl(
        &self,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        mode: CreateMode,
        ttl: Duration,
    ) -> Result<(String, Stat)> {
        let ttl = check_ttl(mode, Some(ttl))?.expect("TTL mode");
        let sp = self.server_path(path, mode.is_sequential())?;
        self.check_data(data)?;
        Self::check_acl(acl, path)?;
        let req = CreateTtlRequestRef {
            path: &sp,
            data,
            acl,
            flags: mode.code(),
            ttl,
        };
        let reply = self.send(OpCode::CreateTtl, &req, None)?;
        let c = self.finish(reply, path, zk_proto::Create2Response::decode)?;
        Ok((self.inner().client_path(&c.path), c.stat))
    }

    /// Deletes a node; `version` `None` deletes any version.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`]; from the server [`Error::NoNode`],
    /// [`Error::BadVersion`], [`Error::NotEmpty`], [`Error::NoAuth`],
    /// [`Error::BadArguments`] (`/`, `/zookeeper`); connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.delete("/a", None)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        let sp = self.server_path(path, false)?;
        let reply = self.send(
            OpCode::Delete,
            &DeleteRequest {
                path: sp,
                version: version.unwrap_or(-1),
            },
            None,
        )?;
        self.finish(reply, path, |_| Ok(()))
    }

    fn exists_inner(&self, path: &str, watcher: Option<Box<dyn Watcher>>) -> Result<Option<Stat>> {
        let sp = self.server_path(path, false)?;
        let watch = watcher.map(|w| WatchReg {
            mode: WatchMode::Exists,
            server_path: sp.clone(),
            watcher: w,
        });
        let req = PathWatchRequest {
            path: sp,
            watch: watch.is_some(),
        };
        let reply = self.send(OpCode::Exists, &req, watch)?;
        if reply.header.err == ErrorCode::NoNode.code() {
            return Ok(None);
        }
        self.finish(reply, path, Stat::decode).map(Some)
    }

    /// The node's Stat, or `None` if it does not exist.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::NoAuth`], connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// if let Some(stat) = zk.exists("/a")? {
    ///     println!("version {}", stat.version);
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.exists_inner(path, None)
    }

    /// As [`Client::exists`], leaving a one-shot watch: it fires on NodeCreated
    /// (if the node was missing), NodeDataChanged or NodeDeleted. Registered both
    /// when the node exists and when it does not; not registered on other errors.
    ///
    /// # Errors
    ///
    /// As [`Client::exists`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::bounded::<WatchedEvent>(1);
    /// if zk.exists_w("/lock", tx)?.is_none() {
    ///     let created = rx.recv().unwrap();
    /// }
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn exists_w(&self, path: &str, watcher: impl Watcher) -> Result<Option<Stat>> {
        self.exists_inner(path, Some(Box::new(watcher)))
    }

    fn get_data_inner(&self, path: &str, watcher: Option<Box<dyn Watcher>>) -> Result<(Vec<u8>, Stat)> {
        let sp = self.server_path(path, false)?;
        let watch = watcher.map(|w| WatchReg {
            mode: WatchMode::Data,
            server_path: sp.clone(),
            watcher: w,
        });
        let req = PathWatchRequest {
            path: sp,
            watch: watch.is_some(),
        };
        let reply = self.send(OpCode::GetData, &req, watch)?;
        self.finish(reply, path, GetDataResponse::decode)
            .map(|r| (r.data, r.stat))
    }

    /// The node's data and Stat.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::NoNode`], [`Error::NoAuth`], connection
    /// errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (data, stat) = zk.get_data("/config")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.get_data_inner(path, None)
    }

    /// As [`Client::get_data`], leaving a one-shot watch (NodeDataChanged or
    /// NodeDeleted) — only on success.
    ///
    /// # Errors
    ///
    /// As [`Client::get_data`]; on error no watch is left.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.get_data_w("/config", |e: WatchedEvent| println!("changed: {e:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_data_w(&self, path: &str, watcher: impl Watcher) -> Result<(Vec<u8>, Stat)> {
        self.get_data_inner(path, Some(Box::new(watcher)))
    }

    /// Replaces the node's data; `version` `None` for any. Returns the new Stat.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::DataTooLarge`]; [`Error::NoNode`],
    /// [`Error::BadVersion`], [`Error::NoAuth`]; connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let stat = zk.set_data("/config", b"v2", Some(1))?;
    /// assert_eq!(stat.version, 2);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        let sp = self.server_path(path, false)?;
        self.check_data(data)?;
        let req = SetDataRequestRef {
            path: &sp,
            data,
            version: version.unwrap_or(-1),
        };
        let reply = self.send(OpCode::SetData, &req, None)?;
        self.finish(reply, path, Stat::decode)
    }

    fn children_inner(&self, path: &str, op: OpCode, watcher: Option<Box<dyn Watcher>>) -> Result<Reply> {
        let sp = self.server_path(path, false)?;
        let watch = watcher.map(|w| WatchReg {
            mode: WatchMode::Child,
            server_path: sp.clone(),
            watcher: w,
        });
        let req = PathWatchRequest {
            path: sp,
            watch: watch.is_some(),
        };
        self.send(op, &req, watch)
    }

    /// The names of the node's children, in the server's order (unsorted).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::NoNode`], [`Error::NoAuth`], connection
    /// errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let mut kids = zk.get_children("/locks")?;
    /// kids.sort();
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children(&self, path: &str) -> Result<Vec<String>> {
        let reply = self.children_inner(path, OpCode::GetChildren, None)?;
        self.finish(reply, path, GetChildrenResponse::decode)
            .map(|r| r.children)
    }

    /// As [`Client::get_children`], leaving a one-shot child watch
    /// (NodeChildrenChanged or NodeDeleted) — only on success.
    ///
    /// # Errors
    ///
    /// As [`Client::get_children`]; on error no watch is left.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let kids = zk.get_children_w("/locks", |e: WatchedEvent| println!("{e:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children_w(&self, path: &str, watcher: impl Watcher) -> Result<Vec<String>> {
        let reply = self.children_inner(path, OpCode::GetChildren, Some(Box::new(watcher)))?;
        self.finish(reply, path, GetChildrenResponse::decode)
            .map(|r| r.children)
    }

    /// The node's children (server order) and the node's own Stat
    /// (getChildren2).
    ///
    /// # Errors
    ///
    /// As [`Client::get_children`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (kids, stat) = zk.get_children2("/locks")?;
    /// assert_eq!(kids.len(), stat.num_children as usize);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children2(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        let reply = self.children_inner(path, OpCode::GetChildren2, None)?;
        self.finish(reply, path, GetChildren2Response::decode)
            .map(|r| (r.children, r.stat))
    }

    /// As [`Client::get_children2`], leaving a one-shot child watch — only on
    /// success.
    ///
    /// # Errors
    ///
    /// As [`Client::get_children`]; on error no watch is left.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig, WatchedEvent};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (tx, rx) = crossbeam_channel::unbounded::<WatchedEvent>();
    /// let (kids, stat) = zk.get_children2_w("/locks", tx)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_children2_w(&self, path: &str, watcher: impl Watcher) -> Result<(Vec<String>, Stat)> {
        let reply = self.children_inner(path, OpCode::GetChildren2, Some(Box::new(watcher)))?;
        self.finish(reply, path, GetChildren2Response::decode)
            .map(|r| (r.children, r.stat))
    }

    /// Waits until the server this client is connected to has caught up with
    /// the leader (sync). On a standalone server it returns at once; the path is
    /// not checked for existence.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.sync("/")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn sync(&self, path: &str) -> Result<()> {
        let sp = self.server_path(path, false)?;
        let reply = self.send(OpCode::Sync, &PathRecord { path: sp }, None)?;
        self.finish(reply, path, |_| Ok(()))
    }

    /// The node's ACL and Stat.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::NoNode`], connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// let (acl, stat) = zk.get_acl("/")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        let sp = self.server_path(path, false)?;
        let reply = self.send(OpCode::GetAcl, &PathRecord { path: sp }, None)?;
        self.finish(reply, path, GetAclResponse::decode)
            .map(|r| (r.acl, r.stat))
    }

    /// Replaces the node's ACL; `version` (the ACL version, `aversion`) `None`
    /// for any. Returns the new Stat.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::InvalidAcl`] for an empty ACL (not
    /// sent) or one the server rejects, [`Error::NoNode`], [`Error::NoAuth`],
    /// [`Error::BadVersion`], connection errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use zk_framework::{Client, ClientConfig};
    /// use zk_framework::Acl;
    /// # let zk = Client::connect("127.0.0.1:2181", ClientConfig::default())?;
    /// zk.set_acl("/a", &Acl::read_unsafe(), None)?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    pub fn set_acl(&self, path: &str, acl: &[Acl], version: Option<i32>) -> Result<Stat> {
        let sp = self.server_path(path, false)?;
        Self::check_acl(acl, path)?;
        let req = SetAclRequestRef {
            path: &sp,
            acl,
            version: version.unwrap_or(-1),
        };
        let reply = self.send(OpCode::SetAcl, &req, None)?;
        self.finish(reply, path, Stat::decode)
    }
}
