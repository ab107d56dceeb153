//! The protocol edge every transport shares: what becomes of each message a client sends
//! (handed to rmcp, answered here, or dropped) and how an answer rmcp's types cannot express
//! is written, whatever carries the bytes (`stdio`'s lines today). The edges rmcp 3.9 leaves
//! open are answered here instead of in rmcp. rmcp's own `AsyncRwTransport`
//! (`transport/async_rw.rs`)
//! - ignores a line that is not JSON, where JSON-RPC wants a `-32700` parse error (id null);
//! - answers JSON that is not a message with `-32600` but no id, even when the id is readable;
//! - parses a request for a known method with unusable params (`tools/call` without a name)
//!   into its catch-all `CustomRequest`, which the handler answers `-32601` (method not found)
//!   although the method exists: the params are what is wrong (`-32602`).
//!
//! It also guards rmcp's server handshake (`serve_server_with_ct_inner` in
//! `service/server.rs`), which ends the whole session with an error when a message before
//! `initialize` is a notification or a response, and answers a plain request before
//! `initialize` with an error about the 2026-07-28 request `_meta`, which confuses a client of
//! an earlier revision. Until rmcp has left its handshake loop, the policy drops
//! notifications and responses (the spec lets a server ignore them; nothing may answer a
//! notification), answers a request that carries no `_meta` protocol version itself (the
//! session is not initialized), and passes `initialize`, `ping`, `server/discover` and
//! self-describing 2026-07-28 requests on to rmcp.
//!
//! rmcp's service loop (`serve_inner` in `service.rs`) keys the requests it is running by id
//! alone: a second request reusing the id of one still in flight replaces the first one's
//! cancellation token, and whichever answer comes second is dropped as "cancelled", so one of
//! the two requests is never answered. The policy keeps the ids it has handed to rmcp
//! and not yet seen answered (or cancelled) and answers a reuse itself with `-32600`, naming
//! the id in the message and carrying it as `id`, as JSON-RPC wants of every answer whose
//! request id could be read: the client learns at once which of its requests was refused.
//!
//! A message that cannot be parsed (not JSON, invalid UTF-8, nested deeper than serde_json's
//! 128 levels, longer than a transport takes as one message) is answered with its request id
//! when a cheap scan of the top-level object finds one, so the caller stops waiting at once.
//! An id rmcp's type cannot hold (a number with a fraction or beyond 64-bit signed integers)
//! is refused with `-32600` and echoed as it was sent; `"id": null` is left for ids that cannot be read.
//!
//! The happy path costs what rmcp's did: one parse per message into rmcp's message type.

use std::collections::HashSet;

use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorData,
    GetMeta, InitializeRequestParams, JsonRpcMessage, PaginatedRequestParams, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use serde_json::Value;

/// Where rmcp's session stands, as far as the policy must know.
#[derive(Debug)]
enum Lifecycle {
    /// rmcp is in its handshake loop. `asked` is the last request handed to it while rmcp
    /// has not answered it: rmcp answers every request of that loop before it reads again,
    /// so a read with a request still unanswered means rmcp has started the session.
    Handshake { asked: Option<RequestId> },
    /// The session runs; every message goes to rmcp.
    Open,
}

/// An error answer rmcp's message type cannot express: to a message whose id is unknown
/// (`"id": null`), or whose id is a number rmcp's ids cannot hold (echoed as sent).
#[derive(serde::Serialize)]
struct RawError<'a> {
    jsonrpc: &'static str,
    id: Option<&'a serde_json::Number>,
    error: &'a ErrorData,
}

/// A request id as the client wrote it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SentId {
    /// An id rmcp's type holds: a string or a 64-bit signed integer.
    Id(RequestId),
    /// A number it cannot hold (`1.5`, `1e3`, `2^63`): only an error can answer it.
    Number(serde_json::Number),
}

impl SentId {
    /// The id `value` names, if it is one: a string or a number.
    fn read(value: &Value) -> Option<SentId> {
        match value {
            Value::Number(n) => Some(match n.as_i64() {
                Some(i) => SentId::Id(RequestId::Number(i)),
                None => SentId::Number(n.clone()),
            }),
            Value::String(s) => Some(SentId::Id(RequestId::String(s.as_str().into()))),
            _ => None,
        }
    }
}

/// An answer the server's edge owes the client itself (rmcp never sees its message).
// Not boxed: an owed answer is moved once, and a box would cost every answer an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Owed {
    /// In rmcp's type.
    Message(ServerJsonRpcMessage),
    /// An error to a request whose id is a number rmcp's ids cannot hold.
    ToNumber(serde_json::Number, ErrorData),
}

