//! Durations on the command line: parsing `500ms`, `2s`, `1.5`, and printing
//! them back for humans.

use std::time::Duration;

/// Parses a duration: `500ms`, `2s`, `1m`, `1h`, `250us`, or plain (possibly
/// fractional) seconds such as `1.5`.
///
/// # Errors
///
/// A message naming the problem.
pub fn parse_duration(input: &str) -> Result<Duration, String> {
    let s = input.trim();
    let split = s.find(|c: char| c.is_alphabetic() || c == 'µ').unwrap_or(s.len());
    let (num, unit) = (s[..split].trim(), s[split..].trim());
    let scale = match unit {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" | "mins" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "invalid duration {input:?}: unknown unit {other:?} (use ms, s, m or h, e.g. 500ms, 2s, 1m, 1.5)"
            ))
        }
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!(
            "invalid duration {input:?}: expected a non-negative number with an optional unit (500ms, 2s, 1m, 1.5)"
        ));
    }
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {input:?}: {num:?} is not a number"))?;
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("invalid duration {input:?}: out of range"))
}

/// `1.5s`, `300ms`.
pub(crate) fn human(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) && d.subsec_nanos() % 1_000_000 == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        for bad in [
            "",
            "s",
            "-1",
            "1x",
            "abc",
            "1e3",
            "inf",
            "NaN",
            "1..2",
            "1 2",
            "99999999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }
}

#[cfg(test)]
mod human_tests {
    use super::human;
    use std::time::Duration;

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_secs(5)), "5s");
        assert_eq!(human(Duration::from_millis(300)), "300ms");
        assert_eq!(human(Duration::from_millis(1500)), "1.500s");
        assert_eq!(human(Duration::ZERO), "0s");
    }
}
