//! Argument validation: every call in the table below is checked end to end (schema check,
//! deserialization, cross-field rules) and the outcomes are snapshotted — valid calls as the
//! params with defaults filled in, invalid ones as the exact one-line error message.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use satori_protocol::{
    CallGraphParams, FileOutlineParams, InvalidArguments, ListCodebasesParams, ManageIndexParams,
    ReadFileParams, SearchCodebaseParams, parse_tool_args_value,
};

/// `ok <params as JSON>` or the error line.
fn outcome<T: Serialize>(result: Result<T, InvalidArguments>) -> String {
    match result {
        Ok(params) => format!(
            "ok {}",
            serde_json::to_string(&params).expect("params serialize")
        ),
        Err(err) => err.to_string(),
    }
}

/// Runs one call of `tool` with `args_json`.
fn check(tool: &str, args_json: &str) -> String {
    let args: Value = serde_json::from_str(args_json).expect("test arguments are JSON");
    match tool {
        "list_codebases" => outcome(parse_tool_args_value::<ListCodebasesParams>(tool, &args)),
        "manage_index" => outcome(parse_tool_args_value::<ManageIndexParams>(tool, &args)),
        "search_codebase" => outcome(parse_tool_args_value::<SearchCodebaseParams>(tool, &args)),
        "read_file" => outcome(parse_tool_args_value::<ReadFileParams>(tool, &args)),
        "file_outline" => outcome(parse_tool_args_value::<FileOutlineParams>(tool, &args)),
        "call_graph" => outcome(parse_tool_args_value::<CallGraphParams>(tool, &args)),
        other => panic!("no such tool in the test table: {other}"),
    }
}