impl Owed {
    /// The error `error`, answered to `id` (`null` when unknown).
    fn error(error: ErrorData, id: Option<SentId>) -> Owed {
        match id {
            Some(SentId::Number(n)) => Owed::ToNumber(n, error),
            Some(SentId::Id(id)) => Owed::Message(ServerJsonRpcMessage::error(error, Some(id))),
            None => Owed::Message(ServerJsonRpcMessage::error(error, None)),
        }
    }
}

/// The policy's memory of one session: where rmcp's handshake stands and which requests
/// are in flight. One per session, whatever its transport.
#[derive(Debug)]
pub(crate) struct MessagePolicy {
    lifecycle: Lifecycle,
    /// Ids of the requests handed to rmcp and not yet answered or cancelled.
    in_flight: HashSet<RequestId>,
}

impl MessagePolicy {
    /// A session before `initialize`.
    pub fn new() -> Self {
        MessagePolicy {
            lifecycle: Lifecycle::Handshake { asked: None },
            in_flight: HashSet::new(),
        }
    }

    /// A session past its handshake: one the HTTP transport made, whose id reaches its
    /// client with the answer to `initialize`.
    pub fn open() -> Self {
        MessagePolicy {
            lifecycle: Lifecycle::Open,
            in_flight: HashSet::new(),
        }
    }

    /// rmcp asks for the next message: if a request it was handed during its handshake is
    /// still unanswered, rmcp has started the session (see [`Lifecycle::Handshake`]).
    pub fn reading(&mut self) {
        if let Lifecycle::Handshake { asked: Some(_) } = self.lifecycle {
            self.lifecycle = Lifecycle::Open;
        }
    }

    /// What becomes of one message's text (a line without its `\n`): handed to rmcp (and
    /// counted in flight when it is a request), answered here, or dropped.
    pub fn receive(&mut self, text: &[u8]) -> Verdict {
        match classify(text) {
            Verdict::Message(msg) => match self.admit(msg) {
                Verdict::Message(msg) => {
                    if let JsonRpcMessage::Request(r) = &msg {
                        self.in_flight.insert(r.id.clone());
                    }
                    Verdict::Message(msg)
                }
                other => other,
            },
            other => other,
        }
    }

    /// Decides what becomes of a parsed message: handed to rmcp, answered here, or dropped.
    fn admit(&mut self, msg: ClientJsonRpcMessage) -> Verdict {
        let msg = match self.track(msg) {
            Ok(msg) => msg,
            Err(owed) => return Verdict::Answer(owed),
        };
        if let JsonRpcMessage::Request(r) = &msg
            && let ClientRequest::CustomRequest(c) = &r.request
            && let Some(problem) = params_problem(&c.method, c.params.as_ref())
        {
            return Verdict::Answer(Owed::Message(ServerJsonRpcMessage::error(
                ErrorData::invalid_params(problem, None),
                Some(r.id.clone()),
            )));
        }
        let Lifecycle::Handshake { asked } = &mut self.lifecycle else {
            return Verdict::Message(msg);
        };
        match &msg {
            JsonRpcMessage::Request(r) => {
                let opens = matches!(
                    r.request,
                    ClientRequest::InitializeRequest(_)
                        | ClientRequest::PingRequest(_)
                        | ClientRequest::DiscoverRequest(_)
                ) || r.request.get_meta().protocol_version().is_some();
                if opens {
                    *asked = Some(r.id.clone());
                    Verdict::Message(msg)
                } else {
                    Verdict::Answer(Owed::Message(ServerJsonRpcMessage::error(
                        ErrorData::invalid_request(
                            format!(
                                "Server not initialized: send initialize before {}",
                                r.request.method()
                            ),
                            None,
                        ),
                        Some(r.id.clone()),
                    )))
                }
            }
            // Before the session exists a notification has nothing to act on, and a
            // response answers nothing this server asked.
            JsonRpcMessage::Notification(_)
            | JsonRpcMessage::Response(_)
            | JsonRpcMessage::Error(_) => Verdict::Skip,
        }
    }

