//! A gRPC client of one Milvus service over HTTP/2 (`h2`), plain or TLS: unary calls only,
//! which is all Milvus's API needs. The client owns a small runtime on a thread of its own
//! and its calls block the caller, so the engine's synchronous seam can call it from any
//! thread (a rayon worker, a blocking task of the server, a test).
//!
//! gRPC framing: a request is one HTTP/2 POST to `/<service>/<method>` with
//! `content-type: application/grpc` and a body of one length-prefixed message; the answer is
//! one length-prefixed message and a `grpc-status` trailer (or, for an error without a body,
//! in the headers).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use prost::Message;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use crate::Error;

const SERVICE: &str = "milvus.proto.milvus.MilvusService";
/// Longest wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for one call (an insert of a large batch, a flush).
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest answer accepted.
const MAX_MESSAGE: usize = 256 << 20;

/// Where the server is.
#[derive(Clone)]
pub struct Endpoint {
    /// `host:port`.
    pub authority: String,
    pub tls: bool,
    /// `MILVUS_TOKEN`: an API key (Zilliz Cloud) or `user:password`, sent base64-encoded in
    /// the `authorization` metadata. Kept out of `Debug` and of every error.
    pub token: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("authority", &self.authority)
            .field("tls", &self.tls)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Endpoint {
    /// Parses `MILVUS_ADDRESS`: `host:port`, `http://host:port` or `https://host[:port]`
    /// (TLS, port 443 when none is given, as Zilliz Cloud's endpoints are written).
    pub fn parse(address: &str, token: Option<String>) -> Result<Endpoint, Error> {
        let a = address.trim().trim_end_matches('/');
        let (tls, rest) = if let Some(r) = a.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = a.strip_prefix("http://") {
            (false, r)
        } else {
            (false, a)
        };
        let bad = || {
            Error::Config(format!(
                "MILVUS_ADDRESS={address} is not an address; expected host:port, http://host:port or https://host"
            ))
        };
        if rest.is_empty() || rest.contains('/') || rest.contains('@') {
            return Err(bad());
        }
        let authority = match rest.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                rest.to_string()
            }
            Some(_) => return Err(bad()),
            None if tls => format!("{rest}:443"),
            None => format!("{rest}:19530"),
        };
        Ok(Endpoint {
            authority,
            tls,
            token: token.filter(|t| !t.trim().is_empty()),
        })
    }

    fn host(&self) -> &str {
        self.authority
            .rsplit_once(':')
            .map_or(&self.authority, |(h, _)| h)
    }
}

/// A connection to one Milvus, reopened when it breaks.
pub struct Client {
    endpoint: Endpoint,
    runtime: tokio::runtime::Runtime,
    conn: Arc<Mutex<Option<SendRequest<Bytes>>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

impl Client {
    pub fn new(endpoint: Endpoint) -> Result<Client, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("satori-milvus")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| Error::Config(format!("cannot start the Milvus client: {e}")))?;
        Ok(Client {
            endpoint,
            runtime,
            conn: Arc::default(),
        })
    }

    /// Calls `method` with `request` and decodes its answer; blocks the calling thread.
    pub fn call<Req, Resp>(&self, method: &'static str, request: &Req) -> Result<Resp, Error>
    where
        Req: Message,
        Resp: Message + Default + 'static,
    {
        let body = frame(request);
        let endpoint = self.endpoint.clone();
        let conn = Arc::clone(&self.conn);
        let (tx, rx) = std::sync::mpsc::channel();
        self.runtime.spawn(async move {
            let answer = tokio::time::timeout(CALL_TIMEOUT, unary(&endpoint, &conn, method, body))
                .await
                .unwrap_or_else(|_| {
                    Err(Error::Unavailable(format!(
                        "Milvus at {} did not answer {method} within {} s",
                        endpoint.authority,
                        CALL_TIMEOUT.as_secs()
                    )))
                });
            let _ = tx.send(answer);
        });
        let bytes = rx
            .recv()
            .map_err(|_| Error::Unavailable("the Milvus client stopped".into()))??;
        Resp::decode(bytes).map_err(|e| {
            Error::Protocol(format!(
                "Milvus answered {method} with an unreadable message ({e})"
            ))
        })
    }
}

