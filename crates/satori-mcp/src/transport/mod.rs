//! The transports the server speaks MCP over: `stdio` (newline-delimited JSON-RPC) and
//! [`http`] (Streamable HTTP on a TCP address or a unix socket). Each one only carries
//! messages; what becomes of a message at the protocol's edge (parse errors, requests before
//! `initialize`, reused ids, nameless calls) is `policy`, the same on every transport.

pub mod http;
mod policy;
mod stdio;

pub use stdio::{LineTransport, MAX_LINE_BYTES};

/// What becomes of each line of `data` as one session's messages (the fuzz target
/// `message_policy`, crates/satori-fuzz): every answer the policy writes itself must be one
/// JSON-RPC object, and the id scan of a damaged line must stay within its bytes.
#[doc(hidden)]
pub fn fuzz_message_policy(data: &[u8]) {
    let mut policy = policy::MessagePolicy::new();
    let mut buf = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        policy.reading();
        match policy.receive(line) {
            policy::Verdict::Answer(owed) => {
                owed.encode(&mut buf)
                    .expect("an answer of the policy encodes");
                let answer: serde_json::Value =
                    serde_json::from_slice(&buf).expect("an answer of the policy is JSON");
                assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
                assert!(answer.get("error").is_some(), "{answer}");
            }
            policy::Verdict::Message(msg) => {
                buf.clear();
                policy::encode(
                    &rmcp::model::ServerJsonRpcMessage::error(
                        rmcp::model::ErrorData::internal_error("fuzz", None),
                        match msg {
                            rmcp::model::JsonRpcMessage::Request(r) => Some(r.id),
                            _ => None,
                        },
                    ),
                    &mut buf,
                )
                .expect("an error answer encodes");
            }
            policy::Verdict::Skip => {}
        }
        let _ = policy::peek_id(line);
    }
}
