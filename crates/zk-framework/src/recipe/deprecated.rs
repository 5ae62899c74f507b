//! [`CuratorFramework`]'s recipe plumbing as it was before [`Recipe`]: each
//! method a deprecated one-line delegation to its [`Recipe`] namesake, kept
//! so that code written against it still builds.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Receiver;

#[cfg(doc)]
use super::handle::Recipe;
use super::key::NodeKey;
use crate::client::{Client, Watcher};
use crate::error::Result;
use crate::framework::{CloseHook, CuratorFramework};
use zk_proto::Stat;

/// Recipe plumbing, deprecated here: [`CuratorFramework::recipe`]'s
/// [`Recipe`] has each of these methods, and says what it promises.
impl CuratorFramework {
    /// Recipe plumbing, now [`Recipe::session_generation`], which says what it
    /// promises: `self.recipe().session_generation()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(c.session_generation() >= 1);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().session_generation()`")]
    pub fn session_generation(&self) -> u64 {
        self.recipe().session_generation()
    }

    /// Recipe plumbing, now [`Recipe::connection_epoch`], which says what it
    /// promises: `self.recipe().connection_epoch()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let server = zk_testing::TestingServer::start_backend(zk_testing::Backend::Embedded)?;
    /// # let c = zk_framework::CuratorFramework::builder().connect_string(server.connect_string()).build()?;
    /// c.block_until_connected(std::time::Duration::from_secs(10))?;
    /// let before = c.connection_epoch();
    /// assert_eq!(c.connection_epoch(), before, "nothing was missed");
    /// server.embedded().unwrap().drop_connections();
    /// zk_testing::wait_until(std::time::Duration::from_secs(10), || c.connection_epoch() != before);
    /// assert!(c.connection_epoch() > before);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().connection_epoch()`")]
    pub fn connection_epoch(&self) -> u64 {
        self.recipe().connection_epoch()
    }

    /// Recipe plumbing, now [`Recipe::fix_path`], which says what it
    /// promises: `self.recipe().fix_path(path)`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
    /// assert_eq!(c.fix_path("/a"), "/ns/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().fix_path()`")]
    pub fn fix_path(&self, path: &str) -> String {
        self.recipe().fix_path(path)
    }

    /// Recipe plumbing, now [`Recipe::unfix_path`], which says what it
    /// promises: `self.recipe().unfix_path(path)`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
    /// assert_eq!(c.unfix_path("/ns/a"), "/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().unfix_path()`")]
    pub fn unfix_path(&self, path: &str) -> String {
        self.recipe().unfix_path(path)
    }

    /// Recipe plumbing, now [`Recipe::node_key`], which says what it
    /// promises: `self.recipe().node_key(path)`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").namespace("ns").build()?;
    /// assert_eq!(c.node_key("/a").as_str(), "/ns/a");
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().node_key()`")]
    pub fn node_key(&self, path: &str) -> NodeKey {
        self.recipe().node_key(path)
    }

    /// Recipe plumbing, now [`Recipe::call_with_retry`], which says what it
    /// promises: `self.recipe().call_with_retry(op)`.
    ///
    /// # Errors
    ///
    /// As [`Recipe::call_with_retry`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let stat = c.call_with_retry(|zk| zk.exists("/"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().call_with_retry()`")]
    pub fn call_with_retry<T>(&self, op: impl FnMut(&Client) -> Result<T>) -> Result<T> {
        self.recipe().call_with_retry(op)
    }

    /// Recipe plumbing, now [`Recipe::pause`], which says what it
    /// promises: `self.recipe().pause(d)`.
    ///
    /// # Errors
    ///
    /// As [`Recipe::pause`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.pause(std::time::Duration::from_millis(10))?;
    /// c.close();
    /// assert!(matches!(c.pause(std::time::Duration::MAX), Err(zk_framework::Error::Closed)));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().pause()`")]
    pub fn pause(&self, d: Duration) -> Result<()> {
        self.recipe().pause(d)
    }

