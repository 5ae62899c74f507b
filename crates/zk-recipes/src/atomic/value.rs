//! [`DistributedAtomicValue`]: raw bytes with atomic updates.

use std::sync::Arc;

use zk_framework::{CuratorFramework, RetryPolicy};

use super::core::Core;
use crate::atomic::outcome::{AtomicValue, PromotedToLock};
use crate::error::Result;

/// A distributed byte value with atomic updates (Curator's
/// `DistributedAtomicValue`): raw bytes in one node; a missing node reads
/// as empty bytes.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use zk_recipes::DistributedAtomicValue;
/// let value = DistributedAtomicValue::new(&client, "/values/leader", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
/// let r = value.compare_and_set(b"a", b"b".to_vec())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DistributedAtomicValue {
    core: Core,
}

impl DistributedAtomicValue {
    /// A value at `path` whose optimistic loop retries under `policy`.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`](crate::Error::ZooKeeper) with `InvalidPath` for a bad path;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for the root.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, policy: impl RetryPolicy + 'static) -> Result<Self> {
        Ok(DistributedAtomicValue {
            core: Core::new(client, path, Arc::new(policy), None)?,
        })
    }

    /// As `new`, with a promotion to a lock.
    ///
    /// # Errors
    ///
    /// As `new`; a bad lock path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let promoted = zk_recipes::PromotedToLock::new("/values/a-lock", std::time::Duration::from_secs(5));
    /// let value = zk_recipes::DistributedAtomicValue::with_promotion(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)), promoted)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_promotion(
        client: &CuratorFramework,
        path: &str,
        policy: impl RetryPolicy + 'static,
        promoted: PromotedToLock,
    ) -> Result<Self> {
        Ok(DistributedAtomicValue {
            core: Core::new(client, path, Arc::new(policy), Some(promoted))?,
        })
    }

    /// The current bytes (empty when the node is missing).
    ///
    /// # Errors
    ///
    /// The read's error.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let bytes = value.get()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self) -> Result<Vec<u8>> {
        self.core.get()
    }

    /// Sets `new` if the node holds `expected`: one try; a missing node
    /// fails.
    ///
    /// # Errors
    ///
    /// A read's or write's error when nothing was applied.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = value.compare_and_set(b"a", b"b".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compare_and_set(&self, expected: &[u8], new: Vec<u8>) -> Result<AtomicValue<Vec<u8>>> {
        self.core
            .single(&mut |v: &Vec<u8>, exists| Ok((exists && v.as_slice() == expected).then(|| new.clone())))
    }

    /// Sets `new` through the optimistic loop and the promotion.
    ///
    /// # Errors
    ///
    /// As [`compare_and_set`](Self::compare_and_set); the promotion's lock
    /// errors.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let r = value.try_set(b"c".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_set(&self, new: Vec<u8>) -> Result<AtomicValue<Vec<u8>>> {
        self.core.update(&mut |_: &Vec<u8>, _| Ok(Some(new.clone())))
    }

    /// Sets `new` with an unversioned write (or a create).
    ///
    /// # Errors
    ///
    /// The write's error after the client's retries.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// value.force_set(b"d".to_vec())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn force_set(&self, new: Vec<u8>) -> Result<()> {
        self.core.force_set(new)
    }

    /// Creates the node with `value` if it does not exist: one try.
    ///
    /// # Errors
    ///
    /// As [`compare_and_set`](Self::compare_and_set).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let value = zk_recipes::DistributedAtomicValue::new(&client, "/values/a", zk_framework::RetryOneTime::new(std::time::Duration::from_millis(10)))?;
    /// let created = value.initialize(b"first".to_vec())?.succeeded();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn initialize(&self, value: Vec<u8>) -> Result<AtomicValue<Vec<u8>>> {
        self.core
            .single(&mut |_: &Vec<u8>, exists| Ok((!exists).then(|| value.clone())))
    }
}
