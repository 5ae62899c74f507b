//! Counted holds on the switches the parts of a composed fault share: a
//! link between two ensemble nodes cut, a server or node paused, a worker's
//! proxy frozen. A switch is on while any part holds it: the first hold turns
//! it on, the last one given back turns it off, and each part gives back
//! only its own, at its own time. (A part that simply switched it off again
//! would end another part's window early: a `pause-short` resuming the
//! server a `pause-long` of the same composition had paused, the first heal
//! opening every link.)

use std::collections::HashMap;
use std::hash::Hash;
use std::io;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// How many holds each switch `K` has (see the module).
#[derive(Debug)]
pub(crate) struct HoldBook<K> {
    held: Mutex<HashMap<K, usize>>,
    clear: Condvar,
}

impl<K> Default for HoldBook<K> {
    fn default() -> Self {
        HoldBook {
            held: Mutex::new(HashMap::new()),
            clear: Condvar::new(),
        }
    }
}

impl<K: Hash + Eq + Copy> HoldBook<K> {
    fn lock(&self) -> MutexGuard<'_, HashMap<K, usize>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds one hold on each of `keys`; `on(key)` turns on each one that had
    /// none (under the book's lock, so the count and the switch agree). When
    /// `on` fails, the holds taken so far are given back (their switches
    /// turned off by `off`) and its error returned.
    pub(crate) fn take(
        &self,
        keys: &[K],
        mut on: impl FnMut(K) -> io::Result<()>,
        mut off: impl FnMut(K),
    ) -> io::Result<()> {
        let mut held = self.lock();
        for (n, &k) in keys.iter().enumerate() {
            let count = held.entry(k).or_default();
            *count += 1;
            if *count == 1 {
                if let Err(e) = on(k) {
                    held.remove(&k);
                    drop(held);
                    self.give(&keys[..n], &mut off);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Gives back one hold on each of `keys`; `off(key)` turns off each one
    /// no hold is left on (under the book's lock). Wakes the waiters of
    /// [`HoldBook::wait_clear`] when none is left at all. A key with no hold
    /// (given back twice, or after a [`HoldBook::reset`]) is left alone.
    pub(crate) fn give(&self, keys: &[K], mut off: impl FnMut(K)) {
        let mut held = self.lock();
        for k in keys {
            let Some(count) = held.get_mut(k) else { continue };
            *count -= 1;
            if *count == 0 {
                held.remove(k);
                off(*k);
            }
        }
        if held.is_empty() {
            self.clear.notify_all();
        }
    }

    /// Whether any part holds `key` now.
    pub(crate) fn is_held(&self, key: &K) -> bool {
        self.lock().contains_key(key)
    }

    /// Waits until no switch is held, or `deadline`; returns the book, still
    /// locked (so that nothing is held between the wait and what the caller
    /// does next).
    pub(crate) fn wait_clear(&self, deadline: Instant) -> MutexGuard<'_, HashMap<K, usize>> {
        let mut held = self.lock();
        while !held.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            held = self.clear.wait_timeout(held, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        held
    }

    /// Forgets every hold and runs `heal` (which turns every switch off),
    /// under the book's lock; wakes the waiters. Holds still alive give
    /// nothing back afterwards.
    pub(crate) fn reset(&self, heal: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let mut held = self.lock();
        held.clear();
        let r = heal();
        self.clear.notify_all();
        r
    }

    /// Takes a hold on `keys` ([`HoldBook::take`]) given back when the
    /// returned [`Hold`] is dropped (or [`Hold::release`]d), with `off`.
    pub(crate) fn hold<'a>(
        &'a self,
        keys: &[K],
        on: impl FnMut(K) -> io::Result<()>,
        mut off: impl FnMut(K) + Send + 'a,
    ) -> io::Result<Hold<'a, K>> {
        self.take(keys, on, &mut off)?;
        Ok(Hold {
            book: self,
            keys: keys.to_vec(),
            off: Box::new(off),
        })
    }
}

/// One part's holds on some switches ([`HoldBook::hold`]): given back on
/// drop, which turns off each switch no other hold keeps on.
#[must_use = "the switches stay on until the hold is given back"]
pub(crate) struct Hold<'a, K: Hash + Eq + Copy> {
    book: &'a HoldBook<K>,
    keys: Vec<K>,
    off: Box<dyn FnMut(K) + Send + 'a>,
}

impl<K: Hash + Eq + Copy> Hold<'_, K> {
    /// Gives the hold back (the same as dropping it, said where it is
    /// meant).
    pub(crate) fn release(self) {}
}