    /// Refuses a request whose id is still in flight (see the module doc) and forgets the id
    /// of a cancelled request, whose answer rmcp drops.
    fn track(&mut self, msg: ClientJsonRpcMessage) -> Result<ClientJsonRpcMessage, Owed> {
        match &msg {
            JsonRpcMessage::Request(r) if self.in_flight.contains(&r.id) => {
                // Answered with the id, which is why this answer is never noted as the end
                // of the first request's time in flight (`note_sent` sees rmcp's only).
                Err(Owed::Message(ServerJsonRpcMessage::error(
                    ErrorData::invalid_request(
                        format!(
                            "Invalid request: id {} is already used by a request in flight",
                            id_json(&r.id)
                        ),
                        None,
                    ),
                    Some(r.id.clone()),
                )))
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.in_flight.remove(id);
                }
                Ok(msg)
            }
            _ => Ok(msg),
        }
    }

    /// The answer to request `id` has ended without the policy seeing it (the HTTP
    /// transport sees a response stream end, not its messages): the id may be used again.
    pub fn finished(&mut self, id: &RequestId) {
        self.in_flight.remove(id);
    }

    /// Follows rmcp's answers: they end a request's time in flight, and during the handshake
    /// they tell where rmcp stands (see [`Lifecycle::Handshake`]).
    pub fn note_sent(&mut self, msg: &ServerJsonRpcMessage) {
        match msg {
            JsonRpcMessage::Response(r) => {
                self.in_flight.remove(&r.id);
            }
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.in_flight.remove(id);
                }
            }
            _ => {}
        }
        let Lifecycle::Handshake { asked } = &mut self.lifecycle else {
            return;
        };
        match msg {
            JsonRpcMessage::Response(r)
                if matches!(r.result, ServerResult::InitializeResult(_)) =>
            {
                self.lifecycle = Lifecycle::Open;
            }
            JsonRpcMessage::Response(r) if asked.as_ref() == Some(&r.id) => *asked = None,
            JsonRpcMessage::Error(e) if e.id.is_some() && *asked == e.id => *asked = None,
            _ => {}
        }
    }
}

/// The answer to a message longer than a transport takes: `-32600`, to the id its start
/// names (`id` from [`peek_id`] on the bytes read before the limit).
pub(crate) fn too_long(id: Option<SentId>, limit: &str) -> Owed {
    Owed::error(
        ErrorData::invalid_request(
            format!("Invalid request: a message is at most {limit}"),
            None,
        ),
        id,
    )
}

/// Writes `msg` as JSON into `buf` (cleared first). JSON-RPC 2.0 wants `"id": null` on an
/// error whose request id could not be read (parse error, invalid request); rmcp's type
/// leaves the key out instead, so such an error is written by hand.
pub(crate) fn encode(msg: &ServerJsonRpcMessage, buf: &mut Vec<u8>) -> serde_json::Result<()> {
    buf.clear();
    match msg {
        JsonRpcMessage::Error(e) if e.id.is_none() => encode_raw(None, &e.error, buf),
        _ => serde_json::to_writer(buf, msg),
    }
}

/// Writes an error answer to `id` (`null` when `None`) into `buf` (cleared first).
fn encode_raw(
    id: Option<&serde_json::Number>,
    error: &ErrorData,
    buf: &mut Vec<u8>,
) -> serde_json::Result<()> {
    buf.clear();
    serde_json::to_writer(
        buf,
        &RawError {
            jsonrpc: "2.0",
            id,
            error,
        },
    )
}

impl Owed {
    /// Writes the answer as JSON into `buf` (cleared first).
    pub fn encode(&self, buf: &mut Vec<u8>) -> serde_json::Result<()> {
        match self {
            Owed::Message(msg) => encode(msg, buf),
            Owed::ToNumber(id, error) => encode_raw(Some(id), error, buf),
        }
    }
}

/// An id as JSON, for messages that name it.
fn id_json(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_else(|_| id.to_string())
}

/// What a message turned out to be.
pub(crate) enum Verdict {
    // Neither variant is boxed: a verdict is moved once, and a box would cost every message
    // an allocation.
    Message(ClientJsonRpcMessage),
    Answer(Owed),
    Skip,
}

/// Reads one line (without its `\n`) as a client message, or says how to answer it.
fn classify(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // RFC 8259 lets a parser ignore a byte order mark; some Windows clients send one.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(msg) => Verdict::Message(msg),
        // Invalid UTF-8 and nesting beyond serde_json's 128 levels are syntax errors too.
        Err(e) if e.is_syntax() || e.is_eof() => Verdict::Answer(Owed::error(
            ErrorData::parse_error(format!("Parse error: {e}"), None),
            peek_id(line),
        )),
        Err(e) => not_a_message(line, &e),
    }
}

