//! What every counter shares: how its type reads and writes its node
//! ([`Codec`]), and the optimistic loop with its at-most-once write and its
//! promotion to a lock ([`Core`]).

use std::sync::Arc;
use std::time::Instant;

use zk_framework::{CreateMode, CuratorFramework, Error as ZkError, RetryDecision, RetryPolicy, Stat};

use crate::atomic::outcome::{AtomicStats, AtomicValue, Outcome, PromotedToLock};
use crate::core::marked::{self, Base, Markers, Written};
use crate::error::{Error, Result};
use crate::locks::mutex::InterProcessMutex;
use crate::shared::value::check_path;
use crate::shared::value::VersionedValue;

/// How a counter's type reads and writes its node.
pub trait Codec: Sized + Clone + PartialEq {
    /// The value of a missing node.
    fn missing() -> Self;
    fn decode(path: &str, bytes: &[u8]) -> Result<Self>;
    fn encode(&self) -> Vec<u8>;
}

macro_rules! number_codec {
    ($t:ty, $width:expr) => {
        impl Codec for $t {
            fn missing() -> Self {
                0
            }
            fn decode(path: &str, bytes: &[u8]) -> Result<Self> {
                if bytes.is_empty() {
                    return Ok(0);
                }
                match bytes.get(..$width).and_then(|b| <[u8; $width]>::try_from(b).ok()) {
                    Some(b) => Ok(<$t>::from_be_bytes(b)),
                    None => Err(Error::CorruptValue {
                        path: path.to_string(),
                        expected: $width,
                        bytes: bytes.to_vec(),
                    }),
                }
            }
            fn encode(&self) -> Vec<u8> {
                self.to_be_bytes().to_vec()
            }
        }
    };
}
number_codec!(i64, 8);
number_codec!(i32, 4);

impl Codec for Vec<u8> {
    fn missing() -> Self {
        Vec::new()
    }
    fn decode(_: &str, bytes: &[u8]) -> Result<Self> {
        Ok(bytes.to_vec())
    }
    fn encode(&self) -> Vec<u8> {
        self.clone()
    }
}

/// One try's end.
pub(super) enum Try<T> {
    /// Settled (applied, refused, unknown).
    Done(Outcome<T>, T, T),
    /// Lost the race; the value read.
    Lost(T),
}

/// How an optimistic loop ended.
pub(super) enum Loop<T> {
    /// Settled: the outcome, the value read, the value written.
    Settled(Outcome<T>, T, T),
    /// The policy gave up; the last value read.
    GaveUp(T),
}

/// What every counter shares: the node, the policy, the promotion.
pub(super) struct Core {
    pub(super) client: CuratorFramework,
    pub(super) path: String,
    metrics: super::metrics::Handles,
    /// The markers this counter's writes keep under its node.
    markers: Markers,
    retry: Arc<dyn RetryPolicy>,
    promoted: Option<(InterProcessMutex, PromotedToLock)>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counter")
            .field("path", &self.path)
            .field("retry", &self.retry)
            .field("promoted", &self.promoted.as_ref().map(|(_, p)| p))
            .finish()
    }
}

/// A change: from the value read (and whether the node exists) to the new
/// value, `None` to write nothing.
pub(super) type Change<'a, T> = dyn FnMut(&T, bool) -> Result<Option<T>> + 'a;

impl Core {
    pub(super) fn new(
        client: &CuratorFramework,
        path: &str,
        retry: Arc<dyn RetryPolicy>,
        promoted: Option<PromotedToLock>,
    ) -> Result<Core> {
        check_path(path)?;
        let promoted = match promoted {
            Some(p) => Some((InterProcessMutex::new(client, &p.lock_path)?, p)),
            None => None,
        };
        Ok(Core {
            client: client.clone(),
            metrics: super::metrics::Handles::new(path),
            markers: Markers::new(client),
            path: path.to_string(),
            retry,
            promoted,
        })
    }

