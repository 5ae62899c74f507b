//! A recipe's lifecycle: not started, started (with what it runs), closed.
//! `start`, every use and `close` check it here, so that every recipe says
//! the same thing for the same misuse ([`Error::AlreadyStarted`],
//! [`Error::NotStarted`], [`Error::Closed`], naming the recipe and its
//! path). [`Lifecycle`] keeps the stage behind a lock of its own; a recipe
//! whose stage must change under the lock that orders its events (an
//! election, a node) keeps a [`Stage`] in that state and asks it the same
//! questions.

use parking_lot::Mutex;

use crate::error::Error;

/// Where a recipe is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Made, not started.
    New,
    /// Started and not closed.
    Started,
    /// Closed (for good: a closed recipe is not started again).
    Closed,
}

impl Stage {
    /// New to started.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed.
    pub(crate) fn start(&mut self, recipe: &'static str, path: &str) -> Result<(), Error> {
        match self {
            Stage::New => {
                *self = Stage::Started;
                Ok(())
            }
            s => Err(s.error(recipe, path)),
        }
    }

    /// `Ok` while started.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`] before the start, [`Error::Closed`] after the
    /// close.
    pub(crate) fn check(self, recipe: &'static str, path: &str) -> Result<(), Error> {
        match self {
            Stage::Started => Ok(()),
            s => Err(s.error(recipe, path)),
        }
    }

    /// The error a call at this stage gets: a start when started, a use
    /// when new, anything when closed.
    pub(crate) fn error(self, recipe: &'static str, path: &str) -> Error {
        let path = path.to_string();
        match self {
            Stage::New => Error::NotStarted { recipe, path },
            Stage::Started => Error::AlreadyStarted { recipe, path },
            Stage::Closed => Error::Closed { recipe, path },
        }
    }
}

#[derive(Debug)]
enum Phase<T> {
    New,
    Started(T),
    Closed,
}

/// The lifecycle of one recipe instance, and what its start made (`T`: its
/// worker, its registration; `()` when nothing).
#[derive(Debug)]
pub(crate) struct Lifecycle<T = ()> {
    recipe: &'static str,
    path: String,
    phase: Mutex<Phase<T>>,
}

impl<T> Lifecycle<T> {
    /// A new lifecycle of the `recipe` (its type's name, e.g.
    /// `"CuratorCache"`) at `path`.
    pub(crate) fn new(recipe: &'static str, path: &str) -> Lifecycle<T> {
        Lifecycle {
            recipe,
            path: path.to_string(),
            phase: Mutex::new(Phase::New),
        }
    }

    /// The recipe's name.
    pub(crate) fn recipe(&self) -> &'static str {
        self.recipe
    }

    /// New to started: runs `start` under the lifecycle's lock (a second
    /// start waits, then fails) and keeps what it made.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`], [`Error::Closed`]; `start`'s own error (the
    /// lifecycle stays new).
    pub(crate) fn start(&self, start: impl FnOnce() -> Result<T, Error>) -> Result<(), Error> {
        let mut phase = self.phase.lock();
        match &*phase {
            Phase::New => {
                *phase = Phase::Started(start()?);
                Ok(())
            }
            Phase::Started(_) => Err(self.error(Stage::Started)),
            Phase::Closed => Err(self.error(Stage::Closed)),
        }
    }

    /// To closed, whatever it was: what the start made, when it had
    /// started (`None`: never started, or closed already). Idempotent.
    pub(crate) fn close(&self) -> Option<T> {
        match std::mem::replace(&mut *self.phase.lock(), Phase::Closed) {
            Phase::Started(t) => Some(t),
            Phase::New | Phase::Closed => None,
        }
    }

    /// `Ok` while started.
    ///
    /// # Errors
    ///
    /// [`Error::NotStarted`] before the start, [`Error::Closed`] after the
    /// close.
    pub(crate) fn check(&self) -> Result<(), Error> {
        match self.stage() {
            Stage::Started => Ok(()),
            s => Err(self.error(s)),
        }
    }

    /// Where it is now.
    pub(crate) fn stage(&self) -> Stage {
        match &*self.phase.lock() {
            Phase::New => Stage::New,
            Phase::Started(_) => Stage::Started,
            Phase::Closed => Stage::Closed,
        }
    }

    /// Whether it is closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.stage() == Stage::Closed
    }

    /// Runs `f` with what the start made (`None` unless started), under the
    /// lifecycle's lock.
    pub(crate) fn with<R>(&self, f: impl FnOnce(Option<&T>) -> R) -> R {
        match &*self.phase.lock() {
            Phase::Started(t) => f(Some(t)),
            _ => f(None),
        }
    }

    /// The error a use at `stage` gets: a start when started, a use when
    /// new, anything when closed.
    pub(crate) fn error(&self, stage: Stage) -> Error {
        stage.error(self.recipe, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lifecycle_goes_new_started_closed_and_names_the_recipe_in_every_refusal() {
        let l: Lifecycle<u32> = Lifecycle::new("CuratorCache", "/c");
        assert_eq!(l.stage(), Stage::New);
        assert_eq!(
            l.check(),
            Err(Error::NotStarted {
                recipe: "CuratorCache",
                path: "/c".into()
            })
        );
        // A failed start leaves it new.
        assert!(l.start(|| Err(Error::InvalidArgument("no".into()))).is_err());
        assert_eq!(l.stage(), Stage::New);
        l.start(|| Ok(7)).unwrap();
        assert_eq!(l.check(), Ok(()));
        assert_eq!(l.with(|t| t.copied()), Some(7));
        assert_eq!(
            l.start(|| Ok(8)),
            Err(Error::AlreadyStarted {
                recipe: "CuratorCache",
                path: "/c".into()
            })
        );
        assert_eq!(l.close(), Some(7));
        assert_eq!(l.close(), None, "idempotent");
        let closed = Error::Closed {
            recipe: "CuratorCache",
            path: "/c".into(),
        };
        assert_eq!(l.check(), Err(closed.clone()));
        assert_eq!(l.start(|| Ok(9)), Err(closed));
        assert_eq!(l.with(|t| t.copied()), None);
        // Closed before it started: nothing to give back.
        let never: Lifecycle = Lifecycle::new("SharedValue", "/v");
        assert_eq!(never.close(), None);
        assert!(never.is_closed());
    }

    #[test]
    fn a_stage_kept_in_another_lock_answers_alike() {
        let mut st = Stage::New;
        assert!(matches!(
            st.check("LeaderLatch", "/l"),
            Err(Error::NotStarted {
                recipe: "LeaderLatch",
                ..
            })
        ));
        st.start("LeaderLatch", "/l").unwrap();
        assert!(matches!(
            st.start("LeaderLatch", "/l"),
            Err(Error::AlreadyStarted { .. })
        ));
        st = Stage::Closed;
        assert!(matches!(st.start("LeaderLatch", "/l"), Err(Error::Closed { .. })));
        assert_eq!(
            st.error("LeaderLatch", "/l").to_string(),
            "the LeaderLatch at /l is closed"
        );
    }
}