/// Well-formed JSON that is not a client message: a notification is dropped (nothing may
/// answer one), a malformed response too; anything else is an invalid request, answered
/// with its id when the id is readable.
fn not_a_message(line: &[u8], e: &serde_json::Error) -> Verdict {
    let invalid = |id: Option<SentId>| {
        let message = match &id {
            Some(SentId::Number(n)) => format!(
                "Invalid request: id {n} is neither a string nor an integer from -2^63 to 2^63-1"
            ),
            _ => format!("Invalid request: {e}"),
        };
        Verdict::Answer(Owed::error(ErrorData::invalid_request(message, None), id))
    };
    let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(line) else {
        // An array is a JSON-RPC batch, which MCP dropped in 2025-06-18.
        return invalid(None);
    };
    let id = m.get("id").and_then(SentId::read);
    let method = m.get("method").and_then(Value::as_str);
    let is_v2 = m.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    match (method, id) {
        (Some(_), _) if !m.contains_key("id") => Verdict::Skip,
        (None, _) if m.contains_key("result") || m.contains_key("error") => Verdict::Skip,
        (Some(method), Some(SentId::Id(id))) if is_v2 => {
            match params_problem(method, m.get("params")) {
                Some(problem) => Verdict::Answer(Owed::Message(ServerJsonRpcMessage::error(
                    ErrorData::invalid_params(problem, None),
                    Some(id),
                ))),
                None => invalid(Some(SentId::Id(id))),
            }
        }
        (_, id) => invalid(id),
    }
}

/// The request id of a line that does not parse, when its top-level object names one before
/// the damage: a scan that skips every other value without parsing or recursing, so it costs
/// one pass over the bytes whatever they hold. Only a number or a string id counts.
pub(crate) fn peek_id(line: &[u8]) -> Option<SentId> {
    let mut s = Scan { b: line, i: 0 };
    s.space();
    s.eat(b'{')?;
    loop {
        s.space();
        let key = s.string()?;
        s.space();
        s.eat(b':')?;
        s.space();
        let start = s.i;
        s.value()?;
        if key == b"id" {
            return SentId::read(&serde_json::from_slice::<Value>(&line[start..s.i]).ok()?);
        }
        s.space();
        s.eat(b',')?;
    }
}

/// A cursor over raw JSON bytes for [`peek_id`]; every step fails at the end of the bytes.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn space(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (*self.b.get(self.i)? == byte).then(|| self.i += 1)
    }

    /// A string's raw body (escapes left as written); the cursor ends after its quote.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        loop {
            match *self.b.get(self.i)? {
                b'"' => break,
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
        self.i += 1;
        Some(&self.b[start..self.i - 1])
    }

    /// Skips one value: a string, a container (by counting brackets) or a scalar.
    fn value(&mut self) -> Option<()> {
        match *self.b.get(self.i)? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.b.get(self.i)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                let start = self.i;
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| !matches!(c, b',' | b'}' | b']') && !c.is_ascii_whitespace())
                {
                    self.i += 1;
                }
                // A scalar cut off by the end of the bytes may be cut short.
                self.b.get(self.i)?;
                (self.i > start).then_some(())
            }
        }
    }
}

/// For a method this server serves, why `params` do not fit it; `None` for any other method
/// (rmcp answers those `-32601`). Only called on the error path, so the second parse that
/// finds the reason costs nothing on the way of a good request.
fn params_problem(method: &str, params: Option<&Value>) -> Option<String> {
    let served = matches!(
        method,
        "initialize" | "ping" | "server/discover" | "tools/list" | "tools/call"
    ) || method == LOGGING_SET_LEVEL;
    if !served {
        return None;
    }
    let Some(params) = params else {
        return Some(format!("Invalid params for {method}: params are required"));
    };
    let reason = match method {
        "tools/call" => reason::<CallToolRequestParams>(params),
        "initialize" => reason::<InitializeRequestParams>(params),
        "tools/list" => reason::<Option<PaginatedRequestParams>>(params),
        LOGGING_SET_LEVEL => set_level_reason(params),
        _ => None,
    };
    Some(match reason {
        Some(r) => format!("Invalid params for {method}: {r}"),
        None => format!("Invalid params for {method}"),
    })
}

const LOGGING_SET_LEVEL: &str = "logging/setLevel";

fn reason<T: serde::de::DeserializeOwned>(params: &Value) -> Option<String> {
    T::deserialize(params).err().map(|e| e.to_string())
}

