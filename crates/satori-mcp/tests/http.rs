//! The shared server's front door over real connections, the server in this process: `DELETE`
//! ends a session (200; an unknown one 404), the cap on sessions (an unused session gives way,
//! then 503 with `Retry-After`), idle sessions expire and are gone, `Host` must be named, a
//! body that cannot be read is a 400, a resumed stream starts after its `Last-Event-ID`, and a
//! head or a body that never ends does not hold its connection.
//! The protocol edges every transport shares are in `edges.rs`.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use satori_mcp::transport::http::{Limits, Listen};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod support;

use support::http::{self, Addr, Reply};

fn tcp() -> Listen {
    Listen::Tcp("127.0.0.1:0".parse().unwrap())
}

fn limits(max_sessions: usize, idle_secs: u64) -> Limits {
    Limits {
        max_sessions,
        session_idle: Duration::from_secs(idle_secs),
    }
}

async fn post_json(addr: &Addr, session: Option<&str>, body: serde_json::Value) -> Reply {
    http::send(addr, http::post(session, body.to_string())).await
}

async fn list_tools(addr: &Addr, session: &str) -> Reply {
    post_json(
        addr,
        Some(session),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
    )
    .await
}

async fn delete(addr: &Addr, session: Option<&str>) -> Reply {
    let req = http::request(::http::Method::DELETE, session)
        .body(Full::new(Bytes::new()))
        .unwrap();
    http::send(addr, req).await
}

/// `DELETE` ends the session it names (200) and the session is gone (404 after); an
/// unknown session is a 404 and a `DELETE` naming none a 400.
#[tokio::test]
async fn delete_ends_a_session() {
    let home = tempfile::tempdir().unwrap();
    let (addr, _stop) = http::serve(home.path(), tcp(), Limits::default()).await;
    let session = http::open_session(&addr).await;
    assert_eq!(list_tools(&addr, &session).await.status, 200);
    for (what, session, status) in [
        ("a live session", Some(session.as_str()), 200),
        ("the same again", Some(session.as_str()), 404),
        ("an unknown session", Some("no-such-session"), 404),
        ("no session named", None, 400),
    ] {
        let r = delete(&addr, session).await;
        assert_eq!(r.status, status, "{what}: {}", r.text());
    }
    let r = list_tools(&addr, &session).await;
    assert_eq!(r.status, 404, "a request in an ended session: {}", r.text());
}

/// At the cap, the longest-idle session that made no request gives way to a new one; when
/// every session has made one, a new session is refused with 503 and `Retry-After`, and the
/// sessions in use keep working.
#[tokio::test]
async fn the_session_cap_evicts_unused_sessions_then_refuses() {
    let home = tempfile::tempdir().unwrap();
    let (addr, _stop) = http::serve(home.path(), tcp(), limits(2, 60)).await;
    let used = http::open_session(&addr).await;
    assert_eq!(list_tools(&addr, &used).await.status, 200);
    let unused = http::open_session(&addr).await;
    let newcomer = http::open_session(&addr).await;
    assert_eq!(list_tools(&addr, &unused).await.status, 404, "it gave way");
    assert_eq!(list_tools(&addr, &newcomer).await.status, 200);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "flood", "version": "1"}}});
    let r = post_json(&addr, None, init).await;
    assert_eq!(r.status, 503, "{}", r.text());
    let after: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&after), "Retry-After: {after}");
    assert!(r.text().contains("--max-sessions"), "{}", r.text());
    assert_eq!(list_tools(&addr, &used).await.status, 200);
}

/// An idle session is closed after its expiry (one that never made a request sooner), and
/// one with a stream open is not.
#[tokio::test]
async fn idle_sessions_expire() {
    let home = tempfile::tempdir().unwrap();
    let (addr, _stop) = http::serve(home.path(), tcp(), limits(8, 2)).await;
    let used = http::open_session(&addr).await;
    assert_eq!(list_tools(&addr, &used).await.status, 200);
    let unused = http::open_session(&addr).await;
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(list_tools(&addr, &unused).await.status, 404, "expired");
    assert_eq!(list_tools(&addr, &used).await.status, 200, "still live");
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert_eq!(list_tools(&addr, &used).await.status, 404, "expired");
}

