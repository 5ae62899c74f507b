//! The client side of DIGEST-MD5 (RFC 2831) as ZooKeeper's Java client speaks
//! it: an empty first token, the response to the server's challenge (realm
//! `zk-sasl-md5`, URI `zookeeper/zk-sasl-md5`, the user as authzid), then the
//! server's `rspauth` checked: a server that cannot prove it knows the
//! password is refused.

use zk_proto::sasl::{parse_directives, DigestChallenge, DigestResponse};

use super::{Mechanism, Secret, Step, DIGEST_MD5};
use crate::error::{SaslError, SaslErrorKind};

enum Stage {
    Start,
    Challenged,
    Answered(Vec<u8>),
    Done,
}

pub(super) struct DigestMd5 {
    user: String,
    password: Secret,
    stage: Stage,
}

impl DigestMd5 {
    pub(super) fn new(user: &str, password: &Secret) -> DigestMd5 {
        DigestMd5 {
            user: user.to_string(),
            password: password.clone(),
            stage: Stage::Start,
        }
    }
}

fn protocol(message: impl Into<String>) -> SaslError {
    SaslError::new(SaslErrorKind::Protocol, DIGEST_MD5, message)
}

impl Mechanism for DigestMd5 {
    fn name(&self) -> &'static str {
        DIGEST_MD5
    }

    fn initial(&mut self) -> Result<Vec<u8>, SaslError> {
        self.stage = Stage::Challenged;
        Ok(Vec::new())
    }

    fn step(&mut self, reply: Option<&[u8]>) -> Result<Step, SaslError> {
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Challenged => {
                let Some(token) = reply else {
                    return Err(protocol("the server sent no challenge"));
                };
                let challenge = DigestChallenge::parse(token).map_err(|e| {
                    protocol(format!(
                        "the server's first answer is not a DIGEST-MD5 challenge ({e}): does it speak another mechanism?"
                    ))
                })?;
                if !challenge.offers_auth() {
                    return Err(protocol(format!("the server offers qop {:?}, not auth", challenge.qop)));
                }
                let cnonce = uuid::Uuid::new_v4().simple().to_string();
                let response = DigestResponse::client(&self.user, self.password.expose(), &challenge.nonce, &cnonce);
                let expected = response
                    .verify(self.password.expose(), &challenge.nonce)
                    .ok_or_else(|| protocol("could not compute the expected rspauth"))?;
                self.stage = Stage::Answered(expected);
                Ok(Step::Send(response.encode()))
            }
            Stage::Answered(expected) => {
                let Some(token) = reply else {
                    return Err(protocol(
                        "the server accepted without proving it knows the password (no rspauth)",
                    ));
                };
                let ok = parse_directives(token)
                    .ok()
                    .and_then(|d| d.into_iter().find(|(k, _)| k == "rspauth"))
                    .is_some_and(|(_, v)| format!("rspauth={v}").as_bytes() == expected.as_slice());
                if ok {
                    Ok(Step::Done)
                } else {
                    Err(protocol("the server's rspauth does not prove it knows the password"))
                }
            }
            Stage::Start | Stage::Done => Err(protocol("a SASL reply after the exchange ended")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_reply(token: &[u8], nonce: &str, password: &str) -> Option<Vec<u8>> {
        DigestResponse::parse(token).ok()?.verify(password, nonce)
    }

    #[test]
    fn a_full_exchange_against_the_server_side() {
        let mut m = DigestMd5::new("bob", &Secret("bobsecret".into()));
        assert!(m.initial().unwrap().is_empty());
        let Step::Send(resp) = m.step(Some(&DigestChallenge::server("n1"))).unwrap() else {
            panic!("no response")
        };
        let rspauth = server_reply(&resp, "n1", "bobsecret").unwrap();
        assert!(matches!(m.step(Some(&rspauth)).unwrap(), Step::Done));
    }

    #[test]
    fn a_server_that_does_not_know_the_password_is_refused() {
        let mut m = DigestMd5::new("bob", &Secret("bobsecret".into()));
        m.initial().unwrap();
        let Step::Send(resp) = m.step(Some(&DigestChallenge::server("n1"))).unwrap() else {
            panic!("no response")
        };
        // rspauth computed with another password.
        let parsed = DigestResponse::parse(&resp).unwrap();
        let forged = DigestResponse::client("bob", "other", "n1", &parsed.cnonce)
            .verify("other", "n1")
            .unwrap();
        let e = m.step(Some(&forged)).unwrap_err();
        assert_eq!(e.kind(), SaslErrorKind::Protocol);
        assert!(!e.to_string().contains("bobsecret"));
    }

    #[test]
    fn garbage_challenges_are_protocol_errors() {
        for bad in [&b"\x60\x82\x02\xc5"[..], b"", b"nonce=\"x\""] {
            let mut m = DigestMd5::new("bob", &Secret("pw".into()));
            m.initial().unwrap();
            assert_eq!(m.step(Some(bad)).unwrap_err().kind(), SaslErrorKind::Protocol);
        }
        let mut m = DigestMd5::new("bob", &Secret("pw".into()));
        m.initial().unwrap();
        assert_eq!(m.step(None).unwrap_err().kind(), SaslErrorKind::Protocol);
    }
}
