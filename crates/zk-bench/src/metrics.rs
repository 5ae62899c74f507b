//! The `metrics` scenario: what the lock figures cost in the uncontended
//! cycle, and (built with `--features metrics`) a counting recorder behind
//! the `metrics` facade.

#[cfg(feature = "metrics")]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(feature = "metrics")]
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_framework::CuratorFramework;
use zk_recipes::InterProcessMutex;

use crate::measure::{percentile, us};

/// The uncontended mutex cycle with the lock figures (`zk_recipes::stats`,
/// and the `metrics` facade when built with `--features metrics`) on and off:
/// many short rounds in pairs (on/off, then off/on), the overhead being the
/// median over pairs of the ratio of their medians, so that drift in the
/// server or the machine hits both alike. Also prints the bookkeeping's own
/// CPU cost per cycle, measured without a server. `ZK_BENCH_AA=1` keeps the
/// figures on in both halves: the "overhead" it prints is the noise.
pub fn metrics_overhead(c: &CuratorFramework, run: Duration) {
    let facade = install_recorder();
    let aa = std::env::var_os("ZK_BENCH_AA").is_some();
    let m = InterProcessMutex::new(c, "/bench/metrics").unwrap();
    for _ in 0..50 {
        drop(m.acquire().unwrap()); // warm-up
    }
    let pairs = ((run.as_secs_f64() / 0.2) as usize).max(10);
    let round = run / (2 * pairs as u32);
    let timed = |on: bool| {
        zk_recipes::set_lock_stats_enabled(c, on || aa);
        let mut v = Vec::new();
        let end = Instant::now() + round;
        while Instant::now() < end {
            let t = Instant::now();
            drop(m.acquire().unwrap());
            v.push(t.elapsed());
        }
        v.sort();
        v
    };
    let (mut all_on, mut all_off, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..pairs {
        let (on, off) = if pair % 2 == 0 {
            let on = timed(true);
            (on, timed(false))
        } else {
            let off = timed(false);
            (timed(true), off)
        };
        let (mon, moff) = (percentile(&on, 0.5), percentile(&off, 0.5));
        if !moff.is_zero() {
            ratios.push(mon.as_secs_f64() / moff.as_secs_f64());
        }
        all_on.extend(on);
        all_off.extend(off);
    }
    zk_recipes::set_lock_stats_enabled(c, true);
    all_on.sort();
    all_off.sort();
    ratios.sort_by(|a, b| a.total_cmp(b));
    let ratio = ratios.get(ratios.len() / 2).copied().unwrap_or(1.0);
    let bookkeeping = zk_recipes::lock_stats_bookkeeping_cost(100_000);
    let moff = percentile(&all_off, 0.5);
    println!("metrics.facade={}", if facade { "on" } else { "off" });
    println!("metrics.uncontended.median_on_us={}", us(percentile(&all_on, 0.5)));
    println!("metrics.uncontended.median_off_us={}", us(moff));
    println!("metrics.uncontended.overhead_pct={:.2}", (ratio - 1.0) * 100.0);
    println!(
        "metrics.uncontended.pairs={} ops_on={} ops_off={}",
        ratios.len(),
        all_on.len(),
        all_off.len()
    );
    println!(
        "metrics.bookkeeping_ns_per_cycle={:.0}",
        bookkeeping.as_secs_f64() * 1e9
    );
    println!(
        "metrics.bookkeeping_pct_of_cycle={:.3}",
        bookkeeping.as_secs_f64() / moff.as_secs_f64().max(1e-9) * 100.0
    );
}

/// Installs a counting recorder as an exporter would (with the `metrics`
/// feature); returns whether the facade is in use.
#[cfg(feature = "metrics")]
fn install_recorder() -> bool {
    use metrics::{
        Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString,
        Unit,
    };
    use std::collections::HashMap;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Cell(AtomicU64);
    impl CounterFn for Cell {
        fn increment(&self, v: u64) {
            self.0.fetch_add(v, Ordering::Relaxed);
        }
        fn absolute(&self, v: u64) {
            self.0.store(v, Ordering::Relaxed);
        }
    }
    impl GaugeFn for Cell {
        fn increment(&self, v: f64) {
            self.0.fetch_add(v as u64, Ordering::Relaxed);
        }
        fn decrement(&self, v: f64) {
            self.0.fetch_sub(v as u64, Ordering::Relaxed);
        }
        fn set(&self, v: f64) {
            self.0.store(v as u64, Ordering::Relaxed);
        }
    }
    impl HistogramFn for Cell {
        fn record(&self, v: f64) {
            self.0.fetch_add(v.to_bits() & 1, Ordering::Relaxed);
        }
    }
    /// Registers each key once (as exporters do) and counts into atomics.
    #[derive(Default)]
    struct Counting(Mutex<HashMap<Key, Arc<Cell>>>);
    impl Counting {
        fn cell(&self, key: &Key) -> Arc<Cell> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(key.clone())
                .or_default()
                .clone()
        }
    }
    impl Recorder for Counting {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(self.cell(key))
        }
        fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::from_arc(self.cell(key))
        }
        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::from_arc(self.cell(key))
        }
    }
    metrics::set_global_recorder(Counting::default()).is_ok()
}

#[cfg(not(feature = "metrics"))]
fn install_recorder() -> bool {
    false
}