impl<K: Hash + Eq + Copy> Drop for Hold<'_, K> {
    fn drop(&mut self) {
        let off = &mut self.off;
        self.book.give(&self.keys, off);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashSet;
    use std::io;
    use std::time::{Duration, Instant};

    use super::HoldBook;

    #[test]
    fn a_switch_stays_on_while_any_part_holds_it_and_each_gives_back_only_its_own() {
        let book: HoldBook<(usize, usize)> = HoldBook::default();
        let cut: RefCell<HashSet<(usize, usize)>> = RefCell::default();
        let on = |d| {
            assert!(cut.borrow_mut().insert(d), "{d:?} turned on twice");
            Ok(())
        };
        let off = |d| assert!(cut.borrow_mut().remove(&d), "{d:?} turned off while off");
        // Part A isolates node 0; part B cuts 0 -> 1 one way.
        let a = [(0, 1), (1, 0), (0, 2), (2, 0)];
        book.take(&a, on, off).unwrap();
        book.take(&[(0, 1)], on, off).unwrap();
        assert_eq!(cut.borrow().len(), 4);
        // A gives back: 0 -> 1 stays on for B, the rest goes off.
        book.give(&a, off);
        assert_eq!(*cut.borrow(), HashSet::from([(0, 1)]));
        assert!(book.is_held(&(0, 1)) && !book.is_held(&(1, 0)));
        book.give(&[(0, 1)], off);
        assert!(cut.borrow().is_empty());
        assert!(!book.is_held(&(0, 1)));
        // Given back twice: nothing more happens.
        book.give(&[(0, 1)], |_| panic!("nothing is held"));
    }

    #[test]
    fn a_hold_is_given_back_on_drop_and_a_failed_take_gives_back_what_it_took() {
        let book: HoldBook<u32> = HoldBook::default();
        let on_now: RefCell<HashSet<u32>> = RefCell::default();
        {
            let h = book
                .hold(
                    &[1, 2],
                    |k| {
                        on_now.borrow_mut().insert(k);
                        Ok(())
                    },
                    |_| {},
                )
                .unwrap();
            assert_eq!(book.lock().len(), 2);
            h.release();
        }
        assert!(book.lock().is_empty());
        // The third switch cannot be turned on: the first two are turned
        // off again and nothing stays held.
        let off_now: RefCell<Vec<u32>> = RefCell::default();
        let r = book.take(
            &[5, 6, 7],
            |k| if k == 7 { Err(io::Error::other("no")) } else { Ok(()) },
            |k| off_now.borrow_mut().push(k),
        );
        assert!(r.is_err());
        assert_eq!(*off_now.borrow(), [5, 6]);
        assert!(book.lock().is_empty());
    }

    #[test]
    fn a_waiter_for_no_holds_wakes_at_the_last_give_and_no_later_than_its_deadline() {
        let book: HoldBook<(usize, usize)> = HoldBook::default();
        // Nothing held: at once.
        let t0 = Instant::now();
        assert!(book.wait_clear(t0 + Duration::from_secs(5)).is_empty());
        assert!(t0.elapsed() < Duration::from_secs(1));
        // Held: until the deadline, then held still.
        book.take(&[(1, 2)], |_| Ok(()), |_| {}).unwrap();
        let t0 = Instant::now();
        assert!(!book.wait_clear(t0 + Duration::from_millis(200)).is_empty());
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_millis(200), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        // Given back by another thread after 100 ms: woken then, well
        // before the 10 s deadline.
        std::thread::scope(|s| {
            let t0 = Instant::now();
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                book.give(&[(1, 2)], |_| {});
            });
            assert!(book.wait_clear(t0 + Duration::from_secs(10)).is_empty());
            let waited = t0.elapsed();
            assert!(waited >= Duration::from_millis(100), "{waited:?}");
            assert!(waited < Duration::from_secs(5), "{waited:?}");
        });
        // A reset forgets every hold.
        book.take(&[(0, 1), (1, 0)], |_| Ok(()), |_| {}).unwrap();
        book.reset(|| Ok(())).unwrap();
        assert!(book.wait_clear(Instant::now()).is_empty());
    }
}
