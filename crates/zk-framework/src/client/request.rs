//! What every operation of a [`Client`] does: check its arguments, send its
//! request, and decode the reply.

use std::time::Duration;

use super::handle::Client;
use super::inner::Reply;
use super::watches::WatchReg;
use crate::error::{Error, Result};
use zk_proto::jute::{DecodeError, Reader};
use zk_proto::path::validate_path;
use zk_proto::{Acl, CreateMode, ErrorCode, OpCode};

/// Largest TTL ZooKeeper accepts, ms (2^40 − 1).
const MAX_TTL_MS: u128 = (1 << 40) - 1;

impl Client {
    pub(super) fn server_path(&self, path: &str, sequential: bool) -> Result<String> {
        validate_path(path, sequential)?;
        Ok(self.inner().server_path(path))
    }

    pub(super) fn check_data(&self, data: &[u8]) -> Result<()> {
        let max = self.inner().max_frame;
        if data.len() > max {
            return Err(Error::DataTooLarge { len: data.len(), max });
        }
        Ok(())
    }

    pub(super) fn check_acl(acl: &[Acl], path: &str) -> Result<()> {
        if acl.is_empty() {
            return Err(Error::from_code(ErrorCode::InvalidAcl, path));
        }
        Ok(())
    }

    /// Decodes a successful reply's body; a body that does not decode is a broken
    /// connection (dropped) and the call gets ConnectionLoss.
    pub(super) fn finish<T>(
        &self,
        reply: Reply,
        path: &str,
        decode: impl FnOnce(&mut Reader<'_>) -> std::result::Result<T, DecodeError>,
    ) -> Result<T> {
        if reply.header.err != 0 {
            return Err(Error::from_raw(reply.header.err, path));
        }
        let mut r = reply.body();
        decode(&mut r).map_err(|e| {
            log::warn!("garbage reply body for {path}: {e}");
            self.inner().kill(Some(reply.gen), "garbage reply body");
            Error::ConnectionLoss
        })
    }

    pub(super) fn send(
        &self,
        op: OpCode,
        body: &dyn zk_proto::frame::EncodeDyn,
        watch: Option<WatchReg>,
    ) -> Result<Reply> {
        self.inner()
            .call(op, Some(body), watch.map(Into::into), false, None, self.request_bound())
    }
}

/// Checks a mode/TTL pair; returns the TTL in ms for TTL modes.
pub(super) fn check_ttl(mode: CreateMode, ttl: Option<Duration>) -> Result<Option<i64>> {
    match (mode.is_ttl(), ttl) {
        (true, Some(t)) => {
            let ms = t.as_millis();
            if ms == 0 || ms > MAX_TTL_MS {
                return Err(Error::InvalidArgument(format!(
                    "TTL {t:?} is out of range (1 ms ..= 2^40-1 ms)"
                )));
            }
            Ok(Some(ms as i64))
        }
        (true, None) => Err(Error::InvalidArgument(format!("{mode:?} needs a TTL"))),
        (false, Some(_)) => Err(Error::InvalidArgument(format!("{mode:?} does not take a TTL"))),
        (false, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_rules() {
        assert!(check_ttl(CreateMode::PersistentWithTtl, None).is_err());
        assert!(check_ttl(CreateMode::PersistentWithTtl, Some(Duration::ZERO)).is_err());
        assert!(check_ttl(CreateMode::PersistentWithTtl, Some(Duration::from_millis(1 << 40))).is_err());
        assert_eq!(
            check_ttl(CreateMode::PersistentWithTtl, Some(Duration::from_millis(5))).unwrap(),
            Some(5)
        );
        assert!(check_ttl(CreateMode::Persistent, Some(Duration::from_millis(5))).is_err());
        assert_eq!(check_ttl(CreateMode::Persistent, None).unwrap(), None);
    }
}
