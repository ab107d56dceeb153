//! KEY_REF: where a token is read from and written to.
//!
//! `env://VAR` (read-only), `.env://path:VAR`, `.env://:VAR` (the `.env` of the current
//! directory), `json://path`, or a bare path (same as `json://path`). A JSON file holds the
//! token object at its root (`access_token`, `refresh_token`, `expires_at`, ...); a `.env`
//! variable holds the access token alone, or the whole token object as JSON when there is
//! more to keep. Files holding tokens are written with mode 0600.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::files;

/// A parsed KEY_REF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRef {
    Env(String),
    DotEnv { path: PathBuf, var: String },
    Json(PathBuf),
}

/// A token as stored: a JSON object with at least `access_token`.
pub type Token = Map<String, Value>;

impl KeyRef {
    /// Parses the forms above; anything else is a usage error naming the forms.
    pub fn parse(s: &str) -> Result<KeyRef> {
        let bad = |why: &str| {
            Error::Usage(format!(
                "invalid KEY_REF '{s}': {why} (use env://VAR, .env://path:VAR, .env://:VAR, json://path or a file path)"
            ))
        };
        if let Some(var) = s.strip_prefix("env://") {
            check_var(var).map_err(|w| bad(&w))?;
            return Ok(KeyRef::Env(var.to_owned()));
        }
        if let Some(rest) = s.strip_prefix(".env://") {
            let (path, var) = rest
                .rsplit_once(':')
                .ok_or_else(|| bad("a .env reference needs ':VAR' after the path"))?;
            check_var(var).map_err(|w| bad(&w))?;
            let path = if path.is_empty() { ".env" } else { path };
            return Ok(KeyRef::DotEnv {
                path: PathBuf::from(path),
                var: var.to_owned(),
            });
        }
        if let Some(path) = s.strip_prefix("json://") {
            if path.is_empty() {
                return Err(bad("json:// needs a path"));
            }
            return Ok(KeyRef::Json(PathBuf::from(path)));
        }
        if let Some((scheme, _)) = s.split_once("://") {
            return Err(bad(&format!("unknown scheme '{scheme}://'")));
        }
        if s.is_empty() {
            return Err(bad("it is empty"));
        }
        Ok(KeyRef::Json(PathBuf::from(s)))
    }

    /// The reference in its canonical written form, with an absolute path (what session and
    /// auth state files record, so they work from any directory).
    pub fn canonical(&self) -> String {
        match self {
            KeyRef::Env(v) => format!("env://{v}"),
            KeyRef::DotEnv { path, var } => {
                format!(".env://{}:{var}", files::absolute(path).display())
            }
            KeyRef::Json(path) => format!("json://{}", files::absolute(path).display()),
        }
    }

    /// The stored token, `None` when the destination holds nothing yet.
    pub fn read(&self) -> Result<Option<Token>> {
        match self {
            // A variable may hold a bare token, or the JSON a `.env://` store wrote (a shell
            // that sourced that file).
            KeyRef::Env(var) => Ok(std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .map(|v| parse_value(&v))),
            KeyRef::DotEnv { path, var } => {
                let Some(bytes) = files::read_optional(path)? else {
                    return Ok(None);
                };
                let text = String::from_utf8_lossy(&bytes);
                Ok(dotenv_get(&text, var).map(|v| parse_value(&v)))
            }
            KeyRef::Json(path) => {
                let Some(bytes) = files::read_optional(path)? else {
                    return Ok(None);
                };
                let value: Value = serde_json::from_slice(&bytes)
                    .map_err(|e| Error::corrupt(path, "token file", e))?;
                match value {
                    Value::Object(m) if m.get("access_token").is_some_and(Value::is_string) => {
                        Ok(Some(m))
                    }
                    _ => Err(Error::corrupt(
                        path,
                        "token file",
                        "expected a JSON object with a string access_token",
                    )),
                }
            }
        }
    }

    /// The access token, if any is stored.
    pub fn access_token(&self) -> Result<Option<String>> {
        Ok(self.read()?.and_then(|t| {
            t.get("access_token")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }))
    }