    pub(super) fn read<T: Codec>(&self) -> Result<(T, Option<Stat>)> {
        match self.client.get_data(&self.path) {
            Ok((d, s)) => Ok((T::decode(&self.path, &d)?, Some(s))),
            Err(ZkError::NoNode { .. }) => Ok((T::missing(), None)),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) fn get<T: Codec>(&self) -> Result<T> {
        self.read().map(|(v, _)| v)
    }

    pub(super) fn try_once<T: Codec>(&self, change: &mut Change<'_, T>) -> Result<Try<T>> {
        let (pre, stat) = self.read::<T>()?;
        let Some(new) = change(&pre, stat.is_some())? else {
            return Ok(Try::Done(Outcome::NotApplied, pre.clone(), pre));
        };
        let bytes = new.encode();
        let written = match &stat {
            Some(s) => marked::set_versioned(&self.client, &self.markers, &self.path, &bytes, &Base::from(s))?,
            None => marked::create_once(&self.client, &self.markers, &self.path, &bytes)?,
        };
        Ok(match written {
            Written::Applied { read_back, marker, .. } => {
                let proof = crate::shared::value::proof_of(read_back, marker);
                Try::Done(Outcome::Applied { proof }, pre, new)
            }
            Written::Conflict | Written::Missing => Try::Lost(pre),
            Written::Unknown { read } => {
                let read = read.and_then(|(d, s)| match T::decode(&self.path, &d) {
                    Ok(v) => Some(VersionedValue::new(v, &s)),
                    Err(e) => {
                        log::warn!("counter {}: the read-back found no value of this kind: {e}", self.path);
                        None
                    }
                });
                Try::Done(Outcome::Unknown { read }, pre, new)
            }
        })
    }

    /// The optimistic loop under `policy`: settled, or lost (the last value
    /// read) when the policy gave up.
    pub(super) fn optimistic<T: Codec>(
        &self,
        change: &mut Change<'_, T>,
        policy: &dyn RetryPolicy,
        tries: &mut u32,
    ) -> Result<Loop<T>> {
        let start = Instant::now();
        let mut retries = 0;
        loop {
            *tries += 1;
            match self.try_once(change)? {
                Try::Done(o, pre, post) => return Ok(Loop::Settled(o, pre, post)),
                Try::Lost(pre) => match policy.next_retry(retries, start.elapsed()) {
                    RetryDecision::GiveUp => return Ok(Loop::GaveUp(pre)),
                    RetryDecision::RetryAfter(d) => {
                        self.client.recipe().pause(d)?;
                        retries += 1;
                    }
                },
            }
        }
    }

    /// An update: the optimistic loop, then the promotion.
    pub(super) fn update<T: Codec>(&self, change: &mut Change<'_, T>) -> Result<AtomicValue<T>> {
        let r = self.update_counted(change)?;
        self.metrics.ended(&r.outcome);
        Ok(r)
    }

    fn update_counted<T: Codec>(&self, change: &mut Change<'_, T>) -> Result<AtomicValue<T>> {
        let mut stats = AtomicStats::default();
        let t0 = Instant::now();
        let first = self.optimistic(change, &*self.retry, &mut stats.optimistic_tries)?;
        stats.optimistic_time = t0.elapsed();
        let pre = match first {
            Loop::Settled(outcome, pre, post) => {
                return Ok(AtomicValue {
                    outcome,
                    pre,
                    post,
                    stats,
                })
            }
            Loop::GaveUp(pre) => pre,
        };
        let Some((mutex, promoted)) = &self.promoted else {
            return Ok(not_applied(pre, stats));
        };
        let t1 = Instant::now();
        let result = match mutex.try_acquire_for(promoted.timeout)? {
            None => Ok(not_applied(pre, stats)),
            Some(_guard) => match self.optimistic(change, &*promoted.retry, &mut stats.promoted_tries)? {
                Loop::Settled(outcome, pre, post) => Ok(AtomicValue {
                    outcome,
                    pre,
                    post,
                    stats,
                }),
                Loop::GaveUp(pre) => Ok(not_applied(pre, stats)),
            },
        };
        result.map(|mut v| {
            v.stats.promoted_time = t1.elapsed();
            v
        })
    }

    /// One try, no retry, no promotion (`compare_and_set`, `initialize`).
    pub(super) fn single<T: Codec>(&self, change: &mut Change<'_, T>) -> Result<AtomicValue<T>> {
        let r = self.single_counted(change)?;
        self.metrics.ended(&r.outcome);
        Ok(r)
    }

    fn single_counted<T: Codec>(&self, change: &mut Change<'_, T>) -> Result<AtomicValue<T>> {
        let t0 = Instant::now();
        let (outcome, pre, post) = match self.try_once(change)? {
            Try::Done(o, pre, post) => (o, pre, post),
            Try::Lost(pre) => (Outcome::NotApplied, pre.clone(), pre),
        };
        let stats = AtomicStats {
            optimistic_tries: 1,
            optimistic_time: t0.elapsed(),
            ..AtomicStats::default()
        };
        Ok(AtomicValue {
            outcome,
            pre,
            post,
            stats,
        })
    }

    /// An unversioned write, or a create when missing (each is harmless to
    /// repeat: the node ends with these bytes).
    pub(super) fn force_set(&self, bytes: Vec<u8>) -> Result<()> {
        match self.client.set_data(&self.path, bytes.clone(), None) {
            Ok(_) => return Ok(()),
            Err(ZkError::NoNode { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Persistent)
            .with_data(bytes.clone())
            .for_path(&self.path)
        {
            Ok(_) => Ok(()),
            Err(ZkError::NodeExists { .. }) => {
                self.client.set_data(&self.path, bytes, None)?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}

pub(super) fn not_applied<T: Clone>(pre: T, stats: AtomicStats) -> AtomicValue<T> {
    AtomicValue {
        outcome: Outcome::NotApplied,
        post: pre.clone(),
        pre,
        stats,
    }
}