/// Writes `raw` on a connection of its own and reads what the server answers until it
/// closes the connection or `within` passes.
async fn raw_exchange(addr: &Addr, raw: &[u8], within: Duration) -> String {
    let Addr::Tcp(a) = addr else {
        unreachable!("a TCP server")
    };
    let mut s = tokio::net::TcpStream::connect(a).await.unwrap();
    s.write_all(raw).await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(within, s.read_to_end(&mut got)).await;
    String::from_utf8_lossy(&got).into_owned()
}

/// What the front answers to requests no SDK sends: by the raw bytes, the status line
/// expected.
#[tokio::test]
async fn malformed_requests_are_refused_plainly() {
    let home = tempfile::tempdir().unwrap();
    let (addr, _stop) = http::serve(home.path(), tcp(), Limits::default()).await;
    let head = "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\n";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "an empty Host",
            format!("{head}Host: \r\nContent-Length: 2\r\n\r\n{{}}"),
            "HTTP/1.1 400",
        ),
        (
            "no Host",
            format!("{head}Content-Length: 2\r\n\r\n{{}}"),
            "HTTP/1.1 400",
        ),
        (
            "a malformed chunk size",
            format!(
                "{head}Host: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n"
            ),
            "HTTP/1.1 400",
        ),
        (
            "a body that is not JSON",
            format!("{head}Host: localhost\r\nContent-Length: 5\r\n\r\nhello"),
            "HTTP/1.1 400",
        ),
    ];
    for (what, raw, status) in cases {
        let got = raw_exchange(&addr, raw.as_bytes(), Duration::from_secs(30)).await;
        assert!(got.starts_with(status), "{what}: {got}");
    }
}

/// A resumed stream starts after the event named by `Last-Event-ID`: the server's
/// `roots/list` request, which the client already received on its first stream, is not
/// sent again on the second.
#[tokio::test]
async fn a_resumed_stream_starts_after_the_last_event() {
    let home = tempfile::tempdir().unwrap();
    let (addr, _stop) = http::serve(home.path(), tcp(), Limits::default()).await;
    let session = http::open_session_with(&addr, json!({"roots": {}})).await;
    let get = |last: Option<&str>| {
        let mut b = http::request(::http::Method::GET, Some(&session));
        if let Some(last) = last {
            b = b.header("last-event-id", last);
        }
        b.body(Full::new(Bytes::new())).unwrap()
    };
    let asks_roots = |r: &Reply| {
        r.events()
            .into_iter()
            .find(|(_, data)| data.contains("roots/list"))
            .and_then(|(id, _)| id)
    };
    let first = http::read_for(&addr, get(None), Duration::from_secs(2)).await;
    let seen = asks_roots(&first)
        .unwrap_or_else(|| panic!("the first stream asks for roots: {}", first.text()));
    let resumed = http::read_for(&addr, get(Some(&seen)), Duration::from_secs(2)).await;
    assert_eq!(resumed.status, 200, "{}", resumed.text());
    assert_eq!(
        asks_roots(&resumed),
        None,
        "sent again after {seen}: {}",
        resumed.text()
    );
    let bad = http::read_for(&addr, get(Some("next")), Duration::from_secs(2)).await;
    assert_eq!(bad.status, 400, "{}", bad.text());
}

/// A connection that never finishes its request head is closed, and so is one that stops
/// sending a body it announced (408): neither holds the server's descriptor for good.
#[tokio::test]
async fn slow_heads_and_bodies_are_cut_off() {
    let home = tempfile::tempdir().unwrap();
    let (addr, _stop) = http::serve(home.path(), tcp(), Limits::default()).await;
    let body_head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":";
    let cases = [
        ("half a head", "POST /mcp HTTP/1.1\r\nHost: loc", ""),
        ("a body that stops", body_head, "HTTP/1.1 408"),
    ];
    let runs = cases.into_iter().map(|(what, raw, status)| {
        let addr = addr.clone();
        async move {
            let started = std::time::Instant::now();
            let got = raw_exchange(&addr, raw.as_bytes(), Duration::from_secs(40)).await;
            (what, status, got, started.elapsed())
        }
    });
    for (what, status, got, took) in futures_join(runs).await {
        assert!(got.starts_with(status), "{what}: {got:?}");
        assert!(
            took < Duration::from_secs(35),
            "{what}: still open after {took:?}"
        );
    }
}

/// Runs `futures` at once; their outputs in order.
async fn futures_join<F: std::future::Future + Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