    /// Stores `token`. A destination that already holds a value is replaced only when
    /// `overwrite` is set, or when `refresh` is (a refreshed token replaces its own older
    /// self).
    pub fn write(&self, token: &Token, overwrite: bool) -> Result<()> {
        match self {
            KeyRef::Env(var) => Err(Error::KeyRef(format!(
                "env://{var} is read-only: a token cannot be stored in the parent shell's environment; use json://path or .env://path:VAR"
            ))),
            KeyRef::Json(path) => {
                let _lock = files::lock(path)?;
                if !overwrite && files::read_optional(path)?.is_some() {
                    return Err(exists(&self.canonical()));
                }
                files::write_json(path, token, true)
            }
            KeyRef::DotEnv { path, var } => {
                let _lock = files::lock(path)?;
                let text = files::read_optional(path)?
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                if !overwrite && dotenv_get(&text, var).is_some() {
                    return Err(exists(&self.canonical()));
                }
                let value = if token.len() == 1 {
                    token
                        .get("access_token")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                } else {
                    serde_json::to_string(token).unwrap_or_default()
                };
                let out = dotenv_set(&text, var, &value);
                files::write_atomic(path, out.as_bytes(), true)
            }
        }
    }
}

fn exists(shown: &str) -> Error {
    Error::KeyRef(format!(
        "{shown} already holds a value; pass -o/--overwrite to replace it"
    ))
}

fn check_var(var: &str) -> std::result::Result<(), String> {
    let mut chars = var.chars();
    match chars.next() {
        None => Err("the variable name is empty".into()),
        Some(c) if !(c.is_ascii_alphabetic() || c == '_') => {
            Err(format!("'{var}' is not a variable name"))
        }
        _ if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            Err(format!("'{var}' is not a variable name"))
        }
        _ => Ok(()),
    }
}

/// A token that is only an access token.
fn bare(access: String) -> Token {
    let mut t = Token::new();
    t.insert("access_token".into(), Value::String(access));
    t
}

/// A stored value: a token object written as JSON, or a bare access token.
fn parse_value(v: &str) -> Token {
    match serde_json::from_str::<Value>(v) {
        Ok(Value::Object(m)) if m.get("access_token").is_some_and(Value::is_string) => m,
        _ => bare(v.to_owned()),
    }
}

/// The value of `var` in a `.env` text (`VAR=value`, `export VAR=value`, quoted or not).
fn dotenv_get(text: &str, var: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.trim();
        let line = line.strip_prefix("export ").unwrap_or(line);
        let (k, v) = line.split_once('=')?;
        (k.trim() == var).then(|| unquote(v.trim()))
    })
}

fn unquote(v: &str) -> String {
    for q in ['\'', '"'] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return v[1..v.len() - 1].to_owned();
        }
    }
    v.to_owned()
}

/// `text` with `var` set to `value` (replaced in place, or appended), every other line kept.
fn dotenv_set(text: &str, var: &str, value: &str) -> String {
    let line = format!("{var}='{}'", value.replace('\'', ""));
    let mut out = Vec::new();
    let mut done = false;
    for l in text.lines() {
        let t = l.trim();
        let t = t.strip_prefix("export ").unwrap_or(t);
        if !done && t.split_once('=').is_some_and(|(k, _)| k.trim() == var) {
            out.push(line.clone());
            done = true;
        } else {
            out.push(l.to_owned());
        }
    }
    if !done {
        out.push(line);
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let check = |s: &str, want: Option<KeyRef>| match (KeyRef::parse(s), want) {
            (Ok(got), Some(want)) => assert_eq!(got, want, "{s}"),
            (Err(Error::Usage(_)), None) => {}
            (got, want) => panic!("{s}: got {got:?}, want {want:?}"),
        };
        check("env://TOKEN", Some(KeyRef::Env("TOKEN".into())));
        check(
            ".env://conf/.env:API_KEY",
            Some(KeyRef::DotEnv {
                path: "conf/.env".into(),
                var: "API_KEY".into(),
            }),
        );
        check(
            ".env://:API_KEY",
            Some(KeyRef::DotEnv {
                path: ".env".into(),
                var: "API_KEY".into(),
            }),
        );
        check("json://tok.json", Some(KeyRef::Json("tok.json".into())));
        check("tok.json", Some(KeyRef::Json("tok.json".into())));
        check("env://", None);
        check("env://1BAD", None);
        check(".env://path", None);
        check("json://", None);
        check("s3://bucket/key", None);
        check("", None);
    }

    #[test]
    fn dotenv_round_trip_keeps_other_lines() {
        let text = "# comment\nOTHER=1\nexport TOKEN=\"old\"\n";
        assert_eq!(dotenv_get(text, "TOKEN").as_deref(), Some("old"));
        let out = dotenv_set(text, "TOKEN", "new");
        assert_eq!(out, "# comment\nOTHER=1\nTOKEN='new'\n");
        assert_eq!(dotenv_get(&out, "TOKEN").as_deref(), Some("new"));
        assert_eq!(dotenv_set("", "A", "b"), "A='b'\n");
    }
}
