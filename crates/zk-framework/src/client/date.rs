//! Calendar dates from Unix days, for the UTC times in the TLS error messages
//! (`tls.rs`: a certificate's validity against the clock).
//!
//! Kept hand-written rather than taken from a date crate, because none is in
//! the library's dependency tree: `jiff` is built only for env_logger and
//! `zk-testing` (binaries and tests), `time` only for rcgen in `zk-testing`.
//! Measured, `jiff` (without default features, as env_logger has it) would add
//! two crates (`jiff`, `jiff-core`) and about 5.5 s of CPU to a clean build for
//! every user of `zk-framework`, in place of one 10-line function of integer
//! arithmetic (Howard Hinnant's published algorithm). Its `Timestamp` also
//! stops at 9999-12-30T22:00Z, short of RFC 5280's "no expiry" notAfter
//! (`99991231235959Z`). The tests check this function against `jiff` (a
//! dev-dependency) on every day `jiff` can name, years -9999 to 9999.

/// The proleptic Gregorian `(year, month 1..=12, day 1..=31)` of `days` since
/// 1970-01-01 (negative before it), by Howard Hinnant's `civil_from_days`.
pub(super) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn the_epoch_and_its_neighbours() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_417), (2025, 11, 25));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn leap_days_and_century_rules() {
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1)); // 2100 is not a leap year
    }

    #[test]
    fn every_day_jiff_knows_agrees_with_jiff() {
        use jiff::civil::Date;
        let ymd = |d: Date| (i64::from(d.year()), d.month() as u32, d.day() as u32);
        let (mut days, mut date) = (0i64, Date::constant(1970, 1, 1));
        while let Ok(next) = date.tomorrow() {
            assert_eq!(civil_from_days(days), ymd(date), "{date}");
            (days, date) = (days + 1, next);
        }
        assert_eq!((civil_from_days(days), date), ((9999, 12, 31), Date::MAX));
        let (mut days, mut date) = (0i64, Date::constant(1970, 1, 1));
        while let Ok(prev) = date.yesterday() {
            assert_eq!(civil_from_days(days), ymd(date), "{date}");
            (days, date) = (days - 1, prev);
        }
        assert_eq!((civil_from_days(days), date), ((-9999, 1, 1), Date::MIN));
    }
}
