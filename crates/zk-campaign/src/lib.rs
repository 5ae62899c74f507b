//! The fault campaign's library part: the history a campaign logs
//! ([`history`]) and the checker that judges it ([`checker`]). The binary
//! `zk-campaign` (src/main.rs) runs the campaign itself: a server, fault
//! proxies, worker processes and the faults; see its `--help` and
//! `scripts/campaign.sh`.
//!
//! ```
//! use zk_campaign::checker::{check, CheckOptions};
//! use zk_campaign::history::History;
//!
//! // Two mutex sections on one lock that overlap: a violation.
//! let h = History::from_lines([
//!     "S 10 0 1 /l mutex 5 a 100",
//!     "E 10 0 1 /l mutex 5 a 100 200 - - - Held Held 1 ok",
//!     "S 11 0 1 /l mutex 6 b 150",
//!     "E 11 0 1 /l mutex 6 b 150 250 - - - Held Held 1 ok",
//! ]);
//! let report = check(&h, &CheckOptions::default());
//! assert!(report.violations.iter().any(|v| v.starts_with("overlap on /l")));
//! ```

pub mod checker;
pub mod history;
