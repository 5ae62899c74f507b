//! ZooKeeper "four-letter word" admin commands (`srvr`, `stat`, `mntr`, `ruok`, ...).
//!
//! A four-letter word is sent as the first and only 4 bytes of a fresh TCP connection; the
//! server writes a plain-text answer and closes the connection (ZooKeeper 3.8's
//! `FourLetterCommands`; only the words in `4lw.commands.whitelist` answer).

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Sends the four-letter word `cmd` to the server at `addr` and returns its whole answer.
///
/// The function opens a new TCP connection, writes the 4 command bytes, and reads until the
/// server closes the connection. `timeout` bounds the connection attempt (per resolved
/// address) and, separately, the whole exchange after the connection is established (writing
/// the command and reading the answer). Invalid UTF-8 in the answer is replaced with U+FFFD.
///
/// Useful commands on ZooKeeper 3.8 (all of them need `4lw.commands.whitelist=*` except
/// `srvr`): `srvr` (its `Mode:` line says whether the server is serving clients), `stat`,
/// `mntr`, `cons`, `wchs`, `ruok` (answers `imok` even before the server accepts sessions).
///
/// # Errors
///
/// * [`ErrorKind::InvalidInput`] if `cmd` is not exactly 4 bytes long, or if `addr` does not
///   resolve to any socket address.
/// * [`ErrorKind::TimedOut`] if the connection, the write or the read does not complete within
///   `timeout`.
/// * Any other I/O error from resolving `addr`, connecting (for example
///   [`ErrorKind::ConnectionRefused`] when no server listens there), writing or reading.
///   A connection reset after some bytes were received is treated as the end of the answer.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zk_testing::fourlw::four_letter_word;
///
/// let answer = four_letter_word("127.0.0.1:2181", "srvr", Duration::from_secs(2))?;
/// let mode = answer.lines().find_map(|l| l.strip_prefix("Mode: "));
/// println!("server mode: {mode:?}");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn four_letter_word(addr: &str, cmd: &str, timeout: Duration) -> io::Result<String> {
    if cmd.len() != 4 {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!("a four-letter word must be 4 bytes long, got {cmd:?}"),
        ));
    }
    let timeout = if timeout.is_zero() {
        Duration::from_millis(1)
    } else {
        timeout
    };
    let mut stream = connect(addr, timeout)?;
    let deadline = Instant::now() + timeout;

    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(cmd.as_bytes()).map_err(map_timeout)?;
    stream.flush()?;

    let mut answer = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(timed_out(addr, cmd));
        }
        stream.set_read_timeout(Some(deadline - now))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(timed_out(addr, cmd));
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset && !answer.is_empty() => break,
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

fn connect(addr: &str, timeout: Duration) -> io::Result<TcpStream> {
    let addrs: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
    let mut last_err = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.unwrap_or_else(|| {
        io::Error::new(
            ErrorKind::InvalidInput,
            format!("{addr:?} did not resolve to any address"),
        )
    }))
}

fn map_timeout(e: io::Error) -> io::Error {
    if e.kind() == ErrorKind::WouldBlock {
        io::Error::new(ErrorKind::TimedOut, e)
    } else {
        e
    }
}

fn timed_out(addr: &str, cmd: &str) -> io::Error {
    io::Error::new(
        ErrorKind::TimedOut,
        format!("four-letter word {cmd:?} to {addr} timed out"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    #[test]
    fn rejects_commands_that_are_not_four_bytes() {
        let err = four_letter_word("127.0.0.1:1", "stats", Duration::from_secs(1)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn reads_the_answer_until_eof() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut cmd = [0u8; 4];
            s.read_exact(&mut cmd).unwrap();
            assert_eq!(&cmd, b"srvr");
            s.write_all(b"Zookeeper version: test\nMode: standalone\n").unwrap();
        });
        let answer = four_letter_word(&addr, "srvr", Duration::from_secs(5)).unwrap();
        assert!(answer.contains("Mode: standalone"), "{answer}");
        server.join().unwrap();
    }

    #[test]
    fn times_out_when_the_server_never_answers() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        // The listener accepts (via the backlog) but never answers or closes.
        let started = Instant::now();
        let err = four_letter_word(&addr, "srvr", Duration::from_millis(200)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(listener);
    }

    #[test]
    fn connection_refused_is_an_error() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let addr = format!("127.0.0.1:{port}");
        assert!(four_letter_word(&addr, "ruok", Duration::from_secs(1)).is_err());
    }
}