    /// Recipe plumbing, now [`Recipe::delete_detached`], which says what it
    /// promises: `self.recipe().delete_detached(path, version, on_reply)`.
    ///
    /// # Errors
    ///
    /// As [`Recipe::delete_detached`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let (tx, rx) = crossbeam_channel::bounded(1);
    /// c.delete_detached("/lock/n", None, move |r| {
    ///     let _ = tx.try_send(r);
    /// })?;
    /// println!("deleted: {:?}", rx.recv_timeout(std::time::Duration::from_secs(1)));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().delete_detached()`")]
    pub fn delete_detached(
        &self,
        path: &str,
        version: Option<i32>,
        on_reply: impl FnOnce(Result<()>) + Send + 'static,
    ) -> Result<()> {
        self.recipe().delete_detached(path, version, on_reply)
    }

    /// Recipe plumbing, now [`Recipe::exists_detached`], which says what it
    /// promises: `self.recipe().exists_detached(path, on_reply)`.
    ///
    /// # Errors
    ///
    /// As [`Recipe::exists_detached`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.exists_detached("/lock/n", |r| println!("stat: {r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().exists_detached()`")]
    pub fn exists_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<Stat>>) + Send + 'static,
    ) -> Result<()> {
        self.recipe().exists_detached(path, on_reply)
    }

    /// Recipe plumbing, now [`Recipe::exists_w_detached`], which says what it
    /// promises: `self.recipe().exists_w_detached(path, watcher, on_reply)`.
    ///
    /// # Errors
    ///
    /// As [`Recipe::exists_w_detached`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.exists_w_detached("/lock/n", |e| println!("{e:?}"), |r| println!("stat: {r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().exists_w_detached()`")]
    pub fn exists_w_detached(
        &self,
        path: &str,
        watcher: impl Watcher,
        on_reply: impl FnOnce(Result<Option<Stat>>) + Send + 'static,
    ) -> Result<()> {
        self.recipe().exists_w_detached(path, watcher, on_reply)
    }

    /// Recipe plumbing, now [`Recipe::get_data_detached`], which says what it
    /// promises: `self.recipe().get_data_detached(path, on_reply)`.
    ///
    /// # Errors
    ///
    /// As [`Recipe::get_data_detached`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.get_data_detached("/config/a", |r| println!("{r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().get_data_detached()`")]
    pub fn get_data_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<(Vec<u8>, Stat)>>) + Send + 'static,
    ) -> Result<()> {
        self.recipe().get_data_detached(path, on_reply)
    }

    /// Recipe plumbing, now [`Recipe::get_children_detached`], which says what it
    /// promises: `self.recipe().get_children_detached(path, on_reply)`.
    ///
    /// # Errors
    ///
    /// As [`Recipe::get_children_detached`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.get_children_detached("/config", |r| println!("{r:?}"))?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().get_children_detached()`")]
    pub fn get_children_detached(
        &self,
        path: &str,
        on_reply: impl FnOnce(Result<Option<Vec<String>>>) + Send + 'static,
    ) -> Result<()> {
        self.recipe().get_children_detached(path, on_reply)
    }

    /// Recipe plumbing, now [`Recipe::delete_in_background`], which says what it
    /// promises: `self.recipe().delete_in_background(path)`.
    ///
    /// # Errors
    ///
    /// As [`Recipe::delete_in_background`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// c.delete_in_background("/locks/a/_c_x-lock-0000000001")?;
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().delete_in_background()`")]
    pub fn delete_in_background(&self, path: &str) -> Result<()> {
        self.recipe().delete_in_background(path)
    }

    /// Recipe plumbing, now [`Recipe::pending_background_deletes`], which
    /// says what it promises: `self.recipe().pending_background_deletes()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(c.pending_background_deletes(), 0);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(
        since = "0.1.0",
        note = "recipe plumbing: `client.recipe().pending_background_deletes()`"
    )]
    pub fn pending_background_deletes(&self) -> usize {
        self.recipe().pending_background_deletes()
    }

    /// Recipe plumbing, now [`Recipe::extension`], which says what it
    /// promises: `self.recipe().extension(init)`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// #[derive(Default)]
    /// struct Calls(AtomicU64);
    /// c.extension(Calls::default).0.fetch_add(1, Ordering::Relaxed);
    /// assert_eq!(c.clone().extension(Calls::default).0.load(Ordering::Relaxed), 1);
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().extension()`")]
    pub fn extension<T: std::any::Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        self.recipe().extension(init)
    }

    /// Recipe plumbing, now [`Recipe::close_signal`], which says what it
    /// promises: `self.recipe().close_signal()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let closed = c.close_signal();
    /// c.close();
    /// assert!(closed.recv().is_err()); // at once: the client is closed
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().close_signal()`")]
    pub fn close_signal(&self) -> Receiver<()> {
        self.recipe().close_signal()
    }

    /// Recipe plumbing, now [`Recipe::on_close`], which says what it
    /// promises: `self.recipe().on_close(signal)`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// # let c = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let closed = Arc::new(AtomicBool::new(false));
    /// let seen = closed.clone();
    /// let _hook = c.on_close(move || seen.store(true, Ordering::SeqCst));
    /// c.close();
    /// assert!(closed.load(Ordering::SeqCst));
    /// # Ok::<(), zk_framework::Error>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "recipe plumbing: `client.recipe().on_close()`")]
    pub fn on_close(&self, signal: impl FnOnce() + Send + 'static) -> CloseHook {
        self.recipe().on_close(signal)
    }
}

#[cfg(test)]
#[allow(deprecated)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use crate::error::Error;
    use crate::framework::CuratorFramework;

    /// Each deprecated method answers as its `recipe()` namesake: a client
    /// built against a port nothing listens on answers the local ones, and
    /// after its close the calls that need the server fail as the new ones
    /// do.
    #[test]
    fn the_deprecated_plumbing_answers_as_the_recipe_handle() {
        let c = CuratorFramework::builder()
            .connect_string("127.0.0.1:1")
            .namespace("app")
            .build()
            .expect("a client builds without a server");
        let r = c.recipe();
        assert_eq!(c.session_generation(), r.session_generation());
        assert_eq!(c.connection_epoch(), r.connection_epoch());
        assert_eq!(c.fix_path("/a"), "/app/a");
        assert_eq!(c.fix_path("/a"), r.fix_path("/a"));
        assert_eq!(c.unfix_path("/app/a"), r.unfix_path("/app/a"));
        assert_eq!(c.node_key("/a"), r.node_key("/a"));
        #[derive(Default)]
        struct Calls(AtomicU64);
        c.extension(Calls::default).0.fetch_add(1, Ordering::Relaxed);
        assert_eq!(r.extension(Calls::default).0.load(Ordering::Relaxed), 1, "one value");
        assert_eq!(c.pending_background_deletes(), r.pending_background_deletes());
        // A bad path is refused before anything is sent, alike.
        let bad = |e: Result<(), Error>| matches!(e, Err(Error::InvalidPath(_)));
        assert!(bad(c.delete_in_background("no-slash")));
        assert!(bad(c.delete_detached("no-slash", None, |_| {})));
        assert!(bad(c.exists_detached("no-slash", |_| {})));
        assert!(bad(c.exists_w_detached("no-slash", |_| {}, |_| {})));
        assert!(bad(c.get_data_detached("no-slash", |_| {})));
        assert!(bad(c.get_children_detached("no-slash", |_| {})));
        c.pause(Duration::from_millis(1)).expect("an open client pauses");
        let closed = c.close_signal();
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        let _hook = c.on_close(move || flag.store(true, Ordering::SeqCst));
        c.close();
        assert!(closed.recv().is_err(), "the close signal disconnected");
        assert!(ran.load(Ordering::SeqCst), "the close hook ran");
        assert_eq!(c.pause(Duration::MAX), Err(Error::Closed));
        assert_eq!(c.call_with_retry(|zk| zk.exists("/")), Err(Error::Closed));
        assert_eq!(c.delete_detached("/a", None, |_| {}), Err(Error::Closed));
        assert_eq!(c.exists_detached("/a", |_| {}), Err(Error::Closed));
        assert_eq!(c.exists_w_detached("/a", |_| {}, |_| {}), Err(Error::Closed));
        assert_eq!(c.get_data_detached("/a", |_| {}), Err(Error::Closed));
        assert_eq!(c.get_children_detached("/a", |_| {}), Err(Error::Closed));
        assert_eq!(c.delete_in_background("/a"), Ok(()));
        assert_eq!(c.pending_background_deletes(), r.pending_background_deletes());
    }
}
