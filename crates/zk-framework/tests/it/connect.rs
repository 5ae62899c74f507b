//! `block_until_connected` reports its own timeout as `ConnectTimeout`, not as a
//! lost connection.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use zk_framework::{CuratorFramework, Error, RetryOneTime};

/// A local port nothing listens on.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[test]
fn block_until_connected_times_out_with_connect_timeout() {
    let c = CuratorFramework::builder()
        .connect_string(format!("127.0.0.1:{}", closed_port()))
        .connection_timeout(Duration::from_millis(200))
        .retry_policy(RetryOneTime::new(Duration::from_millis(10)))
        .build()
        .expect("building needs no server");
    let waited = Duration::from_millis(300);
    let start = Instant::now();
    let err = c.block_until_connected(waited).unwrap_err();
    assert!(start.elapsed() >= waited);
    assert_eq!(err, Error::ConnectTimeout { waited });
    assert_ne!(err, Error::ConnectionLoss);
    assert!(err.is_retryable());
    assert_eq!(err.to_string(), "not connected within 300ms");
    assert_eq!(
        c.block_until_connected(Duration::ZERO),
        Err(Error::ConnectTimeout { waited: Duration::ZERO })
    );
    c.close();
    assert_eq!(c.block_until_connected(Duration::from_secs(1)), Err(Error::Closed));
}
