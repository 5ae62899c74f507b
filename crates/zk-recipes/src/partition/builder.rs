//! [`SetPartitionerBuilder`]: a member's identifier, partition function,
//! settle time, stuck bound and release mode, checked when built.

use std::time::Duration;

use zk_framework::CuratorFramework;

use crate::error::{Error, Result};
use crate::partition::function::{check_name, PartitionFn};
use crate::partition::partitioner::SetPartitioner;
use crate::partition::shared::{Settings, Shared};

impl SetPartitioner {
    /// A builder for a member of the party at `path` sharing `items` (each
    /// one node name; duplicates count once).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/work/shards", ["a", "b"]).identifier("w1").build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder<I, S>(client: &CuratorFramework, path: &str, items: I) -> SetPartitionerBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        SetPartitionerBuilder::new(client, path, items.into_iter().map(Into::into).collect())
    }
}

/// Builds a [`SetPartitioner`]: [`SetPartitioner::builder`].
///
/// # Examples
///
/// ```no_run
/// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
/// use std::time::Duration;
/// let p = zk_recipes::SetPartitioner::builder(&client, "/work/shards", ["a", "b", "c"])
///     .identifier("worker-7")
///     .time_boundary(Duration::from_secs(5))
///     .stuck_after(Duration::from_secs(30))
///     .auto_release(true)
///     .build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a builder does nothing until build()"]
pub struct SetPartitionerBuilder {
    pub(crate) client: CuratorFramework,
    pub(crate) path: String,
    pub(crate) items: Vec<String>,
    pub(crate) identifier: Option<String>,
    pub(crate) function: Option<PartitionFn>,
    pub(crate) time_boundary: Duration,
    pub(crate) stuck_after: Duration,
    pub(crate) auto_release: bool,
}

impl std::fmt::Debug for SetPartitionerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetPartitionerBuilder")
            .field("path", &self.path)
            .field("items", &self.items.len())
            .field("identifier", &self.identifier)
            .field("custom_function", &self.function.is_some())
            .field("time_boundary", &self.time_boundary)
            .field("stuck_after", &self.stuck_after)
            .field("auto_release", &self.auto_release)
            .finish()
    }
}

impl SetPartitionerBuilder {
    /// Kazoo's default settle time.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::SetPartitionerBuilder;
    /// assert_eq!(SetPartitionerBuilder::DEFAULT_TIME_BOUNDARY, std::time::Duration::from_secs(30));
    /// ```
    pub const DEFAULT_TIME_BOUNDARY: Duration = Duration::from_secs(30);
    /// The default stuck bound.
    ///
    /// # Examples
    ///
    /// ```
    /// use zk_recipes::SetPartitionerBuilder;
    /// assert_eq!(SetPartitionerBuilder::DEFAULT_STUCK_AFTER, std::time::Duration::from_secs(30));
    /// ```
    pub const DEFAULT_STUCK_AFTER: Duration = Duration::from_secs(30);

    pub(crate) fn new(client: &CuratorFramework, path: &str, items: Vec<String>) -> Self {
        SetPartitionerBuilder {
            client: client.clone(),
            path: path.to_string(),
            items,
            identifier: None,
            function: None,
            time_boundary: Self::DEFAULT_TIME_BOUNDARY,
            stuck_after: Self::DEFAULT_STUCK_AFTER,
            auto_release: false,
        }
    }

    /// This member's identifier, its party node's name (one node name, no
    /// `/`; unique in the party). Default: the client's
    /// [`process_name`](crate::process_name) and the process id (as
    /// kazoo's host name and pid): give each member of one process its own.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).identifier("a/b");
    /// assert!(b.build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn identifier(mut self, identifier: impl Into<String>) -> Self {
        self.identifier = Some(identifier.into());
        self
    }

    /// The partition function (default: kazoo's,
    /// [`default_partition`](crate::default_partition)). Every member calls
    /// it for every member; a panic, an item not in the set or one item for
    /// two members fails the member ([`FailureReason`](crate::FailureReason)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// // Everything to the first member, nothing to the others.
    /// let p = zk_recipes::SetPartitioner::builder(&client, "/p", ["a", "b"])
    ///     .partition_fn(|me, members, items| {
    ///         if members.first().map(String::as_str) == Some(me) { items.to_vec() } else { vec![] }
    ///     })
    ///     .build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn partition_fn(
        mut self,
        f: impl Fn(&str, &[String], &[String]) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.function = Some(Box::new(f));
        self
    }

    /// How long the party must be quiet before the members partition
    /// (kazoo's `time_boundary`, 30 s by default): each change starts the
    /// wait again. The first allocation waits for it too.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).time_boundary(std::time::Duration::from_secs(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn time_boundary(mut self, settle: Duration) -> Self {
        self.time_boundary = settle;
        self
    }

    /// How long a lock of the share may be held by someone else before the
    /// member says it is [`Stuck`](crate::PartitionState::Stuck) (30 s by
    /// default; then again at every such bound while it lasts).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).stuck_after(std::time::Duration::from_secs(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stuck_after(mut self, bound: Duration) -> Self {
        self.stuck_after = bound;
        self
    }

    /// Whether the member releases by itself on
    /// [`Release`](crate::PartitionState::Release) (default off, as kazoo:
    /// the caller stops its work and calls
    /// [`release_set`](SetPartitioner::release_set)). With it on, the
    /// caller must stop working at the event that leaves `Acquired`: the
    /// locks go right after it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let b = zk_recipes::SetPartitioner::builder(&client, "/p", ["a"]).auto_release(true);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn auto_release(mut self, on: bool) -> Self {
        self.auto_release = on;
        self
    }

    /// The member, not started.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an identifier or an item that is not
    /// one node name (empty, `.`, `..`, with a `/`), a zero stuck bound, or
    /// the root path; [`Error::ZooKeeper`] with `InvalidPath` for a bad
    /// path.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let client = zk_framework::CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(zk_recipes::SetPartitioner::builder(&client, "/p", ["a/b"]).build().is_err());
    /// assert!(zk_recipes::SetPartitioner::builder(&client, "/", ["a"]).build().is_err());
    /// let empty: [&str; 0] = [];
    /// assert!(zk_recipes::SetPartitioner::builder(&client, "/p", empty).build().is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(mut self) -> Result<SetPartitioner> {
        self.path = self.path.trim_end_matches('/').to_string();
        if self.path.is_empty() {
            return Err(Error::InvalidArgument(
                "a set partitioner cannot live at the root path".into(),
            ));
        }
        zk_framework::proto::path::validate_path(&self.path, false).map_err(zk_framework::Error::from)?;
        if self.stuck_after.is_zero() {
            return Err(Error::InvalidArgument(
                "a set partitioner's stuck bound must not be zero".into(),
            ));
        }
        let identifier = match self.identifier.take() {
            Some(id) => id,
            None => format!(
                "{}-{}",
                crate::locks::identity::process_name(&self.client).replace('/', "_"),
                std::process::id()
            ),
        };
        check_name("identifier", &identifier).map_err(Error::InvalidArgument)?;
        let mut items = std::mem::take(&mut self.items);
        for i in &items {
            check_name("item", i).map_err(Error::InvalidArgument)?;
        }
        items.sort();
        items.dedup();
        let shared = Shared::new(Settings {
            client: self.client,
            path: self.path,
            identifier,
            items,
            function: self.function,
            time_boundary: self.time_boundary,
            stuck_after: self.stuck_after,
            auto_release: self.auto_release,
        })?;
        Ok(SetPartitioner::from_shared(shared))
    }
}
