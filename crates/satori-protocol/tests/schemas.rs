//! The published tool list is the contract: snapshot it, and prove it stays compatible with the
//! input schemas of the original server (fixture copied from its `tools/list`).

use serde_json::{Value, json};

use satori_protocol::{ToolDef, tools};

fn tool_json(tool: &ToolDef) -> Value {
    json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "readOnly": tool.read_only,
        "idempotent": tool.idempotent,
        "inputSchema": tool.input_schema,
    })
}

#[test]
fn tool_list_snapshot() {
    let list: Vec<Value> = tools().iter().map(tool_json).collect();
    insta::assert_json_snapshot!("tools", list);
}
