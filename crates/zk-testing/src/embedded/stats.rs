//! Counters for `stats()` and the four-letter words. Imports nothing of the server.

use std::collections::HashMap;

use zk_proto::OpCode;

/// Latency statistics in ms.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Latency {
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    pub count: u64,
    pub last: u64,
}

impl Latency {
    pub fn record(&mut self, ms: u64) {
        if self.count == 0 || ms < self.min {
            self.min = ms;
        }
        self.max = self.max.max(ms);
        self.sum += ms;
        self.count += 1;
        self.last = ms;
    }

    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

/// Server-wide counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub requests: HashMap<OpCode, u64>,
    pub notifications: u64,
    pub received: u64,
    pub sent: u64,
    pub accepted: u64,
    pub lat: Latency,
}
