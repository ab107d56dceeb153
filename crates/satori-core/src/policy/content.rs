//! Secrets recognised by content: PEM private-key blocks and the token formats of common
//! services, each with a fixed prefix and a shape precise enough that source code talking
//! *about* them (a PEM parser, a token validator, documentation placeholders) is not caught.

use std::fmt;

/// A kind of secret found in a file's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// `-----BEGIN … PRIVATE KEY-----` followed by base64 key material.
    PemPrivateKey,
    /// An AWS access key id (`AKIA…`, `ASIA…`; AWS's documented `…EXAMPLE` keys excepted).
    AwsAccessKey,
    /// A GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    GithubToken,
    /// A GitLab personal, project or group access token (`glpat-`).
    GitlabToken,
    /// A Slack token (`xoxb-`, `xoxp-`, …) or incoming-webhook URL.
    SlackToken,
    /// A Stripe live secret or restricted key (`sk_live_`, `rk_live_`).
    StripeKey,
    /// An OpenAI API key (`sk-proj-`, `sk-svcacct-`, `sk-admin-`, or a legacy `sk-` key).
    OpenAiKey,
    /// An Anthropic API key (`sk-ant-`).
    AnthropicKey,
    /// A Google API key (`AIza…`).
    GoogleApiKey,
    /// An npm access token (`npm_`).
    NpmToken,
    /// A Hugging Face access token (`hf_`).
    HuggingFaceToken,
}

impl SecretKind {
    /// A stable identifier, used in refusals and skip reasons.
    pub fn id(self) -> &'static str {
        match self {
            SecretKind::PemPrivateKey => "pem_private_key",
            SecretKind::AwsAccessKey => "aws_access_key",
            SecretKind::GithubToken => "github_token",
            SecretKind::GitlabToken => "gitlab_token",
            SecretKind::SlackToken => "slack_token",
            SecretKind::StripeKey => "stripe_key",
            SecretKind::OpenAiKey => "openai_key",
            SecretKind::AnthropicKey => "anthropic_key",
            SecretKind::GoogleApiKey => "google_api_key",
            SecretKind::NpmToken => "npm_token",
            SecretKind::HuggingFaceToken => "huggingface_token",
        }
    }
}

impl fmt::Display for SecretKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            SecretKind::PemPrivateKey => "a PEM private key",
            SecretKind::AwsAccessKey => "an AWS access key",
            SecretKind::GithubToken => "a GitHub token",
            SecretKind::GitlabToken => "a GitLab token",
            SecretKind::SlackToken => "a Slack token",
            SecretKind::StripeKey => "a Stripe live key",
            SecretKind::OpenAiKey => "an OpenAI API key",
            SecretKind::AnthropicKey => "an Anthropic API key",
            SecretKind::GoogleApiKey => "a Google API key",
            SecretKind::NpmToken => "an npm token",
            SecretKind::HuggingFaceToken => "a Hugging Face token",
        };
        f.write_str(what)
    }
}