const CASES: &[(&str, &str, &str)] = &[
    // list_codebases
    ("no arguments", "list_codebases", "{}"),
    ("null arguments mean none", "list_codebases", "null"),
    (
        "any key is unknown",
        "list_codebases",
        r#"{"path":"/repo"}"#,
    ),
    ("arguments must be an object", "list_codebases", "[]"),
    // manage_index
    (
        "create",
        "manage_index",
        r#"{"action":"create","path":"/repo"}"#,
    ),
    (
        "create with every create option",
        "manage_index",
        r#"{"action":"create","path":"/repo","force":true,"customExtensions":[".vue"],"ignorePatterns":["vendor/**"]}"#,
    ),
    (
        "neutral option values are accepted with any action",
        "manage_index",
        r#"{"action":"status","path":"/repo","force":false,"customExtensions":[]}"#,
    ),
    (
        "reindex with override",
        "manage_index",
        r#"{"action":"reindex","path":"/repo","allowUnnecessaryReindex":true}"#,
    ),
    (
        "force outside create",
        "manage_index",
        r#"{"action":"sync","path":"/repo","force":true}"#,
    ),
    (
        "allowUnnecessaryReindex outside reindex",
        "manage_index",
        r#"{"action":"create","path":"/repo","allowUnnecessaryReindex":true}"#,
    ),
    (
        "create-only lists with reindex",
        "manage_index",
        r#"{"action":"reindex","path":"/repo","customExtensions":[".vue"],"ignorePatterns":["x/**"]}"#,
    ),
    (
        "blank extension",
        "manage_index",
        r#"{"action":"create","path":"/repo","customExtensions":[".vue","  "]}"#,
    ),
    ("missing everything", "manage_index", "{}"),
    (
        "bad action and empty path",
        "manage_index",
        r#"{"action":"destroy","path":""}"#,
    ),
    (
        "action is case-sensitive",
        "manage_index",
        r#"{"action":"Create","path":"/repo"}"#,
    ),
    (
        "list given as a string",
        "manage_index",
        r#"{"action":"create","path":"/repo","customExtensions":".vue"}"#,
    ),
    (
        "list item of the wrong type",
        "manage_index",
        r#"{"action":"create","path":"/repo","ignorePatterns":["a",3,null]}"#,
    ),
    (
        "boolean given as a string",
        "manage_index",
        r#"{"action":"create","path":"/repo","force":"true"}"#,
    ),
    (
        "upstream cloud-only key is not part of this contract",
        "manage_index",
        r#"{"action":"create","path":"/repo","zillizDropCollection":"c1"}"#,
    ),
    // search_codebase
    (
        "defaults are applied",
        "search_codebase",
        r#"{"path":"/repo","query":"where is the retry policy"}"#,
    ),
    (
        "every option",
        "search_codebase",
        r#"{"path":"/repo/src","query":"lang:rust parse","scope":"mixed","resultMode":"raw","groupBy":"file","rankingMode":"default","limit":50,"debug":true}"#,
    ),
    (
        "limit 1 is the lowest",
        "search_codebase",
        r#"{"path":"/repo","query":"q","limit":1}"#,
    ),
    (
        "limit 0",
        "search_codebase",
        r#"{"path":"/repo","query":"q","limit":0}"#,
    ),
    (
        "limit 51",
        "search_codebase",
        r#"{"path":"/repo","query":"q","limit":51}"#,
    ),
    (
        "negative limit",
        "search_codebase",
        r#"{"path":"/repo","query":"q","limit":-3}"#,
    ),
    (
        "limit as a string",
        "search_codebase",
        r#"{"path":"/repo","query":"q","limit":"10"}"#,
    ),
    (
        "fractional limit",
        "search_codebase",
        r#"{"path":"/repo","query":"q","limit":2.5}"#,
    ),
    (
        "limit 1.0 is not an integer",
        "search_codebase",
        r#"{"path":"/repo","query":"q","limit":1.0}"#,
    ),
    (
        "null for an optional field",
        "search_codebase",
        r#"{"path":"/repo","query":"q","limit":null}"#,
    ),
    (
        "bad scope",
        "search_codebase",
        r#"{"path":"/repo","query":"q","scope":"all"}"#,
    ),
    (
        "empty query",
        "search_codebase",
        r#"{"path":"/repo","query":""}"#,
    ),
    (
        "blank query",
        "search_codebase",
        r#"{"path":"/repo","query":"   "}"#,
    ),
    ("missing query", "search_codebase", r#"{"path":"/repo"}"#),
    (
        "long values are shortened in messages",
        "search_codebase",
        r#"{"path":"/repo","query":"q","scope":"this value is far too long to be repeated in full"}"#,
    ),
    (
        "several problems, reported in schema order",
        "search_codebase",
        r#"{"zeta":1,"limit":0,"scope":"x","query":5,"alpha":true,"path":""}"#,
    ),
    (
        "query as an object",
        "search_codebase",
        r#"{"path":"/repo","query":{"text":"q"}}"#,
    ),
    // read_file
    ("whole file", "read_file", r#"{"path":"/repo/src/lib.rs"}"#),
    (
        "range, annotated",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","start_line":10,"end_line":20,"mode":"annotated"}"#,
    ),
    (
        "single-line range",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","start_line":7,"end_line":7}"#,
    ),
    (
        "end before start",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","start_line":20,"end_line":10}"#,
    ),
    (
        "line 0",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","start_line":0}"#,
    ),
    (
        "camelCase line keys are not accepted",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","startLine":3}"#,
    ),
    (
        "bad mode",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","mode":"html"}"#,
    ),
    (
        "open symbol by id",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","open_symbol":{"symbolId":"sym_1a2b"}}"#,
    ),
    (
        "open symbol by span",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","open_symbol":{"start_line":4,"end_line":9}}"#,
    ),
    (
        "open_symbol without a target",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","open_symbol":{}}"#,
    ),
    (
        "open_symbol with only end_line",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","open_symbol":{"end_line":9}}"#,
    ),
    (
        "nested open_symbol problems",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","open_symbol":{"symbolId":"","start_line":0,"kind":"fn","end_line":"9"}}"#,
    ),
    (
        "open_symbol as a string",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","open_symbol":"parse_query"}"#,
    ),
    (
        "open_symbol with a top-level range",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","start_line":3,"open_symbol":{"symbolLabel":"fn main"}}"#,
    ),
    (
        "open_symbol span reversed",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","open_symbol":{"start_line":9,"end_line":4}}"#,
    ),
    (
        "line beyond the supported range",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","start_line":5000000000}"#,
    ),
    (
        "open_symbol line beyond the supported range",
        "read_file",
        r#"{"path":"/repo/src/lib.rs","open_symbol":{"start_line":1,"end_line":99999999999}}"#,
    ),
    ("string arguments", "read_file", r#""/repo/src/lib.rs""#),
    // file_outline
    (
        "outline with defaults",
        "file_outline",
        r#"{"path":"/repo","file":"src/lib.rs"}"#,
    ),
    (
        "outline of a window",
        "file_outline",
        r#"{"path":"/repo","file":"src/lib.rs","start_line":10,"end_line":40,"limitSymbols":20}"#,
    ),
    (
        "a window that ends before it starts",
        "file_outline",
        r#"{"path":"/repo","file":"src/lib.rs","start_line":40,"end_line":10}"#,
    ),
    (
        "exact by id",
        "file_outline",
        r#"{"path":"/repo","file":"src/lib.rs","resolveMode":"exact","symbolIdExact":"sym_1"}"#,
    ),
    (
        "exact needs a symbol",
        "file_outline",
        r#"{"path":"/repo","file":"src/lib.rs","resolveMode":"exact"}"#,
    ),
    (
        "a symbol needs exact mode",
        "file_outline",
        r#"{"path":"/repo","file":"src/lib.rs","symbolLabelExact":"fn main"}"#,
    ),
    (
        "limitSymbols must be positive",
        "file_outline",
        r#"{"path":"/repo","file":"src/lib.rs","limitSymbols":0}"#,
    ),
    (
        "an unknown resolve mode",
        "file_outline",
        r#"{"path":"/repo","file":"src/lib.rs","resolveMode":"fuzzy"}"#,
    ),
    ("file is required", "file_outline", r#"{"path":"/repo"}"#),
    // call_graph
    (
        "graph with defaults",
        "call_graph",
        r#"{"path":"/repo","symbolRef":{"file":"src/lib.rs","symbolId":"sym_1"}}"#,
    ),
    (
        "bidirectional is both",
        "call_graph",
        r#"{"path":"/repo","symbolRef":{"file":"src/lib.rs","symbolId":"sym_1","symbolLabel":"fn main","span":{"startLine":3,"endLine":9}},"direction":"bidirectional","depth":3,"limit":50}"#,
    ),
    (
        "depth beyond 3",
        "call_graph",
        r#"{"path":"/repo","symbolRef":{"file":"src/lib.rs","symbolId":"sym_1"},"depth":4}"#,
    ),
    (
        "depth 0",
        "call_graph",
        r#"{"path":"/repo","symbolRef":{"file":"src/lib.rs","symbolId":"sym_1"},"depth":0}"#,
    ),
    (
        "an unknown direction",
        "call_graph",
        r#"{"path":"/repo","symbolRef":{"file":"src/lib.rs","symbolId":"sym_1"},"direction":"up"}"#,
    ),
    (
        "a handle without an id",
        "call_graph",
        r#"{"path":"/repo","symbolRef":{"file":"src/lib.rs"}}"#,
    ),
    (
        "a blank id",
        "call_graph",
        r#"{"path":"/repo","symbolRef":{"file":"src/lib.rs","symbolId":"  "}}"#,
    ),
    (
        "a handle with an unknown key",
        "call_graph",
        r#"{"path":"/repo","symbolRef":{"file":"src/lib.rs","symbolId":"sym_1","line":3}}"#,
    ),
    (
        "a handle span beyond the supported range",
        "call_graph",
        r#"{"path":"/repo","symbolRef":{"file":"src/lib.rs","symbolId":"sym_1","span":{"startLine":1,"endLine":4294967296}}}"#,
    ),
];

#[test]
fn validation_outcomes() {
    let mut report = String::new();
    for (label, tool, args) in CASES {
        let _ = writeln!(
            report,
            "# {label}\n{tool} {args}\n=> {}\n",
            check(tool, args)
        );
    }
    insta::assert_snapshot!("validation_outcomes", report);
}

#[test]
fn every_error_is_one_line_with_the_contract_prefix() {
    for (label, tool, args) in CASES {
        let out = check(tool, args);
        if out.starts_with("ok ") {
            continue;
        }
        let prefix = format!("Error: Invalid arguments for '{tool}'. ");
        assert!(out.starts_with(&prefix), "{label}: {out}");
        assert!(!out.contains('\n'), "{label}: {out}");
    }
}

/// A problem with one field is reported under that field's name, whichever check finds it;
/// `arguments` names only the arguments as a whole (when they are not an object).
#[test]
fn field_problems_name_the_field() {
    for (label, tool, args) in CASES {
        let out = check(tool, args);
        let is_object = serde_json::from_str::<Value>(args).is_ok_and(|v| v.is_object());
        if is_object {
            assert!(!out.contains(". arguments:"), "{label}: {out}");
            assert!(!out.contains("; arguments:"), "{label}: {out}");
        }
    }
}

#[test]
fn problem_order_does_not_depend_on_argument_order() {
    let a = check(
        "search_codebase",
        r#"{"zeta":1,"limit":0,"scope":"x","query":5,"alpha":true,"path":""}"#,
    );
    let b = check(
        "search_codebase",
        r#"{"path":"","alpha":true,"query":5,"scope":"x","limit":0,"zeta":1}"#,
    );
    assert_eq!(a, b);
}

#[test]
fn exact_messages_of_the_common_mistakes() {
    let cases = [
        (
            "search_codebase",
            r#"{"path":"/repo","query":"q","limit":51}"#,
            "Error: Invalid arguments for 'search_codebase'. limit: must be <= 50, got 51",
        ),
        (
            "read_file",
            r#"{"path":"/repo/a.rs","open_symbol":{"start_line":0}}"#,
            "Error: Invalid arguments for 'read_file'. open_symbol.start_line: must be >= 1, got 0",
        ),
        (
            "manage_index",
            r#"{"path":"/repo"}"#,
            "Error: Invalid arguments for 'manage_index'. action: required property is missing",
        ),
        (
            "read_file",
            r#"{"path":"/repo/a.rs","start_line":5000000000}"#,
            "Error: Invalid arguments for 'read_file'. start_line: must be <= 4294967295, got 5000000000",
        ),
    ];
    for (tool, args, expected) in cases {
        assert_eq!(check(tool, args), expected, "{tool} {args}");
    }
}

/// The query is capped in characters (not bytes), and the refusal names the limit.
#[test]
fn query_length_limit() {
    let max = satori_protocol::tools::search_codebase::QUERY_MAX_CHARS as usize;
    #[track_caller]
    fn check_query(query: String, expected: &str) {
        let args = serde_json::json!({"path": "/repo", "query": query}).to_string();
        let out = check("search_codebase", &args);
        let out = if out.starts_with("ok ") { "ok" } else { &out };
        assert_eq!(
            out,
            expected,
            "a query of {} characters",
            query.chars().count()
        );
    }
    check_query("a".repeat(max), "ok");
    check_query("é".repeat(max), "ok");
    check_query(
        "a".repeat(max + 1),
        "Error: Invalid arguments for 'search_codebase'. query: must be at most 32768 characters long, got 32769",
    );
}