/// One length-prefixed, uncompressed gRPC message.
fn frame(m: &impl Message) -> Bytes {
    let len = m.encoded_len();
    let mut b = BytesMut::with_capacity(5 + len);
    b.put_u8(0);
    b.put_u32(len as u32);
    m.encode(&mut b).expect("a BytesMut grows");
    b.freeze()
}

async fn connect(endpoint: &Endpoint) -> Result<SendRequest<Bytes>, Error> {
    let unreachable = |e: String| {
        Error::Unavailable(format!(
            "Milvus at {} cannot be reached ({e}); check MILVUS_ADDRESS and that the server is running",
            endpoint.authority
        ))
    };
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&endpoint.authority))
        .await
        .map_err(|_| unreachable("timed out".into()))?
        .map_err(|e| unreachable(e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    let builder = {
        let mut b = h2::client::Builder::new();
        b.initial_window_size(8 << 20)
            .initial_connection_window_size(16 << 20)
            .max_frame_size(1 << 20);
        b
    };
    let send = if endpoint.tls {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| unreachable(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let name = rustls::pki_types::ServerName::try_from(endpoint.host().to_string())
            .map_err(|e| unreachable(e.to_string()))?;
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| unreachable(format!("TLS: {e}")))?;
        let (send, connection) = builder
            .handshake(tls)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        send
    } else {
        let (send, connection) = builder
            .handshake(tcp)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        send
    };
    Ok(send)
}

async fn unary(
    endpoint: &Endpoint,
    conn: &Mutex<Option<SendRequest<Bytes>>>,
    method: &'static str,
    body: Bytes,
) -> Result<Bytes, Error> {
    // A connection the server closed is opened again once.
    for attempt in 0..2 {
        let send = {
            let mut guard = conn.lock().await;
            match guard.as_ref() {
                Some(s) => s.clone(),
                None => {
                    let s = connect(endpoint).await?;
                    *guard = Some(s.clone());
                    s
                }
            }
        };
        match request(endpoint, send, method, body.clone()).await {
            Err(Transport::Broken(e)) => {
                *conn.lock().await = None;
                if attempt == 1 {
                    return Err(Error::Unavailable(format!(
                        "the connection to Milvus at {} broke during {method} ({e})",
                        endpoint.authority
                    )));
                }
            }
            Err(Transport::Failed(e)) => return Err(e),
            Ok(b) => return Ok(b),
        }
    }
    unreachable!("the loop returns")
}

enum Transport {
    /// The connection is unusable: open another one.
    Broken(h2::Error),
    Failed(Error),
}

async fn request(
    endpoint: &Endpoint,
    send: SendRequest<Bytes>,
    method: &'static str,
    body: Bytes,
) -> Result<Bytes, Transport> {
    let scheme = if endpoint.tls { "https" } else { "http" };
    let mut req = http::Request::builder()
        .method("POST")
        .uri(format!(
            "{scheme}://{}/{SERVICE}/{method}",
            endpoint.authority
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("user-agent", concat!("satori/", env!("CARGO_PKG_VERSION")));
    if let Some(token) = &endpoint.token {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(token.trim());
        req = req.header("authorization", encoded);
    }
    let req = req
        .body(())
        .map_err(|e| Transport::Failed(Error::Protocol(e.to_string())))?;
    let mut send = send.ready().await.map_err(Transport::Broken)?;
    let (response, mut stream) = send.send_request(req, false).map_err(Transport::Broken)?;
    stream.send_data(body, true).map_err(Transport::Broken)?;
    let response = response.await.map_err(Transport::Broken)?;
    let (parts, mut recv) = response.into_parts();
    let failed = |e: Error| Transport::Failed(e);
    if parts.status != http::StatusCode::OK {
        return Err(failed(Error::Protocol(format!(
            "Milvus at {} answered {method} with HTTP {}; is MILVUS_ADDRESS the gRPC port (19530 by default)?",
            endpoint.authority, parts.status
        ))));
    }
    // Trailers-only: an error answered in the headers.
    if let Some(status) = grpc_status(&parts.headers) {
        return Err(failed(status_error(endpoint, method, status)));
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.map_err(Transport::Broken)?;
        let _ = recv.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
        if buf.len() > MAX_MESSAGE + 5 {
            return Err(failed(Error::Protocol(format!(
                "Milvus answered {method} with more than {MAX_MESSAGE} bytes"
            ))));
        }
    }
    let trailers = recv.trailers().await.map_err(Transport::Broken)?;
    if let Some(status) = trailers.as_ref().and_then(grpc_status) {
        return Err(failed(status_error(endpoint, method, status)));
    }
    if buf.len() < 5 {
        return Err(failed(Error::Protocol(format!(
            "Milvus answered {method} without a message"
        ))));
    }
    let compressed = buf[0];
    let len = (&buf[1..5]).get_u32() as usize;
    if compressed != 0 || buf.len() < 5 + len {
        return Err(failed(Error::Protocol(format!(
            "Milvus answered {method} with a compressed or truncated message"
        ))));
    }
    Ok(buf.freeze().slice(5..5 + len))
}

/// A non-zero `grpc-status` and its message.
fn grpc_status(headers: &http::HeaderMap) -> Option<(u32, String)> {
    let code: u32 = headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if code == 0 {
        return None;
    }
    let msg = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(percent_decode)
        .unwrap_or_default();
    Some((code, msg))
}

fn status_error(endpoint: &Endpoint, method: &str, (code, msg): (u32, String)) -> Error {
    match code {
        // UNAUTHENTICATED, PERMISSION_DENIED.
        16 | 7 => Error::Auth(format!(
            "Milvus at {} refused the credentials ({msg}); set MILVUS_TOKEN to an API key or user:password it accepts",
            endpoint.authority
        )),
        // UNIMPLEMENTED: not a Milvus, or one too old.
        12 => Error::Protocol(format!(
            "the server at {} does not implement Milvus's {method} ({msg}); is it Milvus 2.4 or newer?",
            endpoint.authority
        )),
        // UNAVAILABLE, DEADLINE_EXCEEDED.
        14 | 4 => Error::Unavailable(format!(
            "Milvus at {} is unavailable ({msg})",
            endpoint.authority
        )),
        _ => Error::Protocol(format!(
            "Milvus answered {method} with gRPC status {code} ({msg})"
        )),
    }
}

/// `grpc-message` is percent-encoded.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(address: &str, expected: &str) {
        let got = match Endpoint::parse(address, Some("tok".into())) {
            Ok(e) => format!("{} tls={}", e.authority, e.tls),
            Err(e) => e.to_string(),
        };
        assert!(got.contains(expected), "{address}: {got}");
    }

    #[test]
    fn addresses() {
        check("localhost:19530", "localhost:19530 tls=false");
        check("http://127.0.0.1:19541/", "127.0.0.1:19541 tls=false");
        check(
            "https://in03-x.api.gcp-us-west1.zillizcloud.com",
            "in03-x.api.gcp-us-west1.zillizcloud.com:443 tls=true",
        );
        check("milvus", "milvus:19530");
        check("http://host:port", "is not an address");
        check("http://user@host:1", "is not an address");
        check("", "is not an address");
        check("http://h:1/db", "is not an address");
    }

    #[test]
    fn the_token_stays_out_of_debug() {
        let e = Endpoint::parse("h:1", Some("secret-token".into())).unwrap();
        assert!(!format!("{e:?}").contains("secret-token"));
    }

    #[test]
    fn grpc_statuses_name_the_fix() {
        let e = Endpoint::parse("h:1", Some("tok".into())).unwrap();
        for (code, expected) in [
            (16, "set MILVUS_TOKEN"),
            (7, "set MILVUS_TOKEN"),
            (12, "is it Milvus 2.4 or newer"),
            (14, "is unavailable"),
            (13, "gRPC status 13"),
        ] {
            let text = status_error(&e, "Search", (code, "why".into())).to_string();
            assert!(
                text.contains(expected) && text.contains("why"),
                "{code}: {text}"
            );
            assert!(!text.contains("tok"), "{text}");
        }
    }

    #[test]
    fn grpc_messages_are_percent_decoded() {
        assert_eq!(percent_decode("a%20b%"), "a b%");
        assert_eq!(percent_decode("collection%3A x"), "collection: x");
    }
}