/// How the characters after a token prefix must look.
#[derive(Clone, Copy)]
enum Tail {
    /// Exactly `n` characters of the class, then a non-token character.
    Exact(usize, fn(u8) -> bool),
    /// At least `n` characters of the class.
    AtLeast(usize, fn(u8) -> bool),
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn upper_alnum(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn word_dash(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn alnum_dash(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// One token format: its prefixes, how the characters after one must look, and its kind.
struct TokenRule {
    prefixes: &'static [&'static str],
    tail: Tail,
    kind: SecretKind,
}

const fn rule(prefixes: &'static [&'static str], tail: Tail, kind: SecretKind) -> TokenRule {
    TokenRule {
        prefixes,
        tail,
        kind,
    }
}

fn slack_path(b: u8) -> bool {
    alnum(b) || b == b'/'
}

/// The token formats, tried in this order. Longer prefixes sharing a start come first
/// (`sk-ant-` before the legacy `sk-`).
#[rustfmt::skip] // One line a format reads as the table it is.
const TOKENS: &[TokenRule] = &[
    rule(&["AKIA", "ASIA"], Tail::Exact(16, upper_alnum), SecretKind::AwsAccessKey),
    rule(&["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], Tail::Exact(36, alnum), SecretKind::GithubToken),
    rule(&["github_pat_"], Tail::AtLeast(80, word), SecretKind::GithubToken),
    rule(&["glpat-"], Tail::AtLeast(20, word_dash), SecretKind::GitlabToken),
    rule(&["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe.xoxp-"], Tail::AtLeast(20, alnum_dash), SecretKind::SlackToken),
    rule(&["hooks.slack.com/services/T"], Tail::AtLeast(20, slack_path), SecretKind::SlackToken),
    rule(&["sk_live_", "rk_live_"], Tail::AtLeast(24, alnum), SecretKind::StripeKey),
    rule(&["sk-ant-"], Tail::AtLeast(80, word_dash), SecretKind::AnthropicKey),
    rule(&["sk-proj-", "sk-svcacct-", "sk-admin-"], Tail::AtLeast(40, word_dash), SecretKind::OpenAiKey),
    rule(&["AIza"], Tail::Exact(35, word_dash), SecretKind::GoogleApiKey),
    rule(&["npm_"], Tail::Exact(36, alnum), SecretKind::NpmToken),
    rule(&["hf_"], Tail::AtLeast(34, alnum), SecretKind::HuggingFaceToken),
];

/// The first secret found in `text`, if any.
pub fn find_secret(text: &str) -> Option<SecretKind> {
    let bytes = text.as_bytes();
    if pem_private_key(text) {
        return Some(SecretKind::PemPrivateKey);
    }
    let formats = TOKENS
        .iter()
        .flat_map(|r| r.prefixes.iter().map(move |p| (*p, r.tail, r.kind)));
    for (prefix, tail, kind) in formats {
        for (at, _) in text.match_indices(prefix) {
            // A prefix glued to a longer identifier (`XAKIA…`, `my_ghp_…`) is not a token.
            if at > 0 && word(bytes[at - 1]) {
                continue;
            }
            let rest = &bytes[at + prefix.len()..];
            let fits = match tail {
                Tail::Exact(n, class) => {
                    rest.len() >= n
                        && rest[..n].iter().all(|b| class(*b))
                        && rest.get(n).is_none_or(|b| !word(*b))
                }
                Tail::AtLeast(n, class) => rest.iter().take_while(|b| class(**b)).count() >= n,
            };
            if fits
                && !documented_example(kind, &rest[..rest.len().min(64)])
                && random_enough(kind, rest)
            {
                return Some(kind);
            }
        }
    }
    legacy_openai_key(text).then_some(SecretKind::OpenAiKey)
}

/// AWS documents its examples with keys ending in `EXAMPLE`; they are in countless READMEs.
fn documented_example(kind: SecretKind, rest: &[u8]) -> bool {
    kind == SecretKind::AwsAccessKey && rest.get(9..16) == Some(b"EXAMPLE".as_slice())
}

/// npm and Hugging Face tokens are random letters (and digits) of both cases after a
/// short, common prefix: a long identifier such as `hf_` and one word in lower case is not
/// one.
fn random_enough(kind: SecretKind, rest: &[u8]) -> bool {
    if !matches!(kind, SecretKind::NpmToken | SecretKind::HuggingFaceToken) {
        return true;
    }
    let body = rest.iter().take_while(|b| alnum(**b));
    let (mut upper, mut lower) = (false, false);
    for b in body {
        upper |= b.is_ascii_uppercase();
        lower |= b.is_ascii_lowercase();
    }
    upper && lower
}

/// A legacy OpenAI key: `sk-` and 48 letters and digits holding the marker `T3BlbkFJ` (the
/// base64 of "OpenAI") that every such key carries; plain `sk-…` strings are too common.
fn legacy_openai_key(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices("sk-").any(|(at, _)| {
        let body: Vec<u8> = bytes[at + 3..]
            .iter()
            .take_while(|b| alnum(**b))
            .copied()
            .collect();
        (at == 0 || !word(bytes[at - 1]))
            && body.len() == 48
            && body.windows(8).any(|w| w == b"T3BlbkFJ")
    })
}

/// A PEM private-key block: a `-----BEGIN <label>-----` line whose label ends in
/// `PRIVATE KEY` (or `PRIVATE KEY BLOCK`), followed by key material — a header line or at
/// least 40 base64 characters — on the next line, or after an escaped `\n` in JSON. A string
/// literal holding only the armour line (as PEM parsers contain) is not a key.
fn pem_private_key(text: &str) -> bool {
    text.match_indices("-----BEGIN ").any(|(at, m)| {
        let after = &text[at + m.len()..];
        let Some(end) = after.find("-----") else {
            return false;
        };
        let label = &after[..end];
        if label.contains('\n') || !label.trim_end_matches(" BLOCK").ends_with("PRIVATE KEY") {
            return false;
        }
        let mut body = &after[end + 5..];
        loop {
            let trimmed = body
                .trim_start_matches([' ', '\t', '\r', '\n'])
                .trim_start_matches("\\r")
                .trim_start_matches("\\n");
            if trimmed.len() == body.len() {
                break;
            }
            body = trimmed;
        }
        if body.starts_with("Proc-Type:") || body.starts_with("Comment:") {
            return true;
        }
        body.bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            .count()
            >= 40
    })
}