// rmcp marks the logging types deprecated (SEP-2577) while every protocol revision this
// server speaks still has `logging/setLevel`.
#[allow(deprecated)]
fn set_level_reason(params: &Value) -> Option<String> {
    reason::<rmcp::model::SetLevelRequestParams>(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        let owed = match classify(line.as_bytes()) {
            Verdict::Answer(a) => a,
            Verdict::Message(m) => panic!("parsed as a message: {m:?}"),
            Verdict::Skip => panic!("skipped"),
        };
        // The bytes a transport would write, read back.
        let mut buf = Vec::new();
        owed.encode(&mut buf).unwrap();
        serde_json::from_slice(&buf).unwrap()
    }

    #[test]
    fn garbage_is_a_parse_error_without_id() {
        let a = answer("hello");
        assert_eq!(a["error"]["code"], -32700, "{a}");
        assert!(a["id"].is_null(), "{a}");
        assert_eq!(answer("{\"jsonrpc\":")["error"]["code"], -32700);
    }

    #[test]
    fn blank_lines_and_bad_notifications_are_skipped() {
        assert!(matches!(classify(b"  \r"), Verdict::Skip));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#),
            Verdict::Skip
        ));
    }

    /// An invalid request is answered with its id whenever the id can be read, even one
    /// rmcp's ids cannot hold; `null` only when there is none to read.
    #[test]
    fn json_that_is_no_message_is_an_invalid_request() {
        #[track_caller]
        fn check(line: &str, id: Value) {
            let a = answer(line);
            assert_eq!(a["error"]["code"], -32600, "{line}: {a}");
            assert_eq!(a.get("id"), Some(&id), "{line}: {a}");
            assert_eq!(a["jsonrpc"], "2.0", "{line}: {a}");
        }
        check("[1,2]", Value::Null);
        check(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, Value::Null);
        check(
            r#"{"jsonrpc":"1.0","id":4,"method":"tools/list"}"#,
            4.into(),
        );
        check(r#"{"id":5,"method":"tools/list"}"#, 5.into());
        check(r#"{"jsonrpc":"2.0","id":6,"method":7}"#, 6.into());
        check(r#"{"jsonrpc":"2.0","id":"s","method":null}"#, "s".into());
        check(r#"{"jsonrpc":"2.0","id":8}"#, 8.into());
        check(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, 1.5.into());
        check(
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
            u64::MAX.into(),
        );
        check(
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
        );
        check(
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            Value::Null,
        );
        let odd = answer(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
        assert_eq!(
            odd["error"]["message"],
            "Invalid request: id 1.5 is neither a string nor an integer from -2^63 to 2^63-1"
        );
    }

    #[test]
    fn ids_are_read_from_lines_that_do_not_parse() {
        #[track_caller]
        fn check(line: &[u8], id: Option<SentId>) {
            assert_eq!(peek_id(line), id, "{}", String::from_utf8_lossy(line));
        }
        let n = |i| Some(SentId::Id(RequestId::Number(i)));
        check(br#"{"jsonrpc":"2.0","id":7,"method":"#, n(7));
        check(
            br#" { "id" : "a\"b" , "x": 1"#,
            Some(SentId::Id(RequestId::String("a\"b".into()))),
        );
        check(b"{\"params\":{\"x\":\"\xff\"},\"id\":3}", n(3));
        let deep = format!(
            r#"{{"a":{}{},"b":"]}}","id":-4,"#,
            "[".repeat(500),
            "]".repeat(500)
        );
        check(deep.as_bytes(), n(-4));
        check(br#"{"id":{"x":1}}"#, None);
        let number = |text: &str| Some(SentId::Number(serde_json::from_str(text).unwrap()));
        check(br#"{"id":1.5}"#, number("1.5"));
        check(br#"{"id":1e3,"#, number("1e3"));
        check(br#"{"id":12"#, None);
        check(b"{\"id\":\"\xff\"}", None);
        check(br#"{"params":{"id":9}"#, None);
        check(br#"[{"id":1}]"#, None);
        check(b"hello", None);
        check(b"", None);
    }

    #[test]
    fn a_served_method_with_bad_params_is_invalid_params() {
        assert_eq!(
            params_problem("tools/call", Some(&serde_json::json!({}))).as_deref(),
            Some("Invalid params for tools/call: missing field `name`")
        );
        assert_eq!(
            params_problem("tools/call", None).as_deref(),
            Some("Invalid params for tools/call: params are required")
        );
        assert_eq!(params_problem("prompts/get", None), None);
    }
}
