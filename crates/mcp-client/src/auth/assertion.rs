//! Client authentication with a signed JWT (`private_key_jwt`, RFC 7523 section 2.2): the
//! client proves its identity at the token endpoint with a short-lived assertion signed by
//! its private key, so no shared secret is stored anywhere. The key is a PKCS#8 PEM file
//! (P-256 gives ES256, P-384 ES384, RSA RS256); only its path is kept in state files.

use std::path::Path;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_FIXED_SIGNING, EcdsaKeyPair,
    RSA_PKCS1_SHA256, RsaKeyPair,
};
use base64::Engine;
use serde_json::json;

use super::b64url;
use crate::error::{Error, Result};
use crate::files;

/// The `client_assertion_type` of a JWT assertion.
pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is valid: long enough for one request, short enough to be useless
/// if it leaks from a log.
const LIFETIME_S: u64 = 120;

enum Signer {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// A client's private key, loaded from its PEM file.
pub struct ClientKey {
    alg: &'static str,
    signer: Signer,
}

impl ClientKey {
    /// Reads and parses the key at `path`.
    pub fn load(path: &Path) -> Result<ClientKey> {
        let bytes = files::read_optional(path)?.ok_or_else(|| {
            Error::Missing(format!("client key file {} does not exist", path.display()))
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let bad = |why: &str| {
            Error::Usage(format!(
                "client key file {}: {why} (convert a key with `openssl pkcs8 -topk8 -nocrypt`)",
                path.display()
            ))
        };
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
            return Err(bad(
                "the key is encrypted; mcat needs an unencrypted PKCS#8 key",
            ));
        }
        let body = text
            .split_once("-----BEGIN PRIVATE KEY-----")
            .and_then(|(_, rest)| rest.split_once("-----END PRIVATE KEY-----"))
            .map(|(body, _)| body)
            .ok_or_else(|| bad("no PEM block 'BEGIN PRIVATE KEY' (a PKCS#8 private key)"))?;
        let b64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| bad(&format!("the PEM body is not base64: {e}")))?;
        ClientKey::from_pkcs8(&der).ok_or_else(|| bad("not a P-256, P-384 or RSA private key"))
    }

    fn from_pkcs8(der: &[u8]) -> Option<ClientKey> {
        if let Ok(k) = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der) {
            return Some(ClientKey {
                alg: "ES256",
                signer: Signer::Ec(k),
            });
        }
        if let Ok(k) = EcdsaKeyPair::from_pkcs8(&ECDSA_P384_SHA384_FIXED_SIGNING, der) {
            return Some(ClientKey {
                alg: "ES384",
                signer: Signer::Ec(k),
            });
        }
        RsaKeyPair::from_pkcs8(der).ok().map(|k| ClientKey {
            alg: "RS256",
            signer: Signer::Rsa(k),
        })
    }

    /// The JWS algorithm this key signs with.
    pub fn alg(&self) -> &'static str {
        self.alg
    }

    /// A signed assertion that `client_id` is calling, for the authorization server named by
    /// `audience` (its issuer, else its token endpoint), issued at `now_s`.
    pub fn assertion(
        &self,
        client_id: &str,
        audience: &str,
        now_s: u64,
        jti: &str,
    ) -> Result<String> {
        let enc = |v: &serde_json::Value| b64url(v.to_string().as_bytes());
        let header = json!({"alg": self.alg, "typ": "JWT"});
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now_s,
            "exp": now_s + LIFETIME_S,
            "jti": jti,
        });
        let input = format!("{}.{}", enc(&header), enc(&claims));
        let rng = SystemRandom::new();
        let failed = |_| Error::Transport("cannot sign the client assertion".into());
        let signature = match &self.signer {
            Signer::Ec(k) => k
                .sign(&rng, input.as_bytes())
                .map_err(failed)?
                .as_ref()
                .to_vec(),
            Signer::Rsa(k) => {
                let mut sig = vec![0; k.public_modulus_len()];
                k.sign(&RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut sig)
                    .map_err(failed)?;
                sig
            }
        };
        Ok(format!("{input}.{}", b64url(&signature)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, KeyPair, UnparsedPublicKey};

    fn pem(der: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        )
    }

    #[test]
    fn an_es256_assertion_verifies_with_the_public_key() {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        std::fs::write(&path, pem(doc.as_ref())).unwrap();
        let key = ClientKey::load(&path).unwrap();
        assert_eq!(key.alg(), "ES256");

        let jwt = key
            .assertion("client-1", "https://as.example", 1_000, "j1")
            .unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let dec = |s: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s)
                .unwrap()
        };
        let header: serde_json::Value = serde_json::from_slice(&dec(parts[0])).unwrap();
        let claims: serde_json::Value = serde_json::from_slice(&dec(parts[1])).unwrap();
        assert_eq!(header, json!({"alg": "ES256", "typ": "JWT"}));
        assert_eq!(
            claims,
            json!({"iss": "client-1", "sub": "client-1", "aud": "https://as.example",
                   "iat": 1000, "exp": 1000 + LIFETIME_S, "jti": "j1"})
        );
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, pair.public_key().as_ref());
        let signed = format!("{}.{}", parts[0], parts[1]);
        public.verify(signed.as_bytes(), &dec(parts[2])).unwrap();
        // A changed claim no longer verifies.
        let forged = signed.replacen('.', ".e", 1);
        assert!(public.verify(forged.as_bytes(), &dec(parts[2])).is_err());
    }

    #[test]
    fn keys_that_cannot_sign_are_refused_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let check = |name: &str, text: &str, needle: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let e = ClientKey::load(&path).err().unwrap().to_string();
            assert!(e.contains(needle), "{name}: {e}");
        };
        check(
            "sec1.pem",
            "-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----\n",
            "no PEM block",
        );
        check(
            "enc.pem",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAA==\n",
            "encrypted",
        );
        check(
            "junk.pem",
            "-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----\n",
            "not base64",
        );
        check("other.pem", &pem(b"not a key"), "not a P-256, P-384 or RSA");
        let e = ClientKey::load(&dir.path().join("none.pem"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
    }
}
