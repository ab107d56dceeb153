//! ARGS: the JSON5 value of `tool call -i` and `prompt get -i`, inline, from a file
//! (`@path`) or from stdin (`@-`).

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use mcp_client::{Error, Result};

/// Parses ARGS into a JSON object (tool arguments and prompt arguments are objects).
pub fn parse_object(arg: &str, stdin: &mut dyn Read) -> Result<Map<String, Value>> {
    let (text, origin) = if arg == "@-" {
        let mut s = String::new();
        stdin
            .read_to_string(&mut s)
            .map_err(|e| Error::Usage(format!("cannot read ARGS from stdin: {e}")))?;
        (s, "stdin".to_owned())
    } else if let Some(path) = arg.strip_prefix('@') {
        let bytes =
            std::fs::read(path).map_err(|e| Error::io("read ARGS from", Path::new(path), e))?;
        (
            String::from_utf8_lossy(&bytes).into_owned(),
            path.to_owned(),
        )
    } else {
        (arg.to_owned(), "the command line".to_owned())
    };
    let value: Value = json5::from_str(&text)
        .map_err(|e| Error::Usage(format!("ARGS from {origin} are not valid JSON5: {e}")))?;
    match value {
        Value::Object(m) => Ok(m),
        other => Err(Error::Usage(format!(
            "ARGS from {origin} must be a JSON object, not {}",
            kind(&other)
        ))),
    }
}

/// Prompt arguments: an object whose values are all strings.
pub fn parse_prompt_args(arg: &str, stdin: &mut dyn Read) -> Result<Map<String, Value>> {
    let m = parse_object(arg, stdin)?;
    if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
        return Err(Error::Usage(format!(
            "prompt arguments must be strings: '{k}' is {}",
            kind(v)
        )));
    }
    Ok(m)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_file_and_stdin() {
        let mut none = std::io::empty();
        let m = parse_object("{a: 1, b: 'two', c: [true,],}", &mut none).unwrap();
        assert_eq!(
            Value::Object(m),
            serde_json::json!({"a":1,"b":"two","c":[true]})
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("args.json5");
        std::fs::write(&f, "{n: 2.5}").unwrap();
        let m = parse_object(&format!("@{}", f.display()), &mut none).unwrap();
        assert_eq!(m["n"], serde_json::json!(2.5));
        let mut stdin = "{x: 'y'}".as_bytes();
        assert_eq!(parse_object("@-", &mut stdin).unwrap()["x"], "y");
        assert!(matches!(
            parse_object("[1]", &mut none),
            Err(Error::Usage(_))
        ));
        assert!(matches!(
            parse_object("{a:", &mut none),
            Err(Error::Usage(_))
        ));
        assert!(matches!(
            parse_object("@/no/such/file", &mut none),
            Err(Error::Io { .. })
        ));
        assert!(matches!(
            parse_prompt_args("{city: 1}", &mut none),
            Err(Error::Usage(_))
        ));
        assert!(parse_prompt_args("{city: 'Oslo'}", &mut none).is_ok());
    }
}
