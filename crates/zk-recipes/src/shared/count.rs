//! [`SharedCount`]: a shared `i32` in Curator's 4-byte layout.

use crossbeam_channel::Receiver;
use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::shared::value::{SharedValue, TrySet, ValueEvent, VersionedValue};

/// A shared `i32` (Curator's `SharedCount`): 4 bytes, big-endian, in one
/// node; Java's `SharedCount` on the same path sees the same count. Clones
/// share this count; it closes at [`close`](SharedCount::close) or when the
/// last clone is dropped.
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use zk_recipes::{SharedCount, TrySet};
/// let count = SharedCount::new(&client, "/counts/jobs", 0)?;
/// count.start()?;
/// loop {
///     let seen = count.get_versioned_count()?;
///     match count.try_set_count(seen.value() + 1, &seen)? {
///         TrySet::Set { .. } => break,
///         TrySet::Stale { .. } => continue, // someone else was first: again
///         TrySet::Unknown { read } => {
///             eprintln!("reply lost, outcome unknown: {read:?}");
///             break;
///         }
///         _ => break,
///     }
/// }
/// count.close();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SharedCount {
    value: SharedValue,
}

/// A count from a node's bytes: exactly 4, big-endian.
pub(super) fn count_of(path: &str, bytes: &[u8]) -> Result<i32> {
    <[u8; 4]>::try_from(bytes)
        .map(i32::from_be_bytes)
        .map_err(|_| Error::CorruptValue {
            path: path.to_string(),
            expected: 4,
            bytes: bytes.to_vec(),
        })
}

fn count_of_versioned(path: &str, v: VersionedValue<Vec<u8>>) -> Result<VersionedValue<i32>> {
    let n = count_of(path, v.value())?;
    Ok(v.map(|_| n))
}

impl SharedCount {
    /// A shared count at `path`, created with `seed` at
    /// [`start`](SharedCount::start) if missing.
    ///
    /// # Errors
    ///
    /// As [`SharedValue::new`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(client: &CuratorFramework, path: &str, seed: i32) -> Result<Self> {
        Ok(SharedCount {
            value: {
                crate::shared::value::check_path(path)?;
                SharedValue::named("SharedCount", client, path, seed.to_be_bytes().to_vec())
            },
        })
    }

    /// The path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// assert_eq!(count.path(), "/counts/jobs");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// As [`SharedValue::start`].
    ///
    /// # Errors
    ///
    /// As [`SharedValue::start`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// count.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start(&self) -> Result<()> {
        self.value.start()
    }

    /// The latest count known.
    ///
    /// # Errors
    ///
    /// As [`SharedValue::get_value`]; [`Error::CorruptValue`] when the node
    /// does not hold exactly 4 bytes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// count.start()?;
    /// let n = count.get_count()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_count(&self) -> Result<i32> {
        self.get_versioned_count().map(VersionedValue::into_value)
    }

    /// The latest count known, with its version and zxids.
    ///
    /// # Errors
    ///
    /// As [`SharedCount::get_count`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// count.start()?;
    /// let v = count.get_versioned_count()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_versioned_count(&self) -> Result<VersionedValue<i32>> {
        count_of_versioned(self.path(), self.value.get_versioned_value()?)
    }

    /// Sets the count whatever it is now.
    ///
    /// # Errors
    ///
    /// As [`SharedValue::set_value`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// count.start()?;
    /// count.set_count(42)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_count(&self, count: i32) -> Result<()> {
        self.value.set_value(count.to_be_bytes().to_vec())
    }

    /// Sets the count if the node is still at `expected`'s version (see
    /// [`SharedValue::try_set_value`]: applied at most once, a lost reply
    /// settled by the write's marker).
    ///
    /// # Errors
    ///
    /// As [`SharedValue::try_set_value`]; [`Error::CorruptValue`] when the
    /// value read after a refusal is not 4 bytes.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// count.start()?;
    /// let seen = count.get_versioned_count()?;
    /// let outcome = count.try_set_count(seen.value() + 1, &seen)?;
    /// # let _ = outcome;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_set_count(&self, count: i32, expected: &VersionedValue<i32>) -> Result<TrySet<i32>> {
        let expected = expected.clone().map(|n| n.to_be_bytes().to_vec());
        let path = self.path().to_string();
        Ok(
            match self.value.try_set_value(count.to_be_bytes().to_vec(), &expected)? {
                TrySet::Set { version, proof } => TrySet::Set { version, proof },
                TrySet::Stale { current } => TrySet::Stale {
                    current: count_of_versioned(&path, current)?,
                },
                TrySet::Unknown { read } => TrySet::Unknown {
                    read: read.and_then(|v| count_of_versioned(&path, v).ok()),
                },
            },
        )
    }

    /// A channel of the count's changes (see [`SharedValue::events`]); a
    /// value that is not 4 bytes comes as [`ValueEvent::Invalid`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// let changes = count.events();
    /// count.start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events(&self) -> Receiver<ValueEvent<i32>> {
        let path = self.path().to_string();
        self.value.events_with(move |e| match e {
            ValueEvent::Changed(v) => match count_of_versioned(&path, v.clone()) {
                Ok(v) => ValueEvent::Changed(v),
                Err(e) => ValueEvent::Invalid(e),
            },
            ValueEvent::Deleted => ValueEvent::Deleted,
            ValueEvent::Invalid(e) => ValueEvent::Invalid(e.clone()),
        })
    }

    /// The old name of [`events`](Self::events).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// #[allow(deprecated)]
    /// let changes = count.listen();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(since = "0.1.0", note = "every recipe's event channel is `events()`")]
    pub fn listen(&self) -> Receiver<ValueEvent<i32>> {
        self.events()
    }

    /// As [`SharedValue::close`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// # let count = zk_recipes::SharedCount::new(&client, "/counts/jobs", 0)?;
    /// count.start()?;
    /// count.close();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.value.close()
    }
}
